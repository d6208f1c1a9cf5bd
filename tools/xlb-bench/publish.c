// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench publish: a table written and switched on a loaded data path,
 * and forwarding while tables are published.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "mono.h"


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
	char *p = malloc(XLB_TABLE_BYTES((size_t)t->size));

	if (!p)
		return 0;
	memcpy(p + 4, t->slots, (size_t)t->size * sizeof(*t->slots));
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	return xlb_mono_us() - t0;
}

int bench_publish(const struct opts *o)
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
	if (pkt_setup(&b, o, 1, &err)) {
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
		printf("table publish (xlb_dp_table_publish: the slots that differ rewritten in place) on a loaded data path, median of %d\n",
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
		      m, (size_t)XLB_TABLE_BYTES(m), VIPS, median_of(cp, nr));
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
