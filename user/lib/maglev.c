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
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

struct walker {
	uint32_t pos;	/* next slot this backend looks at */
	uint32_t skip;
	uint32_t turns;	/* weight: turns per round */
	uint16_t id;
};

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

static inline uint32_t advance(uint32_t pos, uint32_t skip, uint32_t m)
{
	pos += skip;
	return pos >= m ? pos - m : pos;
}

/*
 * One byte of state per slot answers the probe loop (which runs about
 * M ln M times) with a single load: the 4-byte slots are written only when
 * something changes.
 */
enum { FREE = 0, TAKEN = 1, TAKEN_WITH_SECONDARY = 2 };

/* Population proper: every slot gets a primary. */
static void populate(struct walker *w, size_t n, struct xlb_slot *s,
		     uint32_t m, uint8_t *state)
{
	uint32_t filled = 0, t;
	size_t i;

	for (;;) {
		for (i = 0; i < n; i++) {
			struct walker *cur = &w[i];
			uint32_t pos = cur->pos, skip = cur->skip;

			for (t = 0; t < cur->turns; t++) {
				uint8_t st;

				while ((st = state[pos]) != FREE) {
					if (st == TAKEN) {
						state[pos] = TAKEN_WITH_SECONDARY;
						s[pos].secondary = cur->id;
					}
					pos = advance(pos, skip, m);
				}
				state[pos] = TAKEN;
				s[pos].primary = cur->id;
				pos = advance(pos, skip, m);
				if (++filled == m) {
					cur->pos = pos;
					return;
				}
			}
			cur->pos = pos;
		}
	}
}

/*
 * Continue the walks until every slot has a secondary.  One step per backend
 * per round, whatever the weights: a heavy backend owns most slots and its
 * steps rarely help, so weighted turns here would only burn time.
 */
static void complete_secondaries(struct walker *w, size_t n,
				 struct xlb_slot *s, uint32_t m,
				 uint8_t *state)
{
	uint32_t missing = 0, i;
	size_t k;

	for (i = 0; i < m; i++)
		missing += state[i] != TAKEN_WITH_SECONDARY;
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
			cur->pos = advance(pos, cur->skip, m);
		}
	}
}

int xlb_maglev_fill(struct xlb_build_ctx *c, struct xlb_err *err)
{
	uint32_t m = c->p->size;
	struct walker *w;
	uint8_t *state;
	int ret = 0;

	w = calloc(c->n_usable, sizeof(*w));
	state = calloc(m, 1);
	if (!w || !state) {
		ret = xlb_errf(err, ENOMEM, "out of memory for %zu backends",
			       c->n_usable);
		goto out;
	}
	walkers_init(w, c);
	populate(w, c->n_usable, c->slots, m, state);
	if (c->n_usable >= 2)
		complete_secondaries(w, c->n_usable, c->slots, m, state);
out:
	free(w);
	free(state);
	return ret;
}
