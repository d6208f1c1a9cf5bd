/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libxlb's data path access (datapath.h), inside: what its files share.
 *
 *   datapath.c         opening the maps (loaded or pinned), their layout and
 *                      the data path ABI, the global settings, counters,
 *                      redirect egress
 *   dp_vip.c           VIPs and the entries derived from them
 *   dp_vip_index.c     the VIP index the data path searches
 *   dp_backend.c       backend entries and their epochs
 *   dp_member.c        each (VIP, backend)'s state
 *   dp_table.c         publishing and reading lookup tables
 *   dp_conntrack.c     the connection table
 *
 * Nothing here is an interface of libxlb.
 */
#ifndef XLB_DP_INTERNAL_H
#define XLB_DP_INTERNAL_H

#include <stdbool.h>

#include "datapath.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Every entry of the VIP map, markers included (dp_vip.c). */
struct vip_table {
	struct xlb_vip_key *keys;
	struct xlb_vip *vals;
	__u32 n, cap;
};

int dp_vip_dump(const struct xlb_dp *dp, struct vip_table *vt);
void dp_vip_table_free(struct vip_table *vt);
/* Forget the VIP map's copy kept while VIP changes are held. */
void dp_vip_cache_drop(struct xlb_dp *dp);
/* Unmap the tables kept mapped for rewrites in place (dp_table.c). */
void dp_tables_unmap(struct xlb_dp *dp);

/* dp_table.c: -EINVAL with a sentence unless vip_id < XLB_MAX_VIPS. */
int dp_vip_id_check(__u32 vip_id, struct xlb_err *err);

/* dp_backend.c: -EINVAL with a sentence unless id < XLB_MAX_BACKENDS. */
int dp_backend_id_check(__u16 id, struct xlb_err *err);

/* dp_vip_index.c */
/* After a change to xlb_vips: the index now, or at the release. */
int dp_vip_changed(struct xlb_dp *dp);
int dp_vip_index_sync(struct xlb_dp *dp);
/* A sentence for what switching the index returned. */
int dp_vip_index_err(int ret, struct xlb_err *err);
/* The table size class of every VIP, as the published index names it. */
int dp_vip_classes_learn(struct xlb_dp *dp, struct xlb_err *err);

/* dp_conntrack.c: entries of the connection table map. */
int dp_ct_entries(const struct xlb_dp *dp, __u32 *n);

/*
 * dp_member.c: the VIP's members from the table being published, before
 * (phase 0) and after (phase 1) its slots are written.
 */
int dp_members_sync(const struct xlb_dp *dp, __u32 vip,
		    const struct xlb_table *t, int phase,
		    struct xlb_err *err);

/*
 * dp_member.c: every record of VIP vip becomes GONE (its table is gone;
 * the id may name another VIP next, and the places are for others).
 */
void dp_members_clear(const struct xlb_dp *dp, __u32 vip);

/* Until every data path run begun before the call has ended (dp_backend.c). */
int dp_wait_readers(const struct xlb_dp *dp);

#endif /* XLB_DP_INTERNAL_H */
