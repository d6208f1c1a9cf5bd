// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data path (bpf/xlb.bpf.c) through BPF_PROG_TEST_RUN, part 3:
 * many packets.
 *   - equivalence: for 100000 random flows the program picks the backend
 *     libxlb's xlb_explain_pick names (docs/design.md contracts 1 and 2);
 *   - atomic publication: while tables are republished as fast as
 *     possible, every packet sees the whole old or the whole new table
 *     (contract 4), tables of another size swapped in and tables of the
 *     same size rewritten in place alike;
 *   - malformed input: cut, inconsistent, random and bit-flipped frames
 *     get a clear answer (contract 8).
 * Fixture and expectations: tests/bpf/lb_fixture.h.
 */
#include <pthread.h>

#include "kselftest_harness.h"

#include "lb_fixture.h"
#include "mono.h"

#define EQ_FLOWS	100000
#define EQ_SEED		0x786c622d65717576ULL	/* "xlb-equv" */
#define PUB_SECONDS	2.0	/* at least, and at least PUB_MIN publications */
#define PUB_MIN		12
#define PUB_MAX_SECONDS	60.0	/* a slow guest (TCG) gets this long */
#define PUB_SEED	0x786c622d7075626cULL	/* "xlb-publ" */
#define FUZZ_PACKETS	100000
#define FUZZ_SEED	0x786c622d66757a7aULL	/* "xlb-fuzz" */

static void flow_str(const struct xlb_flow *f, char *s, size_t n)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	lb_addr_str(f->family, f->src.v6, a, sizeof(a));
	lb_addr_str(f->family, f->dst.v6, b, sizeof(b));
	snprintf(s, n, "IPv%u proto %u %s%s%s:%u -> %s%s%s:%u", f->family,
		 f->proto, f->family == 6 ? "[" : "", a,
		 f->family == 6 ? "]" : "", ntohs(f->sport),
		 f->family == 6 ? "[" : "", b, f->family == 6 ? "]" : "",
		 ntohs(f->dport));
}

/* A random client flow of VIP v: random source and port, v's dst/proto. */
static void rand_vip_flow(const struct lb *lb, struct xlb_rand *rnd, int v,
			  struct xlb_flow *f, struct pkt_spec *s)
{
	const struct lb_kind_def *k = lb_kind(v);
	int fam = lb_vip_family(v);

	xlb_rand_flow(rnd, f, fam);
	memcpy(f->dst.v6, lb->key[v].addr, 16);
	f->proto = k->proto;
	if (k->port)
		f->dport = htons(k->port);
	pkt_spec_init(s, fam, k->proto);
	memcpy(s->src, f->src.v6, 16);
	memcpy(s->dst, f->dst.v6, 16);
	s->sport = ntohs(f->sport);
	s->dport = ntohs(f->dport);
	s->payload = lb_pattern();
	s->payload_len = 8;
}

/* --- equivalence with xlb_explain_pick ------------------------------------ */

/*
 * flows random flows, IPv4 and IPv6 by turns, to the VIPs of kind:
 * every one must go to explain's primary (and, GUE, with explain's
 * hop list).  Stops at the first mismatch, which it prints in full.
 */
static bool equivalence(struct lb *lb, int kind, unsigned long flows,
			__u64 seed, unsigned long *done)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_rand rnd = { .s = seed };
	struct pkt_spec s;
	struct xlb_flow f;
	unsigned long n;
	char fs[160], what[512];

	for (n = 0; n < flows; n++) {
		int v = lb_vip(n & 1 ? XLB_FAMILY_INET6 : XLB_FAMILY_INET,
			       kind);
		struct xlb_pick p;
		size_t len;

		rand_vip_flow(lb, &rnd, v, &f, &s);
		len = lb_build(&s, in);
		lb_run_c(lb, in, len, &r, false);
		if (lb_expect_fwd(lb, v, &f, in, len, &r, LB_EXPLAIN,
				  "equivalence", NULL))
			continue;
		p = lb_pick(lb, v, &f);
		flow_str(&f, fs, sizeof(fs));
		snprintf(what, sizeof(what), "first mismatch: flow %lu of VIP "
			 "%s: %s; explain: hash %08x slot %u of %u primary %u "
			 "secondary %u", n, lb_kind(v)->name, fs, p.hash,
			 p.slot, lb->tbl[v].size, p.primary, p.secondary);
		fprintf(stderr, "# %s\n", what);
		*done = n;
		return false;
	}
	*done = n;
	return true;
}

TEST_F(lb, equivalence_stateless_vip_matches_explain)
{
	unsigned long done;

	EXPECT_TRUE(equivalence(&self->lb, K_STATELESS, EQ_FLOWS, EQ_SEED,
				&done));
	TH_LOG("%lu flows (IPv4 and IPv6), M %u, GUE hop lists included",
	       done, self->lb.tbl[lb_vip(4, K_STATELESS)].size);
}

TEST_F(lb, equivalence_stateful_vip_flushed_matches_explain)
{
	unsigned long done;
	__u32 n;

	ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &n));
	ASSERT_EQ(0, n);
	EXPECT_TRUE(equivalence(&self->lb, K_TCP_IPIP4, EQ_FLOWS,
				EQ_SEED + 1, &done));
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &n));
	TH_LOG("%lu flows (IPv4 and IPv6), M %u, %u connection entries after",
	       done, self->lb.tbl[lb_vip(4, K_TCP_IPIP4)].size, n);
}

/* --- atomic publication -------------------------------------------------- */

struct publisher {
	struct xlb_dp dp;		/* own copy: publish writes to it */
	int vip;
	const struct xlb_table *t[2];
	volatile int stop;		/* set by the publisher when done */
	unsigned long published;
	double seconds;			/* the publishing lasted */
	char err[160];
};

/* Publish the next of the two tables. */
static int publish_one(struct publisher *pub)
{
	struct xlb_err err;

	if (xlb_dp_table_publish(&pub->dp, (__u32)pub->vip,
				 pub->t[pub->published & 1], &err)) {
		snprintf(pub->err, sizeof(pub->err), "%.150s", err.msg);
		return -1;
	}
	lb_note_pub(pub->t[pub->published & 1]->size, (__u32)pub->vip);
	pub->published++;
	return 0;
}

static void *publish_loop(void *arg)
{
	struct publisher *pub = arg;
	double start = xlb_mono_s(), now = start;

	while ((now - start < PUB_SECONDS || pub->published < PUB_MIN) &&
	       now - start < PUB_MAX_SECONDS && !publish_one(pub))
		now = xlb_mono_s();
	pub->seconds = now - start;
	__atomic_store_n(&pub->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * T1, T2 alternately published while packets run: every packet goes to
 * T1's or T2's primary of its flow.  Of sizes m1, m2: another size swaps
 * in a new table map (and index); the same size is rewritten in place.
 */
static void publication_under_traffic(struct __test_metadata *_metadata,
				      struct lb *lb, __u32 m1, __u32 m2)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	int v = lb_vip(XLB_FAMILY_INET, K_ATOMIC);
	struct xlb_rand rnd = { .s = PUB_SEED };
	struct xlb_table t1, t2;
	struct publisher pub;
	unsigned long packets = 0, by[2] = { 0, 0 }, bad = 0;
	struct pkt_outer o;
	pthread_t th;
	char fs[160];

	/* T1 over backends 0..3, T2 over 4..7 */
	ASSERT_EQ(0, lb_table(lb, v, 0, 4, m1, &t1));
	ASSERT_EQ(0, lb_table(lb, v, 4, 4, m2, &t2));
	memset(&pub, 0, sizeof(pub));
	pub.dp = lb->dp;
	pub.vip = v;
	pub.t[0] = &t1;
	pub.t[1] = &t2;
	/* T1 before any packet (not the fixture's table); the thread goes on */
	ASSERT_EQ(0, publish_one(&pub));
	ASSERT_EQ(0, pthread_create(&th, NULL, publish_loop, &pub));

	while (!__atomic_load_n(&pub.stop, __ATOMIC_ACQUIRE)) {
		struct xlb_flow f;
		struct pkt_spec s;
		const struct xlb_backend *b1, *b2;
		size_t len;

		rand_vip_flow(lb, &rnd, v, &f, &s);
		len = lb_build(&s, in);
		lb_run_c(lb, in, len, &r, false);
		packets++;
		b1 = &lb->be[lb_pick_in(lb, v, &t1, &f).primary];
		b2 = &lb->be[lb_pick_in(lb, v, &t2, &f).primary];
		if (!r.err && r.retval == XDP_TX &&
		    !pkt_parse_outer(r.out, r.len, &o)) {
			if (!memcmp(o.dst, b1->addr, 16)) {
				by[0]++;
				continue;
			}
			if (!memcmp(o.dst, b2->addr, 16)) {
				by[1]++;
				continue;
			}
		}
		if (!bad++) {
			char a[INET6_ADDRSTRLEN], w1[INET6_ADDRSTRLEN],
			     w2[INET6_ADDRSTRLEN], why[512];

			flow_str(&f, fs, sizeof(fs));
			lb_addr_str(o.family, o.dst, a, sizeof(a));
			lb_addr_str(b1->family, b1->addr, w1, sizeof(w1));
			lb_addr_str(b2->family, b2->addr, w2, sizeof(w2));
			snprintf(why, sizeof(why), "%s went to %s, want "
				 "T1's %s or T2's %s", fs, a, w1, w2);
			lb_report("publication", why, in, len, &r);
		}
	}
	pthread_join(th, NULL);
	xlb_table_free(&t1);
	xlb_table_free(&t2);
	EXPECT_STREQ("", pub.err);
	EXPECT_EQ(0, bad) TH_LOG("%lu of %lu packets went to neither T1's nor "
				 "T2's primary", bad, packets);
	EXPECT_LE(PUB_MIN, pub.published);
	EXPECT_LT(0, by[0]);
	EXPECT_LT(0, by[1]);
	TH_LOG("%lu packets (%lu by T1, %lu by T2) during %lu publications in "
	       "%.1f s", packets, by[0], by[1], pub.published, pub.seconds);
}

TEST_F(lb, publication_atomic_under_traffic)
{
	publication_under_traffic(_metadata, &self->lb, 4093, 8191);
}

TEST_F(lb, publication_in_place_under_traffic)
{
	publication_under_traffic(_metadata, &self->lb, 4093, 4093);
}

/* --- malformed input ------------------------------------------------------ */

struct base {
	const char *name;
	int vip;
	__u8 f[LB_BUF];
	size_t len;
	size_t l3_off;
};

/* Valid VIP packets of every kind the data path handles. */
static int make_bases(const struct lb *lb, struct base *b)
{
	static const struct pkt_ext6 hop = { .type = IPPROTO_HOPOPTS };
	static const struct pkt_ext6 dst = { .type = IPPROTO_DSTOPTS,
					     .len8 = 1 };
	struct pkt_spec s, q, e;
	int n = 0, i;

#define BASE(nm, vp) do {					\
		b[n].name = (nm);				\
		b[n].vip = (vp);				\
		b[n].len = lb_build(&s, b[n].f);		\
		b[n].l3_off = pkt_l2_len(&s);			\
		n++;						\
	} while (0)

	lb_spec(lb, lb_vip(4, K_TCP_IPIP4), &s);
	BASE("IPv4 TCP", lb_vip(4, K_TCP_IPIP4));
	/* the fast path's other encapsulations (xlb.bpf.c, fast_send) */
	lb_spec(lb, lb_vip(4, K_UDP_GUE4), &s);
	BASE("IPv4 UDP, GUE over IPv4", lb_vip(4, K_UDP_GUE4));
	lb_spec(lb, lb_vip(6, K_TCP_IPIP4), &s);
	BASE("IPv6 TCP, IPIP over IPv4", lb_vip(6, K_TCP_IPIP4));
	lb_spec(lb, lb_vip(6, K_UDP_IPIP6), &s);
	BASE("IPv6 UDP, IPIP over IPv6", lb_vip(6, K_UDP_IPIP6));
	lb_spec(lb, lb_vip(6, K_TCP_GUE4), &s);
	BASE("IPv6 TCP, GUE over IPv4", lb_vip(6, K_TCP_GUE4));
	lb_spec(lb, lb_vip(4, K_UDP_GUE6), &s);
	s.payload_len = 41;
	BASE("IPv4 UDP, GUE over IPv6", lb_vip(4, K_UDP_GUE6));
	lb_spec(lb, lb_vip(6, K_TCP_GUE6), &s);
	BASE("IPv6 TCP, GUE over IPv6", lb_vip(6, K_TCP_GUE6));
	lb_spec(lb, lb_vip(6, K_UDP_IPIP4), &s);
	s.n_ext = 2;
	s.ext[0] = hop;
	s.ext[1] = dst;
	BASE("IPv6 UDP, extension headers", lb_vip(6, K_UDP_IPIP4));
	lb_spec(lb, lb_vip(4, K_TCP_GUE4), &s);
	s.vlans = 1;
	s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 100 };
	memset(s.ip_opts, 1, 8);
	s.ip_opts_len = 8;
	BASE("IPv4 TCP, tag, options", lb_vip(4, K_TCP_GUE4));
	lb_spec(lb, lb_vip(6, K_TCP_IPIP6), &s);
	s.vlans = 1;
	s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q, 200 };
	BASE("IPv6 TCP, tag", lb_vip(6, K_TCP_IPIP6));
	for (i = 0; i < 2; i++) {
		int fam = i ? 6 : 4;

		lb_spec(lb, lb_vip(fam, K_3TUPLE), &s);
		if (fam == 4) {
			s.mf = true;
		} else {
			s.n_ext = 1;
			s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_FRAGMENT,
						      .more = true };
		}
		BASE("first fragment, 3-tuple VIP", lb_vip(fam, K_3TUPLE));
		if (fam == 4) {
			s.mf = false;
			s.frag_off = 5;
		} else {
			s.ext[0].more = false;
			s.ext[0].frag_off = 5;
		}
		BASE("later fragment, 3-tuple VIP", lb_vip(fam, K_3TUPLE));
		lb_spec(lb, lb_vip(fam, K_TCP_IPIP4), &s);
		if (fam == 4) {
			s.frag_off = 5;
		} else {
			s.n_ext = 1;
			s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_FRAGMENT,
						      .frag_off = 5 };
		}
		BASE("later fragment, 5-tuple VIP", lb_vip(fam, K_TCP_IPIP4));

		lb_spec(lb, lb_vip(fam, K_TCP_GUE6), &q);
		memcpy(q.src, lb->key[lb_vip(fam, K_TCP_GUE6)].addr, 16);
		pkt_addr(fam, fam == 4 ? LB_CLIENT4 : LB_CLIENT6, q.dst);
		q.sport = 83;
		q.dport = 40000;
		pkt_spec_init(&e, fam,
			      fam == 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6);
		memcpy(e.dst, q.src, 16);
		e.icmp_type = fam == 4 ? 3 : 2;
		e.icmp_code = fam == 4 ? 4 : 0;
		e.icmp_rest = 1400;
		e.quote = &q;
		s = e;
		BASE("ICMP error quoting a VIP flow", lb_vip(fam, K_TCP_GUE6));

		lb_spec(lb, lb_vip(fam, K_PORT0), &s);
		s.dport = 443;
		BASE("port-0 VIP", lb_vip(fam, K_PORT0));
		lb_spec(lb, lb_vip(fam, K_STATELESS), &s);
		BASE("stateless GUE VIP", lb_vip(fam, K_STATELESS));
	}
#undef BASE
	return n;
}

TEST_F(lb, malformed_truncated_vip_packets_dropped_and_counted)
{
	static struct base bases[32];
	static struct lb_res r;
	int nb = make_bases(&self->lb, bases), i;
	unsigned long runs = 0, bad = 0;
	size_t len;
	char what[128];

	for (i = 0; i < nb; i++) {
		struct base *b = &bases[i];
		size_t fixed = b->l3_off + (b->f[b->l3_off] >> 4 == 4 ?
					    PKT_IP4_LEN : PKT_IP6_LEN);

		ASSERT_NE(0, b->len) TH_LOG("test bug: %s", b->name);
		for (len = PKT_ETH_LEN; len <= b->len; len++) {
			bool ok;

			lb_run(&self->lb, b->f, len, &r);
			runs++;
			snprintf(what, sizeof(what), "%s cut to %zu of %zu "
				 "bytes", b->name, len, b->len);
			ok = lb_expect_sane(&self->lb, b->f, len, &r, what);
			/* the VIP address is visible: ours, malformed */
			if (ok && len >= fixed && len < b->len)
				ok = lb_expect_drop(b->f, len, &r,
						    XLB_EV_MALFORMED, what);
			bad += !ok;
		}
	}
	EXPECT_EQ(0, bad);
	TH_LOG("%d packets cut at every length: %lu runs", nb, runs);
}

/* One crafted frame and its name. */
struct bad_case {
	char name[96];
	__u8 f[LB_BUF];
	size_t len;
};

static struct bad_case *bad_new(struct bad_case *c, int *n,
				const struct pkt_spec *s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct bad_case *bad_new(struct bad_case *c, int *n,
				const struct pkt_spec *s, const char *fmt, ...)
{
	struct bad_case *b = &c[(*n)++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->name, sizeof(b->name), fmt, ap);
	va_end(ap);
	b->len = lb_build(s, b->f);
	return b;
}

/* Every case: dropped, counted as malformed. */
static void expect_all_malformed(struct __test_metadata *_metadata,
				 const struct lb *lb,
				 const struct bad_case *cases, int n)
{
	static struct lb_res r;
	int i;

	for (i = 0; i < n; i++) {
		ASSERT_NE(0, cases[i].len)
			TH_LOG("test bug: %s", cases[i].name);
		lb_run(lb, cases[i].f, cases[i].len, &r);
		/* sane first (its report is the clearer), then dropped */
		EXPECT_TRUE(lb_expect_sane(lb, cases[i].f, cases[i].len, &r,
					   cases[i].name) &&
			    lb_expect_drop(cases[i].f, cases[i].len, &r,
					   XLB_EV_MALFORMED, cases[i].name));
	}
	TH_LOG("%d crafted frames", n);
}

/* Inconsistent IPv4 and TCP headers of a TCP packet to a VIP. */
static void bad_ipv4_tcp(const struct lb *lb, struct bad_case *cases, int *n)
{
	size_t l3 = PKT_ETH_LEN, l4 = l3 + PKT_IP4_LEN;
	struct pkt_spec s;
	struct bad_case *c;
	unsigned int k;

	lb_spec(lb, lb_vip(4, K_TCP_GUE6), &s);
	s.payload_len = 0;
	for (k = 0; k < 5; k++) {
		c = bad_new(cases, n, &s, "IPv4 IHL %u", k);
		c->f[l3] = (__u8)(0x40 | k);
	}
	c = bad_new(cases, n, &s, "IPv4 IHL 15, 40 bytes");
	c->f[l3] = 0x4f;
	c = bad_new(cases, n, &s, "IPv4 IHL 6, TCP cut short");
	c->f[l3] = 0x46;
	pkt_ip4_set_csum(c->f + l3);
	c = bad_new(cases, n, &s, "IPv4 version 6");
	c->f[l3] = 0x65;
	c = bad_new(cases, n, &s, "IPv4 total length > frame");
	pkt_put16(c->f + l3 + 2, (__u16)(c->len - l3 + 1));
	pkt_ip4_set_csum(c->f + l3);
	c = bad_new(cases, n, &s, "IPv4 total length 65535");
	pkt_put16(c->f + l3 + 2, 0xffff);
	pkt_ip4_set_csum(c->f + l3);
	c = bad_new(cases, n, &s, "IPv4 total length < IHL");
	pkt_put16(c->f + l3 + 2, 19);
	pkt_ip4_set_csum(c->f + l3);
	for (k = 0; k < 5; k++) {
		c = bad_new(cases, n, &s, "IPv4 TCP doff %u", k);
		c->f[l4 + 12] = (__u8)(k << 4);
	}
}

/* Inconsistent IPv6 and TCP headers of a TCP packet to a VIP. */
static void bad_ipv6_tcp(const struct lb *lb, struct bad_case *cases, int *n)
{
	size_t l3 = PKT_ETH_LEN, l4 = l3 + PKT_IP6_LEN;
	struct pkt_spec s;
	struct bad_case *c;
	unsigned int k;

	lb_spec(lb, lb_vip(6, K_TCP_GUE6), &s);
	s.payload_len = 0;
	c = bad_new(cases, n, &s, "IPv6 version 4");
	c->f[l3] = 0x45;
	c = bad_new(cases, n, &s, "IPv6 payload length > frame");
	pkt_put16(c->f + l3 + 4, (__u16)(c->len - l4 + 1));
	c = bad_new(cases, n, &s, "IPv6 payload length 65535");
	pkt_put16(c->f + l3 + 4, 0xffff);
	for (k = 0; k < 5; k++) {
		c = bad_new(cases, n, &s, "IPv6 TCP doff %u", k);
		c->f[l4 + 12] = (__u8)(k << 4);
	}
}

/*
 * IPv6 extension chains of zero-length headers (8 bytes each) that run
 * off the end: every header names another one.  Then a hop-by-hop header
 * longer than the frame.
 */
static void bad_ipv6_ext(const struct lb *lb, struct bad_case *cases, int *n)
{
	struct pkt_spec s;
	struct bad_case *c;
	unsigned int k;
	int j;

	for (k = 1; k <= 6; k++) {
		lb_spec(lb, lb_vip(6, K_TCP_IPIP4), &s);
		s.proto = IPPROTO_DSTOPTS;	/* what the last one names */
		s.payload_len = 0;
		s.n_ext = (int)(k < PKT_MAX_EXT ? k : PKT_MAX_EXT);
		for (j = 0; j < s.n_ext; j++)
			s.ext[j] = (struct pkt_ext6){
				.type = j || k & 1 ? IPPROTO_DSTOPTS :
						     IPPROTO_HOPOPTS };
		c = bad_new(cases, n, &s, "IPv6 chain of %u empty extension "
			    "headers running off the end", k);
		/* more than the builder makes: append by hand */
		for (j = PKT_MAX_EXT; j < (int)k; j++) {
			memset(c->f + c->len, 0, 8);
			c->f[c->len] = IPPROTO_DSTOPTS;
			c->f[c->len + 2] = 1;	/* PadN, 4 bytes */
			c->f[c->len + 3] = 4;
			c->len += 8;
		}
		pkt_put16(c->f + PKT_ETH_LEN + 4,
			  (__u16)(c->len - PKT_ETH_LEN - PKT_IP6_LEN));
	}
	lb_spec(lb, lb_vip(6, K_TCP_IPIP4), &s);
	s.n_ext = 1;
	s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_HOPOPTS };
	c = bad_new(cases, n, &s, "IPv6 hop-by-hop length 255");
	c->f[PKT_ETH_LEN + PKT_IP6_LEN + 1] = 255;
}

TEST_F(lb, malformed_headers_dropped_and_counted)
{
	static struct bad_case cases[64];
	int n = 0;

	bad_ipv4_tcp(&self->lb, cases, &n);
	bad_ipv6_tcp(&self->lb, cases, &n);
	bad_ipv6_ext(&self->lb, cases, &n);
	expect_all_malformed(_metadata, &self->lb, cases, n);
}

/*
 * The IP length says where the packet ends; bytes after it are Ethernet
 * padding, not part of the packet.  A TCP/UDP packet whose IP length ends
 * before (or inside) its transport header has no ports: malformed, even
 * when the frame goes on with bytes that look like the header.
 */
TEST_F(lb, malformed_ip_length_ending_before_transport_header)
{
	static struct bad_case cases[16];
	size_t l3 = PKT_ETH_LEN;
	struct pkt_spec s;
	struct bad_case *c;
	int n = 0;

	lb_spec(&self->lb, lb_vip(4, K_TCP_GUE6), &s);
	s.payload_len = 0;
	c = bad_new(cases, &n, &s, "IPv4 total length 20, TCP after it");
	pkt_put16(c->f + l3 + 2, 20);
	pkt_ip4_set_csum(c->f + l3);
	c = bad_new(cases, &n, &s, "IPv4 total length 30, TCP header cut");
	pkt_put16(c->f + l3 + 2, 30);
	pkt_ip4_set_csum(c->f + l3);
	lb_spec(&self->lb, lb_vip(4, K_UDP_GUE4), &s);
	s.payload_len = 0;
	c = bad_new(cases, &n, &s, "IPv4 total length 24, UDP header cut");
	pkt_put16(c->f + l3 + 2, 24);
	pkt_ip4_set_csum(c->f + l3);

	lb_spec(&self->lb, lb_vip(6, K_TCP_GUE6), &s);
	s.payload_len = 0;
	c = bad_new(cases, &n, &s, "IPv6 payload length 0, TCP after it");
	pkt_put16(c->f + l3 + 4, 0);
	c = bad_new(cases, &n, &s, "IPv6 payload length 10, TCP header cut");
	pkt_put16(c->f + l3 + 4, 10);
	lb_spec(&self->lb, lb_vip(6, K_UDP_GUE4), &s);
	s.payload_len = 0;
	c = bad_new(cases, &n, &s, "IPv6 payload length 4, UDP header cut");
	pkt_put16(c->f + l3 + 4, 4);
	lb_spec(&self->lb, lb_vip(6, K_TCP_IPIP4), &s);
	s.n_ext = 1;
	s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_HOPOPTS };
	c = bad_new(cases, &n, &s, "IPv6 payload length 4, hop-by-hop "
		    "header cut");
	pkt_put16(c->f + l3 + 4, 4);

	expect_all_malformed(_metadata, &self->lb, cases, n);
}

/* Failures of one kind: how many, and the first one. */
struct tally {
	char why[96];
	unsigned long n;
};

static void tally_add(struct tally *t, int *nt, int max, const char *why,
		      bool *first)
{
	char key[96];
	int i;

	/* one class per reason, without the numbers that vary */
	snprintf(key, sizeof(key), "%.90s", why);
	for (i = 0; key[i]; i++)
		if (key[i] == '0' && key[i + 1] == 'x')
			key[i] = 0;
	*first = false;
	for (i = 0; i < *nt; i++) {
		if (!strcmp(t[i].why, key)) {
			t[i].n++;
			return;
		}
	}
	if (*nt == max)
		return;
	memcpy(t[*nt].why, key, sizeof(key));
	t[(*nt)++].n = 1;
	*first = true;
}

/* Flip k bits of in[0..span). */
static void flip_bits(struct xlb_rand *rnd, __u8 *in, size_t span,
		      unsigned int k)
{
	while (k--) {
		__u64 y = xlb_rand_next(rnd);

		in[y % span] ^= (__u8)(1 << ((y >> 32) % 8));
	}
}

/*
 * Random bytes after Ethernet.  Half of them to a VIP address; of those,
 * half with the lengths made to fit the frame and the VIP's protocol and
 * port, so that they get past the length checks.
 */
static size_t random_frame(const struct lb *lb, struct xlb_rand *rnd,
			   __u8 *in)
{
	__u64 y = xlb_rand_next(rnd);
	size_t len = PKT_ETH_LEN + (y >> 8) % 200, j, l3 = PKT_ETH_LEN, hl;
	int v = lb_vip((y & 1) ? 6 : 4, (int)((y >> 3) % LB_KINDS));
	const struct lb_kind_def *k = lb_kind(v);
	bool v6 = y & 1;

	for (j = 0; j < len; j++)
		in[j] = (__u8)xlb_rand_next(rnd);
	pkt_put16(in + 12, v6 ? PKT_ETH_IPV6 : PKT_ETH_IP);
	if (len > l3)
		in[l3] = (__u8)((v6 ? 0x60 : 0x40) | (in[l3] & 0x0f));
	if (!((y >> 1) & 1) || len < l3 + (v6 ? 40 : 20))
		return len;
	memcpy(in + l3 + (v6 ? 24 : 16), lb->key[v].addr, v6 ? 16 : 4);
	if (!((y >> 2) & 1))
		return len;
	if (v6) {
		pkt_put16(in + l3 + 4, (__u16)(len - l3 - PKT_IP6_LEN));
		in[l3 + 6] = k->proto;
		hl = PKT_IP6_LEN;
	} else {
		in[l3] = 0x45;
		pkt_put16(in + l3 + 2, (__u16)(len - l3));
		in[l3 + 9] = k->proto;
		pkt_ip4_set_csum(in + l3);
		hl = PKT_IP4_LEN;
	}
	if (k->port && len >= l3 + hl + 4)
		pkt_put16(in + l3 + hl + 2, k->port);
	return len;
}

/*
 * One fuzz input: a base packet with bits or bytes changed, maybe cut,
 * or random bytes.  Returns its length; *mode says which.
 */
static size_t mutate(const struct lb *lb, struct xlb_rand *rnd,
		     const struct base *bases, int nb, __u8 *in,
		     const struct base **from, unsigned int *mode)
{
	__u64 x = xlb_rand_next(rnd);
	unsigned int k = 1 + (x >> 8) % 8, j;
	const struct base *b = &bases[(x >> 16) % nb];
	size_t len = b->len, hdrs = b->l3_off + 64 < len ? b->l3_off + 64 :
							 len;

	*mode = x % 8;
	*from = b;
	memcpy(in, b->f, b->len);
	switch (*mode) {
	case 0: case 1: case 2:		/* bits anywhere */
		flip_bits(rnd, in, len, k);
		break;
	case 3: case 4:			/* bits in the headers */
		flip_bits(rnd, in, hdrs, k);
		break;
	case 5:				/* bytes in the headers */
		for (j = 0; j < k; j++) {
			__u64 y = xlb_rand_next(rnd);

			in[y % hdrs] = (__u8)(y >> 32);
		}
		break;
	case 6:				/* bits, then cut */
		flip_bits(rnd, in, len, k);
		len = PKT_ETH_LEN +
		      xlb_rand_next(rnd) % (len - PKT_ETH_LEN + 1);
		break;
	default:
		*from = NULL;
		len = random_frame(lb, rnd, in);
	}
	return len;
}

TEST_F_TIMEOUT(lb, malformed_random_and_bit_flipped_packets, 120)
{
	static struct base bases[32];
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_rand rnd = { .s = FUZZ_SEED };
	int nb = make_bases(&self->lb, bases), nt = 0, i;
	unsigned long n, bad = 0, verdicts[XLB_ACTIONS] = { 0 };
	const struct base *from;
	struct tally tally[16];
	__u64 ev[XLB_EV_MAX];
	char why[256], what[128];
	double t0 = xlb_mono_s();
	unsigned int mode;

	ASSERT_EQ(0, xlb_dp_events(&self->lb.dp, ev));
	for (n = 0; n < FUZZ_PACKETS; n++) {
		size_t len = mutate(&self->lb, &rnd, bases, nb, in, &from,
				    &mode);
		bool first;

		lb_run_ev(&self->lb, in, len, &r, ev);
		if (r.retval < XLB_ACTIONS)
			verdicts[r.retval]++;
		if (lb_sane(&self->lb, in, len, &r, why, sizeof(why)))
			continue;
		bad++;
		tally_add(tally, &nt, (int)LB_N(tally), why, &first);
		if (first) {
			snprintf(what, sizeof(what), "packet %lu (%s, mode %u)",
				 n, from ? from->name : "random", mode);
			lb_report(what, why, in, len, &r);
		}
	}
	for (i = 0; i < nt; i++)
		TH_LOG("%lu packets: %s", tally[i].n, tally[i].why);
	EXPECT_EQ(0, bad) TH_LOG("%lu of %lu packets broke contract 8", bad, n);
	TH_LOG("%lu packets from %d kinds in %.1f s: %lu TX, %lu DROP, "
	       "%lu PASS, %lu REDIRECT, %lu ABORTED", n, nb, xlb_mono_s() - t0,
	       verdicts[XDP_TX], verdicts[XDP_DROP], verdicts[XDP_PASS],
	       verdicts[XDP_REDIRECT], verdicts[XDP_ABORTED]);
}

TEST_HARNESS_MAIN
