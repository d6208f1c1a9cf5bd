// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: TCP client connections, shared by conns and hold: connect,
 * send a request, verify the echo.
 */
#include <errno.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>

#include "mono.h"
#include "traffic.h"

#define CHUNK		16384

int failure_lines;

void cconn_note(const struct copts *o, const struct cconn *c)
{
	if (!o->verbose || failure_lines >= 20)
		return;
	failure_lines++;
	fprintf(stderr, "%s: connection %llu: %s%s%s\n", prog,
		(unsigned long long)c->idx, reason_name[c->why],
		c->err ? ": " : "", c->err ? strerror(c->err) : "");
}

void cconn_close(struct cconn *c, int ep)
{
	if (c->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
}

/* Mark broken; returns -1 for the callers' convenience. */
int cconn_fail(struct cconn *c, enum reason why, int err)
{
	c->state = C_BROKEN;
	c->why = why;
	c->err = err;
	return -1;
}

static void cconn_interest(struct cconn *c, int ep)
{
	uint32_t ev = EPOLLIN;

	if (c->state == C_CONNECTING || (c->busy &&
					 c->sent < REQ_HLEN + c->len))
		ev = EPOLLOUT | (c->state == C_CONNECTING ? 0 : EPOLLIN);
	if (ev != c->events && !epoll_set(ep, EPOLL_CTL_MOD, c->fd, ev, c))
		c->events = ev;
}

/* Start a nonblocking connect; -1 if it failed at once (c broken). */
int cconn_open(struct cconn *c, const struct copts *o, int ep,
	       uint64_t idx)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->idx = idx;
	c->backend = -1;
	c->fd = socket(o->to.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return cconn_fail(c, R_ERROR, errno);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->state = C_CONNECTING;
	c->deadline = xlb_mono_s() + o->timeout;
	if (connect(c->fd, (const struct sockaddr *)&o->to, o->tolen) &&
	    errno != EINPROGRESS) {
		cconn_fail(c, errno_reason(errno), errno);
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	c->events = EPOLLOUT;
	if (epoll_set(ep, EPOLL_CTL_ADD, c->fd, c->events, c)) {
		cconn_fail(c, R_ERROR, errno);
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static int cconn_send(struct cconn *c)
{
	uint32_t total = REQ_HLEN + c->len, k, off;
	uint8_t buf[CHUNK];
	ssize_t n;
	int i;

	/* bounded: each round sends bytes or returns */
	for (i = 0; c->sent < total && i < 64; i++) {
		off = c->sent;
		k = 0;
		if (off < REQ_HLEN) {
			uint8_t h[REQ_HLEN];

			put32(h, REQ_MAGIC);
			put32(h + 4, c->seq);
			put32(h + 8, c->len);
			k = REQ_HLEN - off;
			memcpy(buf, h + off, k);
			off = REQ_HLEN;
		}
		if (total - off > sizeof(buf) - k) {
			pattern(c->seed, off - REQ_HLEN, buf + k,
				sizeof(buf) - k);
			k = sizeof(buf);
		} else {
			pattern(c->seed, off - REQ_HLEN, buf + k, total - off);
			k += total - off;
		}
		n = send(c->fd, buf, k, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return cconn_fail(c, errno_reason(errno), errno);
		}
		c->sent += n;
	}
	return 0;
}

/* Check a reply header; records the backend. */
static int cconn_header(struct cconn *c)
{
	int b;

	if (get32(c->rhdr) != RSP_MAGIC || get32(c->rhdr + 4) != c->seq ||
	    get32(c->rhdr + 8) != c->len ||
	    !id_ok((const char *)c->rhdr + 12, ID_LEN))
		return cconn_fail(c, R_BAD_HEADER, 0);
	b = id_index((const char *)c->rhdr + 12);
	if (b < 0)
		return cconn_fail(c, R_BAD_HEADER, 0);
	if (c->backend >= 0 && c->backend != b)
		return cconn_fail(c, R_ID_CHANGED, 0);
	c->backend = b;
	return 0;
}

/* Read what is there; 1 when the reply is complete, 0 for more, -1 broken. */
static int cconn_recv(struct cconn *c)
{
	uint8_t buf[CHUNK], want[CHUNK];
	uint32_t total = RSP_HLEN + c->len, room, h;
	ssize_t n;
	int i;

	for (i = 0; i < 64; i++) {
		room = c->busy ? total - c->rcvd : sizeof(buf);
		n = recv(c->fd, buf, room < sizeof(buf) ? room : sizeof(buf),
			 MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return cconn_fail(c, errno_reason(errno), errno);
		}
		if (n == 0)
			return cconn_fail(c, R_EOF, 0);
		if (!c->busy)	/* nothing was asked */
			return cconn_fail(c, R_BAD_HEADER, 0);
		h = 0;
		if (c->rcvd < RSP_HLEN) {
			h = RSP_HLEN - c->rcvd;
			if (h > n)
				h = n;
			memcpy(c->rhdr + c->rcvd, buf, h);
			c->rcvd += h;
			if (c->rcvd == RSP_HLEN && cconn_header(c))
				return -1;
		}
		if (n > h) {
			pattern(c->seed, c->rcvd - RSP_HLEN, want, n - h);
			if (memcmp(buf + h, want, n - h))
				return cconn_fail(c, R_BAD_DATA, 0);
			c->rcvd += n - h;
		}
		if (c->rcvd == total) {
			c->busy = false;
			return 1;
		}
	}
	return 0;
}

void cconn_request(struct cconn *c, const struct copts *o, int ep)
{
	c->seq++;
	c->len = o->bytes;
	c->seed = xlb_mix64(o->seed ^ xlb_mix64(c->idx << 24 ^ c->seq));
	c->sent = c->rcvd = 0;
	c->busy = true;
	c->deadline = xlb_mono_s() + o->timeout;
	if (!cconn_send(c))
		cconn_interest(c, ep);
}

/* Handle an event; 1: a reply completed, 0: nothing yet, -1: broken. */
int cconn_event(struct cconn *c, const struct copts *o, int ep,
		uint32_t ev)
{
	socklen_t sl = sizeof(int);
	int err = 0, r;

	if (c->state == C_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl))
			err = errno;
		if (err)
			return cconn_fail(c, errno_reason(err), err);
		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return 0;
		c->state = C_OPEN;
		cconn_request(c, o, ep);
		return c->state == C_BROKEN ? -1 : 0;
	}
	if (ev & EPOLLOUT && c->busy && cconn_send(c))
		return -1;
	r = 0;
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
		r = cconn_recv(c);
	if (r >= 0 && c->state != C_BROKEN)
		cconn_interest(c, ep);
	return c->state == C_BROKEN ? -1 : r;
}
