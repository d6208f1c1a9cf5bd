// SPDX-License-Identifier: GPL-2.0
/*
 * The backend-side decap program (bpf/xlb_decap.bpf.c) in the kernel,
 * through BPF_PROG_TEST_RUN: a tunnel frame becomes exactly the frame the
 * LB received (Ethernet and tags kept, outer headers gone), and everything
 * else passes byte for byte as it came, counted as malformed when the outer
 * header promised a tunnel.
 *
 * Tunnel frames are made with tools/lib/pkt.h: the original frame with
 * pkt_build(), the same packet wrapped with pkt_build_encap() (IP in IP
 * by the outer family, or GUE with the xlb hop list of structs.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kselftest_harness.h"

#include "pkt.h"
#include "xlb_decap.skel.h"


#define BUF		2048
#define OTHER_PORT	7000

static const char payload[] = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";

struct env {
	struct xlb_decap_bpf *skel;
	int prog_fd;
	int stats_fd;
	int ncpus;
};

/*
 * Open and load the program; port 0 keeps the default GUE port, mac NULL
 * leaves host_mac unset.
 */
static int env_open_mac(struct env *env, __u16 port, const __u8 *mac)
{
	int err;

	memset(env, 0, sizeof(*env));
	env->skel = xlb_decap_bpf__open();
	if (!env->skel)
		return -errno;
	if (port)
		env->skel->rodata->gue_port = port;
	if (mac)
		memcpy((void *)env->skel->rodata->host_mac, mac, 6);
	err = xlb_decap_bpf__load(env->skel);
	if (err)
		return err;
	env->prog_fd = bpf_program__fd(env->skel->progs.xlb_decap);
	env->stats_fd = bpf_map__fd(env->skel->maps.decap_stats);
	env->ncpus = libbpf_num_possible_cpus();
	return env->ncpus > 0 ? 0 : env->ncpus;
}

static int env_open(struct env *env, __u16 port)
{
	return env_open_mac(env, port, NULL);
}

static void env_close(struct env *env)
{
	xlb_decap_bpf__destroy(env->skel);
}

/* Packets per counter, summed over CPUs. */
static int read_stats(const struct env *env, __u64 v[XLB_DECAP_STATS])
{
	struct xlb_counter c[env->ncpus];
	__u32 k;
	int i;

	for (k = 0; k < XLB_DECAP_STATS; k++) {
		if (bpf_map_lookup_elem(env->stats_fd, &k, c))
			return -errno;
		v[k] = 0;
		for (i = 0; i < env->ncpus; i++)
			v[k] += c[i].packets;
	}
	return 0;
}

struct result {
	int err;		/* of bpf_prog_test_run_opts, -errno */
	__u32 retval;
	__u32 len;
	__u8 out[BUF + 256];
	__u64 delta[XLB_DECAP_STATS];	/* counters: after - before */
};

static void run(const struct env *env, const void *in, size_t len,
		struct result *r)
{
	__u64 before[XLB_DECAP_STATS], after[XLB_DECAP_STATS];
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = (__u32)len,
		.data_out = r->out,
		.data_size_out = sizeof(r->out),
		.repeat = 1,
	);
	int i;

	memset(r, 0, sizeof(*r));
	read_stats(env, before);
	r->err = bpf_prog_test_run_opts(env->prog_fd, &opts) ? -errno : 0;
	r->retval = opts.retval;
	r->len = opts.data_size_out;
	read_stats(env, after);
	for (i = 0; i < XLB_DECAP_STATS; i++)
		r->delta[i] = after[i] - before[i];
}

static void hex(const char *what, const void *p, size_t n)
{
	const __u8 *b = p;
	size_t i;

	fprintf(stderr, "#   %-8s", what);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i && i % 16 == 0 ? "\n#           " :
			i && i % 4 == 0 ? " " : "", b[i]);
	fprintf(stderr, "\n");
}

/* XDP_PASS, output == want, and only counter `which` moved (by one). */
static int check(const struct result *r, const void *want, size_t want_len,
		 int which, const char *what)
{
	int ok = !r->err && r->retval == XDP_PASS && r->len == want_len &&
		 !memcmp(r->out, want, want_len);
	int i;

	for (i = 0; i < XLB_DECAP_STATS; i++)
		ok &= r->delta[i] == (i == which);
	if (!ok) {
		fprintf(stderr, "# %s: err %d retval %u len %u (want %zu), "
			"counters done +%llu malformed +%llu passed +%llu "
			"not_local +%llu (want +1 on %s)\n", what, r->err,
			r->retval, r->len, want_len,
			(unsigned long long)r->delta[0],
			(unsigned long long)r->delta[1],
			(unsigned long long)r->delta[2],
			(unsigned long long)r->delta[3],
			which == XLB_DECAP_DONE ? "done" : which ==
			XLB_DECAP_MALFORMED ? "malformed" : which ==
			XLB_DECAP_PASSED ? "passed" : "not_local");
		hex("want", want, want_len);
		hex("got", r->out, r->len);
	}
	return ok;
}

static const char *fam_name(int f)
{
	return f == 4 ? "IPv4" : "IPv6";
}

static const char *encap_name(int e)
{
	return e == XLB_ENCAP_GUE ? "GUE" : "IPIP";
}

/* --- every encapsulation ------------------------------------------------- */

FIXTURE(decap)
{
	struct env env;
};

FIXTURE_VARIANT(decap)
{
	int encap;
	int outer;
	int inner;
};

FIXTURE_VARIANT_ADD(decap, ipip)   { XLB_ENCAP_IPIP, 4, 4 };
FIXTURE_VARIANT_ADD(decap, sit)    { XLB_ENCAP_IPIP, 4, 6 };
FIXTURE_VARIANT_ADD(decap, ip4in6) { XLB_ENCAP_IPIP, 6, 4 };
FIXTURE_VARIANT_ADD(decap, ip6ip6) { XLB_ENCAP_IPIP, 6, 6 };
FIXTURE_VARIANT_ADD(decap, gue4_inner4) { XLB_ENCAP_GUE, 4, 4 };
FIXTURE_VARIANT_ADD(decap, gue4_inner6) { XLB_ENCAP_GUE, 4, 6 };
FIXTURE_VARIANT_ADD(decap, gue6_inner4) { XLB_ENCAP_GUE, 6, 4 };
FIXTURE_VARIANT_ADD(decap, gue6_inner6) { XLB_ENCAP_GUE, 6, 6 };

FIXTURE_SETUP(decap)
{
	ASSERT_EQ(0, env_open(&self->env, 0))
		TH_LOG("cannot load xlb_decap.bpf.o: %s (needs root and BPF)",
		       strerror(errno));
}

FIXTURE_TEARDOWN(decap)
{
	env_close(&self->env);
}

static const struct pkt_vlan tags[][PKT_MAX_VLANS] = {
	{ { 0, 0 } },
	{ { PKT_ETH_8021Q, 100 } },
	{ { PKT_ETH_8021AD, 0x2fff } },
	{ { PKT_ETH_8021AD, 10 }, { PKT_ETH_8021Q, 20 } },
};

static const int n_tags[] = { 0, 1, 1, 2 };

static void inner_spec(struct pkt_spec *s, int family, int proto, int t)
{
	pkt_spec_init(s, family, proto);
	memcpy(s->vlan, tags[t], sizeof(s->vlan));
	s->vlans = n_tags[t];
	s->payload = payload;
	s->payload_len = sizeof(payload) - 1;
	if (proto == IPPROTO_TCP)
		s->tcp_flags = PKT_TCP_ACK | PKT_TCP_PSH;
}

TEST_F(decap, restores_original_frame)
{
	const int protos[] = {
		IPPROTO_TCP, IPPROTO_UDP,
		variant->inner == 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6,
	};
	__u8 orig[BUF], wrapped[BUF];
	struct pkt_outer o;
	struct pkt_encap e;
	struct pkt_spec in;
	struct result r;
	size_t n, m;
	unsigned int t, p, cases = 0;
	int nocsum;

	for (t = 0; t < sizeof(n_tags) / sizeof(n_tags[0]); t++)
	for (p = 0; p < 3; p++)
	for (nocsum = 0; nocsum < 2; nocsum++) {
		if (nocsum && (variant->encap != XLB_ENCAP_GUE ||
			       variant->outer != 4))
			continue;
		inner_spec(&in, variant->inner, protos[p], t);
		n = pkt_build(&in, orig, sizeof(orig));
		ASSERT_NE(0, n);
		pkt_encap_init(&e, variant->encap, variant->outer);
		e.udp_no_csum = nocsum;
		e.sport = 32768 + t * 16 + p;
		m = pkt_build_encap(&e, &in, wrapped, sizeof(wrapped));
		ASSERT_NE(0, m);
		ASSERT_EQ(0, pkt_parse_outer(wrapped, m, &o))
			TH_LOG("wrapper made a bad frame: %s", o.err);

		run(&self->env, wrapped, m, &r);
		EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "decap"))
			TH_LOG("%s over %s, %s inside, %d tags, proto %d%s",
			       encap_name(variant->encap),
			       fam_name(variant->outer),
			       fam_name(variant->inner), n_tags[t], protos[p],
			       nocsum ? ", UDP checksum 0" : "");
		cases++;
	}
	TH_LOG("%u frames decapsulated", cases);
}

/*
 * Every prefix of a tunnel frame: unchanged, counted as passed while the
 * outer header does not yet say "tunnel" (outer IP header, plus the UDP
 * header for GUE), as malformed after that; the whole frame decapsulates.
 */
TEST_F(decap, truncated_frames_pass_unchanged)
{
	__u8 orig[BUF], wrapped[BUF];
	struct pkt_encap e;
	struct pkt_spec in;
	struct result r;
	size_t n, m, len, promise;
	unsigned int t;
	char what[64];

	for (t = 0; t < 2; t++) {
		inner_spec(&in, variant->inner, IPPROTO_TCP, t);
		n = pkt_build(&in, orig, sizeof(orig));
		pkt_encap_init(&e, variant->encap, variant->outer);
		m = pkt_build_encap(&e, &in, wrapped, sizeof(wrapped));
		ASSERT_NE(0, m);
		promise = pkt_l2_len(&in) + (variant->outer == 4 ? 20 : 40) +
			  (variant->encap == XLB_ENCAP_GUE ? 8 : 0);

		for (len = 0; len < m; len++) {
			run(&self->env, wrapped, len, &r);
			if (len < PKT_ETH_LEN) {
				/* BPF_PROG_TEST_RUN refuses runt frames */
				EXPECT_EQ(-EINVAL, r.err) TH_LOG("len %zu", len);
				continue;
			}
			snprintf(what, sizeof(what), "%zu of %zu bytes", len, m);
			EXPECT_TRUE(check(&r, wrapped, len, len < promise ?
					  XLB_DECAP_PASSED : XLB_DECAP_MALFORMED, what));
		}
		run(&self->env, wrapped, m, &r);
		EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "whole frame"));
	}
}

/*
 * Frames not addressed to this host pass unchanged, counted as not_local:
 * Ethernet broadcast and multicast, outer IP broadcast, multicast and
 * unspecified destinations in a unicast frame.  The same packet to the
 * host's unicast address still decapsulates.
 */
TEST_F(decap, not_addressed_to_host_unchanged)
{
	static const struct {
		const char *name;
		__u8 mac[6];
	} macs[] = {
		{ "Ethernet broadcast", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
		{ "Ethernet IPv4 multicast", { 0x01, 0x00, 0x5e, 0, 0, 1 } },
		{ "Ethernet IPv6 multicast", { 0x33, 0x33, 0, 0, 0, 1 } },
		{ "Ethernet group bit", { 0x03, 0, 0, 0, 0, 2 } },
	};
	static const char *const dst4[] = {
		"255.255.255.255", "224.0.0.1", "239.255.255.250", "0.0.0.0",
	};
	static const char *const dst6[] = { "ff02::1", "ff05::2", "::" };
	const char *const *dsts = variant->outer == 4 ? dst4 : dst6;
	unsigned int nd = variant->outer == 4 ? 4 : 3, i, t, cases = 0;
	__u8 orig[BUF], b[BUF];
	struct pkt_encap e;
	struct pkt_spec in;
	struct result r;
	size_t n, m;
	char what[96];

	for (t = 0; t < 2; t++) {
		inner_spec(&in, variant->inner, IPPROTO_TCP, t);
		n = pkt_build(&in, orig, sizeof(orig));
		for (i = 0; i < sizeof(macs) / sizeof(macs[0]); i++) {
			memcpy(in.dst_mac, macs[i].mac, 6);
			pkt_encap_init(&e, variant->encap, variant->outer);
			m = pkt_build_encap(&e, &in, b, sizeof(b));
			ASSERT_NE(0, m);
			snprintf(what, sizeof(what), "%s, %s over %s",
				 macs[i].name, encap_name(variant->encap),
				 fam_name(variant->outer));
			run(&self->env, b, m, &r);
			EXPECT_TRUE(check(&r, b, m, XLB_DECAP_NOT_LOCAL, what));
			cases++;
		}
		inner_spec(&in, variant->inner, IPPROTO_TCP, t);
		for (i = 0; i < nd; i++) {
			pkt_encap_init(&e, variant->encap, variant->outer);
			pkt_addr(variant->outer, dsts[i], e.dst);
			memcpy(e.hops[0], e.dst, 16);
			m = pkt_build_encap(&e, &in, b, sizeof(b));
			ASSERT_NE(0, m);
			snprintf(what, sizeof(what), "outer dst %s, %s", dsts[i],
				 encap_name(variant->encap));
			run(&self->env, b, m, &r);
			EXPECT_TRUE(check(&r, b, m, XLB_DECAP_NOT_LOCAL, what));
			cases++;
		}
		/* the control: unicast MAC and address */
		pkt_encap_init(&e, variant->encap, variant->outer);
		m = pkt_build_encap(&e, &in, b, sizeof(b));
		run(&self->env, b, m, &r);
		EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "unicast"));
	}
	TH_LOG("%u frames not for this host passed unchanged", cases);
}

/* --- everything else ----------------------------------------------------- */

FIXTURE(decap_misc)
{
	struct env env;
};

FIXTURE_SETUP(decap_misc)
{
	ASSERT_EQ(0, env_open(&self->env, 0))
		TH_LOG("cannot load xlb_decap.bpf.o: %s (needs root and BPF)",
		       strerror(errno));
}

FIXTURE_TEARDOWN(decap_misc)
{
	env_close(&self->env);
}

/* IP header of the packet inside pkt_spec `in`, from pkt_build_ip(). */
static size_t inner_ip(const struct pkt_spec *in, __u8 *buf)
{
	return pkt_build_ip(in, buf, BUF);
}

TEST_F(decap_misc, non_tunnel_frames_unchanged)
{
	static const __u8 arp[28] = { 0, 1, 8, 0, 6, 4, 0, 1 };
	static const struct {
		const char *name;
		int family, proto;
	} kinds[] = {
		{ "TCP/IPv4", 4, IPPROTO_TCP },
		{ "UDP/IPv4", 4, IPPROTO_UDP },
		{ "ICMP", 4, IPPROTO_ICMP },
		{ "GRE/IPv4", 4, 47 },
		{ "TCP/IPv6", 6, IPPROTO_TCP },
		{ "UDP/IPv6", 6, IPPROTO_UDP },
		{ "ICMPv6", 6, IPPROTO_ICMPV6 },
	};
	__u8 b[BUF], ip[BUF];
	struct pkt_spec s, inner;
	struct result r;
	size_t n;
	unsigned int i, t;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
	for (t = 0; t < 4; t++) {
		inner_spec(&s, kinds[i].family, kinds[i].proto, t);
		n = pkt_build(&s, b, sizeof(b));
		run(&self->env, b, n, &r);
		EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, kinds[i].name))
			TH_LOG("%s, %d tags", kinds[i].name, n_tags[t]);
	}

	/* UDP from the GUE port, to another one */
	pkt_spec_init(&s, 4, IPPROTO_UDP);
	s.sport = XLB_GUE_PORT_DEFAULT;
	s.dport = XLB_GUE_PORT_DEFAULT + 1;
	n = pkt_build(&s, b, sizeof(b));
	run(&self->env, b, n, &r);
	EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, "UDP from GUE port"));

	/* ARP */
	pkt_spec_init(&s, 0, 0);
	s.ethertype = PKT_ETH_ARP;
	s.payload = arp;
	s.payload_len = sizeof(arp);
	n = pkt_build(&s, b, sizeof(b));
	run(&self->env, b, n, &r);
	EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, "ARP"));

	/* IPIP behind an IPv6 extension header: not ours to take apart */
	pkt_spec_init(&inner, 4, IPPROTO_TCP);
	pkt_spec_init(&s, 6, IPPROTO_IPIP);
	s.ext[0].type = IPPROTO_DSTOPTS;
	s.n_ext = 1;
	s.payload = ip;
	s.payload_len = inner_ip(&inner, ip);
	n = pkt_build(&s, b, sizeof(b));
	run(&self->env, b, n, &r);
	EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, "4in6 after dstopts"));

	/* a later fragment whose data looks like UDP to the GUE port */
	pkt_spec_init(&s, 4, IPPROTO_UDP);
	s.frag_off = 10;
	memset(ip, 0, 64);
	pkt_put16(ip + 2, XLB_GUE_PORT_DEFAULT);
	s.payload = ip;
	s.payload_len = 64;
	n = pkt_build(&s, b, sizeof(b));
	run(&self->env, b, n, &r);
	EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, "later fragment"));

	/* IPIP behind three tags (the program walks two) */
	pkt_spec_init(&inner, 4, IPPROTO_TCP);
	pkt_spec_init(&s, 4, IPPROTO_IPIP);
	s.vlans = 2;
	s.vlan[0] = (struct pkt_vlan){ PKT_ETH_8021AD, 1 };
	s.vlan[1] = (struct pkt_vlan){ PKT_ETH_8021Q, 2 };
	s.ethertype = PKT_ETH_8021Q;
	memset(ip, 0, 2);
	ip[2] = 0x08;
	ip[3] = 0x00;
	pkt_build_ip(&inner, ip + 4, BUF - 4);
	s.family = 0;
	s.payload = ip;
	s.payload_len = 4 + 40;
	n = pkt_build(&s, b, sizeof(b));
	run(&self->env, b, n, &r);
	EXPECT_TRUE(check(&r, b, n, XLB_DECAP_PASSED, "three tags"));
}

/* A GUE frame whose outer UDP goes to `port`. */
static size_t gue_frame(int outer, int inner, __u16 port, __u8 *orig,
			size_t *orig_len, __u8 *b)
{
	struct pkt_encap e;
	struct pkt_spec in;

	inner_spec(&in, inner, IPPROTO_TCP, 1);
	*orig_len = pkt_build(&in, orig, BUF);
	pkt_encap_init(&e, XLB_ENCAP_GUE, outer);
	e.dport = port;
	return pkt_build_encap(&e, &in, b, BUF);
}

TEST_F(decap_misc, gue_on_other_port_unchanged)
{
	__u8 orig[BUF], b[BUF];
	struct result r;
	size_t n, m;
	int outer;

	for (outer = 4; outer <= 6; outer += 2) {
		m = gue_frame(outer, 4, XLB_GUE_PORT_DEFAULT + 1, orig, &n, b);
		run(&self->env, b, m, &r);
		EXPECT_TRUE(check(&r, b, m, XLB_DECAP_PASSED, "GUE, other port"))
			TH_LOG("over %s", fam_name(outer));
	}
}

TEST(gue_port_is_configurable)
{
	__u8 orig[BUF], b[BUF];
	struct result r;
	struct env env;
	size_t n, m;

	ASSERT_EQ(0, env_open(&env, OTHER_PORT))
		TH_LOG("cannot load xlb_decap.bpf.o: %s", strerror(errno));
	m = gue_frame(6, 4, OTHER_PORT, orig, &n, b);
	run(&env, b, m, &r);
	EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "GUE to the set port"));
	m = gue_frame(6, 4, XLB_GUE_PORT_DEFAULT, orig, &n, b);
	run(&env, b, m, &r);
	EXPECT_TRUE(check(&r, b, m, XLB_DECAP_PASSED, "GUE to the default port"));
	env_close(&env);
}

/*
 * With host_mac set, a unicast frame to another MAC (an interface in
 * promiscuous mode sees them) passes unchanged; to host_mac it
 * decapsulates.
 */
TEST(other_host_frames_unchanged)
{
	static const __u8 mine[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const __u8 others[][6] = {
		{ 0x02, 0, 0, 0, 0, 0x03 },
		{ 0x12, 0, 0, 0, 0, 0x02 },
		{ 0x02, 0, 0, 0, 0x01, 0x02 },
	};
	__u8 orig[BUF], b[BUF];
	struct pkt_encap e;
	struct pkt_spec in;
	struct result r;
	struct env env;
	size_t n, m;
	unsigned int i;
	int outer, encap;

	ASSERT_EQ(0, env_open_mac(&env, 0, mine))
		TH_LOG("cannot load xlb_decap.bpf.o: %s", strerror(errno));
	for (outer = 4; outer <= 6; outer += 2)
	for (encap = XLB_ENCAP_IPIP; encap <= XLB_ENCAP_GUE; encap++) {
		inner_spec(&in, 4, IPPROTO_TCP, 1);
		memcpy(in.dst_mac, mine, 6);
		n = pkt_build(&in, orig, sizeof(orig));
		pkt_encap_init(&e, encap, outer);
		m = pkt_build_encap(&e, &in, b, sizeof(b));
		run(&env, b, m, &r);
		EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "to host_mac"))
			TH_LOG("%s over %s", encap_name(encap), fam_name(outer));
		for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
			memcpy(in.dst_mac, others[i], 6);
			m = pkt_build_encap(&e, &in, b, sizeof(b));
			run(&env, b, m, &r);
			EXPECT_TRUE(check(&r, b, m, XLB_DECAP_NOT_LOCAL,
					  "to another host's MAC"))
				TH_LOG("%s over %s, MAC %d", encap_name(encap),
				       fam_name(outer), i);
		}
	}
	env_close(&env);
}

/* Outer header offsets of a frame from pkt_build_encap() (one tag). */
struct layout {
	__u8 *ip, *udp, *gue;
	size_t hl;
};

static struct layout layout(__u8 *b, int outer)
{
	struct layout l = { .ip = b + 18, .hl = outer == 4 ? 20 : 40 };

	l.udp = l.ip + l.hl;
	l.gue = l.udp + 8;
	return l;
}

TEST_F(decap_misc, gue_version_1_unchanged_and_counted)
{
	__u8 orig[BUF], b[BUF];
	struct result r;
	size_t n, m;
	int outer;

	for (outer = 4; outer <= 6; outer += 2) {
		m = gue_frame(outer, 4, XLB_GUE_PORT_DEFAULT, orig, &n, b);
		layout(b, outer).gue[0] |= 0x40;
		run(&self->env, b, m, &r);
		EXPECT_TRUE(check(&r, b, m, XLB_DECAP_MALFORMED, "GUE version 1"))
			TH_LOG("over %s", fam_name(outer));
	}
}

/* A broken tunnel frame: passes unchanged, counted as malformed. */
struct breakage {
	const char *name;
	int encap, outer, inner;
};

static const struct breakage breakages[] = {
	{ "ip4 checksum",		XLB_ENCAP_IPIP, 4, 4 },
	{ "ip4 checksum",		XLB_ENCAP_GUE,  4, 6 },
	{ "ip4 tot_len beyond frame",	XLB_ENCAP_IPIP, 4, 4 },
	{ "ip4 tot_len below header",	XLB_ENCAP_GUE,  4, 4 },
	{ "ip4 MF",			XLB_ENCAP_IPIP, 4, 6 },
	{ "ip4 offset",			XLB_ENCAP_IPIP, 4, 4 },
	{ "ip4 MF",			XLB_ENCAP_GUE,  4, 4 },
	{ "ip4 ihl beyond frame",	XLB_ENCAP_IPIP, 4, 4 },
	{ "ip6 payload_len 0",		XLB_ENCAP_IPIP, 6, 6 },
	{ "ip6 payload_len beyond",	XLB_ENCAP_GUE,  6, 4 },
	{ "udp len short",		XLB_ENCAP_GUE,  4, 4 },
	{ "udp len beyond",		XLB_ENCAP_GUE,  6, 6 },
	{ "gue C bit",			XLB_ENCAP_GUE,  4, 4 },
	{ "gue hlen beyond",		XLB_ENCAP_GUE,  6, 4 },
	{ "gue proto udp",		XLB_ENCAP_GUE,  4, 4 },
	{ "gue proto says 6, inner 4",	XLB_ENCAP_GUE,  4, 4 },
	{ "gue proto says 4, inner 6",	XLB_ENCAP_GUE,  6, 6 },
	{ "ipip says 6, inner 4",	XLB_ENCAP_IPIP, 4, 4 },
	{ "ipip says 4, inner 6",	XLB_ENCAP_IPIP, 6, 6 },
	{ "inner header cut",		XLB_ENCAP_IPIP, 4, 6 },
	{ "inner header cut",		XLB_ENCAP_GUE,  6, 4 },
};

/* Break frame b (m bytes) as k says; returns the new length. */
static size_t apply(const struct breakage *k, __u8 *b, size_t m)
{
	struct layout l = layout(b, k->outer);
	const char *nm = k->name;
	bool v4 = k->outer == 4;

	if (!strcmp(nm, "ip4 checksum")) {
		l.ip[11] ^= 0x10;
		return m;
	} else if (!strcmp(nm, "ip4 tot_len beyond frame")) {
		pkt_put16(l.ip + 2, pkt_get16(l.ip + 2) + 1);
	} else if (!strcmp(nm, "ip4 tot_len below header")) {
		pkt_put16(l.ip + 2, 19);
	} else if (!strcmp(nm, "ip4 MF")) {
		l.ip[6] |= 0x20;
	} else if (!strcmp(nm, "ip4 offset")) {
		l.ip[7] |= 0x01;
	} else if (!strcmp(nm, "ip4 ihl beyond frame")) {
		/* IHL 15 with 60 - 20 bytes too few after the header */
		l.ip[0] = 0x4f;
		m = 18 + 20 + 30;
		pkt_put16(l.ip + 2, 50);
	} else if (!strcmp(nm, "ip6 payload_len 0")) {
		pkt_put16(l.ip + 4, 0);
	} else if (!strcmp(nm, "ip6 payload_len beyond")) {
		pkt_put16(l.ip + 4, pkt_get16(l.ip + 4) + 1);
	} else if (!strcmp(nm, "udp len short")) {
		pkt_put16(l.udp + 4, 11);
	} else if (!strcmp(nm, "udp len beyond")) {
		pkt_put16(l.udp + 4, pkt_get16(l.udp + 4) + 1);
	} else if (!strcmp(nm, "gue C bit")) {
		l.gue[0] |= 0x20;
	} else if (!strcmp(nm, "gue hlen beyond")) {
		/* 31 words: more than the datagram holds after GUE */
		l.gue[0] = 31;
		m = (l.gue - b) + 4 + 100;
		pkt_put16(l.ip + 4, m - 18 - 40);
		pkt_put16(l.udp + 4, m - 18 - 40);
	} else if (!strcmp(nm, "gue proto udp")) {
		l.gue[1] = IPPROTO_UDP;
	} else if (!strcmp(nm, "gue proto says 6, inner 4")) {
		l.gue[1] = IPPROTO_IPV6;
	} else if (!strcmp(nm, "gue proto says 4, inner 6")) {
		l.gue[1] = IPPROTO_IPIP;
	} else if (!strcmp(nm, "ipip says 6, inner 4")) {
		l.ip[9] = IPPROTO_IPV6;
	} else if (!strcmp(nm, "ipip says 4, inner 6")) {
		l.ip[6] = IPPROTO_IPIP;
	} else if (!strcmp(nm, "inner header cut")) {
		/* consistent outer lengths, inner header 10 bytes short */
		size_t keep = k->inner == 4 ? 10 : 30;
		size_t inner_off = m - (k->inner == 4 ? 20 + 20 : 40 + 20) -
				   (sizeof(payload) - 1);

		m = inner_off + keep;
		if (v4)
			pkt_put16(l.ip + 2, m - 18);
		else
			pkt_put16(l.ip + 4, m - 18 - 40);
		if (k->encap == XLB_ENCAP_GUE)
			pkt_put16(l.udp + 4, m - (l.udp - b));
	}
	if (v4)
		pkt_ip4_set_csum(l.ip);
	return m;
}

TEST_F(decap_misc, malformed_tunnels_unchanged_and_counted)
{
	__u8 b[BUF];
	struct pkt_encap e;
	struct pkt_spec in;
	struct result r;
	unsigned int i;
	size_t m;

	for (i = 0; i < sizeof(breakages) / sizeof(breakages[0]); i++) {
		const struct breakage *k = &breakages[i];
		char what[96];

		inner_spec(&in, k->inner, IPPROTO_TCP, 1);
		pkt_encap_init(&e, k->encap, k->outer);
		m = pkt_build_encap(&e, &in, b, sizeof(b));
		ASSERT_NE(0, m);
		m = apply(k, b, m);
		snprintf(what, sizeof(what), "%s, %s over %s", k->name,
			 encap_name(k->encap), fam_name(k->outer));
		run(&self->env, b, m, &r);
		EXPECT_TRUE(check(&r, b, m, XLB_DECAP_MALFORMED, what));
	}
}

/* Outer IPv4 options, a redirected GUE packet, Ethernet padding. */
TEST_F(decap_misc, unusual_but_valid_tunnels)
{
	static const __u8 opts[4] = { 1, 1, 1, 0 };	/* NOP NOP NOP EOL */
	__u8 orig[BUF], b[BUF], ip[BUF];
	struct pkt_spec in, o;
	struct pkt_encap e;
	struct result r;
	size_t n, m;

	inner_spec(&in, 6, IPPROTO_UDP, 1);
	n = pkt_build(&in, orig, sizeof(orig));

	/* IPv4 outer with IHL 6 */
	pkt_spec_init(&o, 4, IPPROTO_IPV6);
	memcpy(o.vlan, in.vlan, sizeof(o.vlan));
	o.vlans = in.vlans;
	memcpy(o.ip_opts, opts, sizeof(opts));
	o.ip_opts_len = sizeof(opts);
	o.payload = ip;
	o.payload_len = inner_ip(&in, ip);
	m = pkt_build(&o, b, sizeof(b));
	run(&self->env, b, m, &r);
	EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "outer IPv4 options"));

	/* GUE after xlb_redirect: index 1, addressed to the secondary */
	pkt_encap_init(&e, XLB_ENCAP_GUE, 6);
	e.hop_index = 1;
	memcpy(e.dst, e.hops[1], 16);
	m = pkt_build_encap(&e, &in, b, sizeof(b));
	run(&self->env, b, m, &r);
	EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "GUE hop index 1"));

	/* GUE with one hop */
	e.hop_count = 1;
	e.hop_index = 0;
	memcpy(e.dst, e.hops[0], 16);
	m = pkt_build_encap(&e, &in, b, sizeof(b));
	run(&self->env, b, m, &r);
	EXPECT_TRUE(check(&r, orig, n, XLB_DECAP_DONE, "GUE one hop"));

	/* Ethernet padding after the outer packet stays after the inner */
	inner_spec(&in, 4, IPPROTO_TCP, 0);
	in.payload_len = 0;
	n = pkt_build(&in, orig, sizeof(orig));
	pkt_encap_init(&e, XLB_ENCAP_IPIP, 4);
	m = pkt_build_encap(&e, &in, b, sizeof(b));
	memset(b + m, 0, 6);
	memset(orig + n, 0, 6);
	run(&self->env, b, m + 6, &r);
	EXPECT_TRUE(check(&r, orig, n + 6, XLB_DECAP_DONE, "padded frame"));
}

TEST_HARNESS_MAIN
