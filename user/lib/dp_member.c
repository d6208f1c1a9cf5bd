// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: members, each (VIP, backend)'s state as the data path reads it
 * (bpf/structs.h, "Members"; datapath.h).
 *
 * Records are written through the mapping of xlb_members, each as one
 * 8-byte store: a reader sees a record whole, old or new.  A record keeps
 * its place while it is there; a member that leaves becomes a GONE
 * tombstone, whose place a later member may take.  Writers: one process
 * (xlbd), its threads serialised here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

static pthread_mutex_t member_lock = PTHREAD_MUTEX_INITIALIZER;

static __u64 rec_word(__u16 vip, __u16 backend, __u8 state)
{
	return (__u64)xlb_member_key(vip, backend) | (__u64)state << 32;
}

static __u8 rec_state(__u64 r)
{
	return (__u8)(r >> 32);
}

/* the flags byte (XLB_MEMBER_F_*), after the state */
static __u8 rec_flags(__u64 r)
{
	return (__u8)(r >> 40);
}

/* the budget of a full member (XLB_MEMBER_F_FULL), the word's top 16 bits */
static __s16 rec_budget(__u64 r)
{
	return (__s16)(r >> 48);
}

static volatile __u64 *rec_at(const struct xlb_dp *dp, __u32 place)
{
	return (volatile __u64 *)&dp->member_map[place / XLB_MEMBER_WAYS]
		.m[place % XLB_MEMBER_WAYS];
}

/*
 * The place of (vip, backend): its record's (*found true), else the first
 * FREE or GONE way of its probe sequence; -ENOSPC when there is neither.
 */
static int member_place(const struct xlb_dp *dp, __u16 vip, __u16 backend,
			__u32 *place, bool *found)
{
	__u32 key = xlb_member_key(vip, backend);
	__u32 i, w, p;
	bool have_free = false;
	__u64 r;

	*found = false;
	for (i = 0; i < XLB_MEMBER_PROBES; i++) {
		for (w = 0; w < XLB_MEMBER_WAYS; w++) {
			p = xlb_member_bucket(vip, backend, i) *
			    XLB_MEMBER_WAYS + w;
			r = __atomic_load_n(rec_at(dp, p), __ATOMIC_RELAXED);
			if ((__u32)r == key && rec_state(r) != XLB_MEMBER_FREE) {
				*place = p;
				*found = true;
				return 0;
			}
			if (!have_free && (rec_state(r) == XLB_MEMBER_FREE ||
					   rec_state(r) == XLB_MEMBER_GONE)) {
				*place = p;
				have_free = true;
			}
			if (rec_state(r) == XLB_MEMBER_FREE)
				return 0;	/* nothing after a free way */
		}
	}
	return have_free ? 0 : -ENOSPC;
}

static const char *state_name(__u8 s)
{
	switch (s) {
	case XLB_MEMBER_ACTIVE:	return "active";
	case XLB_MEMBER_DRAIN:	return "drain";
	case XLB_MEMBER_DOWN:	return "down";
	case XLB_MEMBER_GONE:	return "gone";
	}
	return "free";
}

const char *xlb_member_state_name(__u8 state)
{
	return state_name(state);
}

/*
 * The lists of the backends that may hold a live record of each VIP
 * (dp->vip_mids): a cache beside the records, written under member_lock,
 * also through a const data path.  A list may name more than that (a
 * backend twice, one whose record is GONE); never less.
 */
static struct dp_mids *mids_of(const struct xlb_dp *dp, __u32 vip)
{
	return &((struct xlb_dp *)dp)->vip_mids[vip];
}

static void mids_forget(const struct xlb_dp *dp)
{
	((struct xlb_dp *)dp)->mids_known = false;
}

static bool mids_room(struct dp_mids *m, __u32 n)
{
	__u32 cap = m->cap ? m->cap : 16;
	__u16 *ids;

	if (n <= m->cap)
		return true;
	while (cap < n)
		cap *= 2;
	ids = realloc(m->ids, cap * sizeof(*ids));
	if (!ids)
		return false;
	m->ids = ids;
	m->cap = cap;
	return true;
}

/* A record of (vip, backend) was made: the list names it (or is dropped). */
static void mids_add(const struct xlb_dp *dp, __u16 vip, __u16 backend)
{
	struct dp_mids *m = mids_of(dp, vip);

	if (!dp->mids_known)
		return;
	if (m->n >= XLB_BACKEND_ID_MAX + 1 || !mids_room(m, m->n + 1)) {
		mids_forget(dp);
		return;
	}
	m->ids[m->n++] = backend;
}

/* Every VIP's list from one pass over the records; false: no memory. */
static bool mids_learn(const struct xlb_dp *dp)
{
	__u32 p, v;

	if (dp->mids_known)
		return true;
	for (v = 0; v < XLB_MAX_VIPS; v++)
		mids_of(dp, v)->n = 0;
	for (p = 0; p < XLB_MEMBER_SLOTS; p++) {
		__u64 r = *rec_at(dp, p);
		__u16 vip = (__u16)r;
		struct dp_mids *m;

		if (rec_state(r) == XLB_MEMBER_FREE ||
		    rec_state(r) == XLB_MEMBER_GONE || vip >= XLB_MAX_VIPS)
			continue;
		m = mids_of(dp, vip);
		if (!mids_room(m, m->n + 1))
			return false;
		m->ids[m->n++] = (__u16)((__u32)r >> 16);
	}
	((struct xlb_dp *)dp)->mids_known = true;
	return true;
}

/* member_lock held */
static int member_write(const struct xlb_dp *dp, __u16 vip, __u16 backend,
			__u8 state, struct xlb_err *err)
{
	__u32 place;
	bool found;
	__u8 was;
	int ret;

	ret = member_place(dp, vip, backend, &place, &found);
	if (ret == -ENOSPC && state == XLB_MEMBER_GONE)
		return 0;	/* no record: gone already */
	if (ret)
		return xlb_errf(err, ENOSPC,
				"no room for backend %u as a member of VIP %u: its %u buckets of %u are full (%u places for the members of all VIPs)",
				backend, vip, XLB_MEMBER_PROBES,
				XLB_MEMBER_WAYS, XLB_MEMBER_SLOTS);
	if (!found && state == XLB_MEMBER_GONE)
		return 0;
	was = found ? rec_state(*rec_at(dp, place)) : XLB_MEMBER_FREE;
	if (was == state)
		return 0;
	/* a live record that was none: named before it is there */
	if ((was == XLB_MEMBER_FREE || was == XLB_MEMBER_GONE) &&
	    state != XLB_MEMBER_GONE)
		mids_add(dp, vip, backend);
	__atomic_store_n(rec_at(dp, place), rec_word(vip, backend, state),
			 __ATOMIC_RELEASE);
	return 1;
}

static int member_args(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		       struct xlb_err *err)
{
	int ret = dp_vip_id_check(vip, err);

	if (!ret)
		ret = dp_backend_id_check(backend, err);
	if (!ret && !dp->member_map)
		ret = xlb_errf(err, EINVAL, "the data path has no %s map",
			       XLB_MAP_MEMBERS);
	return ret;
}

int xlb_dp_member_set(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		      __u8 state, struct xlb_err *err)
{
	int ret = member_args(dp, vip, backend, err);

	if (ret)
		return ret;
	if (state < XLB_MEMBER_ACTIVE || state > XLB_MEMBER_GONE)
		return xlb_errf(err, EINVAL,
				"member state %u is unknown: 1 active, 2 drain, 3 down, 4 gone",
				state);
	pthread_mutex_lock(&member_lock);
	ret = member_write(dp, (__u16)vip, backend, state, err);
	pthread_mutex_unlock(&member_lock);
	if (ret > 0)
		xlb_dp_changed(dp);
	return ret < 0 ? ret : 0;
}

/* The record of (vip, backend), read once, and its place; -ENOENT: none. */
static int member_rec(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		      __u64 *rec, __u32 *place)
{
	__u32 p;
	bool found;
	int ret = member_args(dp, vip, backend, NULL);

	if (ret)
		return ret;
	if (member_place(dp, (__u16)vip, backend, &p, &found) || !found)
		return -ENOENT;
	*rec = __atomic_load_n(rec_at(dp, p), __ATOMIC_ACQUIRE);
	if (place)
		*place = p;
	return 0;
}

int xlb_dp_member_get(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		      __u8 *state, __u32 *place)
{
	__u64 r;
	int ret = member_rec(dp, vip, backend, &r, place);

	if (!ret)
		*state = rec_state(r);
	return ret;
}

/* Is id one of the table's members, or named by its slots? */
static bool table_has(const struct xlb_table *t, const __u8 *named, __u16 id)
{
	__u32 i;

	if (!t->members)
		return named[id / 8] & (1u << id % 8);
	for (i = 0; i < t->n_members; i++)
		if (t->members[i].id == id)
			return true;
	return false;
}

/*
 * The VIP's records of backends t does not list become GONE, found by a
 * pass over all records (member_lock held; when the lists cannot be had).
 */
static bool members_leave_scan(const struct xlb_dp *dp, __u16 vip,
			       const struct xlb_table *t)
{
	bool changed = false;
	__u32 p;

	for (p = 0; p < XLB_MEMBER_SLOTS; p++) {
		__u64 rr = *rec_at(dp, p);
		__u16 id = (__u16)((__u32)rr >> 16);

		if ((__u16)rr != vip || rec_state(rr) == XLB_MEMBER_FREE ||
		    rec_state(rr) == XLB_MEMBER_GONE || table_has(t, NULL, id))
			continue;
		__atomic_store_n(rec_at(dp, p),
				 rec_word(vip, id, XLB_MEMBER_GONE),
				 __ATOMIC_RELEASE);
		changed = true;
	}
	return changed;
}

/*
 * The same through the VIP's list (member_lock held), which then names
 * exactly the table's members.
 */
static bool members_leave(const struct xlb_dp *dp, __u16 vip,
			  const struct xlb_table *t)
{
	static __u8 listed[(XLB_BACKEND_ID_MAX + 8) / 8];
	struct dp_mids *m = mids_of(dp, vip);
	bool changed = false;
	__u32 i;

	for (i = 0; i < t->n_members; i++)
		listed[t->members[i].id / 8] |= 1u << t->members[i].id % 8;
	for (i = 0; i < m->n; i++)
		if (!(listed[m->ids[i] / 8] & (1u << m->ids[i] % 8)))
			changed |= member_write(dp, vip, m->ids[i],
						XLB_MEMBER_GONE, NULL) > 0;
	for (i = 0; i < t->n_members; i++)
		listed[t->members[i].id / 8] = 0;
	if (!mids_room(m, t->n_members)) {
		mids_forget(dp);
		return changed;
	}
	m->n = 0;
	for (i = 0; i < t->n_members; i++)
		if (t->members[i].state != XLB_MEMBER_GONE)
			m->ids[m->n++] = t->members[i].id;
	return changed;
}

/*
 * Members of VIP vip from table t, before (phase 0) and after (phase 1)
 * its slots are written: first those that take flows now, so that no
 * slot names a backend that is not yet a member; then those that stop,
 * so that flows leave them only once the slots point elsewhere.  With a
 * member list, it is the VIP's membership exactly (everything else of
 * the VIP GONE); without, the ids the slots name become ACTIVE members
 * unless they are members already.
 */
int dp_members_sync(const struct xlb_dp *dp, __u32 vip,
		    const struct xlb_table *t, int phase,
		    struct xlb_err *err)
{
	static __u8 named[(XLB_BACKEND_ID_MAX + 8) / 8];
	int ret = 0, changed = 0, r;
	__u32 i, p;

	if (!dp->member_map)
		return 0;
	pthread_mutex_lock(&member_lock);
	if (!t->members) {
		memset(named, 0, sizeof(named));
		for (i = 0; i < t->size; i++) {
			__u16 a = t->slots[i].primary, b = t->slots[i].secondary;

			if (a <= XLB_BACKEND_ID_MAX)
				named[a / 8] |= 1u << a % 8;
			if (b <= XLB_BACKEND_ID_MAX)
				named[b / 8] |= 1u << b % 8;
		}
	}
	if (phase == 0 && !t->members) {
		for (i = 0; i <= XLB_BACKEND_ID_MAX && !ret; i++) {
			__u8 st;
			bool found;

			if (!(named[i / 8] & (1u << i % 8)))
				continue;
			if (!member_place(dp, (__u16)vip, (__u16)i, &p, &found) &&
			    found) {
				st = rec_state(*rec_at(dp, p));
				if (st != XLB_MEMBER_GONE)
					continue;
			}
			r = member_write(dp, (__u16)vip, (__u16)i,
					 XLB_MEMBER_ACTIVE, err);
			ret = r < 0 ? r : 0;
			changed |= r > 0;
		}
	} else if (t->members) {
		for (i = 0; i < t->n_members && !ret; i++) {
			__u8 st = t->members[i].state;
			bool takes = st == XLB_MEMBER_ACTIVE;

			if (takes != (phase == 0))
				continue;
			r = member_write(dp, (__u16)vip, t->members[i].id, st,
					 err);
			ret = r < 0 ? r : 0;
			changed |= r > 0;
		}
	}
	/* after the slots: the VIP's members the table does not list leave */
	if (phase == 1 && t->members && !ret) {
		if (mids_learn(dp))
			changed |= members_leave(dp, (__u16)vip, t);
		else
			changed |= members_leave_scan(dp, (__u16)vip, t);
	}
	pthread_mutex_unlock(&member_lock);
	if (changed)
		xlb_dp_changed(dp);
	return ret;
}

void dp_members_clear(const struct xlb_dp *dp, __u32 vip)
{
	struct xlb_table none = { 0 };
	struct xlb_table_member nothing;
	bool changed;

	if (!dp->member_map || vip >= XLB_MAX_VIPS)
		return;
	none.members = &nothing;	/* a list of no members */
	pthread_mutex_lock(&member_lock);
	if (mids_learn(dp))
		changed = members_leave(dp, (__u16)vip, &none);
	else
		changed = members_leave_scan(dp, (__u16)vip, &none);
	pthread_mutex_unlock(&member_lock);
	if (changed)
		xlb_dp_changed(dp);
}

/*
 * state | flags << 8 as the program reads it; XLB_MEMBER_FREE: none.
 * The budget beside it, when asked for.
 */
static __u32 member_sf(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		       __s16 *budget)
{
	__u64 r;

	if (backend > XLB_BACKEND_ID_MAX ||
	    member_rec(dp, vip, backend, &r, NULL))
		return XLB_MEMBER_FREE;
	if (budget)
		*budget = rec_budget(r);
	return rec_state(r) | (__u32)rec_flags(r) << 8;
}

int xlb_dp_member_pick(const struct xlb_dp *dp, __u32 vip, __u16 primary,
		       __u16 secondary, bool new_flow, bool *bounded)
{
	__s16 budget = 0;
	__u32 a = member_sf(dp, vip, primary, &budget), b;

	*bounded = false;
	if (primary > XLB_BACKEND_ID_MAX)
		return -ENOENT;
	if (a == XLB_MEMBER_ACTIVE)
		return primary;
	b = member_sf(dp, vip, secondary, NULL);
	if (XLB_MEMBER_STATE(a) == XLB_MEMBER_ACTIVE) {	/* full */
		if (!new_flow || b != XLB_MEMBER_ACTIVE || budget <= 0)
			return primary;
		*bounded = true;
		return secondary;
	}
	if (XLB_MEMBER_STATE(b) == XLB_MEMBER_ACTIVE)
		return secondary;
	return -ENOENT;
}

int xlb_dp_member_flags_get(const struct xlb_dp *dp, __u32 vip,
			    __u16 backend, __u8 *flags, __s16 *budget)
{
	__u64 r;
	int ret = member_rec(dp, vip, backend, &r, NULL);

	if (!ret) {
		*flags = rec_flags(r);
		if (budget)
			*budget = rec_budget(r);
	}
	return ret;
}

int xlb_dp_member_flags_set(const struct xlb_dp *dp, __u32 vip,
			    __u16 backend, __u8 flags, int budget)
{
	__u32 p;
	bool found;
	__u64 r;
	int ret = member_args(dp, vip, backend, NULL);

	if (ret)
		return ret;
	if ((flags & ~XLB_MEMBER_F_FULL) || budget < 0 ||
	    budget > XLB_MEMBER_BUDGET_MAX ||
	    (budget && !(flags & XLB_MEMBER_F_FULL)))
		return -EINVAL;
	pthread_mutex_lock(&member_lock);
	ret = member_place(dp, (__u16)vip, backend, &p, &found);
	if (!ret && !found)
		ret = -ENOENT;
	if (!ret) {
		r = *rec_at(dp, p);
		if (rec_state(r) != XLB_MEMBER_ACTIVE) {
			/* only an active member is full; the others are not */
			ret = flags ? -ENOENT : 0;
			flags = 0;
			budget = 0;
		}
		/*
		 * No new generation: the flag steers new flows only, which
		 * the flow cache never holds.  The budget is written anew
		 * even when the flags stay: what the program took of it is
		 * given back, counted afresh.  A program's take between the
		 * load and the store is lost, which only gives one more.
		 */
		if (rec_flags(r) != flags || rec_budget(r) != budget) {
			__atomic_store_n(rec_at(dp, p),
					 rec_word((__u16)vip, backend,
						  rec_state(r)) |
					 (__u64)flags << 40 |
					 (__u64)(__u16)budget << 48,
					 __ATOMIC_RELEASE);
			if (!ret && rec_flags(r) != flags)
				ret = 1;
		}
	}
	pthread_mutex_unlock(&member_lock);
	return ret;
}

bool xlb_dp_member_keeps(const struct xlb_dp *dp, __u32 vip, __u16 backend)
{
	__u8 st;

	return !xlb_dp_member_get(dp, vip, backend, &st, NULL) &&
	       (st == XLB_MEMBER_ACTIVE || st == XLB_MEMBER_DRAIN);
}
