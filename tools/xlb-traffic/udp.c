// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic udp: UDP requests and replies, verified, counted per backend.
 */
#include <errno.h>
#include <netinet/ip_icmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "mono.h"
#include "traffic.h"

struct uslot {
	int fd;			/* -1: idle */
	uint64_t idx;
	uint32_t tries;
	double deadline;
};

static int udp_send(struct uslot *s, const struct copts *o, uint8_t *buf)
{
	put32(buf, UREQ_MAGIC);
	put32(buf + 4, (uint32_t)s->idx);
	put32(buf + 8, o->bytes);
	pattern(xlb_mix64(o->seed ^ s->idx), 0, buf + REQ_HLEN, o->bytes);
	s->tries++;
	s->deadline = xlb_mono_s() + o->timeout;
	if (send(s->fd, buf, REQ_HLEN + o->bytes, 0) < 0 &&
	    errno != ECONNREFUSED)
		return -errno;
	return 0;
}

/* Source ports this run has used: a new request is a new flow. */
static uint8_t udp_ports_used[65536 / 8];

/* The local port of fd, or 0. */
static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
		     ((struct sockaddr_in *)&ss)->sin_port :
		     ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int udp_open(struct uslot *s, const struct copts *o, int ep,
		    uint8_t *buf)
{
	uint16_t port;
	int err, i;

	/*
	 * The kernel picks source ports at random, so a few hundred requests
	 * in, some would repeat an earlier flow (same backend, same
	 * connection entry) and the per-backend counts would no longer be
	 * independent samples.  A few more tries find a fresh port.
	 */
	for (i = 0; i < 16; i++) {
		s->fd = socket(o->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
		if (s->fd < 0)
			return -errno;
		if (connect(s->fd, (const struct sockaddr *)&o->to,
			    o->tolen)) {
			err = -errno;
			close(s->fd);
			s->fd = -1;
			return err;
		}
		port = local_port(s->fd);
		if (!(udp_ports_used[port / 8] & 1 << port % 8))
			break;
		close(s->fd);
	}
	if (i == 16) {	/* all taken: take one more at random */
		s->fd = socket(o->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
		if (s->fd < 0 || connect(s->fd, (const struct sockaddr *)&o->to,
					 o->tolen))
			goto fail;
		port = local_port(s->fd);
	}
	udp_ports_used[port / 8] |= 1 << port % 8;
	if (epoll_set(ep, EPOLL_CTL_ADD, s->fd, EPOLLIN, s))
		goto fail;
	s->tries = 0;
	return udp_send(s, o, buf);
fail:
	err = -errno;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return err;
}

/* 1: a good reply (backend in *b), 0: nothing yet, -reason-1: failed. */
static int udp_recv(struct uslot *s, const struct copts *o, uint8_t *buf,
		    uint8_t *want, int *b)
{
	ssize_t n;

	n = recv(s->fd, buf, 65536, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return -(int)errno_reason(errno) - 1;
	}
	/* each request has its own socket; retries repeat its seq */
	if (n < RSP_HLEN || get32(buf) != URSP_MAGIC ||
	    get32(buf + 4) != (uint32_t)s->idx || get32(buf + 8) != o->bytes ||
	    (size_t)n != RSP_HLEN + o->bytes ||
	    !id_ok((char *)buf + 12, ID_LEN))
		return -R_BAD_HEADER - 1;
	pattern(xlb_mix64(o->seed ^ s->idx), 0, want, o->bytes);
	if (memcmp(buf + RSP_HLEN, want, o->bytes))
		return -R_BAD_DATA - 1;
	*b = id_index((char *)buf + 12);
	return *b < 0 ? -R_BAD_HEADER - 1 : 1;
}

static void udp_done(struct uslot *s, int ep)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

int cmd_udp(int argc, char **argv)
{
	uint64_t count[MAX_IDS] = { 0 }, reasons[R_COUNT] = { 0 };
	uint64_t launched = 0, done = 0, failed = 0;
	struct epoll_event evs[MAX_EVENTS];
	uint8_t *buf, *want;
	struct uslot *slots, *s;
	double t0, end, now;
	struct copts o;
	int ep, n, k, r, b = 0;
	uint32_t i;

	parse_client(argc, argv, 'u', &o);
	if (o.conc > o.n)
		o.conc = o.n;
	slots = calloc(o.conc, sizeof(*slots));
	buf = malloc(65536);
	want = malloc(65536);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!slots || !buf || !want || ep < 0)
		die("setup: %s", strerror(errno));
	for (i = 0; i < o.conc; i++)
		slots[i].fd = -1;
	t0 = now = xlb_mono_s();
	end = t0 + o.max_seconds;
	while (done + failed < o.n && !stop_sig && now < end) {
		for (i = 0; i < o.conc && launched < o.n; i++) {
			s = &slots[i];
			if (s->fd >= 0)
				continue;
			s->idx = launched++;
			r = udp_open(s, &o, ep, buf);
			if (r) {
				reasons[errno_reason(-r)]++;
				failed++;
				if (s->fd >= 0)
					udp_done(s, ep);
			}
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 10);
		for (k = 0; k < n; k++) {
			s = evs[k].data.ptr;
			r = udp_recv(s, &o, buf, want, &b);
			if (!r)
				continue;
			if (r > 0) {
				count[b]++;
				done++;
			} else {
				reasons[-r - 1]++;
				failed++;
				if (o.verbose && failure_lines++ < 20)
					fprintf(stderr, "%s: request %llu: %s\n",
						prog, (unsigned long long)s->idx,
						reason_name[-r - 1]);
			}
			udp_done(s, ep);
		}
		now = xlb_mono_s();
		for (i = 0; i < o.conc; i++) {
			s = &slots[i];
			if (s->fd < 0 || now < s->deadline)
				continue;
			if (s->tries <= o.retries && !udp_send(s, &o, buf))
				continue;
			reasons[R_TIMEOUT]++;
			failed++;
			udp_done(s, ep);
		}
	}
	for (i = 0; i < o.conc; i++) {
		if (slots[i].fd < 0)
			continue;
		reasons[R_TIMEOUT]++;
		failed++;
		udp_done(&slots[i], ep);
	}
	close(ep);
	free(slots);
	free(buf);
	free(want);
	return report_counts("udp", &o, count, reasons, done, failed,
			     xlb_mono_s() - t0);
}
