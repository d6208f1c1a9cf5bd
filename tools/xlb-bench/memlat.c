// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: what one miss to memory and one TLB miss cost on this
 * machine, the physical limit of a packet whose connection entry is in
 * no cache (pkt prints it beside the paths).
 *
 * Each figure is a chase of dependent loads through a random cycle of
 * cache lines (every load's address is the previous load's value, so no
 * two overlap), ns per load:
 *  - near: 16384 lines packed in 1 MiB: second-level cache, few pages;
 *  - tlb:  the same number of lines, one per 4 KiB page (65 MiB): the
 *          lines still fit the caches, the pages do not fit the TLB;
 *          tlb - near is one TLB miss (a page walk whose tables are cached);
 *  - mem:  lines of a 512 MiB region asked for in 2 MiB pages (madvise;
 *          the kernel's huge pages, when it grants them, take the TLB
 *          out), far beyond the last-level cache: mem is one miss to
 *          memory.  The region's huge-page share is reported with it.
 *
 * And what fresh memory costs: the first write to each 4 KiB page of the
 * tlb region (4 KiB pages: a page fault each) and of the mem region (2
 * MiB pages asked for: a fault per 2 MiB, the zeroing of every byte),
 * ns per 4 KiB, the thread's CPU time (the kernel's work is the thread's).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"
#include "rand.h"
#include "xlb_memlat.skel.h"

#define LINE		64
#define NEAR_LINES	16384
#define MEM_BYTES	(512ul << 20)
#define HUGE		(2ul << 20)
#define CHASE_STEPS	300000

/* Link the n lines at base + i * stride into one random cycle; its start. */
static void **chase_build(char *base, size_t n, size_t stride,
			  struct xlb_rand *rnd)
{
	size_t *order = malloc(n * sizeof(*order)), i, j, t;
	void **start;

	if (!order)
		return NULL;
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		j = (size_t)(xlb_rand_next(rnd) % (i + 1));
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < n; i++)
		*(void **)(base + order[i] * stride) =
			base + order[(i + 1) % n] * stride;
	start = (void **)(base + order[0] * stride);
	free(order);
	return start;
}

/*
 * This thread's CPU time, ns: on a shared machine the wall clock also
 * counts the time others ran in.
 */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per dependent load along the cycle from p (after `warm` loads). */
static double chase_ns(void **p, size_t warm)
{
	void *volatile sink;
	double t0;
	size_t i;

	for (i = 0; i < warm; i++)
		p = (void **)*p;
	t0 = cpu_ns();
	for (i = 0; i < CHASE_STEPS; i++)
		p = (void **)*p;
	sink = p;
	(void)sink;
	return (cpu_ns() - t0) / CHASE_STEPS;
}

/* AnonHugePages of this process's region at addr, in bytes (-1: unknown). */
static long huge_bytes(const void *addr)
{
	char line[256], want[32];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = !strncmp(line, want, strlen(want));
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

int mem_latency(struct mem_lat *m)
{
	struct xlb_rand rnd = { 21 };
	size_t tlb_bytes = (size_t)NEAR_LINES * (4096 + LINE), mem_lines, i;
	double t0;
	char *near = NULL, *tlb = NULL, *mem = NULL, *mraw = NULL;
	void **p;
	int ret = -ENOMEM;

	memset(m, 0, sizeof(*m));
	near = aligned_alloc(4096, (size_t)NEAR_LINES * LINE);
	tlb = mmap(NULL, tlb_bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mraw = mmap(NULL, MEM_BYTES + HUGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!near || tlb == MAP_FAILED || mraw == MAP_FAILED)
		goto out;
	/* 4 KiB pages for the TLB chase, 2 MiB ones for the memory chase */
	madvise(tlb, tlb_bytes, MADV_NOHUGEPAGE);
	mem = (char *)(((uintptr_t)mraw + HUGE - 1) & ~(HUGE - 1));
	madvise(mem, MEM_BYTES, MADV_HUGEPAGE);
	t0 = cpu_ns();
	for (i = 0; i < MEM_BYTES; i += 4096)
		mem[i] = 1;
	m->fault_huge_ns = (cpu_ns() - t0) / (MEM_BYTES / 4096);
	memset(mem, 1, MEM_BYTES);
	t0 = cpu_ns();
	for (i = 0; i < tlb_bytes; i += 4096)
		tlb[i] = 1;
	m->fault_ns = (cpu_ns() - t0) / (tlb_bytes / 4096);

	p = chase_build(near, NEAR_LINES, LINE, &rnd);
	if (!p)
		goto out;
	m->near_ns = chase_ns(p, NEAR_LINES);
	/* line i of page i, at an offset that varies (no cache-set pile-up) */
	p = chase_build(tlb, NEAR_LINES, 4096 + LINE, &rnd);
	if (!p)
		goto out;
	m->tlb_ns = chase_ns(p, NEAR_LINES) - m->near_ns;
	mem_lines = MEM_BYTES / LINE / 8;	/* one line in 8: 64 MiB of lines */
	p = chase_build(mem, mem_lines, LINE * 8, &rnd);
	if (!p)
		goto out;
	m->mem_ns = chase_ns(p, 0);
	m->mem_huge = huge_bytes(mem);
	m->mem_huge_share = m->mem_huge < 0 ? -1 :
			    (double)m->mem_huge / MEM_BYTES;
	ret = 0;
out:
	free(near);
	if (tlb && tlb != MAP_FAILED)
		munmap(tlb, tlb_bytes);
	if (mraw && mraw != MAP_FAILED)
		munmap(mraw, MEM_BYTES + HUGE);
	return ret;
}

/*
 * In a test run: the program reading one line per call (bpf/xlb_memlat.bpf.c)
 * against itself reading none, in alternating blocks as pkt runs its
 * paths, so that both see the same moment of the machine.  Each case
 * goes once round its cycle untimed first (the lines in the caches as
 * far as they fit), then o->rounds rounds; the figure is the median of
 * the rounds' differences.
 */
#define RUN_BLOCK	256

struct run_case_def {
	__u32 lines, stride;
	double *out;		/* median, min, max */
};

static int run_lat_case(const struct opts *o, struct xlb_memlat_bpf *none,
			struct xlb_memlat_bpf *one, const struct run_case_def *c,
			double *call_ns)
{
	int base_fd = bpf_program__fd(none->progs.xlb_memlat);
	int fd = bpf_program__fd(one->progs.xlb_memlat);
	long calls = o->calls / 4 > 2 * RUN_BLOCK ? o->calls / 4 : 2 * RUN_BLOCK;
	double *d = calloc((size_t)o->rounds, sizeof(double));
	double *b = calloc((size_t)o->rounds, sizeof(double));
	double x, y;
	long done, n;
	int r, ret = 0;

	if (!d || !b) {
		ret = -ENOMEM;
		goto out;
	}
	one->bss->touch = 1;
	one->bss->mask = c->lines - 1;
	one->bss->stride = c->stride;
	one->bss->seq = 0;
	one->bss->sum = 0;
	ret = run_case(fd, &baseline_path, 0, c->lines, NULL, NULL, &x);
	/* once round: each line's index, once each (run_latency wrote them) */
	if (!ret && one->bss->sum != (__u64)c->stride * c->lines *
				      (c->lines - 1) / 2) {
		fprintf(stderr, "xlb-bench: memlat: %u lines of stride %u read a sum of %llu, not each line once\n",
			c->lines, c->stride, (unsigned long long)one->bss->sum);
		ret = -EPROTO;
	}
	for (r = 0; !ret && r < o->rounds; r++) {
		double sb = 0, sc = 0;

		for (done = 0; !ret && done < calls; done += n) {
			n = calls - done < RUN_BLOCK ? calls - done : RUN_BLOCK;
			ret = run_case(base_fd, &baseline_path, 0, n, NULL,
				       NULL, &x);
			if (!ret)
				ret = run_case(fd, &baseline_path, 0, n, NULL,
					       NULL, &y);
			sb += x * n;
			sc += y * n;
		}
		d[r] = (sc - sb) / calls;
		b[r] = sb / calls;
	}
	if (!ret) {
		struct fig f = { 0 };

		fig_median(&f, d, o->rounds);
		c->out[0] = f.value;
		c->out[1] = f.min;
		c->out[2] = f.max;
		*call_ns = median_of(b, o->rounds);
	}
out:
	free(d);
	free(b);
	return ret;
}

int run_latency(const struct opts *o, struct run_lat *r)
{
	struct xlb_memlat_bpf *none = xlb_memlat_bpf__open(), *one = NULL;
	const struct run_case_def cases[] = {
		{ 1, 1, r->page },
		{ NEAR_LINES, 1, r->near },
		{ NEAR_LINES, 4096 / LINE, r->tlb },
	};
	size_t bytes = (size_t)NEAR_LINES * 4096, i, j;
	struct xlb_memlat_line { __u64 w[8]; } *lines = MAP_FAILED;
	int ret = -ENOMEM;

	memset(r, 0, sizeof(*r));
	r->rounds = o->rounds;
	if (!none)
		goto out;
	/* the program that reads nothing needs no 64 MiB */
	if (bpf_map__set_max_entries(none->maps.xlb_memlat_lines, 1) ||
	    xlb_memlat_bpf__load(none)) {
		ret = -errno;
		goto out;
	}
	one = xlb_memlat_bpf__open_and_load();
	if (!one) {
		ret = -errno;
		goto out;
	}
	lines = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		     bpf_map__fd(one->maps.xlb_memlat_lines), 0);
	if (lines == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (j = 0; j < cases[i].lines; j++)
			lines[j * cases[i].stride].w[0] = j * cases[i].stride;
	for (i = 0, ret = 0; !ret && i < sizeof(cases) / sizeof(cases[0]); i++)
		ret = run_lat_case(o, none, one, &cases[i], &r->call_ns);
out:
	if (lines != MAP_FAILED)
		munmap(lines, bytes);
	xlb_memlat_bpf__destroy(one);
	xlb_memlat_bpf__destroy(none);
	return ret;
}
