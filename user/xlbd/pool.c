// SPDX-License-Identifier: GPL-2.0
/*
 * The worker pool: runs independent jobs on several threads at once.  Table
 * builds are independent, and publishing or removing a table waits for an
 * RCU grace period in the kernel, which concurrent waiters share: 1000
 * tables published one after the other would wait 1000 grace periods, on
 * 64 threads 16 rounds of them.  Threads that wait cost no CPU, so the
 * publications run on many more of them than cores (small stacks keep
 * them cheap); the builds, which compute, on one per core.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <unistd.h>

#include "xlbd.h"

/* enough for a table build and a publication (libbpf, libxlb) */
#define XLBD_POOL_STACK		(1u << 20)

struct pool {
	void (*fn)(void *ctx, size_t k);
	void *ctx;
	size_t n;
	size_t next;		/* atomically taken */
};

static void *pool_worker(void *arg)
{
	struct pool *pl = arg;
	size_t k;

	while ((k = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED)) <
	       pl->n)
		pl->fn(pl->ctx, k);
	return NULL;
}

static void *pool_thread(void *arg)
{
	xlbd_privs_worker();
	return pool_worker(arg);
}

size_t xlbd_cores(void)
{
	cpu_set_t set;
	int n;

	if (!sched_getaffinity(0, sizeof(set), &set)) {
		n = CPU_COUNT(&set);
		if (n > 0)
			return (size_t)n;
	}
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

void xlbd_pool_run(size_t threads, size_t n,
		   void (*fn)(void *ctx, size_t k), void *ctx)
{
	struct pool pl = { fn, ctx, n, 0 };
	pthread_t th[XLBD_POOL_THREADS];
	size_t k, started = 0;
	pthread_attr_t at;
	bool attr = !pthread_attr_init(&at);

	if (attr)
		pthread_attr_setstacksize(&at, XLBD_POOL_STACK);
	if (threads > XLBD_POOL_THREADS)
		threads = XLBD_POOL_THREADS;
	for (k = 0; k + 1 < threads && k + 1 < n; k++)
		if (!pthread_create(&th[started], attr ? &at : NULL,
				    pool_thread, &pl))
			started++;
	if (attr)
		pthread_attr_destroy(&at);
	pool_worker(&pl);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}
