// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: performance figures of xlb.  Benchmarks print numbers; they
 * never pass or fail.  Subcommands:
 *   tables     build time of Maglev and ring tables over M and N
 *   pkt        ns per packet of the data path under BPF_PROG_TEST_RUN, as
 *              a ratio to a trivial XDP_TX program measured in the same run;
 *              the verifier's figures for the program
 *   pkt-scale  the same against the number of VIPs and the occupancy of the
 *              connection table
 *   publish    a table written and switched on a loaded data path, and
 *              forwarding while tables are published
 *   memory     bytes per connection entry, table, VIP and backend, as the
 *              kernel reports the maps' memory
 *   control    xlbd: change -> live latency, a large config applied from
 *              scratch, restart until the daemon answers again
 *
 * With -j every figure is one JSON object with the keys tools/xlb-bench/suite.sh
 * collects into results.json (name, value, unit, statistic, min, max, runs,
 * baseline, ratio, params), the subcommand's own keys beside them.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "clock.h"
#include "datapath.h"
#include "lookup_table.h"
#include "mono.h"
#include "number.h"
#include "pkt.h"
#include "rand.h"
#include "xlb.skel.h"
#include "xlb_reflect.skel.h"

#define MAX_LEVELS	16
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct opts {
	int json;
	int runs;
	int quick;	/* smoke mode for make test: fewer runs, smaller cases */
	long calls;	/* pkt, pkt-scale: test runs per path and round */
	int rounds;	/* pkt, pkt-scale: rounds, each with its own baseline */
	const char *path;	/* pkt: only this path */
	int n_vips;			/* pkt-scale: VIP counts */
	long vips[MAX_LEVELS];
	int n_fill;			/* pkt-scale: connection table fill */
	double fill[MAX_LEVELS];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* --- figures ---------------------------------------------------------------- */

/*
 * One figure: the common record of results.json.  value is the statistic
 * `stat` over `runs` measurements, min and max their range; baseline, when
 * the figure has a natural one, is measured in the same run, in the same
 * unit.
 */
struct fig {
	const char *bench;
	char name[96];
	const char *unit;
	const char *stat;	/* median, mean, exact */
	double value, min, max;
	double baseline;	/* 0: none */
	const char *baseline_what;
	int runs;
	char params[768];	/* JSON members: "k":v,... */
	char extra[384];	/* the subcommand's own keys, JSON members */
};

static void __attribute__((format(printf, 3, 4)))
add(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len >= cap - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

#define PARAM(f, ...)	add((f)->params, sizeof((f)->params), __VA_ARGS__)
#define EXTRA(f, ...)	add((f)->extra, sizeof((f)->extra), __VA_ARGS__)

static void fig_json(const struct fig *f)
{
	printf("{\"bench\":\"%s\",\"name\":\"%s\",\"value\":%.10g,\"unit\":\"%s\",\"statistic\":\"%s\",\"min\":%.10g,\"max\":%.10g,\"runs\":%d,",
	       f->bench, f->name, f->value, f->unit, f->stat, f->min, f->max,
	       f->runs);
	if (f->baseline > 0) {
		/* a file name (pkt --against) may need escaping */
		struct json_object *what = json_object_new_string(
			f->baseline_what ? f->baseline_what : "");

		printf("\"baseline\":%.10g,\"ratio\":%.4f,\"baseline_is\":%s,",
		       f->baseline, f->value / f->baseline,
		       json_object_to_json_string_ext(what,
						      JSON_C_TO_STRING_PLAIN));
		json_object_put(what);
	} else
		printf("\"baseline\":null,\"ratio\":null,");
	printf("\"params\":{%s}%s%s}\n", f->params, f->extra[0] ? "," : "",
	       f->extra);
	fflush(stdout);
}

/* The generic human line of the newer subcommands. */
static void fig_text(const struct fig *f)
{
	printf("%-32s %14.10g %-7s", f->name, f->value, f->unit);
	if (f->runs > 1)
		printf(" [%.6g .. %.6g]", f->min, f->max);
	if (f->baseline > 0)
		printf("  x%.2f of %.6g (%s)", f->value / f->baseline,
		       f->baseline, f->baseline_what);
	printf("\n");
	fflush(stdout);
}

static void fig_emit(const struct opts *o, const struct fig *f)
{
	if (o->json)
		fig_json(f);
	else
		fig_text(f);
}

/* Sort v and set value (median), min and max of f from it. */
static void fig_median(struct fig *f, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	f->stat = "median";
	f->runs = n;
	f->value = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	f->min = v[0];
	f->max = v[n - 1];
}

static double median_of(double *v, int n)
{
	struct fig f = { 0 };

	fig_median(&f, v, n);
	return f.value;
}

static void fig_exact(struct fig *f, double v)
{
	f->stat = "exact";
	f->runs = 1;
	f->value = f->min = f->max = v;
}

/* --- tables ----------------------------------------------------------------- */

static const uint32_t table_ms[] = { 4093, 65537, 1048573 };
static const uint32_t table_ns[] = { 10, 100, 1000 };

static void bench_backends(struct xlb_backend_spec *b, char (*names)[24],
			   uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "10.1.%u.%u", i / 256,
			 i % 256);
		b[i] = (struct xlb_backend_spec){ .name = names[i], .weight = 1,
						  .id = (uint16_t)i };
	}
}

static int bench_table_case(uint32_t algo, uint32_t m, uint32_t n,
			    const struct opts *o)
{
	struct xlb_table_params p = {
		.algo = algo, .size = m, .vnodes = XLB_RING_VNODES_DEFAULT,
		.key = { 0x6b65792d6b657931ULL, 0x6b65792d6b657932ULL },
	};
	struct xlb_backend_spec *b = calloc(n, sizeof(*b));
	char (*names)[24] = calloc(n, sizeof(*names));
	double *t = calloc((size_t)o->runs, sizeof(*t));
	size_t bytes = (size_t)m * sizeof(struct xlb_slot);
	struct fig f = { .bench = "tables", .unit = "us" };
	struct xlb_err err;
	struct xlb_table tab;
	int r, ret = 0;

	if (!b || !names || !t) {
		fprintf(stderr, "xlb-bench: out of memory\n");
		ret = 1;
		goto out;
	}
	bench_backends(b, names, n);
	for (r = 0; r < o->runs; r++) {
		double t0 = xlb_mono_us();

		if (xlb_table_build(&tab, &p, b, n, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			ret = 1;
			goto out;
		}
		t[r] = xlb_mono_us() - t0;
		xlb_table_free(&tab);
	}
	fig_median(&f, t, o->runs);
	snprintf(f.name, sizeof(f.name), "tables.%s.M%u.N%u",
		 xlb_algo_name(algo), m, n);
	PARAM(&f, "\"algo\":\"%s\",\"M\":%u,\"N\":%u,\"vnodes\":%u,\"slots_per_backend\":%.1f",
	      xlb_algo_name(algo), m, n,
	      algo == XLB_ALGO_RING ? p.vnodes : 0, (double)m / n);
	if (o->json) {
		EXTRA(&f, "\"algo\":\"%s\",\"table_size\":%u,\"backends\":%u,\"vnodes\":%u,\"median_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f,\"table_bytes\":%zu",
		      xlb_algo_name(algo), m, n,
		      algo == XLB_ALGO_RING ? p.vnodes : 0, f.value, f.min,
		      f.max, bytes);
		fig_json(&f);
	} else {
		printf("%-7s %9u %6u %7s %10.1f %10.1f %10.1f %12zu\n",
		       xlb_algo_name(algo), m, n,
		       algo == XLB_ALGO_RING ? "100" : "-", f.value, f.min,
		       f.max, bytes);
	}
out:
	free(b);
	free(names);
	free(t);
	return ret;
}

static int bench_tables(const struct opts *o)
{
	size_t a, i, j;
	int ret = 0;

	if (!o->json) {
		printf("table build time, median of %d runs (one core)\n", o->runs);
		printf("%-7s %9s %6s %7s %10s %10s %10s %12s\n", "algo", "M",
		       "N", "vnodes", "median_us", "min_us", "max_us",
		       "table_bytes");
	}
	for (a = 0; a < 2; a++)
		for (i = 0; i < ARRAY_SIZE(table_ms); i++)
			for (j = 0; j < ARRAY_SIZE(table_ns); j++) {
				if (o->quick && (table_ms[i] > 65537 ||
						 table_ns[j] > 100))
					continue;
				ret |= bench_table_case(a ? XLB_ALGO_RING :
							    XLB_ALGO_MAGLEV,
							table_ms[i],
							table_ns[j], o);
			}
	return ret;
}

/* --- the data path under BPF_PROG_TEST_RUN ------------------------------------ */

#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8::10"
#define CLIENT4		"198.51.100.7"
#define CLIENT6		"2001:db8:1::7"
#define OTHER4		"203.0.113.99"
#define BACKENDS	4
#define PKT_BUF		256

enum { VIP_IPIP, VIP_GUE, VIP_V6, VIP_STATELESS, VIP_FIB, VIP_GUE6, VIPS };

/*
 * The FIB path needs a real interface with a route and a neighbour: the
 * benchmark moves itself into a private network namespace (gone when it
 * exits) and makes a veth pair there.
 */
#define FIB_DEV		"xlbb0"
#define FIB_NET		"10.99.0"

static int fib_ifindex;

static int fib_setup(void)
{
	char cmd[512];
	int i;

	if (unshare(CLONE_NEWNET))
		return -errno;
	snprintf(cmd, sizeof(cmd),
		 "sysctl -qw net.ipv4.conf.all.forwarding=1 && "
		 "ip link set lo up && ip link add " FIB_DEV " type veth peer name xlbb1 && "
		 "ip link set " FIB_DEV " up && ip link set xlbb1 up && "
		 "ip addr add " FIB_NET ".1/24 dev " FIB_DEV);
	if (system(cmd))
		return -EIO;
	for (i = 0; i < BACKENDS; i++) {
		snprintf(cmd, sizeof(cmd),
			 "ip neigh replace " FIB_NET ".%d lladdr 02:00:00:00:99:%02d dev " FIB_DEV " nud permanent",
			 10 + i, i);
		if (system(cmd))
			return -EIO;
	}
	fib_ifindex = (int)if_nametoindex(FIB_DEV);
	return fib_ifindex ? 0 : -ENODEV;
}

struct pkt_bench {
	struct xlb_bpf *skel;
	struct xlb_reflect_bpf *reflect;
	struct xlb_dp dp;
	struct xlb_config cfg;
	int dp_open;
};

static void addr(int family, const char *s, __be32 a[4])
{
	memset(a, 0, 16);
	inet_pton(family == 4 ? AF_INET : AF_INET6, s, a);
}

/* The names of VIP v's backends: 10.1.v.i or 2001:db8:2::v:i. */
static void vip_backend_name(char *buf, size_t cap, int v, int family, int i)
{
	if (v == VIP_FIB)
		snprintf(buf, cap, FIB_NET ".%d", 10 + i);
	else if (family == 4)
		snprintf(buf, cap, "10.1.%d.%d", v, i + 1);
	else
		snprintf(buf, cap, "2001:db8:2::%d:%d", v, i + 1);
}

/* A Maglev table of m slots over the backends of base VIP v. */
static int vip_table(struct pkt_bench *b, int v, int family, int n,
		     uint32_t m, struct xlb_table *t, struct xlb_err *err)
{
	struct xlb_table_params tp = { .algo = XLB_ALGO_MAGLEV, .size = m,
				       .key = b->cfg.key };
	struct xlb_backend_spec spec[BACKENDS];
	char names[BACKENDS][48];
	int i;

	for (i = 0; i < n; i++) {
		vip_backend_name(names[i], sizeof(names[i]), v, family, i);
		spec[i] = (struct xlb_backend_spec){
			.name = names[i], .weight = 1,
			.id = (__u16)(v * BACKENDS + i) };
	}
	return xlb_table_build(t, &tp, spec, (uint32_t)n, err);
}

/* Backends 4v..4v+3 of VIP v, next hop set (but for the FIB VIP). */
static int setup_vip(struct pkt_bench *b, int v, int family, __u16 port,
		     __u32 flags, int encap, struct xlb_err *err)
{
	struct xlb_vip_key k = { .port = htons(port), .proto = IPPROTO_TCP,
				 .family = (__u8)family };
	struct xlb_vip vip = { .id = v, .flags = flags };
	char name[48];
	struct xlb_table t;
	int i, ret;

	addr(family, family == 4 ? VIP4 : VIP6, k.addr);
	for (i = 0; i < BACKENDS; i++) {
		struct xlb_backend be = {
			.family = (__u8)family, .encap = (__u8)encap,
			.flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP,
			.epoch = 1, .dmac = { 2, 0, 0, 0, v, i },
			.smac = { 2, 0, 0, 0, 0, 1 },
		};

		if (v == VIP_FIB)
			be.flags = XLB_BE_F_VALID;
		vip_backend_name(name, sizeof(name), v, family, i);
		addr(family, name, be.addr);
		ret = xlb_dp_backend_set(&b->dp, (__u16)(v * BACKENDS + i), &be,
					 err);
		if (ret)
			return ret;
	}
	ret = vip_table(b, v, family, BACKENDS, 65537, &t, err);
	if (ret)
		return ret;
	ret = xlb_dp_table_publish(&b->dp, v, &t, err);
	xlb_table_free(&t);
	if (ret)
		return ret;
	return xlb_dp_vip_set(&b->dp, &k, &vip, err);
}

/* Verifier figures: "processed N insns" from a stats-level load log. */
static char verifier_log[1 << 16];

/* Load the data path; with `all`, the six VIPs of the paths, else VIP_IPIP. */
/* Connection table size of the data paths the benchmarks load (0: default). */
static __u32 ct_entries;

static int pkt_setup(struct pkt_bench *b, int all, struct xlb_err *err)
{
	int ret;

	b->skel = xlb_bpf__open();
	b->reflect = xlb_reflect_bpf__open_and_load();
	if (!b->skel || !b->reflect)
		return xlb_errf(err, errno, "cannot open the BPF objects: %s",
				strerror(errno));
	if (ct_entries &&
	    bpf_map__set_max_entries(b->skel->maps.xlb_conntrack, ct_entries))
		return xlb_errf(err, EINVAL, "cannot size the connection table");
	bpf_program__set_log_buf(b->skel->progs.xlb_main, verifier_log,
				 sizeof(verifier_log));
	bpf_program__set_log_level(b->skel->progs.xlb_main, 4);
	if (xlb_bpf__load(b->skel))
		return xlb_errf(err, errno, "cannot load xlb.bpf.o (root needed): %s",
				strerror(errno));
	ret = xlb_dp_from_obj(&b->dp, b->skel->obj, err);
	if (ret)
		return ret;
	b->dp_open = 1;
	xlb_config_defaults(&b->cfg);
	b->cfg.key = (struct xlb_hash_key){ 0x62656e63686b6579ULL, 42 };
	inet_pton(AF_INET, "10.0.0.1", &b->cfg.src4);
	addr(6, "2001:db8:ff::1", b->cfg.src6);
	ret = xlb_dp_config_set(&b->dp, &b->cfg);
	if (ret)
		return xlb_errf(err, -ret, "cannot write the config map");
	ret = setup_vip(b, VIP_IPIP, 4, 80, 0, XLB_ENCAP_IPIP, err);
	if (ret || !all)
		return ret;
	ret = setup_vip(b, VIP_GUE, 4, 443, 0, XLB_ENCAP_GUE, err);
	ret = ret ? ret : setup_vip(b, VIP_V6, 6, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_STATELESS, 4, 8080,
				    XLB_VIP_F_STATELESS, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_FIB, 4, 81, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE6, 6, 443, 0, XLB_ENCAP_GUE, err);
	return ret;
}

static void pkt_teardown(struct pkt_bench *b)
{
	if (b->dp_open)
		xlb_dp_close(&b->dp);
	xlb_bpf__destroy(b->skel);
	xlb_reflect_bpf__destroy(b->reflect);
}

/* A TCP ACK with 64 bytes of payload; addresses as 16-byte arrays. */
static size_t make_packet_a(__u8 *buf, int family, const __be32 src[4],
			    const __be32 dst[4], __u16 dport, __u16 sport)
{
	static const char payload[64];
	struct pkt_spec s;

	pkt_spec_init(&s, family, IPPROTO_TCP);
	memcpy(s.src, src, 16);
	memcpy(s.dst, dst, 16);
	s.sport = sport;
	s.dport = dport;
	s.tcp_flags = PKT_TCP_ACK;
	s.payload = payload;
	s.payload_len = sizeof(payload);
	return pkt_build(&s, buf, PKT_BUF);
}

static size_t make_packet(__u8 *buf, int family, const char *dst, __u16 dport,
			  __u16 sport, __u32 client)
{
	__be32 s[4], d[4];

	addr(family, family == 4 ? CLIENT4 : CLIENT6, s);
	if (family == 4)
		s[0] ^= htonl(client);
	else
		s[3] ^= htonl(client);
	addr(family, dst, d);
	return make_packet_a(buf, family, s, d, dport, sport);
}

struct path {
	const char *name;
	int family;
	const char *dst;
	__u16 dport;
	int new_flow;		/* a different flow every call */
	int expect;		/* XDP action the path must end in */
	int fib;		/* arrives on the veth: next hop by FIB lookup */
	int rotate;		/* call i: flow i % rotate, all established */
};

/*
 * Flows the *_rotate paths cycle through: 8 times the flow cache's slots
 * (structs.h), so that a flow's slot always holds another flow when its
 * turn comes again: a connection (or table) hit that misses the cache.
 */
#define ROTATE_FLOWS	(8 * XLB_FC_SLOTS)

static const struct path paths[] = {
	{ "non_vip_pass", 4, OTHER4, 80, 0, XDP_PASS, 0, 0 },
	{ "ct_hit", 4, VIP4, 80, 0, XDP_TX, 0, 0 },
	{ "new_flow", 4, VIP4, 80, 1, XDP_TX, 0, 0 },
	{ "stateless", 4, VIP4, 8080, 0, XDP_TX, 0, 0 },
	{ "stateless_new", 4, VIP4, 8080, 1, XDP_TX, 0, 0 },
	{ "ipv6_ct_hit", 6, VIP6, 80, 0, XDP_TX, 0, 0 },
	{ "gue_ct_hit", 4, VIP4, 443, 0, XDP_TX, 0, 0 },
	{ "gue6_ct_hit", 6, VIP6, 443, 0, XDP_TX, 0, 0 },
	{ "fib_ct_hit", 4, VIP4, 81, 0, XDP_TX, 1, 0 },
	{ "ct_hit_rotate", 4, VIP4, 80, 0, XDP_TX, 0, ROTATE_FLOWS },
	{ "stateless_rotate", 4, VIP4, 8080, 0, XDP_TX, 0, ROTATE_FLOWS },
};

#define NPATHS	ARRAY_SIZE(paths)

static const struct path baseline_path = { "baseline", 4, VIP4, 80, 0, XDP_TX, 0, 0 };

/*
 * Where the packets of a measured case come from: the path's one packet,
 * or gen(ctx, i) for call i (userspace work between calls, not timed: the
 * figure is the kernel's own per-run time).
 */
typedef size_t (*pkt_gen)(void *ctx, long i, __u8 *buf);

/* Mean kernel-measured ns per run over `calls` runs with repeat = 1. */
static int run_case(int prog_fd, const struct path *pa, long first,
		    long calls, pkt_gen gen, void *ctx, double *ns);

/* New flows, numbered from base: no flow repeats within a process. */
struct new_flow_gen {
	const struct path *pa;
	long base;
};

/* First new flow of an --against build: far from any of this build's. */
#define AGAINST_FLOWS	(1L << 32)

static size_t gen_new_flow(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;
	long k = g->base + i;

	return make_packet(buf, g->pa->family, g->pa->dst, g->pa->dport,
			   (__u16)(1024 + k % 60000), (__u32)(k / 60000 + 1));
}

/* Established flows, in turn (struct path.rotate): the same for any build. */
static size_t gen_rotate(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;
	long k = (g->base + i) % g->pa->rotate;

	return make_packet(buf, g->pa->family, g->pa->dst, g->pa->dport,
			   (__u16)(1024 + k), 7);
}

/* Calls first .. first + calls - 1 of gen (or the path's one packet). */
static int run_case(int prog_fd, const struct path *pa, long first,
		    long calls, pkt_gen gen, void *ctx, double *ns)
{
	__u8 in[PKT_BUF], out[512];
	unsigned long long total = 0;
	size_t len = make_packet(in, pa->family, pa->dst, pa->dport, 40000, 0);
	struct xdp_md xctx = { .ingress_ifindex = pa->fib ? fib_ifindex : 0 };
	long i;

	for (i = 0; i < calls; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_out = out, .data_size_out = sizeof(out),
			    .repeat = 1, .ctx_in = pa->fib ? &xctx : NULL,
			    .ctx_size_in = pa->fib ? sizeof(xctx) : 0);

		if (gen)
			len = gen(ctx, first + i, in);
		xctx.data_end = (__u32)len;	/* the kernel wants the frame size */
		o.data_size_in = (__u32)len;
		if (bpf_prog_test_run_opts(prog_fd, &o))
			return -errno;
		if (pa->expect >= 0 && (int)o.retval != pa->expect) {
			fprintf(stderr, "xlb-bench: path %s: XDP action %u, expected %d\n",
				pa->name, o.retval, pa->expect);
			return -EPROTO;
		}
		total += o.duration;
	}
	*ns = (double)total / calls;
	return 0;
}

/*
 * pkt --against FILE: another build of xlb.bpf.o, loaded on the maps of
 * this one (same names, same layout), runs each path in place of the
 * XDP_TX program.  The ratio then compares two builds of the data path at
 * the same moment of the machine, which two runs one after the other do
 * not (their ratios drift by more than most changes are worth).
 */
static const char *against;
static struct bpf_object *against_obj;

static int against_load(struct xlb_bpf *skel, struct xlb_err *err)
{
	struct bpf_program *prog;
	struct bpf_map *m;
	char msg[128];
	int ret;

	against_obj = bpf_object__open_file(against, NULL);
	if (!against_obj) {
		ret = -errno;
		libbpf_strerror(ret, msg, sizeof(msg));
		return xlb_errf(err, -ret, "--against %s: cannot open: %s",
				against, msg);
	}
	prog = bpf_object__find_program_by_name(against_obj, "xlb_main");
	if (!prog)
		return xlb_errf(err, EINVAL, "--against %s: no program xlb_main (not a build of xlb.bpf.o)",
				against);
	bpf_object__for_each_map(m, against_obj) {
		struct bpf_map *own = bpf_object__find_map_by_name(
			skel->obj, bpf_map__name(m));

		if (!own || bpf_map__fd(own) < 0)
			continue;	/* .rodata and the like: its own */
		if (bpf_map__reuse_fd(m, bpf_map__fd(own)))
			return xlb_errf(err, errno, "--against %s: cannot share map %s",
					against, bpf_map__name(m));
	}
	if (bpf_object__load(against_obj))
		return xlb_errf(err, errno, "--against %s: cannot load it on this build's maps (another map layout?): %s",
				against, strerror(errno));
	return bpf_program__fd(prog);
}

/*
 * The case and the baseline program in alternating blocks of calls, so
 * that both see the same machine: on a shared host the speed of a CPU
 * changes from one second to the next, and a baseline measured before
 * the case would not be the case's baseline.
 */
#define PAIR_BLOCK	256

static int run_pair(int base_fd, int prog_fd, const struct path *pa,
		    long calls, pkt_gen gen, void *ctx, double *base_ns,
		    double *ns)
{
	double b = 0, p = 0, x;
	long done, n;
	int ret;

	for (done = 0; done < calls; done += n) {
		n = calls - done < PAIR_BLOCK ? calls - done : PAIR_BLOCK;
		if (against_obj) {
			/* the same path; new flows of its own, never this one's */
			struct new_flow_gen g = { pa, AGAINST_FLOWS };

			if (gen)
				g.base += ((struct new_flow_gen *)ctx)->base;
			/*
			 * the same established flows, half a turn away: not
			 * the ones this build's calls just brought to cache
			 */
			if (gen == gen_rotate)
				g.base = pa->rotate / 2;
			ret = run_case(base_fd, pa, done, n, gen, &g, &x);
		} else {
			ret = run_case(base_fd, &baseline_path, 0, n, NULL,
				       NULL, &x);
		}
		if (ret)
			return ret;
		b += x * n;
		ret = run_case(prog_fd, pa, done, n, gen, ctx, &x);
		if (ret)
			return ret;
		p += x * n;
	}
	*base_ns = b / calls;
	*ns = p / calls;
	return 0;
}

static long verifier_insns(void)
{
	const char *p = strstr(verifier_log, "processed ");

	return p ? strtol(p + 10, NULL, 10) : -1;
}

/* Keep this thread on one CPU: test runs execute where the caller runs. */
static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void bench_fail(struct pkt_bench *b, const char *what, int ret)
{
	__u64 ev[XLB_EV_MAX];
	int i;

	fprintf(stderr, "xlb-bench: %s: %s\n", what,
		ret == -EPROTO ? "the data path is not set up as the benchmark expects" :
				 strerror(-ret));
	if (ret == -EPROTO && b->dp_open && !xlb_dp_events(&b->dp, ev))
		for (i = 0; i < XLB_EV_MAX; i++)
			if (ev[i])
				fprintf(stderr, "  event %s: %llu\n",
					xlb_event_name(i),
					(unsigned long long)ev[i]);
}

static void verifier_figures(const struct opts *o, struct pkt_bench *b)
{
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	struct fig f = { .bench = "verifier" };

	bpf_obj_get_info_by_fd(bpf_program__fd(b->skel->progs.xlb_main), &info,
			       &info_len);
	if (!o->json) {
		printf("verifier: %ld instructions processed; program %u bytes xlated, %u jited\n",
		       verifier_insns(), info.xlated_prog_len,
		       info.jited_prog_len);
		return;
	}
	snprintf(f.name, sizeof(f.name), "verifier.processed_insns");
	f.unit = "insns";
	fig_exact(&f, (double)verifier_insns());
	f.baseline = 1000000;
	f.baseline_what = "the verifier's limit";
	PARAM(&f, "\"program\":\"xlb_main\",\"kernel_log_level\":4");
	fig_json(&f);
	f.baseline = 0;
	f.params[0] = 0;
	snprintf(f.name, sizeof(f.name), "verifier.xlated_bytes");
	f.unit = "B";
	fig_exact(&f, info.xlated_prog_len);
	PARAM(&f, "\"program\":\"xlb_main\",\"insns\":%u",
	      info.xlated_prog_len / 8);
	fig_json(&f);
	f.params[0] = 0;
	snprintf(f.name, sizeof(f.name), "verifier.jited_bytes");
	fig_exact(&f, info.jited_prog_len);
	PARAM(&f, "\"program\":\"xlb_main\",\"arch\":\"native JIT\"");
	fig_json(&f);
}

static int bench_pkt(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	int nr = o->rounds, main_fd, base_fd, r, ret;
	double *base = calloc(NPATHS * (size_t)nr, sizeof(double));
	double *ns = calloc(NPATHS * (size_t)nr, sizeof(double));
	double *ratio = calloc((size_t)nr, sizeof(double));
	double warm;
	size_t i;

	if (!base || !ns || !ratio)
		return 1;
	if (fib_setup()) {
		fprintf(stderr, "xlb-bench: cannot make a network namespace for the FIB path (root needed)\n");
		ret = 1;
		goto out;
	}
	if (pkt_setup(&b, 1, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		ret = 1;
		goto out;
	}
	pin_cpu(sched_getcpu());	/* test runs execute where we run */
	main_fd = bpf_program__fd(b.skel->progs.xlb_main);
	base_fd = bpf_program__fd(b.reflect->progs.xlb_reflect);
	if (against) {
		base_fd = against_load(b.skel, &err);
		if (base_fd < 0) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			ret = 1;
			goto out;
		}
	}
	for (r = 0, ret = 0; r < nr; r++) {
		for (i = 0; !ret && i < NPATHS; i++) {
			struct new_flow_gen g = { &paths[i], (long)r * o->calls };

			if (o->path && strcmp(o->path, paths[i].name))
				continue;
			/* every round of new flows starts from an empty table */
			if (paths[i].new_flow)
				xlb_dp_ct_flush(&b.dp);
			/* rotating flows: established before the first round */
			if (paths[i].rotate && !r)
				ret = run_case(main_fd, &paths[i], 0,
					       paths[i].rotate, gen_rotate, &g,
					       &warm);
			ret = ret ? ret : run_pair(base_fd, main_fd, &paths[i],
				       o->calls,
				       paths[i].new_flow ? gen_new_flow :
				       paths[i].rotate ? gen_rotate : NULL,
				       &g, &base[i * nr + r], &ns[i * nr + r]);
		}
		if (ret) {
			bench_fail(&b, "pkt", ret);
			ret = 1;
			goto out;
		}
	}
	if (!o->json) {
		printf("ns per packet, BPF_PROG_TEST_RUN, repeat=1: median over %d rounds of the mean of %ld calls; connection table of %u flows\n",
		       nr, o->calls,
		       ct_entries ? ct_entries : XLB_CONNTRACK_DEFAULT);
		if (against)
			printf("baseline: %s on the same maps, each path (ratio < 1: this build is faster)\n",
			       against);
		if (!ct_entries)
			verifier_figures(o, &b);
		printf("%-14s %8s %8s %8s %12s %7s\n", "path", "ns", "min",
		       "max", "baseline_ns", "ratio");
	} else if (!ct_entries) {	/* the same program: said once */
		verifier_figures(o, &b);
	}
	for (i = 0; i < NPATHS; i++) {
		struct fig f = { .bench = "pkt", .unit = "ns",
				 .baseline_what = against ? against :
					"XDP_TX-only program" };
		double rmin, rmax, base_med;

		if (o->path && strcmp(o->path, paths[i].name))
			continue;
		for (r = 0; r < nr; r++)
			ratio[r] = ns[i * nr + r] / base[i * nr + r];
		qsort(ratio, (size_t)nr, sizeof(*ratio), cmp_double);
		rmin = ratio[0];
		rmax = ratio[nr - 1];
		fig_median(&f, &ns[i * nr], nr);
		base_med = median_of(&base[i * nr], nr);
		f.baseline = base_med;
		/* another table size, another baseline: another figure */
		if (ct_entries)
			snprintf(f.name, sizeof(f.name), "pkt%s_ct%u.%s",
				 against ? "_vs" : "", ct_entries,
				 paths[i].name);
		else
			snprintf(f.name, sizeof(f.name), "pkt%s.%s",
				 against ? "_vs" : "", paths[i].name);
		PARAM(&f, "\"path\":\"%s\",\"calls_per_round\":%ld,\"rounds\":%d,\"packet_bytes\":%d,\"ratio_min\":%.3f,\"ratio_max\":%.3f,\"conntrack_entries\":%u",
		      paths[i].name, o->calls, nr,
		      paths[i].family == 4 ? 118 : 138, rmin, rmax,
		      ct_entries ? ct_entries : XLB_CONNTRACK_DEFAULT);
		if (o->json) {
			EXTRA(&f, "\"path\":\"%s\",\"ns\":%.1f,\"baseline_ns\":%.1f,\"calls\":%ld",
			      paths[i].name, f.value, base_med,
			      o->calls * nr);
			fig_json(&f);
		} else {
			printf("%-14s %8.1f %8.1f %8.1f %12.1f %7.2f\n",
			       paths[i].name, f.value, f.min, f.max, base_med,
			       f.value / base_med);
		}
	}
	ret = 0;
out:
	bpf_object__close(against_obj);
	against_obj = NULL;
	pkt_teardown(&b);
	free(base);
	free(ns);
	free(ratio);
	return ret;
}

/* --- pkt-scale ---------------------------------------------------------------- */

/*
 * Per-packet cost against state: VIPs configured (1, 100, 1000) and
 * connection-table occupancy (empty .. full).  One data path with only
 * VIP_IPIP (id 0) to start with; extra VIPs are added in ascending count,
 * the connection table is flushed and filled from userspace for each level.
 */
#define EXTRA_VIP_M	4093	/* tables of the extra VIPs, to bound memory */

static void extra_vip_addr(long v, __be32 a[4])
{
	memset(a, 0, 16);
	a[0] = v ? htonl(0x0a800000u | (__u32)v) : 0;	/* 10.128.x.y */
	if (!v)
		addr(4, VIP4, a);
}

static int add_extra_vips(struct pkt_bench *b, long from, long to,
			  struct xlb_err *err)
{
	struct xlb_table t;
	long v;
	int ret;

	ret = vip_table(b, VIP_IPIP, 4, BACKENDS, EXTRA_VIP_M, &t, err);
	if (ret)
		return ret;
	for (v = from; v < to && !ret; v++) {
		struct xlb_vip_key k = { .port = htons(80),
					 .proto = IPPROTO_TCP, .family = 4 };
		struct xlb_vip vip = { .id = (__u32)v };

		extra_vip_addr(v, k.addr);
		ret = xlb_dp_table_publish(&b->dp, (__u32)v, &t, err);
		if (!ret)
			ret = xlb_dp_vip_set(&b->dp, &k, &vip, err);
	}
	xlb_table_free(&t);
	return ret;
}

/* The one established flow of each of n VIPs, round robin. */
struct spread_gen {
	long n;
	__be32 src[4];
};

static size_t gen_vip_spread(void *ctx, long i, __u8 *buf)
{
	const struct spread_gen *g = ctx;
	__be32 d[4];

	extra_vip_addr(i % g->n, d);
	return make_packet_a(buf, 4, g->src, d, 80, 40000);
}

/*
 * Connection-table fill: flow j is 100.64.0.0 + j -> VIP4:80, sport 40001
 * (apart from every flow the paths send).  CPU number k of the allowed set
 * holds flows [k * per, (k + 1) * per).
 */
static void fill_flow(long j, struct xlb_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->src.v4 = htonl(0x64400000u + (__u32)j);
	inet_pton(AF_INET, VIP4, &f->dst.v4);
	f->sport = htons(40001);
	f->dport = htons(80);
	f->proto = IPPROTO_TCP;
	f->family = XLB_FAMILY_INET;
}

struct ct_spread_gen {
	struct xlb_rand rnd;
	long per, ncpu;		/* flows per CPU, CPUs that filled */
	__be32 dst[4];
};

static size_t gen_ct_spread(void *ctx, long i, __u8 *buf)
{
	struct ct_spread_gen *g = ctx;
	__u64 r = xlb_rand_next(&g->rnd);
	long j = (long)((r >> 32) % (__u64)g->ncpu) * g->per +
		 (long)((__u32)r % (__u64)g->per);
	__be32 s[4] = { htonl(0x64400000u + (__u32)j) };

	(void)i;
	return make_packet_a(buf, 4, s, g->dst, 80, 40001);
}

#define FILL_CHUNK	8192

/*
 * Insert `per` flows for each allowed CPU (flows numbered by CPU, as the
 * spread generator draws them); the table keeps what its buckets hold.
 */
static int ct_fill(struct pkt_bench *b, const cpu_set_t *cpus, long per,
		   long *ncpu)
{
	struct xlb_flow *keys = calloc(FILL_CHUNK, sizeof(*keys));
	struct xlb_ct *vals = calloc(FILL_CHUNK, sizeof(*vals));
	struct xlb_backend be[BACKENDS];
	__u64 now;
	long k = 0, j, n;
	int cpu, i, ret = 0;

	if (!keys || !vals) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < BACKENDS; i++)
		if (xlb_dp_backend_get(&b->dp, (__u16)i, &be[i])) {
			ret = -ENOENT;
			goto out;
		}
	ret = xlb_clock_now(&now);	/* entries as fresh as the data path's */
	for (cpu = 0; cpu < CPU_SETSIZE && !ret; cpu++) {
		if (!CPU_ISSET(cpu, cpus))
			continue;
		for (j = 0; j < per && !ret; j += n) {
			n = per - j < FILL_CHUNK ? per - j : FILL_CHUNK;
			for (i = 0; i < n; i++) {
				long flow = k * per + j + i;

				fill_flow(flow, &keys[i]);
				vals[i] = (struct xlb_ct){
					.last_seen = now,
					.epoch = be[flow % BACKENDS].epoch,
					.hash = (__u32)flow,
					.backend = (__u16)(flow % BACKENDS),
					.vip = VIP_IPIP,
				};
			}
			ret = xlb_dp_ct_insert(&b->dp, keys, vals, (size_t)n);
		}
		k++;
	}
	*ncpu = k;
out:
	free(keys);
	free(vals);
	return ret;
}

static int vip0_stats(struct pkt_bench *b, struct xlb_vip_stats *s)
{
	return xlb_dp_vip_stats(&b->dp, VIP_IPIP, s);
}

/*
 * One scale case: `rounds` rounds of baseline then case, median of each.
 * want_hits: at least this share of the calls must be connection-table
 * hits or, when negative, new flows; 0: not checked.  The hit rate goes in params.
 */
static int scale_case(const struct opts *o, struct pkt_bench *b,
		      struct fig *f, const struct path *pa, long calls,
		      pkt_gen gen, void *ctx, double want_hits)
{
	int nr = o->rounds, r, ret = 0;
	double base[64], ns[64], ratio[64];
	struct xlb_vip_stats s0, s1;
	double hits = 0;

	if (nr > 64)
		nr = 64;
	vip0_stats(b, &s0);
	for (r = 0; r < nr && !ret; r++) {
		ret = run_pair(bpf_program__fd(b->reflect->progs.xlb_reflect),
			       bpf_program__fd(b->skel->progs.xlb_main), pa,
			       calls, gen, ctx, &base[r], &ns[r]);
		ratio[r] = ns[r] / base[r];
		/* the generator's calls continue from round to round */
		if (gen == gen_new_flow)
			((struct new_flow_gen *)ctx)->base += calls;
	}
	if (ret)
		return ret;
	vip0_stats(b, &s1);
	if (want_hits) {
		hits = (double)(s1.ct_hits - s0.ct_hits) / ((double)calls * nr);
		if ((want_hits > 0 && hits < want_hits) ||
		    (want_hits < 0 &&
		     (double)(s1.new_flows - s0.new_flows) < 0.9 * calls * nr)) {
			fprintf(stderr, "xlb-bench: pkt-scale %s: %.1f%% connection-table hits, not what the case measures\n",
				f->name, 100 * hits);
			return -EPROTO;
		}
		PARAM(f, ",\"ct_hit_rate\":%.4f", hits);
	}
	fig_median(f, ns, nr);
	f->baseline = median_of(base, nr);
	f->baseline_what = "XDP_TX-only program";
	qsort(ratio, (size_t)nr, sizeof(*ratio), cmp_double);
	PARAM(f, ",\"calls_per_round\":%ld,\"rounds\":%d,\"ratio_min\":%.3f,\"ratio_max\":%.3f",
	      calls, nr, ratio[0], ratio[nr - 1]);
	fig_emit(o, f);
	return 0;
}

/* A figure of the VIP series, named and with its level's parameters. */
static void vips_fig(struct fig *f, const char *what, long vips)
{
	memset(f, 0, sizeof(*f));
	f->bench = "pkt-scale";
	f->unit = "ns";
	snprintf(f->name, sizeof(f->name), "pkt_vips.%s.%ld", what, vips);
	PARAM(f, "\"path\":\"%s\",\"vips\":%ld,\"extra_vip_table_size\":%d",
	      what, vips, EXTRA_VIP_M);
}

/* A connection-table level: asked, reached (counted), how it was filled. */
struct ct_level {
	double fill;
	__u32 entries, max_entries;
	double fill_ms;
	long cpus;
};

static void ct_fig(struct fig *f, const char *what, const struct ct_level *l)
{
	memset(f, 0, sizeof(*f));
	f->bench = "pkt-scale";
	f->unit = "ns";
	snprintf(f->name, sizeof(f->name), "pkt_ct.%s.%g%%", what,
		 100 * l->fill);
	PARAM(f, "\"path\":\"%s\",\"fill\":%g,\"entries\":%u,\"max_entries\":%u,\"occupancy\":%.4f,\"fill_ms\":%.0f,\"fill_cpus\":%ld",
	      what, l->fill, l->entries, l->max_entries,
	      (double)l->entries / l->max_entries, l->fill_ms, l->cpus);
}

static int bench_pkt_scale(const struct opts *o)
{
	static const struct path vip_spread = { "vip_spread", 4, VIP4, 80, 0, XDP_TX, 0, 0 };
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	const struct path *ct_hit = &paths[1], *new_flow = &paths[2];
	struct bpf_map_info mi = {};
	__u32 mi_len = sizeof(mi);
	long have = 1, flow_base = 0, new_calls;
	int i, ret = 1, me, ncpus_possible = libbpf_num_possible_cpus();
	cpu_set_t cpus;

	if (pkt_setup(&b, 0, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		goto out;
	}
	if (bpf_obj_get_info_by_fd(b.dp.conntrack, &mi, &mi_len) ||
	    sched_getaffinity(0, sizeof(cpus), &cpus))
		goto out;
	me = sched_getcpu();
	pin_cpu(me);
	/* new flows fill the table: at most 1% of it per round */
	new_calls = o->calls < (long)mi.max_entries / 100 ? o->calls :
		    (long)mi.max_entries / 100;
	if (!o->json)
		printf("ns per packet against state: median over %d rounds of the mean of %ld calls (new_flow: %ld)\n",
		       o->rounds, o->calls, new_calls);

	/* VIPs configured */
	for (i = 0; i < o->n_vips; i++) {
		struct spread_gen sg = { .n = o->vips[i] };
		struct new_flow_gen ng = { new_flow, 0 };
		struct fig f;
		double warm;

		if (o->vips[i] > have &&
		    add_extra_vips(&b, have, o->vips[i], &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			ret = 1;
			goto out;
		}
		have = o->vips[i] > have ? o->vips[i] : have;
		addr(4, CLIENT4, sg.src);
		xlb_dp_ct_flush(&b.dp);
		/* one established flow per VIP */
		ret = run_case(bpf_program__fd(b.skel->progs.xlb_main),
			       &vip_spread, 0, sg.n, gen_vip_spread, &sg,
			       &warm);
		vips_fig(&f, "ct_hit", o->vips[i]);
		ret = ret ? ret : scale_case(o, &b, &f, ct_hit, o->calls, NULL,
					     NULL, 0.9);
		vips_fig(&f, "vip_spread", o->vips[i]);
		ret = ret ? ret : scale_case(o, &b, &f, &vip_spread, o->calls,
					     gen_vip_spread, &sg, 0);
		vips_fig(&f, "new_flow", o->vips[i]);
		ng.base = flow_base;
		flow_base += new_calls * o->rounds;
		ret = ret ? ret : scale_case(o, &b, &f, new_flow, new_calls,
					     gen_new_flow, &ng, -1);
		if (ret) {
			bench_fail(&b, "pkt-scale", ret);
			ret = 1;
			goto out;
		}
	}

	/* connection-table occupancy */
	for (i = 0; i < o->n_fill; i++) {
		struct ct_spread_gen cg = { .rnd = { 42 } };
		struct new_flow_gen ng = { new_flow, 0 };
		struct ct_level lv = { .fill = o->fill[i],
				       .max_entries = mi.max_entries };
		struct fig f;
		long per = (long)(o->fill[i] * mi.max_entries / ncpus_possible);
		double t0 = xlb_mono_us();

		xlb_dp_ct_flush(&b.dp);
		ret = ct_fill(&b, &cpus, per, &cg.ncpu);
		pin_cpu(me);
		if (ret) {
			fprintf(stderr, "xlb-bench: cannot fill the connection table: %s\n",
				strerror(-ret));
			ret = 1;
			goto out;
		}
		lv.fill_ms = (xlb_mono_us() - t0) / 1e3;
		lv.cpus = cg.ncpu;
		xlb_dp_ct_count(&b.dp, &lv.entries);
		cg.per = per;
		addr(4, VIP4, cg.dst);
		ct_fig(&f, "ct_hit", &lv);
		ret = scale_case(o, &b, &f, ct_hit, o->calls, NULL, NULL, 0.9);
		if (!ret && per > 0) {
			/* flows its buckets had no room for are misses */
			ct_fig(&f, "ct_hit_spread", &lv);
			ret = scale_case(o, &b, &f, ct_hit, o->calls,
					 gen_ct_spread, &cg,
					 0.9 * lv.entries / ((double)per * cg.ncpu));
		}
		ct_fig(&f, "new_flow", &lv);
		ng.base = flow_base;
		flow_base += new_calls * o->rounds;
		ret = ret ? ret : scale_case(o, &b, &f, new_flow, new_calls,
					     gen_new_flow, &ng, -1);
		if (ret) {
			bench_fail(&b, "pkt-scale", ret);
			ret = 1;
			goto out;
		}
	}
	ret = 0;
out:
	pkt_teardown(&b);
	return ret;
}

/* --- publish ------------------------------------------------------------------ */

/*
 * Forwarding on another CPU while tables are published: cycles of a quiet
 * phase then a publishing phase, each phase's packets counted apart.
 */
#define FWD_CYCLES	5
#define FWD_PUBLISHES	4	/* tables published per publishing phase */

struct fwd {
	int prog_fd, cpu;
	int phase;		/* 2 * cycle + publishing; -1: stop (atomic) */
	unsigned long long ns[2 * FWD_CYCLES], calls[2 * FWD_CYCLES];
	unsigned long long not_tx[2 * FWD_CYCLES], max_ns[2 * FWD_CYCLES];
	int err;
};

static void *fwd_thread(void *arg)
{
	struct fwd *w = arg;
	const struct path *pa = &paths[3];	/* stateless: a table read per packet */
	__u8 in[PKT_BUF], out[512];
	size_t len = make_packet(in, pa->family, pa->dst, pa->dport, 40000, 0);
	int ph;

	pin_cpu(w->cpu);
	while ((ph = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE)) >= 0) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_size_in = (__u32)len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);

		if (bpf_prog_test_run_opts(w->prog_fd, &o)) {
			w->err = errno;
			break;
		}
		w->ns[ph] += o.duration;
		if (o.duration > w->max_ns[ph])
			w->max_ns[ph] = o.duration;
		w->not_tx[ph] += o.retval != XDP_TX;
		__atomic_store_n(&w->calls[ph], w->calls[ph] + 1,
				 __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * The switch alone: the published inner map of vip put in again.  The
 * syscall waits until no program can still see the old entry (an RCU grace
 * period), which is what makes publication atomic for the caller.
 */
static double switch_us(struct pkt_bench *b, __u32 vip)
{
	double t0, t;
	__u32 id, c = b->dp.vip_class[vip];
	int fd;

	if (!c || bpf_map_lookup_elem(b->dp.tables[c - 1], &vip, &id))
		return -1;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	t0 = xlb_mono_us();
	if (bpf_map_update_elem(b->dp.tables[c - 1], &vip, &fd, BPF_ANY))
		t = -1;
	else
		t = xlb_mono_us() - t0;
	close(fd);
	return t;
}

#define PUBLISH_PAUSE_US	20000

/* The least a writer of the table does: the slots into fresh memory. */
static double copy_us(const struct xlb_table *t)
{
	double t0 = xlb_mono_us();
	char *p = malloc(((size_t)t->size + 1) * 8);
	uint32_t i;

	if (!p)
		return 0;
	for (i = 0; i < t->size; i++)
		memcpy(p + ((size_t)i + 1) * 8, &t->slots[i], sizeof(t->slots[i]));
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	return xlb_mono_us() - t0;
}

static int bench_publish(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct xlb_table t[2] = {};
	int nr = o->runs, r, ret = 1, me, other = -1, cpu, c;
	int cycles = o->quick ? 2 : FWD_CYCLES;
	long quiet = o->calls / FWD_CYCLES > 1000 ? o->calls / FWD_CYCLES : 1000;
	double *pub = calloc((size_t)nr, sizeof(double));
	double *cp = calloc((size_t)nr, sizeof(double));
	double *sw = calloc((size_t)nr, sizeof(double));
	struct fwd w = { 0 };
	pthread_t th;
	cpu_set_t cpus;
	size_t i, n_m = o->quick ? 2 : 3;

	if (!pub || !cp || !sw)
		goto out;
	if (pkt_setup(&b, 1, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		goto out;
	}
	sched_getaffinity(0, sizeof(cpus), &cpus);
	me = sched_getcpu();
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &cpus) && cpu != me && other < 0)
			other = cpu;
	pin_cpu(me);
	if (!o->json)
		printf("table publish (xlb_dp_table_publish: new inner map written, outer entry switched) on a loaded data path, median of %d\n",
		       nr);
	for (i = 0; i < n_m; i++) {
		struct fig f = { .bench = "publish", .unit = "us" };
		uint32_t m = table_ms[i];

		/* two tables of the stateless VIP's backends: each publish changes */
		if (vip_table(&b, VIP_STATELESS, 4, BACKENDS, m, &t[0], &err) ||
		    vip_table(&b, VIP_STATELESS, 4, BACKENDS - 1, m, &t[1], &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			goto out;
		}
		for (r = 0; r < nr; r++) {
			double t0;

			/* both timed calls start with no grace period in flight */
			usleep(PUBLISH_PAUSE_US);
			t0 = xlb_mono_us();
			if (xlb_dp_table_publish(&b.dp, VIP_STATELESS, &t[r % 2],
						 &err)) {
				fprintf(stderr, "xlb-bench: %s\n", err.msg);
				goto out;
			}
			pub[r] = xlb_mono_us() - t0;
			cp[r] = copy_us(&t[r % 2]);
			usleep(PUBLISH_PAUSE_US);
			sw[r] = switch_us(&b, VIP_STATELESS);
			if (sw[r] < 0) {
				fprintf(stderr, "xlb-bench: cannot switch the table of a VIP: %s\n",
					strerror(errno));
				goto out;
			}
		}
		fig_median(&f, pub, nr);
		f.baseline = median_of(sw, nr);
		f.baseline_what = "the switch alone";
		snprintf(f.name, sizeof(f.name), "publish.M%u", m);
		PARAM(&f, "\"M\":%u,\"table_bytes\":%zu,\"vip\":\"stateless\",\"vips_loaded\":%d,\"userspace_copy_us\":%.1f",
		      m, ((size_t)m + 1) * 8, VIPS, median_of(cp, nr));
		fig_emit(o, &f);
		if (i + 1 < n_m) {
			xlb_table_free(&t[0]);
			xlb_table_free(&t[1]);
		}
	}

	/* forwarding (stateless path) on another CPU while the largest M is published */
	w.prog_fd = bpf_program__fd(b.skel->progs.xlb_main);
	w.cpu = other >= 0 ? other : me;
	if (pthread_create(&th, NULL, fwd_thread, &w))
		goto out;
	ret = 0;
	for (c = 0; c < cycles && !ret; c++) {
		__atomic_store_n(&w.phase, 2 * c, __ATOMIC_RELEASE);
		while (__atomic_load_n(&w.calls[2 * c], __ATOMIC_ACQUIRE) <
		       (unsigned long long)quiet && !w.err)
			usleep(1000);
		__atomic_store_n(&w.phase, 2 * c + 1, __ATOMIC_RELEASE);
		/* on a busy host the forwarding thread may wait for a CPU:
		 * publish on until it has forwarded during the phase */
		for (r = 0; !ret && r < FWD_PUBLISHES + 200 &&
		     (r < FWD_PUBLISHES ||
		      __atomic_load_n(&w.calls[2 * c + 1], __ATOMIC_ACQUIRE) < 100);
		     r++)
			ret = xlb_dp_table_publish(&b.dp, VIP_STATELESS,
						   &t[r % 2], &err);
	}
	__atomic_store_n(&w.phase, -1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	for (c = 0; c < cycles; c++)
		if (!w.calls[2 * c] || !w.calls[2 * c + 1])
			w.err = w.err ? w.err : EAGAIN;
	if (ret || w.err) {
		fprintf(stderr, "xlb-bench: publish while forwarding: %s\n",
			ret ? err.msg : strerror(w.err));
		ret = 1;
		goto out;
	} else {
		struct fig f = { .bench = "publish", .unit = "ns" };
		unsigned long long not_tx = 0, max_q = 0, max_p = 0, n_q = 0,
				   n_p = 0;
		double q[FWD_CYCLES], pb[FWD_CYCLES];

		for (c = 0; c < cycles; c++) {
			q[c] = (double)w.ns[2 * c] / w.calls[2 * c];
			pb[c] = (double)w.ns[2 * c + 1] / w.calls[2 * c + 1];
			not_tx += w.not_tx[2 * c + 1];
			n_q += w.calls[2 * c];
			n_p += w.calls[2 * c + 1];
			if (w.max_ns[2 * c] > max_q)
				max_q = w.max_ns[2 * c];
			if (w.max_ns[2 * c + 1] > max_p)
				max_p = w.max_ns[2 * c + 1];
		}
		fig_median(&f, pb, cycles);
		f.baseline = median_of(q, cycles);
		f.baseline_what = "the same path between the publishes";
		snprintf(f.name, sizeof(f.name), "publish.forwarding_during");
		PARAM(&f, "\"path\":\"stateless\",\"M\":%u,\"cycles\":%d,\"min_publishes_per_cycle\":%d,\"forwarding_cpu\":%d,\"publishing_cpu\":%d,\"calls_publishing\":%llu,\"calls_quiet\":%llu,\"max_ns_publishing\":%llu,\"max_ns_quiet\":%llu",
		      t[0].size, cycles, FWD_PUBLISHES, w.cpu, me, n_p, n_q,
		      max_p, max_q);
		fig_emit(o, &f);
		memset(&f, 0, sizeof(f));
		f.bench = "publish";
		f.unit = "packets";
		fig_exact(&f, (double)not_tx);
		snprintf(f.name, sizeof(f.name), "publish.forwarding_not_tx");
		PARAM(&f, "\"path\":\"stateless\",\"calls\":%llu,\"what\":\"packets not XDP_TX while tables were published\"",
		      n_p);
		fig_emit(o, &f);
	}
	ret = 0;
out:
	xlb_table_free(&t[0]);
	xlb_table_free(&t[1]);
	pkt_teardown(&b);
	free(pub);
	free(cp);
	free(sw);
	return ret;
}

/* --- memory ------------------------------------------------------------------- */

/* The kernel's figure for a map's memory, as bpftool shows it (fdinfo). */
static long long map_memlock(int fd)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct map_mem {
	long long memlock;
	struct bpf_map_info info;
};

static int map_mem(int fd, struct map_mem *m)
{
	__u32 len = sizeof(m->info);

	memset(&m->info, 0, sizeof(m->info));
	m->memlock = map_memlock(fd);
	if (m->memlock < 0 || bpf_obj_get_info_by_fd(fd, &m->info, &len))
		return -1;
	return 0;
}

static double per_entry(const struct map_mem *m)
{
	return (double)m->memlock / m->info.max_entries;
}

static long map_count(int fd, __u32 key_size)
{
	char k[64], next[64];
	long n = 0;
	void *prev = NULL;

	if (key_size > sizeof(k))
		return -1;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(k, next, key_size);
		prev = k;
		n++;
	}
	return n;
}

static int bench_memory(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct map_mem ct, vips, outer, vstats, be, bstats, tab;
	int fds[13], ncpu = libbpf_num_possible_cpus(), ret = 1;
	double vip_fixed, vip_payload, table_default = 0;
	long long total = 0;
	long before, after;
	size_t i;
	struct fig f;

	if (pkt_setup(&b, 0, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		goto out;
	}
	if (map_mem(b.dp.conntrack, &ct) || map_mem(b.dp.vips, &vips) ||
	    map_mem(b.dp.tables[xlb_table_class(65537) - 1], &outer) ||
	    map_mem(b.dp.vip_stats, &vstats) ||
	    map_mem(b.dp.backends, &be) ||
	    map_mem(b.dp.backend_stats, &bstats)) {
		fprintf(stderr, "xlb-bench: cannot read the maps' memory (fdinfo memlock)\n");
		goto out;
	}
	if (!o->json)
		printf("memory as the kernel reports it (memlock in /proc/PID/fdinfo, as bpftool map show), %d possible CPUs\n",
		       ncpu);

#define MEM_FIG(nm, val, base, what)					\
	do {								\
		memset(&f, 0, sizeof(f));				\
		f.bench = "memory";					\
		f.unit = "B";						\
		snprintf(f.name, sizeof(f.name), "%s", nm);		\
		fig_exact(&f, val);					\
		f.baseline = base;					\
		f.baseline_what = what;					\
	} while (0)

	MEM_FIG("memory.conntrack_entry", per_entry(&ct),
		ct.info.value_size, "the entry, flow included");
	PARAM(&f, "\"map\":\"xlb_conntrack\",\"type\":\"array, buckets of 4 ways\",\"max_entries\":%u,\"memlock\":%lld",
	      ct.info.max_entries, ct.memlock);
	fig_emit(o, &f);
	MEM_FIG("memory.conntrack_map", (double)ct.memlock, 0, NULL);
	PARAM(&f, "\"map\":\"xlb_conntrack\",\"max_entries\":%u,\"note\":\"all of it from load on: the entries are preallocated\"",
	      ct.info.max_entries);
	fig_emit(o, &f);

	/* a table of each M, published to VIP_IPIP, its inner map measured */
	for (i = 0; i < ARRAY_SIZE(table_ms); i++) {
		struct xlb_table t;
		__u32 id;
		int fd;

		if (vip_table(&b, VIP_IPIP, 4, BACKENDS, table_ms[i], &t, &err) ||
		    xlb_dp_table_publish(&b.dp, VIP_IPIP, &t, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			goto out;
		}
		xlb_table_free(&t);
		if (bpf_map_lookup_elem(b.dp.tables[xlb_table_class(table_ms[i]) - 1],
					&(__u32){ VIP_IPIP }, &id))
			goto out;
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			goto out;
		if (map_mem(fd, &tab)) {
			close(fd);
			goto out;
		}
		close(fd);
		if (table_ms[i] == 65537)
			table_default = (double)tab.memlock;
		MEM_FIG("", (double)tab.memlock, 4.0 * table_ms[i],
			"4-byte slots");
		snprintf(f.name, sizeof(f.name), "memory.table.M%u",
			 table_ms[i]);
		PARAM(&f, "\"M\":%u,\"map_entries\":%u,\"value_size\":%u,\"bytes_per_slot\":%.3f",
		      table_ms[i], tab.info.max_entries, tab.info.value_size,
		      (double)tab.memlock / table_ms[i]);
		fig_emit(o, &f);
	}

	/* a VIP at a new address: its xlb_vips entries counted, not assumed */
	before = map_count(b.dp.vips, vips.info.key_size);
	{
		struct xlb_vip_key k = { .port = htons(80), .proto = IPPROTO_TCP,
					 .family = 4 };
		struct xlb_vip v = { .id = 1 };

		extra_vip_addr(1, k.addr);
		if (xlb_dp_vip_set(&b.dp, &k, &v, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			goto out;
		}
	}
	after = map_count(b.dp.vips, vips.info.key_size);
	vip_fixed = (after - before) * per_entry(&vips) + per_entry(&vstats) +
		    per_entry(&outer);
	vip_payload = (after - before) * (double)(vips.info.key_size +
						  vips.info.value_size) +
		      (double)vstats.info.value_size * ncpu + 4;
	MEM_FIG("memory.vip_fixed", vip_fixed, vip_payload,
		"keys + values (stats per CPU)");
	PARAM(&f, "\"vips_entries_per_vip\":%ld,\"vips_entry\":%.1f,\"vip_stats_entry\":%.1f,\"tables_outer_entry\":%.1f,\"note\":\"a VIP at an address of its own; without its table\"",
	      after - before, per_entry(&vips), per_entry(&vstats),
	      per_entry(&outer));
	fig_emit(o, &f);
	MEM_FIG("memory.vip_total.M65537", vip_fixed + table_default,
		vip_payload + 4.0 * 65537, "keys + values + 4-byte slots");
	PARAM(&f, "\"M\":65537,\"note\":\"the default table size\"");
	fig_emit(o, &f);

	MEM_FIG("memory.backend", per_entry(&be) + per_entry(&bstats),
		be.info.value_size + (double)bstats.info.value_size * ncpu,
		"values (stats per CPU)");
	PARAM(&f, "\"backends_entry\":%.1f,\"backend_stats_entry\":%.1f,\"max_backends\":%u,\"note\":\"arrays: every id's entry exists from load on\"",
	      per_entry(&be), per_entry(&bstats), be.info.max_entries);
	fig_emit(o, &f);

	fds[0] = b.dp.config;
	fds[1] = b.dp.vips;
	fds[2] = -1;	/* the outer table maps: below */
	fds[3] = b.dp.backends;
	fds[4] = b.dp.conntrack;
	fds[5] = b.dp.vip_stats;
	fds[6] = b.dp.backend_stats;
	fds[7] = b.dp.events;
	fds[8] = b.dp.actions;
	fds[9] = b.dp.tx_ports;
	fds[10] = b.dp.vip_index;
	{	/* the VIP index published in it */
		__u32 zero = 0, id;

		fds[11] = bpf_map_lookup_elem(b.dp.vip_index, &zero, &id) ?
				  -1 : bpf_map_get_fd_by_id(id);
	}
	fds[12] = b.dp.abi;
	for (i = 0; i < 13; i++) {
		long long m = fds[i] >= 0 ? map_memlock(fds[i]) : 0;

		total += m > 0 ? m : 0;
	}
	for (i = 0; i < XLB_TABLE_CLASSES; i++) {
		long long m = map_memlock(b.dp.tables[i]);

		total += m > 0 ? m : 0;
	}
	if (fds[11] >= 0)
		close(fds[11]);
	MEM_FIG("memory.datapath_maps", (double)total, 0, NULL);
	PARAM(&f, "\"maps\":%d,\"note\":\"every map of the data path and the VIP index, without the per-VIP tables\"",
	      11 + XLB_TABLE_CLASSES);
	fig_emit(o, &f);
#undef MEM_FIG
	ret = 0;
out:
	pkt_teardown(&b);
	return ret;
}

/* --- control ---------------------------------------------------------------- */

/*
 * A real xlbd in a private network namespace (the benchmark unshares one,
 * gone when it exits), with its own instance, socket and state folder,
 * driven through the control socket as xlbctl drives it.
 */
struct ctl_bench {
	char dir[64], sock[96], inst[32], xlbd[512];
	pid_t pid;
};

static int ctl_start(struct ctl_bench *c)
{
	char log[128];
	int i;

	snprintf(log, sizeof(log), "%s/xlbd.log", c->dir);
	c->pid = fork();
	if (!c->pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(c->xlbd, "xlbd", "--instance", c->inst, "--socket",
		      c->sock, "--state-dir", c->dir, "--metrics", "none",
		      "--log-level", getenv("XLB_BENCH_LOG") ? getenv("XLB_BENCH_LOG") : "warning", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 300000; i++) {	/* 60 s */
		struct xlb_err err;
		int fd = xlb_client_connect(c->sock, &err);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid)
			return -1;
		usleep(200);
	}
	return -1;
}

static int ctl_call(struct ctl_bench *c, json_object *req,
		    json_object **res)
{
	struct xlb_err err = { "" };
	int ret;

	int fd = xlb_client_connect(c->sock, &err);

	/* a large configuration takes its time */
	ret = fd < 0 ? fd : xlb_client_call(fd, req, res, 600000, &err);
	if (fd >= 0)
		close(fd);
	if (ret)
		fprintf(stderr, "xlb-bench: xlbd: %s\n", err.msg);
	return ret;
}

/* One command; *live_ms (if given) the daemon's request -> live time. */
static int ctl_exec_live(struct ctl_bench *c, const char *line,
			 double *live_ms)
{
	json_object *req = json_object_new_object(), *res = NULL,
		    *lines = json_object_new_array(), *v;
	int ret;

	json_object_object_add(req, "cmd", json_object_new_string("exec"));
	json_object_array_add(lines, json_object_new_string(line));
	json_object_object_add(req, "lines", lines);
	ret = ctl_call(c, req, &res);
	if (!ret && live_ms)
		*live_ms = json_object_object_get_ex(res, "live_ms", &v) ?
			   json_object_get_double(v) : -1;
	json_object_put(req);
	json_object_put(res);
	return ret;
}

static int ctl_exec(struct ctl_bench *c, const char *line)
{
	return ctl_exec_live(c, line, NULL);
}

static int ctl_restore(struct ctl_bench *c, const char *text)
{
	json_object *req = json_object_new_object(), *res = NULL;
	int ret;

	json_object_object_add(req, "cmd", json_object_new_string("restore"));
	json_object_object_add(req, "text", json_object_new_string(text));
	json_object_object_add(req, "name", json_object_new_string("bench"));
	ret = ctl_call(c, req, &res);
	json_object_put(req);
	json_object_put(res);
	return ret;
}

/* Config text: n_vips VIPs of m slots with n_be backends each. */
static char *ctl_config(int n_vips, int n_be, unsigned int m)
{
	size_t cap = (size_t)n_vips * (size_t)(n_be + 1) * 64 + 256, len = 0;
	char *t = malloc(cap);
	int v, b;

	if (!t)
		return NULL;
	len += (size_t)snprintf(t + len, cap - len,
				"set key 00112233445566778899aabbccddeeff\n");
	for (v = 0; v < n_vips; v++) {
		len += (size_t)snprintf(t + len, cap - len,
					"vip add 10.200.%d.%d:80/tcp table-size %u\n",
					v / 250, v % 250 + 1, m);
		for (b = 0; b < n_be; b++)
			len += (size_t)snprintf(t + len, cap - len,
						"backend add 10.200.%d.%d:80/tcp 10.1.%d.%d\n",
						v / 250, v % 250 + 1, b / 250,
						b % 250 + 1);
	}
	return t;
}

static void ctl_print(const struct opts *o, const char *name, double *v,
		      int n, const char *params, double goal)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	if (o->json)
		printf("{\"bench\":\"control\",\"name\":\"%s\",\"unit\":\"ms\",\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"runs\":%d,\"goal\":%.3f,\"params\":\"%s\"}\n",
		       name, v[n / 2], v[0], v[n - 1], n, goal, params);
	else
		printf("%-26s %10.3f %10.3f %10.3f %5d %8.1f  %s\n", name,
		       v[n / 2], v[0], v[n - 1], n, goal, params);
}

static __u32 ctl_prog_on(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query((int)if_nametoindex(ifname), 0, &q))
		return 0;
	return q.prog_id;
}

static int bench_control(const struct opts *o)
{
	struct ctl_bench c = { 0 };
	int runs = o->quick ? 3 : o->runs, n_vips = o->quick ? 20 : 1000;
	double *lat = calloc((size_t)runs, sizeof(double)), t0;
	double *live = calloc((size_t)runs, sizeof(double));
	char *cfg, params[160], self[512], cmd[1024];
	__u32 prog_before, prog_after;
	int i, ret = 1;

	if (!lat || !live)
		return 1;
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
		return 1;
	self[sizeof(self) - 1] = 0;
	snprintf(c.xlbd, sizeof(c.xlbd), "%s/xlbd", dirname(self));
	snprintf(c.inst, sizeof(c.inst), "bench%d", getpid());
	snprintf(c.dir, sizeof(c.dir), "/tmp/xlb-bench-%d", getpid());
	snprintf(c.sock, sizeof(c.sock), "%s/s.sock", c.dir);
	mkdir(c.dir, 0700);
	if (unshare(CLONE_NEWNET) ||
	    system("ip link set lo up && ip link add xlbc0 type veth peer name xlbc1 && "
		   "ip link set xlbc0 up && ip link set xlbc1 up")) {
		fprintf(stderr, "xlb-bench: control needs root (a private network namespace)\n");
		return 1;
	}
	if (ctl_start(&c)) {
		fprintf(stderr, "xlb-bench: xlbd did not start (log in %s)\n",
			c.dir);
		goto out;
	}
	if (!o->json) {
		printf("xlbd control plane, wall time through the control socket\n");
		printf("%-26s %10s %10s %10s %5s %8s  %s\n", "figure", "median_ms",
		       "min_ms", "max_ms", "runs", "goal_ms", "parameters");
	}

	/* change -> live: the answer comes after the table is published */
	cfg = ctl_config(1, 100, 65537);
	if (!cfg || ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0"))
		goto out;
	free(cfg);
	for (i = 0; i < runs; i++) {
		char line[128];

		snprintf(line, sizeof(line),
			 "backend add 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		t0 = xlb_mono_us();
		if (ctl_exec_live(&c, line, &live[i]))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
		snprintf(line, sizeof(line),
			 "backend del 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		if (ctl_exec(&c, line))
			goto out;
	}
	ctl_print(o, "change_to_live", live, runs,
		  "one backend added, M=65537, 100 backends, Maglev: request received -> table live (daemon clock)",
		  2);
	ctl_print(o, "change_round_trip", lat, runs,
		  "the same, client send -> answer (includes saving the configuration)",
		  2);

	/* a large config from scratch */
	cfg = ctl_config(n_vips, 100, 65537);
	if (!cfg || ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
		goto out;
	for (i = 0; i < (o->quick ? 1 : 3); i++) {
		t0 = xlb_mono_us();
		if (ctl_restore(&c, cfg))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
		if (ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
			goto out;
	}
	snprintf(params, sizeof(params),
		 "%d VIPs x 100 backends, M=65537, Maglev, from empty", n_vips);
	ctl_print(o, "config_apply", lat, o->quick ? 1 : 3, params, 1000);

	/* restart: kill -9, start again, first answer; forwarding stays */
	for (i = 0; i < runs; i++) {	/* first with one VIP of 100 */
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
		if (!i) {
			char *small = ctl_config(1, 100, 65537);

			if (!small || ctl_start(&c) || ctl_restore(&c, small) ||
			    ctl_exec(&c, "link attach xlbc0")) {
				free(small);
				goto out;
			}
			free(small);
			kill(c.pid, SIGKILL);
			waitpid(c.pid, NULL, 0);
		}
		t0 = xlb_mono_us();
		if (ctl_start(&c))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
	}
	ctl_print(o, "restart_to_answer_small", lat, runs,
		  "kill -9 then start, 1 VIP x 100 backends adopted", 100);
	if (ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0"))
		goto out;
	free(cfg);
	prog_before = ctl_prog_on("xlbc0");
	for (i = 0; i < runs; i++) {
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
		t0 = xlb_mono_us();
		if (ctl_start(&c))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
	}
	prog_after = ctl_prog_on("xlbc0");
	snprintf(params, sizeof(params),
		 "kill -9 then start, %d VIPs adopted; XDP program %s", n_vips,
		 prog_before && prog_before == prog_after ?
		 "stayed attached" : "CHANGED");
	ctl_print(o, "restart_to_answer_large", lat, runs, params, 100);
	ret = 0;
out:
	if (c.pid > 0) {
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
	}
	/* XLB_BENCH_LOG=debug keeps the daemon's log in /tmp */
	snprintf(cmd, sizeof(cmd), "%s --instance %s --state-dir %s --cleanup 2>/dev/null; cp %s/xlbd.log /tmp/xlb-bench-xlbd.log; rm -rf %s",
		 c.xlbd, c.inst, c.dir, c.dir, c.dir);
	if (system(cmd))
		ret = 1;
	free(lat);
	free(live);
	return ret;
}

/* --- path --------------------------------------------------------------------- */

/*
 * path: forwarded packets per second through the LB's veth in the test
 * network of tests/e2e/lib/topo.sh, xlb against a program that only
 * reflects (XDP_TX) on the same veth, and connections per second through a
 * VIP against one backend directly; tools/xlb-bench/path.sh does that work and
 * this execs it.  "path gen" is its packet generator, run in a client's
 * network namespace:
 *
 *   xlb-bench path gen IFNAME SRC-MAC DST-MAC SRC DST PORT SIZE SECONDS
 *
 * sends UDP frames of SIZE bytes (Ethernet header to the end of the
 * payload, no FCS) from SRC to DST:PORT out of IFNAME until SECONDS have
 * passed, and prints how many.  The frames come from the reflect program
 * run by BPF_PROG_TEST_RUN with live frames (its XDP_TX transmits on
 * IFNAME): how xdp-trafficgen works, which sends only one size of IPv6.
 * Each run sets up and tears down a page pool, which sleeps (about 20 ms
 * here), so runs are sized to last about 0.5 s (at most 2^24 frames);
 * the source port changes with every run (10000 + run % 64).
 */
static long parse_num(const char *opt, const char *s, long lo, long hi);

static int path_mac(const char *s, __u8 mac[6])
{
	return sscanf(s, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx", &mac[0], &mac[1],
		      &mac[2], &mac[3], &mac[4], &mac[5]) == 6 ? 0 : -1;
}

static int path_gen(int argc, char **argv)
{
	static const __u8 zero[1600];
	struct xlb_reflect_bpf *skel;
	long size, secs, port, sent = 0, i, chunk = 8192;
	int family, ifindex, fd, ret = 1;
	struct pkt_spec s;
	__u8 buf[2048];
	size_t hdr;
	double t0, t1, left;

	if (argc != 8) {
		fprintf(stderr, "usage: xlb-bench path gen IFNAME SRC-MAC DST-MAC SRC DST PORT SIZE SECONDS\n");
		return 2;
	}
	family = strchr(argv[3], ':') ? 6 : 4;
	hdr = PKT_ETH_LEN + (family == 4 ? 20 : 40) + 8;
	pkt_spec_init(&s, family, IPPROTO_UDP);
	ifindex = (int)if_nametoindex(argv[0]);
	if (!ifindex || path_mac(argv[1], s.src_mac) ||
	    path_mac(argv[2], s.dst_mac) || pkt_addr(family, argv[3], s.src) ||
	    pkt_addr(family, argv[4], s.dst)) {
		fprintf(stderr, "xlb-bench: path gen: no interface %s, or a bad MAC or address (both of one family)\n",
			argv[0]);
		return 2;
	}
	port = parse_num("PORT", argv[5], 1, 65535);
	size = parse_num("SIZE", argv[6], (long)hdr, 1514);
	secs = parse_num("SECONDS", argv[7], 1, 3600);
	if (port < 0 || size < 0 || secs < 0)
		return 2;
	s.dport = (__u16)port;
	s.payload = zero;
	s.payload_len = (size_t)size - hdr;
	skel = xlb_reflect_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "xlb-bench: path gen: cannot load the reflect program: %s\n",
			strerror(errno));
		return 1;
	}
	fd = bpf_program__fd(skel->progs.xlb_reflect);
	t0 = xlb_mono_us();
	for (i = 0; (left = secs * 1e6 - (xlb_mono_us() - t0)) > 0; i++) {
		struct xdp_md ctx = { .ingress_ifindex = (__u32)ifindex };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = buf,
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
			    .repeat = (__u32)chunk,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

		s.sport = (__u16)(10000 + i % 64);
		opts.data_size_in = (__u32)pkt_build(&s, buf, sizeof(buf));
		ctx.data_end = opts.data_size_in;
		t1 = xlb_mono_us();
		if (bpf_prog_test_run_opts(fd, &opts)) {
			fprintf(stderr, "xlb-bench: path gen: live frames on %s: %s\n",
				argv[0], strerror(errno));
			goto out;
		}
		sent += chunk;
		/* the next run: about 0.5 s, or what is left */
		left -= xlb_mono_us() - t1;
		chunk = (long)(chunk / (xlb_mono_us() - t1 + 1) *
			       (left < 5e5 ? left : 5e5));
		chunk = chunk < 8192 ? 8192 : chunk > 1 << 24 ? 1 << 24 : chunk;
	}
	printf("%ld packets in %.3f s\n", sent, (xlb_mono_us() - t0) / 1e6);
	ret = 0;
out:
	xlb_reflect_bpf__destroy(skel);
	return ret;
}

static int bench_path(const struct opts *o, int argc, char **argv)
{
	char self[512], script[600], *dir;
	const char *args[16];
	ssize_t len;
	int n = 0, i;

	if (argc > 1 && !strcmp(argv[1], "gen"))
		return path_gen(argc - 2, argv + 2);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return 1;
	self[len] = 0;
	dir = dirname(self);
	setenv("XLB_BIN", dir, 0);
	snprintf(script, sizeof(script), "%s/../tools/xlb-bench/path.sh", dir);
	if (access(script, X_OK))
		snprintf(script, sizeof(script), "tools/xlb-bench/path.sh");
	args[n++] = script;
	if (o->json)
		args[n++] = "-j";
	if (o->quick)
		args[n++] = "--quick";
	for (i = 1; i < argc && n < 15; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(script, (char *const *)args);
	fprintf(stderr, "xlb-bench: path: cannot run %s: %s\n", script,
		strerror(errno));
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xlb-bench [-j] [--runs N] [--calls N] [--rounds N] [--quick]\n"
		"                 [--path NAME] [--vips LIST] [--ct-fill LIST]\n"
		"                 [--conntrack-entries N] [--against FILE] SUBCOMMAND\n"
		"\n"
		"Prints performance figures; never a pass/fail verdict.  The whole suite,\n"
		"with a report, results.json and plots: make bench (tools/xlb-bench/suite.sh).\n"
		"\n"
		"subcommands:\n"
		"  tables     Maglev and ring build time (median, min, max) and bytes per\n"
		"             table for M=4093,65537,1048573 x N=10,100,1000\n"
		"  pkt        data path ns per packet (BPF_PROG_TEST_RUN, repeat=1) on\n"
		"             each path, and the ratio to a trivial XDP_TX program in\n"
		"             the same run; verifier instructions and program size\n"
		"             (needs root)\n"
		"  pkt-scale  ns per packet against the number of VIPs and the\n"
		"             connection table's occupancy (needs root)\n"
		"  publish    a table written and switched on a loaded data path, for\n"
		"             each M; forwarding while tables are published (needs root)\n"
		"  memory     bytes per connection entry, table, VIP and backend, from\n"
		"             the memory the kernel reports for the maps (needs root)\n"
		"  control    xlbd (needs root): change -> live latency for one\n"
		"             backend added to a VIP of M=65537 with 100 backends;\n"
		"             1000 VIPs x 100 backends applied from scratch; restart\n"
		"             (kill -9) until the daemon answers, forwarding on\n"
		"  path       forwarded pps through the LB's veth against an XDP_TX-only\n"
		"             program, and conn/s through a VIP against one backend\n"
		"             (tools/xlb-bench/path.sh; needs root)\n"
		"\n"
		"options:\n"
		"  -j, --json       one JSON object per figure\n"
		"  --runs N         tables, publish, control: repetitions per figure\n"
		"                   (default 21)\n"
		"  --calls N        pkt, pkt-scale: test runs per path and round\n"
		"                   (default 100000)\n"
		"  --rounds N       pkt, pkt-scale: rounds, each with its own baseline\n"
		"                   (default 10)\n"
		"  --path NAME      pkt: only this path\n"
		"  --vips LIST      pkt-scale: VIP counts (default 1,100,1000)\n"
		"  --conntrack-entries N\n"
		"                   pkt: connection table size (default 1048576);\n"
		"                   the figures are then named pkt_ctN.PATH\n"
		"  --against FILE   pkt: run FILE, another build of xlb.bpf.o, on this\n"
		"                   build's maps in place of the XDP_TX program: the\n"
		"                   ratio compares the two builds (< 1: this one is\n"
		"                   faster); the figures are then named pkt_vs.PATH\n"
		"  --ct-fill LIST   pkt-scale: connection-table fill fractions\n"
		"                   (default 0,0.25,0.5,0.75,1)\n"
		"  --quick          smoke mode: 3 runs, 2 rounds of 2000 calls, small cases\n"
		"  -h, --help       this text\n");
}

/* A comma-separated list of numbers in [lo, hi], sorted ascending. */
static int parse_list(const char *opt, const char *s, double lo, double hi,
		      double *out, int *n)
{
	char tok[32];
	const char *end;
	size_t len;

	*n = 0;
	while (*s) {
		double v;

		end = strchrnul(s, ',');
		len = (size_t)(end - s);
		if (len < sizeof(tok)) {
			memcpy(tok, s, len);
			tok[len] = 0;
		}
		if (len >= sizeof(tok) || xlb_parse_real(tok, lo, hi, &v) ||
		    *n == MAX_LEVELS) {
			fprintf(stderr, "xlb-bench: %s wants up to %d numbers from %g to %g separated by commas, not \"%s\"\n",
				opt, MAX_LEVELS, lo, hi, s);
			return -1;
		}
		out[(*n)++] = v;
		s = *end ? end + 1 : end;
	}
	if (!*n) {
		fprintf(stderr, "xlb-bench: %s wants at least one number\n", opt);
		return -1;
	}
	qsort(out, (size_t)*n, sizeof(*out), cmp_double);
	return 0;
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	uint64_t v;

	if (xlb_parse_u64(s, (uint64_t)lo, (uint64_t)hi, &v)) {
		fprintf(stderr, "xlb-bench: %s wants a number from %ld to %ld, not \"%s\"\n",
			opt, lo, hi, s);
		return -1;
	}
	return (long)v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "calls", required_argument, NULL, 'c' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "path", required_argument, NULL, 'p' },
		{ "vips", required_argument, NULL, 'V' },
		{ "ct-fill", required_argument, NULL, 'F' },
		{ "conntrack-entries", required_argument, NULL, 'T' },
		{ "against", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .runs = -1, .calls = -1, .rounds = -1 };
	double list[MAX_LEVELS];
	const char *cmd;
	int c, i, n;

	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = 1;
			break;
		case 'r':
			o.runs = (int)parse_num("--runs", optarg, 1, 100000);
			if (o.runs < 0)
				return 2;
			break;
		case 'q':
			o.quick = 1;
			break;
		case 'p':
			o.path = optarg;
			break;
		case 'c':
			o.calls = parse_num("--calls", optarg, 1, 100000000);
			if (o.calls < 0)
				return 2;
			break;
		case 'R':
			o.rounds = (int)parse_num("--rounds", optarg, 1, 64);
			if (o.rounds < 0)
				return 2;
			break;
		case 'V':
			if (parse_list("--vips", optarg, 1, XLB_MAX_VIPS, list, &n))
				return 2;
			for (i = 0; i < n; i++)
				o.vips[i] = (long)list[i];
			o.n_vips = n;
			break;
		case 'F':
			if (parse_list("--ct-fill", optarg, 0, 1, o.fill, &o.n_fill))
				return 2;
			break;
		case 'T': {
			long n = parse_num("--conntrack-entries", optarg,
					   XLB_CONNTRACK_MIN,
					   XLB_CONNTRACK_MAX);

			if (n < 0)
				return 2;
			ct_entries = (__u32)n;
			break;
		}
		case 'A':
			if (access(optarg, R_OK)) {
				fprintf(stderr, "xlb-bench: --against %s: %s\n",
					optarg, strerror(errno));
				return 2;
			}
			against = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* defaults, smaller in smoke mode; what was given stays */
	if (o.runs < 0)
		o.runs = o.quick ? 3 : 21;
	if (o.calls < 0)
		o.calls = o.quick ? 2000 : 100000;
	if (o.rounds < 0)
		o.rounds = o.quick ? 2 : 10;
	if (!o.n_vips) {
		static const long q[] = { 1, 10 }, d[] = { 1, 100, 1000 };

		o.n_vips = o.quick ? 2 : 3;
		memcpy(o.vips, o.quick ? q : d, sizeof(long) * (size_t)o.n_vips);
	}
	if (!o.n_fill) {
		static const double q[] = { 0, 0.01 },
				    d[] = { 0, 0.25, 0.5, 0.75, 1 };

		o.n_fill = o.quick ? 2 : 5;
		memcpy(o.fill, o.quick ? q : d, sizeof(double) * (size_t)o.n_fill);
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (against && strcmp(cmd, "pkt")) {
		fprintf(stderr, "xlb-bench: --against is for pkt only\n");
		return 2;
	}
	if (ct_entries && strcmp(cmd, "pkt")) {
		fprintf(stderr, "xlb-bench: --conntrack-entries is for pkt only\n");
		return 2;
	}
	if (!strcmp(cmd, "tables"))
		return bench_tables(&o);
	if (!strcmp(cmd, "pkt"))
		return bench_pkt(&o);
	if (!strcmp(cmd, "pkt-scale"))
		return bench_pkt_scale(&o);
	if (!strcmp(cmd, "publish"))
		return bench_publish(&o);
	if (!strcmp(cmd, "memory"))
		return bench_memory(&o);
	if (!strcmp(cmd, "control"))
		return bench_control(&o);
	if (!strcmp(cmd, "path"))
		return bench_path(&o, argc - optind, argv + optind);
	fprintf(stderr, "xlb-bench: unknown subcommand \"%s\"; known: tables, pkt, pkt-scale, publish, memory, control, path\n",
		cmd);
	return 2;
}
