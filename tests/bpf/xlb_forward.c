// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data path (bpf/xlb.bpf.c) through BPF_PROG_TEST_RUN, part 1:
 * what leaves the LB for one packet.
 *   - VIP packets go out XDP_TX in the backend's tunnel (every
 *     encapsulation, both client families, TCP and UDP, tags, IPv4
 *     options, IPv6 extension headers, port-0 VIPs, every hash mode) to
 *     the backend libxlb's xlb_explain_pick names;
 *   - everything not for a VIP passes byte for byte (docs/design.md
 *     contract 7), the address filter decides it for most;
 *   - ICMP errors about a VIP flow reach that flow's backend;
 *   - packets too big for the tunnel are answered with ICMP.
 * Fixture and expectations: tests/bpf/lb_fixture.h.
 */
#include "kselftest_harness.h"

#include "lb_fixture.h"

/* Every way of reaching a backend, TCP and UDP. */
static const int encap_kinds[] = {
	K_TCP_IPIP4, K_TCP_IPIP6, K_TCP_GUE4, K_TCP_GUE6,
	K_UDP_IPIP4, K_UDP_IPIP6, K_UDP_GUE4, K_UDP_GUE6,
};

/* Build s, run it, expect the tunnel to xlb_explain_pick's primary. */
static bool fwd_case(struct lb *lb, int v, const struct pkt_spec *s,
		     const char *what, struct pkt_outer *o)
{
	struct xlb_flow f = lb_flow(s);

	return lb_run_fwd(lb, v, s, &f, LB_EXPLAIN, what, o);
}

TEST_F(lb, forward_every_encap_to_explained_backend)
{
	struct pkt_spec s;
	unsigned int i, n, ok = 0, total = 0;
	char what[64];
	int v;

	lb_for_each_vip(i, v, encap_kinds) {
		for (n = 0; n < 8; n++) {
			lb_spec(&self->lb, v, &s);
			s.sport = (__u16)(40000 + n * 1111);
			s.tos = (__u8)(0xb8 | (n & 3));	/* EF, any ECN */
			s.payload_len = 16 + n * 100;
			snprintf(what, sizeof(what), "flow %u", n);
			ok += fwd_case(&self->lb, v, &s, what, NULL);
			total++;
		}
	}
	EXPECT_EQ(total, ok);
	TH_LOG("%u packets, 2 client families x 8 encapsulations", total);
}

/* The filter bit of an address (bpf/structs.h), as the program finds it. */
static __u32 filter_bit(int family, const __be32 a[4])
{
	return xlb_vip_filter_hash((__u64)a[0] | (__u64)a[1] << 32,
				   (__u64)a[2] | (__u64)a[3] << 32,
				   (__u8)family);
}

/* Set (on) or clear a bit of the published filter in place: 0 or -1. */
static int filter_write(const struct lb *lb, __u32 h, bool on)
{
	size_t bytes = (size_t)XLB_VIP_INDEX_MAP_SLOTS *
		       sizeof(struct xlb_vip_slot);
	__u32 key = 0, id;
	__u64 *w;
	void *m;
	int fd;

	if (bpf_map_lookup_elem(lb->dp.vip_index, &key, &id))
		return -1;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	w = (__u64 *)((struct xlb_vip_slot *)m + XLB_VIP_INDEX_SLOTS);
	if (on)
		w[h / 64] |= 1ULL << (h % 64);
	else
		w[h / 64] &= ~(1ULL << (h % 64));
	munmap(m, bytes);
	return 0;
}

/*
 * The address filter decides what is not ours: a VIP's packet passes
 * untouched once its address's bit is cleared by hand, and is forwarded
 * again when it is back; an address of no VIP that shares a VIP's bit
 * still passes (the index's search says no).
 */
TEST_F(lb, address_filter_passes_what_is_no_vips)
{
	static const int kinds[] = { K_TCP_IPIP4 };
	struct pkt_spec s, o;
	struct lb_res r;
	__u8 in[2048];
	unsigned int i, j;
	size_t len;
	__u32 h;
	int v;

	lb_for_each_vip(i, v, kinds) {
		lb_spec(&self->lb, v, &s);
		h = filter_bit(s.family, s.dst);
		EXPECT_TRUE(fwd_case(&self->lb, v, &s, "bit set", NULL));
		ASSERT_EQ(0, filter_write(&self->lb, h, false));
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_pass(in, len, &r, "bit cleared"));
		ASSERT_EQ(0, filter_write(&self->lb, h, true));
		EXPECT_TRUE(fwd_case(&self->lb, v, &s, "bit set again", NULL));

		/* an address of no VIP with the same bit */
		o = s;
		for (j = 1; j < (1u << 24); j++) {
			o.dst[s.family == XLB_FAMILY_INET ? 0 : 3] =
				htonl(0x0a630000u + j);		/* 10.99/16 + */
			if (filter_bit(o.family, o.dst) == h)
				break;
		}
		ASSERT_GT(1u << 24, j);
		len = lb_build(&o, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_pass(in, len, &r, "shares the VIP's bit"));
	}
}

TEST_F(lb, forward_gue_sport_in_range_and_same_per_flow)
{
	static const int kinds[] = {
		K_TCP_GUE4, K_TCP_GUE6, K_UDP_GUE4, K_UDP_GUE6, K_STATELESS,
	};
	struct pkt_outer o1, o2;
	struct pkt_spec s;
	unsigned int i, n;
	char what[64];
	int v;

	lb_for_each_vip(i, v, kinds) {
		__u16 first = 0;
		bool varies = false;

		for (n = 0; n < 16; n++) {
			lb_spec(&self->lb, v, &s);
			s.sport = (__u16)(20000 + n * 77);
			snprintf(what, sizeof(what), "flow %u packet 1", n);
			ASSERT_TRUE(fwd_case(&self->lb, v, &s, what, &o1));
			/* the same flow again (a connection table hit) */
			s.tcp_flags = PKT_TCP_ACK;
			s.seq = 2;
			snprintf(what, sizeof(what), "flow %u packet 2", n);
			ASSERT_TRUE(fwd_case(&self->lb, v, &s, what, &o2));
			EXPECT_LE(0xc000, o1.sport);
			EXPECT_EQ(o1.sport, o2.sport)
				TH_LOG("%s %s flow %u: GUE sport %u then %u",
				       lb_kind(v)->name,
				       lb_fam_name(lb_vip_family(v)), n,
				       o1.sport, o2.sport);
			if (!n)
				first = o1.sport;
			else if (o1.sport != first)
				varies = true;
		}
		EXPECT_TRUE(varies)
			TH_LOG("%s %s: 16 flows, one GUE sport %u: no entropy "
			       "for the backend's RSS", lb_kind(v)->name,
			       lb_fam_name(lb_vip_family(v)), first);
	}
}

TEST_F(lb, forward_keeps_vlan_tag)
{
	static const struct pkt_vlan tags[] = {
		{ PKT_ETH_8021Q, 0x2064 },	/* PCP 1, VID 100 */
		{ PKT_ETH_8021Q, 0x0ffe },	/* VID 4094 */
		{ PKT_ETH_8021AD, 0xe00a },
	};
	struct pkt_spec s;
	unsigned int i, t, ok = 0, total = 0;
	char what[64];
	int v;

	lb_for_each_vip(i, v, encap_kinds) {
		for (t = 0; t < LB_N(tags); t++) {
			lb_spec(&self->lb, v, &s);
			s.vlans = 1;
			s.vlan[0] = tags[t];
			s.sport = (__u16)(30000 + t);
			snprintf(what, sizeof(what), "tag %04x/%04x",
				 tags[t].tpid, tags[t].tci);
			ok += fwd_case(&self->lb, v, &s, what, NULL);
			total++;
		}
	}
	EXPECT_EQ(total, ok);
}

TEST_F(lb, forward_ipv4_options_inner_intact)
{
	static const int lens[] = { 4, 12, 40 };
	struct pkt_spec s;
	unsigned int ki, li, ok = 0, total = 0;
	char what[64];

	for (ki = 0; ki < LB_N(encap_kinds); ki++) {
		int v = lb_vip(XLB_FAMILY_INET, encap_kinds[ki]);

		for (li = 0; li < LB_N(lens); li++) {
			lb_spec(&self->lb, v, &s);
			/* NOPs, then a record-route option with room, EOL */
			memset(s.ip_opts, 1, sizeof(s.ip_opts));
			s.ip_opts_len = lens[li];
			if (lens[li] >= 12) {
				s.ip_opts[1] = 7;	/* RR */
				s.ip_opts[2] = 7;
				s.ip_opts[3] = 4;
				memset(s.ip_opts + 4, 0, 4);
			}
			s.ip_opts[lens[li] - 1] = 0;	/* EOL */
			s.sport = (__u16)(31000 + li);
			snprintf(what, sizeof(what), "%d option bytes",
				 lens[li]);
			ok += fwd_case(&self->lb, v, &s, what, NULL);
			total++;
		}
	}
	EXPECT_EQ(total, ok);
}

TEST_F(lb, forward_ipv6_extension_headers_inner_intact)
{
	static const struct {
		const char *name;
		int n;
		struct pkt_ext6 x[PKT_MAX_EXT];
	} chains[] = {
		{ "hop-by-hop", 1, { { .type = IPPROTO_HOPOPTS, .len8 = 0 } } },
		{ "routing", 1, { { .type = IPPROTO_ROUTING, .len8 = 2 } } },
		{ "dest opts", 1, { { .type = IPPROTO_DSTOPTS, .len8 = 1 } } },
		{ "hop, dst, routing, dst", 4, {
			{ .type = IPPROTO_HOPOPTS, .len8 = 0 },
			{ .type = IPPROTO_DSTOPTS, .len8 = 0 },
			{ .type = IPPROTO_ROUTING, .len8 = 0 },
			{ .type = IPPROTO_DSTOPTS, .len8 = 3 } } },
	};
	struct pkt_spec s;
	unsigned int ki, ci, ok = 0, total = 0;

	for (ki = 0; ki < LB_N(encap_kinds); ki++) {
		int v = lb_vip(XLB_FAMILY_INET6, encap_kinds[ki]);

		for (ci = 0; ci < LB_N(chains); ci++) {
			lb_spec(&self->lb, v, &s);
			s.n_ext = chains[ci].n;
			memcpy(s.ext, chains[ci].x, sizeof(s.ext));
			s.sport = (__u16)(32000 + ci);
			s.payload_len = 33;	/* odd: the GUE sum's tail */
			ok += fwd_case(&self->lb, v, &s, chains[ci].name, NULL);
			total++;
		}
	}
	EXPECT_EQ(total, ok);
}

TEST_F(lb, forward_port0_vip_takes_every_port)
{
	static const __u16 ports[] = { 1, 80, 443, 8080, 65535 };
	static const int kinds[] = { K_PORT0 };
	struct pkt_spec s;
	unsigned int i, pi, ok = 0, total = 0;
	char what[64];
	int v;

	lb_for_each_vip(i, v, kinds) {
		for (pi = 0; pi < LB_N(ports); pi++) {
			lb_spec(&self->lb, v, &s);
			s.dport = ports[pi];
			snprintf(what, sizeof(what), "port %u", ports[pi]);
			ok += fwd_case(&self->lb, v, &s, what, NULL);
			total++;
		}
	}
	EXPECT_EQ(total, ok);
}

TEST_F(lb, forward_each_hash_mode_to_explained_backend)
{
	static const int kinds[] = { K_TCP_IPIP4, K_3TUPLE, K_SRCHASH };
	__be32 first[4] = { 0 };
	struct pkt_outer o;
	struct pkt_spec s;
	unsigned int i, c;
	char what[64];
	int v;

	lb_for_each_vip(i, v, kinds) {
		/* the last address word: IPv4's only one, IPv6's lowest */
		int w = lb_vip_family(v) == XLB_FAMILY_INET ? 0 : 3;

		for (c = 0; c < 36; c++) {
			/* 6 clients (default + 0..5), 6 source ports each */
			lb_spec(&self->lb, v, &s);
			s.src[w] = htonl(ntohl(s.src[w]) + c / 6);
			s.sport = (__u16)(1024 + (c % 6) * 4099);
			snprintf(what, sizeof(what), "client %u port %u", c / 6,
				 s.sport);
			ASSERT_TRUE(fwd_case(&self->lb, v, &s, what, &o));
			if (c % 6 == 0 ||
			    lb_kind(v)->mode == XLB_HASH_5TUPLE)
				memcpy(first, o.dst, 16);
			/* without ports in the hash, ports cannot move it */
			EXPECT_EQ(0, memcmp(first, o.dst, 16))
				TH_LOG("%s: client %u, different backends by "
				       "source port", lb_kind(v)->name, c / 6);
		}
	}
}

TEST_F(lb, forward_outer_source_is_vip_override)
{
	static const int kinds[] = { K_OVERRIDE4, K_OVERRIDE6 };
	struct pkt_outer o;
	struct pkt_spec s;
	unsigned int i;
	__be32 want[4];
	int v;

	lb_for_each_vip(i, v, kinds) {
		lb_spec(&self->lb, v, &s);
		ASSERT_TRUE(fwd_case(&self->lb, v, &s, "override", &o));
		pkt_addr(o.family, o.family == XLB_FAMILY_INET ?
			 LB_OVERRIDE4 : LB_OVERRIDE6, want);
		EXPECT_EQ(0, memcmp(o.src, want, 16));
	}
}

TEST_F(lb, forward_ethernet_padding_not_tunnelled)
{
	static const int kinds[] = { K_UDP_IPIP4, K_UDP_GUE6, K_TCP_GUE6 };
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	unsigned int i;
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct xlb_flow f;

		lb_spec(&self->lb, v, &s);
		s.payload_len = 1;
		len = lb_build(&s, in);
		ASSERT_NE(0, len);
		/* pad to the Ethernet minimum, then a 4-byte trailer */
		memset(in + len, 0xee, 64);
		len = (len < 60 ? 60 : len) + 4;
		f = lb_flow(&s);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_fwd(&self->lb, v, &f, in, len, &r,
					  LB_EXPLAIN, "padded frame", NULL));
	}
}

/*
 * The GUE over IPv6 UDP checksum must verify whatever the inner packet
 * holds: the program derives it from the inner checksum when that one is
 * right, so packets whose own checksum is wrong or absent are the test.
 */
TEST_F(lb, forward_gue6_checksum_valid_whatever_inner_checksum)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const struct {
		int kind;
		int off;	/* of the checksum in the transport header */
		bool zero;	/* else off by one */
		const char *name;
	} cases[] = {
		{ K_TCP_GUE6, 16, false, "TCP, bad checksum" },
		{ K_TCP_GUE6, 16, true, "TCP, checksum 0" },
		{ K_UDP_GUE6, 6, false, "UDP, bad checksum" },
		/* no checksum: RFC 768, and RFC 6936 for IPv6 tunnels */
		{ K_UDP_GUE6, 6, true, "UDP, checksum 0" },
	};
	struct pkt_spec s;
	unsigned int i, ok = 0, total = 0;
	char what[96];

	for (i = 0; i < 2 * LB_N(cases); i++) {
		int c = (int)(i % LB_N(cases));
		int fam = lb_families[i / LB_N(cases)];
		int v = lb_vip(fam, cases[c].kind);
		struct xlb_flow f;
		size_t len, sum;

		lb_spec(&self->lb, v, &s);
		s.sport = (__u16)(33000 + c);
		len = lb_build(&s, in);
		sum = pkt_l2_len(&s) + cases[c].off +
		      (fam == XLB_FAMILY_INET ? PKT_IP4_LEN : PKT_IP6_LEN);
		if (cases[c].zero)
			in[sum] = in[sum + 1] = 0;
		else
			in[sum + 1] ^= 1;
		f = lb_flow(&s);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s [%s client]", cases[c].name,
			 lb_fam_name(fam));
		ok += lb_expect_fwd(&self->lb, v, &f, in, len, &r, LB_EXPLAIN,
				    what, NULL);
		total++;
	}
	EXPECT_EQ(total, ok);
}

/* --- not for a VIP: XDP_PASS, byte for byte (contract 7) ------------------ */

struct raw_case {
	const char *name;
	__u8 f[LB_BUF];
	size_t len;
};

static void raw_from_spec(struct raw_case *c, const char *name,
			  const struct pkt_spec *s)
{
	c->name = name;
	c->len = lb_build(s, c->f);
}

TEST_F(lb, non_vip_traffic_passes_byte_identical)
{
	static struct raw_case cases[48];
	static struct lb_res r;
	static const __u8 arp[28] = {
		0, 1, 8, 0, 6, 4, 0, 1,			/* request */
		2, 0, 0, 0, 0, 1, 192, 0, 2, 1,		/* sender */
		0, 0, 0, 0, 0, 0, 198, 51, 100, 10,	/* target: the VIP */
	};
	__u8 nd[24];
	struct pkt_spec s;
	int n = 0, i, fi;

	for (fi = 0; fi < 2; fi++) {
		int fam = lb_families[fi];
		int v = lb_vip(fam, K_TCP_IPIP4);
		bool v4 = fam == XLB_FAMILY_INET;

		lb_spec(&self->lb, v, &s);
		pkt_addr(fam, v4 ? "198.51.100.99" : "2001:db8:1::99", s.dst);
		raw_from_spec(&cases[n++], v4 ? "TCP to another IPv4 address" :
			      "TCP to another IPv6 address", &s);

		lb_spec(&self->lb, v, &s);
		s.dport = 9999;
		raw_from_spec(&cases[n++], "TCP to a VIP address, other port",
			      &s);
		lb_spec(&self->lb, v, &s);
		s.proto = IPPROTO_UDP;
		s.dport = 80;
		raw_from_spec(&cases[n++], "UDP to a TCP-only VIP port", &s);
		lb_spec(&self->lb, lb_vip(fam, K_PORT0), &s);
		s.proto = IPPROTO_UDP;
		raw_from_spec(&cases[n++], "UDP to a TCP port-0 VIP address",
			      &s);
		lb_spec(&self->lb, lb_vip(fam, K_SRCHASH), &s);
		s.dport = 81;
		raw_from_spec(&cases[n++], "TCP to a source-hash VIP address, "
			      "other port", &s);

		lb_spec(&self->lb, v, &s);
		s.proto = 132;			/* SCTP */
		raw_from_spec(&cases[n++], "SCTP to a VIP address", &s);
		s.proto = 47;			/* GRE */
		raw_from_spec(&cases[n++], "GRE to a VIP address", &s);
		s.proto = 50;			/* ESP */
		raw_from_spec(&cases[n++], "ESP to a VIP address", &s);

		lb_spec(&self->lb, v, &s);
		s.proto = v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
		s.icmp_rest = 0x1234 << 16 | 1;
		/* echo requests are answered: icmp_echo_to_vip_answered */
		s.icmp_type = v4 ? 0 : 129;
		raw_from_spec(&cases[n++], "ICMP echo reply to a VIP", &s);

		/*
		 * TCP and UDP to another address leave at the address
		 * filter before their ports are read; these would otherwise
		 * take the general path (a FIN, an RST), or the flow cache
		 * (UDP)
		 */
		lb_spec(&self->lb, v, &s);
		pkt_addr(fam, v4 ? "198.51.100.99" : "2001:db8:1::99", s.dst);
		s.tcp_flags = PKT_TCP_FIN | PKT_TCP_ACK;
		raw_from_spec(&cases[n++], "TCP FIN to another address", &s);
		s.tcp_flags = PKT_TCP_RST;
		raw_from_spec(&cases[n++], "TCP RST to another address", &s);
		s.tcp_flags = PKT_TCP_ACK;
		s.proto = IPPROTO_UDP;
		raw_from_spec(&cases[n++], "UDP to another address", &s);

		/* a malformed packet to another address is not ours either */
		lb_spec(&self->lb, v, &s);
		pkt_addr(fam, v4 ? "198.51.100.99" : "2001:db8:1::99", s.dst);
		raw_from_spec(&cases[n], "cut packet to another address", &s);
		cases[n].len -= 10;
		n++;
	}

	/* IPv6 neighbour discovery for the VIP address */
	lb_spec(&self->lb, lb_vip(XLB_FAMILY_INET6, K_TCP_IPIP4), &s);
	s.proto = IPPROTO_ICMPV6;
	s.ttl = 255;
	s.icmp_type = 135;			/* neighbour solicitation */
	s.icmp_rest = 0;
	memset(nd, 0, sizeof(nd));
	memcpy(nd, self->lb.key[lb_vip(XLB_FAMILY_INET6, K_TCP_IPIP4)].addr,
	       16);
	nd[16] = 1;		/* option: source link-layer address */
	nd[17] = 1;
	nd[18] = 2;
	nd[23] = 1;
	s.payload = nd;
	s.payload_len = sizeof(nd);
	pkt_addr(6, "ff02::1:ff00:10", s.dst);
	raw_from_spec(&cases[n++], "ND neighbour solicitation, multicast", &s);
	memcpy(s.dst, nd, 16);
	raw_from_spec(&cases[n++], "ND neighbour solicitation to the VIP", &s);
	s.icmp_type = 136;			/* neighbour advertisement */
	s.icmp_rest = 0x60000000;
	pkt_addr(6, "2001:db8::1", s.dst);
	memcpy(s.src, nd, 16);
	raw_from_spec(&cases[n++], "ND neighbour advertisement from the VIP",
		      &s);

	/* not IP at all */
	pkt_spec_init(&s, 0, 0);
	s.ethertype = PKT_ETH_ARP;
	s.payload = arp;
	s.payload_len = sizeof(arp);
	memset(s.dst_mac, 0xff, 6);
	raw_from_spec(&cases[n++], "ARP request for the VIP", &s);
	s.ethertype = 0x88cc;			/* LLDP */
	raw_from_spec(&cases[n++], "LLDP", &s);

	/* Ethernet cut short (BPF_PROG_TEST_RUN takes no frame under 14) */
	pkt_spec_init(&s, 0, 0);
	s.ethertype = PKT_ETH_IP;
	raw_from_spec(&cases[n++], "IPv4 ethertype, no IP header", &s);
	s.ethertype = PKT_ETH_IPV6;
	raw_from_spec(&cases[n++], "IPv6 ethertype, no IP header", &s);
	s.ethertype = PKT_ETH_8021Q;
	s.payload = "\x00\x64\x08";
	for (i = 0; i < 4; i++) {
		s.payload_len = (size_t)i;
		raw_from_spec(&cases[n], "802.1Q tag cut short", &s);
		n++;
	}

	ASSERT_GE(sizeof(cases) / sizeof(cases[0]), (size_t)n);
	for (i = 0; i < n; i++) {
		ASSERT_NE(0, cases[i].len)
			TH_LOG("test bug: %s", cases[i].name);
		lb_run(&self->lb, cases[i].f, cases[i].len, &r);
		EXPECT_TRUE(lb_expect_pass(cases[i].f, cases[i].len, &r,
					   cases[i].name));
		EXPECT_EQ(1, r.act[XDP_PASS]);
	}
	TH_LOG("%d frames", n);
}

/* --- ICMP errors about VIP flows ------------------------------------------ */

/*
 * An ICMP error from a router on the path client <- backend: it quotes
 * the backend's packet VIP:port -> client:cport and is addressed to the
 * VIP (the quoted packet's source).
 */
static void icmp_error_spec(const struct lb *lb, int v, struct pkt_spec *q,
			    struct pkt_spec *e, __u8 type, __u8 code,
			    __u32 rest, const struct pkt_spec *client)
{
	int fam = lb_vip_family(v);
	bool v4 = fam == XLB_FAMILY_INET;

	*q = *client;
	memcpy(q->src, client->dst, 16);
	memcpy(q->dst, client->src, 16);
	q->sport = client->dport;
	q->dport = client->sport;
	q->tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK;
	q->payload_len = 200;

	pkt_spec_init(e, fam, v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6);
	pkt_addr(fam, v4 ? "192.0.2.254" : "2001:db8:ffff::fe", e->src);
	memcpy(e->dst, client->dst, 16);
	e->icmp_type = type;
	e->icmp_code = code;
	e->icmp_rest = rest;
	e->quote = q;
	e->payload = NULL;
	e->payload_len = 0;
}

static const int icmp_kinds[] = {
	K_TCP_IPIP4, K_TCP_IPIP6, K_TCP_GUE4, K_TCP_GUE6, K_UDP_GUE6,
	K_3TUPLE, K_PORT0, K_STATELESS,
};

TEST_F(lb, icmp_error_steered_to_flow_backend)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec c, q, e;
	unsigned int i, n;
	char what[96];
	int v;

	lb_for_each_vip(i, v, icmp_kinds) {
		bool v4 = lb_vip_family(v) == XLB_FAMILY_INET;

		for (n = 0; n < 4; n++) {
			struct xlb_flow f;
			size_t len;

			lb_spec(&self->lb, v, &c);
			c.sport = (__u16)(45000 + n * 313);
			/* frag needed, MTU 1400 / packet too big, 1280 */
			icmp_error_spec(&self->lb, v, &q, &e, v4 ? 3 : 2,
					v4 ? 4 : 0, v4 ? 1400 : 1280, &c);
			/* short quotes too: IP header + 8 bytes */
			if (n & 1)
				e.quote_len = v4 ? 28 : 48;
			len = lb_build(&e, in);
			ASSERT_NE(0, len);
			f = lb_flow(&c);	/* the client's flow */
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "%s quoting %s flow %u%s",
				 v4 ? "frag needed" : "packet too big",
				 lb_kind(v)->name, n,
				 n & 1 ? " (short quote)" : "");
			EXPECT_TRUE(lb_expect_fwd(&self->lb, v, &f, in, len,
						  &r, LB_EXPLAIN, what, NULL));
			EXPECT_EQ(1, r.ev[XLB_EV_ICMP_STEERED]);
		}
	}
}

/*
 * With a connection entry, the ICMP error goes where the connection is,
 * also after a table change moved the flow's slot elsewhere.
 */
TEST_F(lb, icmp_error_follows_connection_entry)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const int kinds[] = {
		K_TCP_IPIP4, K_TCP_IPIP6, K_TCP_GUE4, K_TCP_GUE6,
	};
	struct pkt_spec c, q, e;
	struct xlb_ct ct;
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds) {
		bool v4 = lb_vip_family(v) == XLB_FAMILY_INET;
		struct xlb_flow f;
		size_t len;

		lb_spec(&self->lb, v, &c);
		f = lb_flow(&c);
		len = lb_build(&c, in);
		lb_run(&self->lb, in, len, &r);
		ASSERT_TRUE(lb_expect_fwd(&self->lb, v, &f, in, len, &r,
					  LB_EXPLAIN, "SYN", NULL));
		ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
		/* backends 4..7 only: every slot has a new owner */
		ASSERT_EQ(0, lb_publish(&self->lb, v, 4, 4, LB_M_SMALL));
		ASSERT_NE(ct.backend, lb_pick(&self->lb, v, &f).primary);

		/* frag needed / ICMPv6 port unreachable */
		icmp_error_spec(&self->lb, v, &q, &e, v4 ? 3 : 1, 4,
				v4 ? 1400 : 0, &c);
		len = lb_build(&e, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_fwd(&self->lb, v, &f, in, len, &r,
					  ct.backend,
					  "ICMP error after a table change",
					  NULL));
	}
}

/*
 * An echo request to a VIP address is answered by the LB: the reply is
 * the frame pkt_build makes of the request turned around (MACs and
 * addresses swapped, TTL / hop limit 64, echo reply, every checksum
 * computed from scratch), counted as icmp_echo.  Requests it must not
 * answer pass untouched: to another address, from a multicast or
 * broadcast source, fragments, a code other than 0.
 */
TEST_F(lb, icmp_echo_to_vip_answered)
{
	static const int kinds[] = { K_TCP_IPIP4, K_PORT0, K_UDP_GUE4 };
	static const __u8 opts[4] = { 1, 1, 1, 0 };
	static __u8 in[LB_BUF], want[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s, w;
	unsigned int i, c, n = 0;
	char what[128];
	size_t len, wlen;
	int v;

	lb_for_each_vip(i, v, kinds) {
		bool v4 = lb_vip_family(v) == XLB_FAMILY_INET;

		for (c = 0; c < 4; c++) {
			lb_spec(&self->lb, v, &s);
			s.proto = v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
			s.icmp_type = v4 ? 8 : 128;
			s.icmp_code = 0;
			s.icmp_rest = (0x4242 + c) << 16 | (c + 1);
			s.payload = lb_pattern();
			s.payload_len = c == 0 ? 0 : 56 + c;
			if (c == 2) {
				s.vlans = 1;
				s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 7 };
			}
			if (c == 3 && v4) {
				memcpy(s.ip_opts, opts, sizeof(opts));
				s.ip_opts_len = sizeof(opts);
			}
			w = s;
			memcpy(w.dst_mac, s.src_mac, 6);
			memcpy(w.src_mac, s.dst_mac, 6);
			memcpy(w.src, s.dst, 16);
			memcpy(w.dst, s.src, 16);
			w.ttl = XLB_TTL_DEFAULT;
			w.icmp_type = v4 ? 0 : 129;
			len = lb_build(&s, in);
			wlen = lb_build(&w, want);
			ASSERT_NE(0, len);
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "echo request %u [VIP %s, "
				 "%s]", c, lb_kind(v)->name, v4 ? "IPv4" : "IPv6");
			EXPECT_TRUE(!r.err && r.retval == XDP_TX &&
				    r.len == wlen && !memcmp(r.out, want, wlen) &&
				    r.ev[XLB_EV_ICMP_ECHO] == 1)
				lb_report(what, "want the echo reply, XDP_TX, "
					  "icmp_echo once", in, len, &r);
			n++;
		}
	}
	TH_LOG("%u echo requests answered", n);

	lb_for_each_vip(i, v, kinds) {
		bool v4 = lb_vip_family(v) == XLB_FAMILY_INET;

		for (c = 0; c < 5; c++) {
			const char *name[] = { "to another address",
				"from a multicast source", "a fragment",
				"code 1", "from a group MAC" };

			lb_spec(&self->lb, v, &s);
			s.proto = v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
			s.icmp_type = v4 ? 8 : 128;
			s.icmp_rest = 0x4242 << 16 | 1;
			if (c == 0)
				pkt_addr(v4 ? 4 : 6, v4 ? "198.51.100.99" :
					 "2001:db8:1::99", s.dst);
			if (c == 1)
				pkt_addr(v4 ? 4 : 6, v4 ? "224.0.0.1" :
					 "ff02::1", s.src);
			if (c == 2 && v4) {
				s.mf = true;
				s.ip_id = 7;
			}
			if (c == 2 && !v4) {
				s.n_ext = 1;
				s.ext[0] = (struct pkt_ext6){
					.type = IPPROTO_FRAGMENT, .more = true,
					.frag_id = 7 };
			}
			if (c == 3)
				s.icmp_code = 1;
			if (c == 4)
				s.src_mac[0] |= 1;
			len = lb_build(&s, in);
			ASSERT_NE(0, len);
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "echo request %s [VIP %s, "
				 "%s]", name[c], lb_kind(v)->name,
				 v4 ? "IPv4" : "IPv6");
			EXPECT_TRUE(lb_expect_pass(in, len, &r, what));
			EXPECT_EQ(0, r.ev[XLB_EV_ICMP_ECHO]) TH_LOG("%s", what);
		}
	}
}

TEST_F(lb, icmp_other_types_pass_untouched)
{
	static const struct {
		int fam;
		__u8 type, code;
		const char *name;
	} types[] = {
		{ 4, 11, 0, "time exceeded" },
		{ 4, 12, 0, "parameter problem" },
		{ 4, 5, 1, "redirect" },
		{ 4, 4, 0, "source quench" },
		{ 4, 0, 0, "echo reply" },
		{ 6, 3, 0, "ICMPv6 time exceeded" },
		{ 6, 4, 0, "ICMPv6 parameter problem" },
		{ 6, 129, 0, "ICMPv6 echo reply" },
		{ 6, 137, 0, "ICMPv6 redirect" },
	};
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec c, q, e;
	unsigned int t;

	for (t = 0; t < LB_N(types); t++) {
		int v = lb_vip(types[t].fam, K_TCP_IPIP4);
		size_t len;

		lb_spec(&self->lb, v, &c);
		icmp_error_spec(&self->lb, v, &q, &e, types[t].type,
				types[t].code, 0, &c);
		len = lb_build(&e, in);
		ASSERT_NE(0, len);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_pass(in, len, &r, types[t].name));
	}
}

/*
 * Contract 7: an ICMP error addressed to another host (here the LB's own
 * address, and some other one) is not for a VIP even when it quotes a VIP
 * flow; it must reach the stack untouched.
 */
TEST_F(lb, icmp_error_to_other_address_passes)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const int kinds[] = { K_TCP_IPIP4 };
	struct pkt_spec c, q, e;
	unsigned int i, d;
	int v;

	lb_for_each_vip(i, v, kinds) {
		int fam = lb_vip_family(v);
		bool v4 = fam == XLB_FAMILY_INET;

		for (d = 0; d < 2; d++) {
			size_t len;

			lb_spec(&self->lb, v, &c);
			icmp_error_spec(&self->lb, v, &q, &e, v4 ? 3 : 2,
					v4 ? 4 : 0, 1400, &c);
			pkt_addr(fam, d ? (v4 ? LB_SRC4 : LB_SRC6) :
				 (v4 ? "198.51.100.99" : "2001:db8:1::99"),
				 e.dst);
			len = lb_build(&e, in);
			lb_run(&self->lb, in, len, &r);
			EXPECT_TRUE(lb_expect_pass(in, len, &r, d ?
				"ICMP error to the LB, quoting a VIP flow" :
				"ICMP error to a host, quoting a VIP flow"));
		}
	}
}

/* --- too big for the tunnel ---------------------------------------------- */

/* A TCP packet to VIP v of exactly ip_len bytes. */
static size_t sized_packet(const struct lb *lb, int v, size_t ip_len,
			   int vlans, struct pkt_spec *s, __u8 *in)
{
	size_t hdr;

	lb_spec(lb, v, s);
	s->tcp_flags = PKT_TCP_ACK;
	s->df = true;
	if (vlans) {
		s->vlans = 1;
		s->vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 0x0123 };
	}
	hdr = (s->family == XLB_FAMILY_INET ? PKT_IP4_LEN : PKT_IP6_LEN) +
	      PKT_TCP_LEN;
	s->payload_len = ip_len - hdr;
	return lb_build(s, in);
}

/*
 * The ICMP answer to a packet too big for the tunnel: back to the client
 * (Ethernet swapped, tags kept, from the VIP), frag needed / packet too
 * big with the MTU the client must use, checksums right (pkt_parse), the
 * quote the start of the original IP packet.
 */
static bool expect_too_big(const struct lb *lb, const struct pkt_spec *s,
			   const __u8 *in, size_t len, const struct lb_res *r,
			   __u32 mtu, const char *what)
{
	bool v4 = s->family == XLB_FAMILY_INET;
	size_t l3 = pkt_l2_len(s), minq = v4 ? 28 : 48;
	struct pkt_info pi;
	char why[192];

	if (r->err || r->retval != XDP_TX) {
		snprintf(why, sizeof(why), "want XDP_TX with an ICMP answer");
		goto fail;
	}
	if (pkt_parse(r->out, r->len, &pi)) {
		snprintf(why, sizeof(why), "pkt_parse: %s", pi.err);
		goto fail;
	}
	if (memcmp(pi.l2.dst_mac, s->src_mac, 6) ||
	    memcmp(pi.l2.src_mac, s->dst_mac, 6)) {
		snprintf(why, sizeof(why), "Ethernet addresses not swapped");
		goto fail;
	}
	if (pi.l2.vlans != s->vlans ||
	    (s->vlans && (pi.l2.vlan[0].tci != s->vlan[0].tci ||
			  pi.l2.vlan[0].tpid != s->vlan[0].tpid))) {
		snprintf(why, sizeof(why), "VLAN tag not kept");
		goto fail;
	}
	if (pi.family != s->family || memcmp(pi.src, s->dst, 16) ||
	    memcmp(pi.dst, s->src, 16)) {
		snprintf(why, sizeof(why), "not IPv%d from the VIP to the "
			 "client", s->family);
		goto fail;
	}
	if (v4 ? pi.proto != IPPROTO_ICMP || pi.icmp_type != 3 ||
		 pi.icmp_code != 4 || pi.icmp_rest != mtu :
		 pi.proto != IPPROTO_ICMPV6 || pi.icmp_type != 2 ||
		 pi.icmp_code != 0 || pi.icmp_rest != mtu) {
		snprintf(why, sizeof(why), "proto %u type %u code %u rest %u, "
			 "want %s with MTU %u", pi.proto, pi.icmp_type,
			 pi.icmp_code, pi.icmp_rest, v4 ? "ICMP 3/4" :
			 "ICMPv6 2/0", mtu);
		goto fail;
	}
	if (pi.payload_len < minq || pi.payload_len > len - l3 ||
	    memcmp(r->out + pi.payload_off, in + l3, pi.payload_len) ||
	    (v4 ? pi.l4_off - pi.l3_off + pi.l4_len > 576 :
		  pi.l4_off - pi.l3_off + pi.l4_len > 1280)) {
		snprintf(why, sizeof(why), "quote of %zu bytes is not the "
			 "start of the original packet (or too long)",
			 pi.payload_len);
		goto fail;
	}
	if (r->ev[XLB_EV_TOO_BIG] != 1) {
		snprintf(why, sizeof(why), "too_big counted %llu times",
			 (unsigned long long)r->ev[XLB_EV_TOO_BIG]);
		goto fail;
	}
	return true;
fail:
	lb_report(what, why, in, len, r);
	return false;
}

/* Packets of VIP v: at the limit forwarded, above it answered. */
static bool too_big_case(struct lb *lb, int v, int vlans)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	const struct xlb_backend *b = &lb->be[lb_id(lb_kind(v)->group, 0)];
	size_t limit = LB_MTU - lb_overhead(b), len, sizes[2];
	struct pkt_spec s;
	struct xlb_flow f;
	char what[128];
	bool ok = true;
	int i;

	/* exactly at the limit: forwarded, the outer packet MTU bytes */
	len = sized_packet(lb, v, limit, vlans, &s, in);
	f = lb_flow(&s);
	lb_run(lb, in, len, &r);
	snprintf(what, sizeof(what), "%s %s: %zu bytes, the limit%s",
		 lb_kind(v)->name, lb_fam_name(s.family), limit,
		 vlans ? ", tagged" : "");
	ok &= lb_expect_fwd(lb, v, &f, in, len, &r, LB_EXPLAIN, what, NULL);
	ok &= r.len == LB_MTU + pkt_l2_len(&s) && !r.ev[XLB_EV_TOO_BIG];

	/* one byte more, and a full-size packet */
	sizes[0] = limit + 1;
	sizes[1] = LB_MTU;
	for (i = 0; i < 2; i++) {
		len = sized_packet(lb, v, sizes[i], vlans, &s, in);
		lb_run(lb, in, len, &r);
		snprintf(what, sizeof(what), "%s %s: %zu bytes%s",
			 lb_kind(v)->name, lb_fam_name(s.family), sizes[i],
			 vlans ? ", tagged" : "");
		ok &= expect_too_big(lb, &s, in, len, &r, (__u32)limit, what);
	}
	return ok;
}

TEST_F(lb, too_big_answered_with_icmp_and_limit_forwarded)
{
	static const int kinds[] = {
		K_TCP_IPIP4, K_TCP_IPIP6, K_TCP_GUE4, K_TCP_GUE6,
	};
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds) {
		EXPECT_TRUE(too_big_case(&self->lb, v, 0));
		EXPECT_TRUE(too_big_case(&self->lb, v, 1));
	}
}

TEST_HARNESS_MAIN
