/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libxlb: turning backend membership into lookup tables.
 *
 * A caller describes a VIP's backends (stable name, id, weight, state) and
 * gets an M-slot table (bpf/table.h) filled by Maglev or the ring.  Placement
 * depends only on names, weights, states, the key and M: never on the order
 * of the array (docs/design.md contract 3).  Ids are what the slots hold;
 * the caller (xlbd) keeps a backend's id for as long as it is a member, so
 * connection entries that remember an id stay valid across table changes.
 */
#ifndef XLB_LOOKUP_TABLE_H
#define XLB_LOOKUP_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "flow_hash.h"
#include "table.h"
#include "structs.h"
#include "error.h"

/* A name is 1..XLB_NAME_MAX bytes (no NUL counted). */
#define XLB_NAME_MAX		63

/* The ring materializes at most this many tokens (vnodes x total weight). */
#define XLB_RING_TOKENS_MAX	(1u << 22)

/* Default virtual nodes per unit of weight on the ring. */
#define XLB_RING_VNODES_DEFAULT	100

enum xlb_backend_state {
	XLB_BACKEND_ACTIVE = 0,	/* gets slots in proportion to its weight */
	XLB_BACKEND_DRAIN = 1,	/* no slots; flows it has stay via conntrack */
	XLB_BACKEND_DOWN = 2,	/* unhealthy or administratively out */
};

enum xlb_algo {
	XLB_ALGO_MAGLEV = 0,
	XLB_ALGO_RING = 1,
};

struct xlb_backend_spec {
	const char *name;	/* stable identity, e.g. canonical address */
	uint32_t weight;	/* 0 means draining: no slots */
	uint16_t id;		/* what slots hold; 0..XLB_BACKEND_ID_MAX */
	uint8_t state;		/* enum xlb_backend_state */
};

struct xlb_table_params {
	uint32_t algo;		/* enum xlb_algo */
	uint32_t size;		/* M, one of XLB_TABLE_SIZES */
	uint32_t vnodes;	/* ring: tokens per unit of weight */
	struct xlb_hash_key key;
};

/*
 * A backend as a member of the table's VIP, as the data path keeps it
 * (bpf/structs.h, "Members"): state is XLB_MEMBER_ACTIVE (usable, with
 * weight), XLB_MEMBER_DRAIN (draining, or weight 0) or XLB_MEMBER_DOWN.
 */
struct xlb_table_member {
	uint16_t id;
	uint8_t state;
};

struct xlb_table {
	uint32_t size;
	struct xlb_slot *slots;
	/*
	 * Every backend the table was built from, with its member state
	 * (xlb_table_build fills it; NULL in a table read back or made by
	 * hand).  Publishing a table with members makes them the VIP's
	 * members exactly; without, the ids its slots name become members.
	 */
	struct xlb_table_member *members;
	uint32_t n_members;
};

/* Same member ids and states, in the same order (NULL lists: false). */
int xlb_table_members_equal(const struct xlb_table *a,
			    const struct xlb_table *b);

/* True when m is one of the allowed table sizes. */
int xlb_table_size_valid(uint32_t m);
/*
 * The data path's class of table size m (bpf/table.h): 1 + its place in
 * the size list, XLB_TABLE_CLASS_NONE if m is no size.
 */
uint32_t xlb_table_class(uint32_t m);

/* The allowed sizes, for messages and tools. */
extern const uint32_t xlb_table_sizes[];
extern const size_t xlb_table_sizes_count;

/*
 * Fill t (allocated here; free with xlb_table_free) from n backends.
 * Returns 0, or a negative errno with err->msg saying why; on error *t is
 * left untouched (never a partial table).
 */
int xlb_table_build(struct xlb_table *t, const struct xlb_table_params *p,
		    const struct xlb_backend_spec *b, size_t n,
		    struct xlb_err *err);

void xlb_table_free(struct xlb_table *t);

/*
 * Temporary memory the calling thread's last xlb_table_build used at its
 * peak, in bytes: the builder's scratch and the canonical order, not the
 * table it returns.  A thread keeps scratch of up to XLB_SCRATCH_KEEP bytes
 * between its builds (no page faults on every build); more is freed when
 * the build returns.
 */
size_t xlb_table_build_scratch(void);

#define XLB_SCRATCH_KEEP	(4u << 20)

/*
 * 64-bit digest of the slots, over the names the ids stand for (so two LB
 * hosts that number backends differently but place them identically agree).
 * b/n are the specs the table was built from.
 */
uint64_t xlb_table_fingerprint(const struct xlb_table *t,
			       const struct xlb_backend_spec *b, size_t n);

/*
 * The same digest, and in *members the number of distinct backends the
 * slots name as primary, from the same pass over the slots.
 */
uint64_t xlb_table_fingerprint_members(const struct xlb_table *t,
				       const struct xlb_backend_spec *b,
				       size_t n, uint32_t *members);

/*
 * Number of slots whose primary id differs; tables must have equal size.
 * xlbd logs it for every table it publishes over one of the same size.
 */
size_t xlb_table_diff(const struct xlb_table *a, const struct xlb_table *b);

/* Slots whose primary is id. */
size_t xlb_table_count(const struct xlb_table *t, uint16_t id);

/* Parse "maglev"/"ring"; returns -EINVAL for anything else. */
int xlb_algo_parse(const char *s, uint32_t *algo);
const char *xlb_algo_name(uint32_t algo);

/* Internal: one builder per algorithm, called on validated, sorted input. */
struct xlb_build_ctx {
	const struct xlb_table_params *p;
	const struct xlb_backend_spec **usable;	/* sorted by name */
	size_t n_usable;
	struct xlb_slot *slots;			/* p->size entries, all NONE */
	void *scratch;				/* from xlb_build_scratch */
	size_t scratch_bytes;
	int scratch_own;			/* freed after the build */
};

/*
 * The builder's scratch for this build: bytes (64-byte aligned, contents
 * undefined), at most one call per build, valid until the build returns.
 * NULL when out of memory.
 */
void *xlb_build_scratch(struct xlb_build_ctx *c, size_t bytes);

int xlb_maglev_fill(struct xlb_build_ctx *c, struct xlb_err *err);
int xlb_ring_fill(struct xlb_build_ctx *c, struct xlb_err *err);

#endif /* XLB_LOOKUP_TABLE_H */
