// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench pkt: ns per packet of the data path on each path, as a ratio to
 * a trivial XDP_TX program (or another build, --against) measured in the
 * same run; the verifier's figures for the program.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"

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

int bench_pkt(const struct opts *o)
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
	if (pkt_setup(&b, o, 1, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		ret = 1;
		goto out;
	}
	pin_cpu(sched_getcpu());	/* test runs execute where we run */
	main_fd = bpf_program__fd(b.skel->progs.xlb_main);
	base_fd = bpf_program__fd(b.reflect->progs.xlb_reflect);
	if (o->against) {
		base_fd = against_load(&b, o->against, &err);
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
			ret = ret ? ret : run_pair(&b, base_fd, main_fd, &paths[i],
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
		       o->ct_entries ? o->ct_entries : XLB_CONNTRACK_DEFAULT);
		if (o->against)
			printf("baseline: %s on the same maps, each path (ratio < 1: this build is faster)\n",
			       o->against);
		if (!o->ct_entries)
			verifier_figures(o, &b);
		printf("%-14s %8s %8s %8s %12s %7s\n", "path", "ns", "min",
		       "max", "baseline_ns", "ratio");
	} else if (!o->ct_entries) {	/* the same program: said once */
		verifier_figures(o, &b);
	}
	for (i = 0; i < NPATHS; i++) {
		struct fig f = { .bench = "pkt", .unit = "ns",
				 .baseline_what = o->against ? o->against :
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
		if (o->ct_entries)
			snprintf(f.name, sizeof(f.name), "pkt%s_ct%u.%s",
				 o->against ? "_vs" : "", o->ct_entries,
				 paths[i].name);
		else
			snprintf(f.name, sizeof(f.name), "pkt%s.%s",
				 o->against ? "_vs" : "", paths[i].name);
		PARAM(&f, "\"path\":\"%s\",\"calls_per_round\":%ld,\"rounds\":%d,\"packet_bytes\":%d,\"ratio_min\":%.3f,\"ratio_max\":%.3f,\"conntrack_entries\":%u",
		      paths[i].name, o->calls, nr,
		      paths[i].family == 4 ? 118 : 138, rmin, rmax,
		      o->ct_entries ? o->ct_entries : XLB_CONNTRACK_DEFAULT);
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
	bpf_object__close(b.against);
	pkt_teardown(&b);
	free(base);
	free(ns);
	free(ratio);
	return ret;
}
