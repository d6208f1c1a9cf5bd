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
 * Only frames addressed to this host are taken apart.  A tunnel frame
 * whose Ethernet destination is a group address (broadcast, multicast),
 * or not host_mac when that is set, or whose outer destination is not a
 * unicast address (IPv4 0.0.0.0, 224.0.0.0/4, 255.255.255.255; IPv6 ::,
 * ff00::/8) passes unchanged, counted as not_local: one broadcast or
 * multicast frame must not make every backend on the segment act.  How
 * "local" is decided: at layer 2, by the destination MAC (unicast, and
 * the interface's own when the loader says which that is); at layer 3, by
 * the address class alone.  Whether a unicast outer destination is one of
 * the host's own addresses is not checked here (XDP has no cheap answer:
 * the FIB helper refuses lookups on hosts that do not forward); a frame
 * sent to this host's MAC with another host's address is a router's
 * business, and attaching this program says this host is no router for
 * tunnel packets.  A subnet-directed broadcast address inside a unicast
 * frame is not recognised either; it reaches one host, like any unicast.
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
 * delivered), whether a unicast outer destination is the host's (above)
 * and the hop list (xlb_redirect's business).
 *
 * Configuration, read-only globals set through the skeleton between open
 * and load:
 *   gue_port   host order, default XLB_GUE_PORT_DEFAULT:
 *                skel->rodata->gue_port = 6080;
 *   host_mac   the interface's MAC address; all zero (the default, and
 *              what `ip link set dev D xdp obj xlb_decap.bpf.o` leaves)
 *              checks only that the destination is not a group address.
 *              A unicast frame for another MAC then reaches the stack
 *              decapsulated, which drops it as it would the outer packet
 *              (PACKET_OTHERHOST); set it to pass such frames unchanged:
 *                memcpy(skel->rodata->host_mac, mac, 6);
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
volatile const __u8 host_mac[ETH_ALEN];

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
	NOT_LOCAL,	/* a tunnel packet, not addressed to this host */
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

/*
 * Is a frame to Ethernet destination d addressed to this host (see the top
 * of the file)?  The outer addresses are checked by the parsers below.
 */
static __always_inline int mac_to_host(const __u8 *d)
{
	int i;

	if (d[0] & 1)		/* group bit: broadcast or multicast */
		return 0;
	if (!(host_mac[0] | host_mac[1] | host_mac[2] | host_mac[3] |
	      host_mac[4] | host_mac[5]))
		return 1;
#pragma unroll
	for (i = 0; i < ETH_ALEN; i++)
		if (d[i] != host_mac[i])
			return 0;
	return 1;
}

/* A unicast IPv4 destination: not 0.0.0.0, 224.0.0.0/4, 255.255.255.255. */
static __always_inline int unicast4(__be32 addr)
{
	__u32 a = bpf_ntohl(addr);

	return a && a != 0xffffffff && (a >> 28) != 0xe;
}

/* A unicast IPv6 destination: not ::, not ff00::/8. */
static __always_inline int unicast6(const struct in6_addr *a)
{
	return a->in6_u.u6_addr8[0] != 0xff &&
	       (a->in6_u.u6_addr32[0] | a->in6_u.u6_addr32[1] |
		a->in6_u.u6_addr32[2] | a->in6_u.u6_addr32[3]);
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
	if (!unicast4(ip->daddr))
		return NOT_LOCAL;
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
	if (!unicast6(&ip6->daddr))
		return NOT_LOCAL;
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
	if (v != NOT_TUNNEL && !mac_to_host(((struct ethhdr *)data)->h_dest))
		v = NOT_LOCAL;
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
	      XLB_DECAP_MALFORMED : v == NOT_LOCAL ? XLB_DECAP_NOT_LOCAL :
	      XLB_DECAP_PASSED, bytes);
	return XDP_PASS;
}
