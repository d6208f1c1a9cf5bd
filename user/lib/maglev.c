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
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

/*
 * How it is built (same table as the plain loops the comment above
 * describes; tests/unit/maglev.c compares the two slot by slot):
 *
 * - One byte of state per slot (free, taken, taken with a secondary).
 *   A walk probes 8 slots of its permutation at once: 8 independent
 *   loads packed into one word, whose bytes say at a glance whether any
 *   of them needs something (late in the population almost none do) and,
 *   if so, which is the first free one and which taken ones before it get
 *   their secondary.  One branch per 8 probes instead of one or two per
 *   probe, and the 8 loads overlap.
 * - Completing the secondaries: the slot is reached by backend k after
 *   r_k = (slot - pos_k) / skip_k (mod M) more steps of its walk, so the
 *   secondary is the backend other than the primary with the least
 *   (r_k, k), computed for the few slots left instead of walking to them.
 */
#define LANES	8

struct walker {
	uint32_t pos;		/* next slot this backend looks at */
	uint32_t skip;
	uint32_t step[LANES];	/* (k + 1) skip mod M: the next probes */
	uint32_t turns;		/* weight: turns per round */
	uint32_t inv;		/* skip^-1 mod M, for the completion */
	uint16_t id;
};

static inline uint32_t addmod(uint32_t a, uint32_t b, uint32_t m)
{
	a += b;
	return a >= m ? a - m : a;
}

static void walkers_init(struct walker *w, const struct xlb_build_ctx *c)
{
	uint32_t m = c->p->size;
	size_t i;
	int k;

	for (i = 0; i < c->n_usable; i++) {
		const struct xlb_backend_spec *b = c->usable[i];
		uint64_t h = xlb_siphash13(&c->p->key, b->name,
					   strlen(b->name));

		w[i].pos = (uint32_t)h % m;
		w[i].skip = (uint32_t)(h >> 32) % (m - 1) + 1;
		w[i].step[0] = w[i].skip;
		for (k = 1; k < LANES; k++)
			w[i].step[k] = addmod(w[i].step[k - 1], w[i].skip, m);
		w[i].turns = b->weight;
		w[i].id = b->id;
	}
}

enum { FREE = 0, TAKEN = 1, TAKEN_WITH_SECONDARY = 2 };

#define BYTES_01	0x0101010101010101ULL

/* Where a store goes: its slot if sel, else a dummy (no branch). */
static inline void *pick(int sel, void *yes, void *no)
{
	uintptr_t msk = -(uintptr_t)sel;

	return (void *)(((uintptr_t)yes & msk) | ((uintptr_t)no & ~msk));
}

/*
 * One turn, a probe at a time: while the table is mostly free a turn ends
 * after a probe or two.  The taken slots it passes become done with no
 * branch (a store to a dummy when the slot was done already); the only
 * branch is the end of the turn.  Returns where the walk goes on.
 */
static inline uint32_t turn_single(const struct walker *cur, uint32_t pos,
				   struct xlb_slot *s, uint32_t m,
				   uint8_t *state)
{
	struct xlb_slot dummy;
	uint8_t st;

	while ((st = state[pos]) != FREE) {
		uint16_t *sec = pick(st == TAKEN, &s[pos].secondary,
				     &dummy.secondary);

		state[pos] = TAKEN_WITH_SECONDARY;
		*sec = cur->id;
		pos = addmod(pos, cur->skip, m);
	}
	state[pos] = TAKEN;
	s[pos].primary = cur->id;
	return addmod(pos, cur->skip, m);
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
	for (;;) {
		uint32_t p[LANES];
		uint64_t v = 0, fr, mk;
		int k;

		p[0] = pos;
#pragma GCC unroll 8
		for (k = 1; k < LANES; k++)
			p[k] = addmod(pos, cur->step[k - 1], m);
#pragma GCC unroll 8
		for (k = 0; k < LANES; k++)
			v |= (uint64_t)state[p[k]] << (8 * k);
		/* per byte: bit 0 set if free, if taken */
		fr = ~(v | v >> 1) & BYTES_01;
		mk = v & BYTES_01;
		if (!(fr | mk)) {
			pos = addmod(pos, cur->step[LANES - 1], m);
			continue;
		}
		if (fr)
			mk &= (fr & -fr) - 1;
		while (mk) {
			k = __builtin_ctzll(mk) >> 3;
			state[p[k]] = TAKEN_WITH_SECONDARY;
			s[p[k]].secondary = cur->id;
			mk &= mk - 1;
		}
		if (fr) {
			k = __builtin_ctzll(fr) >> 3;
			state[p[k]] = TAKEN;
			s[p[k]].primary = cur->id;
			return addmod(p[k], cur->skip, m);
		}
		pos = addmod(pos, cur->step[LANES - 1], m);
	}
}

/*
 * Population proper: every slot gets a primary.  Turns go one probe at a
 * time until only 1/64 of the slots are free (measured at M = 65537: the
 * better of the two up to there), then 8 at a time.
 */
static void populate(struct walker *w, size_t n, struct xlb_slot *s,
		     uint32_t m, uint8_t *state)
{
	uint32_t filled = 0, blocks_from = m - m / 64, t;
	size_t i;

	for (;;) {
		for (i = 0; i < n; i++) {
			struct walker *cur = &w[i];
			uint32_t pos = cur->pos;

			for (t = 0; t < cur->turns; t++) {
				if (filled < blocks_from)
					pos = turn_single(cur, pos, s, m, state);
				else
					pos = turn_blocks(cur, pos, s, m, state);
				if (++filled == m) {
					cur->pos = pos;
					return;
				}
			}
			cur->pos = pos;
		}
	}
}

static uint32_t mulmod(uint32_t a, uint32_t b, uint32_t m)
{
	return (uint32_t)((uint64_t)a * b % m);
}

/* a^-1 mod m for prime m and a != 0 mod m: a^(m - 2). */
static uint32_t invmod(uint32_t a, uint32_t m)
{
	uint32_t r = 1, e = m - 2;

	for (; e; e >>= 1) {
		if (e & 1)
			r = mulmod(r, a, m);
		a = mulmod(a, a, m);
	}
	return r;
}

/* Every walker's inv, with one inversion (Montgomery's batch trick). */
static void walkers_inverse(struct walker *w, size_t n, uint32_t m)
{
	uint32_t acc = 1, inv;
	size_t k;

	for (k = 0; k < n; k++) {
		w[k].inv = acc;		/* product of the skips before k */
		acc = mulmod(acc, w[k].skip, m);
	}
	inv = invmod(acc, m);		/* of all of them */
	for (k = n; k-- > 0;) {
		w[k].inv = mulmod(inv, w[k].inv, m);
		inv = mulmod(inv, w[k].skip, m);
	}
}

/*
 * Continue the walks until every slot has a secondary: one step per backend
 * per round, whatever the weights (a heavy backend owns most slots and its
 * steps rarely help), the first backend other than the primary to reach a
 * slot being its secondary.  Computed per slot rather than walked: backend
 * k reaches slot x in round r_k = (x - pos_k) skip_k^-1 mod M, so the
 * secondary is the least (r_k, k).
 */
static void complete_secondaries(struct walker *w, size_t n,
				 struct xlb_slot *s, uint32_t m,
				 const uint8_t *state)
{
	int inverted = 0;
	uint32_t x;
	size_t k;

	for (x = 0; x < m; x++) {
		uint64_t best = UINT64_MAX;

		if (state[x] == TAKEN_WITH_SECONDARY)
			continue;
		if (!inverted) {
			walkers_inverse(w, n, m);
			inverted = 1;
		}
		for (k = 0; k < n; k++) {
			uint64_t r;

			if (w[k].id == s[x].primary)
				continue;
			r = mulmod(x >= w[k].pos ? x - w[k].pos :
						   x + m - w[k].pos,
				   w[k].inv, m);
			if (r * n + k < best)
				best = r * n + k;
		}
		s[x].secondary = w[best % n].id;
	}
}

int xlb_maglev_fill(struct xlb_build_ctx *c, struct xlb_err *err)
{
	uint32_t m = c->p->size;
	size_t wbytes = (c->n_usable * sizeof(struct walker) + 63) & ~(size_t)63;
	struct walker *w;
	uint8_t *state;
	char *scratch;

	scratch = xlb_build_scratch(c, wbytes + m);
	if (!scratch)
		return xlb_errf(err, ENOMEM, "out of memory for %zu backends",
				c->n_usable);
	w = (struct walker *)scratch;
	state = (uint8_t *)scratch + wbytes;
	memset(state, FREE, m);
	walkers_init(w, c);
	populate(w, c->n_usable, c->slots, m, state);
	if (c->n_usable >= 2)
		complete_secondaries(w, c->n_usable, c->slots, m, state);
	return 0;
}
