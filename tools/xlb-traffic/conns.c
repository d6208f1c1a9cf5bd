// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic conns: many short TCP connections, every byte verified, each
 * counted for the backend that answered.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "mono.h"
#include "traffic.h"

int cmd_conns(int argc, char **argv)
{
	uint64_t count[MAX_IDS] = { 0 }, reasons[R_COUNT] = { 0 };
	uint64_t launched = 0, done = 0, failed = 0;
	struct epoll_event evs[MAX_EVENTS];
	struct cconn *slots, *c;
	double t0, end, now;
	struct copts o;
	uint32_t i;
	int ep, n, k, r;

	parse_client(argc, argv, 'c', &o);
	if (o.conc > o.n)
		o.conc = o.n;
	slots = calloc(o.conc, sizeof(*slots));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!slots || ep < 0)
		die("setup: %s", strerror(errno));
	for (i = 0; i < o.conc; i++)
		slots[i].fd = -1;
	t0 = now = xlb_mono_s();
	end = t0 + o.max_seconds;
	while (done + failed < o.n && !stop_sig && now < end) {
		for (i = 0; i < o.conc && launched < o.n; i++) {
			c = &slots[i];
			if (c->state != C_IDLE)
				continue;
			if (cconn_open(c, &o, ep, launched++)) {
				reasons[c->why]++;
				failed++;
				cconn_note(&o, c);
				c->state = C_IDLE;
			}
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 10);
		for (k = 0; k < n; k++) {
			c = evs[k].data.ptr;
			r = cconn_event(c, &o, ep, evs[k].events);
			if (r > 0) {
				count[c->backend]++;
				done++;
			} else if (r < 0) {
				reasons[c->why]++;
				failed++;
				cconn_note(&o, c);
			}
			if (r) {
				cconn_close(c, ep);
				c->state = C_IDLE;
			}
		}
		now = xlb_mono_s();
		for (i = 0; i < o.conc; i++) {
			c = &slots[i];
			if (c->state == C_IDLE || now < c->deadline)
				continue;
			cconn_fail(c, c->state == C_CONNECTING ?
				   R_CONNECT_TIMEOUT : R_TIMEOUT, 0);
			reasons[c->why]++;
			failed++;
			cconn_note(&o, c);
			cconn_close(c, ep);
			c->state = C_IDLE;
		}
	}
	/* stopped or out of time: what is in flight failed */
	for (i = 0; i < o.conc; i++) {
		c = &slots[i];
		if (c->state == C_IDLE)
			continue;
		reasons[R_TIMEOUT]++;
		failed++;
		cconn_close(c, ep);
	}
	close(ep);
	free(slots);
	if (stop_sig)
		fprintf(stderr, "%s: stopped by signal %d\n", prog,
			(int)stop_sig);
	else if (now >= end)
		fprintf(stderr, "%s: --max-seconds %g reached\n", prog,
			o.max_seconds);
	return report_counts("conns", &o, count, reasons, done, failed,
			     xlb_mono_s() - t0);
}
