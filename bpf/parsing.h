/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Packet parsing for the data path: one small function per header, each
 * advancing a cursor and checking bounds against the end of the frame.
 * They return 0, or -1 when the header is cut short or inconsistent.
 */
#ifndef XLB_PARSING_H
#define XLB_PARSING_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/icmpv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "flow_hash.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD	0x88A8
#endif
#define XLB_IP_MF	0x2000
#define XLB_IP_DF	0x4000
#define XLB_IP_OFFSET	0x1fff
#define XLB_IPV6_EXT_MAX	4
#define XLB_TCP_FIN	0x01
#define XLB_TCP_SYN	0x02
#define XLB_TCP_RST	0x04
#define XLB_TCP_ACK	0x10

struct cursor {
	void *pos;
	void *end;
};

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct frag6_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;	/* offset (13 bits) | res (2) | M (1) */
	__be32 id;
};

/* What the parsers learn about a packet. */
struct pkt {
	struct xlb_flow flow;	/* as received: client -> VIP */
	__u32 l3_off;		/* from the start of the frame */
	__u32 l3_len;		/* IP total length (header + payload) */
	__u32 l4_off;
	__u8 tos;		/* IPv4 TOS / IPv6 traffic class */
	__u8 frag;		/* a fragment */
	__u8 frag_later;	/* a fragment other than the first: no ports */
	__u8 df;		/* IPv4 DF set (IPv6: always, nobody fragments) */
};

static __always_inline int parse_eth(struct cursor *c, struct ethhdr **eth,
				     __be16 *proto)
{
	struct ethhdr *e = c->pos;
	struct vlan_hdr *v;

	if ((void *)(e + 1) > c->end)
		return -1;
	*eth = e;
	*proto = e->h_proto;
	c->pos = e + 1;
	if (*proto == bpf_htons(ETH_P_8021Q) ||
	    *proto == bpf_htons(ETH_P_8021AD)) {
		v = c->pos;
		if ((void *)(v + 1) > c->end)
			return -1;
		*proto = v->proto;
		c->pos = v + 1;
	}
	return 0;
}

static __always_inline int parse_ipv4(struct cursor *c, void *data,
				      struct pkt *p)
{
	struct iphdr *ip = c->pos;
	__u32 hlen, tot;
	__u16 frag;

	if ((void *)(ip + 1) > c->end)
		return -1;
	hlen = ip->ihl * 4;
	tot = bpf_ntohs(ip->tot_len);
	/* kernels before 6.3 lose a value's bounds in a byte swap */
	barrier_var(tot);
	tot &= 0xffff;
	if (ip->version != 4 || hlen < sizeof(*ip) || tot < hlen)
		return -1;
	if (c->pos + hlen > c->end || c->pos + tot > c->end)
		return -1;
	frag = bpf_ntohs(ip->frag_off);
	p->l3_off = c->pos - data;
	p->l3_len = tot;
	p->tos = ip->tos;
	p->df = !!(frag & XLB_IP_DF);
	p->frag = !!(frag & (XLB_IP_MF | XLB_IP_OFFSET));
	p->frag_later = !!(frag & XLB_IP_OFFSET);
	p->flow.family = XLB_FAMILY_INET;
	p->flow.proto = ip->protocol;
	p->flow.src.v4 = ip->saddr;
	p->flow.dst.v4 = ip->daddr;
	c->pos += hlen;
	p->l4_off = c->pos - data;
	return 0;
}

/* Skip one IPv6 extension header; returns the next header or -1. */
static __always_inline int skip_ipv6_ext(struct cursor *c, __u8 nexthdr,
					 struct pkt *p)
{
	struct ipv6_opt_hdr *o = c->pos;
	struct frag6_hdr *f = c->pos;

	if (nexthdr == IPPROTO_FRAGMENT) {
		if ((void *)(f + 1) > c->end)
			return -1;
		p->frag = 1;
		p->frag_later = !!(f->frag_off & bpf_htons(0xfff8));
		c->pos = f + 1;
		return f->nexthdr;
	}
	if ((void *)(o + 1) > c->end)
		return -1;
	c->pos += (o->hdrlen + 1) * 8;
	if (c->pos > c->end)
		return -1;
	return o->nexthdr;
}

static __always_inline int is_ipv6_ext(__u8 nexthdr)
{
	return nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	       nexthdr == IPPROTO_DSTOPTS || nexthdr == IPPROTO_FRAGMENT;
}

static __always_inline int parse_ipv6(struct cursor *c, void *data,
				      struct pkt *p)
{
	struct ipv6hdr *ip6 = c->pos;
	__u32 plen;
	int nh, i;

	if ((void *)(ip6 + 1) > c->end)
		return -1;
	if (ip6->version != 6)
		return -1;
	p->l3_off = c->pos - data;
	plen = bpf_ntohs(ip6->payload_len);
	barrier_var(plen);	/* bounds lost in the byte swap, as above */
	plen &= 0xffff;
	p->l3_len = sizeof(*ip6) + plen;
	if (c->pos + sizeof(*ip6) + plen > c->end)
		return -1;
	p->tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	p->df = 1;
	p->flow.family = XLB_FAMILY_INET6;
	__builtin_memcpy(p->flow.src.v6, &ip6->saddr, 16);
	__builtin_memcpy(p->flow.dst.v6, &ip6->daddr, 16);
	c->pos = ip6 + 1;
	nh = ip6->nexthdr;
#pragma unroll
	for (i = 0; i < XLB_IPV6_EXT_MAX; i++) {
		if (!is_ipv6_ext(nh))
			break;
		nh = skip_ipv6_ext(c, nh, p);
		if (nh < 0)
			return -1;
		/* extension headers must end inside the IP packet */
		if ((__u32)(c->pos - data) > p->l3_off + p->l3_len)
			return -1;
	}
	if (is_ipv6_ext(nh))
		return -1;	/* more extension headers than we walk */
	p->flow.proto = nh;
	p->l4_off = c->pos - data;
	return 0;
}

/*
 * Ports of TCP or UDP; the full fixed header must be there, inside the IP
 * packet (not merely inside the frame).
 */
static __always_inline int parse_ports(struct cursor *c, struct pkt *p)
{
	struct tcphdr *t = c->pos;
	struct udphdr *u = c->pos;
	__u32 hdr = p->flow.proto == IPPROTO_TCP ? sizeof(*t) : sizeof(*u);

	if (p->l4_off + hdr > p->l3_off + p->l3_len)
		return -1;
	if (p->flow.proto == IPPROTO_TCP) {
		if ((void *)(t + 1) > c->end || t->doff < 5)
			return -1;
		p->flow.sport = t->source;
		p->flow.dport = t->dest;
		return 0;
	}
	if ((void *)(u + 1) > c->end)
		return -1;
	p->flow.sport = u->source;
	p->flow.dport = u->dest;
	return 0;
}

#endif /* XLB_PARSING_H */
