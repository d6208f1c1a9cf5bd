// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench pkt-scale: ns per packet against the number of VIPs and the
 * occupancy of the connection table.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "clock.h"
#include "mono.h"
#include "rand.h"


/*
 * Per-packet cost against state: VIPs configured (1, 100, 1000) and
 * connection-table occupancy (empty .. full).  One data path with only
 * VIP_IPIP (id 0) to start with; extra VIPs are added in ascending count,
 * the connection table is flushed and filled from userspace for each level.
 */
#define EXTRA_VIP_M	4093	/* tables of the extra VIPs, to bound memory */
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
		ret = run_pair(b, bpf_program__fd(b->reflect->progs.xlb_reflect),
			       bpf_program__fd(b->skel->progs.xlb_main), pa,
			       calls, gen, ctx, &base[r], &ns[r], NULL);
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

int bench_pkt_scale(const struct opts *o)
{
	static const struct path vip_spread = { "vip_spread", 4, VIP4, 80, 0, XDP_TX, 0, 0, 0, 0, 0, 0 };
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	const struct path *ct_hit = &paths[1], *new_flow = &paths[2];
	struct bpf_map_info mi = {};
	__u32 mi_len = sizeof(mi);
	long have = 1, flow_base = 0, new_calls;
	int i, ret = 1, me, ncpus_possible = libbpf_num_possible_cpus();
	cpu_set_t cpus;

	if (pkt_setup(&b, o, 0, &err)) {
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
		lb_addr(4, CLIENT4, sg.src);
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
		lb_addr(4, VIP4, cg.dst);
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
