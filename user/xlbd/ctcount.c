// SPDX-License-Identifier: GPL-2.0
/*
 * The connection table's entries, counted on a thread of their own.
 * Counting reads every slot of the table (up to 64M of them, seconds of
 * work), so neither /metrics nor the control loop counts: they read the
 * last count and its age.  The thread needs no lock of the daemon: the
 * table's map stays open from before it starts until after it stops.
 * It counts every XLBD_CT_COUNT_INTERVAL_S, or ten times as long as a
 * count takes, so a count costs at most a tenth of a core.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "mono.h"
#include "xlbd.h"

struct xlbd_ctcount {
	struct xlbd *d;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* CLOCK_MONOTONIC */
	bool stop;
	bool have;			/* a count is done */
	bool counting;			/* one runs now */
	uint32_t count;
	uint64_t at_ms;			/* monotonic: it ended */
	double seconds;			/* it took */
	uint64_t counts;		/* done so far */
};

static void *ctcount_main(void *arg)
{
	struct xlbd_ctcount *c = arg;
	uint64_t wait_ms = XLBD_CT_COUNT_FIRST_MS;	/* the first count */

	/* reads the table through the map's fd: no privilege */
	xlbd_privs_none("xlbd-ctcount");
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct timespec ts;
		uint64_t t0, t1;
		__u32 n = 0;
		int ret;

		/*
		 * The first count waits until the daemon has started: it
		 * would take a core from the first answers, and on a
		 * virtual machine its first pass over the table's pages
		 * costs more than the count itself.
		 */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(wait_ms / 1000);
		ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!c->stop &&
		       pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
			;
		if (c->stop)
			break;
		c->counting = true;
		pthread_mutex_unlock(&c->mu);
		t0 = xlb_mono_ms();
		ret = xlb_dp_ct_count(&c->d->dp, &n);
		t1 = xlb_mono_ms();
		pthread_mutex_lock(&c->mu);
		c->counting = false;
		if (!ret) {
			c->count = n;
			c->at_ms = t1;
			c->seconds = (double)(t1 - t0) / 1e3;
			c->have = true;
			c->counts++;
		}
		wait_ms = XLBD_CT_COUNT_INTERVAL_S * 1000;
		if (wait_ms < 10 * (t1 - t0))
			wait_ms = 10 * (t1 - t0);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int xlbd_ctcount_start(struct xlbd *d)
{
	struct xlbd_ctcount *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	int ret;

	if (!c)
		return -ENOMEM;
	c->d = d;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&c->thread, NULL, ctcount_main, c);
	if (ret) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return -ret;
	}
	d->ctcount = c;
	return 0;
}

void xlbd_ctcount_stop(struct xlbd *d)
{
	struct xlbd_ctcount *c = d->ctcount;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
	d->ctcount = NULL;
}

bool xlbd_ctcount_get(struct xlbd *d, struct xlbd_ct_figures *f)
{
	struct xlbd_ctcount *c = d->ctcount;
	bool have;

	if (!c)
		return false;
	pthread_mutex_lock(&c->mu);
	have = c->have;
	f->count = c->count;
	f->age_s = (double)(xlb_mono_ms() - c->at_ms) / 1e3;
	f->seconds = c->seconds;
	f->counts = c->counts;
	f->counting = c->counting;
	pthread_mutex_unlock(&c->mu);
	return have;
}
