// SPDX-License-Identifier: GPL-2.0
/*
 * The worker pool: runs independent jobs on several threads at once.  Table
 * builds are independent, and publishing or removing a table waits for an
 * RCU grace period in the kernel, which concurrent waiters share: 1000
 * tables published one after the other would wait 1000 grace periods.
 */
#include <pthread.h>

#include "xlbd.h"

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

void xlbd_pool_run(size_t n, void (*fn)(void *ctx, size_t k), void *ctx)
{
	struct pool pl = { fn, ctx, n, 0 };
	pthread_t th[XLBD_POOL_THREADS];
	size_t k, started = 0;

	for (k = 0; k + 1 < XLBD_POOL_THREADS && k + 1 < n; k++)
		if (!pthread_create(&th[k], NULL, pool_thread, &pl))
			started++;
	pool_worker(&pl);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}
