// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: addresses and epoll.
 */
#include <arpa/inet.h>
#include <string.h>
#include <sys/epoll.h>

#include "traffic.h"

bool parse_ip(const char *s, struct sockaddr_storage *ss,
	      socklen_t *len, uint16_t port)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return true;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return true;
	}
	return false;
}

/* "A.B.C.D:PORT" or "[V6]:PORT" */
void parse_hostport(const char *s, struct sockaddr_storage *ss,
		    socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hl;

	colon = strrchr(s, ':');
	if (!colon)
		die("--to: '%s' is not ADDR:PORT ([ADDR]:PORT for IPv6)", s);
	hl = colon - s;
	if (*s == '[') {
		if (hl < 2 || s[hl - 1] != ']')
			die("--to: '%s' is not [IPV6]:PORT", s);
		h = s + 1;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		die("--to: '%s': address too long", s);
	memcpy(host, h, hl);
	host[hl] = 0;
	if (!parse_ip(host, ss, len,
		      parse_num(colon + 1, "--to port", 1, 65535)))
		die("--to: '%s' is not an IPv4 or IPv6 address", host);
	if (ss->ss_family == AF_INET6 && *s != '[')
		die("--to: write IPv6 as [ADDR]:PORT");
}

const char *sa_str(const struct sockaddr_storage *ss, char *buf,
		   size_t n)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, n, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, n, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return buf;
}

int epoll_set(int ep, int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(ep, op, fd, &ev);
}
