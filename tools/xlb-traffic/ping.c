// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic ping: ICMP/ICMPv6 echo (test hosts need no ping binary).
 */
#include <errno.h>
#include <netinet/icmp6.h>
#include <netinet/ip_icmp.h>
#include <stdlib.h>

#include "mono.h"
#include "traffic.h"

static uint16_t csum16(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Is buf (n bytes from the raw socket) our echo reply? */
static bool ping_match(int family, const uint8_t *buf, ssize_t n,
		       uint16_t id, uint16_t seq)
{
	size_t hl = 0;

	if (family == AF_INET) {
		if (n < 20)
			return false;
		hl = (buf[0] & 0xf) * 4;
		if ((size_t)n < hl + 8 || buf[hl] != ICMP_ECHOREPLY)
			return false;
	} else if (n < 8 || buf[0] != ICMP6_ECHO_REPLY) {
		return false;
	}
	return (buf[hl + 4] << 8 | buf[hl + 5]) == id &&
	       (buf[hl + 6] << 8 | buf[hl + 7]) == seq;
}

int cmd_ping(int argc, char **argv)
{
	struct sockaddr_storage to;
	uint8_t pkt[64], buf[1500];
	uint16_t id = getpid() & 0xffff;
	double wait = 1, t0, end;
	uint64_t count = 3, i;
	socklen_t len;
	ssize_t n;
	int fd, c;

	optind = 1;
	while ((c = getopt(argc, argv, "c:W:h")) != -1) {
		switch (c) {
		case 'c':
			count = parse_num(optarg, "-c", 1, 100);
			break;
		case 'W':
			wait = parse_num(optarg, "-W", 1, 60000) / 1000.0;
			break;
		default:
			usage_exit(c);
		}
	}
	if (optind != argc - 1)
		die("ping: one address expected");
	if (!parse_ip(argv[optind], &to, &len, 0))
		die("ping: '%s' is not an IPv4 or IPv6 address", argv[optind]);
	fd = socket(to.ss_family, SOCK_RAW | SOCK_CLOEXEC,
		    to.ss_family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
	if (fd < 0)
		die("ping: raw socket: %s", strerror(errno));
	for (i = 0; i < count && !stop_sig; i++) {
		memset(pkt, 0, sizeof(pkt));
		pkt[0] = to.ss_family == AF_INET ? ICMP_ECHO : ICMP6_ECHO_REQUEST;
		pkt[4] = id >> 8;
		pkt[5] = id;
		pkt[6] = i >> 8;
		pkt[7] = i;
		if (to.ss_family == AF_INET) {
			uint16_t cs = csum16(pkt, sizeof(pkt));

			pkt[2] = cs >> 8;
			pkt[3] = cs;
		}	/* the kernel fills ICMPv6 checksums */
		t0 = xlb_mono_s();
		end = t0 + wait;
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&to,
			   len) < 0) {
			fprintf(stderr, "ping: %s\n", strerror(errno));
			usleep(wait * 1e6);
			continue;
		}
		/* bounded: by time, and by 1000 foreign packets */
		for (c = 0; c < 1000 && xlb_mono_s() < end; c++) {
			struct timeval tv;
			double left = end - xlb_mono_s();

			tv.tv_sec = left;
			tv.tv_usec = (left - tv.tv_sec) * 1e6 + 1;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				   sizeof(tv));
			n = recv(fd, buf, sizeof(buf), 0);
			if (n < 0)
				break;
			if (ping_match(to.ss_family, buf, n, id, i)) {
				printf("reply from %s in %.3f ms\n",
				       argv[optind], (xlb_mono_s() - t0) * 1e3);
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	printf("no reply from %s\n", argv[optind]);
	return 1;
}
