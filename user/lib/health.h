/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Health checks: probes (tcp connect, http GET, udp exchange) run without
 * blocking from xlbd's event loop, and the hysteresis that turns their
 * results into a backend's health: a backend flips down only after `fall`
 * consecutive failures and up only after `rise` consecutive successes, so
 * one failure never ejects.  A new check starts "unknown", which counts as
 * up (a backend added or adopted keeps its slots until checks say
 * otherwise).
 *
 * Time comes from a clock function so tests drive the schedule with a
 * fake clock instead of sleeping.  Probes themselves use real sockets.
 */
#ifndef XLB_HEALTH_H
#define XLB_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "state.h"

/* Milliseconds on a monotonic clock. */
typedef uint64_t (*xlb_clock_fn)(void *ctx);
uint64_t xlb_clock_monotonic_ms(void *ctx);	/* CLOCK_MONOTONIC */

enum xlb_hc_health {
	XLB_HC_UNKNOWN = 0,	/* no verdict yet: counts as up */
	XLB_HC_UP,
	XLB_HC_DOWN,
};

/* --- hysteresis, pure ----------------------------------------------------- */

struct xlb_hc_state {
	uint8_t health;		/* enum xlb_hc_health */
	uint8_t ok_run;		/* consecutive successes (saturating) */
	uint8_t fail_run;	/* consecutive failures (saturating) */
};

/*
 * Record one probe result; returns true when health flipped between up and
 * down (unknown -> up on the first `rise` successes is not a flip, unknown ->
 * down after `fall` failures is).
 */
bool xlb_hc_record(struct xlb_hc_state *s, bool ok, uint8_t rise,
		   uint8_t fall);

/*
 * Bounded loads (docs/datapath.md): is a backend of weight w, holding
 * conns of the total active connections of its VIP's active members (of
 * weights adding up to wsum), full under bound bound_pct (c x 100)?  Full
 * when one connection more would put it over its capacity,
 * ceil(c x (total + 1) x w / wsum): the bound of consistent hashing with
 * bounded loads, weighted (tools/xlb-analyze does the same).  A member of
 * weight 0 or a VIP without weight is never full.
 */
bool xlb_bound_full(uint64_t conns, uint64_t total, uint32_t w,
		    uint64_t wsum, unsigned int bound_pct);
/*
 * For a full backend (above): how many new flows, none of them its own,
 * bring it back within its bound (the fewest k >= 1 for which
 * xlb_bound_full(conns, total + k, ...) is false), at most max; 0 when
 * it is not full.  The data path gives that many of its new flows to
 * secondaries, then lets them come to it until xlbd looks again.
 */
uint32_t xlb_bound_budget(uint64_t conns, uint64_t total, uint32_t w,
			  uint64_t wsum, unsigned int bound_pct, uint32_t max);

/*
 * Panic threshold: true when more than panic_pct percent of a VIP's
 * eligible backends (admin active with weight > 0) are down.  Then xlbd
 * keeps every eligible backend in the table instead of piling all flows on
 * the few survivors.  panic_pct 100 disables panic mode; 0 enters it on any
 * down backend.  No eligible backends: false.
 */
bool xlb_hc_panic(unsigned int eligible, unsigned int down,
		  unsigned int panic_pct);

/* --- the engine ----------------------------------------------------------- */

/* What to probe.  cfg.kind is never XLB_HEALTH_INHERIT here. */
struct xlb_hc_target {
	uint8_t family;		/* XLB_FAMILY_INET / _INET6 */
	__be32 addr[4];
	uint16_t port;		/* host order, 1..65535 (unused for none) */
	struct xlb_health cfg;
};

struct xlb_hc_result {
	bool ok;
	bool flipped;		/* health changed with this result */
	uint8_t health;		/* enum xlb_hc_health after this result */
	uint32_t rtt_ms;	/* start to verdict */
	uint64_t at_ms;		/* clock at the verdict */
	char detail[96];	/* "connected", "refused", "timeout",
				 * "http status 503", ... */
};

struct xlb_hc_status {
	struct xlb_hc_state state;
	bool has_result;
	struct xlb_hc_result last;
	uint64_t next_ms;	/* clock when the next probe starts;
				 * UINT64_MAX for kind none (never) */
	bool in_flight;		/* a probe is running now */
	uint32_t skipped;	/* probes not started for a failure of this
				 * host (out of fds, memory, local ports):
				 * no verdict, the backend is not blamed */
};

struct xlb_hc;

typedef void (*xlb_hc_cb)(void *ctx, uint64_t id,
			  const struct xlb_hc_result *r);

/*
 * The engine is single-threaded: xlbd calls every function below from its
 * one event loop thread.  The callback may call xlb_hc_set, xlb_hc_del and
 * xlb_hc_get (also on the id it is told about), never xlb_hc_run or
 * xlb_hc_destroy.
 *
 * NULL clock: xlb_clock_monotonic_ms.  NULL on allocation failure.
 */
struct xlb_hc *xlb_hc_create(xlb_clock_fn clock, void *clock_ctx);
void xlb_hc_destroy(struct xlb_hc *hc);

/*
 * Add or change the check named id (the caller's key).  Changing the
 * target of an existing check keeps its state when only timing changes
 * (interval, timeout, rise, fall), and restarts it as unknown otherwise
 * (a probe in flight is abandoned).  cfg.port is not looked at: t->port is
 * the port probed.  The first probe starts within one interval, at an
 * offset derived from id so checks spread out; then one every interval
 * after the previous start (never two at once for one check; after a stall
 * of more than an interval, the missed probes are skipped, not bunched).
 * A probe has timeout_ms from its start for a verdict.  Kind none never
 * probes and stays unknown.
 * Rules: family inet or inet6; kind none, tcp, http or udp; port 1..65535
 * unless none; 1 <= timeout < interval; rise and fall 1..100; http:
 * http-status 100..599, http-path starting with '/', printable, no blank.
 * Returns 0, -EINVAL (bad target, err says why; nothing changes) or
 * -ENOMEM.
 */
int xlb_hc_set(struct xlb_hc *hc, uint64_t id, const struct xlb_hc_target *t,
	       struct xlb_err *err);
/* Forget the check (a probe in flight is abandoned).  No-op if absent. */
void xlb_hc_del(struct xlb_hc *hc, uint64_t id);
/* -ENOENT if absent. */
int xlb_hc_get(const struct xlb_hc *hc, uint64_t id,
	       struct xlb_hc_status *out);

/*
 * Event-loop integration: poll xlb_hc_fd for readability (an epoll fd
 * over the probes' sockets) with at most xlb_hc_timeout_ms (-1: nothing
 * scheduled), then call xlb_hc_run, which starts due probes, finishes
 * answered or timed-out ones, and calls cb (may be NULL) once per verdict.
 * An answer that is ready when xlb_hc_run looks counts even if the deadline
 * has passed too.  Details: tcp "connected"; http "http status N" (ok iff
 * N is cfg.http_status) or "bad http answer"; udp "answered"; failures
 * "refused", "unreachable", "reset", "timeout" or the system's error text.
 * r is valid during the call only.  An http probe sends "GET <path>
 * HTTP/1.0" with Host: the address ([...] for IPv6), User-Agent: xlb-health
 * and Connection: close, and reads only the status line; a udp probe sends
 * "xlb-health\n" and counts any answer datagram.  TCP probes end with a
 * reset (SO_LINGER 0) so this host keeps no TIME_WAIT sockets.
 */
int xlb_hc_fd(const struct xlb_hc *hc);
int xlb_hc_timeout_ms(const struct xlb_hc *hc);
void xlb_hc_run(struct xlb_hc *hc, xlb_hc_cb cb, void *ctx);

#endif /* XLB_HEALTH_H */
