// SPDX-License-Identifier: GPL-2.0
/*
 * Announcing VIPs (docs/edge.md): with `set announce table N`, xlbd keeps
 * one host route (/32, /128, via lo) per VIP address it can serve in
 * routing table N, with route protocol XLBD_RTPROT; a routing daemon on the
 * host (bird2's kernel protocol learning table N, FRR's `redistribute
 * table N`) announces them to the routers, which spread flows over the LB
 * hosts by ECMP.  xlbd never speaks BGP itself.
 *
 * An address is announced while
 *   - a table is set and the host is not drained (`xlbctl host drain`),
 *   - the data path is attached on at least one link, and
 *   - one of the VIPs on that address has a backend in its published
 *     table.  Panic mode keeps every backend in the table, so a VIP in
 *     panic stays announced; a VIP without any backend that may take
 *     new flows (none configured, all drained, down or of weight 0, or
 *     every one failing with panic 100) is withdrawn.
 *
 * The routes are the state: each sync reads table N back (a dump filtered
 * by table and protocol), adds what is missing and deletes what is not
 * wanted, so a new xlbd adopts the routes of the one before it (SIGTERM
 * and kill -9 leave them), and a route deleted by hand comes back.  Only
 * `xlbctl shutdown`, `xlbd --cleanup`, `host drain` and `set announce off`
 * withdraw everything.  Whether the host is drained is kept in the state
 * directory (file "drained"), so a restart does not announce it again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <json-c/json.h>

#include "config.h"
#include "xlbd.h"

#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK	12
#endif

#define ANN_TIMEOUT_MS	2000

struct xlbd_ann_addr {
	uint8_t family;		/* XLB_FAMILY_INET or XLB_FAMILY_INET6 */
	__be32 addr[4];
};

static int addr_cmp(const void *a, const void *b)
{
	const struct xlbd_ann_addr *x = a, *y = b;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int af_of(uint8_t family)
{
	return family == XLB_FAMILY_INET ? AF_INET : AF_INET6;
}

static const char *addr_str(const struct xlbd_ann_addr *a, char *buf)
{
	return xlb_addr_str(a->family, a->addr, buf);
}

/* --- rtnetlink ------------------------------------------------------------ */

static int nl_open(struct xlbd_announce *an)
{
	struct timeval tv = { ANN_TIMEOUT_MS / 1000,
			      (ANN_TIMEOUT_MS % 1000) * 1000 };
	int one = 1;

	an->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!an->nl)
		return -errno;
	if (mnl_socket_bind(an->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;

		mnl_socket_close(an->nl);
		an->nl = NULL;
		return -e;
	}
	an->portid = mnl_socket_get_portid(an->nl);
	setsockopt(mnl_socket_get_fd(an->nl), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	/* the kernel filters dumps by table and protocol (4.20 and later) */
	mnl_socket_setsockopt(an->nl, NETLINK_GET_STRICT_CHK, &one,
			      sizeof(one));
	mnl_socket_setsockopt(an->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	return 0;
}

struct dump_ctx {
	uint32_t table;
	struct xlbd_ann_addr *v;
	size_t n, cap;
	int err;
};

static int route_attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, RTA_MAX) < 0)
		return MNL_CB_OK;
	tb[type] = a;
	return MNL_CB_OK;
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[RTA_MAX + 1] = { NULL };
	const struct rtmsg *rm = mnl_nlmsg_get_payload(nlh);
	struct dump_ctx *c = data;
	struct xlbd_ann_addr a = { 0 };
	uint32_t table;
	size_t alen;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*rm))
		return MNL_CB_OK;
	if (rm->rtm_protocol != XLBD_RTPROT ||
	    (rm->rtm_family != AF_INET && rm->rtm_family != AF_INET6))
		return MNL_CB_OK;
	alen = rm->rtm_family == AF_INET ? 4 : 16;
	if (rm->rtm_dst_len != alen * 8)
		return MNL_CB_OK;
	if (mnl_attr_parse(nlh, sizeof(*rm), route_attr_cb, tb) < 0)
		return MNL_CB_OK;
	table = tb[RTA_TABLE] &&
		mnl_attr_get_payload_len(tb[RTA_TABLE]) == 4 ?
		mnl_attr_get_u32(tb[RTA_TABLE]) : rm->rtm_table;
	if (table != c->table || !tb[RTA_DST] ||
	    mnl_attr_get_payload_len(tb[RTA_DST]) != alen)
		return MNL_CB_OK;
	a.family = rm->rtm_family == AF_INET ? XLB_FAMILY_INET :
					       XLB_FAMILY_INET6;
	memcpy(a.addr, mnl_attr_get_payload(tb[RTA_DST]), alen);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct xlbd_ann_addr *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->err = -ENOMEM;
			return MNL_CB_ERROR;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = a;
	return MNL_CB_OK;
}

/* Send nlh and read its answers (cb for each) up to the ACK or DONE. */
static int nl_xfer(struct xlbd_announce *an, struct nlmsghdr *nlh,
		   mnl_cb_t cb, void *data)
{
	char buf[65536] __attribute__((aligned(8)));
	unsigned int seq = ++an->seq;
	int ret;

	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(an->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t len = mnl_socket_recvfrom(an->nl, buf, sizeof(buf));

		if (len < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		ret = mnl_cb_run(buf, (size_t)len, seq, an->portid, cb, data);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

/* The addresses of our routes in table (both families), sorted. */
static int routes_dump(struct xlbd_announce *an, uint32_t table,
		       struct xlbd_ann_addr **out, size_t *n)
{
	struct dump_ctx c = { .table = table };
	static const uint8_t fams[] = { AF_INET, AF_INET6 };
	size_t f;

	for (f = 0; f < 2; f++) {
		char req[256] __attribute__((aligned(8)));
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
		struct rtmsg *rm;
		int ret;

		nlh->nlmsg_type = RTM_GETROUTE;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
		rm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rm));
		rm->rtm_family = fams[f];
		rm->rtm_protocol = XLBD_RTPROT;
		rm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
		mnl_attr_put_u32(nlh, RTA_TABLE, table);
		ret = nl_xfer(an, nlh, dump_cb, &c);
		if (ret == -ENOENT)
			ret = 0;	/* no such table yet: no routes */
		if (!ret && c.err)
			ret = c.err;
		if (ret) {
			free(c.v);
			return ret;
		}
	}
	if (c.n)
		qsort(c.v, c.n, sizeof(*c.v), addr_cmp);
	*out = c.v;
	*n = c.n;
	return 0;
}

/* Add (or delete) the host route of a in table. */
static int route_change(struct xlbd_announce *an, bool add, uint32_t table,
			const struct xlbd_ann_addr *a)
{
	char req[256] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct rtmsg *rm;
	int af = af_of(a->family), ret;
	unsigned int lo = if_nametoindex("lo");

	nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	rm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rm));
	rm->rtm_family = (uint8_t)af;
	rm->rtm_dst_len = af == AF_INET ? 32 : 128;
	rm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	rm->rtm_protocol = XLBD_RTPROT;
	rm->rtm_scope = af == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	rm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, af == AF_INET ? 4 : 16, a->addr);
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	if (add)
		mnl_attr_put_u32(nlh, RTA_OIF, lo ? lo : 1);
	ret = nl_xfer(an, nlh, NULL, NULL);
	if (!add && ret == -ESRCH)
		ret = 0;	/* gone already */
	return ret;
}

/* --- what to announce ------------------------------------------------------ */

static bool any_link(const struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (d->links[i].attached)
			return true;
	return false;
}

/* Why the VIP addresses are not announced at all, or NULL. */
static const char *host_reason(const struct xlbd *d)
{
	if (!d->state.global.announce_table)
		return "announce off";
	if (d->ann.drained)
		return "host drained";
	if (!any_link(d))
		return "no link attached";
	return NULL;
}

/* Is VIP vi servable: a backend in its published table? */
static bool vip_servable(const struct xlbd *d, size_t vi)
{
	return d->rt_vips && d->rt_vips[vi].in_table > 0;
}

/* The addresses to announce now, sorted and unique. */
static int wanted(const struct xlbd *d, struct xlbd_ann_addr **out, size_t *n)
{
	struct xlbd_ann_addr *v;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	if (host_reason(d) || !d->state.n_vips)
		return 0;
	v = calloc(d->state.n_vips, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->state.n_vips; i++) {
		const struct xlb_vip_key *key = &d->state.vips[i].key;

		if (!vip_servable(d, i))
			continue;
		v[k].family = key->family;
		memcpy(v[k].addr, key->addr, sizeof(v[k].addr));
		k++;
	}
	qsort(v, k, sizeof(*v), addr_cmp);
	for (i = 0, *n = 0; i < k; i++)
		if (!*n || addr_cmp(&v[*n - 1], &v[i]))
			v[(*n)++] = v[i];
	*out = v;
	return 0;
}

static bool contains(const struct xlbd_ann_addr *v, size_t n,
		     const struct xlbd_ann_addr *a)
{
	return n && bsearch(a, v, n, sizeof(*v), addr_cmp);
}

static void set_error(struct xlbd_announce *an, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_error(struct xlbd_announce *an, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(an->error, sizeof(an->error), fmt, ap);
	va_end(ap);
	an->errors++;
	log_warn("announce: %s", an->error);
}

/*
 * Make table's routes of our protocol those of want (n): add what is
 * missing, delete the rest.  Returns how many routes are in place.
 */
static size_t apply(struct xlbd_announce *an, uint32_t table,
		    const struct xlbd_ann_addr *want, size_t n)
{
	struct xlbd_ann_addr *have = NULL;
	size_t nh = 0, i, in_place = 0;
	char as[XLB_ADDR_STR_MAX];
	int ret;

	ret = routes_dump(an, table, &have, &nh);
	if (ret) {
		set_error(an, "cannot read routing table %u: %s", table,
			  strerror(-ret));
		return an->n_routes;
	}
	for (i = 0; i < nh; i++) {
		if (contains(want, n, &have[i]))
			continue;
		ret = route_change(an, false, table, &have[i]);
		if (ret) {
			set_error(an, "cannot withdraw %s from table %u: %s",
				  addr_str(&have[i], as), table,
				  strerror(-ret));
			continue;
		}
		an->withdrawals++;
		log_notice("announce: withdrew %s (table %u)",
			   addr_str(&have[i], as), table);
	}
	for (i = 0; i < n; i++) {
		if (contains(have, nh, &want[i])) {
			in_place++;
			continue;
		}
		ret = route_change(an, true, table, &want[i]);
		if (ret == -EEXIST) {
			set_error(an, "table %u has a route to %s that xlbd did not put there (another protocol); it is not announced",
				  table, addr_str(&want[i], as));
			continue;
		}
		if (ret) {
			set_error(an, "cannot announce %s in table %u: %s",
				  addr_str(&want[i], as), table,
				  strerror(-ret));
			continue;
		}
		in_place++;
		an->announcements++;
		log_notice("announce: %s (table %u)", addr_str(&want[i], as),
			   table);
	}
	free(have);
	return in_place;
}

/* --- the daemon's side ------------------------------------------------------ */

static void drained_path(const struct xlbd *d, char *p, size_t len)
{
	snprintf(p, len, "%s/drained", d->o.state_dir);
}

int xlbd_announce_open(struct xlbd *d)
{
	struct xlbd_announce *an = &d->ann;
	char p[512];
	int ret;

	drained_path(d, p, sizeof(p));
	an->drained = !access(p, F_OK);
	if (an->drained)
		log_notice("announce: this host is drained (%s); `xlbctl host undrain` announces its VIPs again",
			   p);
	ret = nl_open(an);
	if (ret)
		log_warn("announce: no rtnetlink socket (%s): VIPs cannot be announced",
			 strerror(-ret));
	an->dirty = true;
	return 0;
}

void xlbd_announce_close(struct xlbd *d)
{
	if (d->ann.nl)
		mnl_socket_close(d->ann.nl);
	d->ann.nl = NULL;
	free(d->ann.routes);
	d->ann.routes = NULL;
	d->ann.n_routes = 0;
}

static void routes_set(struct xlbd_announce *an, struct xlbd_ann_addr *v, size_t n)
{
	free(an->routes);
	an->routes = v;
	an->n_routes = n;
}

static void announce_sync(struct xlbd *d)
{
	struct xlbd_announce *an = &d->ann;
	uint32_t table = d->state.global.announce_table;
	struct xlbd_ann_addr *want;
	size_t n, placed;

	an->dirty = false;
	if (!an->nl || !d->ready)
		return;
	if (an->table && an->table != table) {
		/* set announce off, or another table: leave the old one */
		apply(an, an->table, NULL, 0);
		log_notice("announce: table %u left", an->table);
		routes_set(an, NULL, 0);
	}
	an->table = table;
	if (!table)
		return;
	if (wanted(d, &want, &n)) {
		set_error(an, "out of memory");
		return;
	}
	placed = apply(an, table, want, n);
	/* what is announced: the wanted addresses whose route is in place */
	if (placed == n) {
		routes_set(an, want, n);
	} else {
		struct xlbd_ann_addr *have = NULL;
		size_t nh = 0;

		free(want);
		if (!routes_dump(an, table, &have, &nh))
			routes_set(an, have, nh);
	}
}

void xlbd_announce_sync(struct xlbd *d)
{
	announce_sync(d);
	/* the host's record in the cluster says what it announces */
	xlbd_cluster_publish(d);
}

int xlbd_announce_withdraw(struct xlbd *d)
{
	struct xlbd_announce *an = &d->ann;
	uint64_t errors = an->errors;

	if (!an->nl || !an->table)
		return 0;
	apply(an, an->table, NULL, 0);
	routes_set(an, NULL, 0);
	return an->errors == errors ? 0 : -EIO;
}

int xlbd_announce_drain(struct xlbd *d, bool drain, struct xlb_err *err)
{
	struct xlbd_announce *an = &d->ann;
	char p[512];
	int fd;

	drained_path(d, p, sizeof(p));
	if (drain) {
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return xlb_errf(err, errno,
					"cannot record the drain in %s: %s", p,
					strerror(errno));
		close(fd);
	} else if (unlink(p) && errno != ENOENT) {
		return xlb_errf(err, errno, "cannot remove %s: %s", p,
				strerror(errno));
	}
	if (an->drained != drain)
		log_notice("announce: host %s", drain ?
			   "drained: every VIP withdrawn, forwarding goes on" :
			   "undrained: VIPs announced again");
	an->drained = drain;
	xlbd_announce_sync(d);
	return 0;
}

void xlbd_announce_tick(struct xlbd *d)
{
	/* read the table back now and then: a route deleted by hand returns */
	xlbd_announce_sync(d);
}

int xlbd_announce_cleanup(struct xlbd *d, uint32_t table)
{
	struct xlbd_announce *an = &d->ann;
	int ret;

	if (!table)
		return 0;
	ret = nl_open(an);
	if (ret) {
		log_err("announce: no rtnetlink socket: %s", strerror(-ret));
		return ret;
	}
	an->table = table;
	ret = xlbd_announce_withdraw(d);
	if (!ret)
		log_notice("announce: every VIP route withdrawn from table %u",
			   table);
	xlbd_announce_close(d);
	return ret;
}

/* --- views ------------------------------------------------------------------ */

static json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

static const char *state_str(const struct xlbd *d)
{
	return !d->state.global.announce_table ? "off" :
	       d->ann.drained ? "drained" :
	       host_reason(d) ? "withdrawn" : "announcing";
}

json_object *xlbd_announce_brief(struct xlbd *d)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "state", jstr(state_str(d)));
	json_object_object_add(r, "drained", json_object_new_boolean(d->ann.drained));
	json_object_object_add(r, "table", json_object_new_int64(
		d->state.global.announce_table));
	json_object_object_add(r, "announced", json_object_new_int64(
		(int64_t)d->ann.n_routes));
	return r;
}

json_object *xlbd_announce_show(struct xlbd *d)
{
	struct xlbd_announce *an = &d->ann;
	json_object *r = json_object_new_object(), *a;
	const char *why = host_reason(d);
	size_t i;
	char as[XLB_ADDR_STR_MAX];

	json_object_object_add(r, "table", json_object_new_int64(
		d->state.global.announce_table));
	json_object_object_add(r, "protocol", json_object_new_int(XLBD_RTPROT));
	json_object_object_add(r, "drained", json_object_new_boolean(an->drained));
	json_object_object_add(r, "state", jstr(state_str(d)));
	if (why)
		json_object_object_add(r, "reason", jstr(why));
	json_object_object_add(r, "announced", json_object_new_int64(
		(int64_t)an->n_routes));
	json_object_object_add(r, "announcements", json_object_new_int64(
		(int64_t)an->announcements));
	json_object_object_add(r, "withdrawals", json_object_new_int64(
		(int64_t)an->withdrawals));
	json_object_object_add(r, "errors", json_object_new_int64(
		(int64_t)an->errors));
	if (an->error[0])
		json_object_object_add(r, "last_error", jstr(an->error));
	/* every VIP address: announced or why not */
	a = json_object_new_array();
	for (i = 0; i < d->state.n_vips; i++) {
		const struct xlb_vip_key *k = &d->state.vips[i].key;
		struct xlbd_ann_addr x = { .family = k->family };
		json_object *o;
		size_t j;
		bool seen = false, servable = false;

		memcpy(x.addr, k->addr, sizeof(x.addr));
		for (j = 0; j < i && !seen; j++)
			seen = d->state.vips[j].key.family == k->family &&
			       !memcmp(d->state.vips[j].key.addr, k->addr,
				       sizeof(k->addr));
		if (seen)
			continue;
		for (j = i; j < d->state.n_vips; j++)
			if (d->state.vips[j].key.family == k->family &&
			    !memcmp(d->state.vips[j].key.addr, k->addr,
				    sizeof(k->addr)))
				servable |= vip_servable(d, j);
		o = json_object_new_object();
		json_object_object_add(o, "address", jstr(addr_str(&x, as)));
		json_object_object_add(o, "announced", json_object_new_boolean(
			contains(an->routes, an->n_routes, &x)));
		if (why || !servable)
			json_object_object_add(o, "reason", jstr(why ? why :
				"no backend in its VIPs' tables"));
		json_object_array_add(a, o);
	}
	json_object_object_add(r, "addresses", a);
	return r;
}

void xlbd_announce_metrics(struct xlbd *d, char **text)
{
	struct xlbd_announce *an = &d->ann;
	char as[XLB_ADDR_STR_MAX], *p = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&p, &len);

	*text = NULL;
	if (!f)
		return;
	fprintf(f, "# HELP xlb_announce_table routing table of the VIP host routes (0: off)\n"
		"# TYPE xlb_announce_table gauge\nxlb_announce_table %u\n",
		d->state.global.announce_table);
	fprintf(f, "# HELP xlb_announce_drained 1 while the host is drained (xlbctl host drain)\n"
		"# TYPE xlb_announce_drained gauge\nxlb_announce_drained %d\n",
		an->drained);
	fprintf(f, "# HELP xlb_announce_routes VIP addresses announced (routes in the table)\n"
		"# TYPE xlb_announce_routes gauge\nxlb_announce_routes %zu\n",
		an->n_routes);
	fprintf(f, "# HELP xlb_announce_changes_total routes added (announce) and deleted (withdraw)\n"
		"# TYPE xlb_announce_changes_total counter\n"
		"xlb_announce_changes_total{change=\"announce\"} %llu\n"
		"xlb_announce_changes_total{change=\"withdraw\"} %llu\n",
		(unsigned long long)an->announcements,
		(unsigned long long)an->withdrawals);
	fprintf(f, "# HELP xlb_announce_errors_total route changes or reads that failed\n"
		"# TYPE xlb_announce_errors_total counter\nxlb_announce_errors_total %llu\n",
		(unsigned long long)an->errors);
	fprintf(f, "# HELP xlb_announce_route 1 for each VIP address announced\n"
		"# TYPE xlb_announce_route gauge\n");
	for (i = 0; i < an->n_routes; i++)
		fprintf(f, "xlb_announce_route{address=\"%s\"} 1\n",
			addr_str(&an->routes[i], as));
	if (fclose(f)) {
		free(p);
		return;
	}
	*text = p;
}
