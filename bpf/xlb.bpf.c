// SPDX-License-Identifier: GPL-2.0
/*
 * The xlb data path.  For each packet: parse, find the VIP, keep or pick a
 * backend (connection table, then table[hash % M]), encapsulate toward it,
 * and send it on.  Anything not for a VIP leaves untouched (XDP_PASS).
 *
 * One program with every feature compiled in; per-VIP flags choose at run
 * time.  Each step is a small function that returns early.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "csum.h"
#include "encap.h"
#include "flow_hash.h"
#include "icmp.h"
#include "maps.h"
#include "parsing.h"
#include "structs.h"

#ifndef barrier
#define barrier()	asm volatile("" ::: "memory")
#endif

/*
 * Acquire after a load: no later load of this CPU may be satisfied before
 * it (structs.h, "Flow cache").  x86 never lets a load pass an older one
 * (TSO), so the compiler is all there is to stop.  Other CPUs (arm64,
 * ...) do reorder loads, and BPF has no load-acquire on the kernels xlb
 * runs on (6.1, 6.12): a BPF_FETCH atomic is fully ordered there (the
 * JITs emit the kernel's atomic_fetch_*(): a lock prefix, LSE's "al"
 * forms, or LL/SC and a full barrier), so one on a word of this CPU's
 * own (p: a per-CPU value; OR 0 changes nothing) is the barrier.  The
 * Makefile names the target CPU (__TARGET_ARCH_*).
 */
#if defined(__TARGET_ARCH_x86)
#define acquire_fence(p)	barrier()
#else
#define acquire_fence(p)						\
	do {								\
		__u64 __old = __sync_fetch_and_or((__u64 *)(p), 0);	\
		asm volatile("" :: "r"(__old) : "memory");		\
	} while (0)
#endif

/*
 * The stage profile (tools/xlb-bench/stages.sh) builds this program with
 * XLB_STOP=N: a packet of the short path that reaches the end of stage N
 * then leaves as XDP_TX, unwritten, so that the benchmark can time the
 * program up to there beside the whole one.  1: parsed, the address
 * filter and the flow cache asked (missed); 2: the VIP and its counters
 * found; 3: the backend picked (connection table or table); 4: counted;
 * 5: encapsulated, before the flow cache is filled.  Never set otherwise:
 * without it STOP_AFTER is nothing.
 */
#ifdef XLB_STOP
#define STOP_AFTER(n)							\
	do {								\
		if (XLB_STOP == (n))					\
			return XDP_TX;					\
	} while (0)
#else
#define STOP_AFTER(n)	do { } while (0)
#endif

#ifndef AF_INET
#define AF_INET		2
#define AF_INET6	10
#endif

/*
 * Largest inner packet whose checksum we sum (IPv6 GUE): the largest mtu
 * libxlb accepts, so every packet that fits the tunnel is summed whole.
 * It was 4096: above that the sum came out 0 and the UDP checksum wrong
 * (frames above a page: generic XDP, jumbo MTUs).
 */
#define XLB_SUM_MAX	XLB_MTU_MAX

char LICENSE[] SEC("license") = "GPL";

static __always_inline void count_event(__u32 ev)
{
	__u64 *n = bpf_map_lookup_elem(&xlb_events, &ev);

	if (n)
		*n += 1;
}

static __always_inline int drop(__u32 ev)
{
	count_event(ev);
	return XDP_DROP;
}

/* The VIP of key k in the index (structs.h), or NULL. */
static __always_inline struct xlb_vip *vip_lookup(const struct xlb_vip_key *k)
{
	__u32 key = 0, h = xlb_vip_index_hash(k), i;
	const __u64 *a = (const __u64 *)k;
	struct xlb_vip_slot *s;
	void *idx;

	idx = bpf_map_lookup_elem(&xlb_vip_index, &key);
	if (!idx)
		return NULL;
#pragma unroll
	for (i = 0; i < XLB_VIP_PROBES; i++) {
		const __u64 *b;

		key = (h + i) & (XLB_VIP_INDEX_SLOTS - 1);
		s = bpf_map_lookup_elem(idx, &key);
		if (!s || !s->key.family)
			return NULL;
		b = (const __u64 *)&s->key;
		if (a[0] == b[0] && a[1] == b[1] &&
		    *(const __u32 *)&a[2] == *(const __u32 *)&b[2])
			return &s->vip;
	}
	return NULL;
}

/*
 * Keys and flows are written in the widths they are read in: a wide load
 * over narrower stores just made cannot take its value from the store
 * buffer, and waits for them to retire (perf showed the VIP key's as the
 * hottest instruction of the fast path).
 */
static __always_inline void vip_key_of(struct xlb_vip_key *k,
				       const struct xlb_flow *f, __u32 port)
{
	__u64 *a = (__u64 *)k;
	const __u64 *d = (const __u64 *)&f->dst;

	a[0] = d[0];
	a[1] = d[1];
	*(__u32 *)&a[2] = port | (__u32)f->proto << 16 |
			  (__u32)f->family << 24;
}

static __always_inline struct xlb_vip *find_vip(const struct xlb_flow *f)
{
	struct xlb_vip_key k;
	struct xlb_vip *v;

	vip_key_of(&k, f, f->dport);
	v = vip_lookup(&k);
	if (v)
		return v;
	vip_key_of(&k, f, 0);
	return vip_lookup(&k);
}

/*
 * The address filter (structs.h): 0 when the destination (d0, d1: the
 * flow's dst words) is no VIP's address, so the packet is not ours.
 * key is the caller's, reused: a key of its own would grow xlb_main()'s
 * frame (see there).
 */
static __always_inline int vip_addr_maybe(__u64 d0, __u64 d1, __u8 family,
					  __u32 *key)
{
	const __u64 *w;
	void *idx;
	__u32 h;

	*key = 0;
	idx = bpf_map_lookup_elem(&xlb_vip_index, key);
	if (!idx)
		return 0;
	h = xlb_vip_filter_hash(d0, d1, family);
	*key = XLB_VIP_INDEX_SLOTS + (h >> 9);
	w = bpf_map_lookup_elem(idx, key);
	return w && (w[(h >> 6) & 7] >> (h & 63) & 1);
}

/* The address marker (structs.h): is dst a VIP address at all? */
static __always_inline struct xlb_vip *find_addr(const struct xlb_flow *f)
{
	struct xlb_vip_key k = {};

	__builtin_memcpy(k.addr, f->dst.v6, 16);
	k.family = f->family;
	return vip_lookup(&k);
}

/*
 * Slot hash % M of the VIP's current table, read as one word.  The VIP's
 * index entry names the table's size class; each class is an outer map
 * of its own whose inner maps have a size the verifier knows, so both
 * lookups are inlined and M is a constant (structs.h).  The table is one
 * value (bpf/table.h): the slot is word 1 + i of it.  i < M is checked
 * for the verifier, whose bounds of xlb_mod's result are a few words too
 * wide; clang proves the check redundant, hence the empty asm that hides
 * i from it.
 */
#define TABLE_CLASS(c, m)						\
	case c:								\
		tbl = bpf_map_lookup_elem(&xlb_tab_##m, &id);		\
		if (!tbl)						\
			return -XLB_EV_NO_TABLE;			\
		words = bpf_map_lookup_elem(tbl, &key);			\
		if (!words)						\
			return -XLB_EV_NO_TABLE;			\
		i = xlb_mod(hash, (m), XLB_MOD_C(m));			\
		asm volatile("" : "+r"(i));	/* clang knows i < m */	\
		if (i >= (m))						\
			return -XLB_EV_NO_TABLE;			\
		w = *(volatile __u32 *)&words[1 + i];			\
		break;

static __always_inline int table_pick(const struct xlb_vip *vip, __u32 hash,
				      struct xlb_slot *out)
{
	__u32 id = vip->id, key = 0, i, w, *words; /* keys on the stack (6.1) */
	void *tbl;

	switch (vip->table) {
	XLB_TABLE_SIZES_X(TABLE_CLASS)
	default:
		return -XLB_EV_NO_TABLE;
	}
	out->primary = w & 0xffff;
	out->secondary = w >> 16;
	return 0;
}

static __always_inline struct xlb_backend *backend_get(__u32 id)
{
	struct xlb_backend *be;

	if (id >= XLB_MAX_BACKENDS)
		return NULL;
	be = bpf_map_lookup_elem(&xlb_backends, &id);
	if (!be || !(be->flags & XLB_BE_F_VALID))
		return NULL;
	return be;
}

/*
 * The state of backend `be` as a member of VIP `vip` (structs.h,
 * "Members") and its flags, state | flags << 8; XLB_MEMBER_FREE when it
 * has no record.  A record is one 8-byte load: its key, state and flags
 * are of one write.  Compared with XLB_MEMBER_ACTIVE whole, it is a
 * member that takes new flows with no flag to look at.
 */
static __always_inline __u32 member_state(__u32 vip, __u32 be)
{
	__u32 key = xlb_member_key(vip, be);
	__u32 i, w;

#pragma unroll
	for (i = 0; i < XLB_MEMBER_PROBES; i++) {
		__u32 k = xlb_member_bucket(vip, be, i);
		struct xlb_member_bucket *mb;

		mb = bpf_map_lookup_elem(&xlb_members, &k);
		if (!mb)
			return XLB_MEMBER_FREE;
#pragma unroll
		for (w = 0; w < XLB_MEMBER_WAYS; w++) {
			__u64 r = *(volatile __u64 *)&mb->m[w];
			__u32 st = (__u32)(r >> 32) & 0xffff;

			if (st == XLB_MEMBER_FREE)
				return XLB_MEMBER_FREE;
			if ((__u32)r == key)
				return st;
		}
	}
	return XLB_MEMBER_FREE;
}

/*
 * Bounded loads: one new flow of full member (vip, be) given to its
 * slot's secondary, taken from the record's budget; 0 when the
 * budget is spent (structs.h, "Members").  Read first, taken only when
 * there is some: CPUs that race on the last one each take it, so the
 * budget never goes below 0 by more than one per CPU.
 *
 * member_state's search again, not a search both share: one that hands
 * back the record's word through a pointer puts it on the stack, and
 * xlb_main's frame with its callees' is then over the 512 bytes the
 * verifier allows (528, measured).
 */
static __always_inline int member_spend(__u32 vip, __u32 be)
{
	__u32 key = xlb_member_key(vip, be);
	__u32 i, w;

#pragma unroll
	for (i = 0; i < XLB_MEMBER_PROBES; i++) {
		__u32 k = xlb_member_bucket(vip, be, i);
		struct xlb_member_bucket *mb;

		mb = bpf_map_lookup_elem(&xlb_members, &k);
		if (!mb)
			return 0;
#pragma unroll
		for (w = 0; w < XLB_MEMBER_WAYS; w++) {
			__u64 r = *(volatile __u64 *)&mb->m[w];

			if ((__u32)r != key)
				continue;
			if ((__s16)(r >> 48) <= 0)
				return 0;
			__sync_fetch_and_add((__u64 *)&mb->m[w],
					     -XLB_MEMBER_BUDGET_ONE);
			return 1;
		}
	}
	return 0;
}

/*
 * What was picked.  The backend's entry comes back beside it (*bep): a
 * choice is what forward() gets, and a global function sees no pointer
 * in what it is passed.
 */
struct choice {
	/*
	 * create goes in (XLB_CT_CREATE_* of the packet, for ct_pick and
	 * the bound), id comes out: nothing writes id before the pick is
	 * made.  One field of two uses, because a byte more grows
	 * xlb_main's frame past what 6.1 allows (see there).
	 */
	union {
		__u32 id;
		__u8 create;
	};
	__u32 hash;
	struct xlb_slot slot;	/* primary, secondary (hop list) */
};

/* What a TCP segment of flags `fl` may create (structs.h). */
static __always_inline __u8 tcp_create(__u8 fl)
{
	if (fl & (XLB_TCP_RST | XLB_TCP_FIN))
		return XLB_CT_CREATE_NONE;
	if (fl & XLB_TCP_SYN)
		return XLB_CT_CREATE_NEW;
	return fl & XLB_TCP_ACK ? XLB_CT_CREATE_PICKUP : XLB_CT_CREATE_NONE;
}

/* ... and a TCP or UDP packet whose transport header is at th. */
static __always_inline __u8 l4_create(__u8 proto, const struct tcphdr *th)
{
	return proto == IPPROTO_TCP ? tcp_create(((const __u8 *)th)[13]) :
				      XLB_CT_CREATE_NEW;
}

#include "quic_dp.h"

/* Pick from the table; no connection state involved. */
static __always_inline int pick_from_table(const struct xlb_config *cfg,
					   const struct xlb_vip *vip,
					   const struct xlb_flow *f,
					   struct choice *ch,
					   struct xlb_backend **bep)
{
	struct xlb_backend *be;
	__u32 st;
	int err;

	ch->hash = xlb_flow_hash_mode(&cfg->key, f, vip->hash_mode);
	err = table_pick(vip, ch->hash, &ch->slot);
	if (err)
		return err;
	if (ch->slot.primary == XLB_BACKEND_NONE)
		return -XLB_EV_NO_BACKEND;
	/*
	 * Failover: a primary that takes no new flows (marked down, or
	 * drained, before its table is rebuilt) gives the flow to the
	 * slot's secondary, which then heads the hop list alone.  Bounded
	 * loads: a full primary with budget left gives a new flow to a
	 * secondary that is active and not full, and keeps it otherwise.
	 */
	st = member_state(vip->id, ch->slot.primary);
	if (st != XLB_MEMBER_ACTIVE) {
		__u32 st2 = XLB_MEMBER_FREE;

		if (ch->slot.secondary != XLB_BACKEND_NONE)
			st2 = member_state(vip->id, ch->slot.secondary);
		if (XLB_MEMBER_STATE(st) == XLB_MEMBER_ACTIVE) {
			if (ch->create != XLB_CT_CREATE_NEW ||
			    st2 != XLB_MEMBER_ACTIVE ||
			    !member_spend(vip->id, ch->slot.primary))
				goto keep;
			count_event(XLB_EV_BOUNDED);
		} else if (XLB_MEMBER_STATE(st2) != XLB_MEMBER_ACTIVE) {
			return -XLB_EV_NO_BACKEND;
		}
		ch->slot.primary = ch->slot.secondary;
		ch->slot.secondary = XLB_BACKEND_NONE;
	}
keep:
	ch->id = ch->slot.primary;
	be = backend_get(ch->id);
	if (!be)
		return -XLB_EV_NO_BACKEND;
	*bep = be;
	return 0;
}

/* The entry's two value words as one 8-byte store each can write them. */
#define CT_V0(e)	(*(volatile __u64 *)&(e)->epoch)	/* epoch, hash */
#define CT_V1(e)	(*(volatile __u64 *)&(e)->backend)	/* +vip, check */

/* Two flows, word by word (five aligned words, padding zero). */
static __always_inline int flow_eq(const struct xlb_flow *x,
				   const struct xlb_flow *y)
{
	const __u64 *a = (const __u64 *)x, *b = (const __u64 *)y;

	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] &&
	       a[3] == b[3] && a[4] == b[4];
}

/*
 * Ticks since an entry was seen.  Another CPU may have stamped it a tick
 * later than this CPU's reading of the clock: that is age 0, not 2^64.
 */
static __always_inline __u64 ct_age(__u64 now, __u64 last_seen)
{
	return (__s64)(now - last_seen) > 0 ? now - last_seen : 0;
}

/*
 * The new-flow guard (structs.h): may a packet of kind `create` make a
 * connection entry now?  Takes the entry's credits if so; counts the
 * refusal if the rate says no.
 */
static __always_inline int ct_admit(__u8 create, __u64 now, __u32 hz)
{
	struct xlb_ct_guard *g;
	__u64 cap, c, el;

	if (create == XLB_CT_CREATE_NONE)
		return 0;
	g = bpf_map_lookup_elem(&xlb_ct_guard, (const void *)&xlb_key0);
	if (!g || !g->rate)
		return 1;
	cap = (__u64)g->rate * hz;
	el = now - g->stamp;
	if (el >= hz) {
		c = cap;
	} else {
		c = g->credits + el * g->rate;
		if (c > cap)
			c = cap;
	}
	g->stamp = now;
	if (c < hz || (create == XLB_CT_CREATE_PICKUP && c <= cap / 2)) {
		g->credits = c;
		g->refused++;
		return 0;
	}
	g->credits = c - hz;
	return 1;
}

/*
 * What ct_pick returns beside a pick (>= 0): bits of what happened and,
 * for the active connection counts (structs.h), what the caller adds once
 * ct_pick's values are off the stack (ct_count): the map lookups are
 * calls, which would spill them onto a frame 6.1 has no room to grow.
 */
#define CT_R_NEW	1	/* a new flow: not cached before its next packet */
#define CT_R_ADD	2	/* +1 for the picked backend (ch->id) */
#define CT_R_SUB	4	/* -1 for backend (r >> 16) */

static __always_inline void conns_add(__u32 id, __s64 n)
{
	__s64 *c = bpf_map_lookup_elem(&xlb_be_conns, &id);

	if (c)
		*c += n;
}

static __always_inline void ct_count(int r, __u32 id)
{
	if (r & CT_R_SUB)
		conns_add((__u32)r >> 16, -1);
	if (r & CT_R_ADD)
		conns_add(id, 1);
}

#define CT_V1_CLOSED	((__u32)XLB_CT_VIP_CLOSED << 16)

/*
 * Write a whole entry for flow f (structs.h: check busy first, set
 * last), over whatever the way held.
 */
static __always_inline void ct_write(struct xlb_ct_entry *e, __u64 h,
				     const struct xlb_flow *f, __u32 epoch,
				     __u32 hash, __u16 backend, __u16 vip,
				     __u64 now)
{
	const __u64 *src = (const __u64 *)f;
	volatile __u64 *dst = (volatile __u64 *)&e->flow;
	__u64 v0 = (__u64)epoch | (__u64)hash << 32;
	__u32 v1 = (__u32)backend | (__u32)vip << 16;

	CT_V1(e) = (__u64)XLB_CT_CHECK_BUSY << 32;
	barrier();
	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
	dst[4] = src[4];
	CT_V0(e) = v0;
	e->last_seen = now;
	barrier();
	CT_V1(e) = (__u64)v1 | (__u64)xlb_ct_check(h, v0, v1) << 32;
}

/*
 * Connection table: an existing flow keeps its backend while that backend
 * is valid and is the same backend (epoch) the entry was made for; UDP
 * entries expire after the idle time.  Otherwise pick and remember, in
 * the flow's own way if it had one, else a free way, else the way of its
 * bucket seen longest ago.  ICMP errors (no counters: vs NULL) only look.
 * Inlined into the fast path (a call and its return cost more than the
 * lookup, pkt benchmark); a function of its own for the general path
 * (pick_stateful), whose stack is then not on top of forward()'s.
 */
static __always_inline int ct_pick(const struct xlb_config *cfg,
				   const struct xlb_vip *vip,
				   const struct xlb_flow *f,
				   struct xlb_vip_stats *vs,
				   struct choice *ch,
				   struct xlb_backend **bep)
{
	/* ticks: one inlined load, where any other clock is a helper call */
	__u64 now = bpf_jiffies64();
	__u64 h = xlb_ct_hash(&cfg->ct_key, f), vage = 0;
	__u32 base = xlb_ct_bucket(h, cfg->ct_buckets) * XLB_CT_WAYS, w;
	struct xlb_ct_entry *e, *victim = NULL, *hit = NULL;
	int err, r;

#pragma unroll
	for (w = 0; w < XLB_CT_WAYS; w++) {
		__u32 idx = base + w;
		__u64 v1, age;

		e = bpf_map_lookup_elem(&xlb_conntrack, &idx);
		if (!e)
			break;
		v1 = CT_V1(e);
		/*
		 * free: taken, and so are the ways after it, which no flow
		 * has (structs.h): a new flow reads one line, not four
		 */
		if (!(__u32)(v1 >> 32)) {
			victim = e;
			break;
		}
		if (flow_eq(&e->flow, f)) {
			hit = e;
			break;
		}
		age = ct_age(now, e->last_seen);	/* the oldest goes */
		if (!victim || age > vage) {
			victim = e;
			vage = age;
		}
	}
	if (hit) {
		struct xlb_backend *be;
		__u64 v0 = CT_V0(hit), v1 = CT_V1(hit), age;
		__u32 st;

		victim = hit;	/* re-picked in place unless it holds */
		if ((__u32)(v1 >> 32) != xlb_ct_check(h, v0, (__u32)v1))
			goto miss;	/* torn: a miss */
		/* a SYN on a closed entry: a new connection, picked anew */
		if (((__u32)v1 & CT_V1_CLOSED) && vs &&
		    ch->create == XLB_CT_CREATE_NEW)
			goto miss;
		/*
		 * held only by a usable member of its own VIP (structs.h);
		 * asked before the backend's entry, so that no pointer is
		 * kept over its lookups (the frame: see xlb_main)
		 */
		st = XLB_MEMBER_STATE(member_state((v1 >> 16) & XLB_CT_VIP_MASK,
						   (__u16)v1));
		if (st != XLB_MEMBER_ACTIVE && st != XLB_MEMBER_DRAIN)
			goto miss;
		be = backend_get((__u16)v1);
		age = ct_age(now, hit->last_seen);
		if (!be || be->epoch != (__u32)v0 ||
		    (f->proto == IPPROTO_UDP &&
		     age > (__u64)cfg->udp_idle_s * cfg->hz))
			goto miss;
		if (vs)
			vs->ct_hits++;
		*bep = be;
		ch->id = (__u16)v1;
		ch->hash = (__u32)(v0 >> 32);
		/* hop list (GUE only): the table's secondary */
		ch->slot.secondary = XLB_BACKEND_NONE;
		if (be->encap == XLB_ENCAP_GUE &&
		    table_pick(vip, ch->hash, &ch->slot))
			ch->slot.secondary = XLB_BACKEND_NONE;
		if (age > cfg->hz)	/* refreshed once a second */
			hit->last_seen = now;
		return 0;
	}
miss:
	if (!vs)	/* only looking */
		return pick_from_table(cfg, vip, f, ch, bep);
	vs->ct_misses++;
	/*
	 * The flow's own way is rewritten; any other is new state, which
	 * the guard decides on.  Asked before the pick, whose calls spill
	 * the same values: no stack of its own (see xlb_main).
	 */
	if (victim && victim != hit && !ct_admit(ch->create, now, cfg->hz))
		victim = NULL;
	err = pick_from_table(cfg, vip, f, ch, bep);
	if (err)
		return err;
	r = CT_R_NEW;
	if (victim) {
		__u64 old = CT_V1(victim);

		ct_write(victim, h, f, (*bep)->epoch, ch->hash, (__u16)ch->id,
			 (__u16)vip->id, now);
		/* the entry counts; the open one it took over no longer */
		r |= CT_R_ADD;
		if ((__u32)(old >> 32) && !((__u32)old & CT_V1_CLOSED))
			r |= CT_R_SUB | (int)((__u32)(__u16)old << 16);
	}
	if (vs)
		vs->new_flows++;
	return r;
}

static __noinline int pick_stateful(const struct xlb_config *cfg,
				    const struct xlb_vip *vip,
				    const struct xlb_flow *f,
				    struct xlb_vip_stats *vs,
				    struct choice *ch)
{
	struct xlb_backend *be;
	int r = ct_pick(cfg, vip, f, vs, ch, &be);

	if (r > CT_R_NEW)
		ct_count(r, ch->id);
	return r;
}

/*
 * A TCP FIN or RST of flow f: its connection entry, if it has an open
 * one, is closed (structs.h, "Active connections"), one store of the
 * value word with its new check, and its backend counts one connection
 * less.  The entry still holds, and the packet is picked as any other
 * (ct_pick); a SYN on a closed entry picks anew.  Only the general path
 * calls it (the fast path leaves FIN and RST to it, fast_v4): a function
 * of its own, whose frame is not on ct_pick's.
 */
static __noinline int ct_close(const struct xlb_config *cfg,
			       const struct xlb_flow *f)
{
	__u64 h = xlb_ct_hash(&cfg->ct_key, f), v0, v1;
	__u32 base = xlb_ct_bucket(h, cfg->ct_buckets) * XLB_CT_WAYS, w, n;
	struct xlb_ct_entry *e;

#pragma unroll
	for (w = 0; w < XLB_CT_WAYS; w++) {
		__u32 idx = base + w;

		e = bpf_map_lookup_elem(&xlb_conntrack, &idx);
		if (!e)
			return 0;
		if (!flow_eq(&e->flow, f))
			continue;
		v0 = CT_V0(e);
		v1 = CT_V1(e);
		if ((__u32)(v1 >> 32) != xlb_ct_check(h, v0, (__u32)v1) ||
		    ((__u32)v1 & CT_V1_CLOSED))
			return 0;	/* torn, or closed already */
		n = (__u32)v1 | CT_V1_CLOSED;
		CT_V1(e) = (__u64)n | (__u64)xlb_ct_check(h, v0, n) << 32;
		conns_add((__u16)v1, -1);
		return 1;
	}
	return 0;
}

/*
 * One's complement sum of the inner packet (len bytes at off), for the IPv6
 * GUE checksum, folded to 16 bits.  The packet is summed whole, so the
 * outer checksum is right whatever the inner checksums say.  The kernel's
 * csum code does the work in chunks of constant size (512 down to 4
 * bytes, as the length's binary digits say); a global function, so the
 * verifier checks it once, not once per caller path.
 */
#define SUM_CHUNK(n)							\
	do {								\
		if (left >= (n)) {					\
			if (p + (n) > end)				\
				return 0;				\
			s = bpf_csum_diff(NULL, 0, p, (n), (__u32)s);	\
			p += (n);					\
			left -= (n);					\
		}							\
	} while (0)

__noinline int sum_packet(struct xdp_md *ctx, __u32 off, __u32 len)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 left = len, done, i;
	__u64 s = 0;
	void *p, *base;

	if (len > XLB_SUM_MAX)
		return 0;
	/* a mask the compiler cannot drop tells the verifier the bound */
	barrier_var(off);
	base = data + (off & 0x3f);
	p = base;
	for (i = 0; i < XLB_SUM_MAX / 512; i++) {
		if (left < 512)
			break;
		if (p + 512 > end)
			return 0;
		s = bpf_csum_diff(NULL, 0, p, 512, (__u32)s);
		p += 512;
		left -= 512;
	}
	/*
	 * The rest from one state whatever number of rounds led here (the
	 * rounds took len & ~511 bytes), so that the verifier checks what
	 * follows once, not once per round.
	 */
	done = len & ~511u;
	barrier_var(done);
	done &= 0x3e00;
	p = base + done;
	left = len & 511;
	SUM_CHUNK(256);
	SUM_CHUNK(128);
	SUM_CHUNK(64);
	SUM_CHUNK(32);
	SUM_CHUNK(16);
	SUM_CHUNK(8);
	SUM_CHUNK(4);
	/* 0..3 bytes: as words padded with zero, in memory order */
	if (left >= 2) {
		if (p + 2 > end)
			return 0;
		s += *(__u16 *)p;
		p += 2;
		left -= 2;
	}
	if (left) {
		if (p + 1 > end)
			return 0;
		s += *(__u8 *)p;
	}
	return csum_fold64(s);
}

/*
 * Not XDP actions: what xlb_main does next with a packet.  The fast path
 * leaves it to process() untouched (XLB_GENERAL); either fills its
 * fwd_args for forward() (XLB_FORWARD); forward() leaves the next hop to
 * a FIB lookup (XLB_FIB) or a packet too big to tunnel, which may be
 * answered, to too_big_reply() (XLB_ANSWER).  xlb_main calls them all, so no stack of
 * theirs is on top of another's, and each has one call site (the verifier
 * checks it once).
 */
#define XLB_FORWARD	(-1)
#define XLB_GENERAL	(-2)
#define XLB_FIB		(-3)
#define XLB_ANSWER	(-4)

/*
 * What forward() needs to know about a packet whose backend is chosen.
 * Passed by pointer to a global function: the verifier checks forward()
 * once for every way of getting there, not once per path (which kept
 * the whole program above kernel 6.1's limit of processed instructions).
 */
struct fwd_args {
	struct pkt p;
	struct choice ch;
	__u16 vip_id;		/* < XLB_MAX_VIPS */
	__u16 link;		/* XLB_LINK_SLOT of the ingress link */
	__be32 src4;		/* the VIP's outer source overrides */
	__be32 src6[4];
	__u16 answer_mtu;	/* XLB_ANSWER: the MTU the client must use */
	__u8 answer_ttl;
	__u8 count_vip;		/* per-VIP counters (not for ICMP errors) */
};

/*
 * The outer source toward be: the VIP's own (src4, src6) where it has one,
 * else the global one.  The general and the fast path both ask here.
 */
static __always_inline const __be32 *outer_src(const struct xlb_config *cfg,
					       const __be32 *src4,
					       const __be32 *src6,
					       const struct xlb_backend *be)
{
	if (be->family == XLB_FAMILY_INET)
		return *src4 ? src4 : &cfg->src4;
	if (src6[0] | src6[1] | src6[2] | src6[3])
		return src6;
	return cfg->src6;
}

/*
 * The second hop a GUE packet carries toward be: the slot's secondary when
 * it has one of be's family; NULL otherwise, and for every other encap.
 */
static __always_inline const __be32 *second_hop(const struct choice *ch,
						const struct xlb_backend *be)
{
	struct xlb_backend *sec;

	if (be->encap != XLB_ENCAP_GUE ||
	    ch->slot.secondary == XLB_BACKEND_NONE)
		return NULL;
	sec = backend_get(ch->slot.secondary);
	if (sec && sec->family == be->family)
		return sec->addr;
	return NULL;
}

/* n = 1: a packet of `bytes` forwarded; n = -1: taken back. */
static __always_inline void count_forward(struct xlb_vip_stats *vs, __u32 id,
					  __u32 bytes, int n)
{
	struct xlb_counter *bc = bpf_map_lookup_elem(&xlb_backend_stats, &id);
	__s64 b = n * (__s64)bytes;

	if (vs) {
		vs->packets += n;
		vs->bytes += b;
	}
	if (bc) {
		bc->packets += n;
		bc->bytes += b;
	}
}

/*
 * The next hop by FIB lookup, for backends without one the control plane
 * keeps: the packet is encapsulated, its Ethernet addresses are filled in
 * here, and it is counted as forwarded when it leaves.  Called by
 * xlb_main when forward() returns XLB_FIB, so its 64-byte lookup argument
 * is not on top of forward()'s stack.
 */
static __noinline int fib_forward(struct xdp_md *ctx, struct fwd_args *f)
{
	struct bpf_fib_lookup fib = {};
	struct xlb_vip_stats *vs = NULL;
	struct xlb_backend *be;
	struct xlb_config *cfg;
	const __be32 *src;
	struct ethhdr *eth;
	__u32 key = 0, ingress = ctx->ingress_ifindex;
	int rc, action;

	if (!f)
		return XDP_ABORTED;
	cfg = bpf_map_lookup_elem(&xlb_config, &key);
	be = backend_get(f->ch.id);
	if (!cfg || !be)
		return drop(XLB_EV_NO_BACKEND);
	src = outer_src(cfg, &f->src4, f->src6, be);
	fib.ifindex = ingress;
	if (be->family == XLB_FAMILY_INET) {
		fib.family = AF_INET;
		fib.ipv4_src = src[0];
		fib.ipv4_dst = be->addr[0];
	} else {
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, src, 16);
		__builtin_memcpy(fib.ipv6_dst, be->addr, 16);
	}
	/*
	 * Looked up as a forwarded packet arriving on the ingress interface,
	 * so any egress interface may be chosen; the kernel answers only when
	 * forwarding is enabled on the ingress interface.
	 */
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return drop(XLB_EV_NO_NEIGH);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return drop(XLB_EV_NO_ROUTE);
	eth = (void *)(long)ctx->data;
	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return drop(XLB_EV_MALFORMED);
	__builtin_memcpy(eth->h_dest, fib.dmac, 6);
	__builtin_memcpy(eth->h_source, fib.smac, 6);
	if (fib.ifindex == ingress)
		action = XDP_TX;
	else
		action = bpf_redirect_map(&xlb_tx_ports, fib.ifindex, XDP_DROP);
	if (action != XDP_TX && action != XDP_REDIRECT)
		return action;
	if (f->count_vip) {
		__u32 vid = f->vip_id;	/* 6.1: map keys on the stack only */

		vs = bpf_map_lookup_elem(&xlb_vip_stats, &vid);
	}
	count_forward(vs, f->ch.id, f->p.l3_len, 1);
	return action;
}

/*
 * Encapsulate toward the chosen backend and send.  The packet is first cut
 * to its IP length (Ethernet padding must not end up inside the tunnel),
 * checked against the size limit, then grown at the front.
 */
__noinline int forward(struct xdp_md *ctx, struct fwd_args *f)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xlb_backend *be;
	struct encap_args a = {};
	struct xlb_vip_stats *vs = NULL;
	struct xlb_config *cfg;
	struct ethhdr *eth;
	struct cursor c;
	const struct pkt *p;
	__u32 l2_len, over, key = 0;
	int excess, action, to_stack = 0;

	if (!f)
		return XDP_ABORTED;
	p = &f->p;
	cfg = bpf_map_lookup_elem(&xlb_config, &key);
	be = backend_get(f->ch.id);
	if (!cfg || !be)
		return drop(XLB_EV_NO_BACKEND);
	if (f->count_vip) {
		__u32 vid = f->vip_id;	/* 6.1: map keys on the stack only */

		vs = bpf_map_lookup_elem(&xlb_vip_stats, &vid);
	}
	l2_len = p->l3_off;
	over = encap_overhead(be);
	if (l2_len != 14 && l2_len != 18)
		return drop(XLB_EV_MALFORMED);
	excess = (int)(end - data) - (int)(l2_len + p->l3_len);
	if (excess > 0 && bpf_xdp_adjust_tail(ctx, -excess))
		return drop(XLB_EV_MALFORMED);
	/* too big for the tunnel: structs.h, "Too big" */
	if (p->l3_len + over > cfg->mtu) {
		__u32 len = p->l3_len;

		/*
		 * Longer than the link it came in on carries: no packet on
		 * the wire but a GRO aggregate, which generic XDP is given
		 * whole (linearized; nothing in xdp_md says it is one).  It
		 * can be neither answered (the client sent no such packet)
		 * nor tunnelled (the kernel would split the tunnel packet
		 * by the inner headers' offsets): docs/pmtu.md.
		 */
		if (bpf_check_mtu(ctx, 0, &len, 0, 0) > 0)
			return drop(XLB_EV_TOO_BIG_SILENT);
		if (p->flow.family != XLB_FAMILY_INET || (p->df && !p->frag)) {
			f->answer_mtu = (__u16)(cfg->mtu - over);
			f->answer_ttl = cfg->ttl;
			return XLB_ANSWER;
		}
		if (be->family != XLB_FAMILY_INET)
			return drop(XLB_EV_TOO_BIG_SILENT);
		to_stack = 1;
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	a.be = be;
	a.src = outer_src(cfg, &f->src4, f->src6, be);
	a.inner_len = p->l3_len;
	a.hash = f->ch.hash;
	a.gue_port = cfg->gue_port;
	a.inner_family = p->flow.family;
	a.tos = p->tos;
	a.ttl = cfg->ttl;
	a.secondary = second_hop(&f->ch, be);
	if (be->encap == XLB_ENCAP_GUE && be->family == XLB_FAMILY_INET6)
		a.inner_sum = sum_packet(ctx, l2_len, p->l3_len);
	if (bpf_xdp_adjust_head(ctx, -(int)over))
		return drop(XLB_EV_MALFORMED);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	/* L2 header (and VLAN tag) in front again, with the outer ethertype */
	barrier_var(over);
	over &= 0x7f;		/* at most 68: a bound for the verifier */
	{
		void *old = data + over;

		if (old + 18 > end || data + 18 > end)
			return drop(XLB_EV_MALFORMED);
		/* over >= 20 > 18: the two ranges do not overlap */
		__builtin_memcpy(data, old, 18);
	}
	barrier_var(l2_len);	/* 14 or 18: a bound 6.1's verifier keeps */
	l2_len &= 0x1f;
	{
		__be16 *proto = data + l2_len - 2;
		__be16 outer = be->family == XLB_FAMILY_INET ?
				       bpf_htons(ETH_P_IP) : bpf_htons(ETH_P_IPV6);

		if ((void *)(proto + 1) > end)
			return drop(XLB_EV_MALFORMED);
		*proto = outer;
	}
	c.pos = data + l2_len;
	barrier_var(c.pos);	/* one base for all outer headers (6.1) */
	c.end = end;
	if (write_encap(&c, &a))
		return drop(XLB_EV_MALFORMED);
	if (to_stack) {
		/*
		 * The kernel fragments it: outer DF clear (checksum updated
		 * as RFC 1624 says), the Ethernet header as it came (to
		 * this host), and the stack's route and neighbour.
		 */
		struct iphdr *ip = data + l2_len;
		__u64 sum;

		if ((void *)(ip + 1) > end)
			return drop(XLB_EV_MALFORMED);
		sum = (__u16)~ip->check + (__u16)~ip->frag_off;
		ip->frag_off = 0;
		ip->check = ~csum_fold64(sum);
		count_event(XLB_EV_TOO_BIG_STACK);
		count_forward(vs, f->ch.id, p->l3_len, 1);
		return XDP_PASS;
	}
	if (!(be->flags & XLB_BE_F_NEXTHOP))
		return XLB_FIB;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(XLB_EV_MALFORMED);
	write_eth_addrs(eth, be);
	if (!be->ifindex || be->ifindex == ctx->ingress_ifindex)
		action = XDP_TX;
	else
		action = bpf_redirect_map(&xlb_tx_ports, be->ifindex, XDP_DROP);
	if (action == XDP_TX || action == XDP_REDIRECT)
		count_forward(vs, f->ch.id, p->l3_len, 1);
	return action;
}



/*
 * Not an XDP action: an ICMP or ICMPv6 echo request to a VIP address,
 * which xlb_main answers (answer_echo) as Katran does, so that ping
 * works for a VIP as for any address.  Not answered: fragments, and
 * requests from a group or unspecified source (the answer would go to
 * many hosts, or nowhere); those pass to the stack as before.
 */
#define XLB_ECHO	(-6)
#define ICMP_ECHOREPLY	0
#define ICMP_ECHO	8

static __always_inline int echo_request(const struct pkt *p,
					const struct icmphdr *ih)
{
	if (p->frag || ih->code)
		return 0;
	if (p->flow.family == XLB_FAMILY_INET) {
		__u32 s = bpf_ntohl(p->flow.src.v4);

		return ih->type == ICMP_ECHO && s && (s >> 28) < 0xe;
	}
	if (ih->type != ICMPV6_ECHO_REQUEST ||
	    (bpf_ntohl(p->flow.src.v6[0]) >> 24) == 0xff)	/* multicast */
		return 0;
	return !!(p->flow.src.v6[0] | p->flow.src.v6[1] |	/* not :: */
		  p->flow.src.v6[2] | p->flow.src.v6[3]);
}

/* RFC 1624: checksum `check` after a 16-bit word went from `old` to `new`. */
static __always_inline __u16 csum_replace(__u16 check, __u16 old, __u16 new)
{
	__u32 s = (__u16)~check + (__u16)~old + (__u32)new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/*
 * The echo reply, made from the request in place: Ethernet and IP
 * addresses swapped, TTL / hop limit XLB_TTL_DEFAULT, type echo reply,
 * checksums updated for what changed (RFC 1624).  Called by xlb_main.
 */
static __noinline int answer_echo(struct xdp_md *ctx, struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct icmphdr *ih;
	__u8 mac[ETH_ALEN];
	__u32 l3, l4;
	__u16 old;

	if (!p)
		return XDP_ABORTED;
	l3 = p->l3_off;
	l4 = p->l4_off;
	barrier_var(l3);
	barrier_var(l4);
	l3 &= 0x1f;		/* 14 or 18 */
	l4 &= 0x1ff;		/* IPv4 with options, IPv6 after extensions */
	if ((void *)(eth + 1) > end)
		return drop(XLB_EV_MALFORMED);
	if (eth->h_source[0] & 1)	/* a group source: not answered */
		return XDP_PASS;
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	ih = data + l4;
	if ((void *)(ih + 1) > end)
		return drop(XLB_EV_MALFORMED);
	if (p->flow.family == XLB_FAMILY_INET) {
		struct iphdr *ip = data + l3;
		__be32 a;

		if ((void *)(ip + 1) > end)
			return drop(XLB_EV_MALFORMED);
		a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		old = *(__u16 *)&ip->ttl;
		ip->ttl = XLB_TTL_DEFAULT;
		ip->check = csum_replace(ip->check, old, *(__u16 *)&ip->ttl);
		old = *(__u16 *)ih;
		ih->type = ICMP_ECHOREPLY;
	} else {
		struct ipv6hdr *ip6 = data + l3;
		struct in6_addr a;

		if ((void *)(ip6 + 1) > end)
			return drop(XLB_EV_MALFORMED);
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->hop_limit = XLB_TTL_DEFAULT;
		old = *(__u16 *)ih;
		ih->type = ICMPV6_ECHO_REPLY;
	}
	ih->checksum = csum_replace(ih->checksum, old, *(__u16 *)ih);
	count_event(XLB_EV_ICMP_ECHO);
	return XDP_TX;
}

/*
 * An ICMP error whose quote is a VIP flow goes to that flow's backend:
 * XLB_FORWARD with *vipp and *ch set, or the action to take.  (One call
 * site of forward() for all packets keeps the verifier's work down.)
 */
static __always_inline int steer_icmp(struct xdp_md *ctx, struct cursor *c,
				      struct pkt *p,
				      const struct xlb_config *cfg,
				      struct xlb_vip **vipp,
				      struct choice *ch)
{
	void *data = (void *)(long)ctx->data;
	struct icmphdr *ih = c->pos;
	struct xlb_flow q = {};
	struct xlb_backend *be;
	struct xlb_vip *vip;
	int err;

	/* only errors sent to a VIP address are ours to steer */
	if (!find_addr(&p->flow))
		return XDP_PASS;
	if ((void *)(ih + 1) > c->end)
		return drop(XLB_EV_MALFORMED);
	if (echo_request(p, ih))
		return XLB_ECHO;
	if (!icmp_steerable(p, ih->type, ih->code))
		return XDP_PASS;
	if (parse_icmp_quote(c, data, p, &q))
		return XDP_PASS;
	vip = find_vip(&q);
	if (!vip)
		return XDP_PASS;
	if (vip->flags & XLB_VIP_F_STATELESS)
		err = pick_from_table(cfg, vip, &q, ch, &be);
	else
		err = pick_stateful(cfg, vip, &q, NULL, ch);
	if (err < 0)
		return drop(-err);
	count_event(XLB_EV_ICMP_STEERED);
	*vipp = vip;
	return XLB_FORWARD;
}

static __always_inline int is_icmp_proto(const struct pkt *p)
{
	return p->flow.proto == (p->flow.family == XLB_FAMILY_INET ?
				 IPPROTO_ICMP : IPPROTO_ICMPV6);
}

/*
 * A packet we could not fully parse: drop and count it if it was meant
 * for a VIP address, else leave it to the stack untouched.
 */
static __always_inline int malformed(struct pkt *p, int have_dst)
{
	if (have_dst && find_addr(&p->flow))
		return drop(XLB_EV_MALFORMED);
	return XDP_PASS;
}

/* Fragments without ports go by the fragment entry of (address, proto). */
static __always_inline struct xlb_vip *fragment_vip(struct pkt *p)
{
	struct xlb_vip_key k = {};

	__builtin_memcpy(k.addr, p->flow.dst.v6, 16);
	k.proto = p->flow.proto;
	k.family = p->flow.family | XLB_FAMILY_FRAG;
	return vip_lookup(&k);
}

/* A TCP or UDP packet: its VIP and backend (XLB_FORWARD), or the action. */
static __always_inline int pick_l4(struct xdp_md *ctx, struct cursor *c,
				   struct pkt *p, const struct xlb_config *cfg,
				   struct xlb_vip **vipp,
				   struct xlb_vip_stats **vsp,
				   struct choice *ch)
{
	struct xlb_vip_stats *vs;
	struct xlb_backend *be;
	struct xlb_vip *vip;
	int err;

	if (p->flow.proto != IPPROTO_TCP && p->flow.proto != IPPROTO_UDP)
		return XDP_PASS;
	if (p->frag_later) {
		vip = fragment_vip(p);
		if (!vip)
			return XDP_PASS;
		if (vip->flags & XLB_VIP_F_ADDR_ONLY)
			return drop(XLB_EV_FRAGMENT);
	} else {
		if (parse_ports(c, p))
			return malformed(p, 1);
		{
			struct tcphdr *th = c->pos;

			if ((void *)(th + 1) <= c->end)
				ch->create = l4_create(p->flow.proto, th);
			else	/* UDP: its header was there */
				ch->create = XLB_CT_CREATE_NEW;
		}
		vip = find_vip(&p->flow);
		if (!vip)
			return XDP_PASS;
	}
	vs = bpf_map_lookup_elem(&xlb_vip_stats, &vip->id);
	if (!vs)	/* every id below XLB_MAX_VIPS has counters */
		return drop(XLB_EV_NO_TABLE);
	/* fragments go by the table alone: all of them see the same choice */
	if (vip->flags & XLB_VIP_F_QUIC && !p->frag &&
	    !quic_pick(ctx, cfg, vip, p, ch))
		err = 0;	/* by connection ID (quic.h) */
	else if (vip->flags & XLB_VIP_F_STATELESS || p->frag) {
		/* no bound: a flow's every packet gets the same pick */
		ch->create = XLB_CT_CREATE_NONE;
		err = pick_from_table(cfg, vip, &p->flow, ch, &be);
	}
	else {
		/* a FIN or RST: only the general path sees them (fast_v4) */
		if (ch->create == XLB_CT_CREATE_NONE &&
		    p->flow.proto == IPPROTO_TCP)
			ct_close(cfg, &p->flow);
		err = pick_stateful(cfg, vip, &p->flow, vs, ch);
	}
	if (err < 0)
		return drop(-err);
	*vipp = vip;
	*vsp = vs;
	return XLB_FORWARD;
}

/*
 * The general path: every packet the fast path leaves.  fa is the
 * caller's (one copy on the stack for both paths), cleared here.
 */
static __noinline int process(struct xdp_md *ctx, struct fwd_args *fa)
{
	void *data = (void *)(long)ctx->data;
	struct cursor c = { data, (void *)(long)ctx->data_end };
	struct xlb_vip_stats *vs;
	struct xlb_config *cfg;
	struct xlb_vip *vip;
	struct ethhdr *eth;
	__u32 key = 0;
	__be16 proto;
	int err;

	if (!fa)
		return XDP_ABORTED;
	__builtin_memset(fa, 0, sizeof(*fa));
	fa->link = XLB_LINK_SLOT(ctx->ingress_ifindex);
	if (parse_eth(&c, &eth, &proto))
		return XDP_PASS;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = c.pos;

		if (parse_ipv4(&c, data, &fa->p)) {
			if ((void *)(ip + 1) > c.end)
				return XDP_PASS;
			fa->p.flow.family = XLB_FAMILY_INET;
			fa->p.flow.dst.v4 = ip->daddr;
			return malformed(&fa->p, 1);
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = c.pos;

		if (parse_ipv6(&c, data, &fa->p)) {
			if ((void *)(ip6 + 1) > c.end)
				return XDP_PASS;
			fa->p.flow.family = XLB_FAMILY_INET6;
			__builtin_memcpy(fa->p.flow.dst.v6, &ip6->daddr, 16);
			return malformed(&fa->p, 1);
		}
	} else {
		return XDP_PASS;
	}
	cfg = bpf_map_lookup_elem(&xlb_config, &key);
	if (!cfg)
		return XDP_PASS;
	if (is_icmp_proto(&fa->p)) {
		err = steer_icmp(ctx, &c, &fa->p, cfg, &vip, &fa->ch);
		if (err != XLB_FORWARD)
			return err;
		vs = NULL;
	} else {
		err = pick_l4(ctx, &c, &fa->p, cfg, &vip, &vs, &fa->ch);
		if (err != XLB_FORWARD)
			return err;
	}
	fa->vip_id = vip->id;
	fa->count_vip = !!vs;
	fa->src4 = vip->src4;
	__builtin_memcpy(fa->src6, vip->src6, 16);
	return XLB_FORWARD;
}

/*
 * Grow the frame at the front by over bytes: its Ethernet header there
 * (end: the frame's new end), or NULL.
 */
static __always_inline struct ethhdr *grow_front(struct xdp_md *ctx,
						 __u32 over, void **end)
{
	struct ethhdr *eth;

	if (bpf_xdp_adjust_head(ctx, -(int)over))
		return NULL;
	eth = (void *)(long)ctx->data;
	*end = (void *)(long)ctx->data_end;
	if ((void *)(eth + 1) > *end)
		return NULL;
	return eth;
}

/*
 * Not an XDP action either: the flow cache (structs.h) has no entry for
 * the packet; the fast path goes on (fast_send) and fills one.
 */
#define XLB_MISS	(-5)
/*
 * The fast path's TCP or UDP packet to no VIP's address (the address
 * filter): passed at once, before its ports are looked at.  The general
 * path would pass it too: a flow, a fragment or a malformed packet to
 * an address no VIP has is not ours.
 */
#define XLB_NOT_OURS	(-7)

/* What the flow cache needs of a packet and what it found. */
struct fc_ref {
	struct xlb_fc_entry *e;	/* the flow's slot, to fill on a miss */
	__u32 gen;		/* xlb_gen, read before any state */
};

/*
 * A packet of a flow in the flow cache, sent as the cached outcome says:
 * the same counters and bytes as the path that filled it.  Anything the
 * entry does not fit (another generation, too old, another length or
 * interface) is a miss, with nothing done.  key: a stack slot of the
 * caller's (6.1 takes map keys from the stack only).
 */
static __always_inline int fc_send(struct xdp_md *ctx, struct fwd_args *fa,
				   __u32 *key, struct fc_ref *ref)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 tot = fa->p.l3_len, over;
	struct xlb_vip_stats *vs;
	struct xlb_fc_entry *e;
	struct ethhdr *eth;
	__u8 tos = fa->p.tos;

	ref->e = NULL;
	ref->gen = *(volatile __u32 *)&xlb_gen;
	barrier();
	*key = xlb_fc_slot(&fa->p.flow);
	e = bpf_map_lookup_elem(&xlb_flow_cache, key);
	if (!e)
		return XLB_MISS;	/* nothing filled: no order needed */
	/* the generation before anything it stands for (fc_fill's) */
	acquire_fence(&e->expires);
	ref->e = e;
	/* a TCP SYN: ct_pick (which picks anew on a closed entry) */
	if (!flow_eq(&e->flow, &fa->p.flow) || e->gen != ref->gen ||
	    (fa->ch.create == XLB_CT_CREATE_NEW &&
	     fa->p.flow.proto == IPPROTO_TCP) ||
	    bpf_jiffies64() >= e->expires ||
	    tot > e->max_len || data + sizeof(*eth) + tot != end ||
	    (e->ifindex && e->ifindex != ctx->ingress_ifindex))
		return XLB_MISS;
	if (e->misses)
		e->misses = 0;
	over = e->family == XLB_FAMILY_INET6 ? sizeof(struct ipv6hdr) :
	       e->flags & XLB_FC_F_GUE ? sizeof(struct iphdr) + XLB_FC_GUE4_LEN :
					 sizeof(struct iphdr);
	eth = grow_front(ctx, over, &end);
	if (!eth)
		return drop(XLB_EV_MALFORMED);
	*(__u64 *)eth = *(const __u64 *)e->mac;
	*(__u32 *)((__u8 *)eth + 8) = *(const __u32 *)&e->mac[8];
	if (e->family == XLB_FAMILY_INET) {
		struct iphdr *ip = (void *)(eth + 1);
		__be16 vtos = bpf_htons(0x4500 | tos);
		__be16 len = bpf_htons(over + tot);

		if ((void *)(ip + 1) > end)
			return drop(XLB_EV_MALFORMED);
		if (e->flags & XLB_FC_F_GUE) {
			struct udphdr *udp = (void *)(ip + 1);
			__u64 *gue = (void *)(udp + 1);

			if ((void *)udp + XLB_FC_GUE4_LEN > end)
				return drop(XLB_EV_MALFORMED);
			*(__be32 *)udp = e->o.v4.ports;
			/* length, and checksum 0 */
			*(__be32 *)&udp->len = bpf_htons(XLB_FC_GUE4_LEN + tot);
			gue[0] = *(const __u64 *)e->o.v4.gue;
			gue[1] = *(const __u64 *)&e->o.v4.gue[8];
		}
		eth->h_proto = bpf_htons(ETH_P_IP);
		*(__be16 *)ip = vtos;
		ip->tot_len = len;
		ip->id = 0;
		ip->frag_off = bpf_htons(XLB_IP_DF);
		ip->ttl = e->ttl;
		ip->protocol = e->proto;
		ip->saddr = e->o.v4.src;
		ip->daddr = e->o.v4.dst;
		ip->check = ~csum_fold64((__u64)e->sum + vtos + len);
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return drop(XLB_EV_MALFORMED);
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		*(__be32 *)ip6 = bpf_htonl(6u << 28 | (__u32)tos << 20 |
					   e->o.v6.label);
		ip6->payload_len = bpf_htons(tot);
		ip6->nexthdr = e->proto;
		ip6->hop_limit = e->ttl;
		__builtin_memcpy(&ip6->saddr, e->o.v6.src, 16);
		__builtin_memcpy(&ip6->daddr, e->o.v6.dst, 16);
	}
	/* counted once it is sure to leave: nothing to take back */
	*key = e->vip;
	vs = bpf_map_lookup_elem(&xlb_vip_stats, key);
	if (vs) {
		if (e->flags & XLB_FC_F_STATEFUL)
			vs->ct_hits++;
		vs->cache_hits++;
	}
	count_forward(vs, e->backend, tot, 1);
	return XDP_TX;
}

/*
 * Remember how a packet of a flow left by the fast path (IP in IP or GUE
 * over IPv4; gue: its UDP header), for the flow's next packets on this
 * CPU (fc_send).  Everything written derives from state of generation
 * ref->gen or older.
 */
static __always_inline void fc_fill(const struct fc_ref *ref,
				    const struct xlb_flow *f,
				    const struct xlb_config *cfg,
				    const struct xlb_vip *vip,
				    const struct xlb_backend *be,
				    const struct encap_args *a, __u32 id,
				    __u32 over, const __u8 *gue)
{
	struct xlb_fc_entry *e = ref->e;
	__u64 now = bpf_jiffies64();

	if (!e)
		return;
	/* a live entry gives way to the XLB_FC_STAY-th other flow */
	if (e->gen == ref->gen && now < e->expires &&
	    e->misses < XLB_FC_STAY - 1) {
		e->misses++;
		return;
	}
	e->misses = 0;
	e->flow = *f;
	e->gen = ref->gen;
	e->ifindex = be->ifindex;
	e->expires = now + cfg->hz / XLB_FC_LIFE;
	e->vip = vip->id;
	e->backend = id;
	e->max_len = cfg->mtu - over;
	e->family = be->family;
	e->flags = vip->flags & XLB_VIP_F_STATELESS ? 0 : XLB_FC_F_STATEFUL;
	*(__u64 *)e->mac = *(const __u64 *)be->dmac;
	*(__u32 *)&e->mac[8] = *(const __u32 *)&be->smac[2];
	e->ttl = a->ttl;
	e->proto = inner_proto(a->inner_family);
	if (gue) {	/* as write_gue wrote it, read back: on a fill only */
		e->flags |= XLB_FC_F_GUE;
		e->proto = IPPROTO_UDP;
		e->o.v4.ports = *(const __be32 *)gue;
		*(__u64 *)e->o.v4.gue = *(const __u64 *)(gue + 8);
		*(__u64 *)&e->o.v4.gue[8] = *(const __u64 *)(gue + 16);
	}
	if (be->family == XLB_FAMILY_INET) {
		e->o.v4.src = a->src[0];
		e->o.v4.dst = be->addr[0];
		e->sum = csum_fold64((__u64)bpf_htons(XLB_IP_DF) +
				     bpf_htons((__u16)e->ttl << 8 | e->proto) +
				     a->src[0] + be->addr[0]);
	} else {
		__builtin_memcpy(e->o.v6.src, a->src, 16);
		__builtin_memcpy(e->o.v6.dst, be->addr, 16);
		e->o.v6.label = a->hash & 0xfffff;
	}
}

/*
 * The fast path's second half, for both families: the VIP of the flow in
 * fa (written by fast_v4 or fast_v6), the backend, and for a backend with
 * a known next hop whose encapsulation needs no sum over the packet (any
 * but GUE over IPv6), the packet encapsulated in place and sent.  Any
 * other backend goes on to forward() (XLB_FORWARD, fa filled).
 */
static __always_inline int fast_send(struct xdp_md *ctx, struct fwd_args *fa,
				     const struct xlb_config *cfg,
				     const struct fc_ref *ref)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 family = fa->p.flow.family, tos = fa->p.tos;
	__u32 tot = fa->p.l3_len;
	struct xlb_vip_stats *vs;
	struct xlb_backend *be;
	struct encap_args a;
	struct xlb_vip *vip;
	struct ethhdr *eth;
	struct cursor c;
	__u32 over;
	int err, no_cache;
	__u8 *gue;

	vip = find_vip(&fa->p.flow);
	if (!vip)
		return XDP_PASS;
	if (vip->flags & XLB_VIP_F_QUIC)	/* never cached: quic.h */
		return XLB_GENERAL;
	vs = bpf_map_lookup_elem(&xlb_vip_stats, &vip->id);
	if (!vs)
		return drop(XLB_EV_NO_TABLE);
	STOP_AFTER(2);
	if (vip->flags & XLB_VIP_F_STATELESS) {
		fa->ch.create = XLB_CT_CREATE_NONE;	/* no bound: pick_l4 */
		err = pick_from_table(cfg, vip, &fa->p.flow, &fa->ch, &be);
	} else {
		err = ct_pick(cfg, vip, &fa->p.flow, vs, &fa->ch, &be);
	}
	if (err < 0)
		return drop(-err);
	if (err > CT_R_NEW)
		ct_count(err, fa->ch.id);
	no_cache = err;	/* a new flow: cached from its first hit on */
	STOP_AFTER(3);
	over = encap_overhead(be);
	if ((be->flags & XLB_BE_F_NEXTHOP) &&
	    (!be->ifindex || be->ifindex == ctx->ingress_ifindex) &&
	    data + sizeof(*eth) + tot == end && tot + over <= cfg->mtu &&
	    (be->family == XLB_FAMILY_INET || be->encap != XLB_ENCAP_GUE)) {
		a.be = be;
		a.src = outer_src(cfg, &vip->src4, vip->src6, be);
		a.secondary = second_hop(&fa->ch, be);
		a.inner_len = tot;
		a.hash = fa->ch.hash;
		a.gue_port = cfg->gue_port;
		a.inner_family = family;
		a.tos = tos;
		a.ttl = cfg->ttl;
		a.inner_sum = 0;	/* GUE over IPv4: UDP checksum 0 */
		/*
		 * Counted before the frame grows, so that the counters'
		 * loads overlap the call instead of ending the program
		 * (pkt benchmark); taken back if the packet does not leave.
		 */
		count_forward(vs, fa->ch.id, tot, 1);
		STOP_AFTER(4);
		eth = grow_front(ctx, over, &end);
		if (!eth)
			goto uncount;
		write_eth_addrs(eth, be);
		*(__be16 *)((__u8 *)eth + 12) = be->family == XLB_FAMILY_INET ?
							bpf_htons(ETH_P_IP) :
							bpf_htons(ETH_P_IPV6);
		c.pos = eth + 1;
		c.end = end;
		/* IPv4 in IPv4 by itself: the commonest, and the shortest */
		if (be->encap == XLB_ENCAP_IPIP &&
		    be->family == XLB_FAMILY_INET &&
		    family == XLB_FAMILY_INET)
			err = write_outer_ipv4(&c, &a, tot, IPPROTO_IPIP);
		else
			err = write_encap(&c, &a);
		if (err)
			goto uncount;
		/* GUE here is over IPv4: its UDP header follows the IP one */
		gue = (__u8 *)(eth + 1) + sizeof(struct iphdr);
		if (be->encap != XLB_ENCAP_GUE)
			gue = NULL;
		else if (gue + XLB_FC_GUE4_LEN > (__u8 *)end)
			no_cache = 1;
		STOP_AFTER(5);
		if (!no_cache)
			fc_fill(ref, &fa->p.flow, cfg, vip, be, &a, fa->ch.id,
				over, gue);
		return XDP_TX;
	}
	fa->vip_id = vip->id;
	fa->count_vip = 1;
	fa->src4 = vip->src4;
	__builtin_memcpy(fa->src6, vip->src6, 16);
	return XLB_FORWARD;
uncount:
	count_forward(vs, fa->ch.id, tot, -1);
	return drop(XLB_EV_MALFORMED);
}

/*
 * A whole TCP or UDP header right after an IP header of ip_len bytes, in
 * the frame and within the IP length tot: 0, else -1 (not for the fast
 * path: another protocol, or cut short).
 */
static __always_inline int fast_l4(__u8 proto, const struct tcphdr *th,
				   const void *end, __u32 tot, __u32 ip_len)
{
	if (proto == IPPROTO_TCP)
		return (void *)(th + 1) > end ||
		       tot < ip_len + sizeof(*th) || th->doff < 5 ? -1 : 0;
	if (proto == IPPROTO_UDP)
		return (void *)th + sizeof(struct udphdr) > end ||
		       tot < ip_len + sizeof(struct udphdr) ? -1 : 0;
	return -1;
}

/* What the general path's parser would have found, for forward(). */
static __always_inline void fast_pkt(struct fwd_args *fa, __u32 tot,
				     __u32 ip_len, __u8 tos, __u8 df)
{
	fa->p.l3_off = sizeof(struct ethhdr);
	fa->p.l3_len = tot;
	fa->p.l4_off = sizeof(struct ethhdr) + ip_len;
	fa->p.tos = tos;
	fa->p.frag = 0;
	fa->p.frag_later = 0;
	fa->p.df = df;
}

/*
 * The common cases, in as few instructions as they take: untagged IPv4
 * TCP or UDP without options or fragmentation (fast_v4), untagged IPv6
 * TCP or UDP without extension headers (fast_v6).  They parse, find the
 * VIP and pick as process() does (the same functions, fast_send); a
 * packet of any other kind they leave to process() untouched
 * (XLB_GENERAL, nothing done, nothing counted).  Inlined into xlb_main,
 * with the connection table's lookup: no call on the way of a connection
 * table hit but the one that grows the frame.  The packet tests send such
 * packets through both paths.
 */
static __always_inline int fast_v4(struct xdp_md *ctx, struct fwd_args *fa,
				   __u32 *key)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *th = (void *)(ip + 1);
	__u32 tot;
	__u16 frag;

	if ((void *)(ip + 1) > end || *(__u8 *)ip != 0x45)
		return XLB_GENERAL;
	frag = bpf_ntohs(ip->frag_off);
	if (frag & (XLB_IP_MF | XLB_IP_OFFSET))
		return XLB_GENERAL;
	if ((ip->protocol == IPPROTO_TCP || ip->protocol == IPPROTO_UDP) &&
	    !vip_addr_maybe(ip->daddr, 0, XLB_FAMILY_INET, key))
		return XLB_NOT_OURS;
	tot = bpf_ntohs(ip->tot_len);
	barrier_var(tot);	/* bounds lost in the byte swap (6.1) */
	tot &= 0xffff;
	if ((void *)ip + tot > end)
		return XLB_GENERAL;
	if (fast_l4(ip->protocol, th, end, tot, sizeof(*ip)))
		return XLB_GENERAL;
	/* the flow in five 8-byte stores (see vip_key_of) */
	{
		__u64 *w = (__u64 *)&fa->p.flow;

		w[0] = ip->saddr;
		w[1] = 0;
		w[2] = ip->daddr;
		w[3] = 0;
		/* UDP's ports are where TCP's are */
		w[4] = *(__u32 *)&th->source | (__u64)ip->protocol << 32 |
		       (__u64)XLB_FAMILY_INET << 40;
	}
	fast_pkt(fa, tot, sizeof(*ip), ip->tos, !!(frag & XLB_IP_DF));
	fa->ch.create = l4_create(ip->protocol, th);
	/*
	 * TCP FIN and RST (and segments with no ACK), which make nothing
	 * (UDP always may): the general path, which closes their
	 * connection entries (ct_close).
	 */
	return fa->ch.create == XLB_CT_CREATE_NONE ? XLB_GENERAL : 0;
}

static __always_inline int fast_v6(struct xdp_md *ctx, struct fwd_args *fa,
				   __u32 *key)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct tcphdr *th = (void *)(ip6 + 1);
	const __u32 *sa, *da;
	__u32 tot;

	if ((void *)(ip6 + 1) > end || ip6->version != 6)
		return XLB_GENERAL;
	sa = ip6->saddr.in6_u.u6_addr32;
	da = ip6->daddr.in6_u.u6_addr32;
	if ((ip6->nexthdr == IPPROTO_TCP || ip6->nexthdr == IPPROTO_UDP) &&
	    !vip_addr_maybe(da[0] | (__u64)da[1] << 32,
			    da[2] | (__u64)da[3] << 32, XLB_FAMILY_INET6, key))
		return XLB_NOT_OURS;
	tot = bpf_ntohs(ip6->payload_len);
	barrier_var(tot);	/* bounds lost in the byte swap (6.1) */
	tot = (tot & 0xffff) + sizeof(*ip6);
	if ((void *)ip6 + tot > end)
		return XLB_GENERAL;
	/* extension headers, ICMPv6, ...: the general path */
	if (fast_l4(ip6->nexthdr, th, end, tot, sizeof(*ip6)))
		return XLB_GENERAL;
	/* the flow in five 8-byte stores (see vip_key_of) */
	{
		__u64 *w = (__u64 *)&fa->p.flow;

		w[0] = sa[0] | (__u64)sa[1] << 32;
		w[1] = sa[2] | (__u64)sa[3] << 32;
		w[2] = da[0] | (__u64)da[1] << 32;
		w[3] = da[2] | (__u64)da[3] << 32;
		w[4] = *(__u32 *)&th->source | (__u64)ip6->nexthdr << 32 |
		       (__u64)XLB_FAMILY_INET6 << 40;
	}
	fast_pkt(fa, tot, sizeof(*ip6), ip6->priority << 4 | ip6->flow_lbl[0] >> 4,
		 1);
	fa->ch.create = l4_create(ip6->nexthdr, th);
	/* FIN, RST: see fast_v4 */
	return fa->ch.create == XLB_CT_CREATE_NONE ? XLB_GENERAL : 0;
}

/* Does the source name one host (RFC 1122 3.2.2, RFC 4443 2.4 e)? */
static __always_inline int unicast_source(const struct xlb_flow *f)
{
	if (f->family == XLB_FAMILY_INET) {
		__u32 a = bpf_ntohl(f->src.v4);

		/* not 0/8, loopback, multicast, 240/4 (limited broadcast) */
		return a >> 24 && a >> 24 != 127 && a >> 28 < 14;
	}
	if (f->src.v6[0] == 0 && f->src.v6[1] == 0 && f->src.v6[2] == 0 &&
	    (f->src.v6[3] == 0 || f->src.v6[3] == bpf_htonl(1)))
		return 0;	/* unspecified, loopback */
	return *(const __u8 *)f->src.v6 != 0xff;	/* multicast */
}

/* Is the ICMP packet p an error (or cut short: taken as one)? */
static __always_inline int icmp_error(struct xdp_md *ctx, const struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 off = p->l4_off;
	__u8 type;

	barrier_var(off);
	off &= 0x3fff;
	if (p->frag_later || data + off + 1 > end)
		return 1;
	type = *(__u8 *)(data + off);
	if (p->flow.family == XLB_FAMILY_INET6)
		return type < 128;
	/* unreachable, source quench, redirect, time exceeded, parameter */
	return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

/* One answer's worth of this CPU's credit (structs.h, "Too big"), or 0. */
static __always_inline int icmp_credit(void)
{
	struct xlb_icmp_bucket *b;
	__u64 now, credit;
	__u32 key = 0;

	b = bpf_map_lookup_elem(&xlb_icmp_bucket, &key);
	if (!b)
		return 0;
	now = bpf_ktime_get_ns();
	credit = b->credit;
	if ((__s64)(now - b->stamp) > 0) {
		credit += now - b->stamp;
		b->stamp = now;
	}
	if (credit > XLB_ICMP_BURST * XLB_ICMP_COST)
		credit = XLB_ICMP_BURST * XLB_ICMP_COST;
	if (credit < XLB_ICMP_COST) {
		b->credit = credit;
		return 0;
	}
	b->credit = credit - XLB_ICMP_COST;
	return 1;
}

/*
 * A packet too big for the tunnel that may be answered (forward() left
 * it as it came): answered with the MTU forward() wrote in f, unless
 * structs.h's "Too big" says no answer.  Called by xlb_main only.
 */
__noinline int too_big_reply(struct xdp_md *ctx, struct fwd_args *f)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	const struct pkt *p;

	if (!f)
		return XDP_ABORTED;
	p = &f->p;
	/* the group bit: sent to a link-layer broadcast or multicast */
	if (data + 1 > end || *(__u8 *)data & 1 || !unicast_source(&p->flow) ||
	    (is_icmp_proto(p) && icmp_error(ctx, p)) ||
	    p->l3_len <= XLB_ICMP_QUOTE)
		return drop(XLB_EV_TOO_BIG_SILENT);
	if (!icmp_credit())
		return drop(XLB_EV_TOO_BIG_LIMITED);
	count_event(XLB_EV_TOO_BIG);
	return answer_too_big(ctx, p, p->l3_off, f->answer_mtu, f->answer_ttl) ?
		       XDP_DROP : XDP_TX;
}

/*
 * Counted by ingress link (structs.h); actions are 0..XLB_ACTIONS - 1.
 * A function of its own: its key is then on no frame of the deepest
 * chain (see below).
 */
static __noinline int count_action(__u32 link, int action)
{
	__u32 key = link * XLB_ACTIONS + action;
	__u64 *n;

	n = bpf_map_lookup_elem(&xlb_actions, &key);
	if (n)
		*n += 1;
	return action;
}

/*
 * Stack: 6.1's verifier rounds each frame up to 32 bytes (an empty one
 * too) and allows 512 for the deepest chain, xlb_main() -> process() ->
 * pick_stateful(): 256 + 152 + 96 bytes, rounded 256 + 160 + 96 = 512,
 * all of it; the other chain through process(), to quic_pick()
 * (quic_dp.h, 72 bytes), takes as much.  The action is counted from
 * fa.link, not ctx, which would then stay on this frame past its last
 * call (8 bytes more); and not by a wrapper around this function, whose
 * empty frame is 32 bytes on 6.1.  The vm tier loads the program on 6.1;
 * growing any of these needs room made elsewhere first.
 */
SEC("xdp")
int xlb_main(struct xdp_md *ctx)
{
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct fwd_args fa;
	struct fc_ref ref;
	struct xlb_config *cfg;
	__u32 key = 0;
	int action = XLB_GENERAL;

	fa.link = XLB_LINK_SLOT(ctx->ingress_ifindex);
	if ((void *)(eth + 1) <= (void *)(long)ctx->data_end) {
		if (eth->h_proto == bpf_htons(ETH_P_IP))
			action = fast_v4(ctx, &fa, &key);
		else if (eth->h_proto == bpf_htons(ETH_P_IPV6))
			action = fast_v6(ctx, &fa, &key);
		/*
		 * Not to a VIP's address: passed, nothing else looked at,
		 * and counted here rather than by count_action, whose call
		 * and return cost a tenth of such a packet (pkt benchmark,
		 * non_vip_pass).
		 */
		if (action == XLB_NOT_OURS) {
			__u64 *n;

			key = fa.link * XLB_ACTIONS + XDP_PASS;
			n = bpf_map_lookup_elem(&xlb_actions, &key);
			if (n)
				*n += 1;
			return XDP_PASS;
		}
		/* one copy of the second half for both families */
		if (!action) {
			action = fc_send(ctx, &fa, &key, &ref);
			/* sent from the flow cache: counted here, as above */
			if (action == XDP_TX) {
				__u64 *n;

				key = fa.link * XLB_ACTIONS + XDP_TX;
				n = bpf_map_lookup_elem(&xlb_actions, &key);
				if (n)
					*n += 1;
				return XDP_TX;
			}
		}
		/* the config only now: one value fewer kept over fc_send */
		if (action == XLB_MISS) {
			STOP_AFTER(1);
			key = 0;
			cfg = bpf_map_lookup_elem(&xlb_config, &key);
			action = cfg ? fast_send(ctx, &fa, cfg, &ref) :
				       XLB_GENERAL;
		}
	}
	if (action == XLB_GENERAL)
		action = process(ctx, &fa);
	if (action == XLB_FORWARD)
		action = forward(ctx, &fa);
	if (action == XLB_FIB)
		action = fib_forward(ctx, &fa);
	if (action == XLB_ECHO)
		action = answer_echo(ctx, &fa.p);
	if (action == XLB_ANSWER)
		action = too_big_reply(ctx, &fa);

	return count_action(fa.link, action);
}

