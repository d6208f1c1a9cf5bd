// SPDX-License-Identifier: GPL-2.0
/*
 * The health-check engine.  Checks live in an open-addressing hash table
 * keyed by the caller's 64-bit id (one malloc'd struct per check, so the
 * table can grow without moving checks) and in a binary min-heap ordered by
 * the next instant each check needs attention: the deadline of its probe in
 * flight, or else the start of its next probe.  Scheduling work is
 * O(log n) per event, and xlb_hc_timeout_ms is O(1), whatever the number
 * of checks.  Kind none checks are in the table but never in the heap.
 *
 * Each probe owns one non-blocking socket registered in the engine's epoll
 * fd with the check's id as its data; a probe moves through connect, send
 * (http) and receive (http, udp) on readiness, and ends with a verdict that
 * closes its socket, feeds the hysteresis and reaches the caller's
 * callback.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "health.h"
#include "mono.h"

#define HC_RISE_FALL_MAX	100
#define HC_HASH_MIN		16
/* Enough for "HTTP/1.1 503 " and a reason phrase; the rest is not read. */
#define HC_HTTP_LINE_MAX	64
#define HC_HTTP_REQ_MAX		(XLB_HTTP_PATH_MAX + INET6_ADDRSTRLEN + 96)
#define HC_EVENTS		64
#define HC_NO_HEAP		UINT32_MAX

static const char udp_payload[] = "xlb-health\n";

enum hc_phase {
	PH_IDLE = 0,		/* no probe in flight */
	PH_CONNECT,		/* waiting for the connection (tcp, http) */
	PH_SEND,		/* http: the request is partly sent */
	PH_RECV,		/* http: status line; udp: an answer */
};

struct hc_check {
	uint64_t id;
	struct xlb_hc_target t;
	struct xlb_hc_state state;
	bool has_result;
	bool started;		/* a probe was started since the last reset */
	struct xlb_hc_result last;
	uint32_t skipped;
	uint64_t next_ms;	/* scheduled start of the next probe */
	uint64_t wake_ms;	/* heap key: deadline in flight, else next_ms */
	uint32_t heap_idx;	/* HC_NO_HEAP when not in the heap */

	/* the probe in flight (fd >= 0) or the last one */
	int fd;
	uint8_t phase;		/* enum hc_phase */
	uint16_t sent;		/* http: request bytes sent */
	uint16_t got;		/* http: status line bytes read */
	uint64_t start_ms;
	uint64_t deadline_ms;
	char line[HC_HTTP_LINE_MAX];
};

struct xlb_hc {
	xlb_clock_fn clock;
	void *clock_ctx;
	int epfd;
	unsigned int in_flight;

	struct hc_check **slots;	/* hash table, power-of-two size */
	size_t cap;
	size_t n;

	struct hc_check **heap;
	size_t heap_n;
	size_t heap_cap;
};

/* What a probe concluded. */
struct hc_verdict {
	bool ok;
	char detail[sizeof(((struct xlb_hc_result *)0)->detail)];
};

uint64_t xlb_clock_monotonic_ms(void *ctx)
{
	(void)ctx;
	return xlb_mono_ms();
}

/* --- hysteresis ----------------------------------------------------------- */

static uint8_t sat_inc(uint8_t v)
{
	return v == UINT8_MAX ? v : v + 1;
}

/* rise or fall 0 behave as 1: one result decides. */
bool xlb_hc_record(struct xlb_hc_state *s, bool ok, uint8_t rise,
		   uint8_t fall)
{
	uint8_t was = s->health;

	if (ok) {
		s->ok_run = sat_inc(s->ok_run);
		s->fail_run = 0;
		if (was != XLB_HC_UP && s->ok_run >= rise) {
			s->health = XLB_HC_UP;
			return was == XLB_HC_DOWN;
		}
	} else {
		s->fail_run = sat_inc(s->fail_run);
		s->ok_run = 0;
		if (was != XLB_HC_DOWN && s->fail_run >= fall) {
			s->health = XLB_HC_DOWN;
			return true;
		}
	}
	return false;
}

bool xlb_bound_full(uint64_t conns, uint64_t total, uint32_t w,
		    uint64_t wsum, unsigned int bound_pct)
{
	unsigned __int128 num, den, cap;

	if (!w || !wsum || !bound_pct)
		return false;
	num = (unsigned __int128)bound_pct * (total + 1) * w;
	den = (unsigned __int128)100 * wsum;
	cap = (num + den - 1) / den;
	return (unsigned __int128)conns + 1 > cap;
}

/*
 * Not full after k ⟺ c × (total + k + 1) × w > conns × 100 × wsum ⟺
 * total + k ≥ ⌊conns × 100 × wsum / (c × w)⌋ (c = bound_pct), and that
 * floor is above total while full, so k ≥ 1.
 */
uint32_t xlb_bound_budget(uint64_t conns, uint64_t total, uint32_t w,
			  uint64_t wsum, unsigned int bound_pct, uint32_t max)
{
	unsigned __int128 q;

	if (!xlb_bound_full(conns, total, w, wsum, bound_pct))
		return 0;
	q = (unsigned __int128)conns * 100 * wsum /
	    ((unsigned __int128)bound_pct * w);
	q -= total;
	return q > max ? max : (uint32_t)q;
}

bool xlb_hc_panic(unsigned int eligible, unsigned int down,
		  unsigned int panic_pct)
{
	if (!eligible || panic_pct >= 100)
		return false;
	if (down > eligible)
		down = eligible;
	return (uint64_t)down * 100 > (uint64_t)eligible * panic_pct;
}

/* --- the table of checks by id -------------------------------------------- */

/* splitmix64's finalizer: spreads ids for the table and the offsets. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static size_t hash_home(const struct xlb_hc *hc, uint64_t id)
{
	return mix64(id) & (hc->cap - 1);
}

static size_t hash_pos(const struct xlb_hc *hc, uint64_t id)
{
	size_t i = hash_home(hc, id);

	while (hc->slots[i] && hc->slots[i]->id != id)
		i = (i + 1) & (hc->cap - 1);
	return i;
}

static struct hc_check *hash_find(const struct xlb_hc *hc, uint64_t id)
{
	return hc->slots[hash_pos(hc, id)];
}

static int hash_grow(struct xlb_hc *hc)
{
	struct hc_check **old = hc->slots;
	size_t old_cap = hc->cap, i;

	hc->slots = calloc(old_cap * 2, sizeof(*hc->slots));
	if (!hc->slots) {
		hc->slots = old;
		return -ENOMEM;
	}
	hc->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++)
		if (old[i])
			hc->slots[hash_pos(hc, old[i]->id)] = old[i];
	free(old);
	return 0;
}

/* Keeps the load at most 1/2 so probe sequences stay short. */
static int hash_insert(struct xlb_hc *hc, struct hc_check *c)
{
	int ret;

	if ((hc->n + 1) * 2 > hc->cap) {
		ret = hash_grow(hc);
		if (ret)
			return ret;
	}
	hc->slots[hash_pos(hc, c->id)] = c;
	hc->n++;
	return 0;
}

/* Linear probing without tombstones: shift later entries back. */
static void hash_remove(struct xlb_hc *hc, uint64_t id)
{
	size_t mask = hc->cap - 1, i = hash_pos(hc, id), j = i, k;

	if (!hc->slots[i])
		return;
	for (;;) {
		j = (j + 1) & mask;
		if (!hc->slots[j])
			break;
		k = hash_home(hc, hc->slots[j]->id);
		/* j's entry may fill the hole at i unless home is in (i, j] */
		if (i <= j ? (k > i && k <= j) : (k > i || k <= j))
			continue;
		hc->slots[i] = hc->slots[j];
		i = j;
	}
	hc->slots[i] = NULL;
	hc->n--;
}

/* --- the schedule: a min-heap on wake_ms ---------------------------------- */

static void heap_place(struct xlb_hc *hc, size_t i, struct hc_check *c)
{
	hc->heap[i] = c;
	c->heap_idx = (uint32_t)i;
}

static void heap_up(struct xlb_hc *hc, size_t i)
{
	struct hc_check *c = hc->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (hc->heap[p]->wake_ms <= c->wake_ms)
			break;
		heap_place(hc, i, hc->heap[p]);
		i = p;
	}
	heap_place(hc, i, c);
}

static void heap_down(struct xlb_hc *hc, size_t i)
{
	struct hc_check *c = hc->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, m = l;

		if (l >= hc->heap_n)
			break;
		if (l + 1 < hc->heap_n &&
		    hc->heap[l + 1]->wake_ms < hc->heap[l]->wake_ms)
			m = l + 1;
		if (c->wake_ms <= hc->heap[m]->wake_ms)
			break;
		heap_place(hc, i, hc->heap[m]);
		i = m;
	}
	heap_place(hc, i, c);
}

static int heap_reserve(struct xlb_hc *hc)
{
	struct hc_check **h;
	size_t cap;

	if (hc->heap_n < hc->heap_cap)
		return 0;
	cap = hc->heap_cap ? hc->heap_cap * 2 : HC_HASH_MIN;
	h = realloc(hc->heap, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	hc->heap = h;
	hc->heap_cap = cap;
	return 0;
}

/* Room must have been reserved (heap_reserve). */
static void heap_push(struct xlb_hc *hc, struct hc_check *c)
{
	hc->heap[hc->heap_n] = c;
	c->heap_idx = (uint32_t)hc->heap_n++;
	heap_up(hc, c->heap_idx);
}

static void heap_remove(struct xlb_hc *hc, struct hc_check *c)
{
	size_t i = c->heap_idx;
	struct hc_check *last;

	if (i == HC_NO_HEAP)
		return;
	c->heap_idx = HC_NO_HEAP;
	last = hc->heap[--hc->heap_n];
	if (last == c)
		return;
	heap_place(hc, i, last);
	heap_up(hc, i);
	heap_down(hc, last->heap_idx);
}

/* Set c's key and restore the heap order around it. */
static void heap_update(struct xlb_hc *hc, struct hc_check *c, uint64_t wake)
{
	c->wake_ms = wake;
	heap_up(hc, c->heap_idx);
	heap_down(hc, c->heap_idx);
}

/* --- probes --------------------------------------------------------------- */

/*
 * Errors that say something about this host, not the backend: out of fds,
 * memory, local ports (EADDRNOTAVAIL, EAGAIN) or epoll watches (ENOSPC).
 */
static bool local_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM ||
	       e == EADDRNOTAVAIL || e == EAGAIN || e == ENOSPC;
}

static void verdict_errno(struct hc_verdict *v, int e)
{
	char buf[64];

	v->ok = false;
	switch (e) {
	case ECONNREFUSED:
		snprintf(v->detail, sizeof(v->detail), "refused");
		break;
	case EHOSTUNREACH:
	case ENETUNREACH:
		snprintf(v->detail, sizeof(v->detail), "unreachable");
		break;
	case ECONNRESET:
		snprintf(v->detail, sizeof(v->detail), "reset");
		break;
	default:
		snprintf(v->detail, sizeof(v->detail), "%s",
			 strerror_r(e, buf, sizeof(buf)));
	}
}

static void verdict_set(struct hc_verdict *v, bool ok, const char *detail)
{
	v->ok = ok;
	snprintf(v->detail, sizeof(v->detail), "%s", detail);
}

static socklen_t target_sockaddr(const struct xlb_hc_target *t,
				 struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6;

	memset(ss, 0, sizeof(*ss));
	if (t->family == XLB_FAMILY_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(t->port);
		sin->sin_addr.s_addr = t->addr[0];
		return sizeof(*sin);
	}
	sin6 = (struct sockaddr_in6 *)ss;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(t->port);
	memcpy(&sin6->sin6_addr, t->addr, sizeof(sin6->sin6_addr));
	return sizeof(*sin6);
}

/* The request of an http probe; the same bytes every time it is built. */
static size_t http_request(const struct hc_check *c, char *buf, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	bool v6 = c->t.family == XLB_FAMILY_INET6;
	int n;

	inet_ntop(v6 ? AF_INET6 : AF_INET, c->t.addr, addr, sizeof(addr));
	n = snprintf(buf, size,
		     "GET %s HTTP/1.0\r\nHost: %s%s%s\r\nUser-Agent: xlb-health\r\nConnection: close\r\n\r\n",
		     c->t.cfg.http_path, v6 ? "[" : "", addr, v6 ? "]" : "");
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/*
 * The status of "HTTP/<version> <3 digits>" followed by a blank, a line end
 * or nothing; -1 for anything else.
 */
static int http_status(const char *b, size_t n)
{
	size_t i = 5, v;
	int status = 0;

	if (n < 5 || memcmp(b, "HTTP/", 5))
		return -1;
	while (i < n && ((b[i] >= '0' && b[i] <= '9') || b[i] == '.'))
		i++;
	if (i == 5 || i >= n || b[i] != ' ')
		return -1;
	for (v = ++i; i < v + 3; i++) {
		if (i >= n || b[i] < '0' || b[i] > '9')
			return -1;
		status = status * 10 + (b[i] - '0');
	}
	if (i < n && b[i] != ' ' && b[i] != '\r' && b[i] != '\n')
		return -1;
	return status;
}

static void http_verdict(const struct hc_check *c, struct hc_verdict *v)
{
	int status = http_status(c->line, c->got);

	if (status < 0) {
		verdict_set(v, false, "bad http answer");
		return;
	}
	v->ok = status == c->t.cfg.http_status;
	snprintf(v->detail, sizeof(v->detail), "http status %d", status);
}

static int epoll_set(struct xlb_hc *hc, struct hc_check *c, int op,
		     uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = c->id };

	return epoll_ctl(hc->epfd, op, c->fd, &ev) ? -errno : 0;
}

/* Close the probe's socket; the only place a probe socket is closed. */
static void probe_close(struct xlb_hc *hc, struct hc_check *c)
{
	if (c->fd < 0)
		return;
	/* not just close: a forked child could keep the file registered */
	epoll_ctl(hc->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->phase = PH_IDLE;
	hc->in_flight--;
}

/*
 * Send the rest of the http request.  Returns 1 while the probe goes on,
 * 0 with a verdict in v.
 */
static int http_send(struct xlb_hc *hc, struct hc_check *c,
		     struct hc_verdict *v)
{
	char req[HC_HTTP_REQ_MAX];
	size_t len = http_request(c, req, sizeof(req));
	ssize_t n;
	int ret;

	while (c->sent < len) {
		n = send(c->fd, req + c->sent, len - c->sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			verdict_errno(v, errno);
			return 0;
		}
		c->sent += (uint16_t)n;
	}
	c->phase = PH_RECV;
	c->got = 0;
	ret = epoll_set(hc, c, EPOLL_CTL_MOD, EPOLLIN);
	if (ret) {
		verdict_errno(v, -ret);
		return 0;
	}
	return 1;
}

static int http_recv(struct hc_check *c, struct hc_verdict *v)
{
	ssize_t n;

	for (;;) {
		n = recv(c->fd, c->line + c->got, sizeof(c->line) - c->got, 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 1;
			verdict_errno(v, errno);
			return 0;
		}
		if (n == 0)
			break;
		c->got += (uint16_t)n;
		if (c->got == sizeof(c->line) || memchr(c->line, '\n', c->got))
			break;
	}
	http_verdict(c, v);
	return 0;
}

static int udp_recv(struct hc_check *c, struct hc_verdict *v)
{
	char buf[64];

	if (recv(c->fd, buf, sizeof(buf), 0) >= 0) {
		verdict_set(v, true, "answered");
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return 1;
	verdict_errno(v, errno);
	return 0;
}

/* Readiness on c's socket.  Returns 1 while the probe goes on, 0 with v. */
static int probe_step(struct xlb_hc *hc, struct hc_check *c,
		      struct hc_verdict *v)
{
	socklen_t len = sizeof(int);
	int soerr = 0;

	if (c->phase == PH_CONNECT) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len))
			soerr = errno;
		if (soerr) {
			verdict_errno(v, soerr);
			return 0;
		}
		if (c->t.cfg.kind == XLB_HEALTH_TCP) {
			verdict_set(v, true, "connected");
			return 0;
		}
		c->phase = PH_SEND;
		c->sent = 0;
	}
	if (c->phase == PH_SEND)
		return http_send(hc, c, v);
	if (c->t.cfg.kind == XLB_HEALTH_UDP)
		return udp_recv(c, v);
	return http_recv(c, v);
}

/*
 * Open, connect and register the probe's socket.  Returns 1 when the probe
 * is in flight, 0 with a verdict in v, or a negative errno for a failure
 * of this host (no verdict: the backend is not to blame).
 */
static int probe_open(struct xlb_hc *hc, struct hc_check *c,
		      struct hc_verdict *v)
{
	bool udp = c->t.cfg.kind == XLB_HEALTH_UDP;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr_storage ss;
	socklen_t sslen = target_sockaddr(&c->t, &ss);
	int ret, e;

	c->fd = socket(ss.ss_family,
		       (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	hc->in_flight++;
	c->phase = PH_CONNECT;
	/*
	 * A TCP probe ends with a reset, not a FIN: at thousands of checks a
	 * second, TIME_WAIT sockets on this host would pile up otherwise.
	 */
	if (!udp)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));

	if (connect(c->fd, (struct sockaddr *)&ss, sslen) &&
	    errno != EINPROGRESS) {
		e = errno;
		goto fail;
	}
	if (udp) {
		if (send(c->fd, udp_payload, sizeof(udp_payload) - 1,
			 MSG_NOSIGNAL) < 0) {
			e = errno;
			goto fail;
		}
		c->phase = PH_RECV;
	}
	ret = epoll_set(hc, c, EPOLL_CTL_ADD, udp ? EPOLLIN : EPOLLOUT);
	if (ret) {
		e = -ret;
		goto fail;
	}
	return 1;
fail:
	probe_close(hc, c);
	if (local_errno(e))
		return -e;
	verdict_errno(v, e);
	return 0;
}

/*
 * Record v for c's probe (already closed) and report it.  c must not be
 * used after this: the callback may delete or change checks.
 */
static void verdict(struct xlb_hc *hc, struct hc_check *c,
		    const struct hc_verdict *v, uint64_t now, xlb_hc_cb cb,
		    void *ctx)
{
	struct xlb_hc_result *r = &c->last;

	memset(r, 0, sizeof(*r));
	r->ok = v->ok;
	r->flipped = xlb_hc_record(&c->state, v->ok, c->t.cfg.rise,
				   c->t.cfg.fall);
	r->health = c->state.health;
	r->rtt_ms = now - c->start_ms > UINT32_MAX ?
		    UINT32_MAX : (uint32_t)(now - c->start_ms);
	r->at_ms = now;
	memcpy(r->detail, v->detail, sizeof(r->detail));
	c->has_result = true;
	heap_update(hc, c, c->next_ms);
	if (cb)
		cb(ctx, c->id, r);
}

/*
 * Start c's due probe.  The next one is due an interval after this one was
 * scheduled; after a stall of more than an interval, one interval after
 * now (no burst of missed probes).
 */
static void probe_start(struct xlb_hc *hc, struct hc_check *c, uint64_t now,
			xlb_hc_cb cb, void *ctx)
{
	struct hc_verdict v;
	int ret;

	c->next_ms += c->t.cfg.interval_ms;
	if (c->next_ms <= now)
		c->next_ms = now + c->t.cfg.interval_ms;
	c->start_ms = now;
	c->deadline_ms = now + c->t.cfg.timeout_ms;
	c->started = true;

	ret = probe_open(hc, c, &v);
	if (ret > 0) {
		heap_update(hc, c, c->deadline_ms);
	} else if (ret < 0) {
		c->skipped++;
		heap_update(hc, c, c->next_ms);
	} else {
		verdict(hc, c, &v, now, cb, ctx);
	}
}

/* Readiness of the probes in flight, without waiting. */
static void hc_events(struct xlb_hc *hc, uint64_t now, xlb_hc_cb cb,
		      void *ctx)
{
	struct epoll_event ev[HC_EVENTS];
	unsigned int rounds = hc->in_flight / HC_EVENTS + 1;
	struct hc_verdict v;
	struct hc_check *c;
	int n, i;

	while (rounds--) {
		n = epoll_wait(hc->epfd, ev, HC_EVENTS, 0);
		for (i = 0; i < n; i++) {
			/*
			 * By id, not pointer: an earlier callback of this
			 * batch may have deleted or restarted the check, and
			 * then its probe is gone and the event stale.
			 */
			c = hash_find(hc, ev[i].data.u64);
			if (!c || c->fd < 0)
				continue;
			if (probe_step(hc, c, &v))
				continue;
			probe_close(hc, c);
			verdict(hc, c, &v, now, cb, ctx);
		}
		if (n < HC_EVENTS)
			break;
	}
}

void xlb_hc_run(struct xlb_hc *hc, xlb_hc_cb cb, void *ctx)
{
	uint64_t now = hc->clock(hc->clock_ctx);
	struct hc_verdict v;
	struct hc_check *c;

	/* answers first: one that came before its deadline counts */
	hc_events(hc, now, cb, ctx);

	/* every step moves the top's key past now or removes it */
	while (hc->heap_n && hc->heap[0]->wake_ms <= now) {
		c = hc->heap[0];
		if (c->fd >= 0) {
			probe_close(hc, c);
			verdict_set(&v, false, "timeout");
			verdict(hc, c, &v, now, cb, ctx);
		} else {
			probe_start(hc, c, now, cb, ctx);
		}
	}
}

int xlb_hc_fd(const struct xlb_hc *hc)
{
	return hc->epfd;
}

int xlb_hc_timeout_ms(const struct xlb_hc *hc)
{
	uint64_t now, wake;

	if (!hc->heap_n)
		return -1;
	now = hc->clock(hc->clock_ctx);
	wake = hc->heap[0]->wake_ms;
	if (wake <= now)
		return 0;
	return wake - now > INT_MAX ? INT_MAX : (int)(wake - now);
}

/* --- checks --------------------------------------------------------------- */

static int target_check(const struct xlb_hc_target *t, struct xlb_err *err)
{
	const struct xlb_health *h = &t->cfg;
	size_t i, len;

	if (t->family != XLB_FAMILY_INET && t->family != XLB_FAMILY_INET6)
		return xlb_errf(err, EINVAL,
				"health check family %u is neither inet (%u) nor inet6 (%u)",
				t->family, XLB_FAMILY_INET, XLB_FAMILY_INET6);
	if (h->kind != XLB_HEALTH_NONE && h->kind != XLB_HEALTH_TCP &&
	    h->kind != XLB_HEALTH_HTTP && h->kind != XLB_HEALTH_UDP)
		return xlb_errf(err, EINVAL,
				"health check kind %u is not tcp, http, udp or none (inherit must be resolved first)",
				h->kind);
	if (h->kind != XLB_HEALTH_NONE && !t->port)
		return xlb_errf(err, EINVAL,
				"health check port 0: a port 1..65535 to probe is needed");
	if (!h->timeout_ms || h->timeout_ms >= h->interval_ms)
		return xlb_errf(err, EINVAL,
				"health check timeout %u ms must be at least 1 and less than the interval %u ms",
				h->timeout_ms, h->interval_ms);
	if (h->interval_ms > INT_MAX)
		return xlb_errf(err, EINVAL,
				"health check interval %u ms is above %d ms",
				h->interval_ms, INT_MAX);
	if (h->rise < 1 || h->rise > HC_RISE_FALL_MAX)
		return xlb_errf(err, EINVAL,
				"health check rise %u is out of range 1..%d",
				h->rise, HC_RISE_FALL_MAX);
	if (h->fall < 1 || h->fall > HC_RISE_FALL_MAX)
		return xlb_errf(err, EINVAL,
				"health check fall %u is out of range 1..%d",
				h->fall, HC_RISE_FALL_MAX);
	if (h->kind != XLB_HEALTH_HTTP)
		return 0;
	if (h->http_status < 100 || h->http_status > 599)
		return xlb_errf(err, EINVAL,
				"health check http-status %u is out of range 100..599",
				h->http_status);
	len = strnlen(h->http_path, sizeof(h->http_path));
	if (len == sizeof(h->http_path) || h->http_path[0] != '/')
		return xlb_errf(err, EINVAL,
				"health check http-path \"%.40s\" must start with '/' and have at most %zu characters",
				h->http_path, sizeof(h->http_path) - 1);
	/* it goes into the request line: no blank, no line break */
	for (i = 0; i < len; i++)
		if (h->http_path[i] <= ' ' || h->http_path[i] >= 0x7f)
			return xlb_errf(err, EINVAL,
					"health check http-path \"%.40s\" has a blank or unprintable character at %zu",
					h->http_path, i + 1);
	return 0;
}

/* Same probe: nothing but interval, timeout, rise or fall differs. */
static bool same_probe(const struct xlb_hc_target *a,
		       const struct xlb_hc_target *b)
{
	if (a->family != b->family || a->port != b->port ||
	    a->cfg.kind != b->cfg.kind)
		return false;
	if (memcmp(a->addr, b->addr,
		   a->family == XLB_FAMILY_INET ? 4 : sizeof(a->addr)))
		return false;
	if (a->cfg.kind == XLB_HEALTH_HTTP &&
	    (a->cfg.http_status != b->cfg.http_status ||
	     strcmp(a->cfg.http_path, b->cfg.http_path)))
		return false;
	return true;
}

/* First probe at a per-id offset within one interval, so checks spread. */
static void schedule_first(struct xlb_hc *hc, struct hc_check *c,
			   uint64_t now)
{
	if (c->t.cfg.kind == XLB_HEALTH_NONE) {
		c->next_ms = UINT64_MAX;
		heap_remove(hc, c);
		return;
	}
	c->next_ms = now + mix64(c->id) % c->t.cfg.interval_ms;
	if (c->heap_idx == HC_NO_HEAP) {
		c->wake_ms = c->next_ms;
		heap_push(hc, c);
	} else {
		heap_update(hc, c, c->next_ms);
	}
}

/* Back to a new check: unknown, no result, probe abandoned. */
static void check_reset(struct xlb_hc *hc, struct hc_check *c, uint64_t now)
{
	probe_close(hc, c);
	memset(&c->state, 0, sizeof(c->state));
	memset(&c->last, 0, sizeof(c->last));
	c->has_result = false;
	c->started = false;
	c->skipped = 0;
	schedule_first(hc, c, now);
}

/* New timing for the same probe: state and the probe in flight stay. */
static void check_retime(struct xlb_hc *hc, struct hc_check *c,
			 const struct xlb_hc_target *t, uint64_t now)
{
	uint32_t old_interval = c->t.cfg.interval_ms;

	c->t = *t;
	if (c->t.cfg.kind == XLB_HEALTH_NONE)
		return;
	if (t->cfg.interval_ms != old_interval)
		c->next_ms = c->started ? c->start_ms + t->cfg.interval_ms :
			     now + mix64(c->id) % t->cfg.interval_ms;
	if (c->fd >= 0) {
		c->deadline_ms = c->start_ms + t->cfg.timeout_ms;
		heap_update(hc, c, c->deadline_ms);
	} else {
		heap_update(hc, c, c->next_ms);
	}
}

int xlb_hc_set(struct xlb_hc *hc, uint64_t id, const struct xlb_hc_target *t,
	       struct xlb_err *err)
{
	uint64_t now = hc->clock(hc->clock_ctx);
	struct hc_check *c;
	int ret;

	ret = target_check(t, err);
	if (ret)
		return ret;
	if (heap_reserve(hc))
		return xlb_errf(err, ENOMEM, "health check: out of memory");

	c = hash_find(hc, id);
	if (c) {
		if (same_probe(&c->t, t)) {
			check_retime(hc, c, t, now);
		} else {
			c->t = *t;
			check_reset(hc, c, now);
		}
		return 0;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return xlb_errf(err, ENOMEM, "health check: out of memory");
	c->id = id;
	if (hash_insert(hc, c)) {
		free(c);
		return xlb_errf(err, ENOMEM, "health check: out of memory");
	}
	c->t = *t;
	c->fd = -1;
	c->heap_idx = HC_NO_HEAP;
	schedule_first(hc, c, now);
	return 0;
}

static void check_free(struct xlb_hc *hc, struct hc_check *c)
{
	probe_close(hc, c);
	free(c);
}

void xlb_hc_del(struct xlb_hc *hc, uint64_t id)
{
	struct hc_check *c = hash_find(hc, id);

	if (!c)
		return;
	heap_remove(hc, c);
	hash_remove(hc, id);
	check_free(hc, c);
}

int xlb_hc_get(const struct xlb_hc *hc, uint64_t id,
	       struct xlb_hc_status *out)
{
	const struct hc_check *c = hash_find(hc, id);

	if (!c)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->state = c->state;
	out->has_result = c->has_result;
	out->last = c->last;
	out->next_ms = c->next_ms;
	out->in_flight = c->fd >= 0;
	out->skipped = c->skipped;
	return 0;
}

struct xlb_hc *xlb_hc_create(xlb_clock_fn clock, void *clock_ctx)
{
	struct xlb_hc *hc = calloc(1, sizeof(*hc));

	if (!hc)
		return NULL;
	hc->clock = clock ? clock : xlb_clock_monotonic_ms;
	hc->clock_ctx = clock_ctx;
	hc->cap = HC_HASH_MIN;
	hc->slots = calloc(hc->cap, sizeof(*hc->slots));
	hc->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!hc->slots || hc->epfd < 0) {
		if (hc->epfd >= 0)
			close(hc->epfd);
		free(hc->slots);
		free(hc);
		return NULL;
	}
	return hc;
}

void xlb_hc_destroy(struct xlb_hc *hc)
{
	size_t i;

	if (!hc)
		return;
	for (i = 0; i < hc->cap; i++)
		if (hc->slots[i])
			check_free(hc, hc->slots[i]);
	close(hc->epfd);
	free(hc->slots);
	free(hc->heap);
	free(hc);
}
