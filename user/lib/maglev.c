// SPDX-License-Identifier: GPL-2.0
/*
 * Maglev table population (Eisenbud et al., NSDI 2016, section 3.4) with
 * integer weights.
 *
 * Every usable backend, in name order, walks its own permutation of the M
 * slots: offset = h % M, skip = h' % (M - 1) + 1, where h and h' are the two
 * halves of the keyed hash of its name.  Since M is prime, every skip visits
 * every slot once in M steps.  Rounds go through the backends in name order;
 * a backend of weight w takes w turns per round, each turn claiming the next
 * free slot of its permutation.  Shares are therefore w / total weight, up to
 * the last partial round.
 *
 * Secondary ("who would own this slot were the primary gone"): the first
 * other backend whose walk reaches the slot after it was taken.  Without the
 * primary, that walk would most often have found the slot free and claimed
 * it; the property we guarantee and test is weaker and exact: the secondary
 * is usable and differs from the primary whenever two backends are usable,
 * and it is the next backend in permutation order to visit the slot.  Slots
 * no other walk reached during population get theirs by continuing the walks
 * until every slot has one.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

/*
 * How it is built (same table as the plain loops the comment above
 * describes; tests/unit/maglev.c compares the two slot by slot):
 *
 * - One byte of state per slot (free, taken, taken with a secondary).
 *   What costs is not the probes but the branches that end a turn or
 *   mark a secondary, so the population goes in three stages:
 * - while more than 1/256 of the slots are free, a probe at a time (a turn
 *   ends after a probe or two), secondaries marked without a branch, on one
 *   word per slot (a byte up to 253 backends, else 16 bits) that holds both
 *   the state and the secondary (as the walker's index): most probes are
 *   made here, and each touches one array instead of two; the words become
 *   the byte state and the slots' secondaries when the stage ends; while
 *   at most half the slots are taken, a turn looks at two slots at once
 *   and branches only when both are taken;
 * - then 8 probes at a time: 8 independent loads packed into one word,
 *   whose bytes say at a glance whether any of them needs something (late
 *   in the population almost none do) and, if so, which is the first free
 *   one and which taken ones before it get their secondary;
 * - for the last ~sqrt(M)/6 free slots, by distance: walker k reaches slot
 *   x after (x - pos_k) skip_k^-1 mod M steps, so a turn computes that for
 *   the few slots that still need anything instead of probing hundreds of
 *   done ones.
 * - Completing the secondaries the same way: the secondary of a slot left
 *   without one is the backend other than the primary with the least
 *   (steps, k), computed instead of walked.
 */
#define LANES	8

struct walker {
	uint32_t pos;		/* next slot this backend looks at */
	uint32_t skip;
	uint32_t turns;		/* weight: turns per round */
	uint32_t inv;		/* skip^-1 mod M, see steps_to */
	uint32_t inv_q;		/* floor(inv 2^32 / M) */
	uint16_t id;
};

/*
 * (a + b) mod m for a, b < m <= 2^31.  Both candidates come from a at
 * once (b - m is a loop's constant) and the sign of the second picks:
 * two cycles from a to the result, where add, compare and select took
 * three, and a walk's probes are a chain of these.
 */
static inline uint32_t addmod(uint32_t a, uint32_t b, uint32_t m)
{
	uint32_t t = a + b, u = a + (b - m);

	return (int32_t)u < 0 ? t : u;
}

static void walkers_init(struct walker *w, const struct xlb_build_ctx *c)
{
	uint32_t m = c->p->size;
	size_t i;

	for (i = 0; i < c->n_usable; i++) {
		const struct xlb_backend_spec *b = c->usable[i];
		uint64_t h = xlb_siphash13(&c->p->key, b->name,
					   strlen(b->name));

		w[i].pos = (uint32_t)h % m;
		w[i].skip = (uint32_t)(h >> 32) % (m - 1) + 1;
		w[i].turns = b->weight;
		w[i].id = b->id;
	}
}

enum { FREE = 0, TAKEN = 1, TAKEN_WITH_SECONDARY = 2 };

#define BYTES_01	0x0101010101010101ULL

/*
 * One turn, a probe at a time: while the table is mostly free a turn ends
 * after a probe or two.  The taken slots it passes become done with no
 * branch (a slot done already gets its own secondary again); the only
 * branch is the end of the turn.  Returns where the walk goes on.
 */
static inline uint32_t turn_single(const struct walker *cur, uint32_t pos,
				   struct xlb_slot *s, uint32_t m,
				   uint8_t *state)
{
	/* in registers: the byte stores could alias *cur */
	const uint32_t skip = cur->skip;
	const uint16_t id = cur->id;
	uint8_t st;

	while ((st = state[pos]) != FREE) {
		uint16_t old = s[pos].secondary;

		state[pos] = TAKEN_WITH_SECONDARY;
		s[pos].secondary = st == TAKEN ? id : old;
		pos = addmod(pos, skip, m);
	}
	state[pos] = TAKEN;
	s[pos].primary = id;
	return addmod(pos, skip, m);
}

/*
 * The same turn on one word per slot (FREE, TAKEN, or 2 + the walker
 * index of its secondary): a probe touches one array instead of the state
 * and the slots' secondaries, and most of the population's probes are
 * made here.  A word is a byte when the walkers' indices fit in one (up
 * to 253 backends: at M = 65537, 64 KiB that mostly stay in the first-
 * level cache, against 128 KiB of 16-bit words), else 16 bits.  The
 * secondaries go into the slots when the stage ends (single_done).
 */
#define SEC_TAKEN	1
#define SEC_BASE	2

#define SINGLE_STAGE(BITS)						\
static inline uint32_t turn_single##BITS(uint32_t skip, uint##BITS##_t me, \
					 uint16_t id, uint32_t pos,	\
					 struct xlb_slot *s, uint32_t m, \
					 uint##BITS##_t *sec)		\
{									\
	uint##BITS##_t v;						\
									\
	while ((v = sec[pos]) != FREE) {				\
		sec[pos] = v == SEC_TAKEN ? me : v;			\
		pos = addmod(pos, skip, m);				\
	}								\
	sec[pos] = SEC_TAKEN;						\
	s[pos].primary = id;						\
	return addmod(pos, skip, m);					\
}									\
									\
/*									\
 * The same turn while at most half the slots are taken: the next two	\
 * slots at once, with a branch only when both are taken.  Which of the	\
 * two is claimed is computed, not branched on: that branch went the	\
 * unpredicted way as often as a slot was taken.				\
 */									\
static inline uint32_t turn_two##BITS(uint32_t skip, uint##BITS##_t me,	\
				      uint16_t id, uint32_t pos,	\
				      struct xlb_slot *s, uint32_t m,	\
				      uint##BITS##_t *sec)		\
{									\
	uint32_t p1 = addmod(pos, skip, m), v0 = sec[pos], v1 = sec[p1];	\
	uint32_t first, mark;						\
									\
	/* both taken: neither word is 0, so neither word - 1 is negative */ \
	if (__builtin_expect((int32_t)((v0 - 1) | (v1 - 1)) >= 0, 0)) {	\
		sec[pos] = v0 == SEC_TAKEN ? me : v0;			\
		return turn_single##BITS(skip, me, id, p1, s, m, sec);	\
	}								\
	first = 0u - ((v0 - 1) >> 31);	/* all ones if pos is free */	\
	mark = v0 == SEC_TAKEN ? me : v0;				\
	sec[pos] = (uint##BITS##_t)((mark & ~first) | (SEC_TAKEN & first)); \
	sec[p1] = (uint##BITS##_t)((v1 & first) | (SEC_TAKEN & ~first)); \
	pos = p1 ^ ((pos ^ p1) & first);				\
	s[pos].primary = id;						\
	return addmod(pos, skip, m);					\
}									\
									\
/* the stage's words as the byte state and the slots' secondaries */	\
static void single_done##BITS(struct xlb_slot *s, uint32_t m,		\
			      const uint##BITS##_t *sec, uint8_t *state, \
			      const uint16_t *ids)			\
{									\
	uint32_t x;							\
									\
	for (x = 0; x < m; x++) {					\
		uint##BITS##_t v = sec[x];				\
									\
		state[x] = v < SEC_BASE ? (uint8_t)v :			\
					  TAKEN_WITH_SECONDARY;		\
		s[x].secondary = ids[v];				\
	}								\
}

SINGLE_STAGE(8)
SINGLE_STAGE(16)

static void single_done(const struct walker *w, size_t n, struct xlb_slot *s,
			uint32_t m, const void *sec, bool narrow,
			uint8_t *state, uint16_t *ids)
{
	size_t k;

	ids[FREE] = ids[SEC_TAKEN] = XLB_BACKEND_NONE;
	for (k = 0; k < n; k++)
		ids[SEC_BASE + k] = w[k].id;
	if (narrow)
		single_done8(s, m, sec, state, ids);
	else
		single_done16(s, m, sec, state, ids);
}

/* A turn of the first stage, on the words of either size. */
static inline __attribute__((always_inline)) uint32_t
turn_words(const struct walker *cur, size_t i, uint32_t pos,
	   struct xlb_slot *s, uint32_t m, void *sec, const bool narrow,
	   const bool two)
{
	if (narrow && two)
		return turn_two8(cur->skip, (uint8_t)(SEC_BASE + i),
				 cur->id, pos, s, m, sec);
	if (narrow)
		return turn_single8(cur->skip, (uint8_t)(SEC_BASE + i),
				    cur->id, pos, s, m, sec);
	if (two)
		return turn_two16(cur->skip, (uint16_t)(SEC_BASE + i),
				  cur->id, pos, s, m, sec);
	return turn_single16(cur->skip, (uint16_t)(SEC_BASE + i), cur->id,
			     pos, s, m, sec);
}

/*
 * One turn, 8 probes at a time: late in the population a turn passes
 * hundreds of slots that are done.  The 8 states, loaded independently,
 * are packed into one word whose bytes say whether any of the 8 needs
 * something, which is the first free one and which taken ones come
 * before it.
 */
static inline uint32_t turn_blocks(const struct walker *cur, uint32_t pos,
				   struct xlb_slot *s, uint32_t m,
				   uint8_t *state)
{
	/* in registers: the byte stores could alias *cur */
	const uint16_t id = cur->id;
	uint32_t step[LANES];	/* (k + 1) skip mod M: the next probes */
	int k;

	step[0] = cur->skip;
#pragma GCC unroll 8
	for (k = 1; k < LANES; k++)
		step[k] = addmod(step[k - 1], step[0], m);
	for (;;) {
		uint32_t p[LANES];
		uint64_t v = 0, fr, mk;

		p[0] = pos;
#pragma GCC unroll 8
		for (k = 1; k < LANES; k++)
			p[k] = addmod(pos, step[k - 1], m);
#pragma GCC unroll 8
		for (k = 0; k < LANES; k++)
			v |= (uint64_t)state[p[k]] << (8 * k);
		/* per byte: bit 0 set if free, if taken */
		fr = ~(v | v >> 1) & BYTES_01;
		mk = v & BYTES_01;
		if (!(fr | mk)) {
			pos = addmod(pos, step[LANES - 1], m);
			continue;
		}
		if (fr)
			mk &= (fr & -fr) - 1;
		while (mk) {
			k = __builtin_ctzll(mk) >> 3;
			state[p[k]] = TAKEN_WITH_SECONDARY;
			s[p[k]].secondary = id;
			mk &= mk - 1;
		}
		if (fr) {
			k = __builtin_ctzll(fr) >> 3;
			state[p[k]] = TAKEN;
			s[p[k]].primary = id;
			return addmod(p[k], step[0], m);
		}
		pos = addmod(pos, step[LANES - 1], m);
	}
}

/*
 * a b mod m, and floor(x / m) for x < 2^53, without a division: the
 * quotient through the double reciprocal of m is exact to within one.
 */
static inline uint64_t div_m(uint64_t x, uint32_t m, double rm)
{
	uint64_t q = (uint64_t)((double)x * rm);
	int64_t r = (int64_t)(x - q * m);

	if (r < 0)
		q--;
	else if (r >= (int64_t)m)
		q++;
	return q;
}

static inline uint32_t mulmod(uint32_t a, uint32_t b, uint32_t m, double rm)
{
	uint64_t x = (uint64_t)a * b;

	return (uint32_t)(x - div_m(x, m, rm) * m);
}

/* a^-1 mod m for prime m and a != 0 mod m: a^(m - 2). */
static uint32_t invmod(uint32_t a, uint32_t m, double rm)
{
	uint32_t r = 1, e = m - 2;

	for (; e; e >>= 1) {
		if (e & 1)
			r = mulmod(r, a, m, rm);
		a = mulmod(a, a, m, rm);
	}
	return r;
}

/* Every walker's inv, with one inversion (Montgomery's batch trick). */
static void walkers_inverse(struct walker *w, size_t n, uint32_t m)
{
	const double rm = 1.0 / m;
	uint32_t acc = 1, inv;
	size_t k;

	for (k = 0; k < n; k++) {
		w[k].inv = acc;		/* product of the skips before k */
		acc = mulmod(acc, w[k].skip, m, rm);
	}
	inv = invmod(acc, m, rm);	/* of all of them */
	for (k = n; k-- > 0;) {
		w[k].inv = mulmod(inv, w[k].inv, m, rm);
		w[k].inv_q = (uint32_t)div_m((uint64_t)w[k].inv << 32, m, rm);
		inv = mulmod(inv, w[k].skip, m, rm);
	}
}

/*
 * Steps walker cur takes from pos to reach slot x: (x - pos) skip^-1 mod M,
 * the product mod M by Shoup's method (no division: the quotient from the
 * precomputed inv_q is the true one or one less).
 */
static inline uint32_t steps_to(const struct walker *cur, uint32_t pos,
				uint32_t x, uint32_t m)
{
	uint32_t t = x >= pos ? x - pos : x + m - pos;
	uint32_t q = (uint32_t)(((uint64_t)t * cur->inv_q) >> 32);
	uint32_t r = t * cur->inv - q * m;

	return r >= m ? r - m : r;
}

/*
 * The last free slots: when few slots still need anything (free, or taken
 * without a secondary), a turn computes the distance of each of them along
 * its walk instead of probing the hundreds of done slots in between: the
 * nearest free one is claimed, the taken ones nearer than it get their
 * secondary and leave the list.
 */
/*
 * Below LATE_MIN free slots at the start (M < 36 LATE_MIN^2) the probing
 * it saves is too short to pay for the walkers' inverses.
 */
#define LATE_MIN	32

struct late {
	uint32_t *list;		/* the slots that are not done */
	uint32_t *dist;		/* steps to each, this turn */
	size_t len, cap;
	uint32_t from;		/* free slots left when it starts */
	int on;
};

static uint32_t turn_direct(const struct walker *cur, uint32_t pos,
			    struct xlb_slot *s, uint32_t m, uint8_t *state,
			    struct late *lt)
{
	uint32_t best = UINT32_MAX, claim = pos;
	size_t k, j;

	for (k = 0; k < lt->len; k++) {
		uint32_t x = lt->list[k], d = steps_to(cur, pos, x, m);
		int nearer = state[x] == FREE && d < best;

		lt->dist[k] = d;
		best = nearer ? d : best;
		claim = nearer ? x : claim;
	}
	for (k = j = 0; k < lt->len; k++) {
		uint32_t x = lt->list[k];

		if (lt->dist[k] < best && state[x] == TAKEN) {
			state[x] = TAKEN_WITH_SECONDARY;
			s[x].secondary = cur->id;
			continue;
		}
		lt->list[j++] = x;
	}
	lt->len = j;
	state[claim] = TAKEN;
	s[claim].primary = cur->id;
	return addmod(claim, cur->skip, m);
}

#define DONE_WORD	(2 * BYTES_01)

/*
 * The first slot from x on that is not done, m if none: 8 state bytes at
 * a time (the state is padded with done bytes to a multiple of 8).
 */
static uint32_t next_not_done(const uint8_t *state, uint32_t x, uint32_t m)
{
	for (; x < m && (x & 7); x++)
		if (state[x] != TAKEN_WITH_SECONDARY)
			return x;
	for (; x < m; x += 8) {
		uint64_t v;

		memcpy(&v, state + x, sizeof(v));
		v = le64toh(v) ^ DONE_WORD;
		if (v)
			return x + (__builtin_ctzll(v) >> 3);
	}
	return m;
}

/* Collect the slots that are not done; 0 if more than the list holds. */
static int late_start(struct late *lt, const uint8_t *state, uint32_t m)
{
	uint32_t x;

	lt->len = 0;
	for (x = next_not_done(state, 0, m); x < m;
	     x = next_not_done(state, x + 1, m)) {
		if (lt->len == lt->cap)
			return 0;
		lt->list[lt->len++] = x;
	}
	return 1;
}

/*
 * Whole rounds of the first stage, in a loop of their own with no check
 * of the stage's end or the table's at every turn (measured: 4 to 6% of
 * the build at M = 65537, BENCHMARKS.md), as long as a whole round ends
 * with at most `until` slots taken.  Returns the slots taken then.
 */
static inline __attribute__((always_inline)) uint32_t
rounds(struct walker *w, size_t n, struct xlb_slot *s, uint32_t m, void *sec,
       const bool narrow, const bool two, uint32_t filled, uint64_t round,
       uint32_t until)
{
	uint32_t t;
	size_t i;

	for (; filled + round <= until; filled += (uint32_t)round)
		for (i = 0; i < n; i++) {
			struct walker *cur = &w[i];
			uint32_t pos = cur->pos;

			for (t = 0; t < cur->turns; t++)
				pos = turn_words(cur, i, pos, s, m, sec,
						 narrow, two);
			cur->pos = pos;
		}
	return filled;
}

/*
 * Population proper: every slot gets a primary.  Turns go one probe at a
 * time until only 1/256 of the slots are free (measured at M = 65537: the
 * better of the two up to there), on the words when sec is given,
 * then 8 at a time, then, for the last lt->from, by distance.
 */
static inline __attribute__((always_inline)) void
populate(struct walker *w, size_t n, struct xlb_slot *s, uint32_t m,
	 uint8_t *state, struct late *lt, void *sec, const bool narrow,
	 uint16_t *ids)
{
	uint32_t filled = 0, blocks_from = m - m / 256, t;
	uint32_t late_from = m - lt->from;
	uint64_t round = 0;
	size_t i;

	/* whole rounds first, the table at most half full, then the rest */
	for (i = 0; sec && i < n; i++)
		round += w[i].turns;
	if (sec) {
		filled = rounds(w, n, s, m, sec, narrow, true, 0, round, m / 2);
		filled = rounds(w, n, s, m, sec, narrow, false, filled, round,
				blocks_from - 1);
	}
	for (;;) {
		for (i = 0; i < n; i++) {
			struct walker *cur = &w[i];
			uint32_t pos = cur->pos;

			for (t = 0; t < cur->turns; t++) {
				if (sec && filled < blocks_from) {
					pos = turn_words(cur, i, pos, s, m, sec,
							 narrow, false);
					if (++filled == m)
						break;
					continue;
				}
				if (sec) {
					single_done(w, n, s, m, sec, narrow,
						    state, ids);
					sec = NULL;
				}
				if (filled == late_from && lt->from >= LATE_MIN) {
					lt->on = late_start(lt, state, m);
					if (lt->on)
						walkers_inverse(w, n, m);
				}
				if (lt->on)
					pos = turn_direct(cur, pos, s, m, state,
							  lt);
				else if (filled < blocks_from)
					pos = turn_single(cur, pos, s, m, state);
				else
					pos = turn_blocks(cur, pos, s, m, state);
				if (++filled == m)
					break;
			}
			cur->pos = pos;
			if (filled == m) {
				if (sec)	/* M < 256: never left the stage */
					single_done(w, n, s, m, sec, narrow,
						    state, ids);
				return;
			}
		}
	}
}

/* populate for each word, the choice out of its loop */
static void populate8(struct walker *w, size_t n, struct xlb_slot *s,
		      uint32_t m, uint8_t *state, struct late *lt, void *sec,
		      uint16_t *ids)
{
	populate(w, n, s, m, state, lt, sec, true, ids);
}

static void populate16(struct walker *w, size_t n, struct xlb_slot *s,
		       uint32_t m, uint8_t *state, struct late *lt, void *sec,
		       uint16_t *ids)
{
	populate(w, n, s, m, state, lt, sec, false, ids);
}

/*
 * Continue the walks until every slot has a secondary: one step per backend
 * per round, whatever the weights (a heavy backend owns most slots and its
 * steps rarely help), the first backend other than the primary to reach a
 * slot being its secondary.  Computed per slot rather than walked: backend
 * k reaches slot x in round r_k = (x - pos_k) skip_k^-1 mod M, so the
 * secondary is the least (r_k, k).
 */
static void complete_by_distance(struct walker *w, size_t n,
				 struct xlb_slot *s, uint32_t m,
				 const uint8_t *state, const struct late *lt)
{
	uint32_t x;
	size_t k, i = 0;

	if (!lt->on)
		walkers_inverse(w, n, m);
	/* the late list holds exactly the slots not done, if it was kept */
	for (x = lt->on ? (lt->len ? lt->list[0] : m) : next_not_done(state, 0, m);
	     x < m;
	     x = lt->on ? (++i < lt->len ? lt->list[i] : m) :
			  next_not_done(state, x + 1, m)) {
		uint64_t best = UINT64_MAX;

		for (k = 0; k < n; k++) {
			uint64_t r;

			if (w[k].id == s[x].primary)
				continue;
			r = steps_to(&w[k], w[k].pos, x, m);
			if (r * n + k < best)
				best = r * n + k;
		}
		s[x].secondary = w[best % n].id;
	}
}

/* The walks themselves, one step per backend per round. */
static void complete_by_walking(struct walker *w, size_t n,
				struct xlb_slot *s, uint32_t m,
				uint8_t *state, uint32_t missing)
{
	size_t k;

	while (missing) {
		for (k = 0; k < n && missing; k++) {
			struct walker *cur = &w[k];
			uint32_t pos = cur->pos;

			if (state[pos] != TAKEN_WITH_SECONDARY &&
			    s[pos].primary != cur->id) {
				state[pos] = TAKEN_WITH_SECONDARY;
				s[pos].secondary = cur->id;
				missing--;
			}
			cur->pos = addmod(pos, cur->skip, m);
		}
	}
}

/*
 * The same secondaries either way: computing costs N distances per slot
 * left, walking about M ln(slots left) probes; small tables with many
 * backends walk.
 */
static void complete_secondaries(struct walker *w, size_t n,
				 struct xlb_slot *s, uint32_t m,
				 uint8_t *state, const struct late *lt)
{
	uint64_t missing = 0, walk = m;
	uint32_t x;

	if (lt->on)
		missing = lt->len;
	else
		for (x = next_not_done(state, 0, m); x < m;
		     x = next_not_done(state, x + 1, m))
			missing++;
	if (!missing)
		return;
	for (x = 1; x < missing; x *= 2)
		walk += m / 2;	/* ~ M ln(missing) */
	/* the inverses, if not there yet, cost about 8 distances a walker */
	if ((missing + (lt->on ? 0 : 8)) * n <= walk)
		complete_by_distance(w, n, s, m, state, lt);
	else
		complete_by_walking(w, n, s, m, state, (uint32_t)missing);
}

/* Free slots left when turns go by distance: about sqrt(M) / 6. */
static uint32_t late_slots(uint32_t m)
{
	uint32_t r = 1;

	while ((r + 1) * (r + 1) * 36 <= m)
		r++;
	return r;
}

int xlb_maglev_fill(struct xlb_build_ctx *c, struct xlb_err *err)
{
	uint32_t m = c->p->size;
	size_t wbytes = (c->n_usable * sizeof(struct walker) + 63) & ~(size_t)63;
	struct late lt = { .from = late_slots(m) };
	size_t padded = (m + 7) & ~(size_t)7;
	/* words name the walkers: all of them but the most extreme */
	bool wide = c->n_usable <= UINT16_MAX - SEC_BASE;
	bool narrow = c->n_usable <= UINT8_MAX - SEC_BASE;
	size_t word = narrow ? 1 : 2;
	size_t words = (((size_t)m * word + 1) & ~(size_t)1);	/* ids: aligned */
	size_t sbytes = wide ? words + (c->n_usable + SEC_BASE) *
				       sizeof(uint16_t) : 0;
	uint16_t *ids = NULL;
	void *sec = NULL;
	struct walker *w;
	uint8_t *state;
	char *scratch;

	/* measured: 6 to 16 times as many slots are not done then */
	lt.cap = 32 * (size_t)lt.from;
	scratch = xlb_build_scratch(c, wbytes + 2 * lt.cap * sizeof(uint32_t) +
					       padded + sbytes);
	if (!scratch)
		return xlb_errf(err, ENOMEM, "out of memory for %zu backends",
				c->n_usable);
	w = (struct walker *)scratch;
	lt.list = (uint32_t *)(scratch + wbytes);
	lt.dist = lt.list + lt.cap;
	state = (uint8_t *)(lt.dist + lt.cap);
	if (wide) {
		sec = state + padded;
		ids = (uint16_t *)((char *)sec + words);
		memset(sec, FREE, (size_t)m * word);
	} else {
		memset(state, FREE, m);
	}
	memset(state + m, TAKEN_WITH_SECONDARY, padded - m);
	walkers_init(w, c);
	if (narrow)
		populate8(w, c->n_usable, c->slots, m, state, &lt, sec, ids);
	else
		populate16(w, c->n_usable, c->slots, m, state, &lt, sec, ids);
	if (c->n_usable >= 2)
		complete_secondaries(w, c->n_usable, c->slots, m, state, &lt);
	return 0;
}
