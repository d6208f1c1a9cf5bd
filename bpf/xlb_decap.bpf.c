// SPDX-License-Identifier: GPL-2.0
/*
 * xlb_decap: backend-side decapsulation in XDP, for hosts whose kernel has
 * no tunnel modules (ipip, sit, ip6_tunnel, fou).
 *
 * A frame whose outer header is
 *   IPv4 protocol 4 (IPIP) or 41 (6in4),
 *   IPv6 next header 4 (4in6) or 41 (ip6ip6), no outer extension headers,
 *   IPv4 or IPv6 UDP to the GUE port carrying a GUE variant 0 data message
 * loses the outer IP header (with UDP, the GUE header and all hlen covers,
 * i.e. the xlb hop list).  The Ethernet header and up to two VLAN tags stay,
 * the ethertype after them becomes the inner family's, and the inner packet
 * goes up the stack with XDP_PASS.
 *
 * Everything else passes unchanged: a backend must never lose its own
 * traffic.  A frame is a tunnel packet once its outer header says so: a
 * complete outer IP header with protocol 4 or 41, or a complete UDP header
 * to the GUE port.  A tunnel packet that is cut short or inconsistent
 * (IPv4 header checksum, total or payload length beyond the frame, outer
 * fragment, UDP length, GUE version or C bit, hlen beyond the datagram, GUE
 * proto not 4 or 41, inner IP version not the one the outer header names,
 * inner IP header cut short) passes unchanged too and is counted as
 * malformed; the stack then drops it as it would without this program.
 * Not checked: the UDP checksum (the inner transport checksum covers what is
 * delivered), the outer destination address (attach this program only where
 * tunnel packets are expected) and the hop list (xlb_redirect's business).
 *
 * Configuration: gue_port, a read-only global in host order, default
 * XLB_GUE_PORT_DEFAULT; set it through the skeleton between open and load:
 *   skel->rodata->gue_port = 6080;
 *
 * Counters: decap_stats, PERCPU_ARRAY of struct xlb_counter (packets and
 * frame bytes as received) indexed by enum xlb_decap_stat.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD	0x88A8
#endif
#define VLAN_MAX_DEPTH	2
#define IP_MF		0x2000
#define IP_OFFSET	0x1fff

char LICENSE[] SEC("license") = "GPL";

volatile const __u16 gue_port = XLB_GUE_PORT_DEFAULT;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_DECAP_STATS);
	__type(key, __u32);
	__type(value, struct xlb_counter);
} decap_stats SEC(".maps");

struct cursor {
	void *pos;
	void *end;
};

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Verdicts of the parsers below. */
enum {
	NOT_TUNNEL,
	TUNNEL,
	MALFORMED,
};

/* What the parsers learn about a tunnel packet. */
struct tunnel {
	__u32 rem;	/* bytes of the carrying datagram left at the cursor */
	__u8 proto;	/* outer protocol / next header: 4, 41 or 17 */
	__u8 inner;	/* IPPROTO_IPIP or IPPROTO_IPV6 */
	__u8 vlans;	/* tags between Ethernet and the outer IP header */
};

static __always_inline void count(enum xlb_decap_stat what, __u64 bytes)
{
	__u32 key = what;
	struct xlb_counter *c = bpf_map_lookup_elem(&decap_stats, &key);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

static __always_inline int parse_eth(struct cursor *c, __be16 *proto,
				     __u8 *vlans)
{
	struct ethhdr *eth = c->pos;
	struct vlan_hdr *vh;
	int i;

	if ((void *)(eth + 1) > c->end)
		return -1;
	c->pos = eth + 1;
	*proto = eth->h_proto;
	*vlans = 0;
#pragma unroll
	for (i = 0; i < VLAN_MAX_DEPTH; i++) {
		if (*proto != bpf_htons(ETH_P_8021Q) &&
		    *proto != bpf_htons(ETH_P_8021AD))
			break;
		vh = c->pos;
		if ((void *)(vh + 1) > c->end)
			return -1;
		*proto = vh->proto;
		c->pos = vh + 1;
		(*vlans)++;
	}
	return 0;
}

static __always_inline int is_tunnel_proto(__u8 proto)
{
	return proto == IPPROTO_IPIP || proto == IPPROTO_IPV6 ||
	       proto == IPPROTO_UDP;
}

/* A complete UDP header at pos, to the GUE port? */
static __always_inline int to_gue_port(void *pos, void *end)
{
	struct udphdr *udp = pos;

	return (void *)(udp + 1) <= end && udp->dest == bpf_htons(gue_port);
}

/* RFC 1071 over the IPv4 header (IHL words, at most 60 bytes). */
static __always_inline int ipv4_csum_ok(struct iphdr *ip, void *end)
{
	__u16 *w = (void *)ip;
	__u32 sum = 0, n = ip->ihl * 2;
	int i;

	/* the caller checked the header is there; no early exit, so the
	 * loop unrolls into constant offsets the verifier can check
	 */
#pragma unroll
	for (i = 0; i < 30; i++) {
		if (i < n && (void *)(w + i + 1) <= end)
			sum += w[i];
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static __always_inline int parse_outer_ipv4(struct cursor *c,
					    struct tunnel *t)
{
	struct iphdr *ip = c->pos;
	__u32 hlen, tot;
	__u16 frag;

	if ((void *)(ip + 1) > c->end)
		return NOT_TUNNEL;
	if (ip->version != 4 || ip->ihl < 5 || !is_tunnel_proto(ip->protocol))
		return NOT_TUNNEL;
	hlen = ip->ihl * 4;
	frag = bpf_ntohs(ip->frag_off);
	if (ip->protocol == IPPROTO_UDP &&
	    ((frag & IP_OFFSET) || !to_gue_port(c->pos + hlen, c->end)))
		return NOT_TUNNEL;
	/* a tunnel packet from here on */
	if (c->pos + hlen > c->end || !ipv4_csum_ok(ip, c->end))
		return MALFORMED;
	tot = bpf_ntohs(ip->tot_len);
	/* kernels before 6.3 lose a value's bounds in a byte swap */
	barrier_var(tot);
	tot &= 0xffff;
	if (tot < hlen || c->pos + tot > c->end)
		return MALFORMED;
	if (frag & (IP_MF | IP_OFFSET))
		return MALFORMED;
	t->proto = ip->protocol;
	t->rem = tot - hlen;
	c->pos += hlen;
	return TUNNEL;
}

static __always_inline int parse_outer_ipv6(struct cursor *c,
					    struct tunnel *t)
{
	struct ipv6hdr *ip6 = c->pos;
	__u32 plen;

	if ((void *)(ip6 + 1) > c->end)
		return NOT_TUNNEL;
	if (ip6->version != 6 || !is_tunnel_proto(ip6->nexthdr))
		return NOT_TUNNEL;
	if (ip6->nexthdr == IPPROTO_UDP && !to_gue_port(ip6 + 1, c->end))
		return NOT_TUNNEL;
	/* a tunnel packet from here on */
	plen = bpf_ntohs(ip6->payload_len);
	barrier_var(plen);	/* bounds lost in the byte swap, as above */
	plen &= 0xffff;
	if (!plen || (void *)(ip6 + 1) + plen > c->end)
		return MALFORMED;
	t->proto = ip6->nexthdr;
	t->rem = plen;
	c->pos = ip6 + 1;
	return TUNNEL;
}

/* UDP and GUE: leaves the cursor at the inner packet. */
static __always_inline int parse_gue(struct cursor *c, struct tunnel *t)
{
	struct udphdr *udp = c->pos;
	struct xlb_gue_hdr *gue = (void *)(udp + 1);
	__u32 ulen, glen;

	if ((void *)(gue + 1) > c->end)
		return MALFORMED;
	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) + sizeof(*gue) || ulen > t->rem)
		return MALFORMED;
	if (XLB_GUE_VERSION(gue->hlen_cver) != 0 || XLB_GUE_C(gue->hlen_cver))
		return MALFORMED;
	if (gue->proto != IPPROTO_IPIP && gue->proto != IPPROTO_IPV6)
		return MALFORMED;
	glen = sizeof(*gue) + XLB_GUE_HLEN(gue->hlen_cver) * 4;
	if (sizeof(*udp) + glen > ulen)
		return MALFORMED;
	c->pos = (void *)gue + glen;
	t->inner = gue->proto;
	t->rem = ulen - sizeof(*udp) - glen;
	return TUNNEL;
}

/* The inner IP header: the version the outer named, and complete. */
static __always_inline int check_inner(struct cursor *c, struct tunnel *t)
{
	__u8 *vers = c->pos;
	__u32 need;

	if ((void *)(vers + 1) > c->end)
		return MALFORMED;
	if (t->inner == IPPROTO_IPIP) {
		if (*vers >> 4 != 4)
			return MALFORMED;
		need = sizeof(struct iphdr);
	} else {
		if (*vers >> 4 != 6)
			return MALFORMED;
		need = sizeof(struct ipv6hdr);
	}
	if (need > t->rem || c->pos + need > c->end)
		return MALFORMED;
	return TUNNEL;
}

/*
 * Remove `outer` bytes after the Ethernet header and its tags.  The
 * Ethernet header is saved first and written back in front of the inner
 * packet after bpf_xdp_adjust_head(), so the frame is untouched if the
 * helper refuses.
 */
static __always_inline int strip_outer(struct xdp_md *ctx, __u32 outer,
				       __u8 vlans, __be16 inner_type)
{
	__u8 l2[ETH_HLEN + VLAN_MAX_DEPTH * sizeof(struct vlan_hdr)];
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (data + sizeof(l2) > end)
		return -1;
	__builtin_memcpy(l2, data, sizeof(l2));
	if (bpf_xdp_adjust_head(ctx, (int)outer))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + sizeof(l2) > end)
		return -2;	/* cannot happen: an inner header follows */

	switch (vlans) {
	case 0:
		__builtin_memcpy(data, l2, ETH_HLEN - 2);
		*(__be16 *)(data + ETH_HLEN - 2) = inner_type;
		break;
	case 1:
		__builtin_memcpy(data, l2, ETH_HLEN + 2);
		*(__be16 *)(data + ETH_HLEN + 2) = inner_type;
		break;
	default:
		__builtin_memcpy(data, l2, ETH_HLEN + 6);
		*(__be16 *)(data + ETH_HLEN + 6) = inner_type;
		break;
	}
	return 0;
}

SEC("xdp")
int xlb_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct cursor c = { .pos = data, .end = data_end };
	__u64 bytes = data_end - data;
	struct tunnel t = {};
	__be16 proto;
	void *l3;
	__u32 outer;
	int v = NOT_TUNNEL, err;

	if (parse_eth(&c, &proto, &t.vlans))
		goto out;
	l3 = c.pos;
	if (proto == bpf_htons(ETH_P_IP))
		v = parse_outer_ipv4(&c, &t);
	else if (proto == bpf_htons(ETH_P_IPV6))
		v = parse_outer_ipv6(&c, &t);
	if (v != TUNNEL)
		goto out;
	if (t.proto == IPPROTO_UDP)
		v = parse_gue(&c, &t);
	else
		t.inner = t.proto;
	if (v == TUNNEL)
		v = check_inner(&c, &t);
	if (v != TUNNEL)
		goto out;

	outer = c.pos - l3;
	if (outer > 512) {	/* IPv4 60 + UDP 8 + GUE 128 at most */
		v = MALFORMED;
		goto out;
	}
	err = strip_outer(ctx, outer, t.vlans,
			  t.inner == IPPROTO_IPIP ? bpf_htons(ETH_P_IP) :
						    bpf_htons(ETH_P_IPV6));
	if (err)
		v = MALFORMED;
	if (err == -2) {	/* outer header gone, Ethernet not restored */
		count(XLB_DECAP_MALFORMED, bytes);
		return XDP_DROP;
	}
out:
	count(v == TUNNEL ? XLB_DECAP_DONE : v == MALFORMED ?
	      XLB_DECAP_MALFORMED : XLB_DECAP_PASSED, bytes);
	return XDP_PASS;
}
