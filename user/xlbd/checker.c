// SPDX-License-Identifier: GPL-2.0
/*
 * The health checks on a thread of their own, with no privilege
 * (privs.c): probes connect to backends and read what they answer, so
 * they run as nobody.  The thread runs the engine (user/lib/health.c)
 * under d->lock, as the loop did; a verdict that changes a backend's
 * health marks the daemon dirty and wakes the loop, which reconciles.
 * The loop kicks the thread after each of its rounds, so that checks a
 * command added or changed start at once.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "xlbd.h"

struct xlbd_checker {
	struct xlbd *d;
	pthread_t thread;
	int kick;		/* eventfd: the loop wakes the thread */
	int wake;		/* eventfd: the thread wakes the loop */
	atomic_bool stop;
};

static void efd_bump(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("health checks: cannot signal: %s", strerror(errno));
}

static void efd_drain(int fd)
{
	uint64_t x;

	while (read(fd, &x, sizeof(x)) == sizeof(x))
		;
}

static void *checker_main(void *arg)
{
	struct xlbd_checker *c = arg;
	struct xlbd *d = c->d;
	struct pollfd p[2] = {
		{ .fd = xlb_hc_fd(d->hc), .events = POLLIN },
		{ .fd = c->kick, .events = POLLIN },
	};

	xlbd_privs_none("xlbd-health");
	while (!atomic_load(&c->stop)) {
		uint64_t flips;
		int to;

		pthread_mutex_lock(&d->lock);
		to = xlb_hc_timeout_ms(d->hc);
		pthread_mutex_unlock(&d->lock);
		if (to < 0 || to > 1000)
			to = 1000;
		if (poll(p, 2, to) > 0 && (p[1].revents & POLLIN))
			efd_drain(c->kick);
		if (atomic_load(&c->stop))
			break;
		/* due probes start and verdicts arrive */
		pthread_mutex_lock(&d->lock);
		flips = d->hc_flips;
		xlb_hc_run(d->hc, xlbd_health_result, d);
		flips = d->hc_flips - flips;
		pthread_mutex_unlock(&d->lock);
		if (flips)
			efd_bump(c->wake);
	}
	return NULL;
}

int xlbd_checker_start(struct xlbd *d)
{
	struct xlbd_checker *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	c->d = d;
	c->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ret = c->kick < 0 || c->wake < 0 ? -errno : 0;
	if (!ret)
		ret = -pthread_create(&c->thread, NULL, checker_main, c);
	if (ret) {
		if (c->kick >= 0)
			close(c->kick);
		if (c->wake >= 0)
			close(c->wake);
		free(c);
		return ret;
	}
	d->checker = c;
	return 0;
}

int xlbd_checker_fd(const struct xlbd *d)
{
	return d->checker ? d->checker->wake : -1;
}

void xlbd_checker_woken(struct xlbd *d)
{
	if (d->checker)
		efd_drain(d->checker->wake);
}

void xlbd_checker_kick(struct xlbd *d)
{
	if (d->checker)
		efd_bump(d->checker->kick);
}

void xlbd_checker_stop(struct xlbd *d)
{
	struct xlbd_checker *c = d->checker;

	if (!c)
		return;
	atomic_store(&c->stop, true);
	efd_bump(c->kick);
	pthread_join(c->thread, NULL);
	close(c->kick);
	close(c->wake);
	free(c);
	d->checker = NULL;
}
