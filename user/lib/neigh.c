// SPDX-License-Identifier: GPL-2.0
/*
 * Next hops toward backends over rtnetlink (libmnl).
 *
 * One resolution is up to five request/answer exchanges on one socket,
 * each acknowledged (NLM_F_ACK) and read up to its ACK, so that nothing of
 * one exchange is left for the next:
 *
 *   1. RTM_GETROUTE for the backend address: the route the kernel itself
 *      would use from this host (policy rules, redirect exceptions and
 *      nexthop objects included): egress interface and gateway.  The
 *      kernel answers blackhole, unreachable and prohibit routes and a
 *      missing route with an error; local, broadcast and other non-unicast
 *      routes come back with their type.
 *   2. RTM_GETROUTE again with RTM_F_FIB_MATCH: the FIB entry that matched,
 *      which alone shows whether the route has several next hops.  A
 *      multipath route is refused: pinning every packet to the one path the
 *      kernel picks for the bare address would defeat ECMP, while the data
 *      path's bpf_fib_lookup hashes every flow over the paths.
 *      (When the entry uses a nexthop object that the kernel does not
 *      expand, net.ipv4.nexthop_compat_mode=0, RTM_GETNEXTHOP tells whether
 *      it is a group.)
 *   3. RTM_GETLINK for the egress interface: its Ethernet address (smac).
 *   4. RTM_GETNEIGH for (egress interface, next hop): its MAC (dmac) when
 *      the entry is in a NUD_VALID state.
 *   5. RTM_NEWNEIGH, only when the entry is missing or not yet managed:
 *      make it a managed entry (NTF_EXT_MANAGED in NDA_FLAGS_EXT).
 *
 * Why managed entries.  Packets the data path sends never pass the
 * kernel's neighbour code, so nothing would ever confirm or refresh an
 * ordinary entry: it goes STALE and stays so, and a backend whose MAC
 * changes (replaced host, VRRP failover of a gateway) would keep receiving
 * frames at the old MAC.  The kernel probes a managed entry in the
 * background (every net.ipv4.neigh.<dev>.interval_probe_time_ms, 5 s by
 * default, also when it FAILED), so it stays REACHABLE and follows MAC
 * changes without traffic, and the next resolution sees the change.
 * An entry that is already valid but not managed is adopted (made managed,
 * its state kept) for the same reason; PERMANENT and NOARP entries (set by
 * an administrator or needing no resolution) and NTF_EXT_LEARNED entries
 * (owned by another control plane) are used as they are and never written.
 *
 * How the kernel takes it (net/core/neighbour.c, neigh_add): RTM_NEWNEIGH
 * with NLM_F_CREATE, ndm_state NUD_NONE (a managed entry must not be
 * PERMANENT: "Invalid NTF_* flag for permanent entry") and NDA_FLAGS_EXT =
 * NTF_EXT_MANAGED creates the entry and starts resolution
 * (neigh_event_send); on an existing entry it sets the flag and keeps the
 * state and address.  This is what `ip neigh add ADDR dev DEV managed`
 * sends.  NLM_F_REPLACE is not needed: it only matters when a link-layer
 * address is given, and none is.
 *
 * Kernels without managed entries (before 5.16) ignore NDA_FLAGS_EXT
 * (unknown attributes pass the liberal parser).  The request therefore
 * also carries NTF_USE in ndm_flags, which every kernel honours by starting
 * resolution of the entry (neigh_event_send) without touching its state:
 * on such a kernel every resolution of a not-yet-managed entry is one
 * "use" of it, so the entry is resolved and refreshed (STALE -> DELAY ->
 * PROBE) for as long as the daemon keeps asking.  Nothing else (no packet
 * sent from a socket) is used to trigger resolution.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/time.h>

#include <libmnl/libmnl.h>
#include <linux/if_arp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "flow_hash.h"
#include "neigh.h"

/* The kernel's NUD_VALID (include/net/neighbour.h; not in the uapi). */
#define NEIGH_NUD_VALID	(NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | \
			 NUD_PROBE | NUD_STALE | NUD_DELAY)

/* Every request fits: a header, a family header and two small attributes. */
#define NEIGH_REQ_SIZE		256

/* How long one exchange may wait for the kernel; it answers at once. */
#define NEIGH_TIMEOUT_MS	2000

struct xlb_neigh {
	struct mnl_socket *nl;
	unsigned int portid;
	unsigned int seq;
	char kmsg[128];		/* the kernel's extended ACK message, if any */
	/* one read: rtnetlink answers to single requests are far smaller */
	char buf[32768] __attribute__((aligned(8)));
};

/* --- one exchange ---------------------------------------------------------- */

typedef int (*reply_cb)(const struct nlmsghdr *nlh, void *data,
			struct xlb_err *err);

/*
 * mnl_attr_parse() stops quietly at the first attribute that does not fit;
 * here bytes left over after the last whole attribute make the message
 * malformed.  -EBADMSG for that, or for a callback's MNL_CB_ERROR.
 */
static int parse_attrs(const struct nlmsghdr *nlh, unsigned int offset,
		       mnl_attr_cb_t cb, void *data)
{
	const char *tail = mnl_nlmsg_get_payload_tail(nlh);
	const struct nlattr *a;

	if (MNL_ALIGN(offset) > mnl_nlmsg_get_payload_len(nlh))
		return -EBADMSG;
	mnl_attr_for_each(a, nlh, offset)
		if (cb(a, data) < MNL_CB_OK)
			return -EBADMSG;
	return tail - (const char *)a > 0 ? -EBADMSG : 0;
}

static int ext_ack_cb(const struct nlattr *a, void *data)
{
	struct xlb_neigh *n = data;

	if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG) {
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return MNL_CB_ERROR;
		snprintf(n->kmsg, sizeof(n->kmsg), "%s", mnl_attr_get_str(a));
	}
	return MNL_CB_OK;
}

/*
 * An NLMSG_ERROR: *kerr is its errno (0 for an ACK), its text goes to
 * n->kmsg.  -EBADMSG if it is malformed.
 */
static int parse_ack(struct xlb_neigh *n, const struct nlmsghdr *nlh,
		     int *kerr)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t len = mnl_nlmsg_get_payload_len(nlh);
	size_t off = sizeof(*e);

	if (len < sizeof(*e) || e->error > 0 || e->error < -4095)
		return -EBADMSG;
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		/* the request is echoed whole unless NLM_F_CAPPED */
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
			if (e->msg.nlmsg_len < sizeof(e->msg))
				return -EBADMSG;
			off += MNL_ALIGN(e->msg.nlmsg_len) - sizeof(e->msg);
		}
		if (off > len ||
		    parse_attrs(nlh, (unsigned int)off, ext_ack_cb, n) < 0)
			return -EBADMSG;
	}
	*kerr = e->error;
	return 0;
}

/*
 * Send req and read up to its ACK.  Every answer to it that is not the
 * ACK goes to cb (which may fail; the rest is still read, so the socket is
 * clean for the next exchange).  Messages that are not for this request
 * (another sequence number or sender: an answer that came after an
 * earlier exchange gave up waiting) are skipped.  Returns 0, the first
 * error of cb, or the kernel's error (-errno, its message in n->kmsg and
 * a sentence naming what in err).
 */
static int xfer(struct xlb_neigh *n, struct nlmsghdr *req, reply_cb cb,
		void *data, const char *what, struct xlb_err *err)
{
	unsigned int seq = ++n->seq;
	int ret = 0, kerr = 0;
	bool done = false;

	if (!seq)
		seq = n->seq = 1;	/* 0 is what notifications carry */
	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	req->nlmsg_seq = seq;
	n->kmsg[0] = '\0';
	if (mnl_socket_sendto(n->nl, req, req->nlmsg_len) !=
	    (ssize_t)req->nlmsg_len)
		return xlb_errf(err, errno ? errno : EIO,
				"%s: sending the netlink request failed: %s",
				what, strerror(errno ? errno : EIO));
	while (!done) {
		struct sockaddr_nl from;
		struct iovec iov = { n->buf, sizeof(n->buf) };
		struct msghdr mh = {
			.msg_name = &from, .msg_namelen = sizeof(from),
			.msg_iov = &iov, .msg_iovlen = 1,
		};
		const struct nlmsghdr *nlh = (const void *)n->buf;
		ssize_t len;
		int rem;

		len = recvmsg(mnl_socket_get_fd(n->nl), &mh, 0);
		if (len < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			if (e == EAGAIN || e == EWOULDBLOCK)
				return xlb_errf(err, ETIMEDOUT,
						"%s: no netlink answer within %d ms",
						what, NEIGH_TIMEOUT_MS);
			return xlb_errf(err, e, "%s: reading the netlink answer failed: %s",
					what, strerror(e));
		}
		if (mh.msg_flags & MSG_TRUNC)
			return xlb_errf(err, EMSGSIZE,
					"%s: the netlink answer is larger than %zu bytes",
					what, sizeof(n->buf));
		/* only the kernel (port 0) answers; a process may not pose as it */
		if (mh.msg_namelen != sizeof(from) || from.nl_pid != 0)
			continue;
		rem = (int)len;
		for (; mnl_nlmsg_ok(nlh, rem); nlh = mnl_nlmsg_next(nlh, &rem)) {
			if (nlh->nlmsg_seq != seq || nlh->nlmsg_pid != n->portid)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				if (parse_ack(n, nlh, &kerr) < 0)
					return xlb_errf(err, EBADMSG,
							"%s: the kernel's netlink ACK is malformed",
							what);
				done = true;
				break;
			}
			if (nlh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
				continue;	/* NLMSG_NOOP */
			if (!ret)
				ret = cb ? cb(nlh, data, err) :
				      xlb_errf(err, EBADMSG,
					       "%s: unexpected netlink answer of type %u",
					       what, nlh->nlmsg_type);
		}
		if (!done && rem != 0)
			return xlb_errf(err, EBADMSG,
					"%s: the netlink answer has %d bytes that are no message",
					what, rem);
	}
	if (ret)
		return ret;
	if (kerr)
		return xlb_errf(err, -kerr, "%s: %s%s%s%s", what,
				strerror(-kerr), n->kmsg[0] ? " (kernel: " : "",
				n->kmsg, n->kmsg[0] ? ")" : "");
	return 0;
}

/* --- helpers ----------------------------------------------------------------- */

static int addr_len(int af)
{
	return af == AF_INET ? 4 : af == AF_INET6 ? 16 : 0;
}

static const char *ntop(int af, const void *a, char *buf)
{
	if (!inet_ntop(af, a, buf, INET6_ADDRSTRLEN))
		snprintf(buf, INET6_ADDRSTRLEN, "?");
	return buf;
}

/* Check an attribute's payload length; the sentence names it. */
static int attr_ok(const struct nlattr *a, enum mnl_attr_data_type t,
		   size_t len, const char *msg, const char *name,
		   struct xlb_err *err)
{
	int r = len ? mnl_attr_validate2(a, t, len) : mnl_attr_validate(a, t);

	if (r < 0)
		return xlb_errf(err, EBADMSG,
				"malformed %s answer: attribute %s has %u bytes",
				msg, name, mnl_attr_get_payload_len(a));
	return 0;
}

/*
 * The attributes of an answer, each checked by cb; a failing cb has said
 * why in err, anything else wrong is said here.
 */
static int parse_answer(const struct nlmsghdr *nlh, unsigned int offset,
			mnl_attr_cb_t cb, void *data, const char *msg,
			struct xlb_err *err)
{
	if (err)
		err->msg[0] = '\0';
	if (parse_attrs(nlh, offset, cb, data) == 0)
		return 0;
	if (err && err->msg[0])
		return -EBADMSG;
	return xlb_errf(err, EBADMSG,
			"malformed %s answer: its attributes overrun the message",
			msg);
}

static const char *nud_name(uint16_t state)
{
	static const struct {
		uint16_t s;
		const char *name;
	} names[] = {
		{ NUD_INCOMPLETE, "INCOMPLETE" }, { NUD_REACHABLE, "REACHABLE" },
		{ NUD_STALE, "STALE" }, { NUD_DELAY, "DELAY" },
		{ NUD_PROBE, "PROBE" }, { NUD_FAILED, "FAILED" },
		{ NUD_NOARP, "NOARP" }, { NUD_PERMANENT, "PERMANENT" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (state & names[i].s)
			return names[i].name;
	return "NONE";
}

static const char *rtn_name(unsigned int type)
{
	static const char *const names[] = {
		[RTN_UNSPEC] = "unspec", [RTN_UNICAST] = "unicast",
		[RTN_LOCAL] = "local", [RTN_BROADCAST] = "broadcast",
		[RTN_ANYCAST] = "anycast", [RTN_MULTICAST] = "multicast",
		[RTN_BLACKHOLE] = "blackhole", [RTN_UNREACHABLE] = "unreachable",
		[RTN_PROHIBIT] = "prohibit", [RTN_THROW] = "throw",
		[RTN_NAT] = "nat", [RTN_XRESOLVE] = "xresolve",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] ?
	       names[type] : "unknown";
}

/* --- routes ------------------------------------------------------------------ */

struct route {
	int af;			/* asked for */
	uint8_t type;		/* RTN_* */
	uint32_t oif;
	int gw_af;		/* AF_UNSPEC: on-link; any family (RTA_VIA) */
	uint8_t gw[16];
	bool multipath;
	uint32_t nh_id;		/* nexthop object, 0: none */
	bool got;		/* the kernel answered with a route */
	struct xlb_err *err;	/* for the attribute callback */
};

static int route_attr_cb(const struct nlattr *a, void *data)
{
	struct route *r = data;
	const struct rtvia *via;
	int alen = addr_len(r->af);

	switch (mnl_attr_get_type(a)) {
	case RTA_OIF:
		if (attr_ok(a, MNL_TYPE_U32, 0, "route", "RTA_OIF", r->err))
			return MNL_CB_ERROR;
		r->oif = mnl_attr_get_u32(a);
		break;
	case RTA_GATEWAY:
		if (attr_ok(a, MNL_TYPE_BINARY, (size_t)alen, "route",
			    "RTA_GATEWAY", r->err))
			return MNL_CB_ERROR;
		r->gw_af = r->af;
		memcpy(r->gw, mnl_attr_get_payload(a), (size_t)alen);
		break;
	case RTA_VIA:
		/* a gateway of the other family (IPv4 over IPv6, RFC 5549) */
		if (mnl_attr_get_payload_len(a) < sizeof(*via))
			goto bad_via;
		via = mnl_attr_get_payload(a);
		alen = addr_len(via->rtvia_family);
		r->gw_af = via->rtvia_family;
		if (!alen)
			break;	/* MPLS, say: refused by the caller */
		if (attr_ok(a, MNL_TYPE_BINARY, sizeof(*via) + (size_t)alen,
			    "route", "RTA_VIA", r->err))
			return MNL_CB_ERROR;
		memcpy(r->gw, via->rtvia_addr, (size_t)alen);
		break;
	case RTA_MULTIPATH:
		if (attr_ok(a, MNL_TYPE_NESTED, 0, "route", "RTA_MULTIPATH",
			    r->err))
			return MNL_CB_ERROR;
		r->multipath = true;
		break;
	case RTA_NH_ID:
		if (attr_ok(a, MNL_TYPE_U32, 0, "route", "RTA_NH_ID", r->err))
			return MNL_CB_ERROR;
		r->nh_id = mnl_attr_get_u32(a);
		break;
	}
	return MNL_CB_OK;

bad_via:
	xlb_errf(r->err, EBADMSG, "malformed route answer: attribute RTA_VIA has %u bytes",
		 mnl_attr_get_payload_len(a));
	return MNL_CB_ERROR;
}

static int route_cb(const struct nlmsghdr *nlh, void *data,
		    struct xlb_err *err)
{
	struct route *r = data;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm) ||
	    rtm->rtm_family != r->af)
		return xlb_errf(err, EBADMSG,
				"unexpected answer to a route lookup (type %u, %zu bytes)",
				nlh->nlmsg_type, mnl_nlmsg_get_payload_len(nlh));
	r->type = rtm->rtm_type;
	r->got = true;
	r->err = err;
	return parse_answer(nlh, sizeof(*rtm), route_attr_cb, r, "route", err);
}

/*
 * The kernel's route to addr (fib_match: the FIB entry instead).  Errors
 * the kernel gives for routes that lead nowhere become -ENETUNREACH.
 */
static int route_get(struct xlb_neigh *n, int af, const void *addr,
		     bool fib_match, struct route *r, struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	char a[INET6_ADDRSTRLEN];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int ret;

	memset(r, 0, sizeof(*r));
	r->af = af;
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETROUTE;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)af;
	rtm->rtm_dst_len = (uint8_t)(addr_len(af) * 8);
	rtm->rtm_flags = fib_match ? RTM_F_FIB_MATCH : 0;
	mnl_attr_put(nlh, RTA_DST, (size_t)addr_len(af), addr);

	ntop(af, addr, a);
	ret = xfer(n, nlh, route_cb, r, "route lookup", err);
	switch (ret) {
	case 0:
		break;
	case -ENETUNREACH:
		return xlb_errf(err, ENETUNREACH, "no route to %s", a);
	case -EHOSTUNREACH:
		return xlb_errf(err, ENETUNREACH,
				"the route to %s is an unreachable route", a);
	case -EACCES:
		return xlb_errf(err, ENETUNREACH,
				"the route to %s is a prohibit route", a);
	case -EINVAL:
		/*
		 * A blackhole route answers EINVAL without a message; a
		 * request the kernel does not accept comes with one.
		 */
		if (n->kmsg[0])
			return ret;
		return xlb_errf(err, ENETUNREACH,
				"the route to %s is a blackhole route", a);
	case -EAGAIN:
		/* a throw route with nothing behind it: not "ask again" */
		return xlb_errf(err, ENETUNREACH,
				"the route to %s ends in a throw route", a);
	default:
		return ret;
	}
	if (!r->got)
		return xlb_errf(err, EBADMSG,
				"the kernel acknowledged the lookup of %s without a route",
				a);
	return 0;
}

struct nh_group {
	unsigned int members;
	bool got;
	struct xlb_err *err;
};

static int nexthop_attr_cb(const struct nlattr *a, void *data)
{
	struct nh_group *g = data;

	if (mnl_attr_get_type(a) != NHA_GROUP)
		return MNL_CB_OK;
	if (mnl_attr_get_payload_len(a) % sizeof(struct nexthop_grp)) {
		xlb_errf(g->err, EBADMSG,
			 "malformed nexthop answer: attribute NHA_GROUP has %u bytes",
			 mnl_attr_get_payload_len(a));
		return MNL_CB_ERROR;
	}
	g->members = mnl_attr_get_payload_len(a) / sizeof(struct nexthop_grp);
	return MNL_CB_OK;
}

static int nexthop_cb(const struct nlmsghdr *nlh, void *data,
		      struct xlb_err *err)
{
	struct nh_group *g = data;

	if (nlh->nlmsg_type != RTM_NEWNEXTHOP ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(struct nhmsg))
		return xlb_errf(err, EBADMSG,
				"unexpected answer to a nexthop lookup (type %u)",
				nlh->nlmsg_type);
	g->got = true;
	g->err = err;
	return parse_answer(nlh, sizeof(struct nhmsg), nexthop_attr_cb, g,
			    "nexthop", err);
}

/* How many next hops nexthop object id has (1 unless it is a group). */
static int nexthop_members(struct xlb_neigh *n, uint32_t id,
			   unsigned int *members, struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	struct nh_group g = { .members = 1 };
	struct nlmsghdr *nlh;
	int ret;

	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETNEXTHOP;
	mnl_nlmsg_put_extra_header(nlh, sizeof(struct nhmsg));
	mnl_attr_put_u32(nlh, NHA_ID, id);
	ret = xfer(n, nlh, nexthop_cb, &g, "nexthop lookup", err);
	if (ret)
		return ret;
	if (!g.got)
		return xlb_errf(err, EBADMSG,
				"the kernel acknowledged the lookup of nexthop %u without it",
				id);
	*members = g.members;
	return 0;
}

/* --- links and neighbours ------------------------------------------------- */

struct link {
	uint32_t ifindex;
	uint16_t type;		/* ARPHRD_* */
	bool has_mac;
	uint8_t mac[6];
	char name[IF_NAMESIZE];
	bool got;
	struct xlb_err *err;
};

static int link_attr_cb(const struct nlattr *a, void *data)
{
	struct link *l = data;

	switch (mnl_attr_get_type(a)) {
	case IFLA_ADDRESS:
		/* other lengths (IP tunnels: 4 or 16) are not Ethernet */
		if (mnl_attr_get_payload_len(a) == 6) {
			l->has_mac = true;
			memcpy(l->mac, mnl_attr_get_payload(a), 6);
		}
		break;
	case IFLA_IFNAME:
		if (attr_ok(a, MNL_TYPE_NUL_STRING, 0, "link", "IFLA_IFNAME",
			    l->err))
			return MNL_CB_ERROR;
		snprintf(l->name, sizeof(l->name), "%s", mnl_attr_get_str(a));
		break;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data,
		   struct xlb_err *err)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct link *l = data;

	if (nlh->nlmsg_type != RTM_NEWLINK ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifi) ||
	    (uint32_t)ifi->ifi_index != l->ifindex)
		return xlb_errf(err, EBADMSG,
				"unexpected answer to a link lookup (type %u)",
				nlh->nlmsg_type);
	l->type = ifi->ifi_type;
	l->got = true;
	l->err = err;
	return parse_answer(nlh, sizeof(*ifi), link_attr_cb, l, "link", err);
}

static int link_get(struct xlb_neigh *n, uint32_t ifindex, struct link *l,
		    struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	int ret;

	memset(l, 0, sizeof(*l));
	l->ifindex = ifindex;
	snprintf(l->name, sizeof(l->name), "#%u", ifindex);
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETLINK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)ifindex;
	/* no statistics: the answer stays small */
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	ret = xfer(n, nlh, link_cb, l, "egress interface lookup", err);
	if (ret)
		return ret;
	if (!l->got)
		return xlb_errf(err, EBADMSG,
				"the kernel acknowledged the lookup of interface %u without it",
				ifindex);
	return 0;
}

struct neigh {
	int af;
	const uint8_t *dst;
	uint32_t ifindex;
	bool found;
	uint16_t state;		/* NUD_* */
	uint8_t flags;		/* NTF_* */
	uint32_t flags_ext;	/* NTF_EXT_* */
	bool has_mac;
	uint8_t mac[6];
	uint8_t protocol;	/* NDA_PROTOCOL: who made it, 0 unknown */
	struct xlb_err *err;
};

static int neigh_attr_cb(const struct nlattr *a, void *data)
{
	struct neigh *ne = data;

	switch (mnl_attr_get_type(a)) {
	case NDA_DST:
		if (attr_ok(a, MNL_TYPE_BINARY, (size_t)addr_len(ne->af),
			    "neighbour", "NDA_DST", ne->err))
			return MNL_CB_ERROR;
		if (memcmp(mnl_attr_get_payload(a), ne->dst,
			   (size_t)addr_len(ne->af))) {
			xlb_errf(ne->err, EBADMSG,
				 "the kernel answered a neighbour lookup with another address");
			return MNL_CB_ERROR;
		}
		break;
	case NDA_LLADDR:
		/* an Ethernet egress interface has 6-byte addresses */
		if (attr_ok(a, MNL_TYPE_BINARY, 6, "neighbour", "NDA_LLADDR",
			    ne->err))
			return MNL_CB_ERROR;
		ne->has_mac = true;
		memcpy(ne->mac, mnl_attr_get_payload(a), 6);
		break;
	case NDA_FLAGS_EXT:
		if (attr_ok(a, MNL_TYPE_U32, 0, "neighbour", "NDA_FLAGS_EXT",
			    ne->err))
			return MNL_CB_ERROR;
		ne->flags_ext = mnl_attr_get_u32(a);
		break;
	case NDA_PROTOCOL:
		if (attr_ok(a, MNL_TYPE_U8, 0, "neighbour", "NDA_PROTOCOL",
			    ne->err))
			return MNL_CB_ERROR;
		ne->protocol = mnl_attr_get_u8(a);
		break;
	}
	return MNL_CB_OK;
}

static int neigh_cb(const struct nlmsghdr *nlh, void *data,
		    struct xlb_err *err)
{
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct neigh *ne = data;

	if (nlh->nlmsg_type != RTM_NEWNEIGH ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*ndm) ||
	    ndm->ndm_family != ne->af ||
	    (uint32_t)ndm->ndm_ifindex != ne->ifindex)
		return xlb_errf(err, EBADMSG,
				"unexpected answer to a neighbour lookup (type %u)",
				nlh->nlmsg_type);
	ne->found = true;
	ne->state = ndm->ndm_state;
	ne->flags = ndm->ndm_flags;
	ne->err = err;
	return parse_answer(nlh, sizeof(*ndm), neigh_attr_cb, ne, "neighbour",
			    err);
}

/* The neighbour entry (af, dst) on ifindex; ne->found false if none. */
static int neigh_get(struct xlb_neigh *n, int af, const uint8_t *dst,
		     uint32_t ifindex, struct neigh *ne, struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;
	int ret;

	memset(ne, 0, sizeof(*ne));
	ne->af = af;
	ne->dst = dst;
	ne->ifindex = ifindex;
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETNEIGH;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)af;
	ndm->ndm_ifindex = (int)ifindex;
	mnl_attr_put(nlh, NDA_DST, (size_t)addr_len(af), dst);
	ret = xfer(n, nlh, neigh_cb, ne, "neighbour lookup", err);
	if (ret == -ENOENT) {
		ne->found = false;
		return 0;
	}
	if (!ret && !ne->found)
		return xlb_errf(err, EBADMSG,
				"the kernel acknowledged a neighbour lookup without an entry");
	return ret;
}

/*
 * Make (af, dst) on ifindex a managed entry and start its resolution; on
 * kernels before 5.16 only the latter (see the top of this file).  create:
 * there was no entry, so one is made, and only if there still is none
 * (NLM_F_EXCL: one that appeared meanwhile is left alone and looked at on
 * the next resolution).
 */
static int neigh_manage(struct xlb_neigh *n, int af, const uint8_t *dst,
			uint32_t ifindex, bool create, struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;
	int ret;

	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_NEWNEIGH;
	nlh->nlmsg_flags = create ? NLM_F_CREATE | NLM_F_EXCL : 0;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)af;
	ndm->ndm_ifindex = (int)ifindex;
	ndm->ndm_state = NUD_NONE;
	ndm->ndm_flags = NTF_USE;
	mnl_attr_put(nlh, NDA_DST, (size_t)addr_len(af), dst);
	mnl_attr_put_u32(nlh, NDA_FLAGS_EXT, NTF_EXT_MANAGED);
	/* an entry made here says so: xlb_neigh_release removes only those */
	if (create)
		mnl_attr_put_u8(nlh, NDA_PROTOCOL, XLB_NEIGH_PROTO);
	ret = xfer(n, nlh, NULL, NULL, "creating a managed neighbour entry",
		   err);
	/* lost a race with the kernel or an administrator: look next time */
	if (ret == -EEXIST || ret == -ENOENT)
		return 0;
	return ret;
}

/* --- the interface ---------------------------------------------------------- */

struct xlb_neigh *xlb_neigh_open(struct xlb_err *err)
{
	struct timeval tv = {
		.tv_sec = NEIGH_TIMEOUT_MS / 1000,
		.tv_usec = (NEIGH_TIMEOUT_MS % 1000) * 1000,
	};
	struct xlb_neigh *n;
	int on = 1, e;

	n = calloc(1, sizeof(*n));
	if (!n) {
		xlb_errf(err, ENOMEM, "no memory for the netlink socket state");
		return NULL;
	}
	n->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!n->nl) {
		e = errno;
		free(n);
		xlb_errf(err, e, "cannot open a NETLINK_ROUTE socket: %s",
			 strerror(e));
		errno = e;
		return NULL;
	}
	if (mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		e = errno;
		xlb_neigh_close(n);
		xlb_errf(err, e, "cannot bind the NETLINK_ROUTE socket: %s",
			 strerror(e));
		errno = e;
		return NULL;
	}
	n->portid = mnl_socket_get_portid(n->nl);
	/*
	 * Best effort, all present since Linux 4.20: the kernel's reason
	 * with every error, ACKs without a copy of the request, and strict
	 * checking of our requests (a field the kernel would ignore is an
	 * error instead).  A receive timeout keeps a caller from hanging on
	 * a kernel that never answers.
	 */
	mnl_socket_setsockopt(n->nl, NETLINK_EXT_ACK, &on, sizeof(on));
	mnl_socket_setsockopt(n->nl, NETLINK_CAP_ACK, &on, sizeof(on));
	mnl_socket_setsockopt(n->nl, NETLINK_GET_STRICT_CHK, &on, sizeof(on));
	if (setsockopt(mnl_socket_get_fd(n->nl), SOL_SOCKET, SO_RCVTIMEO,
		       &tv, sizeof(tv)) < 0) {
		e = errno;
		xlb_neigh_close(n);
		xlb_errf(err, e, "cannot set a timeout on the netlink socket: %s",
			 strerror(e));
		errno = e;
		return NULL;
	}
	return n;
}

void xlb_neigh_close(struct xlb_neigh *n)
{
	if (!n)
		return;
	if (n->nl)
		mnl_socket_close(n->nl);
	free(n);
}

/*
 * The route part of a resolution: the next hop toward addr (the gateway,
 * or addr on link) as *hop_af, hop and rt->oif; a refused route as
 * xlb_neigh_resolve refuses it.
 */
static int next_hop(struct xlb_neigh *n, uint8_t family, const __be32 addr[4],
		    struct route *rt, int *hop_af, const uint8_t **hop,
		    struct xlb_err *err)
{
	char a[INET6_ADDRSTRLEN];
	struct route fm;
	int af, ret;
	unsigned int members;

	if (family == XLB_FAMILY_INET)
		af = AF_INET;
	else if (family == XLB_FAMILY_INET6)
		af = AF_INET6;
	else
		return xlb_errf(err, EINVAL,
				"address family %u is neither %u (IPv4) nor %u (IPv6)",
				family, XLB_FAMILY_INET, XLB_FAMILY_INET6);
	ntop(af, addr, a);

	ret = route_get(n, af, addr, false, rt, err);
	if (ret)
		return ret;
	if (rt->type == RTN_LOCAL)
		return xlb_errf(err, ENETUNREACH,
				"%s is an address of this host (local route)", a);
	if (rt->type != RTN_UNICAST)
		return xlb_errf(err, ENETUNREACH,
				"the route to %s is of type %s (%u), not unicast",
				a, rtn_name(rt->type), rt->type);
	if (!rt->oif)
		return xlb_errf(err, ENETUNREACH,
				"the route to %s names no egress interface", a);

	ret = route_get(n, af, addr, true, &fm, err);
	if (ret)
		return ret;
	members = fm.multipath ? 2 : 1;
	if (!fm.multipath && fm.nh_id && !fm.oif) {
		/* a nexthop object the kernel did not expand: ask about it */
		ret = nexthop_members(n, fm.nh_id, &members, err);
		if (ret)
			return ret;
	}
	if (members > 1)
		return xlb_errf(err, ENETUNREACH,
				"the route to %s is a multipath route; the data path's FIB lookup spreads flows over its next hops",
				a);
	if (rt->gw_af && !addr_len(rt->gw_af))
		return xlb_errf(err, ENETUNREACH,
				"the route to %s has a gateway of address family %d, neither IPv4 nor IPv6",
				a, rt->gw_af);
	if (rt->gw_af) {
		*hop_af = rt->gw_af;
		*hop = rt->gw;
	} else {
		*hop_af = af;
		*hop = (const uint8_t *)addr;
	}
	return 0;
}

int xlb_neigh_resolve(struct xlb_neigh *n, uint8_t family,
		      const __be32 addr[4], struct xlb_nh *out,
		      struct xlb_err *err)
{
	char a[INET6_ADDRSTRLEN], h[INET6_ADDRSTRLEN];
	struct route rt;
	struct link l;
	struct neigh ne;
	const uint8_t *hop;
	int hop_af, ret;

	if (!n || !addr || !out)
		return xlb_errf(err, EINVAL,
				"next hop resolution needs a socket, an address and a result");
	ret = next_hop(n, family, addr, &rt, &hop_af, &hop, err);
	if (ret)
		return ret;
	ntop(family == XLB_FAMILY_INET ? AF_INET : AF_INET6, addr, a);

	ret = link_get(n, rt.oif, &l, err);
	if (ret)
		return ret;
	if (l.type != ARPHRD_ETHER || !l.has_mac)
		return xlb_errf(err, ENETUNREACH,
				"the route to %s leaves through %s, which is not an Ethernet interface (type %u)",
				a, l.name, l.type);

	ntop(hop_af, hop, h);
	ret = neigh_get(n, hop_af, hop, rt.oif, &ne, err);
	if (ret)
		return ret;

	/*
	 * Entries written by someone else on purpose are never touched:
	 * PERMANENT and NOARP (valid, need no resolution) and EXT_LEARNED
	 * (another control plane's; a write would clear that flag).
	 */
	if (ne.found && (ne.state & NEIGH_NUD_VALID)) {
		if (!ne.has_mac)
			return xlb_errf(err, EBADMSG,
					"the neighbour entry of %s on %s is %s but has no link-layer address",
					h, l.name, nud_name(ne.state));
		if (!(ne.flags_ext & NTF_EXT_MANAGED) &&
		    !(ne.state & (NUD_PERMANENT | NUD_NOARP)) &&
		    !(ne.flags & NTF_EXT_LEARNED)) {
			/*
			 * Adopt it so it stays fresh.  Its address is good
			 * now whatever the answer, and the next resolution
			 * tries again, so a failure here is not the
			 * caller's failure.
			 */
			neigh_manage(n, hop_af, hop, rt.oif, false, NULL);
		}
		memset(out, 0, sizeof(*out));
		out->ifindex = rt.oif;
		memcpy(out->dmac, ne.mac, 6);
		memcpy(out->smac, l.mac, 6);
		out->family = hop_af == AF_INET ? XLB_FAMILY_INET :
			      XLB_FAMILY_INET6;
		memcpy(out->via, hop, (size_t)addr_len(hop_af));
		return 0;
	}

	if (!ne.found || (!(ne.flags_ext & NTF_EXT_MANAGED) &&
			  !(ne.flags & NTF_EXT_LEARNED))) {
		ret = neigh_manage(n, hop_af, hop, rt.oif, !ne.found, err);
		if (ret)
			return ret;
	}
	if (!ne.found)
		return xlb_errf(err, EAGAIN,
				"no neighbour entry for %s on %s yet; resolution started",
				h, l.name);
	return xlb_errf(err, EAGAIN,
			"the neighbour entry of %s on %s is %s; %s", h, l.name,
			nud_name(ne.state),
			ne.flags_ext & NTF_EXT_MANAGED ?
			"the kernel keeps resolving it (managed entry)" :
			ne.flags & NTF_EXT_LEARNED ?
			"it belongs to another control plane (extern_learn) and is left alone" :
			"resolution started");
}

int xlb_neigh_hop(struct xlb_neigh *n, uint8_t family, const __be32 addr[4],
		  struct xlb_nh *out, struct xlb_err *err)
{
	const uint8_t *hop;
	struct route rt;
	int hop_af, ret;

	if (!n || !addr || !out)
		return xlb_errf(err, EINVAL,
				"a next hop needs a socket, an address and a result");
	ret = next_hop(n, family, addr, &rt, &hop_af, &hop, err);
	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->ifindex = rt.oif;
	out->family = hop_af == AF_INET ? XLB_FAMILY_INET : XLB_FAMILY_INET6;
	memcpy(out->via, hop, (size_t)addr_len(hop_af));
	return 0;
}

int xlb_neigh_release(struct xlb_neigh *n, const struct xlb_nh *hop,
		      struct xlb_err *err)
{
	char req[NEIGH_REQ_SIZE] __attribute__((aligned(8)));
	char h[INET6_ADDRSTRLEN];
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;
	struct neigh ne;
	int af, ret;

	if (!n || !hop)
		return xlb_errf(err, EINVAL,
				"releasing a next hop needs a socket and the next hop");
	if (hop->family == XLB_FAMILY_INET)
		af = AF_INET;
	else if (hop->family == XLB_FAMILY_INET6)
		af = AF_INET6;
	else
		return xlb_errf(err, EINVAL,
				"address family %u is neither %u (IPv4) nor %u (IPv6)",
				hop->family, XLB_FAMILY_INET, XLB_FAMILY_INET6);
	ret = neigh_get(n, af, (const uint8_t *)hop->via, hop->ifindex, &ne,
			err);
	if (ret)
		return ret;
	if (!ne.found || ne.protocol != XLB_NEIGH_PROTO)
		return 0;	/* gone already, or not ours */
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_DELNEIGH;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)af;
	ndm->ndm_ifindex = (int)hop->ifindex;
	mnl_attr_put(nlh, NDA_DST, (size_t)addr_len(af), hop->via);
	ret = xfer(n, nlh, NULL, NULL, "removing a neighbour entry", err);
	if (ret == -ENOENT)
		return 0;	/* removed meanwhile */
	if (ret)
		return xlb_errf(err, -ret, "cannot remove the neighbour entry of %s: %s",
				ntop(af, hop->via, h), err && err->msg[0] ?
				err->msg : strerror(-ret));
	return 1;
}
