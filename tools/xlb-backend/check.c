// SPDX-License-Identifier: GPL-2.0
/*
 * check: one line per requirement of a backend, "ok", "FAIL" (with the
 * reason and the fix) or "skip" (with why it could not be checked), and
 * the probe: a tunnel packet for each VIP, sent through the real receive
 * path, which must reach a socket bound to the VIP.
 *
 * The probe, decap program: the frame the LB would send (IP in IP and
 * GUE, over each family the interface has an address of) is handed to
 * the program attached to the interface with BPF_PROG_TEST_RUN in live
 * frame mode (BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18 and later): the
 * attached program runs on it as on a received frame, and what it passes
 * is received by the stack on that interface (netif_receive_skb), so
 * routing, the reverse-path filter and the VIP's socket all take part.
 * The module: a GUE datagram with the hop list from a source its
 * allowlist admits (IP_FREEBIND) to the interface's own address, which
 * reaches the module's tunnel socket through the local stack.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "backend.h"
#include "pkt.h"

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND	78
#endif
#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES	(1U << 1)
#endif

static int n_fail, n_skip;

static void line(const char *verdict, const char *what, const char *fix,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void line(const char *verdict, const char *what, const char *fix,
		 const char *fmt, ...)
{
	va_list ap;

	printf("%-4s %s: ", verdict, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (fix)
		printf("; fix: %s", fix);
	putchar('\n');
	if (!strcmp(verdict, "FAIL"))
		n_fail++;
	else if (!strcmp(verdict, "skip"))
		n_skip++;
}

static bool has_family(const struct xb_conf *c, int family)
{
	int i;

	for (i = 0; i < c->n_vips; i++)
		if (c->vips[i].family == family)
			return true;
	return false;
}

static int conf_int(const char *dev, const char *key, int *v)
{
	char path[256];

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", dev, key);
	return xb_sysctl_int(path, v);
}

/* The effective value of an ARP/rp_filter setting: max(all, DEV). */
static void check_sysctl(const char *dev, const char *key, bool (*good)(int),
			 const char *want, const char *fixval)
{
	char what[64], fix[256];
	int all, v;

	snprintf(what, sizeof(what), "%s %s", key, dev);
	if (conf_int("all", key, &all) || conf_int(dev, key, &v)) {
		line("FAIL", what, NULL, "cannot read net.ipv4.conf.{all,%s}.%s", dev, key);
		return;
	}
	v = all > v ? all : v;
	if (good(v)) {
		line("ok", what, NULL, "%d (%s)", v, want);
		return;
	}
	snprintf(fix, sizeof(fix),
		 "sysctl -w net.ipv4.conf.all.%s=%s net.ipv4.conf.%s.%s=%s",
		 key, fixval, dev, key, fixval);
	line("FAIL", what, fix, "%d (all %d), want %s", v, all, want);
}

static bool arp_ignore_ok(int v) { return v >= 1; }
static bool arp_announce_ok(int v) { return v == 2; }
static bool rp_filter_ok(int v) { return v != 1; }

static int dev_mac(const char *dev, __u8 mac[6])
{
	struct ifreq ifr = { 0 };
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -1;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

/*
 * A source for probe packets that routes back through dev: a neighbour
 * in dev's subnet (so strict and loose reverse-path filters both pass),
 * else a documentation address (RFC 5737, RFC 3849).
 */
static void probe_source(const char *dev, int family, __u8 *src)
{
	__u8 a[16];
	int len, bytes = family == AF_INET ? 4 : 16, i;

	memset(src, 0, 16);
	if (xb_dev_addr(dev, family, a, &len) == 1 && len <= bytes * 8 - 2) {
		memcpy(src, a, 16);
		/* +1 within the subnet, or -1 when +1 is its last address */
		for (i = bytes - 1; i >= 0 && ++src[i] == 0; i--)
			;
		if (family == AF_INET && len <= 30) {
			__u32 h = ntohl(*(__u32 *)src), m = ~0u >> len;

			if ((h & m) == m) {	/* the broadcast address */
				memcpy(src, a, 16);
				for (i = bytes - 1; i >= 0 && src[i]-- == 0; i--)
					;
			}
		}
		return;
	}
	inet_pton(family, family == AF_INET ? "192.0.2.1" : "2001:db8::1", src);
}

/* A UDP socket bound to addr, any port; its port in *port. */
static int vip_socket(int family, const __u8 *addr, int *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, one = 1;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* an address of a local route (a VIP prefix) is no interface's */
	if (family == AF_INET)
		setsockopt(fd, SOL_IP, IP_FREEBIND, &one, sizeof(one));
	else
		setsockopt(fd, SOL_IPV6, IPV6_FREEBIND, &one, sizeof(one));
	if (family == AF_INET) {
		struct sockaddr_in *s = (void *)&ss;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, addr, 4);
		sl = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (void *)&ss;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, addr, 16);
		sl = sizeof(*s);
	}
	if (bind(fd, (void *)&ss, sl) || getsockname(fd, (void *)&ss, &sl)) {
		close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
		      ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

/* Wait (at most 1 s) for a datagram carrying nonce on fd. */
static bool received(int fd, const char *nonce)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[256];
	ssize_t n;
	int i;

	for (i = 0; i < 10; i++) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (n < 0)
			continue;
		buf[n] = 0;
		if (!strcmp(buf, nonce))
			return true;
	}
	return false;
}

static int xfam(int family)
{
	return family == AF_INET ? XLB_FAMILY_INET : XLB_FAMILY_INET6;
}

/* The inner packet of a probe: UDP from src to the VIP's socket. */
static void probe_inner(struct pkt_spec *s, int family, const __u8 *src,
			const __u8 *vip, int port, const char *nonce,
			const __u8 *mac)
{
	pkt_spec_init(s, xfam(family), IPPROTO_UDP);
	memcpy(s->src, src, 16);
	memcpy(s->dst, vip, 16);
	s->sport = 40000;
	s->dport = (__u16)port;
	s->payload = nonce;
	s->payload_len = strlen(nonce);
	if (mac)
		memcpy(s->dst_mac, mac, 6);
}

static const char *fam_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/* One probe through the attached decap program; prints its line. */
static void probe_xdp(const struct xb_conf *c, const char *dev, int ifindex,
		      int prog_fd, const struct xb_prefix *vip, int encap,
		      int outer)
{
	char what[160], nonce[64];
	__u8 addr[16], src[16], osrc[16], odst[16], mac[6], frame[512];
	struct xdp_md ctx = { 0 };
	struct pkt_encap e;
	struct pkt_spec s;
	size_t len;
	int fd, port, plen, err;
	LIBBPF_OPTS(bpf_test_run_opts, o);

	snprintf(what, sizeof(what), "probe %s %s over %s via %s",
		 vip->text, encap == XLB_ENCAP_GUE ? "GUE" : "IP-in-IP",
		 fam_name(outer), dev);
	if (xb_dev_addr(dev, outer, odst, &plen) != 1) {
		line("skip", what, NULL, "%s has no %s address (the LB reaches it over the other family)",
		     dev, fam_name(outer));
		return;
	}
	if (dev_mac(dev, mac)) {
		line("FAIL", what, NULL, "cannot read %s's MAC address", dev);
		return;
	}
	xb_prefix_probe_addr(vip, addr);
	fd = vip_socket(vip->family, addr, &port);
	if (fd < 0) {
		line("FAIL", what, "make the VIP local (xlb-backend setup)",
		     "cannot bind a socket to %s: %s", vip->text, strerror(errno));
		return;
	}
	snprintf(nonce, sizeof(nonce), "xlb-backend probe %d %ld", (int)getpid(),
		 (long)random());
	probe_source(dev, vip->family, src);
	probe_source(dev, outer, osrc);
	probe_inner(&s, vip->family, src, addr, port, nonce, mac);
	pkt_encap_init(&e, encap, xfam(outer));
	memcpy(e.src, osrc, 16);
	memcpy(e.dst, odst, 16);
	e.dport = (__u16)c->gue_port;
	e.hop_count = 1;
	memcpy(e.hops[0], odst, 16);
	len = pkt_build_encap(&e, &s, frame, sizeof(frame));
	if (!len) {
		line("FAIL", what, NULL, "cannot build the probe frame");
		close(fd);
		return;
	}
	ctx.data_end = (__u32)len;
	ctx.ingress_ifindex = (__u32)ifindex;
	o.data_in = frame;
	o.data_size_in = (__u32)len;
	o.ctx_in = &ctx;
	o.ctx_size_in = sizeof(ctx);
	o.repeat = 1;
	o.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
	err = bpf_prog_test_run_opts(prog_fd, &o);
	if (err) {
		line("skip", what, NULL, "cannot inject a frame into %s's receive path: %s (BPF_PROG_TEST_RUN live frames: Linux 5.18 and later, where the kernel allows them)",
		     dev, strerror(-err));
		close(fd);
		return;
	}
	if (received(fd, nonce))
		line("ok", what, NULL, "decapsulated and delivered to a socket on %s",
		     vip->text);
	else
		line("FAIL", what, "see the lines above; 'nstat -az' names the stack's drops",
		     "the decap program ran but no socket on %s got the packet within 1 s",
		     vip->text);
	close(fd);
}

/* Is the decap program attached to dev?  Its fd for probes, or -1. */
static int check_decap(const char *dev, int ifindex)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	char what[64], fix[200];
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int fd;

	snprintf(what, sizeof(what), "decap %s", dev);
	snprintf(fix, sizeof(fix), "xlb-backend setup --dev %s VIP...", dev);
	if (bpf_xdp_query(ifindex, 0, &q)) {
		line("FAIL", what, NULL, "cannot ask which XDP program %s runs", dev);
		return -1;
	}
	if (!q.prog_id) {
		line("FAIL", what, fix, "no XDP program on %s: tunnel packets are not decapsulated", dev);
		return -1;
	}
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		line("FAIL", what, NULL, "cannot read XDP program %u", q.prog_id);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (strcmp(info.name, "xlb_decap")) {
		line("FAIL", what, "detach it, then xlb-backend setup",
		     "%s runs XDP program '%s' (id %u), not xlb_decap", dev,
		     info.name, q.prog_id);
		close(fd);
		return -1;
	}
	line("ok", what, NULL, "xlb_decap attached (%s, program id %u)",
	     q.attach_mode == XDP_ATTACHED_SKB ? "generic" : "native", q.prog_id);
	return fd;
}

/* The module, in this namespace; 0 when the probes can run. */
static int check_redirect(const struct xb_conf *c)
{
	char line_[256], key[32], val[96], why[128], fix[256];
	int enabled = 0, port = 0, i, j, n = 0, bad = 0;
	struct xb_prefix have[XB_MAX_ALLOW];
	FILE *f;

	f = fopen(XB_REDIRECT_PROC, "re");
	if (!f) {
		line("FAIL", "module xlb_redirect", "install xlb-redirect-dkms; modprobe xlb_redirect",
		     "not loaded (%s: %s)", XB_REDIRECT_PROC, strerror(errno));
		return -1;
	}
	while (fgets(line_, sizeof(line_), f)) {
		if (sscanf(line_, "%31s %95s", key, val) != 2)
			continue;
		if (!strcmp(key, "enabled"))
			enabled = atoi(val);
		else if (!strcmp(key, "port"))
			port = atoi(val);
		else if (!strcmp(key, "allow") && n < XB_MAX_ALLOW &&
			 !xb_parse_prefix(val, false, &have[n], why, sizeof(why)))
			n++;
	}
	fclose(f);
	if (!enabled) {
		line("FAIL", "module xlb_redirect", "echo enable > " XB_REDIRECT_PROC,
		     "loaded but not enabled in this network namespace");
		bad = 1;
	} else {
		line("ok", "module xlb_redirect", NULL, "enabled");
	}
	if (port != c->gue_port) {
		snprintf(fix, sizeof(fix), "modprobe -r xlb_redirect; modprobe xlb_redirect port=%d",
			 c->gue_port);
		line("FAIL", "module port", fix, "%d, the LB sends GUE to %d", port,
		     c->gue_port);
		bad = 1;
	} else {
		line("ok", "module port", NULL, "%d", port);
	}
	for (i = 0; i < c->n_allow; i++) {
		for (j = 0; j < n; j++)
			if (!strcmp(have[j].text, c->allow[i].text))
				break;
		if (j < n) {
			line("ok", "module allows", NULL, "%s", c->allow[i].text);
		} else {
			snprintf(fix, sizeof(fix), "echo 'allow %s' > %s",
				 c->allow[i].text, XB_REDIRECT_PROC);
			/* not bad: the probes show what it costs */
			line("FAIL", "module allows", fix,
			     "%s is not in the allowlist: its GUE is dropped (source_denied)",
			     c->allow[i].text);
		}
	}
	return bad ? -1 : 0;
}

/* One probe through the module: GUE to this host from an allowed source. */
static void probe_redirect(const struct xb_conf *c, const char *dev,
			   const struct xb_prefix *vip, int outer)
{
	char what[160], nonce[64];
	__u8 addr[16], src[16], osrc[16], odst[16], frame[512];
	struct sockaddr_storage from = { 0 }, to = { 0 };
	const struct xb_prefix *a = NULL;
	struct pkt_encap e;
	struct pkt_spec s;
	size_t len, off;
	int fd, sfd, port, plen, one = 1, i;
	socklen_t sl;

	snprintf(what, sizeof(what), "probe %s GUE over %s via %s", vip->text,
		 fam_name(outer), dev);
	if (xb_dev_addr(dev, outer, odst, &plen) != 1) {
		line("skip", what, NULL, "%s has no %s address", dev, fam_name(outer));
		return;
	}
	for (i = 0; i < c->n_allow && !a; i++)
		if (c->allow[i].family == outer)
			a = &c->allow[i];
	if (!a) {
		line("skip", what, NULL, "no %s prefix in the allowlist to send from",
		     fam_name(outer));
		return;
	}
	xb_prefix_probe_addr(a, osrc);
	xb_prefix_probe_addr(vip, addr);
	fd = vip_socket(vip->family, addr, &port);
	if (fd < 0) {
		line("FAIL", what, "make the VIP local (xlb-backend setup)",
		     "cannot bind a socket to %s: %s", vip->text, strerror(errno));
		return;
	}
	snprintf(nonce, sizeof(nonce), "xlb-backend probe %d %ld", (int)getpid(),
		 (long)random());
	probe_source(dev, vip->family, src);
	probe_inner(&s, vip->family, src, addr, port, nonce, NULL);
	pkt_encap_init(&e, XLB_ENCAP_GUE, xfam(outer));
	memcpy(e.src, osrc, 16);
	memcpy(e.dst, odst, 16);
	e.dport = (__u16)c->gue_port;
	e.hop_count = 1;
	memcpy(e.hops[0], odst, 16);
	len = pkt_build_encap(&e, &s, frame, sizeof(frame));
	/* the UDP payload: after Ethernet, outer IP and UDP */
	off = PKT_ETH_LEN + (outer == AF_INET ? PKT_IP4_LEN : PKT_IP6_LEN) +
	      PKT_UDP_LEN;
	sfd = socket(outer, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!len || len <= off || sfd < 0) {
		line("FAIL", what, NULL, "cannot build the probe");
		goto out;
	}
	if (outer == AF_INET) {
		struct sockaddr_in *f4 = (void *)&from, *t4 = (void *)&to;

		f4->sin_family = t4->sin_family = AF_INET;
		memcpy(&f4->sin_addr, osrc, 4);
		memcpy(&t4->sin_addr, odst, 4);
		t4->sin_port = htons((__u16)c->gue_port);
		sl = sizeof(*f4);
		/* bind to, and send from, an address not this host's */
		setsockopt(sfd, SOL_IP, IP_FREEBIND, &one, sizeof(one));
		setsockopt(sfd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one));
	} else {
		struct sockaddr_in6 *f6 = (void *)&from, *t6 = (void *)&to;

		f6->sin6_family = t6->sin6_family = AF_INET6;
		memcpy(&f6->sin6_addr, osrc, 16);
		memcpy(&t6->sin6_addr, odst, 16);
		t6->sin6_port = htons((__u16)c->gue_port);
		sl = sizeof(*f6);
		setsockopt(sfd, SOL_IPV6, IPV6_FREEBIND, &one, sizeof(one));
		setsockopt(sfd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one));
	}
	if (bind(sfd, (void *)&from, sl) ||
	    sendto(sfd, frame + off, len - off, 0, (void *)&to, sl) < 0) {
		line("FAIL", what, NULL, "cannot send GUE from %s: %s", a->text,
		     strerror(errno));
		goto out;
	}
	if (received(fd, nonce))
		line("ok", what, NULL, "the module delivered it to a socket on %s",
		     vip->text);
	else
		line("FAIL", what, "see the module's counters: cat " XB_REDIRECT_PROC,
		     "no socket on %s got the packet within 1 s", vip->text);
out:
	if (sfd >= 0)
		close(sfd);
	close(fd);
}

static void check_vip(const struct xb_prefix *v)
{
	char what[96], dev[IF_NAMESIZE + 1], fix[256];
	__u8 addr[16];
	int local;

	snprintf(what, sizeof(what), "VIP %s", v->text);
	xb_prefix_probe_addr(v, addr);
	local = xb_is_local(v->family, addr);
	if (local < 0) {
		line("FAIL", what, NULL, "cannot look up a route to it");
		return;
	}
	if (!local) {
		snprintf(fix, sizeof(fix), "ip addr add %s dev lo", v->text);
		line("FAIL", what, fix, "not local: decapsulated packets to it are not delivered");
		return;
	}
	if (v->family == AF_INET && xb_addr_on_dev(AF_INET, addr, dev, sizeof(dev)) == 1) {
		snprintf(fix, sizeof(fix), "ip addr del %s dev %s; ip addr add %s dev lo",
			 v->text, dev, v->text);
		line("FAIL", what, fix, "on %s, not lo: this host answers ARP for it and draws the VIP's traffic away from the LB",
		     dev);
		return;
	}
	line("ok", what, NULL, "local (on lo)");
}

static void check_persistence(const char *conf_path, const char *state_path,
			      bool default_conf, bool from_conf)
{
	char link[256];
	struct stat st;

	if (!from_conf) {
		line("skip", "state", NULL, "checking the command line's VIPs, not a setup's");
		return;
	}
	if (stat(state_path, &st))
		line("FAIL", "state", "xlb-backend setup ...",
		     "no %s: setup has not run (since boot)", state_path);
	else
		line("ok", "state", NULL, "%s records what setup changed", state_path);
	if (stat(conf_path, &st)) {
		line("FAIL", "saved configuration", "xlb-backend setup ...",
		     "no %s: nothing is applied at boot", conf_path);
		return;
	}
	if (!default_conf) {
		line("skip", "boot", NULL, "%s is not the file the unit applies (%s)",
		     conf_path, XB_CONF_DEFAULT);
		return;
	}
	snprintf(link, sizeof(link), "/etc/systemd/system/multi-user.target.wants/%s",
		 XB_UNIT);
	if (!stat(link, &st))
		line("ok", "boot", NULL, "%s is enabled: it applies %s at boot",
		     XB_UNIT, conf_path);
	else
		line("FAIL", "boot", "systemctl enable " XB_UNIT,
		     "%s is not enabled: after a reboot nothing is set up", XB_UNIT);
}

int xb_check(const struct xb_conf *c, const char *conf_path,
	     const char *state_path, bool probe, bool default_conf,
	     bool from_conf)
{
	int i, j, fam, ifindex, prog_fd, modok = -1;
	static const int encaps[] = { XLB_ENCAP_IPIP, XLB_ENCAP_GUE };
	static const int fams[] = { AF_INET, AF_INET6 };

	srandom((unsigned int)time(NULL) ^ (unsigned int)getpid());
	n_fail = n_skip = 0;
	if (c->mode == XB_MODE_REDIRECT)
		modok = check_redirect(c);
	for (i = 0; i < c->n_vips; i++)
		check_vip(&c->vips[i]);
	for (i = 0; i < c->n_devs; i++) {
		const char *dev = c->devs[i];

		ifindex = (int)if_nametoindex(dev);
		if (!ifindex) {
			line("FAIL", dev, NULL, "no such interface in this network namespace");
			continue;
		}
		if (has_family(c, AF_INET)) {
			check_sysctl(dev, "arp_ignore", arp_ignore_ok,
				     "no ARP answers for addresses on lo", "1");
			check_sysctl(dev, "arp_announce", arp_announce_ok,
				     "ARP from the interface's own address", "2");
			check_sysctl(dev, "rp_filter", rp_filter_ok,
				     "not strict", "2");
		}
		prog_fd = -1;
		if (c->mode == XB_MODE_XDP)
			prog_fd = check_decap(dev, ifindex);
		if (c->mode == XB_MODE_NONE) {
			line("skip", "decap", NULL, "mode none: the host decapsulates itself (ipip, sit, ip6tnl or fou devices); no probe");
			continue;
		}
		if (!probe)
			continue;
		for (j = 0; j < c->n_vips; j++) {
			for (fam = 0; fam < 2; fam++) {
				if (c->mode == XB_MODE_REDIRECT) {
					if (modok)
						break;
					probe_redirect(c, dev, &c->vips[j], fams[fam]);
					continue;
				}
				if (prog_fd < 0) {
					line("skip", "probe", NULL, "no decap program on %s to send through", dev);
					break;
				}
				probe_xdp(c, dev, ifindex, prog_fd, &c->vips[j], encaps[0], fams[fam]);
				probe_xdp(c, dev, ifindex, prog_fd, &c->vips[j], encaps[1], fams[fam]);
			}
			if ((prog_fd < 0 && c->mode == XB_MODE_XDP) ||
			    (modok && c->mode == XB_MODE_REDIRECT))
				break;
		}
		if (modok && c->mode == XB_MODE_REDIRECT)
			line("skip", "probe", NULL, "the module is not ready (above)");
		if (prog_fd >= 0)
			close(prog_fd);
	}
	check_persistence(conf_path, state_path, default_conf, from_conf);
	printf("%d requirement%s failed, %d not checked\n", n_fail,
	       n_fail == 1 ? "" : "s", n_skip);
	return n_fail ? 1 : 0;
}
