// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench pkt-mq: issue 21's paths on every CPU at once, beside one CPU
 * alone, in the same run.
 *
 * A NIC with several queues runs the program on several CPUs at once.  A
 * line that every packet writes and that more than one CPU holds (a
 * shared counter, a shared lock, an entry refreshed by each packet)
 * moves from CPU to CPU with every write, and costs each packet a miss
 * that no one-CPU figure shows.  Each CPU here runs its own test runs of
 * a path on one data path's maps, in blocks alternating with the
 * XDP_TX-only program as pkt does, all CPUs starting together; the same
 * path then runs on the first CPU alone.  Both ratios are to the XDP_TX
 * program measured beside them, so that what the CPUs share anyway (a
 * core's other thread, the last-level cache, the memory bus) is in both
 * halves of a ratio: together/alone above 1 is what the data path's own
 * shared lines cost, within the noise of the machine.
 *
 * The CPUs send what separate queues would: one flow (ct_hit: its entry
 * read by every CPU, cached in each CPU's flow cache), 4096 rotating
 * flows each (as RSS gives each queue flows of its own), Zipf draws of
 * their own over the same 100 000 flows, new flows of their own (inserts
 * into one shared table).
 *
 * Each CPU's test runs are made from a network namespace of its own.  A
 * test run takes its packet's receive queue from the loopback device of
 * the caller's namespace and writes that queue's xdp_rxq_info line
 * (net/bpf/test_run.c, bpf_prog_test_run_xdp: frag_size) on every call;
 * the program reads the same line for ctx->ingress_ifindex.  From one
 * namespace, each CPU's call would then take that line from the other
 * CPU: a miss that is the harness's, where a NIC's queues each have their
 * own.  One namespace per CPU is one queue per CPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"

#define MQ_MAX_CPUS	64

/* The paths, by their names in pkt's table. */
static const char *const mq_paths[] = {
	"non_vip_pass", "ct_hit", "new_flow", "ct_hit_rotate", "ct_hit_zipf",
};

#define MQ_NPATHS	ARRAY_SIZE(mq_paths)

/*
 * What a CPU sends: gen's context (g, first, so that a struct mq_gen is
 * also gen_new_flow's and gen_zipf's), and for the rotating flows the
 * client its 4096 flows come from: the first
 * CPU's are pkt's own (gen_rotate's client 7), each other CPU's another
 * 4096, far from any other path's flows.
 */
struct mq_gen {
	struct new_flow_gen g;
	__u32 client;
};

#define MQ_ROTATE_CLIENT(cpu)	(7u + ((__u32)(cpu) << 12))

static size_t mq_gen_rotate(void *ctx, long i, __u8 *buf)
{
	const struct mq_gen *m = ctx;
	long k = (m->g.base + i) % m->g.pa->rotate;

	return make_packet(buf, m->g.pa->family, m->g.pa->dst, m->g.pa->dport,
			   (__u16)(1024 + k), m->client);
}

/* The start: every worker pinned and waiting, then all at once. */
struct mq_start {
	int ready, go, abort;
};

struct mq_worker {
	const struct pkt_bench *b;
	const struct path *pa;
	int cpu, base_fd, main_fd, netns;
	long calls;
	pkt_gen gen;
	struct mq_gen g;
	struct mq_start *start;
	double base, ns;
	int ret;
};

static void *mq_run(void *arg)
{
	struct mq_worker *w = arg;
	int pinned = pin_cpu(w->cpu) ? -errno : 0;

	/* this thread's own namespace, so its own receive queue (above) */
	if (!pinned && setns(w->netns, CLONE_NEWNET))
		pinned = -errno;

	__atomic_add_fetch(&w->start->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&w->start->go, __ATOMIC_ACQUIRE))
		sched_yield();
	if (__atomic_load_n(&w->start->abort, __ATOMIC_ACQUIRE))
		w->ret = -ECANCELED;
	else
		w->ret = pinned ? pinned :
			 run_pair(w->b, w->base_fd, w->main_fd, w->pa,
				  w->calls, w->gen, &w->g, &w->base, &w->ns,
				  NULL);
	return NULL;
}

/*
 * Path pa on cpus[0..n-1] at once; the mean over them of each CPU's ratio
 * to the XDP_TX program (*ratio) and of its ns and base.  flows: where
 * this measurement's new flows start (none repeats another's).
 */
static int mq_measure(struct pkt_bench *b, const struct path *pa,
		      const int *cpus, const int *netns, int n, long calls,
		      long flows,
		      int base_fd, int main_fd, double *ns, double *base,
		      double *ratio)
{
	struct mq_worker w[MQ_MAX_CPUS];
	pthread_t t[MQ_MAX_CPUS];
	struct mq_start start = { 0, 0, 0 };
	int i, made = 0, ret = 0;

	/* every measurement of new flows starts from an empty table */
	if (pa->new_flow)
		xlb_dp_ct_flush(&b->dp);
	for (i = 0; i < n; i++) {
		w[i] = (struct mq_worker){
			.b = b, .pa = pa, .cpu = cpus[i], .netns = netns[i],
			.base_fd = base_fd,
			.main_fd = main_fd, .calls = calls, .start = &start,
			.gen = pa->new_flow ? gen_new_flow :
			       pa->rotate ? mq_gen_rotate :
			       pa->zipf ? gen_zipf : NULL,
			.g = { { pa, pa->new_flow ? flows + (long)i * FLOWS_APART :
				     pa->rotate ? 0 : (long)i * FLOWS_APART },
			       MQ_ROTATE_CLIENT(i) },
		};
	}
	for (i = 0; i < n; i++) {
		ret = pthread_create(&t[i], NULL, mq_run, &w[i]);
		if (ret) {
			fprintf(stderr, "xlb-bench: pkt-mq: cannot start a thread: %s\n",
				strerror(ret));
			ret = -ret;
			__atomic_store_n(&start.abort, 1, __ATOMIC_RELEASE);
			break;
		}
		made++;
	}
	while (!ret && __atomic_load_n(&start.ready, __ATOMIC_SEQ_CST) < n)
		sched_yield();
	__atomic_store_n(&start.go, 1, __ATOMIC_RELEASE);
	*ns = *base = *ratio = 0;
	for (i = 0; i < made; i++) {
		pthread_join(t[i], NULL);
		if (w[i].ret && !ret)
			ret = w[i].ret;
		*ns += w[i].ns / n;
		*base += w[i].base / n;
		*ratio += (w[i].base > 0 ? w[i].ns / w[i].base : 0) / n;
	}
	return ret;
}

/* A thread that makes a network namespace and leaves it open in *fd. */
static void *netns_make(void *arg)
{
	int *fd = arg;

	if (unshare(CLONE_NEWNET)) {
		*fd = -errno;
		return NULL;
	}
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		*fd = -errno;
	return NULL;
}

/*
 * n network namespaces, each held by its descriptor only: they go when
 * the descriptors are closed (mq_netns_close), or with the process.
 */
static int mq_netns_open(int *fds, int n)
{
	pthread_t t;
	int i, ret;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n; i++) {
		ret = pthread_create(&t, NULL, netns_make, &fds[i]);
		if (ret)
			return -ret;
		pthread_join(t, NULL);
		if (fds[i] < 0) {
			ret = fds[i];
			fds[i] = -1;
			return ret;
		}
	}
	return 0;
}

static void mq_netns_close(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void mq_report(const struct opts *o, const struct path *pa, int n,
		      double *ns, double *base, double *all, double *one,
		      double *rel, double *ns1, double *base1)
{
	struct fig f = { .bench = "pkt", .unit = "ns",
			 .baseline_what = "XDP_TX-only program, every CPU at once" };
	int nr = o->rounds;
	double ra, ro, q, qmin, qmax, n1 = median_of(ns1, o->rounds),
	       b1 = median_of(base1, o->rounds);

	fig_median(&f, ns, nr);
	f.baseline = median_of(base, nr);
	ra = median_of(all, nr);
	ro = median_of(one, nr);
	q = median_of(rel, nr);		/* sorted now */
	qmin = rel[0];
	qmax = rel[nr - 1];
	snprintf(f.name, sizeof(f.name), "pkt_mq.%s", pa->name);
	PARAM(&f, "\"path\":\"%s\",\"cpus\":%d,\"calls_per_cpu\":%ld,\"rounds\":%d,\"together_ratio\":%.3f,\"alone_ratio\":%.3f,\"together_over_alone\":%.3f,\"together_over_alone_min\":%.3f,\"together_over_alone_max\":%.3f,\"alone_ns\":%.1f,\"alone_baseline_ns\":%.1f",
	      pa->name, n, o->calls, nr, ra, ro, q, qmin, qmax, n1, b1);
	if (o->json) {
		EXTRA(&f, "\"path\":\"%s\",\"ns\":%.1f,\"baseline_ns\":%.1f",
		      pa->name, f.value, f.baseline);
		fig_json(&f);
		return;
	}
	printf("%-17s %7.1f %8.1f %7.1f %8.1f %9.2f %9.2f %8.3f %6.3f %6.3f\n",
	       pa->name, f.value, f.baseline, n1, b1, ra, ro, q, qmin, qmax);
}

int bench_pkt_mq(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	const struct path *sel[MQ_NPATHS];
	int cpus[MQ_MAX_CPUS], netns[MQ_MAX_CPUS], n = 0, nr = o->rounds;
	int np = 0, r, c, ret = 0;
	double *v = NULL;
	cpu_set_t set;
	size_t i;

	for (i = 0; i < MQ_NPATHS; i++)
		if (!o->path || !strcmp(o->path, mq_paths[i]))
			sel[np++] = path_find(mq_paths[i]);
	if (!np) {
		fprintf(stderr, "xlb-bench: --path %s is not a path of pkt-mq; known:",
			o->path);
		for (i = 0; i < MQ_NPATHS; i++)
			fprintf(stderr, " %s", mq_paths[i]);
		fprintf(stderr, "\n");
		return 2;
	}
	if (sched_getaffinity(0, sizeof(set), &set)) {
		perror("xlb-bench: sched_getaffinity");
		return 1;
	}
	for (r = 0; r < CPU_SETSIZE && n < MQ_MAX_CPUS; r++)
		if (CPU_ISSET(r, &set))
			cpus[n++] = r;
	if (n < 2) {
		fprintf(stderr, "xlb-bench: pkt-mq needs two CPUs or more; this process may run on %d\n",
			n);
		return 1;
	}
	/*
	 * per round: ns, base, together ratio, alone ratio, together/alone,
	 * ns alone, base alone
	 */
	v = calloc(7 * MQ_NPATHS * (size_t)nr, sizeof(double));
	if (!v || zipf_init(ZIPF_FLOWS, ZIPF_S)) {
		free(v);
		return 1;
	}
	ret = mq_netns_open(netns, n);
	if (ret) {
		fprintf(stderr, "xlb-bench: pkt-mq: cannot make a network namespace per CPU (root needed): %s\n",
			strerror(-ret));
		mq_netns_close(netns, n);
		free(v);
		return 1;
	}
	if (pkt_setup(&b, o, 1, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		mq_netns_close(netns, n);
		free(v);
		return 1;
	}
#define V(k, p, r)	v[((k) * MQ_NPATHS + (p)) * (size_t)nr + (r)]
	for (r = 0; r < nr && !ret; r++) {
		for (i = 0; i < (size_t)np && !ret; i++) {
			const struct path *pa = sel[i];
			int main_fd = bpf_program__fd(b.skel->progs.xlb_main);
			int base_fd = bpf_program__fd(b.reflect->progs.xlb_reflect);
			long flows = (long)r * 2 * o->calls;
			double ns, base, all, one, ns1, base1;

			if (pa->rotate || pa->zipf)
				ret = establish(main_fd, pa);
			/* the other CPUs' rotating flows */
			for (c = 1; !ret && pa->rotate && c < n; c++) {
				struct mq_gen m = { { pa, 0 }, MQ_ROTATE_CLIENT(c) };
				double x;

				ret = run_case(main_fd, pa, 0, pa->rotate,
					       mq_gen_rotate, &m, &x);
			}
			/* which goes first changes from round to round */
			if (!ret && r % 2)
				ret = mq_measure(&b, pa, cpus, netns, 1, o->calls, flows,
						 base_fd, main_fd, &ns1, &base1,
						 &one);
			if (!ret)
				ret = mq_measure(&b, pa, cpus, netns, n, o->calls,
						 flows + o->calls, base_fd,
						 main_fd, &ns, &base, &all);
			if (!ret && !(r % 2))
				ret = mq_measure(&b, pa, cpus, netns, 1, o->calls, flows,
						 base_fd, main_fd, &ns1, &base1,
						 &one);
			if (ret)
				break;
			V(0, i, r) = ns;
			V(1, i, r) = base;
			V(2, i, r) = all;
			V(3, i, r) = one;
			V(4, i, r) = one > 0 ? all / one : 0;
			V(5, i, r) = ns1;
			V(6, i, r) = base1;
		}
	}
	if (ret) {
		bench_fail(&b, "pkt-mq", ret);
		ret = 1;
		goto out;
	}
	if (!o->json) {
		printf("ns per packet with every CPU (%d) running its own test runs at once, median over %d rounds of %ld calls a CPU; ns_1, base_1: on one CPU alone; ratios to the XDP_TX-only program run beside them, together and alone; together/alone: what running at once adds (median, min, max over the rounds)\n",
		       n, nr, o->calls);
		printf("%-17s %7s %8s %7s %8s %9s %9s %8s %6s %6s\n", "path",
		       "ns", "base_ns", "ns_1", "base_1", "together", "alone",
		       "tog/alo", "min", "max");
	}
	for (i = 0; i < (size_t)np; i++)
		mq_report(o, sel[i], n, &V(0, i, 0), &V(1, i, 0), &V(2, i, 0),
			  &V(3, i, 0), &V(4, i, 0), &V(5, i, 0), &V(6, i, 0));
#undef V
out:
	pkt_teardown(&b);
	mq_netns_close(netns, n);
	free(v);
	return ret;
}
