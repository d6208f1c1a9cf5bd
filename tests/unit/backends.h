/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers for table tests: a set of named backends and share statistics. */
#ifndef XLB_TEST_BACKENDS_H
#define XLB_TEST_BACKENDS_H

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"
#include "rand.h"

/*
 * Fresh and freed heap memory filled with junk, so that a builder which
 * leaves a slot unwritten fails the tests instead of finding the values a
 * previous build left in the same memory.
 */
__attribute__((constructor)) static void junk_heap(void)
{
	mallopt(M_PERTURB, 0xa5);
}

#define TEST_KEY ((struct xlb_hash_key){ 0x5eed5eed12345678ULL, 0x0123456789abcdefULL })

struct backend_set {
	size_t n;
	struct xlb_backend_spec spec[1100];
	char names[1100][XLB_NAME_MAX + 1];
};

/* Backend i is "10.0.x.y"-style named and has id i. */
static inline void set_init(struct backend_set *s, size_t n)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->n = n;
	for (i = 0; i < n; i++) {
		snprintf(s->names[i], sizeof(s->names[i]), "10.%zu.%zu.%zu",
			 i / 65536, (i / 256) % 256, i % 256);
		s->spec[i].name = s->names[i];
		s->spec[i].weight = 1;
		s->spec[i].id = (uint16_t)i;
		s->spec[i].state = XLB_BACKEND_ACTIVE;
	}
}

/* Drop backend k, keeping ids of the others. */
static inline void set_remove(struct backend_set *s, size_t k)
{
	size_t i;

	for (i = k; i + 1 < s->n; i++) {
		s->spec[i] = s->spec[i + 1];
		memcpy(s->names[i], s->names[i + 1], sizeof(s->names[i]));
		s->spec[i].name = s->names[i];
	}
	s->n--;
}

static inline void set_shuffle(struct backend_set *s, uint64_t seed)
{
	struct xlb_rand r = { seed };
	size_t i, j;

	for (i = s->n - 1; i > 0; i--) {
		struct xlb_backend_spec t;

		j = xlb_rand_next(&r) % (i + 1);
		t = s->spec[i];
		s->spec[i] = s->spec[j];
		s->spec[j] = t;
	}
}

static inline struct xlb_table_params params(uint32_t algo, uint32_t m,
					     uint32_t vnodes)
{
	return (struct xlb_table_params){ .algo = algo, .size = m,
					  .vnodes = vnodes, .key = TEST_KEY };
}

/* max/avg and min/avg of slot counts over usable ids, weight-proportional. */
static inline void share_stats(const struct xlb_table *t,
			       const struct backend_set *s,
			       double *max_avg, double *min_avg)
{
	uint64_t total_w = 0;
	size_t i;

	*max_avg = 0;
	*min_avg = 1e9;
	for (i = 0; i < s->n; i++)
		if (s->spec[i].state == XLB_BACKEND_ACTIVE)
			total_w += s->spec[i].weight;
	for (i = 0; i < s->n; i++) {
		double expect, r;

		if (s->spec[i].state != XLB_BACKEND_ACTIVE || !s->spec[i].weight)
			continue;
		expect = (double)t->size * s->spec[i].weight / total_w;
		r = xlb_table_count(t, s->spec[i].id) / expect;
		if (r > *max_avg)
			*max_avg = r;
		if (r < *min_avg)
			*min_avg = r;
	}
}

/*
 * Golden inputs: n backends of set_init with a weight and state pattern.
 * GOLD_W_FLAT: weight 1; GOLD_W_MIXED: weights 1..7, every 13th (from 5)
 * down, every 17th (from 3) draining, every 11th (from 9) weight 0;
 * GOLD_W_HEAVY: backend 0 of weight 1000, the others 1; GOLD_NAMES: weight
 * 1 and names of every length from 1 to XLB_NAME_MAX bytes.
 */
enum { GOLD_W_FLAT, GOLD_W_MIXED, GOLD_W_HEAVY, GOLD_NAMES };

static inline void set_golden(struct backend_set *s, size_t n, int pattern)
{
	size_t i;

	set_init(s, n);
	for (i = 0; i < n; i++) {
		if (pattern == GOLD_W_MIXED) {
			s->spec[i].weight = 1 + i % 7;
			if (i % 13 == 5)
				s->spec[i].state = XLB_BACKEND_DOWN;
			if (i % 17 == 3)
				s->spec[i].state = XLB_BACKEND_DRAIN;
			if (i % 11 == 9)
				s->spec[i].weight = 0;
		}
		if (pattern == GOLD_W_HEAVY && i == 0)
			s->spec[i].weight = 1000;
		if (pattern == GOLD_NAMES) {
			/* the number, then letters up to the length */
			size_t len = 1 + i * 5 % XLB_NAME_MAX;
			int k = snprintf(s->names[i], sizeof(s->names[i]),
					 "%zu", i);

			for (; (size_t)k < len; k++)
				s->names[i][k] = (char)('a' + k % 26);
			s->names[i][k] = 0;
		}
	}
}

/* The other key the golden cases use (key 1; key 0 is TEST_KEY). */
#define GOLD_KEY1 ((struct xlb_hash_key){ 0x0a1b2c3d4e5f6071ULL, 0x8899aabbccddeeffULL })

/*
 * One golden case: the fingerprint of the table built from set_golden(n,
 * pattern) at size m (and vnodes for the ring), recorded from the builder
 * before any change to its speed.  The tables are the interface between
 * hosts and versions: identical input must give identical slots forever.
 */
struct golden {
	uint32_t m;
	uint32_t n;
	int pattern;
	uint32_t vnodes;
	int key;
	uint64_t fp;
};

static inline uint64_t golden_fp(const struct golden *g, uint32_t algo,
				 struct backend_set *s, struct xlb_err *err,
				 int *ret)
{
	struct xlb_table_params p = params(algo, g->m, g->vnodes);
	struct xlb_table t;
	uint64_t fp;

	if (g->key)
		p.key = GOLD_KEY1;
	set_golden(s, g->n, g->pattern);
	set_shuffle(s, g->m ^ g->n);
	*ret = xlb_table_build(&t, &p, s->spec, s->n, err);
	if (*ret)
		return 0;
	fp = xlb_table_fingerprint(&t, s->spec, s->n);
	xlb_table_free(&t);
	return fp;
}

#endif /* XLB_TEST_BACKENDS_H */
