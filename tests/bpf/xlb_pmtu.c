// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data path (bpf/xlb.bpf.c) through BPF_PROG_TEST_RUN: packets too
 * big for the tunnel (bpf/structs.h, "Too big").
 *   - IPv4 without DF and IPv4 fragments are never answered: over an IPv4
 *     tunnel they are tunnelled with the outer DF clear and passed to the
 *     kernel to fragment (XDP_PASS, too_big_stack); over an IPv6 tunnel
 *     dropped (too_big_silent);
 *   - ICMP errors, sources that are not one host and link-layer broadcast
 *     or multicast are never answered (too_big_silent);
 *   - answers are rate limited per CPU (too_big_limited);
 *   - IPv6 fragments are answered (their source alone may fragment);
 *   - a frame longer than its ingress link carries (a GRO aggregate, as
 *     generic XDP is given one) is neither answered nor tunnelled.
 * Fixture and expectations: tests/bpf/lb_fixture.h.
 */
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"

#include "lb_fixture.h"

/* A TCP packet of ip_len bytes to VIP v, DF as given (IPv4). */
static size_t big_packet(const struct lb *lb, int v, size_t ip_len, bool df,
			 struct pkt_spec *s, __u8 *in)
{
	size_t hdr;

	lb_spec(lb, v, s);
	s->tcp_flags = PKT_TCP_ACK;
	s->df = df;
	hdr = (s->family == XLB_FAMILY_INET ? PKT_IP4_LEN : PKT_IP6_LEN) +
	      (s->proto == IPPROTO_TCP ? PKT_TCP_LEN : 8);
	s->payload_len = ip_len - hdr;
	return lb_build(s, in);
}

/*
 * XDP_PASS with in's IP packet tunnelled to the backend want (a backend
 * id; the flow's pick for a new flow), outer IPv4 with DF clear and a
 * right checksum (pkt_parse_outer), the Ethernet header and tags as they
 * came (the frame is for this host's kernel), counted as too_big_stack
 * and as forwarded, never answered.
 */
static bool expect_for_stack(const struct lb *lb, const __u8 *in, size_t len,
			     const struct lb_res *r, __u16 want,
			     const char *what)
{
	const struct xlb_backend *b = lb_be(lb, want);
	struct pkt_outer o;
	struct pkt_l2 l2;
	char why[192], err[PKT_ERR_MAX];
	size_t l3_off = 0, ip_len = lb_ip_len(in, len, &l3_off);

	if (r->err || r->retval != XDP_PASS) {
		snprintf(why, sizeof(why), "want XDP_PASS with a tunnel");
		goto fail;
	}
	if (pkt_parse_outer(r->out, r->len, &o)) {
		snprintf(why, sizeof(why), "pkt_parse_outer: %s", o.err);
		goto fail;
	}
	if (o.family != XLB_FAMILY_INET || o.df) {
		snprintf(why, sizeof(why), "outer IPv%d, DF %d: want IPv4 "
			 "with DF clear", o.family, o.df);
		goto fail;
	}
	if (!b || memcmp(o.dst, b->addr, 16) || o.encap != b->encap ||
	    memcmp(o.src, &lb->cfg.src4, 4)) {
		snprintf(why, sizeof(why), "not the tunnel from the LB to "
			 "backend %u", want);
		goto fail;
	}
	if (!ip_len || o.inner_len != ip_len || o.l2.l3_off != l3_off ||
	    memcmp(r->out + o.inner_off, in + l3_off, ip_len)) {
		snprintf(why, sizeof(why), "inner packet is not the input's");
		goto fail;
	}
	pkt_parse_l2(in, len, &l2, err);
	if (memcmp(o.l2.dst_mac, l2.dst_mac, 6) ||
	    memcmp(o.l2.src_mac, l2.src_mac, 6) || o.l2.vlans != l2.vlans ||
	    memcmp(o.l2.vlan, l2.vlan, sizeof(l2.vlan))) {
		snprintf(why, sizeof(why), "Ethernet header or tags are not "
			 "the ones the frame came with");
		goto fail;
	}
	if (r->ev[XLB_EV_TOO_BIG_STACK] != 1 || r->ev[XLB_EV_TOO_BIG] ||
	    r->act[XDP_PASS] != 1) {
		snprintf(why, sizeof(why), "want too_big_stack counted once, "
			 "no too_big");
		goto fail;
	}
	return true;
fail:
	lb_report(what, why, in, len, r);
	return false;
}

/* XDP_DROP counted as too_big_silent (never answered), nothing else. */
static bool expect_silent(const __u8 *in, size_t len, const struct lb_res *r,
			  const char *what)
{
	if (!lb_expect_drop(in, len, r, XLB_EV_TOO_BIG_SILENT, what))
		return false;
	if (!r->ev[XLB_EV_TOO_BIG] && !r->ev[XLB_EV_TOO_BIG_STACK])
		return true;
	lb_report(what, "counted as answered or passed as well", in, len, r);
	return false;
}

/* Every CPU's bucket of too-big answers (structs.h) set to b. */
static int bucket_set(const struct lb *lb, __u64 credit, __u64 stamp)
{
	int n = libbpf_num_possible_cpus(), i, ret;
	struct xlb_icmp_bucket *v;
	__u32 key = 0;

	if (n <= 0)
		return -EINVAL;
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i].credit = credit;
		v[i].stamp = stamp;
	}
	ret = bpf_map_update_elem(bpf_map__fd(lb->skel->maps.xlb_icmp_bucket),
				  &key, v, BPF_ANY);
	free(v);
	return ret;
}

static int bucket_get(const struct lb *lb, int cpu, struct xlb_icmp_bucket *b)
{
	int n = libbpf_num_possible_cpus(), ret;
	struct xlb_icmp_bucket *v;
	__u32 key = 0;

	if (n <= 0 || cpu >= n)
		return -EINVAL;
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ret = bpf_map_lookup_elem(bpf_map__fd(lb->skel->maps.xlb_icmp_bucket),
				  &key, v);
	*b = v[cpu];
	free(v);
	return ret;
}

/* bpf_ktime_get_ns(): CLOCK_MONOTONIC. */
static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* IPv4 VIPs over IPv4 tunnels, both encapsulations, TCP and UDP. */
static const int over4_kinds[] = {
	K_TCP_IPIP4, K_TCP_GUE4, K_UDP_IPIP4, K_UDP_GUE4,
};

TEST_F(lb, too_big_ipv4_without_df_tunnelled_for_the_kernel)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	struct xlb_flow f;
	char what[96];
	unsigned int i;
	size_t len;
	int vlans;

	for (i = 0; i < LB_N(over4_kinds); i++) {
		int v = lb_vip(XLB_FAMILY_INET, over4_kinds[i]);

		for (vlans = 0; vlans < 2; vlans++) {
			len = big_packet(&self->lb, v, LB_MTU, false, &s, in);
			if (vlans) {
				s.vlans = 1;
				s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021Q,
							       0x0123 };
				len = lb_build(&s, in);
			}
			ASSERT_NE(0, len);
			f = lb_flow(&s);
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "%s: %u bytes without "
				 "DF%s", lb_kind(v)->name, LB_MTU,
				 vlans ? ", tagged" : "");
			EXPECT_TRUE(expect_for_stack(&self->lb, in, len, &r,
				lb_pick(&self->lb, v, &f).primary, what));
		}
		/* the same with DF: answered, as before */
		len = big_packet(&self->lb, v, LB_MTU, true, &s, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_EQ(XDP_TX, r.retval);
		EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
		EXPECT_EQ(0, r.ev[XLB_EV_TOO_BIG_STACK]);
	}
}

/*
 * A datagram the client fragmented (MF, no DF): the first fragment and a
 * later one (no ports: the 3-tuple VIP's fragment entry) too big for the
 * tunnel go to the kernel, never answered.
 */
TEST_F(lb, too_big_ipv4_fragments_tunnelled_for_the_kernel)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const int kinds[] = { K_TCP_IPIP4, K_3TUPLE, K_TCP_GUE4 };
	struct pkt_spec s;
	struct xlb_flow f;
	char what[96];
	unsigned int i;
	size_t len;

	for (i = 0; i < LB_N(kinds); i++) {
		int v = lb_vip(XLB_FAMILY_INET, kinds[i]);

		/* first fragment: ports, MF */
		len = big_packet(&self->lb, v, LB_MTU, false, &s, in);
		s.mf = true;
		len = lb_build(&s, in);
		ASSERT_NE(0, len);
		f = lb_flow(&s);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s: first fragment",
			 lb_kind(v)->name);
		EXPECT_TRUE(expect_for_stack(&self->lb, in, len, &r,
			lb_pick(&self->lb, v, &f).primary, what));
		if (kinds[i] != K_3TUPLE)
			continue;
		/* a middle fragment: no transport header, no ports */
		s.frag_off = 185;
		s.payload_len += PKT_TCP_LEN;
		len = lb_build(&s, in);
		ASSERT_EQ(pkt_l2_len(&s) + LB_MTU, len);
		f.sport = f.dport = 0;
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s: later fragment",
			 lb_kind(v)->name);
		EXPECT_TRUE(expect_for_stack(&self->lb, in, len, &r,
			lb_pick(&self->lb, v, &f).primary, what));
	}
}

/* Over an IPv6 tunnel nobody can fragment it: dropped, not answered. */
TEST_F(lb, too_big_ipv4_without_df_over_ipv6_tunnel_dropped)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const int kinds[] = { K_TCP_IPIP6, K_TCP_GUE6, K_UDP_GUE6 };
	struct pkt_spec s;
	char what[96];
	unsigned int i;
	size_t len;

	for (i = 0; i < LB_N(kinds); i++) {
		int v = lb_vip(XLB_FAMILY_INET, kinds[i]);

		len = big_packet(&self->lb, v, LB_MTU, false, &s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s: no DF", lb_kind(v)->name);
		EXPECT_TRUE(expect_silent(in, len, &r, what));
		s.mf = true;
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s: first fragment",
			 lb_kind(v)->name);
		EXPECT_TRUE(expect_silent(in, len, &r, what));
	}
}

/*
 * An ICMP error about a VIP flow, itself too big for the tunnel (a router
 * quoting a large packet, DF set): never answered with another error
 * (RFC 1122 3.2.2, RFC 4443 2.4 e).  The same error at a size that fits
 * is steered, so the case is the size alone.
 */
TEST_F(lb, too_big_icmp_error_never_answered)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6, K_TCP_IPIP6 };
	struct pkt_spec c, q, e;
	char what[96];
	unsigned int i;
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		bool v4 = lb_vip_family(v) == XLB_FAMILY_INET;
		size_t ip = v4 ? PKT_IP4_LEN : PKT_IP6_LEN;

		lb_spec(&self->lb, v, &c);
		pkt_spec_init(&q, c.family, IPPROTO_TCP);
		memcpy(q.src, c.dst, 16);
		memcpy(q.dst, c.src, 16);
		q.sport = c.dport;
		q.dport = c.sport;
		q.tcp_flags = PKT_TCP_ACK;
		q.payload = lb_pattern();
		/* error: IP + 8 + quote (IP + TCP + payload) = LB_MTU */
		q.payload_len = LB_MTU - 2 * ip - 8 - PKT_TCP_LEN;
		pkt_spec_init(&e, c.family, v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6);
		pkt_addr(c.family, v4 ? "192.0.2.254" : "2001:db8:ffff::fe",
			 e.src);
		memcpy(e.dst, c.dst, 16);
		e.df = true;
		e.icmp_type = v4 ? 3 : 2;	/* frag needed / too big */
		e.icmp_code = v4 ? 4 : 0;
		e.icmp_rest = v4 ? 1400 : 1400;
		e.quote = &q;
		len = lb_build(&e, in);
		ASSERT_EQ(pkt_l2_len(&e) + LB_MTU, len);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "%s %s: %u-byte ICMP error",
			 lb_kind(v)->name, lb_fam_name(c.family), LB_MTU);
		EXPECT_TRUE(expect_silent(in, len, &r, what));

		/* small enough: steered to the flow's backend */
		q.payload_len = 200;
		len = lb_build(&e, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_EQ(XDP_TX, r.retval) TH_LOG("%s, 200 bytes quoted", what);
		EXPECT_EQ(1, r.ev[XLB_EV_ICMP_STEERED]);
	}
}

/*
 * Sources that are not one host, and frames sent to a link-layer
 * broadcast or multicast address, get no answer; the same packet from a
 * unicast source to the LB's address does (so the size alone is not why).
 */
TEST_F(lb, too_big_answered_only_to_unicast)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	static const char *const src4[] = {
		"0.0.0.0", "0.1.2.3", "127.0.0.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
	};
	static const char *const src6[] = {
		"::", "::1", "ff02::1", "ff0e::101",
	};
	static const __u8 group_macs[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
		{ 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 },
		{ 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },
	};
	struct pkt_spec s;
	struct pkt_info pi;
	char what[96];
	unsigned int i, f;
	size_t len;

	for (f = 0; f < 2; f++) {
		int fam = lb_families[f];
		int v = lb_vip(fam, K_TCP_IPIP4);
		const char *const *src = fam == XLB_FAMILY_INET ? src4 : src6;
		unsigned int n = fam == XLB_FAMILY_INET ? LB_N(src4) :
							   LB_N(src6);

		for (i = 0; i < n; i++) {
			len = big_packet(&self->lb, v, LB_MTU, true, &s, in);
			ASSERT_EQ(0, pkt_addr(fam, src[i], s.src));
			len = lb_build(&s, in);
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "from %s", src[i]);
			EXPECT_TRUE(expect_silent(in, len, &r, what));
		}
		for (i = 0; i < LB_N(group_macs); i++) {
			len = big_packet(&self->lb, v, LB_MTU, true, &s, in);
			memcpy(s.dst_mac, group_macs[i], 6);
			len = lb_build(&s, in);
			lb_run(&self->lb, in, len, &r);
			snprintf(what, sizeof(what), "%s to MAC %02x:...",
				 lb_fam_name(fam), group_macs[i][0]);
			EXPECT_TRUE(expect_silent(in, len, &r, what));
		}
		len = big_packet(&self->lb, v, LB_MTU, true, &s, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_EQ(XDP_TX, r.retval);
		EXPECT_TRUE(lb_is_too_big_answer(in, len, &r, &pi));
		EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
	}
}

/*
 * IPv6 has no DF: a fragment is too big as any packet is, and only its
 * source may fragment again (RFC 8200 5), so it is answered.
 */
TEST_F(lb, too_big_ipv6_fragment_answered)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	struct pkt_info pi;
	int v = lb_vip(XLB_FAMILY_INET6, K_TCP_IPIP6);
	size_t len;

	len = big_packet(&self->lb, v, LB_MTU - 8, true, &s, in);
	s.n_ext = 1;
	s.ext[0] = (struct pkt_ext6){ .type = IPPROTO_FRAGMENT, .more = true,
				      .frag_id = 7 };
	len = lb_build(&s, in);
	ASSERT_EQ(pkt_l2_len(&s) + LB_MTU, len);
	lb_run(&self->lb, in, len, &r);
	EXPECT_EQ(XDP_TX, r.retval);
	ASSERT_TRUE(lb_is_too_big_answer(in, len, &r, &pi));
	EXPECT_EQ(LB_MTU - 40, pi.icmp_rest);
	EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
}

/*
 * At most XLB_ICMP_BURST answers at once, then XLB_ICMP_RATE a second,
 * per CPU.  The bucket is set by hand: with credit for 3 and its stamp
 * ahead of the clock (no refill), 3 of 10 are answered and 7 counted as
 * limited; a stamp 10 s back refills it to the burst, no more.  The
 * thread stays on one CPU, so one bucket sees every packet.
 */
TEST_F(lb, too_big_answers_rate_limited_per_cpu)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4), cpu, answered = 0, i;
	struct xlb_icmp_bucket b;
	cpu_set_t old, one;
	struct pkt_spec s;
	struct pkt_info pi;
	size_t len;
	__u64 now;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(old), &old));
	cpu = sched_getcpu();
	ASSERT_LE(0, cpu);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));

	len = big_packet(&self->lb, v, LB_MTU, true, &s, in);
	ASSERT_EQ(0, bucket_set(&self->lb, 3 * XLB_ICMP_COST,
				mono_ns() + 60000000000ULL));
	for (i = 0; i < 10; i++) {
		lb_run(&self->lb, in, len, &r);
		if (r.retval == XDP_TX) {
			EXPECT_TRUE(lb_is_too_big_answer(in, len, &r, &pi));
			EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
			answered++;
		} else {
			EXPECT_TRUE(lb_expect_drop(in, len, &r,
						   XLB_EV_TOO_BIG_LIMITED,
						   "over the limit"));
		}
	}
	EXPECT_EQ(3, answered);

	/* 10 s of refill: capped at the burst, one spent */
	now = mono_ns();
	ASSERT_EQ(0, bucket_set(&self->lb, 0, now - 10000000000ULL));
	lb_run(&self->lb, in, len, &r);
	EXPECT_EQ(XDP_TX, r.retval);
	EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
	ASSERT_EQ(0, bucket_get(&self->lb, cpu, &b));
	EXPECT_EQ((XLB_ICMP_BURST - 1) * XLB_ICMP_COST, b.credit);
	EXPECT_LE(now, b.stamp);

	sched_setaffinity(0, sizeof(old), &old);
}

/* Run in with ctx's ingress interface ifindex. */
static void run_from(const struct lb *lb, const void *in, size_t len,
		     int ifindex, struct lb_res *r)
{
	struct xdp_md ctx = { .data_end = (__u32)len,
			      .ingress_ifindex = (__u32)ifindex };
	__u64 ev0[XLB_EV_MAX] = { 0 }, ev1[XLB_EV_MAX] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = (__u32)len,
		.data_out = r->out,
		.data_size_out = sizeof(r->out),
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.repeat = 1,
	);
	int i;

	xlb_dp_events(&lb->dp, ev0);
	r->err = bpf_prog_test_run_opts(lb->prog_fd, &opts) ? -errno : 0;
	r->retval = opts.retval;
	r->len = opts.data_size_out;
	xlb_dp_events(&lb->dp, ev1);
	for (i = 0; i < XLB_EV_MAX; i++)
		r->ev[i] = ev1[i] - ev0[i];
}

/*
 * Generic XDP runs on GRO aggregates: a frame whose IP length is above
 * the MTU of the link it came in on.  From a link of MTU 1500 a 3000-byte
 * frame is no packet any client sent: not answered (a false MTU), not
 * tunnelled (the kernel would split it by its stale offsets), dropped as
 * too_big_silent.  The same frame from a link of MTU 9000 is a packet
 * too big for the tunnel (mtu 1500) and answered.  The links are veth
 * pairs in a network namespace of the test's own.
 */
TEST_F(lb, too_big_gro_aggregate_never_answered)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	int kinds[] = { K_TCP_IPIP4, K_UDP_GUE4 };
	struct pkt_spec s;
	struct pkt_info pi;
	unsigned int i;
	int narrow, wide, v, rc;
	size_t len;

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	rc = system("ip link add xlbt1500 mtu 1500 type veth peer name xlbp1500 mtu 1500 && "
		    "ip link add xlbt9000 mtu 9000 type veth peer name xlbp9000 mtu 9000 && "
		    "ip link set xlbt1500 up && ip link set xlbt9000 up");
	ASSERT_EQ(0, rc);
	narrow = (int)if_nametoindex("xlbt1500");
	wide = (int)if_nametoindex("xlbt9000");
	ASSERT_LT(0, narrow);
	ASSERT_LT(0, wide);

	lb_for_each_vip(i, v, kinds) {
		len = big_packet(&self->lb, v, 3000, true, &s, in);
		ASSERT_NE(0, len);
		run_from(&self->lb, in, len, narrow, &r);
		EXPECT_TRUE(expect_silent(in, len, &r, "3000 bytes from MTU 1500"));
		run_from(&self->lb, in, len, wide, &r);
		EXPECT_EQ(XDP_TX, r.retval);
		EXPECT_TRUE(lb_is_too_big_answer(in, len, &r, &pi));
		EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
		/* without DF: not tunnelled for the kernel either */
		len = big_packet(&self->lb, v, 3000, false, &s, in);
		run_from(&self->lb, in, len, narrow, &r);
		EXPECT_TRUE(expect_silent(in, len, &r, "3000 bytes, no DF, from MTU 1500"));
	}
	/* the namespace and its links go with this process */
}

TEST_HARNESS_MAIN
