// SPDX-License-Identifier: GPL-2.0
/*
 * setup and teardown.  Setup checks everything it can before it changes
 * anything (xb_validate), then makes each change and records it in the
 * state file at once, with the value it replaced; a change that fails
 * undoes the ones before it.  Teardown undoes the recorded changes in
 * reverse order, each only while it is still what setup left (a value
 * changed since stays, and is named).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "backend.h"
#include "xlb_decap.skel.h"

static const char *const conf_dir = "/proc/sys/net/ipv4/conf";

/* The sysctl name of a path under /proc/sys: net.ipv4.conf.all.rp_filter */
static const char *sysctl_name(const char *path)
{
	static char name[128];
	char *p;

	snprintf(name, sizeof(name), "%s", path + strlen("/proc/sys/"));
	for (p = name; *p; p++)
		if (*p == '/')
			*p = '.';
	return name;
}

static void sysctl_path(char *buf, size_t n, const char *dev, const char *key)
{
	snprintf(buf, n, "%s/%s/%s", conf_dir, dev, key);
}

static bool has_family(const struct xb_conf *c, int family)
{
	int i;

	for (i = 0; i < c->n_vips; i++)
		if (c->vips[i].family == family)
			return true;
	return false;
}

/* The module's state in this namespace: enabled, port, allowlist. */
struct redirect_state {
	int enabled;
	int port;
	struct xb_prefix allow[XB_MAX_ALLOW];
	int n_allow;
};

static int redirect_read(struct redirect_state *r)
{
	char line[256], key[32], val[96], why[128];
	FILE *f;

	memset(r, 0, sizeof(*r));
	f = fopen(XB_REDIRECT_PROC, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %95s", key, val) != 2)
			continue;
		if (!strcmp(key, "enabled"))
			r->enabled = atoi(val);
		else if (!strcmp(key, "port"))
			r->port = atoi(val);
		else if (!strcmp(key, "allow") && r->n_allow < XB_MAX_ALLOW &&
			 !xb_parse_prefix(val, false, &r->allow[r->n_allow],
					  why, sizeof(why)))
			r->n_allow++;
	}
	fclose(f);
	return 0;
}

static bool redirect_has(const struct redirect_state *r,
			 const struct xb_prefix *p)
{
	int i;

	for (i = 0; i < r->n_allow; i++)
		if (!strcmp(r->allow[i].text, p->text))
			return true;
	return false;
}

static int redirect_write(const char *cmd)
{
	int err = xb_sysctl_write(XB_REDIRECT_PROC, cmd);

	if (err)
		xb_err("writing '%s' to %s: %s (the kernel log says why)",
		       cmd, XB_REDIRECT_PROC, strerror(-err));
	return err;
}

int xb_validate(const struct xb_conf *c)
{
	struct redirect_state r;
	char path[256];
	__u32 id;
	int i, j, ifindex, err;

	if (c->n_vips == 0) {
		xb_err("no VIP given");
		return -1;
	}
	if (c->n_devs == 0) {
		xb_err("no interface given (--dev IF): the one tunnel packets arrive on");
		return -1;
	}
	for (i = 0; i < c->n_vips; i++)
		for (j = 0; j < i; j++)
			if (!strcmp(c->vips[i].text, c->vips[j].text)) {
				xb_err("VIP %s is given twice", c->vips[i].text);
				return -1;
			}
	for (i = 0; i < c->n_devs; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(c->devs[i], c->devs[j])) {
				xb_err("interface %s is given twice", c->devs[i]);
				return -1;
			}
		if (!strcmp(c->devs[i], "lo")) {
			xb_err("lo cannot be the interface tunnel packets arrive on");
			return -1;
		}
		ifindex = (int)if_nametoindex(c->devs[i]);
		if (!ifindex) {
			xb_err("no interface %s in this network namespace", c->devs[i]);
			return -1;
		}
		sysctl_path(path, sizeof(path), c->devs[i], "rp_filter");
		if (has_family(c, AF_INET) && access(path, W_OK)) {
			xb_err("cannot write %s: %s (IPv4 off on %s, or not root?)",
			       path, strerror(errno), c->devs[i]);
			return -1;
		}
		if (c->mode != XB_MODE_XDP)
			continue;
		err = bpf_xdp_query_id(ifindex, 0, &id);
		if (err) {
			xb_err("cannot ask which XDP program %s runs: %s",
			       c->devs[i], strerror(-err));
			return -1;
		}
		if (id) {
			xb_err("%s runs an XDP program already (id %u); xlb-backend replaces none: detach it first (ip link set dev %s xdp off)",
			       c->devs[i], id, c->devs[i]);
			return -1;
		}
	}
	if (c->mode != XB_MODE_REDIRECT && c->n_allow) {
		xb_err("--allow is for --mode redirect");
		return -1;
	}
	if (c->mode == XB_MODE_REDIRECT) {
		if (c->n_allow == 0) {
			xb_err("--mode redirect needs --allow PREFIX (the LBs' and the other backends' tunnel sources): an empty allowlist accepts nothing");
			return -1;
		}
		err = redirect_read(&r);
		if (err == -ENOENT) {
			xb_err("the xlb_redirect module is not loaded (%s is missing): install it (package xlb-redirect-dkms) and run 'modprobe xlb_redirect'",
			       XB_REDIRECT_PROC);
			return -1;
		}
		if (err) {
			xb_err("cannot read %s: %s", XB_REDIRECT_PROC, strerror(-err));
			return -1;
		}
		if (r.port != c->gue_port) {
			xb_err("xlb_redirect listens on port %d, not %d: reload it with port=%d (the LB's gue_port)",
			       r.port, c->gue_port, c->gue_port);
			return -1;
		}
		if (r.n_allow + c->n_allow > XB_MAX_ALLOW) {
			xb_err("the module's allowlist holds at most %d prefixes", XB_MAX_ALLOW);
			return -1;
		}
	}
	return 0;
}

static struct xb_state *cur;
static const char *cur_path;

static int record(const struct xb_change *ch)
{
	if (cur->n == XB_MAX_CHANGES) {
		xb_err("too many changes to record");
		return -1;
	}
	cur->ch[cur->n++] = *ch;
	return xb_state_write(cur_path, cur);
}

/* Set a sysctl to val unless it is already; records the old value. */
static int set_sysctl(const char *path, const char *val)
{
	struct xb_change ch = { .kind = XB_CH_SYSCTL };
	int err;

	err = xb_sysctl_read(path, ch.old, sizeof(ch.old));
	if (err) {
		xb_err("cannot read %s: %s", path, strerror(-err));
		return -1;
	}
	if (!strcmp(ch.old, val))
		return 0;
	err = xb_sysctl_write(path, val);
	if (err) {
		xb_err("cannot set %s to %s: %s", path, val, strerror(-err));
		return -1;
	}
	snprintf(ch.path, sizeof(ch.path), "%s", path);
	snprintf(ch.new, sizeof(ch.new), "%s", val);
	printf("set %s = %s (was %s)\n", sysctl_name(path), val, ch.old);
	return record(&ch);
}

static int read_int(const char *dev, const char *key, int *v)
{
	char path[256];
	int err;

	sysctl_path(path, sizeof(path), dev, key);
	err = xb_sysctl_int(path, v);
	if (err)
		xb_err("cannot read %s: %s", path, strerror(-err));
	return err;
}

/*
 * ARP and reverse path, for IPv4 VIPs (the kernel takes the larger of
 * conf/all and conf/DEV for all three): no ARP answers for the VIPs on lo
 * (arp_ignore >= 1), sources of ARP requests from the interface's own
 * addresses (arp_announce 2), and no strict reverse-path filter (1) on the
 * interfaces decapsulated packets arrive on: loose (2) instead.
 */
static int setup_sysctls(const struct xb_conf *c)
{
	char path[256];
	int i, all, dev, need_ignore = 0, need_announce = 0;

	if (!has_family(c, AF_INET))
		return 0;
	for (i = 0; i < c->n_devs; i++) {
		if (read_int("all", "arp_ignore", &all) ||
		    read_int(c->devs[i], "arp_ignore", &dev))
			return -1;
		if ((all > dev ? all : dev) < 1)
			need_ignore = 1;
		if (read_int("all", "arp_announce", &all) ||
		    read_int(c->devs[i], "arp_announce", &dev))
			return -1;
		if ((all > dev ? all : dev) != 2)
			need_announce = 1;
	}
	sysctl_path(path, sizeof(path), "all", "arp_ignore");
	if (need_ignore && set_sysctl(path, "1"))
		return -1;
	sysctl_path(path, sizeof(path), "all", "arp_announce");
	if (need_announce && set_sysctl(path, "2"))
		return -1;
	if (read_int("all", "rp_filter", &all))
		return -1;
	sysctl_path(path, sizeof(path), "all", "rp_filter");
	if (all == 1 && set_sysctl(path, "2"))
		return -1;
	for (i = 0; i < c->n_devs; i++) {
		if (read_int(c->devs[i], "rp_filter", &dev))
			return -1;
		sysctl_path(path, sizeof(path), c->devs[i], "rp_filter");
		if (dev == 1 && set_sysctl(path, "2"))
			return -1;
	}
	return 0;
}

static int dev_mac(const char *dev, __u8 mac[6])
{
	struct ifreq ifr = { 0 };
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

/*
 * Load bpf/xlb_decap.bpf.c (built into this program as its skeleton) for
 * one interface, with its MAC and the GUE port, and attach it: native, or
 * generic when asked or (auto) when the driver has no native XDP.  The
 * attachment outlives this process; the program lives while attached.
 */
static int attach_decap(const struct xb_conf *c, const char *dev)
{
	struct xb_change ch = { .kind = XB_CH_XDP };
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), flags;
	struct xlb_decap_bpf *skel;
	int ifindex, fd, err;
	__u8 mac[6];

	ifindex = (int)if_nametoindex(dev);
	if (!ifindex) {
		xb_err("interface %s is gone", dev);
		return -1;
	}
	err = dev_mac(dev, mac);
	if (err) {
		xb_err("cannot read the MAC address of %s: %s", dev, strerror(-err));
		return -1;
	}
	skel = xlb_decap_bpf__open();
	if (!skel) {
		xb_err("cannot open the decap program: %s", strerror(errno));
		return -1;
	}
	skel->rodata->gue_port = (__u16)c->gue_port;
	memcpy(skel->rodata->host_mac, mac, 6);
	err = xlb_decap_bpf__load(skel);
	if (err) {
		xb_err("cannot load the decap program: %s", strerror(-err));
		goto out;
	}
	fd = bpf_program__fd(skel->progs.xlb_decap);
	flags = XDP_FLAGS_UPDATE_IF_NOEXIST;
	err = -EOPNOTSUPP;
	if (c->xdp_mode != XB_XDP_GENERIC)
		err = bpf_xdp_attach(ifindex, fd, flags | XDP_FLAGS_DRV_MODE, NULL);
	if (err && c->xdp_mode == XB_XDP_NATIVE) {
		xb_err("cannot attach the decap program to %s in native mode: %s (try --xdp-mode generic)",
		       dev, strerror(-err));
		goto out;
	}
	if (err) {
		ch.generic = 1;
		err = bpf_xdp_attach(ifindex, fd, flags | XDP_FLAGS_SKB_MODE, NULL);
	}
	if (err) {
		xb_err("cannot attach the decap program to %s: %s", dev, strerror(-err));
		goto out;
	}
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (err) {
		xb_err("cannot read the decap program's id: %s", strerror(-err));
		bpf_xdp_detach(ifindex, ch.generic ? XDP_FLAGS_SKB_MODE :
			       XDP_FLAGS_DRV_MODE, NULL);
		goto out;
	}
	snprintf(ch.path, sizeof(ch.path), "%s", dev);
	ch.ifindex = ifindex;
	ch.prog_id = info.id;
	printf("attached xlb_decap to %s (%s, program id %u)\n", dev,
	       ch.generic ? "generic" : "native", info.id);
	err = record(&ch);
out:
	xlb_decap_bpf__destroy(skel);
	return err ? -1 : 0;
}

static int setup_redirect(const struct xb_conf *c)
{
	struct xb_change ch = { 0 };
	struct redirect_state r;
	char cmd[96];
	int i;

	if (redirect_read(&r)) {
		xb_err("cannot read %s", XB_REDIRECT_PROC);
		return -1;
	}
	for (i = 0; i < c->n_allow; i++) {
		if (redirect_has(&r, &c->allow[i]))
			continue;
		snprintf(cmd, sizeof(cmd), "allow %s\n", c->allow[i].text);
		if (redirect_write(cmd))
			return -1;
		ch.kind = XB_CH_REDIRECT_ALLOW;
		ch.pfx = c->allow[i];
		printf("xlb_redirect: allow %s\n", c->allow[i].text);
		if (record(&ch))
			return -1;
	}
	if (!r.enabled) {
		if (redirect_write("enable\n"))
			return -1;
		memset(&ch, 0, sizeof(ch));
		ch.kind = XB_CH_REDIRECT_ENABLE;
		printf("xlb_redirect: enabled (UDP port %d)\n", r.port);
		if (record(&ch))
			return -1;
	}
	return 0;
}

/*
 * A VIP address goes on lo (scope host), a VIP prefix becomes a local
 * route through lo (the whole prefix local, as AnyIP); one that is local
 * already stays as it is.
 */
static int setup_vips(const struct xb_conf *c)
{
	struct xb_change ch = { 0 };
	int i, lo, err, max, local;
	const struct xb_prefix *v;

	lo = (int)if_nametoindex("lo");
	for (i = 0; i < c->n_vips; i++) {
		v = &c->vips[i];
		max = v->family == AF_INET ? 32 : 128;
		if (v->len == max) {
			local = xb_is_local(v->family, v->addr);
			if (local < 0) {
				xb_err("cannot look up a route to %s", v->text);
				return -1;
			}
			if (local) {
				printf("VIP %s is local already; left as it is\n", v->text);
				continue;
			}
			err = xb_addr(true, v, lo);
			ch.kind = XB_CH_ADDR;
		} else {
			err = xb_local_route(true, v, lo);
			if (err == -EEXIST) {
				printf("VIP %s has a route already; left as it is\n", v->text);
				continue;
			}
			ch.kind = XB_CH_ROUTE;
		}
		if (err) {
			xb_err("cannot make %s local on lo: %s", v->text, strerror(-err));
			return -1;
		}
		ch.pfx = *v;
		printf("VIP %s on lo\n", v->text);
		if (record(&ch))
			return -1;
	}
	return 0;
}

int xb_setup(const struct xb_conf *c, const char *conf_path,
	     const char *state_path, bool save_conf)
{
	static struct xb_state st;
	int i;

	if (!access(state_path, F_OK)) {
		xb_err("set up already (%s records it): run 'xlb-backend teardown' first",
		       state_path);
		return 1;
	}
	if (xb_validate(c))
		return 1;
	memset(&st, 0, sizeof(st));
	cur = &st;
	cur_path = state_path;
	if (xb_state_write(state_path, &st))
		return 1;
	if (setup_sysctls(c))
		goto undo;
	if (c->mode == XB_MODE_XDP) {
		for (i = 0; i < c->n_devs; i++)
			if (attach_decap(c, c->devs[i]))
				goto undo;
	} else if (c->mode == XB_MODE_REDIRECT && setup_redirect(c)) {
		goto undo;
	}
	if (setup_vips(c))
		goto undo;
	if (save_conf && xb_conf_write(conf_path, c))
		goto undo;
	printf("set up: %d change%s recorded in %s\n", st.n,
	       st.n == 1 ? "" : "s", state_path);
	return 0;
undo:
	xb_err("setup failed; undoing what it changed");
	xb_undo(&st, true);
	unlink(state_path);
	return 1;
}

static int undo_one(const struct xb_change *c, bool quiet)
{
	char now[32], cmd[96];
	struct redirect_state r;
	__u32 id = 0;
	int err, lo;
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);

	switch (c->kind) {
	case XB_CH_SYSCTL:
		err = xb_sysctl_read(c->path, now, sizeof(now));
		if (err) {
			xb_err("cannot read %s: %s; left", c->path, strerror(-err));
			return -1;
		}
		if (strcmp(now, c->new)) {
			printf("%s is %s now, not the %s setup set: left as it is\n",
			       sysctl_name(c->path), now, c->new);
			return 0;
		}
		err = xb_sysctl_write(c->path, c->old);
		if (err) {
			xb_err("cannot set %s back to %s: %s", c->path, c->old,
			       strerror(-err));
			return -1;
		}
		if (!quiet)
			printf("set %s = %s again\n", sysctl_name(c->path), c->old);
		return 0;
	case XB_CH_ADDR:
	case XB_CH_ROUTE:
		lo = (int)if_nametoindex("lo");
		err = c->kind == XB_CH_ADDR ? xb_addr(false, &c->pfx, lo) :
					      xb_local_route(false, &c->pfx, lo);
		if (err == -EADDRNOTAVAIL || err == -ESRCH || err == -ENOENT) {
			printf("VIP %s was gone from lo already\n", c->pfx.text);
			return 0;
		}
		if (err) {
			xb_err("cannot remove VIP %s from lo: %s", c->pfx.text,
			       strerror(-err));
			return -1;
		}
		if (!quiet)
			printf("VIP %s off lo\n", c->pfx.text);
		return 0;
	case XB_CH_XDP:
		if (if_nametoindex(c->path) != (unsigned int)c->ifindex) {
			printf("%s (index %d) is gone; nothing to detach\n",
			       c->path, c->ifindex);
			return 0;
		}
		bpf_xdp_query_id(c->ifindex, c->generic ? XDP_FLAGS_SKB_MODE :
				 XDP_FLAGS_DRV_MODE, &id);
		if (id != c->prog_id) {
			printf("%s runs %s now, not the decap program setup attached (id %u): left as it is\n",
			       c->path, id ? "another XDP program" : "no XDP program",
			       c->prog_id);
			return 0;
		}
		opts.old_prog_fd = bpf_prog_get_fd_by_id(id);
		err = bpf_xdp_detach(c->ifindex, c->generic ? XDP_FLAGS_SKB_MODE :
				     XDP_FLAGS_DRV_MODE,
				     opts.old_prog_fd >= 0 ? &opts : NULL);
		if (opts.old_prog_fd >= 0)
			close(opts.old_prog_fd);
		if (err) {
			xb_err("cannot detach the decap program from %s: %s",
			       c->path, strerror(-err));
			return -1;
		}
		if (!quiet)
			printf("detached xlb_decap from %s\n", c->path);
		return 0;
	case XB_CH_REDIRECT_ALLOW:
		if (redirect_read(&r) || !redirect_has(&r, &c->pfx)) {
			printf("xlb_redirect: %s is not in the allowlist any more\n",
			       c->pfx.text);
			return 0;
		}
		snprintf(cmd, sizeof(cmd), "disallow %s\n", c->pfx.text);
		if (redirect_write(cmd))
			return -1;
		if (!quiet)
			printf("xlb_redirect: disallow %s\n", c->pfx.text);
		return 0;
	case XB_CH_REDIRECT_ENABLE:
		if (redirect_read(&r) || !r.enabled) {
			printf("xlb_redirect: off already (or unloaded)\n");
			return 0;
		}
		if (redirect_write("disable\n"))
			return -1;
		if (!quiet)
			printf("xlb_redirect: disabled\n");
		return 0;
	}
	return 0;
}

int xb_undo(struct xb_state *s, bool quiet)
{
	int i, rc = 0;

	for (i = s->n - 1; i >= 0; i--)
		if (undo_one(&s->ch[i], quiet))
			rc = -1;
	return rc;
}

int xb_teardown(const char *conf_path, const char *state_path, bool forget)
{
	static struct xb_state st;
	int r;

	r = xb_state_read(state_path, &st);
	if (r > 0) {
		xb_err("nothing to tear down: no state file %s (setup was not run, or teardown ran already)",
		       state_path);
		return 1;
	}
	if (r < 0)
		return 1;
	if (xb_undo(&st, false)) {
		xb_err("some changes could not be undone (above); %s is kept",
		       state_path);
		return 1;
	}
	if (unlink(state_path))
		xb_err("cannot remove %s: %s", state_path, strerror(errno));
	if (forget && unlink(conf_path) && errno != ENOENT)
		xb_err("cannot remove %s: %s", conf_path, strerror(errno));
	printf("torn down: %d change%s undone\n", st.n, st.n == 1 ? "" : "s");
	return 0;
}
