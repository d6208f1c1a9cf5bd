// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: performance figures of xlb.  Benchmarks print numbers; they
 * never pass or fail.  Subcommands:
 *   tables   build time of Maglev and ring tables, bytes per table
 *   pkt      ns per packet of the data path under BPF_PROG_TEST_RUN, as a
 *            ratio to a trivial XDP_TX program measured in the same run
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <getopt.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datapath.h"
#include "lookup_table.h"
#include "pkt.h"
#include "rand.h"
#include "xlb.skel.h"
#include "xlb_reflect.skel.h"

struct opts {
	int json;
	int runs;
	int quick;	/* smoke mode for make test: fewer runs, smaller cases */
	long calls;	/* pkt: test runs per path */
	const char *path;	/* pkt: only this path */
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct tables_case {
	uint32_t algo;
	uint32_t m;
	uint32_t n;
};

static const struct tables_case tables_cases[] = {
	{ XLB_ALGO_MAGLEV, 65537, 10 },
	{ XLB_ALGO_MAGLEV, 65537, 100 },
	{ XLB_ALGO_MAGLEV, 65537, 1000 },
	{ XLB_ALGO_MAGLEV, 1048573, 1000 },
	{ XLB_ALGO_RING, 65537, 10 },
	{ XLB_ALGO_RING, 65537, 100 },
	{ XLB_ALGO_RING, 65537, 1000 },
	{ XLB_ALGO_RING, 1048573, 1000 },
};

static int bench_table_case(const struct tables_case *tc, const struct opts *o)
{
	struct xlb_table_params p = {
		.algo = tc->algo, .size = tc->m, .vnodes = XLB_RING_VNODES_DEFAULT,
		.key = { 0x6b65792d6b657931ULL, 0x6b65792d6b657932ULL },
	};
	struct xlb_backend_spec *b = calloc(tc->n, sizeof(*b));
	char (*names)[24] = calloc(tc->n, sizeof(*names));
	double *t = calloc(o->runs, sizeof(*t));
	struct xlb_err err;
	struct xlb_table tab;
	uint32_t i;
	int r, ret = 0;

	if (!b || !names || !t) {
		fprintf(stderr, "xlb-bench: out of memory\n");
		ret = 1;
		goto out;
	}
	for (i = 0; i < tc->n; i++) {
		snprintf(names[i], sizeof(names[i]), "10.1.%u.%u", i / 256, i % 256);
		b[i] = (struct xlb_backend_spec){ .name = names[i], .weight = 1,
						  .id = (uint16_t)i };
	}
	for (r = 0; r < o->runs; r++) {
		double t0 = now_us();

		if (xlb_table_build(&tab, &p, b, tc->n, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			ret = 1;
			goto out;
		}
		t[r] = now_us() - t0;
		xlb_table_free(&tab);
	}
	qsort(t, o->runs, sizeof(*t), cmp_double);
	if (o->json)
		printf("{\"bench\":\"tables\",\"algo\":\"%s\",\"table_size\":%u,\"backends\":%u,\"vnodes\":%u,\"runs\":%d,\"median_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f,\"table_bytes\":%zu}\n",
		       xlb_algo_name(tc->algo), tc->m, tc->n,
		       tc->algo == XLB_ALGO_RING ? p.vnodes : 0, o->runs,
		       t[o->runs / 2], t[0], t[o->runs - 1],
		       (size_t)tc->m * sizeof(struct xlb_slot));
	else
		printf("%-7s %9u %6u %7s %10.1f %10.1f %10.1f %12zu\n",
		       xlb_algo_name(tc->algo), tc->m, tc->n,
		       tc->algo == XLB_ALGO_RING ? "100" : "-",
		       t[o->runs / 2], t[0], t[o->runs - 1],
		       (size_t)tc->m * sizeof(struct xlb_slot));
out:
	free(b);
	free(names);
	free(t);
	return ret;
}

static int bench_tables(const struct opts *o)
{
	size_t i;
	int ret = 0;

	if (!o->json) {
		printf("table build time, median of %d runs (one core)\n", o->runs);
		printf("%-7s %9s %6s %7s %10s %10s %10s %12s\n", "algo", "M",
		       "N", "vnodes", "median_us", "min_us", "max_us",
		       "table_bytes");
	}
	for (i = 0; i < sizeof(tables_cases) / sizeof(tables_cases[0]); i++) {
		if (o->quick && tables_cases[i].m > 65537)
			continue;
		ret |= bench_table_case(&tables_cases[i], o);
	}
	return ret;
}

/* --- pkt ------------------------------------------------------------------ */

#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8::10"
#define CLIENT4		"198.51.100.7"
#define CLIENT6		"2001:db8:1::7"
#define OTHER4		"203.0.113.99"
#define BACKENDS	4

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
};

static void addr(int family, const char *s, __be32 a[4])
{
	memset(a, 0, 16);
	inet_pton(family == 4 ? AF_INET : AF_INET6, s, a);
}

/* Backends 4v..4v+3 of VIP v: 10.1.v.i or 2001:db8:2::v:i, next hop set. */
static int setup_vip(struct pkt_bench *b, int v, int family, __u16 port,
		     __u32 flags, int encap, struct xlb_err *err)
{
	struct xlb_table_params tp = { .algo = XLB_ALGO_MAGLEV, .size = 65537,
				       .key = b->cfg.key };
	struct xlb_backend_spec spec[BACKENDS];
	char names[BACKENDS][48];
	struct xlb_vip_key k = { .port = htons(port), .proto = IPPROTO_TCP,
				 .family = (__u8)family };
	struct xlb_vip vip = { .id = v, .flags = flags };
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
		__u16 id = (__u16)(v * BACKENDS + i);

		if (v == VIP_FIB) {
			snprintf(names[i], sizeof(names[i]), FIB_NET ".%d", 10 + i);
			be.flags = XLB_BE_F_VALID;
		} else if (family == 4)
			snprintf(names[i], sizeof(names[i]), "10.1.%d.%d", v, i + 1);
		else
			snprintf(names[i], sizeof(names[i]), "2001:db8:2::%d:%d",
				 v, i + 1);
		addr(family, names[i], be.addr);
		ret = xlb_dp_backend_set(&b->dp, id, &be, err);
		if (ret)
			return ret;
		spec[i] = (struct xlb_backend_spec){ .name = names[i],
						     .weight = 1, .id = id };
	}
	ret = xlb_table_build(&t, &tp, spec, BACKENDS, err);
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

static int pkt_setup(struct pkt_bench *b, struct xlb_err *err)
{
	int ret;

	b->skel = xlb_bpf__open();
	b->reflect = xlb_reflect_bpf__open_and_load();
	if (!b->skel || !b->reflect)
		return xlb_errf(err, errno, "cannot open the BPF objects: %s",
				strerror(errno));
	bpf_program__set_log_buf(b->skel->progs.xlb_main, verifier_log,
				 sizeof(verifier_log));
	bpf_program__set_log_level(b->skel->progs.xlb_main, 4);
	if (xlb_bpf__load(b->skel))
		return xlb_errf(err, errno, "cannot load xlb.bpf.o (root needed): %s",
				strerror(errno));
	ret = xlb_dp_from_obj(&b->dp, b->skel->obj, err);
	if (ret)
		return ret;
	xlb_config_defaults(&b->cfg);
	b->cfg.key = (struct xlb_hash_key){ 0x62656e63686b6579ULL, 42 };
	inet_pton(AF_INET, "10.0.0.1", &b->cfg.src4);
	addr(6, "2001:db8:ff::1", b->cfg.src6);
	ret = xlb_dp_config_set(&b->dp, &b->cfg);
	if (ret)
		return xlb_errf(err, -ret, "cannot write the config map");
	ret = setup_vip(b, VIP_IPIP, 4, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE, 4, 443, 0, XLB_ENCAP_GUE, err);
	ret = ret ? ret : setup_vip(b, VIP_V6, 6, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_STATELESS, 4, 8080,
				    XLB_VIP_F_STATELESS, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_FIB, 4, 81, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE6, 6, 443, 0, XLB_ENCAP_GUE, err);
	return ret;
}

static size_t make_packet(__u8 *buf, int family, const char *dst, __u16 dport,
			  __u16 sport, __u32 client)
{
	static const char payload[64];
	struct pkt_spec s;

	pkt_spec_init(&s, family, IPPROTO_TCP);
	addr(family, family == 4 ? CLIENT4 : CLIENT6, s.src);
	if (family == 4)
		s.src[0] ^= htonl(client);
	else
		s.src[3] ^= htonl(client);
	addr(family, dst, s.dst);
	s.sport = sport;
	s.dport = dport;
	s.tcp_flags = PKT_TCP_ACK;
	s.payload = payload;
	s.payload_len = sizeof(payload);
	return pkt_build(&s, buf, 256);
}

struct path {
	const char *name;
	int family;
	const char *dst;
	__u16 dport;
	int new_flow;		/* a different flow every call */
	int expect;		/* XDP action the path must end in */
	int fib;		/* arrives on the veth: next hop by FIB lookup */
};

static const struct path paths[] = {
	{ "non_vip_pass", 4, OTHER4, 80, 0, XDP_PASS, 0 },
	{ "ct_hit", 4, VIP4, 80, 0, XDP_TX, 0 },
	{ "new_flow", 4, VIP4, 80, 1, XDP_TX, 0 },
	{ "stateless", 4, VIP4, 8080, 0, XDP_TX, 0 },
	{ "stateless_new", 4, VIP4, 8080, 1, XDP_TX, 0 },
	{ "ipv6_ct_hit", 6, VIP6, 80, 0, XDP_TX, 0 },
	{ "gue_ct_hit", 4, VIP4, 443, 0, XDP_TX, 0 },
	{ "gue6_ct_hit", 6, VIP6, 443, 0, XDP_TX, 0 },
	{ "fib_ct_hit", 4, VIP4, 81, 0, XDP_TX, 1 },
};

/* Mean kernel-measured ns per run over `calls` runs with repeat = 1. */
static int run_path(int prog_fd, const struct path *pa, long calls,
		    double *ns)
{
	__u8 in[256], out[512];
	unsigned long long total = 0;
	size_t len = make_packet(in, pa->family, pa->dst, pa->dport, 40000, 0);
	long i;

	struct xdp_md ctx = { .ingress_ifindex = pa->fib ? fib_ifindex : 0 };

	for (i = 0; i < calls; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_size_in = (__u32)len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1,
			    .ctx_in = pa->fib ? &ctx : NULL,
			    .ctx_size_in = pa->fib ? sizeof(ctx) : 0);

		if (pa->new_flow)
			len = make_packet(in, pa->family, pa->dst, pa->dport,
					  (__u16)(1024 + i % 60000),
					  (__u32)(i / 60000 + 1));
		ctx.data_end = (__u32)len;	/* the kernel wants the frame size */
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

static long verifier_insns(void)
{
	const char *p = strstr(verifier_log, "processed ");

	return p ? strtol(p + 10, NULL, 10) : -1;
}

static int bench_pkt(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	struct path base = { "baseline", 4, VIP4, 80, 0, XDP_TX, 0 };
	__u64 ev[XLB_EV_MAX];
	double base_ns, ns;
	size_t i;
	int ret;

	if (fib_setup()) {
		fprintf(stderr, "xlb-bench: cannot make a network namespace for the FIB path (root needed)\n");
		return 1;
	}
	if (pkt_setup(&b, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		ret = 1;
		goto out;
	}
	bpf_obj_get_info_by_fd(bpf_program__fd(b.skel->progs.xlb_main), &info,
			       &info_len);
	ret = run_path(bpf_program__fd(b.reflect->progs.xlb_reflect), &base,
		       o->calls, &base_ns);
	if (ret)
		goto fail;
	if (!o->json) {
		printf("ns per packet, BPF_PROG_TEST_RUN, repeat=1, mean of %ld calls\n",
		       o->calls);
		printf("verifier: %ld instructions processed; program %u bytes xlated, %u jited\n",
		       verifier_insns(), info.xlated_prog_len,
		       info.jited_prog_len);
		printf("%-14s %8s %12s %7s\n", "path", "ns", "baseline_ns", "ratio");
	} else {
		printf("{\"bench\":\"pkt\",\"path\":\"verifier\",\"processed_insns\":%ld,\"xlated_bytes\":%u,\"jited_bytes\":%u}\n",
		       verifier_insns(), info.xlated_prog_len,
		       info.jited_prog_len);
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (o->path && strcmp(o->path, paths[i].name))
			continue;
		ret = run_path(bpf_program__fd(b.skel->progs.xlb_main),
			       &paths[i], o->calls, &ns);
		if (ret)
			goto fail;
		if (o->json)
			printf("{\"bench\":\"pkt\",\"path\":\"%s\",\"ns\":%.1f,\"baseline_ns\":%.1f,\"ratio\":%.2f,\"calls\":%ld}\n",
			       paths[i].name, ns, base_ns, ns / base_ns,
			       o->calls);
		else
			printf("%-14s %8.1f %12.1f %7.2f\n", paths[i].name, ns,
			       base_ns, ns / base_ns);
	}
	ret = 0;
	goto out;
fail:
	fprintf(stderr, "xlb-bench: pkt: %s\n",
		ret == -EPROTO ? "the data path is not set up as the benchmark expects" :
				 strerror(-ret));
	if (ret == -EPROTO && !xlb_dp_events(&b.dp, ev))
		for (i = 0; i < XLB_EV_MAX; i++)
			if (ev[i])
				fprintf(stderr, "  event %s: %llu\n",
					xlb_event_name((int)i),
					(unsigned long long)ev[i]);
	ret = 1;
out:
	xlb_bpf__destroy(b.skel);
	xlb_reflect_bpf__destroy(b.reflect);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xlb-bench [-j] [--runs N] [--quick] SUBCOMMAND\n"
		"\n"
		"Prints performance figures; never a pass/fail verdict.\n"
		"\n"
		"subcommands:\n"
		"  tables   Maglev and ring build time (median, min, max) and bytes\n"
		"           per table for M=65537 with N=10,100,1000 and M=1048573\n"
		"           with N=1000\n"
		"  pkt      data path ns per packet (BPF_PROG_TEST_RUN, repeat=1) on\n"
		"           each path, and the ratio to a trivial XDP_TX program in\n"
		"           the same run; verifier instruction count (needs root)\n"
		"\n"
		"options:\n"
		"  -j, --json     one JSON object per figure\n"
		"  --runs N       tables: repetitions per figure (default 21)\n"
		"  --calls N      pkt: test runs per path (default 1000000)\n"
		"  --path NAME    pkt: only this path\n"
		"  --quick        smoke mode: 3 runs, small cases, 2000 calls\n"
		"  -h, --help     this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "calls", required_argument, NULL, 'c' },
		{ "path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .runs = 21, .calls = 1000000 };
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = 1;
			break;
		case 'r':
			o.runs = (int)strtol(optarg, &end, 10);
			if (*end || o.runs < 1 || o.runs > 100000) {
				fprintf(stderr, "xlb-bench: --runs wants a number from 1 to 100000, not \"%s\"\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			o.quick = 1;
			o.runs = 3;
			o.calls = 2000;
			break;
		case 'p':
			o.path = optarg;
			break;
		case 'c':
			o.calls = strtol(optarg, &end, 10);
			if (*end || o.calls < 1 || o.calls > 100000000) {
				fprintf(stderr, "xlb-bench: --calls wants a number from 1 to 100000000, not \"%s\"\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "tables"))
		return bench_tables(&o);
	if (!strcmp(argv[optind], "pkt"))
		return bench_pkt(&o);
	fprintf(stderr, "xlb-bench: unknown subcommand \"%s\"; known: tables, pkt\n",
		argv[optind]);
	return 2;
}
