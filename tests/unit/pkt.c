// SPDX-License-Identifier: GPL-2.0
/*
 * The test packet library (tools/lib/pkt.h) checked against independent
 * work: checksums with the RFC 1071 section 4.1 reference sum (host-order
 * words; the Internet checksum is byte-order independent), header fields at
 * their RFC byte offsets, a known IPv4 header, and tunnel frames assembled
 * here byte by byte.  Needs no BPF.
 */
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"

#include "pkt.h"

#define BUF	2048

/* RFC 1071 4.1, in host byte order: the checksum as it sits in memory. */
static __u16 rfc1071(const void *addr, size_t count)
{
	const __u8 *p = addr;
	__u32 sum = 0;
	__u16 w;

	for (; count > 1; count -= 2, p += 2) {
		memcpy(&w, p, 2);
		sum += w;
	}
	if (count > 0)
		sum += *p;	/* RFC 1071: "add left-over byte, if any" */
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* A region whose checksum field is right sums to zero. */
static int sums_to_zero(const void *p, size_t n)
{
	return rfc1071(p, n) == 0;
}

/* Pseudo-header (RFC 768 / RFC 8200 8.1) + segment, assembled here. */
static size_t pseudo(__u8 *buf, const __u8 *ip, int family, __u8 proto,
		     const __u8 *l4, size_t len)
{
	size_t n;

	memset(buf, 0, 40);
	if (family == 4) {
		memcpy(buf, ip + 12, 8);
		buf[9] = proto;
		buf[10] = len >> 8;
		buf[11] = len;
		n = 12;
	} else {
		memcpy(buf, ip + 8, 32);
		buf[34] = len >> 8;
		buf[35] = len;
		buf[39] = proto;
		n = 40;
	}
	memcpy(buf + n, l4, len);
	return n + len;
}

static int l4_sums_to_zero(const __u8 *ip, int family, __u8 proto,
			   const __u8 *l4, size_t len)
{
	static __u8 buf[70000];

	return sums_to_zero(buf, pseudo(buf, ip, family, proto, l4, len));
}

/* Store a freshly computed checksum (host order, so memcpy). */
static void store_csum(__u8 *field, __u16 c)
{
	memcpy(field, &c, 2);
}

static void fix_ip4(__u8 *ip)
{
	ip[10] = ip[11] = 0;
	store_csum(ip + 10, rfc1071(ip, (ip[0] & 0xf) * 4));
}

static void fix_udp(__u8 *ip, int family, __u8 *udp, size_t len)
{
	static __u8 buf[70000];
	__u16 c;

	udp[6] = udp[7] = 0;
	c = rfc1071(buf, pseudo(buf, ip, family, IPPROTO_UDP, udp, len));
	store_csum(udp + 6, c ? c : 0xffff);
}

static unsigned int be16(const __u8 *p)
{
	return p[0] << 8 | p[1];
}

static const char payload[] = "0123456789abcdefghijklmnopqrstuvwxyz!";

TEST(rfc1071_reference_example)
{
	/* RFC 1071 section 3: these words sum to ddf2 (one's complement) */
	static const __u8 b[] = { 0x00, 0x01, 0xf2, 0x03,
				  0xf4, 0xf5, 0xf6, 0xf7 };
	__u8 mine[2], lib[2];

	store_csum(mine, rfc1071(b, sizeof(b)));
	pkt_put16(lib, pkt_csum(pkt_sum(b, sizeof(b), 0)));
	EXPECT_EQ(0x220d, be16(lib));	/* ~0xddf2 */
	EXPECT_EQ(0, memcmp(mine, lib, 2));
	/* odd length: the last byte is the high byte of a zero-padded word */
	store_csum(mine, rfc1071(b, 7));
	pkt_put16(lib, pkt_csum(pkt_sum(b, 7, 0)));
	EXPECT_EQ(0, memcmp(mine, lib, 2));
}

TEST(ipv4_header_known_answer)
{
	/* the usual textbook header: checksum b861 */
	static const __u8 want[20] = {
		0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
		0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
		0xc0, 0xa8, 0x00, 0xc7,
	};
	static __u8 pl[0x73 - 28];
	struct pkt_spec s;
	__u8 b[BUF];
	size_t n;

	pkt_spec_init(&s, 4, IPPROTO_UDP);
	pkt_addr(4, "192.168.0.1", s.src);
	pkt_addr(4, "192.168.0.199", s.dst);
	s.df = true;
	s.payload = pl;
	s.payload_len = sizeof(pl);
	n = pkt_build_ip(&s, b, sizeof(b));
	ASSERT_EQ(0x73, n);
	EXPECT_EQ(0, memcmp(b, want, sizeof(want)));
}

TEST(tcp4_fields_and_checksums)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 14, *tcp = ip + 20;
	size_t n;

	pkt_spec_init(&s, 4, IPPROTO_TCP);
	s.tcp_flags = PKT_TCP_ACK | PKT_TCP_PSH;
	s.seq = 0x01020304;
	s.ack = 0x0a0b0c0d;
	s.payload = payload;
	s.payload_len = 5;	/* odd: the checksum pads */
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 20 + 20 + 5, n);
	EXPECT_EQ(0x0800, be16(b + 12));
	EXPECT_EQ(0x02, b[5]);	/* dst MAC 02:..:02 */
	EXPECT_EQ(0x45, ip[0]);
	EXPECT_EQ(45, be16(ip + 2));
	EXPECT_EQ(64, ip[8]);
	EXPECT_EQ(6, ip[9]);
	EXPECT_EQ(40000, be16(tcp));
	EXPECT_EQ(80, be16(tcp + 2));
	EXPECT_EQ(0x50, tcp[12]);
	EXPECT_EQ(0x18, tcp[13]);
	EXPECT_EQ(0, memcmp(tcp + 20, payload, 5));
	EXPECT_TRUE(sums_to_zero(ip, 20));
	EXPECT_TRUE(l4_sums_to_zero(ip, 4, 6, tcp, 25));

	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(4, pi.family);
	EXPECT_EQ(6, pi.proto);
	EXPECT_EQ(40000, pi.sport);
	EXPECT_EQ(80, pi.dport);
	EXPECT_EQ(0x01020304, pi.seq);
	EXPECT_EQ(0x0a0b0c0d, pi.ack);
	EXPECT_EQ(0x18, pi.tcp_flags);
	EXPECT_EQ(5, pi.payload_len);
	EXPECT_EQ(14 + 40, pi.payload_off);
	EXPECT_EQ(0, memcmp(pi.src, ip + 12, 4));
	EXPECT_EQ(0, memcmp(pi.dst, ip + 16, 4));
}

TEST(ipv4_options_flags_vlan)
{
	/* Router Alert (RFC 2113), then NOPs */
	static const __u8 opts[8] = { 0x94, 0x04, 0, 0, 1, 1, 1, 1 };
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 18, *udp = ip + 28;
	size_t n;

	pkt_spec_init(&s, 4, IPPROTO_UDP);
	s.vlans = 1;
	s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 0x6064 };
	memcpy(s.ip_opts, opts, sizeof(opts));
	s.ip_opts_len = sizeof(opts);
	s.tos = 0xb8;
	s.ip_id = 0x1234;
	s.ttl = 7;
	s.df = true;
	s.payload = payload;
	s.payload_len = 10;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(18 + 28 + 8 + 10, n);
	EXPECT_EQ(0x8100, be16(b + 12));
	EXPECT_EQ(0x6064, be16(b + 14));
	EXPECT_EQ(0x0800, be16(b + 16));
	EXPECT_EQ(0x47, ip[0]);
	EXPECT_EQ(0xb8, ip[1]);
	EXPECT_EQ(28 + 18, be16(ip + 2));
	EXPECT_EQ(0x1234, be16(ip + 4));
	EXPECT_EQ(0x4000, be16(ip + 6));
	EXPECT_EQ(7, ip[8]);
	EXPECT_EQ(0, memcmp(ip + 20, opts, 8));
	EXPECT_EQ(18, be16(udp + 4));
	EXPECT_TRUE(sums_to_zero(ip, 28));
	EXPECT_TRUE(l4_sums_to_zero(ip, 4, 17, udp, 18));

	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(1, pi.l2.vlans);
	EXPECT_EQ(0x6064, pi.l2.vlan[0].tci);
	EXPECT_EQ(18 + 28, pi.l4_off);
	EXPECT_EQ(0xb8, pi.tos);
	EXPECT_EQ(7, pi.ttl);
	EXPECT_TRUE(pi.df);
	EXPECT_EQ(53, pi.dport);

	s.udp_no_csum = true;
	n = pkt_build(&s, b, sizeof(b));
	EXPECT_EQ(0, be16(udp + 6));
	EXPECT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
}

TEST(ipv4_fragments)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 14;
	size_t n;

	pkt_spec_init(&s, 4, IPPROTO_UDP);
	s.mf = true;
	s.frag_off = 100;
	s.payload = payload;
	s.payload_len = 16;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 20 + 16, n);	/* no UDP header in a later fragment */
	EXPECT_EQ(0x2000 | 100, be16(ip + 6));
	EXPECT_EQ(0, memcmp(ip + 20, payload, 16));
	EXPECT_TRUE(sums_to_zero(ip, 20));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_TRUE(pi.frag);
	EXPECT_TRUE(pi.mf);
	EXPECT_EQ(100, pi.frag_off);
	EXPECT_EQ(0, pi.dport);

	s.frag_off = 0;	/* first fragment: UDP header, length of this part */
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 20 + 8 + 16, n);
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(53, pi.dport);
}

TEST(icmp4_echo_and_frag_needed)
{
	struct pkt_spec s, q;
	struct pkt_info pi;
	__u8 b[BUF], qb[BUF], *ip = b + 14, *icmp = ip + 20;
	size_t n, qn;

	pkt_spec_init(&s, 4, IPPROTO_ICMP);
	s.payload = payload;
	s.payload_len = 7;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 20 + 8 + 7, n);
	EXPECT_EQ(1, ip[9]);
	EXPECT_EQ(8, icmp[0]);
	EXPECT_TRUE(sums_to_zero(icmp, 15));	/* no pseudo-header */

	/* frag needed, MTU 1400, quoting IP header + 8 bytes of a TCP packet */
	pkt_spec_init(&q, 4, IPPROTO_TCP);
	memcpy(q.src, s.dst, 16);
	memcpy(q.dst, s.src, 16);
	q.payload = payload;
	q.payload_len = 30;
	qn = pkt_build_ip(&q, qb, sizeof(qb));
	ASSERT_EQ(70, qn);
	s.icmp_type = 3;
	s.icmp_code = 4;
	s.icmp_rest = 1400;
	s.quote = &q;
	s.quote_len = 28;
	s.payload_len = 0;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 20 + 8 + 28, n);
	EXPECT_EQ(56, be16(ip + 2));
	EXPECT_EQ(3, icmp[0]);
	EXPECT_EQ(4, icmp[1]);
	EXPECT_EQ(1400, be16(icmp + 6));
	EXPECT_EQ(0, memcmp(icmp + 8, qb, 28));
	EXPECT_TRUE(sums_to_zero(icmp, 36));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(3, pi.icmp_type);
	EXPECT_EQ(4, pi.icmp_code);
	EXPECT_EQ(1400, pi.icmp_rest);
	EXPECT_EQ(28, pi.payload_len);
}

TEST(tcp6_fields_and_checksums)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 14, *tcp = ip + 40;
	size_t n;

	pkt_spec_init(&s, 6, IPPROTO_TCP);
	s.tos = 0x28;
	s.flow_label = 0x12345;
	s.ttl = 5;
	s.payload = payload;
	s.payload_len = 33;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 40 + 20 + 33, n);
	EXPECT_EQ(0x86dd, be16(b + 12));
	EXPECT_EQ(0x62, ip[0]);	/* version 6, class 0x28 */
	EXPECT_EQ(0x81, ip[1]);
	EXPECT_EQ(0x23, ip[2]);
	EXPECT_EQ(0x45, ip[3]);
	EXPECT_EQ(53, be16(ip + 4));
	EXPECT_EQ(6, ip[6]);
	EXPECT_EQ(5, ip[7]);
	EXPECT_TRUE(l4_sums_to_zero(ip, 6, 6, tcp, 53));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(6, pi.family);
	EXPECT_EQ(0x28, pi.tos);
	EXPECT_EQ(0x12345, pi.flow_label);
	EXPECT_EQ(5, pi.ttl);
	EXPECT_EQ(0, memcmp(pi.dst, ip + 24, 16));
}

TEST(ipv6_extension_headers)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 14, *x = ip + 40, *udp;
	size_t n;

	pkt_spec_init(&s, 6, IPPROTO_UDP);
	s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_HOPOPTS };
	s.ext[1] = (struct pkt_ext6){ .type = IPPROTO_ROUTING, .len8 = 1 };
	s.ext[2] = (struct pkt_ext6){ .type = IPPROTO_DSTOPTS, .len8 = 2 };
	s.n_ext = 3;
	s.payload = payload;
	s.payload_len = 9;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 40 + 8 + 16 + 24 + 8 + 9, n);
	EXPECT_EQ(0, ip[6]);		/* hop-by-hop */
	EXPECT_EQ(8 + 16 + 24 + 17, be16(ip + 4));
	EXPECT_EQ(43, x[0]);		/* -> routing */
	EXPECT_EQ(0, x[1]);
	EXPECT_EQ(1, x[2]);		/* PadN over the 6 option bytes */
	EXPECT_EQ(4, x[3]);
	x += 8;
	EXPECT_EQ(60, x[0]);		/* -> destination options */
	EXPECT_EQ(1, x[1]);
	EXPECT_EQ(253, x[2]);
	EXPECT_EQ(0, x[3]);		/* segments left */
	x += 16;
	EXPECT_EQ(17, x[0]);		/* -> UDP */
	EXPECT_EQ(2, x[1]);
	udp = x + 24;
	EXPECT_EQ(17, be16(udp + 4));
	EXPECT_TRUE(l4_sums_to_zero(ip, 6, 17, udp, 17));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(3, pi.n_ext);
	EXPECT_EQ(17, pi.proto);
	EXPECT_EQ((size_t)(udp - b), pi.l4_off);
	EXPECT_EQ(9, pi.payload_len);
}

TEST(ipv6_fragments)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF], *ip = b + 14, *f = ip + 40;
	size_t n;

	pkt_spec_init(&s, 6, IPPROTO_UDP);
	s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_FRAGMENT, .more = true,
				      .frag_id = 0xdeadbeef };
	s.n_ext = 1;
	s.payload = payload;
	s.payload_len = 16;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 40 + 8 + 8 + 16, n);
	EXPECT_EQ(44, ip[6]);
	EXPECT_EQ(17, f[0]);
	EXPECT_EQ(0x0001, be16(f + 2));
	EXPECT_EQ(0xdead, be16(f + 4));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_TRUE(pi.frag);
	EXPECT_TRUE(pi.mf);
	EXPECT_EQ(53, pi.dport);

	s.ext[0].frag_off = 185;
	s.ext[0].more = false;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 40 + 8 + 16, n);
	EXPECT_EQ(185 << 3, be16(f + 2));
	EXPECT_EQ(0, memcmp(f + 8, payload, 16));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(185, pi.frag_off);
	EXPECT_FALSE(pi.mf);
	EXPECT_EQ(0, pi.dport);
}

TEST(icmp6_too_big_quotes_packet)
{
	struct pkt_spec s, q;
	struct pkt_info pi;
	__u8 b[BUF], qb[BUF], *ip = b + 14, *icmp = ip + 40;
	size_t n, qn;

	pkt_spec_init(&q, 6, IPPROTO_TCP);
	q.payload = payload;
	q.payload_len = 20;
	qn = pkt_build_ip(&q, qb, sizeof(qb));
	ASSERT_EQ(80, qn);
	pkt_spec_init(&s, 6, IPPROTO_ICMPV6);
	s.icmp_type = 2;
	s.icmp_rest = 1280;
	s.quote = &q;
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(14 + 40 + 8 + 80, n);
	EXPECT_EQ(58, ip[6]);
	EXPECT_EQ(2, icmp[0]);
	EXPECT_EQ(0, memcmp(icmp + 8, qb, 80));
	EXPECT_TRUE(l4_sums_to_zero(ip, 6, 58, icmp, 88));
	/* ICMPv6 without the pseudo-header must not verify */
	EXPECT_FALSE(sums_to_zero(icmp, 88));
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(2, pi.icmp_type);
	EXPECT_EQ(1280, pi.icmp_rest);
}

TEST(qinq_tags)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF];
	size_t n;

	pkt_spec_init(&s, 6, IPPROTO_UDP);
	s.vlans = 2;
	s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021AD, 10 };
	s.vlan[1] = (struct pkt_vlan){ PKT_ETH_8021Q, 20 };
	n = pkt_build(&s, b, sizeof(b));
	ASSERT_EQ(22 + 40 + 8, n);
	EXPECT_EQ(0x88a8, be16(b + 12));
	EXPECT_EQ(10, be16(b + 14));
	EXPECT_EQ(0x8100, be16(b + 16));
	EXPECT_EQ(20, be16(b + 18));
	EXPECT_EQ(0x86dd, be16(b + 20));
	EXPECT_EQ(0x60, b[22]);
	ASSERT_EQ(0, pkt_parse(b, n, &pi)) TH_LOG("%s", pi.err);
	EXPECT_EQ(2, pi.l2.vlans);
	EXPECT_EQ(22, pi.l3_off);
}

TEST(builder_refuses_what_does_not_fit)
{
	struct pkt_spec s;
	__u8 b[BUF];

	pkt_spec_init(&s, 4, IPPROTO_TCP);
	EXPECT_EQ(0, pkt_build(&s, b, 53));
	EXPECT_EQ(54, pkt_build(&s, b, 54));
	s.ip_opts_len = 3;
	EXPECT_EQ(0, pkt_build(&s, b, sizeof(b)));
	pkt_spec_init(&s, 6, IPPROTO_UDP);
	s.ext[0].type = IPPROTO_TCP;
	s.n_ext = 1;
	EXPECT_EQ(0, pkt_build(&s, b, sizeof(b)));
}

/*
 * GUE over IPv4 carrying IPv4, assembled byte by byte from structs.h's
 * description: the library's parser accepts it and its wrapper makes
 * the same bytes.
 */
static size_t hand_gue(__u8 *b, int outer, const __u8 *inner, size_t ilen,
		       int inner_family)
{
	size_t alen = outer == 4 ? 4 : 16, ihl = outer == 4 ? 20 : 40;
	size_t glen = 4 + 4 + 2 * alen, udp_len = 8 + glen + ilen;
	__u8 *ip = b + 14, *udp = ip + ihl, *g = udp + 8;
	__be32 src[4], dst[4], hop1[4];

	pkt_addr(outer, outer == 4 ? "203.0.113.1" : "2001:db8:ff::1", src);
	pkt_addr(outer, outer == 4 ? "192.0.2.10" : "2001:db8:10::10", dst);
	pkt_addr(outer, outer == 4 ? "192.0.2.11" : "2001:db8:10::11", hop1);
	memcpy(b, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	if (outer == 4) {
		memcpy(b + 12, "\x08\x00", 2);
		memcpy(ip, "\x45\x00\x00\x00\x00\x00\x40\x00\x40\x11\0\0", 12);
		ip[2] = (ihl + udp_len) >> 8;
		ip[3] = ihl + udp_len;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		fix_ip4(ip);
	} else {
		memcpy(b + 12, "\x86\xdd", 2);
		memcpy(ip, "\x60\0\0\0\0\0\x11\x40", 8);
		ip[4] = udp_len >> 8;
		ip[5] = udp_len;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
	}
	udp[0] = 50000 >> 8;
	udp[1] = 50000 & 0xff;
	udp[2] = 6080 >> 8;
	udp[3] = 6080 & 0xff;
	udp[4] = udp_len >> 8;
	udp[5] = udp_len;
	g[0] = (glen - 4) / 4;			/* version 0, C 0, hlen */
	g[1] = inner_family == 4 ? 4 : 41;
	g[2] = 0;
	g[3] = 0;				/* XLB_GUE_FLAGS: none */
	g[4] = 'x';
	g[5] = 2;
	g[6] = 0;
	g[7] = outer;
	memcpy(g + 8, dst, alen);
	memcpy(g + 8 + alen, hop1, alen);
	memcpy(g + glen, inner, ilen);
	fix_udp(ip, outer, udp, udp_len);
	return 14 + ihl + udp_len;
}

static void check_gue(struct __test_metadata *_metadata, int outer,
		      int inner_family)
{
	struct pkt_spec in;
	struct pkt_encap e;
	struct pkt_outer o;
	__u8 inner[BUF], hand[BUF], lib[BUF];
	size_t ilen, n, m, alen = outer == 4 ? 4 : 16;

	pkt_spec_init(&in, inner_family, IPPROTO_TCP);
	in.payload = payload;
	in.payload_len = 11;
	ilen = pkt_build_ip(&in, inner, sizeof(inner));
	ASSERT_NE(0, ilen);
	n = hand_gue(hand, outer, inner, ilen, inner_family);

	ASSERT_EQ(0, pkt_parse_outer(hand, n, &o)) TH_LOG("%s", o.err);
	EXPECT_EQ(XLB_ENCAP_GUE, o.encap);
	EXPECT_EQ(outer, o.family);
	EXPECT_EQ(17, o.proto);
	EXPECT_EQ(64, o.ttl);
	EXPECT_EQ(50000, o.sport);
	EXPECT_EQ(6080, o.dport);
	EXPECT_EQ(inner_family == 4 ? 4 : 41, o.gue_proto);
	EXPECT_EQ(1 + 2 * alen / 4, o.gue_hlen);
	EXPECT_EQ(2, o.hop_count);
	EXPECT_EQ(0, o.hop_index);
	EXPECT_EQ(outer, o.hop_family);
	EXPECT_EQ(0, memcmp(o.hops[0], hand + 14 + (outer == 4 ? 16 : 24),
			    alen));
	EXPECT_EQ(inner_family, o.inner_family);
	EXPECT_EQ(ilen, o.inner_len);
	EXPECT_EQ(n - ilen, o.inner_off);
	EXPECT_EQ(0, memcmp(hand + o.inner_off, inner, ilen));

	pkt_encap_init(&e, XLB_ENCAP_GUE, outer);
	m = pkt_build_encap(&e, &in, lib, sizeof(lib));
	ASSERT_EQ(n, m);
	EXPECT_EQ(0, memcmp(hand, lib, n));
}

TEST(gue4_inner4_hand_built)
{
	check_gue(_metadata, 4, 4);
}

TEST(gue4_inner6_hand_built)
{
	check_gue(_metadata, 4, 6);
}

TEST(gue6_inner4_hand_built)
{
	check_gue(_metadata, 6, 4);
}

TEST(gue6_inner6_hand_built)
{
	check_gue(_metadata, 6, 6);
}

TEST(ipip_families)
{
	static const int fam[4][2] = { { 4, 4 }, { 4, 6 }, { 6, 4 }, { 6, 6 } };
	struct pkt_spec in;
	struct pkt_encap e;
	struct pkt_outer o;
	__u8 inner[BUF], b[BUF];
	size_t ilen, n, hl;
	int i;

	for (i = 0; i < 4; i++) {
		pkt_spec_init(&in, fam[i][1], IPPROTO_UDP);
		in.vlans = 1;
		in.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 7 };
		ilen = pkt_build_ip(&in, inner, sizeof(inner));
		pkt_encap_init(&e, XLB_ENCAP_IPIP, fam[i][0]);
		e.ttl = 3;
		e.tos = 0x10;
		n = pkt_build_encap(&e, &in, b, sizeof(b));
		hl = fam[i][0] == 4 ? 20 : 40;
		ASSERT_EQ(18 + hl + ilen, n);
		EXPECT_EQ(fam[i][0] == 4 ? 0x0800 : 0x86dd, be16(b + 16));
		/* protocol / next header names the inner family */
		EXPECT_EQ(fam[i][1] == 4 ? 4 : 41, b[18 + (hl == 20 ? 9 : 6)]);
		EXPECT_EQ(0, memcmp(b + 18 + hl, inner, ilen));
		if (hl == 20)
			EXPECT_TRUE(sums_to_zero(b + 18, 20));
		ASSERT_EQ(0, pkt_parse_outer(b, n, &o)) TH_LOG("%s", o.err);
		EXPECT_EQ(XLB_ENCAP_IPIP, o.encap);
		EXPECT_EQ(fam[i][1], o.inner_family);
		EXPECT_EQ(18 + hl, o.inner_off);
		EXPECT_EQ(3, o.ttl);
		EXPECT_EQ(0x10, o.tos);
		EXPECT_EQ(1, o.l2.vlans);
		EXPECT_EQ(7, o.l2.vlan[0].tci);
	}
}

/* One broken outer frame and the field the oracle must name. */
struct breakage {
	const char *name;
	int outer;		/* 4, 6 */
	int encap;
	const char *field;	/* NULL: must still parse */
};

static const struct breakage breakages[] = {
	{ "ip4 checksum",	4, XLB_ENCAP_GUE,  "ip4.csum" },
	{ "ip4 tot_len",	4, XLB_ENCAP_GUE,  "ip4.tot_len" },
	{ "ip4 cut short",	4, XLB_ENCAP_IPIP, "ip4.tot_len" },
	{ "ip4 MF",		4, XLB_ENCAP_GUE,  "ip4.frag" },
	{ "ip4 proto",		4, XLB_ENCAP_GUE,  "ip4.proto" },
	{ "ipip inner family",	4, XLB_ENCAP_IPIP, "ip4.proto" },
	{ "ip6 payload_len",	6, XLB_ENCAP_GUE,  "ip6.payload_len" },
	{ "ip6 cut short",	6, XLB_ENCAP_IPIP, "ip6.payload_len" },
	{ "ip6 nexthdr",	6, XLB_ENCAP_GUE,  "ip6.nexthdr" },
	{ "ip6 ipip inner family", 6, XLB_ENCAP_IPIP, "ip6.nexthdr" },
	{ "eth type",		4, XLB_ENCAP_GUE,  "eth.type" },
	{ "udp len",		4, XLB_ENCAP_GUE,  "udp.len" },
	{ "udp len",		6, XLB_ENCAP_GUE,  "udp.len" },
	{ "udp checksum",	4, XLB_ENCAP_GUE,  "udp.csum" },
	{ "udp checksum",	6, XLB_ENCAP_GUE,  "udp.csum" },
	{ "udp checksum 0",	6, XLB_ENCAP_GUE,  "udp.csum" },
	{ "udp checksum 0",	4, XLB_ENCAP_GUE,  NULL },
	{ "gue version 1",	4, XLB_ENCAP_GUE,  "gue.version" },
	{ "gue version 1",	6, XLB_ENCAP_GUE,  "gue.version" },
	{ "gue C bit",		4, XLB_ENCAP_GUE,  "gue.control" },
	{ "gue hlen",		4, XLB_ENCAP_GUE,  "gue.hlen" },
	{ "gue hlen",		6, XLB_ENCAP_GUE,  "gue.hlen" },
	{ "gue proto family",	4, XLB_ENCAP_GUE,  "gue.proto" },
	{ "gue proto udp",	6, XLB_ENCAP_GUE,  "gue.proto" },
	{ "gue flags",		4, XLB_ENCAP_GUE,  "gue.flags" },
	{ "hops magic",		4, XLB_ENCAP_GUE,  "hops.magic" },
	{ "hops count 3",	4, XLB_ENCAP_GUE,  "hops.count" },
	{ "hops count 1",	6, XLB_ENCAP_GUE,  "hops.unused" },
	{ "hops index",		4, XLB_ENCAP_GUE,  "hops.index" },
	{ "hops family",	4, XLB_ENCAP_GUE,  "hops.family" },
	{ "hops addr",		6, XLB_ENCAP_GUE,  "hops.addr" },
	{ "inner len",		4, XLB_ENCAP_GUE,  "inner.len" },
	{ "inner len",		6, XLB_ENCAP_IPIP, "inner.len" },
};

/* Apply breakage k to a good frame; fix the checksums it did not target. */
static size_t apply(const struct breakage *k, __u8 *b, size_t n)
{
	__u8 *ip = b + 14, *udp = ip + (k->outer == 4 ? 20 : 40), *g = udp + 8;
	size_t ulen = n - (udp - b);
	const char *nm = k->name;
	bool udp_fix = true;

	if (!strcmp(nm, "ip4 checksum")) {
		ip[10] ^= 0x01;
		return n;
	} else if (!strcmp(nm, "ip4 tot_len")) {
		ip[3]--;
	} else if (!strcmp(nm, "ip4 cut short") || !strcmp(nm, "ip6 cut short")) {
		return n - 1;
	} else if (!strcmp(nm, "ip4 MF")) {
		ip[6] |= 0x20;
	} else if (!strcmp(nm, "ip4 proto")) {
		ip[9] = 47;
	} else if (!strcmp(nm, "ipip inner family")) {
		ip[9] = 41;
	} else if (!strcmp(nm, "ip6 payload_len")) {
		ip[5]++;
		return n;
	} else if (!strcmp(nm, "ip6 nexthdr")) {
		ip[6] = 0;
		return n;
	} else if (!strcmp(nm, "ip6 ipip inner family")) {
		ip[6] = 4;
		return n;
	} else if (!strcmp(nm, "eth type")) {
		b[12] = 0x08;
		b[13] = 0x06;
		return n;
	} else if (!strcmp(nm, "udp len")) {
		udp[5]--;
	} else if (!strcmp(nm, "udp checksum")) {
		udp[7] ^= 0x40;
		return n;
	} else if (!strcmp(nm, "udp checksum 0")) {
		udp[6] = udp[7] = 0;
		return n;
	} else if (!strcmp(nm, "gue version 1")) {
		g[0] |= 0x40;
	} else if (!strcmp(nm, "gue C bit")) {
		g[0] |= 0x20;
	} else if (!strcmp(nm, "gue hlen")) {
		g[0]--;
	} else if (!strcmp(nm, "gue proto family")) {
		g[1] = 41;
	} else if (!strcmp(nm, "gue proto udp")) {
		g[1] = 17;
	} else if (!strcmp(nm, "gue flags")) {
		g[3] = 1;	/* xlb sends no GUE flags */
	} else if (!strcmp(nm, "hops magic")) {
		g[4] = 'y';
	} else if (!strcmp(nm, "hops count 3")) {
		g[5] = 3;
	} else if (!strcmp(nm, "hops count 1")) {
		g[5] = 1;
	} else if (!strcmp(nm, "hops index")) {
		g[6] = 2;
	} else if (!strcmp(nm, "hops family")) {
		g[7] = 6;
	} else if (!strcmp(nm, "hops addr")) {
		g[6] = 1;
	} else if (!strcmp(nm, "inner len")) {
		/* the inner header is the last 40 + 20 or 20 + 20 bytes */
		__u8 *in = b + n - (k->outer == 4 ? 40 : 60);

		if (k->outer == 4)
			in[3]++;
		else
			in[5]++;
		udp_fix = k->encap == XLB_ENCAP_GUE;
	}
	if (k->outer == 4)
		fix_ip4(ip);
	if (udp_fix && k->encap == XLB_ENCAP_GUE)
		fix_udp(ip, k->outer, udp, ulen);
	return n;
}

TEST(outer_errors_are_named)
{
	struct pkt_spec in;
	struct pkt_encap e;
	struct pkt_outer o;
	__u8 b[BUF];
	size_t i, n;

	for (i = 0; i < sizeof(breakages) / sizeof(breakages[0]); i++) {
		const struct breakage *k = &breakages[i];

		/* inner: IPv4 TCP (40 bytes) in IPv4, IPv6 TCP (60) in IPv6 */
		pkt_spec_init(&in, k->outer, IPPROTO_TCP);
		pkt_encap_init(&e, k->encap, k->outer);
		n = pkt_build_encap(&e, &in, b, sizeof(b));
		ASSERT_NE(0, n);
		ASSERT_EQ(0, pkt_parse_outer(b, n, &o))
			TH_LOG("%s: good frame refused: %s", k->name, o.err);
		n = apply(k, b, n);
		if (!k->field) {
			EXPECT_EQ(0, pkt_parse_outer(b, n, &o))
				TH_LOG("IPv%d %s: %s", k->outer, k->name,
				       o.err);
			continue;
		}
		EXPECT_EQ(-1, pkt_parse_outer(b, n, &o))
			TH_LOG("IPv%d %s: accepted", k->outer, k->name);
		EXPECT_TRUE(pkt_err_is(o.err, k->field))
			TH_LOG("IPv%d %s: want %s, got \"%s\"", k->outer,
			       k->name, k->field, o.err);
	}
}

TEST(plain_frame_errors_are_named)
{
	struct pkt_info pi;
	struct pkt_spec s;
	__u8 b[BUF];
	size_t n;

	pkt_spec_init(&s, 4, IPPROTO_TCP);
	n = pkt_build(&s, b, sizeof(b));
	b[14 + 20 + 16] ^= 1;
	EXPECT_EQ(-1, pkt_parse(b, n, &pi));
	EXPECT_TRUE(pkt_err_is(pi.err, "tcp.csum")) TH_LOG("%s", pi.err);

	pkt_spec_init(&s, 6, IPPROTO_ICMPV6);
	n = pkt_build(&s, b, sizeof(b));
	b[14 + 40 + 2] ^= 1;
	EXPECT_EQ(-1, pkt_parse(b, n, &pi));
	EXPECT_TRUE(pkt_err_is(pi.err, "icmp6.csum")) TH_LOG("%s", pi.err);

	pkt_spec_init(&s, 6, IPPROTO_UDP);
	s.udp_no_csum = true;
	n = pkt_build(&s, b, sizeof(b));
	EXPECT_EQ(-1, pkt_parse(b, n, &pi));
	EXPECT_TRUE(pkt_err_is(pi.err, "udp.csum")) TH_LOG("%s", pi.err);

	pkt_spec_init(&s, 4, IPPROTO_UDP);
	n = pkt_build(&s, b, sizeof(b));
	EXPECT_EQ(-1, pkt_parse(b, n + 2, &pi));
	EXPECT_TRUE(pkt_err_is(pi.err, "ip4.tot_len")) TH_LOG("%s", pi.err);
	EXPECT_EQ(-1, pkt_parse(b, 13, &pi));
	EXPECT_TRUE(pkt_err_is(pi.err, "frame")) TH_LOG("%s", pi.err);
}

TEST_HARNESS_MAIN
