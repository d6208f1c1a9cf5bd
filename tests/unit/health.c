// SPDX-License-Identifier: GPL-2.0
/*
 * Health checks: the hysteresis (one failure never ejects, exactly `fall`
 * failures do, `rise` successes restore, mixed results reset the runs), the
 * panic threshold, and the engine: its schedule on a fake clock (the first
 * probe within one interval, then exactly one every interval, a verdict of
 * "timeout" exactly timeout_ms after a start, never two probes at once),
 * real tcp, http and udp probes on loopback (IPv4 and IPv6), set/del/get,
 * bad targets, and that every probe socket is closed.
 *
 * Time never passes by sleeping: the engine's clock is a counter the tests
 * move.  Real socket events are waited for with poll on xlb_hc_fd, bounded
 * by a real 2 s, while the fake clock stands still.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "health.h"

#define T0		1000	/* the fake clock's start */
#define INTERVAL	100
#define TIMEOUT		30
#define WAIT_MS		2000	/* real time allowed for a socket event */
#define REC_MAX		64

/* --- helpers -------------------------------------------------------------- */

struct fake_clock {
	uint64_t now;
};

static uint64_t fake_now(void *ctx)
{
	return ((struct fake_clock *)ctx)->now;
}

static uint64_t real_ms(void)
{
	return xlb_clock_monotonic_ms(NULL);
}

/* Every verdict the engine reports. */
struct rec {
	int n;
	uint64_t id[REC_MAX];
	struct xlb_hc_result r[REC_MAX];
};

static void rec_cb(void *ctx, uint64_t id, const struct xlb_hc_result *r)
{
	struct rec *rc = ctx;

	if (rc->n < REC_MAX) {
		rc->id[rc->n] = id;
		rc->r[rc->n] = *r;
	}
	rc->n++;
}

static int af(uint8_t family)
{
	return family == XLB_FAMILY_INET ? AF_INET : AF_INET6;
}

static void loopback(uint8_t family, __be32 addr[4])
{
	memset(addr, 0, 16);
	if (family == XLB_FAMILY_INET)
		addr[0] = htonl(INADDR_LOOPBACK);
	else
		addr[3] = htonl(1);
}

static struct xlb_hc_target target(uint8_t kind, uint8_t family,
				   uint16_t port)
{
	struct xlb_hc_target t;

	memset(&t, 0, sizeof(t));
	t.family = family;
	loopback(family, t.addr);
	t.port = port;
	xlb_health_init(&t.cfg, kind);
	t.cfg.interval_ms = INTERVAL;
	t.cfg.timeout_ms = TIMEOUT;
	return t;
}

/* A non-blocking socket bound to loopback, port chosen by the kernel. */
static int server(uint8_t family, int type, bool do_listen, uint16_t *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	int one = 1, fd;

	fd = socket(af(family), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (family == XLB_FAMILY_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		len = sizeof(*sin6);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    (do_listen && listen(fd, 128)) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		close(fd);
		return -1;
	}
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* A UDP port nobody listens on (free an instant ago). */
static uint16_t udp_port_unused(uint8_t family)
{
	uint16_t port = 0;
	int fd = server(family, SOCK_DGRAM, false, &port);

	if (fd >= 0)
		close(fd);
	return port;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int max_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int m = -1;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > m)
			m = atoi(e->d_name);
	closedir(d);
	return m;
}

/*
 * An HTTP server the test drives: accepts one connection at a time, keeps
 * the request, and once it is complete sends the answer pieces, one per
 * step (so a probe may see a status line in parts), then closes.  No
 * pieces: it never answers.
 */
struct http_srv {
	int lfd;
	int cfd;
	char req[1024];
	size_t got;
	const char *piece[3];
	int sent;
	int served;
};

static void http_srv_step(struct http_srv *s)
{
	ssize_t n;

	if (s->cfd < 0)
		s->cfd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK);
	if (s->cfd < 0)
		return;
	n = recv(s->cfd, s->req + s->got, sizeof(s->req) - 1 - s->got, 0);
	if (n > 0)
		s->got += n;
	s->req[s->got] = 0;
	if (!strstr(s->req, "\r\n\r\n") || !s->piece[0])
		return;
	if (s->piece[s->sent]) {
		send(s->cfd, s->piece[s->sent], strlen(s->piece[s->sent]),
		     MSG_NOSIGNAL);
		s->sent++;
		return;
	}
	close(s->cfd);
	s->cfd = -1;
	s->sent = 0;
	s->served++;
}

/* A UDP server that answers every datagram with "ok" when echo is set. */
struct udp_srv {
	int fd;
	bool echo;
	int seen;
	char last[64];
};

static void udp_srv_step(struct udp_srv *s)
{
	struct sockaddr_storage from;
	socklen_t len = sizeof(from);
	ssize_t n;

	while ((n = recvfrom(s->fd, s->last, sizeof(s->last) - 1, 0,
			     (struct sockaddr *)&from, &len)) >= 0) {
		s->last[n] = 0;
		s->seen++;
		if (s->echo)
			sendto(s->fd, "ok", 2, 0, (struct sockaddr *)&from,
			       len);
		len = sizeof(from);
	}
}

/* The engine on a fake clock, what it reported, and the servers. */
struct world {
	struct xlb_hc *hc;
	struct fake_clock clk;
	struct rec rec;
	struct http_srv *http;
	struct udp_srv *udp;
	struct udp_srv silent;	/* silent_udp's */
};

static bool at_least(struct world *w, int n)
{
	return w->rec.n >= n;
}

/* Run once without waiting: due probes start, ready ones finish. */
static void run(struct world *w)
{
	xlb_hc_run(w->hc, rec_cb, &w->rec);
}

/*
 * Poll the engine and the servers and run, until rec has `want` verdicts,
 * done (if not NULL) says so, or ms of real time passed.  The fake clock
 * stands still.
 */
static int pump_until(struct world *w, int want, bool (*done)(struct world *),
		      int ms)
{
	uint64_t end = real_ms() + ms;
	struct pollfd p[3];
	nfds_t n;

	while (!at_least(w, want) && !(done && done(w)) && real_ms() < end) {
		n = 0;
		p[n++] = (struct pollfd){ .fd = xlb_hc_fd(w->hc),
					  .events = POLLIN };
		if (w->http)
			p[n++] = (struct pollfd){
				.fd = w->http->cfd >= 0 ? w->http->cfd :
							  w->http->lfd,
				.events = POLLIN };
		if (w->udp)
			p[n++] = (struct pollfd){ .fd = w->udp->fd,
						  .events = POLLIN };
		poll(p, n, 20);
		if (w->http)
			http_srv_step(w->http);
		if (w->udp)
			udp_srv_step(w->udp);
		run(w);
	}
	return w->rec.n;
}

/* Wait for `want` verdicts, WAIT_MS at most. */
static int pump(struct world *w, int want)
{
	return pump_until(w, want, NULL, WAIT_MS);
}

/* Long enough for loopback to deliver anything still on its way. */
#define SETTLE_MS	200

/* Move the fake clock to the check's first probe and run: it starts. */
static void start_first(struct __test_metadata *_metadata, struct world *w,
			uint64_t id)
{
	struct xlb_hc_status st;

	ASSERT_EQ(0, xlb_hc_get(w->hc, id, &st));
	w->clk.now = st.next_ms;
	run(w);
}

static void world_init(struct __test_metadata *_metadata, struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->clk.now = T0;
	w->hc = xlb_hc_create(fake_now, &w->clk);
	ASSERT_NE(NULL, w->hc);
}

static void set_ok(struct __test_metadata *_metadata, struct world *w,
		   uint64_t id, const struct xlb_hc_target *t)
{
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_hc_set(w->hc, id, t, &err)) TH_LOG("%s", err.msg);
}

/* --- hysteresis ----------------------------------------------------------- */

/* A state that is up after `rise` successes. */
static struct xlb_hc_state up_state(uint8_t rise, uint8_t fall)
{
	struct xlb_hc_state s = { 0 };
	int i;

	for (i = 0; i < rise; i++)
		xlb_hc_record(&s, true, rise, fall);
	return s;
}

TEST(hysteresis_one_failure_never_ejects)
{
	struct xlb_hc_state s;
	int fall, i;

	for (fall = 2; fall <= 100; fall++) {
		s = up_state(2, fall);
		ASSERT_EQ(XLB_HC_UP, s.health);
		for (i = 0; i < 50; i++) {
			EXPECT_FALSE(xlb_hc_record(&s, false, 2, fall));
			EXPECT_EQ(XLB_HC_UP, s.health);
			EXPECT_FALSE(xlb_hc_record(&s, true, 2, fall));
			EXPECT_EQ(XLB_HC_UP, s.health);
		}
	}
}

TEST(hysteresis_exactly_fall_failures_eject)
{
	struct xlb_hc_state s;
	int fall, i;

	for (fall = 1; fall <= 100; fall++) {
		s = up_state(3, fall);
		for (i = 1; i < fall; i++) {
			EXPECT_FALSE(xlb_hc_record(&s, false, 3, fall));
			EXPECT_EQ(XLB_HC_UP, s.health) TH_LOG("fall %d", fall);
		}
		EXPECT_TRUE(xlb_hc_record(&s, false, 3, fall))
			TH_LOG("fall %d: failure %d did not eject", fall, fall);
		EXPECT_EQ(XLB_HC_DOWN, s.health);
		/* staying down is no flip */
		for (i = 0; i < 3; i++)
			EXPECT_FALSE(xlb_hc_record(&s, false, 3, fall));
		EXPECT_EQ(XLB_HC_DOWN, s.health);
	}
}

TEST(hysteresis_rise_successes_restore)
{
	struct xlb_hc_state s;
	int rise, i;

	for (rise = 1; rise <= 100; rise++) {
		memset(&s, 0, sizeof(s));
		xlb_hc_record(&s, false, rise, 1);
		ASSERT_EQ(XLB_HC_DOWN, s.health);
		for (i = 1; i < rise; i++) {
			EXPECT_FALSE(xlb_hc_record(&s, true, rise, 1));
			EXPECT_EQ(XLB_HC_DOWN, s.health)
				TH_LOG("rise %d", rise);
		}
		EXPECT_TRUE(xlb_hc_record(&s, true, rise, 1));
		EXPECT_EQ(XLB_HC_UP, s.health);
		EXPECT_FALSE(xlb_hc_record(&s, true, rise, 1));
	}
}

TEST(hysteresis_unknown_to_up_is_no_flip_unknown_to_down_is)
{
	struct xlb_hc_state s = { 0 };

	EXPECT_EQ(XLB_HC_UNKNOWN, s.health);
	EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
	EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
	EXPECT_EQ(XLB_HC_UNKNOWN, s.health);
	EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
	EXPECT_EQ(XLB_HC_UP, s.health);

	memset(&s, 0, sizeof(s));
	EXPECT_FALSE(xlb_hc_record(&s, false, 3, 3));
	EXPECT_FALSE(xlb_hc_record(&s, false, 3, 3));
	EXPECT_EQ(XLB_HC_UNKNOWN, s.health);
	EXPECT_TRUE(xlb_hc_record(&s, false, 3, 3));
	EXPECT_EQ(XLB_HC_DOWN, s.health);

	/* rise 1: the first success decides, still no flip */
	memset(&s, 0, sizeof(s));
	EXPECT_FALSE(xlb_hc_record(&s, true, 1, 1));
	EXPECT_EQ(XLB_HC_UP, s.health);
}

TEST(hysteresis_interleaved_results_reset_runs)
{
	struct xlb_hc_state s = up_state(3, 3);
	int i;

	/* two failures, one success, forever: never down */
	for (i = 0; i < 100; i++) {
		EXPECT_FALSE(xlb_hc_record(&s, false, 3, 3));
		EXPECT_FALSE(xlb_hc_record(&s, false, 3, 3));
		EXPECT_EQ(2, s.fail_run);
		EXPECT_EQ(0, s.ok_run);
		EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
		EXPECT_EQ(0, s.fail_run);
		EXPECT_EQ(1, s.ok_run);
		EXPECT_EQ(XLB_HC_UP, s.health);
	}
	/* and from down, two successes and a failure: never up */
	for (i = 0; i < 3; i++)
		xlb_hc_record(&s, false, 3, 3);
	ASSERT_EQ(XLB_HC_DOWN, s.health);
	for (i = 0; i < 100; i++) {
		EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
		EXPECT_FALSE(xlb_hc_record(&s, true, 3, 3));
		EXPECT_FALSE(xlb_hc_record(&s, false, 3, 3));
		EXPECT_EQ(XLB_HC_DOWN, s.health);
	}
}

TEST(hysteresis_runs_saturate)
{
	struct xlb_hc_state s = { 0 };
	int i;

	for (i = 0; i < 300; i++)
		xlb_hc_record(&s, false, 100, 100);
	EXPECT_EQ(255, s.fail_run);
	EXPECT_EQ(XLB_HC_DOWN, s.health);
	EXPECT_FALSE(xlb_hc_record(&s, true, 100, 100));
	EXPECT_EQ(0, s.fail_run);
	EXPECT_EQ(1, s.ok_run);
	for (i = 0; i < 300; i++)
		xlb_hc_record(&s, true, 100, 100);
	EXPECT_EQ(255, s.ok_run);
	EXPECT_EQ(XLB_HC_UP, s.health);
}

TEST(panic_threshold_edges)
{
	EXPECT_FALSE(xlb_hc_panic(4, 2, 50));	/* exactly 50%: not above */
	EXPECT_TRUE(xlb_hc_panic(4, 3, 50));
	EXPECT_FALSE(xlb_hc_panic(4, 4, 100));	/* 100 never */
	EXPECT_FALSE(xlb_hc_panic(1, 1, 100));
	EXPECT_FALSE(xlb_hc_panic(4, 0, 0));	/* 0: any down, none is not */
	EXPECT_TRUE(xlb_hc_panic(4, 1, 0));
	EXPECT_TRUE(xlb_hc_panic(4000, 1, 0));
	EXPECT_FALSE(xlb_hc_panic(0, 0, 0));	/* nothing eligible */
	EXPECT_FALSE(xlb_hc_panic(0, 0, 50));
	EXPECT_TRUE(xlb_hc_panic(3, 1, 33));	/* 33.3% > 33 */
	EXPECT_FALSE(xlb_hc_panic(3, 1, 34));
	EXPECT_FALSE(xlb_hc_panic(100, 50, 50));
	EXPECT_TRUE(xlb_hc_panic(100, 51, 50));
	/* no overflow on large counts */
	EXPECT_FALSE(xlb_hc_panic(UINT32_MAX - 1, (UINT32_MAX - 1) / 2, 50));
	EXPECT_TRUE(xlb_hc_panic(UINT32_MAX - 1, (UINT32_MAX - 1) / 2 + 1,
				 50));
}

TEST(monotonic_clock_is_clock_monotonic_in_ms)
{
	struct timespec a, b;
	uint64_t ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	ms = xlb_clock_monotonic_ms(NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	EXPECT_LE(a.tv_sec * 1000ULL + a.tv_nsec / 1000000, ms);
	EXPECT_GE(b.tv_sec * 1000ULL + b.tv_nsec / 1000000, ms);
}

/* --- set, get, del -------------------------------------------------------- */

FIXTURE(engine) {
	struct world w;
};

FIXTURE_SETUP(engine)
{
	world_init(_metadata, &self->w);
}

FIXTURE_TEARDOWN(engine)
{
	xlb_hc_destroy(self->w.hc);
	if (self->w.http) {
		close(self->w.http->lfd);
		if (self->w.http->cfd >= 0)
			close(self->w.http->cfd);
	}
	if (self->w.udp)
		close(self->w.udp->fd);
}

TEST_F(engine, set_get_del)
{
	struct xlb_hc_target t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, 9);
	struct xlb_hc *hc = self->w.hc;
	struct xlb_hc_status st;

	EXPECT_EQ(-ENOENT, xlb_hc_get(hc, 1, &st));
	EXPECT_EQ(-1, xlb_hc_timeout_ms(hc));
	set_ok(_metadata, &self->w, 1, &t);
	ASSERT_EQ(0, xlb_hc_get(hc, 1, &st));
	EXPECT_EQ(XLB_HC_UNKNOWN, st.state.health);
	EXPECT_FALSE(st.has_result);
	EXPECT_FALSE(st.in_flight);
	EXPECT_LE(T0, st.next_ms);
	EXPECT_GT(T0 + INTERVAL, st.next_ms);
	EXPECT_EQ(st.next_ms - T0, xlb_hc_timeout_ms(hc));
	EXPECT_EQ(-ENOENT, xlb_hc_get(hc, 2, &st));

	xlb_hc_del(hc, 1);
	EXPECT_EQ(-ENOENT, xlb_hc_get(hc, 1, &st));
	EXPECT_EQ(-1, xlb_hc_timeout_ms(hc));
	xlb_hc_del(hc, 1);	/* absent: no-op */
	xlb_hc_del(hc, 77);
	self->w.clk.now += 10 * INTERVAL;
	run(&self->w);
	EXPECT_EQ(0, self->w.rec.n);
}

TEST_F(engine, first_probes_spread_within_one_interval)
{
	struct xlb_hc_target t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, 9);
	struct xlb_hc_status st;
	uint64_t first = 0, id;
	bool differ = false;

	for (id = 0; id < 64; id++) {
		set_ok(_metadata, &self->w, id, &t);
		ASSERT_EQ(0, xlb_hc_get(self->w.hc, id, &st));
		EXPECT_LE(T0, st.next_ms);
		EXPECT_GT(T0 + INTERVAL, st.next_ms);
		if (id && st.next_ms != first)
			differ = true;
		first = st.next_ms;
	}
	EXPECT_TRUE(differ) TH_LOG("64 checks all start at the same time");
}

TEST_F(engine, kind_none_never_probes)
{
	struct xlb_hc_target t = target(XLB_HEALTH_NONE, XLB_FAMILY_INET, 0);
	struct xlb_hc_status st;
	int fds = count_fds();

	set_ok(_metadata, &self->w, 5, &t);
	EXPECT_EQ(-1, xlb_hc_timeout_ms(self->w.hc));
	for (; self->w.clk.now < T0 + 10 * INTERVAL; self->w.clk.now += 7)
		run(&self->w);
	EXPECT_EQ(0, self->w.rec.n);
	EXPECT_EQ(fds, count_fds());
	ASSERT_EQ(0, xlb_hc_get(self->w.hc, 5, &st));
	EXPECT_EQ(XLB_HC_UNKNOWN, st.state.health);
	EXPECT_FALSE(st.has_result);
	EXPECT_EQ(UINT64_MAX, st.next_ms);
}

/*
 * Break rule k of a good http target; returns the name the error message
 * must contain, NULL when there are no more rules.
 */
static const char *break_rule(int k, struct xlb_hc_target *t)
{
	switch (k) {
	case 0:
		t->family = 5;
		return "family";
	case 1:
		t->cfg.kind = XLB_HEALTH_INHERIT;
		return "kind";
	case 2:
		t->port = 0;
		return "port";
	case 3:
		t->cfg.timeout_ms = t->cfg.interval_ms;
		return "timeout";
	case 4:
		t->cfg.timeout_ms = 0;
		return "timeout";
	case 5:
		t->cfg.rise = 0;
		return "rise";
	case 6:
		t->cfg.rise = 101;
		return "rise";
	case 7:
		t->cfg.fall = 0;
		return "fall";
	case 8:
		t->cfg.fall = 101;
		return "fall";
	case 9:
		strcpy(t->cfg.http_path, "healthz");
		return "http-path";
	case 10:
		strcpy(t->cfg.http_path, "/a b");
		return "http-path";
	case 11:
		/* header injection */
		strcpy(t->cfg.http_path, "/a\r\nX-Evil:1");
		return "http-path";
	case 12:
		memset(t->cfg.http_path, 'a', sizeof(t->cfg.http_path));
		t->cfg.http_path[0] = '/';
		return "http-path";
	case 13:
		t->cfg.http_status = 0;
		return "http-status";
	}
	return NULL;
}

TEST_F(engine, bad_target_rejected_naming_the_field)
{
	struct xlb_hc_target good = target(XLB_HEALTH_HTTP, XLB_FAMILY_INET6,
					   80), t;
	struct xlb_hc_status before, after;
	struct xlb_err err;
	const char *why;
	int i;

	good.cfg.rise = 1;
	set_ok(_metadata, &self->w, 1, &good);
	ASSERT_EQ(0, xlb_hc_get(self->w.hc, 1, &before));
	for (i = 0;; i++) {
		t = good;
		why = break_rule(i, &t);
		if (!why)
			break;
		memset(&err, 0, sizeof(err));
		self->w.clk.now++;
		/* a new id is not created, an existing one is unchanged */
		EXPECT_EQ(-EINVAL, xlb_hc_set(self->w.hc, 2, &t, &err));
		EXPECT_EQ(-ENOENT, xlb_hc_get(self->w.hc, 2, &after));
		EXPECT_TRUE(strstr(err.msg, why) != NULL)
			TH_LOG("rule %d: \"%s\" does not name %s", i, err.msg,
			       why);
		memset(&err, 0, sizeof(err));
		EXPECT_EQ(-EINVAL, xlb_hc_set(self->w.hc, 1, &t, &err));
		EXPECT_TRUE(strstr(err.msg, why) != NULL);
		ASSERT_EQ(0, xlb_hc_get(self->w.hc, 1, &after));
		EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));
	}

	/* what does not apply to a kind is not checked */
	t = target(XLB_HEALTH_NONE, XLB_FAMILY_INET, 0);
	EXPECT_EQ(0, xlb_hc_set(self->w.hc, 3, &t, NULL));
	t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, 65535);
	strcpy(t.cfg.http_path, "no slash");
	EXPECT_EQ(0, xlb_hc_set(self->w.hc, 4, &t, NULL));
	/* err may be NULL */
	t.port = 0;
	EXPECT_EQ(-EINVAL, xlb_hc_set(self->w.hc, 4, &t, NULL));
}

/* --- the schedule on the fake clock --------------------------------------- */

/* A silent UDP server: udp probes to it end in "timeout". */
static struct udp_srv *silent_udp(struct __test_metadata *_metadata,
				  struct world *w, uint8_t family,
				  uint16_t *port)
{
	struct udp_srv *u = &w->silent;

	memset(u, 0, sizeof(*u));
	u->fd = server(family, SOCK_DGRAM, false, port);
	ASSERT_LE(0, u->fd);
	w->udp = u;
	return u;
}

/*
 * Step the clock one ms at a time: every start is exactly an interval after
 * the previous one, every verdict exactly timeout_ms after its start, and
 * xlb_hc_timeout_ms always says how long until the next of the two.
 */
TEST_F(engine, probes_every_interval_and_time_out_at_start_plus_timeout)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	uint64_t first, start = 0, starts[16];
	int n_starts = 0, k, verdicts = 0;
	struct udp_srv *u;
	uint16_t port;
	bool was_in_flight = false;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	set_ok(_metadata, w, 42, &t);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 42, &st));
	first = st.next_ms;

	for (; w->clk.now <= T0 + 6 * INTERVAL; w->clk.now++) {
		ASSERT_EQ(0, xlb_hc_get(w->hc, 42, &st));
		EXPECT_EQ((st.in_flight ? start + TIMEOUT : st.next_ms) -
			  w->clk.now, xlb_hc_timeout_ms(w->hc));
		run(w);
		ASSERT_EQ(0, xlb_hc_get(w->hc, 42, &st));
		if (st.in_flight && !was_in_flight) {
			start = w->clk.now;
			ASSERT_GT(16, n_starts);
			starts[n_starts++] = start;
			EXPECT_EQ(start + INTERVAL, st.next_ms);
		}
		if (w->rec.n > verdicts) {
			ASSERT_EQ(verdicts + 1, w->rec.n);
			EXPECT_EQ(start + TIMEOUT, w->rec.r[verdicts].at_ms);
			EXPECT_EQ(TIMEOUT, w->rec.r[verdicts].rtt_ms);
			EXPECT_FALSE(w->rec.r[verdicts].ok);
			EXPECT_STREQ("timeout", w->rec.r[verdicts].detail);
			EXPECT_EQ(42, w->rec.id[verdicts]);
			verdicts++;
		}
		was_in_flight = st.in_flight;
	}
	ASSERT_LE(6, n_starts);
	for (k = 0; k < n_starts; k++)
		EXPECT_EQ(first + k * INTERVAL, starts[k]);
	EXPECT_EQ(n_starts - (was_in_flight ? 1 : 0), verdicts);

	/* default fall 3: the third timeout flipped unknown to down */
	EXPECT_FALSE(w->rec.r[1].flipped);
	EXPECT_TRUE(w->rec.r[2].flipped);
	EXPECT_EQ(XLB_HC_DOWN, w->rec.r[2].health);

	/* each start sent one datagram (loopback delivers them at once) */
	udp_srv_step(u);
	EXPECT_EQ(n_starts, u->seen);
	EXPECT_STREQ("xlb-health\n", u->last);
}

/* A start late by less than an interval keeps the cadence; no overlap. */
TEST_F(engine, late_probe_is_not_doubled)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	struct udp_srv *u;
	uint64_t first;
	uint16_t port;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	set_ok(_metadata, w, 7, &t);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 7, &st));
	first = st.next_ms;

	w->clk.now = first + INTERVAL - TIMEOUT / 2;	/* late start */
	run(w);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 7, &st));
	EXPECT_TRUE(st.in_flight);
	EXPECT_EQ(first + INTERVAL, st.next_ms);

	w->clk.now = first + INTERVAL;		/* next is due, probe runs */
	EXPECT_EQ(TIMEOUT / 2, xlb_hc_timeout_ms(w->hc));
	run(w);
	udp_srv_step(u);
	EXPECT_EQ(1, u->seen);
	EXPECT_EQ(0, w->rec.n);
	EXPECT_EQ(TIMEOUT / 2, xlb_hc_timeout_ms(w->hc));

	w->clk.now = first + INTERVAL + TIMEOUT / 2;	/* its deadline */
	run(w);
	EXPECT_EQ(1, w->rec.n);
	EXPECT_STREQ("timeout", w->rec.r[0].detail);
	EXPECT_EQ(TIMEOUT, w->rec.r[0].rtt_ms);
	/* the overdue probe starts right after, alone */
	udp_srv_step(u);
	EXPECT_EQ(2, u->seen);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 7, &st));
	EXPECT_TRUE(st.in_flight);
	EXPECT_EQ(first + 2 * INTERVAL, st.next_ms);
}

/* After a stall of several intervals: one verdict, one start, no burst. */
TEST_F(engine, stall_skips_missed_probes)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	struct udp_srv *u;
	uint16_t port;
	uint64_t first;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	set_ok(_metadata, w, 7, &t);
	start_first(_metadata, w, 7);
	first = w->clk.now;

	w->clk.now = first + 5 * INTERVAL + 50;
	run(w);
	EXPECT_EQ(1, w->rec.n);
	EXPECT_EQ(5 * INTERVAL + 50, w->rec.r[0].rtt_ms);
	udp_srv_step(u);
	EXPECT_EQ(2, u->seen);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 7, &st));
	EXPECT_TRUE(st.in_flight);
	EXPECT_EQ(w->clk.now + INTERVAL, st.next_ms);
}

/*
 * Many checks in one engine: each starts exactly at its own schedule and
 * times out exactly at start + timeout (the heap orders them all).
 */
struct many {
	uint64_t first[300];
	int verdicts[300];
	int bad;
};

static void many_cb(void *ctx, uint64_t id, const struct xlb_hc_result *r)
{
	struct many *m = ctx;
	uint64_t start = r->at_ms - r->rtt_ms;

	if (id >= 300 || r->rtt_ms != TIMEOUT ||
	    (start - m->first[id]) % INTERVAL || start < m->first[id])
		m->bad++;
	m->verdicts[id]++;
}

TEST_F(engine, many_checks_each_on_its_own_schedule)
{
	struct world *w = &self->w;
	static struct many m;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	struct udp_srv *u;
	uint64_t id, end = T0 + 4 * INTERVAL;
	uint16_t port;
	int want;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	for (id = 0; id < 300; id++) {
		set_ok(_metadata, w, id, &t);
		ASSERT_EQ(0, xlb_hc_get(w->hc, id, &st));
		m.first[id] = st.next_ms;
	}
	for (; w->clk.now <= end; w->clk.now++) {
		xlb_hc_run(w->hc, many_cb, &m);
		udp_srv_step(u);
	}
	EXPECT_EQ(0, m.bad);
	for (id = 0; id < 300; id++) {
		/* starts s = first + k * INTERVAL with s + TIMEOUT <= end */
		want = (end - TIMEOUT - m.first[id]) / INTERVAL + 1;
		EXPECT_EQ(want, m.verdicts[id]) TH_LOG("check %lu",
						       (unsigned long)id);
	}
}

/* Random set/del/retime: xlb_hc_timeout_ms is always the earliest check. */
TEST_F(engine, timeout_ms_is_the_earliest_of_many_checks)
{
	enum { N = 4000, OPS = 6000 };
	struct xlb_hc *hc = self->w.hc;
	static bool live[N];
	struct xlb_hc_target t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, 9);
	struct xlb_hc_status st;
	uint64_t x = 12345, min, id;
	int op, i, want;

	for (op = 0; op < OPS; op++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		i = (x >> 33) % N;
		/* ids far apart and close together */
		id = i & 1 ? (uint64_t)i * 0x9e3779b97f4a7c15ULL : (uint64_t)i;
		switch ((x >> 20) % 4) {
		case 0:
			xlb_hc_del(hc, id);
			live[i] = false;
			break;
		case 1:
			self->w.clk.now += (x >> 40) % 7;
			/* fall through */
		default:
			t.cfg.interval_ms = 50 + (x >> 45) % 5000;
			t.cfg.timeout_ms = 10;
			ASSERT_EQ(0, xlb_hc_set(hc, id, &t, NULL));
			live[i] = true;
		}
		if (op % 50)
			continue;
		min = UINT64_MAX;
		for (i = 0; i < N; i++) {
			id = i & 1 ? (uint64_t)i * 0x9e3779b97f4a7c15ULL :
				     (uint64_t)i;
			ASSERT_EQ(live[i] ? 0 : -ENOENT,
				  xlb_hc_get(hc, id, &st));
			if (live[i] && st.next_ms < min)
				min = st.next_ms;
		}
		want = min == UINT64_MAX ? -1 :
		       min <= self->w.clk.now ? 0 :
		       (int)(min - self->w.clk.now);
		ASSERT_EQ(want, xlb_hc_timeout_ms(hc)) TH_LOG("op %d", op);
	}
}

/* --- set on an existing check --------------------------------------------- */

TEST_F(engine, timing_change_keeps_state_other_change_restarts)
{
	struct world *w = &self->w;
	struct xlb_hc_target t, t2;
	struct xlb_hc_status st;
	uint64_t start;
	uint16_t port;
	int lfd;

	lfd = server(XLB_FAMILY_INET, SOCK_STREAM, true, &port);
	ASSERT_LE(0, lfd);
	t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, port);
	t.cfg.rise = 1;
	set_ok(_metadata, w, 9, &t);
	start_first(_metadata, w, 9);
	start = w->clk.now;
	ASSERT_EQ(1, pump(w, 1));
	ASSERT_EQ(0, xlb_hc_get(w->hc, 9, &st));
	ASSERT_EQ(XLB_HC_UP, st.state.health);

	/* timing, and the configured health-port (t.port is what counts) */
	t2 = t;
	t2.cfg.interval_ms = 500;
	t2.cfg.timeout_ms = 200;
	t2.cfg.rise = 5;
	t2.cfg.fall = 7;
	t2.cfg.port = 1234;
	strcpy(t2.cfg.http_path, "/other");	/* not used by tcp */
	set_ok(_metadata, w, 9, &t2);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 9, &st));
	EXPECT_EQ(XLB_HC_UP, st.state.health);
	EXPECT_TRUE(st.has_result);
	EXPECT_STREQ("connected", st.last.detail);
	EXPECT_EQ(start + 500, st.next_ms);

	/* another port: a new check */
	t2.port = port + 1;
	w->clk.now += 3;
	set_ok(_metadata, w, 9, &t2);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 9, &st));
	EXPECT_EQ(XLB_HC_UNKNOWN, st.state.health);
	EXPECT_FALSE(st.has_result);
	EXPECT_EQ(0, st.state.ok_run);
	EXPECT_LE(w->clk.now, st.next_ms);
	EXPECT_GT(w->clk.now + 500, st.next_ms);
	close(lfd);
}

TEST_F(engine, restart_changes_of_kind_address_family_path_status)
{
	struct xlb_hc_target base = target(XLB_HEALTH_HTTP, XLB_FAMILY_INET,
					   80), t;
	struct xlb_hc_status st;
	int k;

	base.cfg.fall = 1;
	for (k = 0; k < 5; k++) {
		t = base;
		if (k == 0)
			t.cfg.kind = XLB_HEALTH_TCP;
		else if (k == 1)
			t.addr[0] = htonl(0x7f000002);
		else if (k == 2)
			t.family = XLB_FAMILY_INET6;
		else if (k == 3)
			strcpy(t.cfg.http_path, "/x");
		else
			t.cfg.http_status = 204;
		/* one result (refused or timeout), then the change */
		xlb_hc_del(self->w.hc, 1);
		set_ok(_metadata, &self->w, 1, &base);
		start_first(_metadata, &self->w, 1);
		self->w.clk.now += TIMEOUT;
		run(&self->w);
		ASSERT_EQ(0, xlb_hc_get(self->w.hc, 1, &st));
		ASSERT_TRUE(st.has_result);
		set_ok(_metadata, &self->w, 1, &t);
		ASSERT_EQ(0, xlb_hc_get(self->w.hc, 1, &st));
		EXPECT_FALSE(st.has_result) TH_LOG("change %d kept state", k);
		EXPECT_EQ(XLB_HC_UNKNOWN, st.state.health);
	}
}

/* A timing change keeps the probe in flight, with the new timeout. */
TEST_F(engine, retime_keeps_probe_in_flight_with_new_timeout)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	struct udp_srv *u;
	uint64_t start;
	uint16_t port;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	set_ok(_metadata, w, 3, &t);
	start_first(_metadata, w, 3);
	start = w->clk.now;
	t.cfg.timeout_ms = TIMEOUT + 20;
	set_ok(_metadata, w, 3, &t);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 3, &st));
	EXPECT_TRUE(st.in_flight);
	w->clk.now = start + TIMEOUT;
	run(w);
	EXPECT_EQ(0, w->rec.n);
	w->clk.now = start + TIMEOUT + 20;
	run(w);
	ASSERT_EQ(1, w->rec.n);
	EXPECT_EQ(TIMEOUT + 20, w->rec.r[0].rtt_ms);
	udp_srv_step(u);
	EXPECT_EQ(1, u->seen);
}

/* Restart and del close the probe's socket; the old probe never reports. */
TEST_F(engine, restart_and_del_abandon_the_probe_in_flight)
{
	struct world *w = &self->w;
	struct xlb_hc_target silent, refused;
	struct xlb_hc_status st;
	struct udp_srv *u;
	uint16_t port;
	int fds;

	u = silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	silent = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	refused = target(XLB_HEALTH_UDP, XLB_FAMILY_INET,
			 udp_port_unused(XLB_FAMILY_INET));
	set_ok(_metadata, w, 3, &silent);
	fds = count_fds();
	start_first(_metadata, w, 3);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 3, &st));
	ASSERT_TRUE(st.in_flight);
	EXPECT_EQ(fds + 1, count_fds());

	/* restart: socket closed at once, the new target's verdict only */
	set_ok(_metadata, w, 3, &refused);
	EXPECT_EQ(fds, count_fds());
	ASSERT_EQ(0, xlb_hc_get(w->hc, 3, &st));
	EXPECT_FALSE(st.in_flight);
	start_first(_metadata, w, 3);
	pump(w, 1);
	pump_until(w, 2, NULL, SETTLE_MS);
	ASSERT_EQ(1, w->rec.n);
	EXPECT_STREQ("refused", w->rec.r[0].detail);
	EXPECT_EQ(fds, count_fds());

	/* a probe in flight, then del */
	set_ok(_metadata, w, 3, &silent);
	start_first(_metadata, w, 3);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 3, &st));
	ASSERT_TRUE(st.in_flight);
	EXPECT_EQ(fds + 1, count_fds());
	xlb_hc_del(w->hc, 3);
	EXPECT_EQ(fds, count_fds());
	w->clk.now += 10 * INTERVAL;
	pump_until(w, 2, NULL, SETTLE_MS);
	EXPECT_EQ(1, w->rec.n);
	udp_srv_step(u);
	EXPECT_EQ(2, u->seen);
}

/* --- real probes on loopback, IPv4 and IPv6 ------------------------------- */

FIXTURE(net) {
	struct world w;
	struct http_srv http;
	struct udp_srv udp;
	int fd;		/* another socket the test holds */
};

FIXTURE_VARIANT(net) {
	uint8_t family;
	const char *host;	/* the Host header */
};

FIXTURE_VARIANT_ADD(net, ipv4) {
	.family = XLB_FAMILY_INET,
	.host = "127.0.0.1",
};

FIXTURE_VARIANT_ADD(net, ipv6) {
	.family = XLB_FAMILY_INET6,
	.host = "[::1]",
};

FIXTURE_SETUP(net)
{
	world_init(_metadata, &self->w);
	self->http.lfd = -1;
	self->http.cfd = -1;
	self->udp.fd = -1;
	self->fd = -1;
}

FIXTURE_TEARDOWN(net)
{
	xlb_hc_destroy(self->w.hc);
	if (self->http.lfd >= 0)
		close(self->http.lfd);
	if (self->http.cfd >= 0)
		close(self->http.cfd);
	if (self->udp.fd >= 0)
		close(self->udp.fd);
	if (self->fd >= 0)
		close(self->fd);
}

/* One probe of t (port filled in) to completion; returns its result. */
static struct xlb_hc_result probe_once(struct __test_metadata *_metadata,
				       struct world *w,
				       struct xlb_hc_target *t)
{
	struct xlb_hc_status st;
	struct xlb_hc_result r = { 0 };

	t->cfg.rise = 1;
	t->cfg.fall = 1;
	set_ok(_metadata, w, 1, t);
	start_first(_metadata, w, 1);
	EXPECT_EQ(1, pump(w, 1)) TH_LOG("no verdict within %d ms", WAIT_MS);
	if (w->rec.n < 1)
		return r;
	r = w->rec.r[0];
	EXPECT_EQ(1, w->rec.id[0]);
	EXPECT_EQ(w->clk.now, r.at_ms);
	EXPECT_EQ(0, r.rtt_ms);		/* the fake clock stood still */
	EXPECT_EQ(r.ok ? XLB_HC_UP : XLB_HC_DOWN, r.health);
	EXPECT_EQ(!r.ok, r.flipped);	/* unknown -> down is a flip */
	ASSERT_EQ(0, xlb_hc_get(w->hc, 1, &st));
	EXPECT_FALSE(st.in_flight);
	EXPECT_TRUE(st.has_result);
	EXPECT_EQ(0, memcmp(&r, &st.last, sizeof(r)));
	return r;
}

TEST_F(net, tcp_listener_is_up)
{
	struct xlb_hc_target t;
	struct xlb_hc_result r;
	uint16_t port;

	self->fd = server(variant->family, SOCK_STREAM, true, &port);
	ASSERT_LE(0, self->fd);
	t = target(XLB_HEALTH_TCP, variant->family, port);
	r = probe_once(_metadata, &self->w, &t);
	EXPECT_TRUE(r.ok);
	EXPECT_STREQ("connected", r.detail);
}

TEST_F(net, tcp_closed_port_is_refused)
{
	struct xlb_hc_target t;
	struct xlb_hc_result r;
	uint16_t port;

	/* bound, not listening: the port is ours and refuses */
	self->fd = server(variant->family, SOCK_STREAM, false, &port);
	ASSERT_LE(0, self->fd);
	t = target(XLB_HEALTH_TCP, variant->family, port);
	r = probe_once(_metadata, &self->w, &t);
	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("refused", r.detail);
}

/* An http probe against answer pieces; checks the request it sent. */
static struct xlb_hc_result http_probe(struct __test_metadata *_metadata,
				       FIXTURE_DATA(net) *self,
				       const FIXTURE_VARIANT(net) *variant,
				       const char *p0, const char *p1,
				       uint16_t expect)
{
	struct xlb_hc_target t;
	struct xlb_hc_result r;
	char want[256];
	uint16_t port = 0;

	self->http.lfd = server(variant->family, SOCK_STREAM, true, &port);
	ASSERT_LE(0, self->http.lfd);
	self->http.piece[0] = p0;
	self->http.piece[1] = p1;
	self->w.http = &self->http;
	t = target(XLB_HEALTH_HTTP, variant->family, port);
	strcpy(t.cfg.http_path, "/healthz?deep=1");
	t.cfg.http_status = expect;
	r = probe_once(_metadata, &self->w, &t);
	snprintf(want, sizeof(want),
		 "GET /healthz?deep=1 HTTP/1.0\r\nHost: %s\r\nUser-Agent: xlb-health\r\nConnection: close\r\n\r\n",
		 variant->host);
	EXPECT_STREQ(want, self->http.req);
	return r;
}

TEST_F(net, http_200_is_up)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant,
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", NULL, 200);

	EXPECT_TRUE(r.ok);
	EXPECT_STREQ("http status 200", r.detail);
}

TEST_F(net, http_503_is_down)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant,
		"HTTP/1.0 503 Service Unavailable\r\n\r\n", NULL, 200);

	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("http status 503", r.detail);
}

TEST_F(net, http_expected_status_is_what_counts)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant,
		"HTTP/1.1 204 No Content\r\n\r\n", NULL, 204);

	EXPECT_TRUE(r.ok);
	EXPECT_STREQ("http status 204", r.detail);
}

TEST_F(net, http_status_line_in_pieces)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant,
		"HTTP/1.1 2", "00 OK\r\n\r\n", 200);

	EXPECT_TRUE(r.ok);
	EXPECT_STREQ("http status 200", r.detail);
}

TEST_F(net, http_garbage_is_down)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant,
		"SSH-2.0-OpenSSH_9.2\r\n", NULL, 200);

	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("bad http answer", r.detail);
}

TEST_F(net, http_long_garbage_is_down)
{
	static char junk[4096];
	struct xlb_hc_result r;

	memset(junk, 'x', sizeof(junk) - 1);
	r = http_probe(_metadata, self, variant, junk, NULL, 200);

	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("bad http answer", r.detail);
}

TEST_F(net, http_close_without_answer_is_down)
{
	struct xlb_hc_result r = http_probe(_metadata, self, variant, "",
					    NULL, 200);

	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("bad http answer", r.detail);
}

/* A server that takes the request and never answers: "timeout". */
static bool request_complete(struct world *w)
{
	return strstr(w->http->req, "\r\n\r\n") != NULL;
}

TEST_F(net, http_silent_server_times_out_at_start_plus_timeout)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	uint64_t start;
	uint16_t port;

	self->http.lfd = server(variant->family, SOCK_STREAM, true, &port);
	ASSERT_LE(0, self->http.lfd);
	w->http = &self->http;	/* no pieces: it never answers */
	t = target(XLB_HEALTH_HTTP, variant->family, port);
	set_ok(_metadata, w, 1, &t);
	start_first(_metadata, w, 1);
	start = w->clk.now;

	/* let the request arrive (real time), the fake clock stands still */
	pump_until(w, 1, request_complete, WAIT_MS);
	ASSERT_TRUE(request_complete(w));
	EXPECT_EQ(0, w->rec.n);

	w->clk.now = start + TIMEOUT - 1;
	run(w);
	EXPECT_EQ(0, w->rec.n);
	EXPECT_EQ(1, xlb_hc_timeout_ms(w->hc));
	w->clk.now = start + TIMEOUT;
	run(w);
	ASSERT_EQ(1, w->rec.n);
	EXPECT_FALSE(w->rec.r[0].ok);
	EXPECT_STREQ("timeout", w->rec.r[0].detail);
	EXPECT_EQ(start + TIMEOUT, w->rec.r[0].at_ms);
	EXPECT_EQ(TIMEOUT, w->rec.r[0].rtt_ms);
}

TEST_F(net, udp_answer_is_up)
{
	struct xlb_hc_target t;
	struct xlb_hc_result r;
	uint16_t port;

	self->udp.fd = server(variant->family, SOCK_DGRAM, false, &port);
	ASSERT_LE(0, self->udp.fd);
	self->udp.echo = true;
	self->w.udp = &self->udp;
	t = target(XLB_HEALTH_UDP, variant->family, port);
	r = probe_once(_metadata, &self->w, &t);
	EXPECT_TRUE(r.ok);
	EXPECT_STREQ("answered", r.detail);
	EXPECT_STREQ("xlb-health\n", self->udp.last);
}

/* An answer waiting when xlb_hc_run comes late counts, not the deadline. */
TEST_F(net, answer_ready_before_a_late_run_counts)
{
	struct world *w = &self->w;
	struct pollfd p = { .events = POLLIN };
	struct xlb_hc_target t;
	uint16_t port;
	uint64_t start;

	self->udp.fd = server(variant->family, SOCK_DGRAM, false, &port);
	ASSERT_LE(0, self->udp.fd);
	self->udp.echo = true;
	t = target(XLB_HEALTH_UDP, variant->family, port);
	set_ok(_metadata, w, 1, &t);
	start_first(_metadata, w, 1);
	start = w->clk.now;

	/* the server answers; the engine's fd becomes readable */
	p.fd = self->udp.fd;
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));
	udp_srv_step(&self->udp);
	ASSERT_EQ(1, self->udp.seen);
	p.fd = xlb_hc_fd(w->hc);
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));

	w->clk.now = start + TIMEOUT + 5;
	run(w);
	ASSERT_EQ(1, w->rec.n);
	EXPECT_TRUE(w->rec.r[0].ok);
	EXPECT_STREQ("answered", w->rec.r[0].detail);
	EXPECT_EQ(TIMEOUT + 5, w->rec.r[0].rtt_ms);
}

TEST_F(net, udp_no_listener_is_refused)
{
	struct xlb_hc_target t;
	struct xlb_hc_result r;

	t = target(XLB_HEALTH_UDP, variant->family,
		   udp_port_unused(variant->family));
	r = probe_once(_metadata, &self->w, &t);
	EXPECT_FALSE(r.ok);
	EXPECT_STREQ("refused", r.detail);
}

/* --- resources ------------------------------------------------------------ */

TEST(no_fd_leak_after_destroy_with_probes_in_flight)
{
	struct world w;
	struct xlb_hc_target t;
	struct http_srv h = { .cfd = -1 };
	struct udp_srv u = { 0 };
	uint16_t hport, uport, tport;
	int lfd, fds, before, id = 0, i;

	h.lfd = server(XLB_FAMILY_INET, SOCK_STREAM, true, &hport);
	u.fd = server(XLB_FAMILY_INET6, SOCK_DGRAM, false, &uport);
	lfd = server(XLB_FAMILY_INET, SOCK_STREAM, true, &tport);
	ASSERT_LE(0, h.lfd);
	ASSERT_LE(0, u.fd);
	ASSERT_LE(0, lfd);
	before = count_fds();

	world_init(_metadata, &w);
	for (i = 0; i < 30; i++) {
		t = target(XLB_HEALTH_HTTP, XLB_FAMILY_INET, hport);
		set_ok(_metadata, &w, id++, &t);
		t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET6, uport);
		set_ok(_metadata, &w, id++, &t);
		t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, tport);
		set_ok(_metadata, &w, id++, &t);
	}
	w.clk.now += INTERVAL - 1;
	run(&w);
	/* the 30 tcp probes finish, http and udp ones wait for answers */
	pump(&w, 30);
	EXPECT_EQ(30, w.rec.n);
	fds = count_fds();
	EXPECT_EQ(before + 1 + 60, fds);	/* the epoll fd and 60 probes */
	xlb_hc_destroy(w.hc);
	EXPECT_EQ(before, count_fds());
	close(h.lfd);
	close(u.fd);
	close(lfd);
}

/* Out of fds on this host: no verdict, the backend is not blamed. */
TEST_F(engine, local_failure_skips_without_verdict)
{
	struct world *w = &self->w;
	struct xlb_hc_target t;
	struct xlb_hc_status st;
	struct rlimit old, low;
	int *fill, n_fill = 0;
	uint16_t port;
	uint64_t first;

	silent_udp(_metadata, w, XLB_FAMILY_INET, &port);
	t = target(XLB_HEALTH_UDP, XLB_FAMILY_INET, port);
	t.cfg.fall = 1;
	set_ok(_metadata, w, 1, &t);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 1, &st));
	first = st.next_ms;

	/* a low limit, and every fd below it taken */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = max_fd() + 8;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	fill = calloc(low.rlim_cur, sizeof(*fill));
	ASSERT_NE(NULL, fill);
	while (n_fill < (int)low.rlim_cur && (fill[n_fill] = dup(0)) >= 0)
		n_fill++;
	EXPECT_EQ(EMFILE, errno);
	w->clk.now = first;
	run(w);
	while (n_fill)
		close(fill[--n_fill]);
	free(fill);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));

	EXPECT_EQ(0, w->rec.n);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 1, &st));
	EXPECT_EQ(1, st.skipped);
	EXPECT_FALSE(st.in_flight);
	EXPECT_EQ(XLB_HC_UNKNOWN, st.state.health);
	EXPECT_EQ(first + INTERVAL, st.next_ms);

	/* with fds again, the next probe runs */
	w->clk.now = first + INTERVAL;
	run(w);
	ASSERT_EQ(0, xlb_hc_get(w->hc, 1, &st));
	EXPECT_TRUE(st.in_flight);
}

/* The callback may delete checks, including ones with answers pending. */
struct reentry {
	struct xlb_hc *hc;
	int calls;
	uint64_t first;
	struct xlb_hc_target t;
	int set_ret;
};

static void reentry_cb(void *ctx, uint64_t id, const struct xlb_hc_result *r)
{
	struct reentry *re = ctx;
	uint64_t i;

	(void)r;
	if (id >= 100)
		return;
	if (!re->calls++) {
		re->first = id;
		for (i = 0; i < 20; i++)
			xlb_hc_del(re->hc, i);
		re->set_ret = xlb_hc_set(re->hc, 100, &re->t, NULL);
	}
}

TEST_F(engine, callback_may_delete_and_add_checks)
{
	struct world *w = &self->w;
	struct reentry re = { .hc = w->hc };
	struct xlb_hc_status st;
	uint64_t end;
	uint16_t port;
	int lfd, i;

	lfd = server(XLB_FAMILY_INET, SOCK_STREAM, true, &port);
	ASSERT_LE(0, lfd);
	re.t = target(XLB_HEALTH_TCP, XLB_FAMILY_INET, port);
	for (i = 0; i < 20; i++)
		set_ok(_metadata, w, i, &re.t);
	w->clk.now += INTERVAL - 1;	/* all due */
	end = real_ms() + SETTLE_MS;
	while (real_ms() < end) {
		struct pollfd p = { .fd = xlb_hc_fd(w->hc), .events = POLLIN };

		poll(&p, 1, 20);
		xlb_hc_run(w->hc, reentry_cb, &re);
	}
	/* 20 connections were ready together; the first verdict deleted all */
	EXPECT_EQ(1, re.calls);
	EXPECT_EQ(0, re.set_ret);
	for (i = 0; i < 20; i++)
		EXPECT_EQ(-ENOENT, xlb_hc_get(w->hc, i, &st));
	EXPECT_EQ(0, xlb_hc_get(w->hc, 100, &st));
	close(lfd);
}

TEST_HARNESS_MAIN
