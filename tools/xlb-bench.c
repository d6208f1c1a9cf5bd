// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: performance figures of xlb.  Benchmarks print numbers; they
 * never pass or fail.  Subcommands:
 *   tables   build time of Maglev and ring tables, bytes per table
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lookup_table.h"
#include "rand.h"

struct opts {
	int json;
	int runs;
	int quick;	/* smoke mode for make test: fewer runs, smaller cases */
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
		"\n"
		"options:\n"
		"  -j, --json     one JSON object per figure\n"
		"  --runs N       repetitions per figure (default 21)\n"
		"  --quick        smoke mode: 3 runs, small cases only\n"
		"  -h, --help     this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .runs = 21 };
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
	fprintf(stderr, "xlb-bench: unknown subcommand \"%s\"; known: tables\n",
		argv[optind]);
	return 2;
}
