// SPDX-License-Identifier: GPL-2.0
/*
 * Data-path backend ids: one per (family, address, encapsulation), shared
 * by every VIP whose backend it is, kept as long as one uses it so that
 * connection entries stay valid across table changes.  Allocation (the
 * lowest free id), an index by address, the entry each id has in the
 * backend map and its next hop.  On the event loop, under d->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "config.h"
#include "xlbd.h"

static uint32_t beid_hash_of(uint8_t family, uint8_t encap,
			     const __be32 addr[4])
{
	uint64_t h = 1469598103934665603ull;
	const uint8_t *p = (const uint8_t *)addr;
	int i;

	h = (h ^ family) * 1099511628211ull;
	h = (h ^ encap) * 1099511628211ull;
	for (i = 0; i < 16; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

static bool beid_is(const struct xlbd_beid *b, uint8_t family, uint8_t encap,
		    const __be32 addr[4])
{
	return b->family == family && b->encap == encap &&
	       !memcmp(b->addr, addr, sizeof(b->addr));
}

/* An id is taken while a runtime backend uses it or the map holds it. */
static bool beid_taken(const struct xlbd_beid *b)
{
	return b->refs || b->family;
}

static void beid_hash_insert(struct xlbd *d, uint16_t id)
{
	const struct xlbd_beid *b = &d->beids[id];
	uint32_t mask = d->beid_hash_size - 1;
	uint32_t i = beid_hash_of(b->family, b->encap, b->addr) & mask;

	while (d->beid_hash[i])
		i = (i + 1) & mask;
	d->beid_hash[i] = (uint32_t)id + 1;
}

/* Take id out of the index (linear probing: later entries move up). */
static void beid_hash_remove(struct xlbd *d, uint16_t id)
{
	const struct xlbd_beid *b = &d->beids[id];
	uint32_t mask = d->beid_hash_size - 1;
	uint32_t i = beid_hash_of(b->family, b->encap, b->addr) & mask, j, k;

	while (d->beid_hash[i] && d->beid_hash[i] != (uint32_t)id + 1)
		i = (i + 1) & mask;
	if (!d->beid_hash[i])
		return;
	for (j = i;;) {
		const struct xlbd_beid *o;

		j = (j + 1) & mask;
		if (!d->beid_hash[j])
			break;
		o = &d->beids[d->beid_hash[j] - 1];
		k = beid_hash_of(o->family, o->encap, o->addr) & mask;
		/* stays where it is when its home is cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		d->beid_hash[i] = d->beid_hash[j];
		i = j;
	}
	d->beid_hash[i] = 0;
}

/* The index, the count of ids taken and the highest, from d->beids. */
static void beid_hash_rebuild(struct xlbd *d)
{
	uint32_t id;

	memset(d->beid_hash, 0, d->beid_hash_size * sizeof(*d->beid_hash));
	d->beid_hi = d->beid_taken = 0;
	for (id = 0; id < XLB_MAX_BACKENDS; id++) {
		if (!beid_taken(&d->beids[id]))
			continue;
		d->beid_taken++;
		d->beid_hi = id + 1;
		if (d->beids[id].family)
			beid_hash_insert(d, (uint16_t)id);
	}
}

static long beid_find(const struct xlbd *d, uint8_t family, uint8_t encap,
		      const __be32 addr[4])
{
	uint32_t mask = d->beid_hash_size - 1;
	uint32_t i = beid_hash_of(family, encap, addr) & mask;

	for (; d->beid_hash[i]; i = (i + 1) & mask) {
		uint32_t id = d->beid_hash[i] - 1;

		if (beid_is(&d->beids[id], family, encap, addr))
			return id;
	}
	return -1;
}

long xlbd_beid_get(struct xlbd *d, uint8_t family, uint8_t encap,
		   const __be32 addr[4])
{
	long id = beid_find(d, family, encap, addr);
	struct xlbd_beid *b;

	if (id >= 0)
		return id;
	for (id = 0; id < d->beid_hi; id++)
		if (!beid_taken(&d->beids[id]))
			break;
	if (id == XLB_MAX_BACKENDS)
		return -ENOSPC;
	b = &d->beids[id];
	memset(b, 0, sizeof(*b));
	/* what a former holder of the id was sent is not this one's */
	xlb_dp_backend_stats_clear(&d->dp, (uint16_t)id);
	b->family = family;
	b->encap = encap;
	memcpy(b->addr, addr, sizeof(b->addr));
	beid_hash_insert(d, (uint16_t)id);
	d->beid_taken++;
	if ((uint32_t)id >= d->beid_hi)
		d->beid_hi = (uint32_t)id + 1;
	return id;
}

const struct xlbd_beid *xlbd_beid(const struct xlbd *d, uint16_t id)
{
	if (id >= XLB_MAX_BACKENDS || !d->beids[id].family)
		return NULL;
	return &d->beids[id];
}

static void beid_entry(const struct xlbd_beid *b, struct xlb_backend *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, b->addr, sizeof(e->addr));
	e->family = b->family;
	e->encap = b->encap;
	e->flags = XLB_BE_F_VALID;
	if (b->nh_ok) {
		e->flags |= XLB_BE_F_NEXTHOP;
		memcpy(e->dmac, b->nh.dmac, sizeof(e->dmac));
		memcpy(e->smac, b->nh.smac, sizeof(e->smac));
		e->ifindex = b->nh.ifindex;
	}
}

/* Resolve the next hop of id (quietly: -EAGAIN is the common first answer). */
static void beid_resolve(struct xlbd *d, uint16_t id)
{
	struct xlbd_beid *b = &d->beids[id];
	struct xlb_err err = { "" };
	struct xlb_nh nh;
	int ret;

	if (!d->neigh)
		return;
	ret = xlb_neigh_resolve(d->neigh, b->family, b->addr, &nh, &err);
	if (ret) {
		if (b->nh_ok && ret != -EAGAIN)
			log_warn("backend %u: next hop lost: %s", id, err.msg);
		/*
		 * A neighbour being re-resolved keeps the last next hop; a
		 * lost route falls back to the data path's FIB lookup.
		 */
		if (ret != -EAGAIN)
			b->nh_ok = false;
		return;
	}
	b->nh = nh;
	b->nh_ok = true;
}

static int beid_write(struct xlbd *d, uint16_t id, struct xlb_err *err)
{
	struct xlb_backend e;
	int ret;

	beid_entry(&d->beids[id], &e);
	/* redirecting out of the next hop's interface needs it in the devmap */
	if (e.flags & XLB_BE_F_NEXTHOP)
		xlb_dp_tx_port_add(&d->dp, e.ifindex);
	ret = xlb_dp_backend_set(&d->dp, id, &e, err);
	d->beids[id].written = !ret;
	return ret;
}

/* Distinct (family, address, encap) of a state: the data-path ids it needs. */
struct id_need {
	uint8_t family, encap;
	__be32 addr[4];
};

static int id_need_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct id_need));
}

int xlbd_beid_needed(const struct xlbd *d, const struct xlb_state *s,
		     size_t *n)
{
	struct id_need *need;
	size_t i, k = 0;

	need = calloc(s->n_backends ? s->n_backends : 1, sizeof(*need));
	if (!need)
		return -ENOMEM;
	for (i = 0; i < s->n_backends; i++) {
		const struct xlb_backend_conf *b = &s->backends[i];
		const struct xlb_vip_conf *v = xlb_state_find_vip(s, &b->vip);

		if (beid_find(d, b->family, v->encap, b->addr) >= 0)
			continue;	/* known ids cost nothing */
		need[k].family = b->family;
		need[k].encap = v->encap;
		memcpy(need[k].addr, b->addr, sizeof(b->addr));
		k++;
	}
	qsort(need, k, sizeof(*need), id_need_cmp);
	*n = 0;
	for (i = 0; i < k; i++)
		*n += !i || id_need_cmp(&need[i - 1], &need[i]);
	free(need);
	return 0;
}

size_t xlbd_beid_free_count(const struct xlbd *d)
{
	return XLB_MAX_BACKENDS - d->beid_taken;
}

/*
 * Write the entries of ids in use that are new or changed.  An entry once
 * written is known to be in the map (only xlbd writes it), so a commit
 * costs nothing for the ids it did not touch; those without a next hop
 * are resolved again by xlbd_beid_refresh, every second.
 */
void xlbd_beid_sync(struct xlbd *d)
{
	uint32_t i;

	for (i = 0; i < d->beid_hi; i++) {
		struct xlb_err e = { "" };

		if (!d->beids[i].refs || d->beids[i].written)
			continue;
		if (!d->beids[i].nh_ok)
			beid_resolve(d, (uint16_t)i);
		if (beid_write(d, (uint16_t)i, &e))
			log_err("%s", e.msg);
	}
}

void xlbd_beid_count_vips(struct xlbd *d)
{
	uint32_t i, run = 0;
	size_t k;

	for (i = 0; i < d->beid_hi; i++) {
		d->beids[i].vips_before = d->beids[i].vips;
		d->beids[i].vips = 0;
		d->beids[i].vips_run = 0;
	}
	/* backends are sorted by VIP: a VIP's are one run */
	for (k = 0; k < d->state.n_backends; k++) {
		struct xlbd_beid *b;

		if (!k || xlb_vip_key_cmp(&d->state.backends[k - 1].vip,
					  &d->state.backends[k].vip))
			run++;
		if (d->rt_bes[k].id >= d->beid_hi)
			continue;
		b = &d->beids[d->rt_bes[k].id];
		if (b->vips_run != run) {
			b->vips_run = run;
			b->vips++;
		}
	}
	for (i = 0; i < d->beid_hi; i++)
		if (d->beids[i].vips_before > 1 && d->beids[i].vips == 1)
			xlb_dp_backend_stats_clear(&d->dp, (uint16_t)i);
}

static bool hop_same(const struct xlb_nh *a, const struct xlb_nh *b)
{
	return a->ifindex == b->ifindex && a->family == b->family &&
	       !memcmp(a->via, b->via, sizeof(a->via));
}

/*
 * The neighbour entries resolution made for the next hops of freed ids
 * (n of them, in hops) go when no id in use goes through them (on-link
 * backends are their own next hop; a gateway serves many).
 */
static void hops_release(struct xlbd *d, const struct xlb_nh *hops, size_t n)
{
	struct xlb_nh *used = NULL;
	size_t k, j, n_used = 0;
	uint32_t i;

	if (!n)
		return;
	used = calloc(d->beid_taken ? d->beid_taken : 1, sizeof(*used));
	if (!used)
		return;		/* kept: the kernel probes them, no harm */
	for (i = 0; i < d->beid_hi; i++) {
		const struct xlbd_beid *b = &d->beids[i];

		if (b->refs && n_used < d->beid_taken &&
		    !xlb_neigh_hop(d->neigh, b->family, b->addr,
				   &used[n_used], NULL))
			n_used++;
	}
	for (k = 0; k < n; k++) {
		struct xlb_err e = { "" };
		char a[XLB_ADDR_STR_MAX];
		bool skip = false;
		int ret;

		/* still needed, or released already for another freed id */
		for (j = 0; j < n_used && !skip; j++)
			skip = hop_same(&hops[k], &used[j]);
		for (j = 0; j < k && !skip; j++)
			skip = hop_same(&hops[k], &hops[j]);
		if (skip)
			continue;
		ret = xlb_neigh_release(d->neigh, &hops[k], &e);
		if (ret < 0)
			log_warn("%s", e.msg);
		else if (ret)
			log_info("next hop %s: its neighbour entry removed (no backend goes through it)",
				 xlb_addr_str(hops[k].family, hops[k].via, a));
	}
	free(used);
}

/*
 * Clear the entries of ids nobody uses any more; they are free again, and
 * so are the neighbour entries made for them.
 */
void xlbd_beid_release(struct xlbd *d)
{
	struct xlb_nh *hops = NULL;
	size_t n_hops = 0, cap = 0;
	uint32_t i;

	for (i = 0; i < d->beid_hi; i++) {
		if (d->beids[i].refs || !d->beids[i].family)
			continue;
		if (d->neigh && n_hops == cap) {
			struct xlb_nh *h = realloc(hops, (cap ? 2 * cap : 16) *
							 sizeof(*h));

			if (h) {
				hops = h;
				cap = cap ? 2 * cap : 16;
			}
		}
		if (d->neigh && n_hops < cap &&
		    !xlb_neigh_hop(d->neigh, d->beids[i].family,
				   d->beids[i].addr, &hops[n_hops], NULL))
			n_hops++;
		xlb_dp_backend_clear(&d->dp, (uint16_t)i);
		beid_hash_remove(d, (uint16_t)i);
		memset(&d->beids[i], 0, sizeof(d->beids[i]));
		d->beid_taken--;
	}
	while (d->beid_hi && !beid_taken(&d->beids[d->beid_hi - 1]))
		d->beid_hi--;
	hops_release(d, hops, n_hops);
	free(hops);
}

/* Re-resolve the next hop of every id in use; write what changed. */
void xlbd_beid_refresh(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->beid_hi; i++) {
		struct xlbd_beid *b = &d->beids[i];
		bool had = b->nh_ok;
		struct xlb_nh before = b->nh;
		struct xlb_err e = { "" };

		if (!b->refs)
			continue;
		beid_resolve(d, (uint16_t)i);
		if (b->written && b->nh_ok == had &&
		    (!had || (before.ifindex == b->nh.ifindex &&
			      !memcmp(before.dmac, b->nh.dmac, 6) &&
			      !memcmp(before.smac, b->nh.smac, 6))))
			continue;
		if (beid_write(d, (uint16_t)i, &e))
			log_err("%s", e.msg);
		else
			log_debug("backend %zu: next hop %s", i,
				  b->nh_ok ? "resolved" : "unknown");
	}
}

/*
 * The ids of the pinned backend map (a restart): every valid entry's id is
 * taken by its address, and its next hop is known.
 */
int xlbd_beid_adopt(struct xlbd *d)
{
	uint32_t id;

	/*
	 * Every id from the mapped array: a batch lookup has the kernel
	 * copy all XLB_MAX_BACKENDS entries one by one, a large part of a
	 * small restart.  Nothing else writes the map while xlbd starts.
	 */
	for (id = 0; id < XLB_MAX_BACKENDS; id++) {
		struct xlb_backend b = d->dp.backend_map[id];
		struct xlbd_beid *e;

		if (!(b.flags & XLB_BE_F_VALID))
			continue;
		e = &d->beids[id];
		memset(e, 0, sizeof(*e));
		e->family = b.family;
		e->encap = b.encap;
		memcpy(e->addr, b.addr, sizeof(e->addr));
		if (b.flags & XLB_BE_F_NEXTHOP) {
			e->nh_ok = true;
			e->nh.ifindex = b.ifindex;
			memcpy(e->nh.dmac, b.dmac, sizeof(b.dmac));
			memcpy(e->nh.smac, b.smac, sizeof(b.smac));
		}
		/* the entry as xlbd writes it: no need to write it again */
		e->written = b.flags == (XLB_BE_F_VALID |
					 (e->nh_ok ? XLB_BE_F_NEXTHOP : 0));
	}
	beid_hash_rebuild(d);
	return 0;
}

int xlbd_beid_init(struct xlbd *d)
{
	d->beids = xlb_mem_alloc(XLB_MAX_BACKENDS * sizeof(*d->beids), true);
	d->beid_hash_size = 1u << 17;
	d->beid_hash = calloc(d->beid_hash_size, sizeof(*d->beid_hash));
	if (!d->beids || !d->beid_hash)
		return -ENOMEM;
	return 0;
}

void xlbd_beid_free(struct xlbd *d)
{
	free(d->beids);
	free(d->beid_hash);
	d->beids = NULL;
	d->beid_hash = NULL;
}
