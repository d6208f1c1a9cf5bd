// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic serve: the backend's TCP echo and UDP request/response
 * servers; every reply carries the server's id.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "mono.h"
#include "traffic.h"

#define SRV_OUT		16384	/* a server connection's output buffer */

enum skind { K_LISTEN, K_CONN, K_UDP };

struct sobj {
	enum skind kind;
	int fd;
	/* K_CONN */
	uint8_t hdr[REQ_HLEN];
	uint32_t hlen;		/* header bytes so far */
	uint32_t body;		/* payload bytes still to echo */
	bool in_body;
	bool rd_closed;
	uint32_t events;
	uint32_t head, tail;	/* pending output in out[head, tail) */
	uint8_t *out;
};

struct server {
	int ep;
	char id[ID_LEN];
	struct sobj *listeners[2];
	int nlisten;
	bool accept_paused;
	uint64_t accepted, open, requests, udp_requests, bad;
};

static struct sobj *sobj_new(enum skind kind, int fd)
{
	struct sobj *s = calloc(1, sizeof(*s));

	if (!s)
		die("out of memory");
	s->kind = kind;
	s->fd = fd;
	return s;
}

static int bind_socket(int family, int type, const struct sockaddr *sa,
		       socklen_t len)
{
	int fd, one = 1;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		/*
		 * Reply from the address asked (the VIP), not the route's;
		 * freebind lets that be any address of a local route (a VIP
		 * range on lo), which IPv6 otherwise refuses as a source.
		 */
		setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
		if (family == AF_INET)
			setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one,
				   sizeof(one));
		else
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
				   sizeof(one));
	}
	if (bind(fd, sa, len)) {
		char b[80];

		die("bind %s %s: %s", type == SOCK_DGRAM ? "udp" : "tcp",
		    sa_str((const struct sockaddr_storage *)sa, b, sizeof(b)),
		    strerror(errno));
	}
	if (type == SOCK_STREAM && listen(fd, 4096))
		die("listen: %s", strerror(errno));
	return fd;
}

static void serve_close(struct server *sv, struct sobj *s)
{
	int i;

	epoll_ctl(sv->ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	free(s->out);
	free(s);
	sv->open--;
	if (sv->accept_paused) {
		for (i = 0; i < sv->nlisten; i++)
			epoll_set(sv->ep, EPOLL_CTL_MOD, sv->listeners[i]->fd,
				  EPOLLIN, sv->listeners[i]);
		sv->accept_paused = false;
	}
}

static void serve_accept(struct server *sv, struct sobj *l)
{
	struct sobj *s;
	int fd, i, one = 1;

	for (i = 0; i < 256; i++) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* out of descriptors: wait for a close */
				for (i = 0; i < sv->nlisten; i++)
					epoll_set(sv->ep, EPOLL_CTL_MOD,
						  sv->listeners[i]->fd, 0,
						  sv->listeners[i]);
				sv->accept_paused = true;
			}
			return;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		s = sobj_new(K_CONN, fd);
		s->out = malloc(SRV_OUT);
		s->events = EPOLLIN;
		if (!s->out || epoll_set(sv->ep, EPOLL_CTL_ADD, fd, EPOLLIN, s)) {
			close(fd);
			free(s->out);
			free(s);
			continue;
		}
		sv->accepted++;
		sv->open++;
	}
}

/* Turn request bytes into reply bytes in s->out; -1 on a bad request. */
static int serve_consume(struct server *sv, struct sobj *s, const uint8_t *p,
			 uint32_t n)
{
	uint32_t k, i = 0;

	while (i < n) {
		if (!s->in_body) {
			k = REQ_HLEN - s->hlen;
			if (k > n - i)
				k = n - i;
			memcpy(s->hdr + s->hlen, p + i, k);
			s->hlen += k;
			i += k;
			if (s->hlen < REQ_HLEN)
				break;
			if (get32(s->hdr) != REQ_MAGIC ||
			    get32(s->hdr + 8) > TCP_LEN_MAX)
				return -1;
			memcpy(s->out + s->tail, s->hdr, 4);
			put32(s->out + s->tail, RSP_MAGIC);
			memcpy(s->out + s->tail + 4, s->hdr + 4, 8);
			memcpy(s->out + s->tail + 12, sv->id, ID_LEN);
			s->tail += RSP_HLEN;
			s->body = get32(s->hdr + 8);
			s->hlen = 0;
			s->in_body = s->body > 0;
			sv->requests++;
			continue;
		}
		k = s->body < n - i ? s->body : n - i;
		memcpy(s->out + s->tail, p + i, k);
		s->tail += k;
		s->body -= k;
		i += k;
		s->in_body = s->body > 0;
	}
	return 0;
}

static void serve_conn(struct server *sv, struct sobj *s, uint32_t ev)
{
	uint8_t buf[SRV_OUT];
	uint32_t room, want;
	ssize_t n;
	int i;

	if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN)) {
		serve_close(sv, s);
		return;
	}
	for (i = 0; i < 16; i++) {
		if (s->head == s->tail)
			s->head = s->tail = 0;
		if (s->head) {
			memmove(s->out, s->out + s->head, s->tail - s->head);
			s->tail -= s->head;
			s->head = 0;
		}
		/* flush what is pending */
		if (s->tail) {
			n = send(s->fd, s->out, s->tail,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				serve_close(sv, s);
				return;
			}
			if (n > 0)
				s->head = n;
			if (n > 0 && s->head == s->tail)
				continue;	/* compact, then read more */
			if (n <= 0 || s->head < s->tail)
				break;
		}
		if (s->rd_closed)
			break;
		/* a 12-byte header turns into 32 bytes of reply */
		room = SRV_OUT - s->tail;
		if (room < 64)
			break;
		want = (room - RSP_HLEN) * REQ_HLEN / RSP_HLEN;
		n = recv(s->fd, buf, want, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			serve_close(sv, s);
			return;
		}
		if (n == 0) {
			s->rd_closed = true;
			continue;
		}
		if (serve_consume(sv, s, buf, n)) {
			sv->bad++;
			serve_close(sv, s);
			return;
		}
	}
	if (s->rd_closed && s->head == s->tail) {
		serve_close(sv, s);
		return;
	}
	want = (s->rd_closed || SRV_OUT - s->tail + s->head < 64 ? 0 : EPOLLIN) |
	       (s->head < s->tail ? EPOLLOUT : 0);
	if (want != s->events &&
	    !epoll_set(sv->ep, EPOLL_CTL_MOD, s->fd, want, s))
		s->events = want;
}

static void serve_udp(struct server *sv, struct sobj *s)
{
	static uint8_t buf[65536], out[65536];
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} cb;
	struct sockaddr_storage peer;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	uint32_t len;
	ssize_t n;
	int i;

	for (i = 0; i < 256; i++) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		memset(&mh, 0, sizeof(mh));
		mh.msg_name = &peer;
		mh.msg_namelen = sizeof(peer);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.buf;
		mh.msg_controllen = sizeof(cb.buf);
		n = recvmsg(s->fd, &mh, MSG_DONTWAIT);
		if (n < 0)
			return;
		len = n >= REQ_HLEN ? get32(buf + 8) : 0;
		if (n < REQ_HLEN || get32(buf) != UREQ_MAGIC ||
		    len != (uint32_t)n - REQ_HLEN || len > UDP_LEN_MAX) {
			sv->bad++;
			continue;
		}
		put32(out, URSP_MAGIC);
		memcpy(out + 4, buf + 4, 8);
		memcpy(out + 12, sv->id, ID_LEN);
		memcpy(out + RSP_HLEN, buf + REQ_HLEN, len);
		/* answer from the address the request went to */
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == IPPROTO_IP &&
			    cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo *pi = (void *)CMSG_DATA(cm);

				pi->ipi_spec_dst = pi->ipi_addr;
				pi->ipi_ifindex = 0;
			} else if (cm->cmsg_level == IPPROTO_IPV6 &&
				   cm->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo *pi = (void *)CMSG_DATA(cm);

				pi->ipi6_ifindex = 0;
			}
		}
		iov.iov_base = out;
		iov.iov_len = RSP_HLEN + len;
		mh.msg_flags = 0;
		if (sendmsg(s->fd, &mh, MSG_DONTWAIT) >= 0)
			sv->udp_requests++;
	}
}

static const struct option serve_longopts[] = {
	{ "tcp", required_argument, NULL, OPT_TCP },
	{ "udp", required_argument, NULL, OPT_UDP },
	{ "id", required_argument, NULL, OPT_ID },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "max-seconds", required_argument, NULL, OPT_MAX },
	{ "ready", required_argument, NULL, OPT_READY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void serve_open(struct server *sv, const char *bind_addr, int type,
		       uint16_t port, struct sobj **udp_out)
{
	static const char *const any[] = { "0.0.0.0", "::" };
	struct sockaddr_storage ss;
	struct sobj *s;
	socklen_t len;
	int i, fd;

	for (i = 0; i < 2; i++) {
		if (bind_addr && i)
			break;
		if (!parse_ip(bind_addr ? bind_addr : any[i], &ss, &len, port))
			die("--bind: '%s' is not an IPv4 or IPv6 address",
			    bind_addr);
		fd = bind_socket(ss.ss_family, type,
				 (struct sockaddr *)&ss, len);
		s = sobj_new(type == SOCK_STREAM ? K_LISTEN : K_UDP, fd);
		if (epoll_set(sv->ep, EPOLL_CTL_ADD, fd, EPOLLIN, s))
			die("epoll: %s", strerror(errno));
		if (type == SOCK_STREAM)
			sv->listeners[sv->nlisten++] = s;
		else
			udp_out[i] = s;
	}
}

int cmd_serve(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS];
	const char *bind_addr = NULL, *ready = NULL;
	struct sobj *udp[2] = { NULL, NULL }, *s;
	uint16_t tcp_port = 0, udp_port = 0;
	struct server sv = { 0 };
	double end, max = 3600;
	char host[64] = "";
	int c, n, k;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", serve_longopts,
				NULL)) != -1) {
		switch (c) {
		case OPT_TCP:
			tcp_port = parse_num(optarg, "--tcp", 1, 65535);
			break;
		case OPT_UDP:
			udp_port = parse_num(optarg, "--udp", 1, 65535);
			break;
		case OPT_ID:
			if (strlen(optarg) > ID_LEN ||
			    !id_ok(optarg, strlen(optarg)))
				die("--id: '%s': 1 to %d of A-Z a-z 0-9 . _ - :",
				    optarg, ID_LEN);
			strncpy(host, optarg, sizeof(host) - 1);
			break;
		case OPT_BIND:
			bind_addr = optarg;
			break;
		case OPT_MAX:
			max = parse_real(optarg, "--max-seconds", 0.001, 1e7);
			break;
		case OPT_READY:
			ready = optarg;
			break;
		default:
			usage_exit(c);
		}
	}
	no_operands(argc, argv);
	if (!tcp_port && !udp_port)
		tcp_port = udp_port = 80;
	if (!*host) {
		gethostname(host, sizeof(host) - 1);
		for (k = 0; host[k]; k++)
			if (!id_char_ok(host[k]))
				host[k] = '_';
		host[ID_LEN] = 0;
	}
	memset(sv.id, 0, ID_LEN);
	memcpy(sv.id, host, strlen(host) < ID_LEN ? strlen(host) : ID_LEN);
	sv.ep = epoll_create1(EPOLL_CLOEXEC);
	if (sv.ep < 0)
		die("epoll: %s", strerror(errno));
	if (tcp_port)
		serve_open(&sv, bind_addr, SOCK_STREAM, tcp_port, NULL);
	if (udp_port)
		serve_open(&sv, bind_addr, SOCK_DGRAM, udp_port, udp);
	write_ready(ready);
	fprintf(stderr, "serve: id %.*s, tcp %u, udp %u, %s\n", ID_LEN, sv.id,
		tcp_port, udp_port, bind_addr ? bind_addr : "any address");
	end = xlb_mono_s() + max;
	while (!stop_sig && xlb_mono_s() < end) {
		n = epoll_wait(sv.ep, evs, MAX_EVENTS, 200);
		for (k = 0; k < n; k++) {
			s = evs[k].data.ptr;
			if (s->kind == K_LISTEN)
				serve_accept(&sv, s);
			else if (s->kind == K_UDP)
				serve_udp(&sv, s);
			else
				serve_conn(&sv, s, evs[k].events);
		}
	}
	fprintf(stderr, "serve: %s; %llu connections, %llu requests, "
		"%llu udp requests, %llu bad\n",
		stop_sig ? "stopped" : "--max-seconds reached",
		(unsigned long long)sv.accepted,
		(unsigned long long)sv.requests,
		(unsigned long long)sv.udp_requests,
		(unsigned long long)sv.bad);
	return 0;
}
