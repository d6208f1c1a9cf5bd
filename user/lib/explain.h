/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the data path decides for a flow, computed in userspace from the
 * same inputs (key, hash mode, table).  `xlbctl explain` and the data
 * path's equivalence test both use this, so they cannot drift apart.
 */
#ifndef XLB_EXPLAIN_H
#define XLB_EXPLAIN_H

#include "lookup_table.h"

struct xlb_pick {
	uint32_t hash;		/* flow hash after the VIP's hash mode */
	uint32_t slot;		/* hash % M */
	uint16_t primary;	/* backend a new flow gets */
	uint16_t secondary;	/* next hop in the GUE hop list */
};

/* The table lookup a new flow gets: never fails; NONE for empty tables. */
void xlb_explain_pick(const struct xlb_hash_key *key, uint32_t hash_mode,
		      const struct xlb_table *t, const struct xlb_flow *f,
		      struct xlb_pick *out);

#endif /* XLB_EXPLAIN_H */
