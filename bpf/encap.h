/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Encapsulation toward a backend: IP-in-IP by the outer family (IPIP, 6in4,
 * 4in6, ip6ip6) or GUE with the xlb hop list (structs.h).  The caller has
 * already grown the frame at the front by encap_overhead() bytes and moved
 * the L2 header there; these functions fill in the outer headers.
 */
#ifndef XLB_ENCAP_H
#define XLB_ENCAP_H

#include "csum.h"
#include "parsing.h"
#include "structs.h"

#define XLB_GUE_PRIV_LEN(alen)	(sizeof(struct xlb_gue_hops) + XLB_HOPS * (alen))

static __always_inline __u32 addr_len(__u8 family)
{
	return family == XLB_FAMILY_INET ? 4 : 16;
}

static __always_inline __u32 encap_overhead(const struct xlb_backend *be)
{
	__u32 ip = be->family == XLB_FAMILY_INET ? sizeof(struct iphdr) :
						     sizeof(struct ipv6hdr);

	if (be->encap != XLB_ENCAP_GUE)
		return ip;
	return ip + sizeof(struct udphdr) + sizeof(struct xlb_gue_hdr) +
	       XLB_GUE_PRIV_LEN(addr_len(be->family));
}

/*
 * The next hop's addresses into the Ethernet header at eth: dmac and smac
 * are 12 bytes from an 8-byte boundary of the entry (structs.h), stored
 * as three words, not 12 byte loads and stores (the packet needs no
 * alignment on the architectures XDP runs on).
 */
static __always_inline void write_eth_addrs(struct ethhdr *eth,
					    const struct xlb_backend *be)
{
	*(__u64 *)eth = *(const __u64 *)be->dmac;
	*(__u32 *)((__u8 *)eth + 8) = *(const __u32 *)&be->smac[2];
}

/* What the outer headers need to know. */
struct encap_args {
	const struct xlb_backend *be;
	const __be32 *src;	/* outer source, 1 or 4 words */
	const __be32 *secondary; /* hop 1 address, or NULL */
	__u32 inner_len;
	__u32 hash;
	__u16 gue_port;
	__u8 inner_family;
	__u8 tos;
	__u8 ttl;
	__u32 inner_sum;	/* one's complement sum of the inner packet */
};

static __always_inline __u8 inner_proto(__u8 inner_family)
{
	return inner_family == XLB_FAMILY_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
}

static __always_inline int write_outer_ipv4(struct cursor *c,
					    const struct encap_args *a,
					    __u32 payload, __u8 proto)
{
	struct iphdr *ip = c->pos;
	__be16 vtos = bpf_htons(0x4500 | a->tos);
	__be16 tot = bpf_htons(sizeof(*ip) + payload);
	__be16 frag = bpf_htons(XLB_IP_DF);
	__be16 ttlp = bpf_htons((__u16)a->ttl << 8 | proto);
	__be32 src = a->src[0], dst = a->be->addr[0];

	if ((void *)(ip + 1) > c->end)
		return -1;
	/*
	 * The checksum is summed from the values, not read back from the
	 * header just written: loading 16-bit words over fresh byte stores
	 * stalls store forwarding, which cost more than the rest of the
	 * header.  A 32-bit word adds as its two 16-bit halves (mod 0xffff).
	 */
	*(__be16 *)ip = vtos;
	ip->tot_len = tot;
	ip->id = 0;
	ip->frag_off = frag;
	*(__be16 *)&ip->ttl = ttlp;
	ip->saddr = src;
	ip->daddr = dst;
	ip->check = ~csum_fold64((__u64)vtos + tot + frag + ttlp + src + dst);
	c->pos = ip + 1;
	return 0;
}

static __always_inline int write_outer_ipv6(struct cursor *c,
					    const struct encap_args *a,
					    __u32 payload, __u8 proto)
{
	struct ipv6hdr *ip6 = c->pos;
	__u32 label = a->hash & 0xfffff;

	if ((void *)(ip6 + 1) > c->end)
		return -1;
	ip6->version = 6;
	ip6->priority = a->tos >> 4;
	ip6->flow_lbl[0] = (a->tos << 4) | (label >> 16);
	ip6->flow_lbl[1] = label >> 8;
	ip6->flow_lbl[2] = label;
	ip6->payload_len = bpf_htons(payload);
	ip6->nexthdr = proto;
	ip6->hop_limit = a->ttl;
	__builtin_memcpy(&ip6->saddr, a->src, 16);
	__builtin_memcpy(&ip6->daddr, a->be->addr, 16);
	c->pos = ip6 + 1;
	return 0;
}

static __always_inline int write_outer_ip(struct cursor *c,
					  const struct encap_args *a,
					  __u32 payload, __u8 proto)
{
	if (a->be->family == XLB_FAMILY_INET)
		return write_outer_ipv4(c, a, payload, proto);
	return write_outer_ipv6(c, a, payload, proto);
}

/* UDP + GUE header + hop list.  Returns the sum of those bytes. */
static __always_inline int write_gue(struct cursor *c,
				     const struct encap_args *a,
				     __u32 udp_len, __u64 *sum)
{
	__u32 alen = addr_len(a->be->family);
	struct udphdr *udp = c->pos;
	struct xlb_gue_hdr *gue = (void *)(udp + 1);
	struct xlb_gue_hops *hops = (void *)(gue + 1);
	__be32 *addrs = (void *)(hops + 1);

	if ((void *)(addrs + 8) > c->end)	/* room for two IPv6 hops */
		return -1;
	/* source port from the flow hash: RSS entropy on the backend */
	udp->source = bpf_htons(0xc000 | (a->hash & 0x3fff));
	udp->dest = bpf_htons(a->gue_port);
	udp->len = bpf_htons(udp_len);
	udp->check = 0;
	gue->hlen_cver = XLB_GUE_PRIV_LEN(alen) / 4;
	gue->proto = inner_proto(a->inner_family);
	gue->flags = bpf_htons(XLB_GUE_FLAGS);
	hops->magic = XLB_GUE_HOPS_MAGIC;
	hops->count = a->secondary ? 2 : 1;
	hops->index = 0;
	hops->family = a->be->family;
	if (alen == 4) {
		addrs[0] = a->be->addr[0];
		addrs[1] = a->secondary ? a->secondary[0] : 0;
		*sum = csum_words(udp, (8 + 4 + 4 + 8) / 2);
		c->pos = addrs + 2;
		return 0;
	}
	__builtin_memcpy(addrs, a->be->addr, 16);
	if (a->secondary)
		__builtin_memcpy(addrs + 4, a->secondary, 16);
	else
		__builtin_memset(addrs + 4, 0, 16);
	*sum = csum_words(udp, (8 + 4 + 4 + 32) / 2);
	c->pos = addrs + 8;
	return 0;
}

/*
 * Fill the outer headers at c (the frame already has room).  IPv4 GUE
 * carries UDP checksum 0 (RFC 768); IPv6 GUE gets a full checksum, built
 * from the inner packet's sum the caller worked out.
 */
static __always_inline int write_encap(struct cursor *c,
				       const struct encap_args *a)
{
	__u32 alen = addr_len(a->be->family);
	__u32 gue_len, udp_len;
	struct udphdr *udp;
	__u64 sum;

	if (a->be->encap != XLB_ENCAP_GUE)
		return write_outer_ip(c, a, a->inner_len,
				      inner_proto(a->inner_family));
	gue_len = sizeof(struct xlb_gue_hdr) + XLB_GUE_PRIV_LEN(alen);
	udp_len = sizeof(struct udphdr) + gue_len + a->inner_len;
	if (write_outer_ip(c, a, udp_len, IPPROTO_UDP))
		return -1;
	udp = c->pos;
	if (write_gue(c, a, udp_len, &sum))
		return -1;
	if (a->be->family == XLB_FAMILY_INET6) {
		sum += csum_pseudo(a->src, a->be->addr, 6, udp_len, IPPROTO_UDP);
		sum += a->inner_sum;
		udp->check = ~csum_fold64(sum);
		if (!udp->check)
			udp->check = 0xffff;
	}
	return 0;
}

#endif /* XLB_ENCAP_H */
