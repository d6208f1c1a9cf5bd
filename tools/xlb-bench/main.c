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
 *   pkt-mq     issue 21's paths on every CPU at once, beside one CPU alone
 *   publish    a table written and switched on a loaded data path, and
 *              forwarding while tables are published
 *   memory     bytes per connection entry, table, VIP and backend, as the
 *              kernel reports the maps' memory
 *   control    xlbd: change -> live latency, a large config applied from
 *              scratch, restart until the daemon answers again
 *   cluster    three LB hosts behind a router: failover, reroute, change
 *              propagation, agreement (tools/xlb-bench/cluster.sh)
 *
 * With -j every figure is one JSON object with the keys that
 * tools/xlb-bench/suite.sh collects into results.json (name, value, unit,
 * statistic, min, max, runs, baseline, ratio, params), the subcommand's own
 * keys beside them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "number.h"

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xlb-bench [-j] [--runs N] [--calls N] [--rounds N] [--quick]\n"
		"                 [--path NAME] [--only PART] [--vips LIST] [--ct-fill LIST]\n"
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
		"  pkt-mq     ns per packet with every CPU running test runs at\n"
		"             once, against one CPU alone: what lines shared between\n"
		"             CPUs cost (needs root and two CPUs)\n"
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
		"  cluster    three LB hosts behind a bird2 router with etcd: failover\n"
		"             (host lost -> last held connection answering again),\n"
		"             reroute, change propagation p50/p99, agreement\n"
		"             (tools/xlb-bench/cluster.sh; needs root, bird2, etcd)\n"
		"\n"
		"options:\n"
		"  -j, --json       one JSON object per figure\n"
		"  --runs N         tables, publish, control: repetitions per figure\n"
		"                   (default 21)\n"
		"  --calls N        pkt, pkt-scale, pkt-mq: test runs per path and\n"
		"                   round (pkt-mq: per CPU; default 100000)\n"
		"  --rounds N       pkt, pkt-scale, pkt-mq: rounds, each with its own\n"
		"                   baseline (default 10)\n"
		"  --path NAME      pkt, pkt-mq: only this path\n"
		"  --only PART      control: only this part: change (change -> live),\n"
		"                   apply (large configurations) or restart\n"
		"  --vips LIST      pkt-scale: VIP counts (default 1,100,1000);\n"
		"                   control: the first, VIPs of the large cases\n"
		"                   (default 1000)\n"
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

long parse_num(const char *opt, const char *s, long lo, long hi)
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
		{ "only", required_argument, NULL, 'O' },
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
		case 'O':
			o.only = optarg;
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
			o.ct_entries = (__u32)n;
			break;
		}
		case 'A':
			if (access(optarg, R_OK)) {
				fprintf(stderr, "xlb-bench: --against %s: %s\n",
					optarg, strerror(errno));
				return 2;
			}
			o.against = optarg;
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
	o.vips_given = o.n_vips;
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
	if (o.against && strcmp(cmd, "pkt")) {
		fprintf(stderr, "xlb-bench: --against is for pkt only\n");
		return 2;
	}
	if (o.only && strcmp(cmd, "control")) {
		fprintf(stderr, "xlb-bench: --only is for control only\n");
		return 2;
	}
	if (o.ct_entries && strcmp(cmd, "pkt")) {
		fprintf(stderr, "xlb-bench: --conntrack-entries is for pkt only\n");
		return 2;
	}
	if (o.path && strcmp(cmd, "pkt") && strcmp(cmd, "pkt-mq")) {
		fprintf(stderr, "xlb-bench: --path is for pkt and pkt-mq only\n");
		return 2;
	}
	if (o.path && !strcmp(cmd, "pkt") && !path_find(o.path)) {
		size_t i;

		fprintf(stderr, "xlb-bench: --path %s is not a path of pkt; known:",
			o.path);
		for (i = 0; i < NPATHS; i++)
			fprintf(stderr, " %s", paths[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	if (!strcmp(cmd, "tables"))
		return bench_tables(&o);
	if (!strcmp(cmd, "pkt"))
		return bench_pkt(&o);
	if (!strcmp(cmd, "pkt-scale"))
		return bench_pkt_scale(&o);
	if (!strcmp(cmd, "pkt-mq"))
		return bench_pkt_mq(&o);
	if (!strcmp(cmd, "publish"))
		return bench_publish(&o);
	if (!strcmp(cmd, "memory"))
		return bench_memory(&o);
	if (!strcmp(cmd, "control"))
		return bench_control(&o);
	if (!strcmp(cmd, "path"))
		return bench_path(&o, argc - optind, argv + optind);
	if (!strcmp(cmd, "cluster"))
		return bench_script(&o, "cluster", argc - optind, argv + optind);
	fprintf(stderr, "xlb-bench: unknown subcommand \"%s\"; known: tables, pkt, pkt-scale, pkt-mq, publish, memory, control, path, cluster\n",
		cmd);
	return 2;
}
