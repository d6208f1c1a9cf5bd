/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small deterministic generator (SplitMix64) for synthetic flows in tools
 * and tests: the same seed gives the same flows on every machine.
 */
#ifndef XLB_RAND_H
#define XLB_RAND_H

#include <stdint.h>

#include "flow_hash.h"

struct xlb_rand {
	uint64_t s;
};

/* SplitMix64's output of state x: a bijection with full avalanche. */
static inline uint64_t xlb_mix64(uint64_t x)
{
	uint64_t z = x + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t xlb_rand_next(struct xlb_rand *r)
{
	uint64_t x = r->s;

	r->s += 0x9e3779b97f4a7c15ULL;
	return xlb_mix64(x);
}

/* A random TCP or UDP flow of the given family (4 or 6) to any address. */
static inline void xlb_rand_flow(struct xlb_rand *r, struct xlb_flow *f,
				 int family)
{
	uint64_t a = xlb_rand_next(r), b = xlb_rand_next(r);
	int i;

	*f = (struct xlb_flow){ .family = (__u8)family };
	if (family == XLB_FAMILY_INET) {
		f->src.v4 = (__be32)a;
		f->dst.v4 = (__be32)(a >> 32);
	} else {
		for (i = 0; i < 4; i++) {
			f->src.v6[i] = (__be32)xlb_rand_next(r);
			f->dst.v6[i] = (__be32)xlb_rand_next(r);
		}
	}
	f->sport = (__be16)b;
	f->dport = (__be16)(b >> 16);
	f->proto = (b >> 32) & 1 ? 17 : 6;
}

#endif /* XLB_RAND_H */
