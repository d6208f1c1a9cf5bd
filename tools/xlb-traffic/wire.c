// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: the wire format of requests and replies (main.c says it):
 * integers, the payload pattern, server ids.
 */
#include <netinet/ip_icmp.h>
#include <string.h>

#include "traffic.h"

void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* n bytes of the payload pattern of stream `seed`, from offset off. */
void pattern(uint64_t seed, uint64_t off, uint8_t *buf, size_t n)
{
	uint64_t w = 0, blk = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++, off++) {
		if (off >> 3 != blk) {
			blk = off >> 3;
			w = xlb_mix64(seed ^ xlb_mix64(blk));
		}
		buf[i] = w >> ((off & 7) * 8);
	}
}

bool id_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
	       c == ':';
}

bool id_ok(const char *id, size_t n)
{
	size_t i;

	for (i = 0; i < n && id[i]; i++)
		if (!id_char_ok(id[i]))
			return false;
	for (; i < n; i++)	/* NUL padding only */
		if (id[i])
			return false;
	return id[0] != 0;
}
