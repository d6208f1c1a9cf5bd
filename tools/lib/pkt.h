/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test packets: the builder and the oracle of the data-path tests
 * (tests/bpf, tests/kmod) and the packets of xlb-bench.
 *
 *   pkt_build()        compose a frame from a struct pkt_spec: Ethernet, up
 *                      to two VLAN tags, IPv4 (options, fragments) or IPv6
 *                      (extension headers), then TCP, UDP, ICMP or ICMPv6
 *                      (errors quote a packet built by the same builder) or
 *                      any other protocol as raw payload.  Every length and
 *                      checksum is filled in.
 *   pkt_build_encap()  the same frame with its IP packet inside an xlb
 *                      tunnel (IP in IP, or GUE with the hop list) as
 *                      bpf/structs.h describes it: input for decap tests.
 *   pkt_parse()        check a plain frame (lengths, every checksum) and
 *                      return its fields.
 *   pkt_parse_outer()  the test oracle for what the load balancer emits:
 *                      check a tunnel frame field by field, return the outer
 *                      fields and where the inner packet is.
 *
 * Written from the specifications with byte offsets, not from the data
 * path's code or the kernel's header structs, so that one misreading cannot
 * hide in both: RFC 791 (IPv4), 8200 (IPv6), 768 (UDP), 9293 (TCP), 792 and
 * 4443 (ICMP, ICMPv6), 1071 (checksum), 2003/2473/4213 (IP in IP), IEEE
 * 802.1Q (tags), draft-ietf-intarea-gue variant 0 and the xlb hop list of
 * bpf/structs.h.
 *
 * Conventions: addresses are __be32[4] as in struct xlb_flow (IPv4 in [0],
 * the rest zero); ports, lengths, TCI, MTU and the like are host order;
 * families are XLB_FAMILY_INET (4) and XLB_FAMILY_INET6 (6).  Builders
 * return the bytes written, 0 when the spec is invalid or the buffer too
 * small.  Parsers return 0, or -1 with ->err = "field: what is wrong", where
 * field names the first inconsistent field ("ip4.csum", "udp.len",
 * "gue.hlen", ...); pkt_err_is() compares it.
 *
 * Userspace only (tools/lib/pkt.c); xlbd and xlbctl do not link it.  xlb-backend
 * builds its probe (a tunnel packet it sends itself) with pkt_build_encap().
 */
#ifndef XLB_PKT_H
#define XLB_PKT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "structs.h"

#define PKT_ETH_IP		0x0800
#define PKT_ETH_ARP		0x0806
#define PKT_ETH_IPV6		0x86dd
#define PKT_ETH_8021Q		0x8100
#define PKT_ETH_8021AD		0x88a8

#define PKT_ETH_LEN		14
#define PKT_VLAN_LEN		4
#define PKT_IP4_LEN		20
#define PKT_IP6_LEN		40
#define PKT_TCP_LEN		20
#define PKT_UDP_LEN		8
#define PKT_ICMP_LEN		8
#define PKT_GUE_LEN		4	/* GUE base header; hlen words follow */

#define PKT_MAX_VLANS		2
#define PKT_MAX_EXT		4	/* IPv6 extension headers per packet */
#define PKT_IP4_OPT_MAX		40
#define PKT_ERR_MAX		128
#define PKT_RH_TYPE		253	/* routing type for tests (RFC 4727) */

/* TCP flags, header byte 13 (RFC 9293, RFC 3168). */
#define PKT_TCP_FIN		0x01
#define PKT_TCP_SYN		0x02
#define PKT_TCP_RST		0x04
#define PKT_TCP_PSH		0x08
#define PKT_TCP_ACK		0x10
#define PKT_TCP_URG		0x20
#define PKT_TCP_ECE		0x40
#define PKT_TCP_CWR		0x80

/* IPv4 flags and fragment offset, bytes 6-7. */
#define PKT_IP4_DF		0x4000
#define PKT_IP4_MF		0x2000
#define PKT_IP4_OFFSET		0x1fff

struct pkt_vlan {
	__u16 tpid;		/* PKT_ETH_8021Q or PKT_ETH_8021AD */
	__u16 tci;		/* PCP (3 bits), DEI (1), VID (12) */
};

/*
 * One IPv6 extension header.  Hop-by-hop and destination options are
 * 8 * (1 + len8) bytes filled with PadN; a routing header is type
 * PKT_RH_TYPE with Segments Left 0 (so the destination stays the final
 * one, and nobody acts on it) and 8 * len8 bytes of zero data; a fragment
 * header is 8 bytes and ignores len8.
 */
struct pkt_ext6 {
	__u8 type;		/* IPPROTO_HOPOPTS, _ROUTING, _DSTOPTS, _FRAGMENT */
	__u8 len8;		/* Hdr Ext Len */
	__u16 frag_off;		/* fragment: offset, 8-byte units */
	bool more;		/* fragment: M flag */
	__u32 frag_id;		/* fragment: identification */
};

/*
 * What pkt_build() composes.  Start from pkt_spec_init(), then change
 * fields.  Not enforced: the order rules of RFC 8200 for extension headers
 * and anything else a test may want to get wrong on purpose.
 *
 * A fragment with a non-zero offset (IPv4 frag_off or an IPv6 fragment
 * header) carries only the payload, no transport header.  A first fragment
 * (MF/M set, offset 0) gets a transport header whose checksum covers just
 * this fragment (the builder does not know the rest).
 */
struct pkt_spec {
	/* Ethernet */
	__u8 dst_mac[6];
	__u8 src_mac[6];
	struct pkt_vlan vlan[PKT_MAX_VLANS];	/* outermost first */
	int vlans;
	__u16 ethertype;	/* 0: from family */
	/* IP; family 0: no IP header, the payload follows Ethernet */
	int family;
	__be32 src[4];
	__be32 dst[4];
	__u8 ttl;		/* TTL / hop limit */
	__u8 tos;		/* TOS / traffic class */
	__u32 flow_label;	/* IPv6, 20 bits */
	__u16 ip_id;		/* IPv4 identification */
	bool df;		/* IPv4 flags */
	bool mf;
	__u16 frag_off;		/* IPv4 fragment offset, 8-byte units */
	__u8 ip_opts[PKT_IP4_OPT_MAX];
	int ip_opts_len;	/* a multiple of 4; IHL = 5 + ip_opts_len / 4 */
	struct pkt_ext6 ext[PKT_MAX_EXT];	/* IPv6, in order */
	int n_ext;
	/* transport: IPPROTO_TCP, _UDP, _ICMP, _ICMPV6, else raw payload */
	int proto;
	__u16 sport;		/* TCP, UDP */
	__u16 dport;
	__u8 tcp_flags;		/* PKT_TCP_* */
	__u32 seq;
	__u32 ack;
	__u16 window;
	bool udp_no_csum;	/* UDP checksum 0 ("none", IPv4 only) */
	__u8 icmp_type;
	__u8 icmp_code;
	__u32 icmp_rest;	/* ICMP bytes 4-7: id << 16 | seq, MTU, ... */
	const struct pkt_spec *quote;	/* ICMP(v6): quoted packet, IP on */
	size_t quote_len;	/* quote at most this many bytes; 0: all */
	const void *payload;	/* after the transport header (and quote) */
	size_t payload_len;
};

/* An xlb tunnel around a packet (pkt_build_encap()). */
struct pkt_encap {
	int encap;		/* XLB_ENCAP_IPIP or XLB_ENCAP_GUE */
	int family;		/* outer */
	__be32 src[4];		/* the LB */
	__be32 dst[4];		/* the backend (hops[hop_index] for GUE) */
	__u8 ttl;
	__u8 tos;
	bool df;		/* IPv4 outer */
	__u16 sport;		/* GUE: UDP ports */
	__u16 dport;
	bool udp_no_csum;	/* GUE over IPv4: UDP checksum 0 */
	int hop_count;		/* GUE: hops[0..hop_count) follow the header */
	int hop_index;
	__be32 hops[XLB_HOPS][4];
};

/* Ethernet as parsed. */
struct pkt_l2 {
	__u8 dst_mac[6];
	__u8 src_mac[6];
	struct pkt_vlan vlan[PKT_MAX_VLANS];
	int vlans;
	__u16 ethertype;	/* the one after the tags */
	size_t l3_off;
};

/* A plain frame as pkt_parse() found it. */
struct pkt_info {
	struct pkt_l2 l2;
	int family;		/* 0: not IPv4/IPv6 */
	__be32 src[4];
	__be32 dst[4];
	__u8 ttl;
	__u8 tos;
	__u32 flow_label;
	__u16 ip_id;
	bool df;
	bool mf;		/* IPv4 MF or IPv6 fragment header M */
	__u16 frag_off;		/* 8-byte units (either family) */
	bool frag;		/* IPv4 MF/offset or an IPv6 fragment header */
	int n_ext;		/* IPv6 extension headers seen */
	__u8 proto;		/* transport protocol, after extension headers */
	size_t l3_off;
	size_t l4_off;
	size_t l4_len;		/* to the end of the IP packet */
	__u16 sport;
	__u16 dport;
	__u8 tcp_flags;
	__u32 seq;
	__u32 ack;
	__u8 icmp_type;
	__u8 icmp_code;
	__u32 icmp_rest;
	size_t payload_off;	/* after the transport header (ICMP: 8 bytes) */
	size_t payload_len;
	char err[PKT_ERR_MAX];
};

/* A tunnel frame as pkt_parse_outer() found it. */
struct pkt_outer {
	struct pkt_l2 l2;
	int family;		/* outer */
	__be32 src[4];
	__be32 dst[4];
	__u8 ttl;		/* TTL / hop limit */
	__u8 tos;		/* TOS / traffic class */
	__u32 flow_label;
	__u16 ip_id;
	bool df;
	__u8 proto;		/* IPv4 protocol / IPv6 next header: 4, 41, 17 */
	size_t l3_off;
	size_t ip_hlen;		/* outer IP header bytes */
	int encap;		/* XLB_ENCAP_IPIP or XLB_ENCAP_GUE */
	/* GUE only */
	__u16 sport;
	__u16 dport;
	__u16 udp_len;
	__u16 udp_csum;		/* as sent; 0: none */
	__u8 gue_version;
	__u8 gue_hlen;		/* 32-bit words after the GUE base header */
	__u8 gue_proto;
	__u16 gue_flags;
	__u8 hop_count;
	__u8 hop_index;
	__u8 hop_family;
	__be32 hops[XLB_HOPS][4];
	/* the packet inside */
	int inner_family;
	size_t inner_off;
	size_t inner_len;
	char err[PKT_ERR_MAX];
};

/* --- bytes and checksums ------------------------------------------------- */

static inline void pkt_put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void pkt_put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline __u16 pkt_get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static inline __u32 pkt_get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* RFC 1071: add bytes as big-endian 16-bit words (odd tail padded). */
__u64 pkt_sum(const void *data, size_t len, __u64 sum);

/* The checksum field for a sum: one's complement of the folded sum. */
__u16 pkt_csum(__u64 sum);

/* Sum of the TCP/UDP/ICMPv6 pseudo-header (RFC 768, RFC 8200 8.1). */
__u64 pkt_pseudo_sum(int family, const __be32 *src,
		     const __be32 *dst, __u8 proto, __u32 len);

/* Recompute the header checksum of the IPv4 header at ip. */
void pkt_ip4_set_csum(void *ip);

/* inet_pton into the xlb layout (IPv4 in addr[0]); 0 or -1. */
int pkt_addr(int family, const char *str, __be32 addr[4]);

size_t pkt_addr_len(int family);

/*
 * Defaults: MACs 02:00:00:00:00:01 -> 02:00:00:00:00:02, no tag;
 * 192.0.2.1 -> 198.51.100.1 or 2001:db8::1 -> 2001:db8:1::1, TTL 64;
 * TCP 40000 -> 80 SYN seq 1 window 65535; UDP 40000 -> 53; ICMP echo
 * request / ICMPv6 echo request with id 1 seq 1; no payload.
 */
void pkt_spec_init(struct pkt_spec *s, int family, int proto);

size_t pkt_l2_len(const struct pkt_spec *s);

/* The packet from the IP header on (no Ethernet). */
size_t pkt_build_ip(const struct pkt_spec *s, void *buf,
		    size_t cap);

/* A whole frame: Ethernet, tags, then pkt_build_ip() (or raw payload). */
size_t pkt_build(const struct pkt_spec *s, void *buf, size_t cap);

/*
 * Defaults: outer 203.0.113.1 -> 192.0.2.10 (IPv4) or 2001:db8:ff::1 ->
 * 2001:db8:10::10 (IPv6), TTL 64, DF; GUE 50000 -> XLB_GUE_PORT_DEFAULT,
 * hop list [dst, 192.0.2.11 / 2001:db8:10::11], index 0.
 */
void pkt_encap_init(struct pkt_encap *e, int encap, int family);

/*
 * The frame of `inner` (its Ethernet header and tags) with its IP packet
 * inside the tunnel e: what the LB sends for it.  The outer ethertype
 * follows e->family, the IPv4 outer ID is 0.
 */
size_t pkt_build_encap(const struct pkt_encap *e,
		       const struct pkt_spec *inner, void *buf,
		       size_t cap);

/* Does err name field ("ip4.csum" matches "ip4.csum: ...")? */
bool pkt_err_is(const char *err, const char *field);

int pkt_parse_l2(const __u8 *f, size_t len, struct pkt_l2 *l2,
		 char *err);

/*
 * Check a plain frame: Ethernet and tags, IPv4 (header checksum, total
 * length = the frame) or IPv6 (payload length = the frame, extension
 * headers), and the transport checksum unless it is a fragment.  A frame
 * that is neither IPv4 nor IPv6 parses with family 0.
 */
int pkt_parse(const void *frame, size_t len, struct pkt_info *pi);

/*
 * The test oracle: check what the load balancer sends to a backend.
 *   Ethernet (+ tags), ethertype matching the outer header;
 *   IPv4: version, IHL, header checksum, total length = the frame, not a
 *   fragment; IPv6: version, payload length = the frame, no extension
 *   headers; protocol / next header 4, 41 or 17;
 *   UDP: length = the IP payload, checksum correct (IPv4 may send 0);
 *   GUE: version 0, C 0, proto 4 or 41, flags XLB_GUE_FLAGS, hop list
 *   magic, family = the outer family, 1 <= count <= XLB_HOPS, hlen =
 *   1 + count * words per address, index < count, hop[index] = the outer
 *   destination;
 *   inner: its IP version is the one the outer protocol / GUE proto names,
 *   and its own length fills the rest of the frame exactly.
 */
int pkt_parse_outer(const void *frame, size_t len,
		    struct pkt_outer *o);

#endif /* XLB_PKT_H */
