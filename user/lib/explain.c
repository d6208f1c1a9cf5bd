// SPDX-License-Identifier: GPL-2.0
#include "explain.h"

void xlb_explain_pick(const struct xlb_hash_key *key, uint32_t hash_mode,
		      const struct xlb_table *t, const struct xlb_flow *f,
		      struct xlb_pick *out)
{
	out->hash = xlb_flow_hash_mode(key, f, hash_mode);
	if (!t->size) {
		out->slot = 0;
		out->primary = XLB_BACKEND_NONE;
		out->secondary = XLB_BACKEND_NONE;
		return;
	}
	out->slot = out->hash % t->size;
	out->primary = t->slots[out->slot].primary;
	out->secondary = t->slots[out->slot].secondary;
}
