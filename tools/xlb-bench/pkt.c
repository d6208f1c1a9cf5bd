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

/* One round of path pa: prepare its connection table, then measure it. */
static int pkt_round(struct pkt_bench *b, const struct opts *o, int base_fd,
		     int main_fd, const struct path *pa, int r, double *base,
		     double *ns, struct flow_mix *mix)
{
	struct new_flow_gen g = { pa, (long)r * o->calls };
	pkt_gen gen = pa->new_flow ? gen_new_flow : pa->rotate ? gen_rotate :
		      pa->zipf ? gen_zipf : NULL;
	int ret = 0;

	/* every round of new flows starts from an empty table */
	if (pa->new_flow && !pa->full)
		xlb_dp_ct_flush(&b->dp);
	/* established flows: all of them, before every round */
	if (pa->rotate || pa->zipf) {
		ret = establish(main_fd, pa);
		if (!ret && b->against)
			ret = establish(base_fd, pa);
	}
	return ret ? ret : run_pair(b, base_fd, main_fd, pa, o->calls, gen, &g,
				    base, ns, mix);
}

/*
 * The figure of path i: human line or JSON record.  miss_ns: one miss to
 * memory (memlat.mem_miss), 0 when not measured.  A cold path's packets
 * each read a line no cache holds, so none can cost less than the
 * XDP_TX-only program and that one miss: its floor, as a ratio
 * (miss_floor_ratio), beside the goal.
 */
static void pkt_report(const struct opts *o, const struct path *pa,
		       double *ns, double *base, double *ratio,
		       const struct flow_mix *m, double occupancy,
		       double miss_ns)
{
	struct fig f = { .bench = "pkt", .unit = "ns",
			 .baseline_what = o->against ? o->against :
				"XDP_TX-only program" };
	double rmin, rmax, base_med, c = m->calls ? (double)m->calls : 1;
	double hit = m->ct_hits / c, cache = m->cache_hits / c;
	double ins = (m->new_flows - m->refused) / c;
	int nr = o->rounds, r;
	char tgt[16] = "", flr[16] = "";

	for (r = 0; r < nr; r++)
		ratio[r] = ns[r] / base[r];
	qsort(ratio, (size_t)nr, sizeof(*ratio), cmp_double);
	rmin = ratio[0];
	rmax = ratio[nr - 1];
	fig_median(&f, ns, nr);
	base_med = median_of(base, nr);
	f.baseline = base_med;
	/* another table size, another baseline: another figure */
	if (o->ct_entries)
		snprintf(f.name, sizeof(f.name), "pkt%s_ct%u.%s",
			 o->against ? "_vs" : "", o->ct_entries, pa->name);
	else
		snprintf(f.name, sizeof(f.name), "pkt%s.%s",
			 o->against ? "_vs" : "", pa->name);
	PARAM(&f, "\"path\":\"%s\",\"calls_per_round\":%ld,\"rounds\":%d,\"packet_bytes\":%d,\"ratio_min\":%.3f,\"ratio_max\":%.3f,\"conntrack_entries\":%u",
	      pa->name, o->calls, nr, pa->family == 4 ? 118 : 138, rmin, rmax,
	      o->ct_entries ? o->ct_entries : XLB_CONNTRACK_DEFAULT);
	PARAM(&f, ",\"flows\":%ld,\"ct_hit_share\":%.4f,\"cache_hit_share\":%.4f,\"insert_share\":%.4f",
	      pa->rotate ? pa->rotate : pa->zipf ? pa->zipf :
	      pa->new_flow ? -1 : 1, hit, cache, ins);
	if (pa->full)
		PARAM(&f, ",\"occupancy_before\":%.6f", occupancy);
	if (pa->zipf)
		PARAM(&f, ",\"zipf_s\":%.2f,\"zipf_seed\":%llu", ZIPF_S,
		      (unsigned long long)ZIPF_SEED);
	/* the goals are for the default table: Katran's 1M flows (issue 21) */
	if (pa->target && !o->against && !o->ct_entries) {
		PARAM(&f, ",\"target_ratio\":%.2f,\"target_what\":\"%s\"",
		      pa->target, pa->expect == XDP_PASS ?
		      "1.2 x XDP_TX" : "0.6 x Katran (issue 21)");
		snprintf(tgt, sizeof(tgt), "%.2f", pa->target);
	}
	/* the default table's buckets are what no cache holds (lb.c) */
	if (pa->cold && miss_ns > 0 && !o->against && !o->ct_entries &&
	    base_med > 0) {
		PARAM(&f, ",\"miss_ns\":%.1f,\"miss_floor_ratio\":%.2f",
		      miss_ns, (base_med + miss_ns) / base_med);
		snprintf(flr, sizeof(flr), "%.2f",
			 (base_med + miss_ns) / base_med);
	}
	if (o->json) {
		EXTRA(&f, "\"path\":\"%s\",\"ns\":%.1f,\"baseline_ns\":%.1f,\"calls\":%ld",
		      pa->name, f.value, base_med, o->calls * nr);
		fig_json(&f);
	} else {
		printf("%-17s %7.1f %7.1f %7.1f %8.1f %6.2f %6s %6s %6.3f %6.3f %6.3f\n",
		       pa->name, f.value, f.min, f.max, base_med,
		       f.value / base_med, tgt, flr, hit, cache, ins);
	}
}

/*
 * One memlat figure, ns: v is the value, or with runs > 1 the median, min
 * and max over the runs; what it measures, and one more number (key).
 */
static void memlat_fig(const char *name, const double *v, int runs,
		       const char *what, const char *key, double more)
{
	struct fig f;

	memset(&f, 0, sizeof(f));
	f.bench = "memlat";
	f.unit = "ns";
	snprintf(f.name, sizeof(f.name), "%s", name);
	fig_exact(&f, v[0]);
	if (runs > 1) {
		f.stat = "median";
		f.runs = runs;
		f.min = v[1];
		f.max = v[2];
	}
	PARAM(&f, "\"what\":\"%s\",\"%s\":%.3f", what, key, more);
	fig_json(&f);
}

/* One miss to memory, one TLB miss: the limit the paths are set against. */
static void memlat_report(const struct opts *o, const struct mem_lat *m,
			  const struct run_lat *rl, double per_flow)
{
	if (!o->json) {
		printf("this machine: one miss to memory %.1f ns (%.0f%% of the region in huge pages), one TLB miss %.1f ns, a second-level cache hit %.1f ns; connection table %.1f B per flow\n",
		       m->mem_ns, 100 * m->mem_huge_share, m->tlb_ns,
		       m->near_ns, per_flow);
		printf("fresh memory: the first write to a 4 KiB page %.0f ns, to 4 KiB of a 2 MiB page %.0f ns\n",
		       m->fault_ns, m->fault_huge_ns);
		printf("in a test run, a program's one line a call over none (%.1f ns a call): the same line every call %.1f ns, one of 16384 lines in 1 MiB %.1f ns, one of 16384 pages %.1f ns\n",
		       rl->call_ns, rl->page[0], rl->near[0], rl->tlb[0]);
		return;
	}
	memlat_fig("memlat.mem_miss", &m->mem_ns, 1,
		   "dependent load, random line of 64 MiB in a 512 MiB region",
		   "huge_page_share", m->mem_huge_share);
	memlat_fig("memlat.tlb_miss", &m->tlb_ns, 1,
		   "dependent load, one line per 4 KiB page of 16384, minus the same lines packed",
		   "near_ns", m->near_ns);
	memlat_fig("memlat.page_fault", &m->fault_ns, 1,
		   "first write to each fresh 4 KiB page of 65 MiB in 4 KiB pages",
		   "huge_ns", m->fault_huge_ns);
	memlat_fig("memlat.run_page", rl->page, rl->rounds,
		   "test run: one line, the same every call, over no line",
		   "call_ns", rl->call_ns);
	memlat_fig("memlat.run_near", rl->near, rl->rounds,
		   "test run: one of 16384 lines packed in 1 MiB, over no line",
		   "call_ns", rl->call_ns);
	memlat_fig("memlat.run_tlb", rl->tlb, rl->rounds,
		   "test run: one of 16384 lines, one per 4 KiB page, over no line",
		   "call_ns", rl->call_ns);
}

int bench_pkt(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct flow_mix mix[NPATHS];
	struct mem_lat ml;
	struct run_lat rl;
	int nr = o->rounds, main_fd, base_fd, r, ret, full;
	double *base = calloc(NPATHS * (size_t)nr, sizeof(double));
	double *ns = calloc(NPATHS * (size_t)nr, sizeof(double));
	double *ratio = calloc((size_t)nr, sizeof(double));
	__u32 cap = 0, entries = 0, full_cap = 0;
	double per_flow = 0;
	size_t i;

	memset(mix, 0, sizeof(mix));
	if (!base || !ns || !ratio || zipf_init(ZIPF_FLOWS, ZIPF_S))
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
	/*
	 * The paths round by round, so that each round sees the machine as
	 * the others do; those on a full table last, their rounds together
	 * (filling a table takes longer than measuring it).
	 */
	for (full = 0, ret = 0; full < 2 && !ret; full++) {
		for (r = 0; r < nr && !ret; r++) {
			for (i = 0; !ret && i < NPATHS; i++) {
				if ((o->path && strcmp(o->path, paths[i].name)) ||
				    paths[i].full != full)
					continue;
				if (full && !r)
					ret = ct_fill_full(&b, &entries,
							   &full_cap);
				ret = ret ? ret :
				      pkt_round(&b, o, base_fd, main_fd,
						&paths[i], r, &base[i * nr + r],
						&ns[i * nr + r], &mix[i]);
			}
		}
	}
	if (ret) {
		bench_fail(&b, "pkt", ret);
		ret = 1;
		goto out;
	}
	if (!xlb_dp_ct_capacity(&b.dp, &cap) && cap) {
		struct bpf_map_info mi = {};
		__u32 len = sizeof(mi);

		if (!bpf_obj_get_info_by_fd(b.dp.conntrack, &mi, &len))
			per_flow = (double)mi.max_entries * mi.value_size / cap;
	}
	if (!o->path && mem_latency(&ml)) {
		fprintf(stderr, "xlb-bench: cannot map memory for the latency figures\n");
		ret = 1;
		goto out;
	}
	if (!o->path && (ret = run_latency(o, &rl))) {
		fprintf(stderr, "xlb-bench: the test-run latency figures: %s\n",
			strerror(-ret));
		ret = 1;
		goto out;
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
		if (!o->path)
			memlat_report(o, &ml, &rl, per_flow);
		printf("target: issue 21's goal for the ratio (0.6 x Katran; non_vip_pass: 1.2); floor: the ratio of the XDP_TX-only program plus one miss to memory, which a packet reading a line no cache holds cannot go under; hit, cache, insert: shares of the calls\n");
		printf("%-17s %7s %7s %7s %8s %6s %6s %6s %6s %6s %6s\n", "path",
		       "ns", "min", "max", "base_ns", "ratio", "target",
		       "floor", "hit", "cache", "insert");
	} else if (!o->ct_entries) {	/* the same program: said once */
		verifier_figures(o, &b);
		if (!o->path)
			memlat_report(o, &ml, &rl, per_flow);
	}
	for (i = 0; i < NPATHS; i++) {
		if (o->path && strcmp(o->path, paths[i].name))
			continue;
		pkt_report(o, &paths[i], &ns[i * nr], &base[i * nr], ratio,
			   &mix[i], full_cap ? (double)entries / full_cap : 0,
			   o->path ? 0 : ml.mem_ns);
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
