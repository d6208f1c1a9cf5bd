/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ICMP in the data path:
 *  - errors about a VIP flow (destination unreachable, fragmentation
 *    needed, ICMPv6 packet too big / unreachable) carry the packet a backend
 *    sent (VIP -> client); steer them by the quoted flow turned around;
 *  - the answer to a packet too big to encapsulate: ICMP fragmentation
 *    needed / ICMPv6 packet too big with the MTU the client must use.
 */
#ifndef XLB_ICMP_H
#define XLB_ICMP_H

#include "csum.h"
#include "parsing.h"

/* <linux/icmp.h> drags in libc headers; ICMPv4 needs only this much. */
#define ICMP_DEST_UNREACH	3
#define ICMP_FRAG_NEEDED	4

struct icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	union {
		struct {
			__be16 id;
			__be16 sequence;
		} echo;
		struct {
			__be16 __unused;
			__be16 mtu;
		} frag;
	} un;
};

/* Bytes of the offending packet quoted in our too-big answer. */
#define XLB_ICMP_QUOTE	128

/* Is this an ICMP error type whose quoted packet we steer? */
static __always_inline int icmp_steerable(const struct pkt *p, __u8 type,
					  __u8 code)
{
	if (p->flow.family == XLB_FAMILY_INET)
		return type == ICMP_DEST_UNREACH;
	return type == ICMPV6_DEST_UNREACH || type == ICMPV6_PKT_TOOBIG;
}

/*
 * Parse the quoted packet after an ICMP error header and turn its flow
 * around: the quote is VIP -> client, the flow we steer is client -> VIP.
 * Returns 0 and fills q->flow, or -1 if the quote is cut short.
 */
static __always_inline int parse_icmp_quote(struct cursor *c, void *data,
					    const struct pkt *outer,
					    struct xlb_flow *q)
{
	struct icmphdr *ih = c->pos;
	struct xlb_flow f;

	if ((void *)(ih + 1) > c->end)
		return -1;
	c->pos = ih + 1;	/* ICMPv4 and ICMPv6 headers are both 8 bytes */
	if (outer->flow.family == XLB_FAMILY_INET) {
		struct iphdr *ip = c->pos;
		__u32 hlen;

		if ((void *)(ip + 1) > c->end)
			return -1;
		hlen = ip->ihl * 4;
		if (ip->version != 4 || hlen < sizeof(*ip))
			return -1;
		if (c->pos + hlen > c->end)
			return -1;
		if (ip->frag_off & bpf_htons(XLB_IP_OFFSET))
			return -1;	/* no ports in the quote */
		q->family = XLB_FAMILY_INET;
		q->proto = ip->protocol;
		q->src.v4 = ip->saddr;
		q->dst.v4 = ip->daddr;
		c->pos += hlen;
	} else {
		struct ipv6hdr *ip6 = c->pos;

		if ((void *)(ip6 + 1) > c->end)
			return -1;
		q->family = XLB_FAMILY_INET6;
		q->proto = ip6->nexthdr;
		__builtin_memcpy(q->src.v6, &ip6->saddr, 16);
		__builtin_memcpy(q->dst.v6, &ip6->daddr, 16);
		c->pos = ip6 + 1;
	}
	if (q->proto != IPPROTO_TCP && q->proto != IPPROTO_UDP)
		return -1;
	{
		__be16 *ports = c->pos;

		if ((void *)(ports + 2) > c->end)
			return -1;
		q->sport = ports[0];
		q->dport = ports[1];
	}
	/* turn around: client -> VIP */
	f = *q;
	q->src = f.dst;
	q->dst = f.src;
	q->sport = f.dport;
	q->dport = f.sport;
	return 0;
}

/*
 * Rewrite the frame in place into the ICMP answer: grow the front by the
 * new IP + ICMP headers (so the offending packet becomes the quote),
 * write Ethernet back to the sender, our IP header (from the VIP to the
 * client), the ICMP header, and cut the quote to XLB_ICMP_QUOTE bytes.
 * The caller has checked that the packet is longer than the quote.  A
 * global function: checked once by the verifier, and its locals live in
 * a stack frame of their own.
 */
__noinline int answer_too_big(struct xdp_md *ctx, const struct pkt *p,
			      __u32 l2_len_in, __u32 mtu, __u32 ttl)
{
	__u32 ip_len, hdrs, total, l2_len;
	unsigned char l2[18], mac[6];
	void *data, *end;
	struct cursor c;
	__u64 sum;

	if (!p)
		return -1;
	barrier_var(l2_len_in);
	l2_len_in &= 0x1f;	/* 14 or 18 */
	ip_len = p->flow.family == XLB_FAMILY_INET ? sizeof(struct iphdr) :
						     sizeof(struct ipv6hdr);
	hdrs = ip_len + sizeof(struct icmphdr);
	total = l2_len_in + hdrs + XLB_ICMP_QUOTE;

	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 18 > end)
		return -1;
	__builtin_memcpy(l2, data, 18);
	if (bpf_xdp_adjust_head(ctx, -(int)hdrs))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (bpf_xdp_adjust_tail(ctx, (int)total - (int)(end - data)))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 18 > end)
		return -1;
	/* Ethernet: back where it came from, same VLAN */
	__builtin_memcpy(mac, l2, 6);
	__builtin_memcpy(l2, l2 + 6, 6);
	__builtin_memcpy(l2 + 6, mac, 6);
	__builtin_memcpy(data, l2, 18);
	/* a bound the verifier keeps through stack spills (6.1 needs it) */
	l2_len = l2_len_in;
	barrier_var(l2_len);
	l2_len &= 0x1f;
	c.pos = data + l2_len;
	/* one opaque base: every header pointer below derives from it by a
	 * constant, so the verifier's bounds check covers them all */
	barrier_var(c.pos);
	c.end = end;
	if (p->flow.family == XLB_FAMILY_INET) {
		struct iphdr *ip = c.pos;
		struct icmphdr *ic = (void *)(ip + 1);
		void *quote = ic + 1;

		if (quote + XLB_ICMP_QUOTE > end)
			return -1;
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = 0;
		ip->tot_len = bpf_htons(hdrs + XLB_ICMP_QUOTE);
		ip->id = 0;
		ip->frag_off = 0;
		ip->ttl = ttl;
		ip->protocol = IPPROTO_ICMP;
		ip->check = 0;
		ip->saddr = p->flow.dst.v4;
		ip->daddr = p->flow.src.v4;
		ip->check = ~csum_fold64(csum_words(ip, sizeof(*ip) / 2));
		ic->type = ICMP_DEST_UNREACH;
		ic->code = ICMP_FRAG_NEEDED;
		ic->checksum = 0;
		ic->un.frag.__unused = 0;
		ic->un.frag.mtu = bpf_htons(mtu);
		sum = csum_words(ic, (sizeof(*ic) + XLB_ICMP_QUOTE) / 2);
		ic->checksum = ~csum_fold64(sum);
	} else {
		struct ipv6hdr *ip6 = c.pos;
		struct icmp6hdr *ic = (void *)(ip6 + 1);
		void *quote = ic + 1;
		__u32 plen = sizeof(*ic) + XLB_ICMP_QUOTE;

		if (quote + XLB_ICMP_QUOTE > end)
			return -1;
		__builtin_memset(ip6, 0, 4);
		ip6->version = 6;
		ip6->payload_len = bpf_htons(plen);
		ip6->nexthdr = IPPROTO_ICMPV6;
		ip6->hop_limit = ttl;
		__builtin_memcpy(&ip6->saddr, p->flow.dst.v6, 16);
		__builtin_memcpy(&ip6->daddr, p->flow.src.v6, 16);
		ic->icmp6_type = ICMPV6_PKT_TOOBIG;
		ic->icmp6_code = 0;
		ic->icmp6_cksum = 0;
		ic->icmp6_mtu = bpf_htonl(mtu);
		sum = csum_words(ic, plen / 2) +
		      csum_pseudo(p->flow.dst.v6, p->flow.src.v6, 6, plen,
				  IPPROTO_ICMPV6);
		ic->icmp6_cksum = ~csum_fold64(sum);
	}
	return 0;
}

#endif /* XLB_ICMP_H */
