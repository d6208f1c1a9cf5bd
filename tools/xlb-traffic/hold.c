// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic hold: long-lived TCP connections, a verified message every
 * interval; the connections that break, per phase.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "mono.h"
#include "traffic.h"

#define MAX_PHASES	32

struct phase {
	char name[32];
	double t;		/* start, s since the run started */
	uint64_t sends, replies, broken;
	uint64_t reasons[R_COUNT];
	double max_wait;	/* longest a reply of the phase took, s */
};

struct hold {
	struct copts *o;
	struct cconn *conns;
	struct phase phases[MAX_PHASES];
	int nphases;
	uint64_t launched, connecting, established, broken;
	uint64_t sends, replies;
	size_t control_done;	/* bytes of the control file processed */
	bool stop;
	double t0;
};

static struct phase *cur_phase(struct hold *h)
{
	return &h->phases[h->nphases - 1];
}

static void hold_phase(struct hold *h, const char *name, size_t len)
{
	struct phase *p;
	size_t i;

	if (h->nphases == MAX_PHASES) {
		fprintf(stderr, "%s: more than %d phases; '%.*s' ignored\n",
			prog, MAX_PHASES, (int)len, name);
		return;
	}
	p = &h->phases[h->nphases++];
	memset(p, 0, sizeof(*p));
	if (len >= sizeof(p->name))
		len = sizeof(p->name) - 1;
	for (i = 0; i < len; i++)
		p->name[i] = id_char_ok(name[i]) ? name[i] : '_';
	p->t = xlb_mono_s() - h->t0;
	fprintf(stderr, "hold: t=%.2f phase %s\n", p->t, p->name);
}

/* New lines of the control file: "phase NAME" or "stop". */
static void hold_control(struct hold *h)
{
	char buf[4096], *line, *nl;
	size_t n;
	FILE *f;

	f = fopen(h->o->control, "r");
	if (!f)
		return;
	if (fseek(f, h->control_done, SEEK_SET)) {
		fclose(f);
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		h->control_done += nl - line + 1;
		if (!strncmp(line, "phase ", 6) && line[6])
			hold_phase(h, line + 6, strlen(line + 6));
		else if (!strcmp(line, "stop"))
			h->stop = true;
		else if (*line)
			fprintf(stderr, "%s: control: '%s' is not 'phase NAME' "
				"or 'stop'\n", prog, line);
	}
}

static void hold_broken(struct hold *h, struct cconn *c, int ep)
{
	struct phase *p = cur_phase(h);

	if (c->fd >= 0)
		cconn_close(c, ep);
	if (c->state != C_BROKEN)
		cconn_fail(c, R_ERROR, 0);
	p->broken++;
	p->reasons[c->why]++;
	h->broken++;
	cconn_note(h->o, c);
}

static void hold_progress(struct hold *h, double now)
{
	uint64_t per[MAX_IDS] = { 0 };
	uint64_t i;
	int b;

	for (i = 0; i < h->launched; i++)
		if (h->conns[i].state == C_OPEN && h->conns[i].backend >= 0)
			per[h->conns[i].backend]++;
	fprintf(stderr, "hold: t=%.1f phase %s open %llu broken %llu "
		"sends %llu replies %llu |", now - h->t0, cur_phase(h)->name,
		(unsigned long long)(h->launched - h->broken - h->connecting),
		(unsigned long long)h->broken, (unsigned long long)h->sends,
		(unsigned long long)h->replies);
	for (b = 0; b < nids; b++)
		fprintf(stderr, " %s=%llu", ids[b], (unsigned long long)per[b]);
	fprintf(stderr, "\n");
}

static int hold_report(struct hold *h, double secs)
{
	uint64_t conns[MAX_IDS] = { 0 }, brk[MAX_IDS] = { 0 };
	uint64_t reasons[R_COUNT] = { 0 }, unknown = 0, i;
	struct copts *o = h->o;
	struct phase *p;
	bool ok;
	int b, k;

	for (i = 0; i < h->launched; i++) {
		b = h->conns[i].backend;
		if (b < 0) {
			unknown++;
			continue;
		}
		conns[b]++;
		brk[b] += h->conns[i].state == C_BROKEN;
	}
	for (k = 0; k < h->nphases; k++)
		for (b = 0; b < R_COUNT; b++)
			reasons[b] += h->phases[k].reasons[b];
	ok = !h->broken && h->established == o->n;
	if (o->json) {
		printf("{\"mode\":\"hold\",\"to\":\"%s\",\"connections\":%llu,"
		       "\"established\":%llu,\"broken\":%llu,",
		       o->to_str, (unsigned long long)o->n,
		       (unsigned long long)h->established,
		       (unsigned long long)h->broken);
		print_reasons_json("reasons", reasons);
		printf(",\"sends\":%llu,\"replies\":%llu,",
		       (unsigned long long)h->sends,
		       (unsigned long long)h->replies);
		json_num("seconds", secs, true);
		/* what ended the run: the control file, a signal or the time */
		printf("\"ended_by\":\"%s\",",
		       h->stop ? "control" : stop_sig ? "signal" : "duration");
		printf("\"backends\":{");
		for (b = 0; b < nids; b++)
			printf("%s\"%s\":{\"connections\":%llu,\"broken\":%llu}",
			       b ? "," : "", ids[b],
			       (unsigned long long)conns[b],
			       (unsigned long long)brk[b]);
		printf("},\"no_reply\":%llu,\"phases\":[",
		       (unsigned long long)unknown);
		for (k = 0; k < h->nphases; k++) {
			p = &h->phases[k];
			printf("%s{\"name\":\"%s\",", k ? "," : "", p->name);
			json_num("t", p->t, true);
			printf("\"sends\":%llu,\"replies\":%llu,"
			       "\"broken\":%llu,",
			       (unsigned long long)p->sends,
			       (unsigned long long)p->replies,
			       (unsigned long long)p->broken);
			json_num("max_wait_ms", p->max_wait * 1e3, true);
			print_reasons_json("reasons", p->reasons);
			printf("}");
		}
		printf("],\"ok\":%s}\n", ok ? "true" : "false");
		return ok ? 0 : 1;
	}
	printf("hold to %s: %llu connections, %llu established, %llu broken, "
	       "%llu sends, %llu replies in %.2f s\n", o->to_str,
	       (unsigned long long)o->n, (unsigned long long)h->established,
	       (unsigned long long)h->broken, (unsigned long long)h->sends,
	       (unsigned long long)h->replies, secs);
	print_reasons_text(reasons);
	printf("%-20s %11s %8s\n", "backend", "connections", "broken");
	for (b = 0; b < nids; b++)
		printf("%-20s %11llu %8llu\n", ids[b],
		       (unsigned long long)conns[b],
		       (unsigned long long)brk[b]);
	if (unknown)
		printf("%-20s %11llu\n", "(no reply)",
		       (unsigned long long)unknown);
	for (k = 0; k < h->nphases; k++) {
		p = &h->phases[k];
		printf("phase %-14s t=%-8.2f sends %llu replies %llu "
		       "broken %llu\n", p->name, p->t,
		       (unsigned long long)p->sends,
		       (unsigned long long)p->replies,
		       (unsigned long long)p->broken);
	}
	return ok ? 0 : 1;
}

/* One pass over the connections: due sends, timeouts. */
static void hold_scan(struct hold *h, int ep, double now)
{
	struct copts *o = h->o;
	struct cconn *c;
	uint64_t i;

	for (i = 0; i < h->launched; i++) {
		c = &h->conns[i];
		if (c->state == C_CONNECTING && now >= c->deadline) {
			h->connecting--;
			cconn_fail(c, R_CONNECT_TIMEOUT, 0);
			hold_broken(h, c, ep);
		} else if (c->state == C_OPEN && c->busy &&
			   now >= c->deadline) {
			cconn_fail(c, R_TIMEOUT, 0);
			hold_broken(h, c, ep);
		} else if (c->state == C_OPEN && !c->busy &&
			   now >= c->next_send) {
			/* keep the schedule; never bunch up after a delay */
			c->next_send += o->interval;
			if (c->next_send < now)
				c->next_send = now + o->interval;
			cconn_request(c, o, ep);
			h->sends++;
			cur_phase(h)->sends++;
			if (c->state == C_BROKEN)
				hold_broken(h, c, ep);
		}
	}
}

static void hold_event(struct hold *h, struct cconn *c, int ep, uint32_t ev,
		       double now)
{
	bool was_connecting = c->state == C_CONNECTING;
	int r;

	if (c->state != C_CONNECTING && c->state != C_OPEN)
		return;
	r = cconn_event(c, h->o, ep, ev);
	if (was_connecting && c->state != C_CONNECTING) {
		h->connecting--;
		if (c->state == C_OPEN) {
			h->established++;
			/* the first request went out with the connect */
			h->sends++;
			cur_phase(h)->sends++;
			/* spread the connections over the interval */
			c->next_send = now + h->o->interval *
				       (1 + (double)(c->idx % 97) / 97);
		}
	}
	if (r > 0) {
		/* the request went out a timeout before its deadline */
		double wait = now - (c->deadline - h->o->timeout);

		h->replies++;
		cur_phase(h)->replies++;
		if (wait > cur_phase(h)->max_wait)
			cur_phase(h)->max_wait = wait;
	} else if (r < 0) {
		hold_broken(h, c, ep);
	}
}

int cmd_hold(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS];
	double now, end, next_report, next_control;
	bool ready = false;
	struct hold h = { 0 };
	struct copts o;
	struct cconn *c;
	uint64_t i, answered;
	int ep, n, k;

	parse_client(argc, argv, 'h', &o);
	h.o = &o;
	h.conns = calloc(o.n, sizeof(*h.conns));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!h.conns || ep < 0)
		die("setup: %s", strerror(errno));
	h.t0 = now = xlb_mono_s();
	h.nphases = 1;
	strcpy(h.phases[0].name, "start");
	end = h.t0 + o.duration;
	next_report = h.t0 + o.report_every;
	next_control = h.t0;
	/* ends early when every connection has broken: nothing to hold */
	while (!stop_sig && !h.stop && now < end && h.broken < o.n) {
		while (h.launched < o.n && h.connecting < o.conc) {
			c = &h.conns[h.launched++];
			if (cconn_open(c, &o, ep, h.launched - 1))
				hold_broken(&h, c, ep);
			else
				h.connecting++;
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 5);
		now = xlb_mono_s();
		for (k = 0; k < n; k++)
			hold_event(&h, evs[k].data.ptr, ep, evs[k].events,
				   now);
		hold_scan(&h, ep, now);
		if (!ready && h.launched == o.n && !h.connecting) {
			answered = 0;
			for (i = 0; i < o.n; i++)
				answered += h.conns[i].backend >= 0 ||
					    h.conns[i].state == C_BROKEN;
			if (answered == o.n) {
				ready = true;
				fprintf(stderr, "hold: t=%.2f ready: %llu "
					"established, %llu broken\n",
					now - h.t0,
					(unsigned long long)h.established,
					(unsigned long long)h.broken);
				write_ready(o.ready);
			}
		}
		if (o.report_every && now >= next_report) {
			hold_progress(&h, now);
			next_report += o.report_every;
		}
		if (o.control && now >= next_control) {
			hold_control(&h);
			next_control = now + 0.05;
		}
	}
	if (stop_sig)
		fprintf(stderr, "%s: stopped by signal %d\n", prog,
			(int)stop_sig);
	for (i = 0; i < h.launched; i++)
		cconn_close(&h.conns[i], ep);
	close(ep);
	k = hold_report(&h, xlb_mono_s() - h.t0);
	free(h.conns);
	return k;
}
