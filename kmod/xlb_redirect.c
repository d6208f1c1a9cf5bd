// SPDX-License-Identifier: GPL-2.0
/*
 * xlb_redirect: the backend side of xlb's GUE tunnel, with a second chance
 * for connections that a table change sent to the wrong backend.
 *
 * xlb sends a client's packet to a backend inside GUE whose private data is
 * a hop list, [primary, secondary] (bpf/structs.h).  When the LB's table
 * changes and the LB keeps no state for a flow (a stateless VIP, a flushed
 * connection table, another LB host after an ECMP change), an established
 * connection may land on a backend that does not know it.  This module, on
 * every backend, decides per packet:
 *
 *  0. drop what is not for us from an LB: a broadcast or multicast, a
 *     source outside the namespace's allowlist, a hop list whose current
 *     hop is not this host, an inner packet for another host, a tunnel
 *     inside the tunnel;
 *  1. an inner fragment, not TCP, or a SYN: deliver locally;
 *  2. a local established, TIME_WAIT or request socket owns the flow, or
 *     the ACK carries a SYN cookie this host issued: deliver locally;
 *  3. the hop list has a next hop that is neither this host nor a hop
 *     already visited: forward the packet there (outer destination = next
 *     hop, outer source = a local address, index + 1);
 *  4. otherwise: deliver locally (the stack answers as it would without us).
 *
 * ICMP errors inside the tunnel are decided by the TCP connection they
 * quote.  Delivering locally means decapsulating here and handing the inner
 * packet to the stack as if the interface had received it, so the socket
 * on the VIP gets it; no fou or ipip configuration is needed.
 *
 * Hook: one UDP tunnel socket per address family in every network
 * namespace where the module is enabled (like fou), port from the module
 * parameter "port".  Enabling, and the allowlist of LB source prefixes,
 * are per namespace:
 *   printf 'allow 10.0.0.0/24\nenable\n' > /proc/net/xlb_redirect
 * and reading that file shows the state, the namespace's counters and its
 * allowlist (kmod/README.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/if_arp.h>
#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/version.h>
#include <net/addrconf.h>
#include <net/checksum.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ip_tunnels.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/tcp.h>
#include <net/udp_tunnel.h>

#include "structs.h"

static ushort port = XLB_GUE_PORT_DEFAULT;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "UDP port of xlb's GUE tunnel (default 6080)");

/* Counters of one namespace; names as /proc/net/xlb_redirect shows them. */
enum xlbr_stat {
	XLBR_RECEIVED,		/* GUE datagrams on the port */
	XLBR_AGGREGATE,		/* dropped: a GSO packet, whole */
	XLBR_NOT_TO_HOST,	/* dropped: broadcast or multicast */
	XLBR_SOURCE_DENIED,	/* dropped: outer source not allowed */
	XLBR_MALFORMED,		/* dropped: not xlb's GUE, or inconsistent */
	XLBR_HOP_NOT_LOCAL,	/* dropped: hops[index] is not ours */
	XLBR_INNER_NOT_LOCAL,	/* dropped: inner destination is not ours */
	XLBR_NESTED,		/* dropped: a tunnel inside the tunnel */
	XLBR_DELIVER_NOT_TCP,	/* delivered: not TCP, or no ports to match */
	XLBR_DELIVER_FRAGMENT,	/* delivered: an inner fragment */
	XLBR_DELIVER_SYN,	/* delivered: a SYN opens a connection here */
	XLBR_DELIVER_SOCKET,	/* delivered: a local socket owns the flow */
	XLBR_DELIVER_SYNCOOKIE,	/* delivered: ACK with our SYN cookie */
	XLBR_DELIVER_LAST_HOP,	/* delivered: no next hop in the list */
	XLBR_DELIVER_HOP_LOCAL,	/* delivered: next hop is us or was visited */
	XLBR_DELIVER_ERROR,	/* dropped: the backlog refused the packet */
	XLBR_FORWARDED,		/* sent on to the next hop */
	XLBR_FORWARD_OPTIONS,	/* dropped: outer IP options or ext headers */
	XLBR_FORWARD_ERROR,	/* dropped: no route, TTL, no memory */
	XLBR_NSTATS,
};

static const char * const xlbr_stat_names[XLBR_NSTATS] = {
	[XLBR_RECEIVED]		 = "received",
	[XLBR_AGGREGATE]	 = "aggregate",
	[XLBR_NOT_TO_HOST]	 = "not_to_host",
	[XLBR_SOURCE_DENIED]	 = "source_denied",
	[XLBR_MALFORMED]	 = "malformed",
	[XLBR_HOP_NOT_LOCAL]	 = "hop_not_local",
	[XLBR_INNER_NOT_LOCAL]	 = "inner_not_local",
	[XLBR_NESTED]		 = "nested",
	[XLBR_DELIVER_NOT_TCP]	 = "delivered_not_tcp",
	[XLBR_DELIVER_FRAGMENT]	 = "delivered_fragment",
	[XLBR_DELIVER_SYN]	 = "delivered_syn",
	[XLBR_DELIVER_SOCKET]	 = "delivered_socket",
	[XLBR_DELIVER_SYNCOOKIE] = "delivered_syncookie",
	[XLBR_DELIVER_LAST_HOP]	 = "delivered_last_hop",
	[XLBR_DELIVER_HOP_LOCAL] = "delivered_hop_local",
	[XLBR_DELIVER_ERROR]	 = "deliver_errors",
	[XLBR_FORWARDED]	 = "forwarded",
	[XLBR_FORWARD_OPTIONS]	 = "forward_options",
	[XLBR_FORWARD_ERROR]	 = "forward_errors",
};

struct xlbr_stats {
	unsigned long cnt[XLBR_NSTATS];
};

union xlbr_addr {
	__be32 a4;
	struct in6_addr a6;
};

/* The LB source prefixes of a namespace (the "allow" lines). */
#define XLBR_ALLOW_MAX	64

struct xlbr_prefix {
	u8 family;
	u8 len;
	union xlbr_addr addr;
};

struct xlbr_allow {
	struct rcu_head rcu;
	unsigned int n;
	struct xlbr_prefix p[XLBR_ALLOW_MAX];
};

/* Per network namespace. */
struct xlbr_net {
	struct mutex lock;		/* serializes control-file writes */
	struct socket *sock4;		/* NULL: disabled */
	struct socket *sock6;		/* NULL also when IPv6 is off */
	struct xlbr_allow __rcu *allow;	/* NULL: nobody */
	struct xlbr_stats __percpu *stats;
};

static unsigned int xlbr_net_id __read_mostly;

/* What parsing learnt; offsets count from the UDP header (skb->data). */
struct xlbr_pkt {
	u8 family;			/* outer: AF_INET or AF_INET6 */
	u8 inner_family;
	u8 count;			/* valid hops */
	u8 index;			/* current hop */
	unsigned int index_off;		/* of the hop list's index byte */
	unsigned int inner_off;		/* of the inner IP header */
	union xlbr_addr hops[XLB_HOPS];
	union xlbr_addr inner_dst;	/* of the inner packet */
	bool frag;			/* the inner packet is a fragment */
	bool nested;			/* it is a tunnel packet itself */
	/* the TCP flow as the backend receives it */
	bool tcp;
	bool icmp;			/* quoted by an ICMP error */
	union {
		struct iphdr ip4;	/* addresses of the flow */
		struct ipv6hdr ip6;
	};
	struct tcphdr th;		/* ports; flags, seq unless icmp */
};

static void xlbr_count(struct xlbr_net *xn, enum xlbr_stat s)
{
	this_cpu_inc(xn->stats->cnt[s]);
}

static unsigned int xlbr_alen(u8 family)
{
	return family == AF_INET ? sizeof(__be32) : sizeof(struct in6_addr);
}

/* --- parsing --------------------------------------------------------------- */

static bool xlbr_hop_ok(u8 family, const union xlbr_addr *a)
{
	if (family == AF_INET)
		return !ipv4_is_zeronet(a->a4) && !ipv4_is_multicast(a->a4) &&
		       !ipv4_is_lbcast(a->a4);
	return !ipv6_addr_any(&a->a6) && !ipv6_addr_is_multicast(&a->a6);
}

/* The GUE header and the hop list behind the UDP header. */
static int xlbr_parse_gue(struct sk_buff *skb, struct xlbr_pkt *p)
{
	unsigned int off = sizeof(struct udphdr), alen, hlen, i;
	struct xlb_gue_hops _hops;
	const struct xlb_gue_hops *hops;
	struct xlb_gue_hdr _gue;
	const struct xlb_gue_hdr *gue;
	u8 fam;

	gue = skb_header_pointer(skb, off, sizeof(_gue), &_gue);
	if (!gue || XLB_GUE_VERSION(gue->hlen_cver) != 0 ||
	    XLB_GUE_C(gue->hlen_cver) || gue->flags != htons(XLB_GUE_FLAGS))
		return -EINVAL;
	if (gue->proto == IPPROTO_IPIP)
		p->inner_family = AF_INET;
	else if (gue->proto == IPPROTO_IPV6)
		p->inner_family = AF_INET6;
	else
		return -EINVAL;
	hlen = XLB_GUE_HLEN(gue->hlen_cver) * 4;
	off += sizeof(*gue);
	p->inner_off = off + hlen;
	if (p->inner_off > skb->len)
		return -EINVAL;

	hops = skb_header_pointer(skb, off, sizeof(_hops), &_hops);
	if (hlen < sizeof(_hops) || !hops || hops->magic != XLB_GUE_HOPS_MAGIC)
		return -EINVAL;
	fam = p->family == AF_INET ? XLB_FAMILY_INET : XLB_FAMILY_INET6;
	alen = xlbr_alen(p->family);
	if (hops->family != fam || !hops->count || hops->count > XLB_HOPS ||
	    hops->index >= hops->count ||
	    sizeof(_hops) + hops->count * alen > hlen)
		return -EINVAL;
	p->count = hops->count;
	p->index = hops->index;
	p->index_off = off + offsetof(struct xlb_gue_hops, index);
	off += sizeof(_hops);
	for (i = 0; i < p->count; i++, off += alen) {
		if (skb_copy_bits(skb, off, &p->hops[i], alen) ||
		    !xlbr_hop_ok(p->family, &p->hops[i]))
			return -EINVAL;
	}
	return 0;
}

/*
 * The TCP header at off, within len bytes of inner payload.  Keeps only
 * the ports when quoted by an ICMP error (8 bytes is all a quote must hold).
 */
static int xlbr_parse_tcp(struct sk_buff *skb, unsigned int off,
			  unsigned int len, struct xlbr_pkt *p)
{
	unsigned int need = p->icmp ? 8 : sizeof(p->th);

	if (len < need || skb_copy_bits(skb, off, &p->th, need))
		return p->icmp ? 0 : -EINVAL;
	if (!p->icmp && (p->th.doff < 5 || p->th.doff * 4 > len))
		return -EINVAL;
	p->tcp = true;
	return 0;
}

/*
 * An inner UDP header (a first fragment holds it too): GUE to our port
 * inside GUE is a tunnel in the tunnel.
 */
static int xlbr_parse_udp(struct sk_buff *skb, unsigned int off,
			  unsigned int len, struct xlbr_pkt *p)
{
	struct udphdr _uh;
	const struct udphdr *uh;

	uh = skb_header_pointer(skb, off, sizeof(_uh), &_uh);
	if (len < sizeof(_uh) || !uh)
		return -EINVAL;
	if (uh->dest == htons(port))
		p->nested = true;
	return 0;
}

static int xlbr_parse_inner4(struct sk_buff *skb, unsigned int off,
			     unsigned int end, struct xlbr_pkt *p);
static int xlbr_parse_inner6(struct sk_buff *skb, unsigned int off,
			     unsigned int end, struct xlbr_pkt *p);

/*
 * An ICMP error quotes the start of a packet this host sent: the flow
 * turned around.  Parse the quote as an inner packet, then swap.
 */
static int xlbr_parse_quote(struct sk_buff *skb, unsigned int off,
			    unsigned int end, struct xlbr_pkt *p, u8 family)
{
	p->icmp = true;
	if (family == AF_INET ? xlbr_parse_inner4(skb, off, end, p) :
				xlbr_parse_inner6(skb, off, end, p))
		p->tcp = false;	/* a short quote: the stack's business */
	if (!p->tcp)
		return 0;
	if (family == AF_INET)
		swap(p->ip4.saddr, p->ip4.daddr);
	else
		swap(p->ip6.saddr, p->ip6.daddr);
	swap(p->th.source, p->th.dest);
	return 0;
}

static int xlbr_parse_inner4(struct sk_buff *skb, unsigned int off,
			     unsigned int end, struct xlbr_pkt *p)
{
	struct icmphdr _ih;
	const struct icmphdr *ih;
	unsigned int ihl, tot;

	if (off + sizeof(p->ip4) > end ||
	    skb_copy_bits(skb, off, &p->ip4, sizeof(p->ip4)))
		return -EINVAL;
	ihl = p->ip4.ihl * 4;
	tot = ntohs(p->ip4.tot_len);
	if (p->ip4.version != 4 || ihl < sizeof(p->ip4) || tot < ihl)
		return -EINVAL;
	/* a quote may be cut anywhere; a packet must be whole */
	if (p->icmp)
		tot = min(tot, end - off);
	else if (off + tot > end)
		return -EINVAL;
	if (!p->icmp) {
		p->inner_dst.a4 = p->ip4.daddr;
		p->frag = ip_is_fragment(&p->ip4);
		p->nested = p->ip4.protocol == IPPROTO_IPIP ||
			    p->ip4.protocol == IPPROTO_IPV6;
	}
	if (p->ip4.frag_off & htons(IP_OFFSET))
		return 0;	/* no ports in a later fragment */
	off += ihl;
	tot -= ihl;
	if (p->ip4.protocol == IPPROTO_TCP)
		return xlbr_parse_tcp(skb, off, tot, p);
	if (p->ip4.protocol == IPPROTO_UDP && !p->icmp)
		return xlbr_parse_udp(skb, off, tot, p);
	if (p->ip4.protocol != IPPROTO_ICMP || p->icmp)
		return 0;
	ih = skb_header_pointer(skb, off, sizeof(_ih), &_ih);
	if (!ih || tot < sizeof(_ih) || !icmp_is_err(ih->type))
		return 0;
	return xlbr_parse_quote(skb, off + sizeof(_ih), off + tot, p, AF_INET);
}

static int xlbr_parse_inner6(struct sk_buff *skb, unsigned int off,
			     unsigned int end, struct xlbr_pkt *p)
{
	struct icmp6hdr _ih;
	const struct icmp6hdr *ih;
	unsigned int tot;
	__be16 frag = 0;
	u8 nexthdr;
	int l4;

	if (off + sizeof(p->ip6) > end ||
	    skb_copy_bits(skb, off, &p->ip6, sizeof(p->ip6)))
		return -EINVAL;
	tot = sizeof(p->ip6) + ntohs(p->ip6.payload_len);
	if (p->ip6.version != 6 || (!p->ip6.payload_len && !p->icmp))
		return -EINVAL;
	if (p->icmp)
		tot = min(tot, end - off);
	else if (off + tot > end)
		return -EINVAL;
	nexthdr = p->ip6.nexthdr;
	l4 = ipv6_skip_exthdr(skb, off + sizeof(p->ip6), &nexthdr, &frag);
	if (l4 < 0 || l4 > off + tot)
		return p->icmp ? 0 : -EINVAL;
	if (!p->icmp) {
		p->inner_dst.a6 = p->ip6.daddr;
		p->frag = frag != 0;
		p->nested = nexthdr == IPPROTO_IPIP || nexthdr == IPPROTO_IPV6;
	}
	if (frag & htons(IP6_OFFSET))
		return 0;
	if (nexthdr == IPPROTO_TCP)
		return xlbr_parse_tcp(skb, l4, off + tot - l4, p);
	if (nexthdr == IPPROTO_UDP && !p->icmp)
		return xlbr_parse_udp(skb, l4, off + tot - l4, p);
	if (nexthdr != IPPROTO_ICMPV6 || p->icmp)
		return 0;
	ih = skb_header_pointer(skb, l4, sizeof(_ih), &_ih);
	if (!ih || off + tot - l4 < sizeof(_ih) ||
	    (ih->icmp6_type & ICMPV6_INFOMSG_MASK))
		return 0;
	return xlbr_parse_quote(skb, l4 + sizeof(_ih), off + tot, p, AF_INET6);
}

/* Everything the decision needs, or -EINVAL for a malformed packet. */
static int xlbr_parse(struct sk_buff *skb, struct xlbr_pkt *p)
{
	memset(p, 0, sizeof(*p));
	p->family = skb->protocol == htons(ETH_P_IP) ? AF_INET : AF_INET6;
	if (xlbr_parse_gue(skb, p))
		return -EINVAL;
	if (p->inner_family == AF_INET)
		return xlbr_parse_inner4(skb, p->inner_off, skb->len, p);
	return xlbr_parse_inner6(skb, p->inner_off, skb->len, p);
}

/* --- the decision ---------------------------------------------------------- */

/* An established, TIME_WAIT or request socket (all in ehash) of the flow. */
static bool xlbr_owned(struct net *net, struct sk_buff *skb,
		       const struct xlbr_pkt *p, int dif, int sdif)
{
	struct inet_hashinfo *hinfo = net->ipv4.tcp_death_row.hashinfo;
	struct sock *sk;

	if (p->inner_family == AF_INET)
		sk = __inet_lookup_established(net, hinfo, p->ip4.saddr,
					       p->th.source, p->ip4.daddr,
					       ntohs(p->th.dest), dif, sdif);
	else
		sk = __inet6_lookup_established(net, hinfo, &p->ip6.saddr,
						p->th.source, &p->ip6.daddr,
						ntohs(p->th.dest), dif, sdif);
	if (!sk)
		return false;
	sock_gen_put(sk);
	return true;
}

/*
 * The cookie's hash, age and MSS index.  6.8 dropped the cookie argument of
 * __cookie_v4_check() and __cookie_v6_check(): they take it from the ACK,
 * as we do.
 */
static bool xlbr_cookie_check(const struct xlbr_pkt *p)
{
#if KERNEL_VERSION(6, 8, 0) <= LINUX_VERSION_CODE
	if (p->inner_family == AF_INET)
		return __cookie_v4_check(&p->ip4, &p->th) != 0;
	return __cookie_v6_check(&p->ip6, &p->th) != 0;
#else
	u32 cookie = ntohl(p->th.ack_seq) - 1;

	if (p->inner_family == AF_INET)
		return __cookie_v4_check(&p->ip4, &p->th, cookie) != 0;
	return __cookie_v6_check(&p->ip6, &p->th, cookie) != 0;
#endif
}

/*
 * An ACK completing a handshake this host answered with a SYN cookie: the
 * checks tcp_v4_rcv()/tcp_v6_rcv() make before creating the socket (a
 * listener, syncookies on, a cookie sent recently by that listener, the
 * cookie's hash, age and MSS index valid).  Not checked: the timestamp
 * option bits, which only refine the options of the socket to be created.
 */
static bool xlbr_syncookie(struct net *net, const struct xlbr_pkt *p,
			   int dif, int sdif)
{
	struct inet_hashinfo *hinfo = net->ipv4.tcp_death_row.hashinfo;
	struct sock *lsk;

	if (!IS_ENABLED(CONFIG_SYN_COOKIES) || p->icmp ||
	    !READ_ONCE(net->ipv4.sysctl_tcp_syncookies) ||
	    !p->th.ack || p->th.syn || p->th.rst)
		return false;
	if (p->inner_family == AF_INET)
		lsk = __inet_lookup_listener(net, hinfo, NULL, 0,
					     p->ip4.saddr, p->th.source,
					     p->ip4.daddr, ntohs(p->th.dest),
					     dif, sdif);
	else
		lsk = inet6_lookup_listener(net, hinfo, NULL, 0,
					    &p->ip6.saddr, p->th.source,
					    &p->ip6.daddr, ntohs(p->th.dest),
					    dif, sdif);
	/* listeners are found without a reference, under RCU */
	if (!lsk || tcp_synq_no_recent_overflow(lsk))
		return false;
	return xlbr_cookie_check(p);
}

static bool xlbr_addr_eq(u8 family, const union xlbr_addr *a,
			 const union xlbr_addr *b)
{
	if (family == AF_INET)
		return a->a4 == b->a4;
	return ipv6_addr_equal(&a->a6, &b->a6);
}

static bool xlbr_addr_local(struct net *net, u8 family,
			    const union xlbr_addr *a)
{
	if (family == AF_INET)
		return inet_addr_type(net, a->a4) == RTN_LOCAL;
	return ipv6_chk_addr(net, &a->a6, NULL, 0);
}

/*
 * A destination this host takes: an address of it or a local route
 * (AnyIP), as the stack decides when the inner packet arrives.
 */
static bool xlbr_dst_local(struct net *net, u8 family,
			   const union xlbr_addr *a)
{
	struct rt6_info *rt;
	bool local;

	if (family == AF_INET)
		return inet_addr_type(net, a->a4) == RTN_LOCAL;
	rt = rt6_lookup(net, &a->a6, NULL, 0, NULL, 0);
	if (!rt)
		return false;
	local = rt->rt6i_flags & RTF_LOCAL;
	ip6_rt_put(rt);
	return local;
}

/* Forward, or deliver because the list ends or the next hop is us. */
static enum xlbr_stat xlbr_next_hop(struct net *net, const struct xlbr_pkt *p)
{
	const union xlbr_addr *next;
	unsigned int i;

	if (p->index + 1 >= p->count)
		return XLBR_DELIVER_LAST_HOP;
	next = &p->hops[p->index + 1];
	for (i = 0; i <= p->index; i++)
		if (xlbr_addr_eq(p->family, next, &p->hops[i]))
			return XLBR_DELIVER_HOP_LOCAL;
	if (xlbr_addr_local(net, p->family, next))
		return XLBR_DELIVER_HOP_LOCAL;
	return XLBR_FORWARDED;
}

static enum xlbr_stat xlbr_decide(struct net *net, struct sk_buff *skb,
				  const struct xlbr_pkt *p)
{
	int dif = skb->dev->ifindex;
	int sdif = p->family == AF_INET ? inet_sdif(skb) : inet6_sdif(skb);

	if (p->frag)
		return XLBR_DELIVER_FRAGMENT;
	if (!p->tcp)
		return XLBR_DELIVER_NOT_TCP;
	if (!p->icmp && p->th.syn && !p->th.ack)
		return XLBR_DELIVER_SYN;
	if (xlbr_owned(net, skb, p, dif, sdif))
		return XLBR_DELIVER_SOCKET;
	if (xlbr_syncookie(net, p, dif, sdif))
		return XLBR_DELIVER_SYNCOOKIE;
	return xlbr_next_hop(net, p);
}

/* --- local delivery -------------------------------------------------------- */

/*
 * Strip the outer headers and hand the inner packet to the stack as if the
 * interface had received it.  On Ethernet (and loopback) the link header
 * the packet came with is put back in front of the inner packet, so taps
 * and the receive path see an ordinary frame.
 */
static void xlbr_deliver(struct xlbr_net *xn, struct sk_buff *skb,
			 const struct xlbr_pkt *p, enum xlbr_stat why)
{
	__be16 proto = p->inner_family == AF_INET ? htons(ETH_P_IP) :
						    htons(ETH_P_IPV6);
	struct net_device *dev = skb->dev;
	struct ethhdr eth, *eh;
	bool l2;

	l2 = (dev->type == ARPHRD_ETHER || dev->type == ARPHRD_LOOPBACK) &&
	     skb_mac_header_was_set(skb) && skb->mac_len == ETH_HLEN;
	if (l2)
		memcpy(&eth, skb_mac_header(skb), ETH_HLEN);
	if (iptunnel_pull_header(skb, p->inner_off, proto, false))
		goto drop;
	skb_reset_network_header(skb);
	if (l2) {
		if (skb_cow_head(skb, ETH_HLEN))
			goto drop;
		eh = skb_push(skb, ETH_HLEN);
		memcpy(eh, &eth, ETH_HLEN - sizeof(eth.h_proto));
		eh->h_proto = proto;
		skb->protocol = eth_type_trans(skb, dev);
	} else {
		skb_reset_mac_header(skb);
		skb->mac_len = 0;
	}
	if (netif_rx(skb) == NET_RX_DROP) {
		xlbr_count(xn, XLBR_DELIVER_ERROR);
		return;
	}
	xlbr_count(xn, why);
	return;
drop:
	xlbr_count(xn, XLBR_DELIVER_ERROR);
	kfree_skb(skb);
}

/* --- forwarding ------------------------------------------------------------ */

/* The hop list's index byte, and the UDP checksum if there is one. */
static void xlbr_advance(struct sk_buff *skb, struct udphdr *uh,
			 const struct xlbr_pkt *p, bool csum)
{
	u8 *b = skb_transport_header(skb) + (p->index_off & ~1u);
	__be16 old = *(__be16 *)b, new;

	b[p->index_off & 1] = p->index + 1;
	new = *(__be16 *)b;
	if (csum)
		inet_proto_csum_replace2(&uh->check, skb, old, new, false);
}

/* Rewrite an IPv4 outer header toward the next hop; its route, or an error. */
static struct dst_entry *xlbr_rewrite4(struct net *net, struct sk_buff *skb,
				       const struct xlbr_pkt *p)
{
	__be32 next = p->hops[p->index + 1].a4;
	struct iphdr *iph = ip_hdr(skb);
	struct udphdr *uh = udp_hdr(skb);
	struct flowi4 fl4 = {
		.daddr = next,
		.flowi4_proto = IPPROTO_UDP,
		.flowi4_tos = RT_TOS(iph->tos),
		.flowi4_mark = skb->mark,
	};
	bool csum = uh->check || skb->ip_summed == CHECKSUM_PARTIAL;
	struct rtable *rt;

	if (iph->ttl <= 1)
		return ERR_PTR(-ETIMEDOUT);
	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return ERR_CAST(rt);
	if (rt->rt_type != RTN_UNICAST) {
		ip_rt_put(rt);
		return ERR_PTR(-EHOSTUNREACH);
	}
	/* IPv4 GUE may go without a UDP checksum (xlb sends none) */
	if (csum) {
		inet_proto_csum_replace4(&uh->check, skb, iph->saddr,
					 fl4.saddr, true);
		inet_proto_csum_replace4(&uh->check, skb, iph->daddr, next,
					 true);
	}
	xlbr_advance(skb, uh, p, csum);
	if (csum && !uh->check && skb->ip_summed != CHECKSUM_PARTIAL)
		uh->check = CSUM_MANGLED_0;
	iph->saddr = fl4.saddr;
	iph->daddr = next;
	iph->ttl--;
	ip_send_check(iph);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	return &rt->dst;
}

static struct dst_entry *xlbr_rewrite6(struct net *net, struct sk_buff *skb,
				       const struct xlbr_pkt *p)
{
	const struct in6_addr *next = &p->hops[p->index + 1].a6;
	struct ipv6hdr *ip6h = ipv6_hdr(skb);
	struct udphdr *uh = udp_hdr(skb);
	struct flowi6 fl6 = {
		.daddr = *next,
		.flowi6_proto = IPPROTO_UDP,
		.flowlabel = ip6_flowinfo(ip6h),
		.flowi6_mark = skb->mark,
	};
	struct dst_entry *dst;

	if (ip6h->hop_limit <= 1)
		return ERR_PTR(-ETIMEDOUT);
	dst = ip6_dst_lookup_flow(net, NULL, &fl6, NULL);
	if (IS_ERR(dst))
		return dst;
	/* IPv6 UDP always carries a checksum */
	inet_proto_csum_replace16(&uh->check, skb, ip6h->saddr.s6_addr32,
				  fl6.saddr.s6_addr32, true);
	inet_proto_csum_replace16(&uh->check, skb, ip6h->daddr.s6_addr32,
				  next->s6_addr32, true);
	xlbr_advance(skb, uh, p, true);
	if (!uh->check && skb->ip_summed != CHECKSUM_PARTIAL)
		uh->check = CSUM_MANGLED_0;
	ip6h->saddr = fl6.saddr;
	ip6h->daddr = *next;
	ip6h->hop_limit--;
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	return dst;
}

/*
 * Send the datagram on to hops[index + 1], rewritten in place: the outer
 * addresses, TTL or hop limit, the hop index and the checksums.
 */
static void xlbr_forward(struct net *net, struct xlbr_net *xn,
			 struct sk_buff *skb, const struct xlbr_pkt *p)
{
	unsigned int nhlen = skb_transport_offset(skb) - skb_network_offset(skb);
	struct dst_entry *dst;
	int err;

	/*
	 * xlb sends neither IPv4 options nor IPv6 extension headers.  Others
	 * (a source route, a record of the route, a router alert) describe
	 * the path to this host, not to the next hop: never send them on.
	 */
	if (nhlen != (p->family == AF_INET ? sizeof(struct iphdr) :
					     sizeof(struct ipv6hdr))) {
		xlbr_count(xn, XLBR_FORWARD_OPTIONS);
		kfree_skb(skb);
		return;
	}
	/* the outer IP header was pulled; put it back in front */
	skb_push(skb, nhlen);
	/* through the 16-bit word that holds the hop index */
	if (skb_ensure_writable(skb, skb_transport_offset(skb) +
				(p->index_off | 1) + 1))
		goto drop;
	skb_forward_csum(skb);
	skb_orphan(skb);
	if (p->family == AF_INET)
		dst = xlbr_rewrite4(net, skb, p);
	else
		dst = xlbr_rewrite6(net, skb, p);
	if (IS_ERR(dst))
		goto drop;
	skb_scrub_packet(skb, false);
	skb_dst_set(skb, dst);
	if (p->family == AF_INET)
		err = ip_local_out(net, NULL, skb);
	else
		err = ip6_local_out(net, NULL, skb);
	err = net_xmit_eval(err);
	xlbr_count(xn, err ? XLBR_FORWARD_ERROR : XLBR_FORWARDED);
	return;
drop:
	xlbr_count(xn, XLBR_FORWARD_ERROR);
	kfree_skb(skb);
}

/* --- receive hook ---------------------------------------------------------- */

static bool xlbr_prefix_match(const struct xlbr_prefix *pf, u8 family,
			      const union xlbr_addr *a)
{
	if (pf->family != family)
		return false;
	if (family == AF_INET)
		return !((a->a4 ^ pf->addr.a4) & inet_make_mask(pf->len));
	return ipv6_prefix_equal(&a->a6, &pf->addr.a6, pf->len);
}

/* Is the outer source in the namespace's allowlist? */
static bool xlbr_allowed(struct xlbr_net *xn, u8 family,
			 const union xlbr_addr *src)
{
	const struct xlbr_allow *al;
	unsigned int i;
	bool ok = false;

	rcu_read_lock();
	al = rcu_dereference(xn->allow);
	for (i = 0; al && i < al->n && !ok; i++)
		ok = xlbr_prefix_match(&al->p[i], family, src);
	rcu_read_unlock();
	return ok;
}

/*
 * Why the datagram must go before we look inside, or XLBR_RECEIVED: a
 * GSO packet (the UDP layer splits those of UDP and those without the
 * UDP-tunnel mark; a TCP aggregate under a tunnel's UDP header is never
 * xlb's),
 * a link or IP broadcast or multicast (the wildcard tunnel sockets get
 * those too), a source outside the allowlist.
 */
static enum xlbr_stat xlbr_screen(struct xlbr_net *xn, struct sk_buff *skb)
{
	union xlbr_addr src;
	struct rtable *rt;
	u8 family;

	if (skb_is_gso(skb))
		return XLBR_AGGREGATE;
	if (skb->pkt_type != PACKET_HOST)
		return XLBR_NOT_TO_HOST;
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *iph = ip_hdr(skb);

		rt = skb_rtable(skb);
		if (ipv4_is_multicast(iph->daddr) ||
		    ipv4_is_lbcast(iph->daddr) ||
		    (rt && (rt->rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST))))
			return XLBR_NOT_TO_HOST;
		family = AF_INET;
		src.a4 = iph->saddr;
	} else {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		if (ipv6_addr_is_multicast(&ip6h->daddr))
			return XLBR_NOT_TO_HOST;
		family = AF_INET6;
		src.a6 = ip6h->saddr;
	}
	if (!xlbr_allowed(xn, family, &src))
		return XLBR_SOURCE_DENIED;
	return XLBR_RECEIVED;
}

/*
 * Why a well-formed packet must go, or XLBR_RECEIVED: the hop it is
 * addressed to is not this host, the inner packet is not for this host
 * (delivering it would route it on), or it is a tunnel packet itself.
 */
static enum xlbr_stat xlbr_check(struct net *net, const struct xlbr_pkt *p)
{
	if (!xlbr_addr_local(net, p->family, &p->hops[p->index]))
		return XLBR_HOP_NOT_LOCAL;
	if (!xlbr_dst_local(net, p->inner_family, &p->inner_dst))
		return XLBR_INNER_NOT_LOCAL;
	if (p->nested)
		return XLBR_NESTED;
	return XLBR_RECEIVED;
}

/* encap_rcv of the tunnel sockets: 0, the skb is always consumed. */
static int xlbr_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct net *net = sock_net(sk);
	struct xlbr_net *xn = net_generic(net, xlbr_net_id);
	enum xlbr_stat verdict;
	struct xlbr_pkt p;

	xlbr_count(xn, XLBR_RECEIVED);
	verdict = xlbr_screen(xn, skb);
	if (verdict == XLBR_RECEIVED)
		verdict = xlbr_parse(skb, &p) ? XLBR_MALFORMED :
						xlbr_check(net, &p);
	if (verdict != XLBR_RECEIVED) {
		xlbr_count(xn, verdict);
		kfree_skb(skb);
		return 0;
	}
	verdict = xlbr_decide(net, skb, &p);
	if (verdict == XLBR_FORWARDED)
		xlbr_forward(net, xn, skb, &p);
	else
		xlbr_deliver(xn, skb, &p, verdict);
	return 0;
}

/* --- enabling, per namespace ----------------------------------------------- */

static int xlbr_sock_open(struct net *net, u8 family, struct socket **sockp)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = xlbr_rcv,
	};
	struct udp_port_cfg ucfg = {
		.family = family,
		.local_udp_port = htons(port),
		.ipv6_v6only = 1,
		.use_udp6_rx_checksums = 1,
	};
	int err;

	err = udp_sock_create(net, &ucfg, sockp);
	if (err)
		return err;
	setup_udp_tunnel_sock(net, *sockp, &tcfg);
	return 0;
}

static int xlbr_enable(struct net *net, struct xlbr_net *xn)
{
	struct socket *s4, *s6 = NULL;
	int err;

	if (xn->sock4)
		return 0;
	err = xlbr_sock_open(net, AF_INET, &s4);
	if (err)
		return err;
	/* IPv6 may be disabled in this namespace or on the command line */
	err = xlbr_sock_open(net, AF_INET6, &s6);
	if (err && err != -EAFNOSUPPORT && err != -EPFNOSUPPORT) {
		udp_tunnel_sock_release(s4);
		return err;
	}
	WRITE_ONCE(xn->sock6, err ? NULL : s6);
	WRITE_ONCE(xn->sock4, s4);
	return 0;
}

static void xlbr_disable(struct xlbr_net *xn)
{
	if (xn->sock6)
		udp_tunnel_sock_release(xn->sock6);
	if (xn->sock4)
		udp_tunnel_sock_release(xn->sock4);
	WRITE_ONCE(xn->sock6, NULL);
	WRITE_ONCE(xn->sock4, NULL);
}

/* --- /proc/net/xlb_redirect ------------------------------------------------ */

static int xlbr_proc_show(struct seq_file *seq, void *v)
{
	struct xlbr_net *xn = net_generic(seq_file_single_net(seq),
					  xlbr_net_id);
	u64 sum[XLBR_NSTATS] = {}, delivered = 0;
	const struct xlbr_allow *al;
	int cpu, i;

	for_each_possible_cpu(cpu) {
		const struct xlbr_stats *s = per_cpu_ptr(xn->stats, cpu);

		for (i = 0; i < XLBR_NSTATS; i++)
			sum[i] += READ_ONCE(s->cnt[i]);
	}
	for (i = XLBR_DELIVER_NOT_TCP; i <= XLBR_DELIVER_HOP_LOCAL; i++)
		delivered += sum[i];
	seq_printf(seq, "enabled %d\n", READ_ONCE(xn->sock4) ? 1 : 0);
	seq_printf(seq, "port %u\n", port);
	seq_printf(seq, "delivered %llu\n", delivered);
	for (i = 0; i < XLBR_NSTATS; i++)
		seq_printf(seq, "%s %llu\n", xlbr_stat_names[i], sum[i]);
	rcu_read_lock();
	al = rcu_dereference(xn->allow);
	for (i = 0; al && i < al->n; i++) {
		if (al->p[i].family == AF_INET)
			seq_printf(seq, "allow %pI4/%u\n", &al->p[i].addr.a4,
				   al->p[i].len);
		else
			seq_printf(seq, "allow %pI6c/%u\n", &al->p[i].addr.a6,
				   al->p[i].len);
	}
	rcu_read_unlock();
	return 0;
}

/* "a.b.c.d[/len]" or an IPv6 address "[/len]": NULL, or what is wrong. */
static const char *xlbr_parse_prefix(const char *w, struct xlbr_prefix *pf)
{
	union xlbr_addr host;
	const char *end;
	unsigned int max;

	memset(pf, 0, sizeof(*pf));
	if (in4_pton(w, -1, (u8 *)&pf->addr.a4, '/', &end)) {
		pf->family = AF_INET;
		max = 32;
	} else if (in6_pton(w, -1, pf->addr.a6.s6_addr, '/', &end)) {
		pf->family = AF_INET6;
		max = 128;
	} else {
		return "not an IPv4 or IPv6 address or prefix";
	}
	if (!*end)
		pf->len = max;
	else if (*end != '/' || kstrtou8(end + 1, 10, &pf->len) ||
		 pf->len > max)
		return "bad prefix length";
	if (pf->family == AF_INET) {
		host.a4 = pf->addr.a4 & ~inet_make_mask(pf->len);
		if (host.a4)
			return "address bits set beyond the prefix length";
	} else {
		ipv6_addr_prefix(&host.a6, &pf->addr.a6, pf->len);
		if (!ipv6_addr_equal(&host.a6, &pf->addr.a6))
			return "address bits set beyond the prefix length";
	}
	return NULL;
}

static int xlbr_prefix_find(const struct xlbr_allow *al,
			    const struct xlbr_prefix *pf)
{
	unsigned int i;

	for (i = 0; i < al->n; i++)
		if (al->p[i].family == pf->family && al->p[i].len == pf->len &&
		    !memcmp(&al->p[i].addr, &pf->addr, sizeof(pf->addr)))
			return i;
	return -1;
}

/*
 * One line of a write, applied to the copy of the allowlist al and the
 * state wanted at the end (*enable: -1 unchanged, 0 off, 1 on): NULL, or
 * what is wrong with it.
 */
static const char *xlbr_ctl_line(char *line, struct xlbr_allow *al,
				 int *enable)
{
	char *cmd = strsep(&line, " \t"), *w;
	struct xlbr_prefix pf;
	const char *why;
	int i, words = 0;

	if (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) {
		if (line && *skip_spaces(line))
			return "enable and disable take no argument";
		*enable = cmd[0] == 'e';
		return NULL;
	}
	if (strcmp(cmd, "allow") && strcmp(cmd, "disallow"))
		return "unknown command (enable, disable, allow, disallow)";
	while ((w = strsep(&line, " \t"))) {
		if (!*w)
			continue;
		words++;
		if (cmd[0] == 'd' && !strcmp(w, "all")) {
			al->n = 0;
			continue;
		}
		why = xlbr_parse_prefix(w, &pf);
		if (why)
			return why;
		i = xlbr_prefix_find(al, &pf);
		if (cmd[0] == 'a' && i < 0) {
			if (al->n == XLBR_ALLOW_MAX)
				return "more than 64 prefixes";
			al->p[al->n++] = pf;
		} else if (cmd[0] == 'd') {
			if (i < 0)
				return "prefix not in the allowlist";
			al->p[i] = al->p[--al->n];
		}
	}
	return words ? NULL : "no prefix given";
}

/*
 * A write holds one command a line; either every line is good and all
 * take effect, or nothing changes (-EINVAL, and the kernel log names the
 * line and what is wrong with it).
 *
 * Only an opener with CAP_NET_ADMIN in the initial user namespace may
 * write: the module acts on packets of the whole host, so root of a user
 * namespace must not switch it on.  The opener, not the writer, because a
 * privileged program can be made to write to a descriptor it was handed.
 */
static int xlbr_proc_write(struct file *file, char *buf, size_t size)
{
	struct net *net = seq_file_single_net(file->private_data);
	struct xlbr_net *xn = net_generic(net, xlbr_net_id);
	struct xlbr_allow *cur, *next;
	unsigned int lineno = 0, lines = 0;
	int enable = -1, err = 0;
	const char *why;
	char *line;

	if (!file_ns_capable(file, &init_user_ns, CAP_NET_ADMIN))
		return -EPERM;
	next = kzalloc(sizeof(*next), GFP_KERNEL);
	if (!next)
		return -ENOMEM;
	mutex_lock(&xn->lock);
	cur = rcu_dereference_protected(xn->allow, lockdep_is_held(&xn->lock));
	if (cur) {
		next->n = cur->n;
		memcpy(next->p, cur->p, sizeof(next->p));
	}
	while ((line = strsep(&buf, "\n"))) {
		lineno++;
		line = strim(line);
		if (!*line)
			continue;
		lines++;
		why = xlbr_ctl_line(line, next, &enable);
		if (why) {
			pr_warn_ratelimited("line %u: %s; nothing changed\n",
					    lineno, why);
			err = -EINVAL;
			goto out;
		}
	}
	if (!lines) {
		err = -EINVAL;
		goto out;
	}
	if (enable == 1) {
		err = xlbr_enable(net, xn);
		if (err)
			goto out;
	}
	if (!cur || next->n != cur->n ||
	    memcmp(next->p, cur->p, sizeof(next->p))) {
		rcu_assign_pointer(xn->allow, next);
		if (cur)
			kfree_rcu(cur, rcu);
		next = NULL;
	}
	if (enable == 0)
		xlbr_disable(xn);
out:
	mutex_unlock(&xn->lock);
	kfree(next);
	return err;
}

/* --- namespaces and module ------------------------------------------------- */

static int __net_init xlbr_net_init(struct net *net)
{
	struct xlbr_net *xn = net_generic(net, xlbr_net_id);

	mutex_init(&xn->lock);
	xn->stats = alloc_percpu(struct xlbr_stats);
	if (!xn->stats)
		return -ENOMEM;
	if (!proc_create_net_single_write("xlb_redirect", 0644, net->proc_net,
					  xlbr_proc_show, xlbr_proc_write,
					  NULL)) {
		free_percpu(xn->stats);
		return -ENOMEM;
	}
	return 0;
}

static void __net_exit xlbr_net_exit(struct net *net)
{
	struct xlbr_net *xn = net_generic(net, xlbr_net_id);

	remove_proc_entry("xlb_redirect", net->proc_net);
	mutex_lock(&xn->lock);
	xlbr_disable(xn);
	mutex_unlock(&xn->lock);
}

/* Packets that found a socket before it was unhashed are done after this. */
static void __net_exit xlbr_net_exit_batch(struct list_head *net_list)
{
	struct net *net;

	struct xlbr_net *xn;

	synchronize_net();
	list_for_each_entry(net, net_list, exit_list) {
		xn = net_generic(net, xlbr_net_id);
		free_percpu(xn->stats);
		kfree(rcu_dereference_protected(xn->allow, true));
	}
}

static struct pernet_operations xlbr_net_ops = {
	.init = xlbr_net_init,
	.exit = xlbr_net_exit,
	.exit_batch = xlbr_net_exit_batch,
	.id = &xlbr_net_id,
	.size = sizeof(struct xlbr_net),
};

static int __init xlbr_init(void)
{
	if (!port) {
		pr_err("port must not be 0\n");
		return -EINVAL;
	}
	/*
	 * A device, not a subsys, operation (as fou is): a dying namespace's
	 * tunnel sockets must close before its devices go, because the UDP
	 * layer caches an input route in them (a multicast datagram's early
	 * demux does, to any bound socket), and that route holds lo.
	 */
	return register_pernet_device(&xlbr_net_ops);
}

static void __exit xlbr_exit(void)
{
	unregister_pernet_device(&xlbr_net_ops);
}

module_init(xlbr_init);
module_exit(xlbr_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("xlb authors");
MODULE_DESCRIPTION("xlb backend: GUE decapsulation with second-chance forwarding");
