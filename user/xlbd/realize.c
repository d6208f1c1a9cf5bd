// SPDX-License-Identifier: GPL-2.0
/*
 * Realizing the desired state: a commit makes a new state the daemon's,
 * in named steps (xlbd_commit); health verdicts and the periodic refresh
 * change the runtime beside it; at start the ids of a previous daemon's
 * pinned maps are adopted.  The pieces have files of their own: backend
 * ids (beid.c), tables (tables.c), links (link.c), the worker pool
 * (pool.c).  Everything here runs on the event loop with d->lock held,
 * but health verdicts: on the health checks' thread (checker.c), with it.
 *
 * Order of writes in a commit, so that the data path never follows a
 * reference to something not written yet: global config, backend entries
 * (new ids), tables, VIP entries; then removals in the reverse order: VIP
 * entries, tables, backend entries.  Each table is published whole (map in
 * map, docs/design.md contract 4).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "config.h"
#include "mono.h"
#include "xlbd.h"

/* --- lookups -------------------------------------------------------------- */

size_t xlbd_vip_backends(const struct xlbd *d, size_t vi, size_t *first)
{
	const struct xlb_vip_key *key = &d->state.vips[vi].key;
	size_t lo = 0, hi = d->state.n_backends, end;

	/* backends are sorted by VIP, then name: a VIP's are one run */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (xlb_vip_key_cmp(&d->state.backends[mid].vip, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (end = lo; end < d->state.n_backends &&
	     !xlb_vip_key_cmp(&d->state.backends[end].vip, key); end++)
		;
	return end - lo;
}

/* Index of a VIP in s (by libxlb's lookup), -1 if none. */
static long vip_index_in(const struct xlb_state *s,
			 const struct xlb_vip_key *key)
{
	const struct xlb_vip_conf *v = xlb_state_find_vip(s, key);

	return v ? v - s->vips : -1;
}

long xlbd_vip_index(const struct xlbd *d, const struct xlb_vip_key *key)
{
	return vip_index_in(&d->state, key);
}

/* Index of a backend in s, -1 if none (linear within its VIP's range). */
static long backend_index_in(const struct xlb_state *s,
			     const struct xlb_backend_conf *b)
{
	const struct xlb_backend_conf *f;

	f = xlb_state_find_backend(s, &b->vip, b->family, b->addr);
	return f ? f - s->backends : -1;
}

/*
 * Index of backend b in s, trying index guess first (the same place in an
 * unchanged state), -1 if none.
 */
static long backend_index_at(const struct xlb_state *s,
			     const struct xlb_backend_conf *b, size_t guess)
{
	const struct xlb_backend_conf *g = s->backends + guess;

	if (guess < s->n_backends && g->family == b->family &&
	    !memcmp(g->addr, b->addr, sizeof(g->addr)) &&
	    !xlb_vip_key_cmp(&g->vip, &b->vip))
		return (long)guess;
	return backend_index_in(s, b);
}

void xlbd_backend_health(const struct xlbd *d, size_t i, struct xlb_health *h)
{
	const struct xlb_backend_conf *b = &d->state.backends[i];
	const struct xlb_vip_conf *v = xlb_state_find_vip(&d->state, &b->vip);

	*h = b->health.kind == XLB_HEALTH_INHERIT && v ? v->health : b->health;
}

static void health_target(const struct xlb_state *s,
			  const struct xlb_backend_conf *b,
			  struct xlb_hc_target *t, bool *wanted)
{
	const struct xlb_vip_conf *v = xlb_state_find_vip(s, &b->vip);

	memset(t, 0, sizeof(*t));
	t->cfg = b->health.kind == XLB_HEALTH_INHERIT ? v->health : b->health;
	t->family = b->family;
	memcpy(t->addr, b->addr, sizeof(t->addr));
	t->port = t->cfg.port ? t->cfg.port : ntohs(b->vip.port);
	*wanted = b->admin != XLB_ADMIN_DOWN &&
		  t->cfg.kind != XLB_HEALTH_NONE &&
		  t->cfg.kind != XLB_HEALTH_INHERIT;
}

/* --- health check id -> backend index ------------------------------------ */

static int hc_ent_cmp(const void *a, const void *b)
{
	const struct xlbd_hc_ent *x = a, *y = b;

	return x->hc_id < y->hc_id ? -1 : x->hc_id > y->hc_id;
}

static void hc_index_rebuild(struct xlbd *d)
{
	size_t i, n = 0;

	free(d->hc_index);
	d->hc_index = calloc(d->state.n_backends ? d->state.n_backends : 1,
			     sizeof(*d->hc_index));
	d->n_hc_index = 0;
	if (!d->hc_index)
		return;
	for (i = 0; i < d->state.n_backends; i++) {
		if (!d->rt_bes[i].hc_id)
			continue;
		d->hc_index[n].hc_id = d->rt_bes[i].hc_id;
		d->hc_index[n].idx = i;
		n++;
	}
	qsort(d->hc_index, n, sizeof(*d->hc_index), hc_ent_cmp);
	d->n_hc_index = n;
}

/* Backend index of a health check; state.n_backends if none. */
static size_t hc_index_find(const struct xlbd *d, uint64_t id)
{
	struct xlbd_hc_ent k = { .hc_id = id }, *e;

	if (!d->hc_index)
		return d->state.n_backends;
	e = bsearch(&k, d->hc_index, d->n_hc_index, sizeof(k), hc_ent_cmp);
	return e ? e->idx : d->state.n_backends;
}

/*
 * Failover at the verdict (docs/datapath.md, "Members"): the member
 * record of the backend's (VIP, backend) pair gets the state the rebuilt
 * table will give it, one store, before the loop rebuilds: down, new
 * flows whose slot's primary it is take the slot's secondary from the
 * next packet on; up, it is active again (a member active before its
 * slots exist takes nothing until the rebuilt table names it, which is
 * the order publication keeps, dp_member.c).  Only where the verdict
 * alone decides: not for a drained or weight-0 backend (the table keeps
 * it draining), not under panic (the table keeps every backend), not for
 * a health-consensus VIP in a cluster (the hosts' majority decides, at
 * the rebuild), and only for a member the published table lists.
 *
 * A publication computed before the verdict cannot undo the store: the
 * loop computes a table's member list and publishes it under d->lock,
 * and the verdict arrives under d->lock too, so every publication after
 * the store was computed from the verdict.  On the health checks'
 * thread, unprivileged: the member map is this process's mapping.
 */
static void verdict_to_member(struct xlbd *d, size_t bi, uint64_t t0_ns)
{
	const struct xlb_backend_conf *b = &d->state.backends[bi];
	const struct xlbd_be *rb = &d->rt_bes[bi];
	struct xlb_err err = { "" };
	char vs[XLB_VIP_STR_MAX];
	struct xlbd_vip *rv;
	uint32_t eligible = 0, down = 0;
	size_t first, n, k;
	long vi = xlbd_vip_index(d, &b->vip);
	bool listed = false;
	__u8 st;
	double ms;

	if (vi < 0 || b->admin != XLB_ADMIN_ACTIVE || !b->weight ||
	    !xlbd_health_local(d, (size_t)vi))
		return;
	rv = &d->rt_vips[vi];
	for (k = 0; rv->published && k < rv->n_specs; k++)
		listed |= rv->specs[k].id == rb->id;
	if (!listed)
		return;
	n = xlbd_vip_backends(d, (size_t)vi, &first);
	for (k = first; k < first + n; k++) {
		const struct xlb_backend_conf *o = &d->state.backends[k];

		if (o->admin == XLB_ADMIN_ACTIVE && o->weight) {
			eligible++;
			down += xlbd_backend_down(d, (size_t)vi, k);
		}
	}
	if (xlb_hc_panic(eligible, down, d->state.vips[vi].panic_pct))
		return;
	st = xlbd_backend_down(d, (size_t)vi, bi) ? XLB_MEMBER_DOWN :
						    XLB_MEMBER_ACTIVE;
	xlb_vip_str(&b->vip, vs);
	if (xlb_dp_member_set(&d->dp, rv->id, rb->id, st, &err)) {
		log_err("backend %s of VIP %s: cannot mark it %s in the data path: %s (the rebuilt table will)",
			b->name, vs, xlb_member_state_name(st), err.msg);
		return;
	}
	ms = (double)(xlb_mono_ns() - t0_ns) / 1e6;
	if (st == XLB_MEMBER_ACTIVE) {
		d->failover.ups++;
		log_info("backend %s of VIP %s: active in the data path %.3f ms after the verdict",
			 b->name, vs, ms);
		return;
	}
	d->failover.downs++;
	d->failover.last_ms = ms;
	if (ms > d->failover.max_ms)
		d->failover.max_ms = ms;
	d->failover.last_at = xlbd_now();
	log_info("backend %s of VIP %s: down in the data path %.3f ms after the verdict; its new flows take their slots' secondaries",
		 b->name, vs, ms);
}

void xlbd_health_result(void *ctx, uint64_t id, const struct xlb_hc_result *r)
{
	uint64_t t0 = xlb_mono_ns();	/* the verdict, as delivered */
	struct xlbd *d = ctx;
	size_t i;

	d->hc_results[r->ok]++;
	i = hc_index_find(d, id);
	if (i < d->state.n_backends) {
		struct xlbd_be *rb = &d->rt_bes[i];
		char vs[XLB_VIP_STR_MAX];

		rb->has_result = true;
		rb->last = *r;
		rb->last_at = xlbd_now();
		/*
		 * An unknown verdict (too few results yet) keeps what we know,
		 * e.g. the health a previous daemon left for this backend.
		 */
		if (r->health == XLB_HC_UNKNOWN || r->health == rb->health)
			return;
		rb->health = r->health;
		verdict_to_member(d, i, t0);	/* first: nothing waits */
		if (r->flipped)
			log_warn("backend %s of VIP %s is %s (%s)",
				 d->state.backends[i].name,
				 xlb_vip_str(&d->state.backends[i].vip, vs),
				 r->health == XLB_HC_UP ? "up" : "down",
				 r->detail);
		d->dirty = true;
		d->runtime_dirty = true;
		d->hc_flips++;
		return;
	}
}

/* --- commit --------------------------------------------------------------- */

/*
 * A commit in progress: the runtime the new state s will have (VIPs nv,
 * backends nb, links nl), built beside the daemon's until it is accepted.
 */
struct commit {
	struct xlb_state *s;
	struct xlbd_vip *nv;
	struct xlbd_be *nb;
	size_t nb_refs;		/* nb[0 .. nb_refs - 1] hold an id reference */
	struct xlbd_link *nl;
	struct xlb_state old;	/* the state it replaced, once accepted */
	bool global_changed;
};

static int adopted_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct xlbd_adopted *)a)->key,
		      &((const struct xlbd_adopted *)b)->key,
		      sizeof(struct xlb_vip_key));
}

/* The adopted VIPs are sorted by key (xlbd_adopt_ids). */
static struct xlbd_adopted *adopted_find(struct xlbd *d,
					 const struct xlb_vip_key *key)
{
	struct xlbd_adopted k, *a;

	if (!d->n_adopted_vips)
		return NULL;
	k.key = *key;
	a = bsearch(&k, d->adopted_vips, d->n_adopted_vips, sizeof(k),
		    adopted_cmp);
	return a && !a->used ? a : NULL;
}

/* Capacity first: nothing is touched when the new state does not fit. */
static int commit_check_capacity(struct xlbd *d, const struct xlb_state *s,
				 struct xlb_err *err)
{
	size_t need;

	if (xlbd_beid_needed(d, s, &need))
		return xlb_errf(err, ENOMEM, "out of memory");
	if (need > xlbd_beid_free_count(d))
		return xlb_errf(err, ENOSPC,
				"too many distinct backends: %zu more needed, %zu free of %u (a backend is counted once per address and encapsulation)",
				need, xlbd_beid_free_count(d), XLB_MAX_BACKENDS);
	return 0;
}

/* A VIP adopted from the pinned maps takes its id and its record. */
static void vip_adopt(struct xlbd *d, struct xlbd_vip *rv,
		      const struct xlb_vip_key *key, struct xlbd_adopted *a)
{
	char vs[XLB_VIP_STR_MAX];
	const struct xlbd_prev *p;

	a->used = true;
	rv->id = a->val.id;
	rv->entry = a->val;	/* what the VIP map holds */
	rv->entry_ok = true;
	p = xlbd_prev_find(d, xlb_vip_str(key, vs));
	if (!p)
		return;
	rv->generation = p->generation;
	rv->changed_at = p->changed_at;
	rv->prev_valid = p->has_table;
	rv->prev_inputs = p->inputs;
	rv->prev_fp = p->fingerprint;
	rv->prev_map_id = p->map_id;
	rv->prev_in_table = p->in_table;
}

/*
 * VIP runtime: carried over by key (the old entry marked moved), else
 * adopted, else a new id, the lowest no VIP uses.
 */
static void commit_vips(struct xlbd *d, struct commit *c)
{
	const struct xlb_state *s = c->s;
	uint64_t used[XLB_MAX_VIPS / 64];
	uint32_t next = 0;
	size_t i;

	for (i = 0; i < s->n_vips; i++) {
		long o = xlbd_vip_index(d, &s->vips[i].key);
		struct xlbd_adopted *a;

		if (o >= 0) {
			c->nv[i] = d->rt_vips[o];
			memset(&d->rt_vips[o], 0, sizeof(d->rt_vips[o]));
			d->rt_vips[o].id = UINT32_MAX;	/* moved */
			continue;
		}
		a = adopted_find(d, &s->vips[i].key);
		if (a) {
			vip_adopt(d, &c->nv[i], &s->vips[i].key, a);
			continue;
		}
		c->nv[i].id = UINT32_MAX;
	}
	/* ids in use: the VIPs kept or adopted, the pinned ones not yet */
	memset(used, 0, sizeof(used));
	for (i = 0; i < s->n_vips; i++)
		if (c->nv[i].id < XLB_MAX_VIPS)
			used[c->nv[i].id / 64] |= 1ull << c->nv[i].id % 64;
	for (i = 0; i < d->n_adopted_vips; i++)
		if (!d->adopted_vips[i].used &&
		    d->adopted_vips[i].val.id < XLB_MAX_VIPS)
			used[d->adopted_vips[i].val.id / 64] |=
				1ull << d->adopted_vips[i].val.id % 64;
	for (i = 0; i < s->n_vips; i++) {
		uint32_t id = next;

		if (c->nv[i].id != UINT32_MAX)
			continue;
		while (id < XLB_MAX_VIPS && used[id / 64] & 1ull << id % 64)
			id++;
		if (id < XLB_MAX_VIPS)	/* else its publication fails */
			used[id / 64] |= 1ull << id % 64;
		next = id + 1;
		c->nv[i].id = id;
		c->nv[i].changed_at = xlbd_now();
	}
}

/*
 * The health check backend b wants: a new target, or one that changed,
 * is handed to the engine once the commit is accepted; a check whose
 * target, port or kind changed starts from unknown.
 */
static void backend_check(struct xlbd *d, const struct xlb_state *s,
			  const struct xlb_backend_conf *b, struct xlbd_be *rb)
{
	struct xlb_hc_target t;
	bool wanted;

	health_target(s, b, &t, &wanted);
	rb->hc_pending = wanted &&
		(!rb->hc_id || memcmp(&t, &rb->target, sizeof(t)));
	if (rb->hc_id && rb->hc_pending &&
	    (t.family != rb->target.family || t.port != rb->target.port ||
	     memcmp(t.addr, rb->target.addr, sizeof(t.addr)) ||
	     t.cfg.kind != rb->target.cfg.kind))
		rb->health = XLB_HC_UNKNOWN;	/* restarts */
	rb->target = t;
	if (!wanted && rb->hc_id) {
		xlb_hc_del(d->hc, rb->hc_id);
		rb->hc_id = 0;
		rb->health = XLB_HC_UNKNOWN;
		rb->has_result = false;
	}
}

/*
 * Backend runtime: carried over by (VIP, address), else new with the
 * health a previous daemon left; each takes a reference on its data-path
 * id (c->nb_refs of them, given back if the commit fails).
 */
static int commit_backends(struct xlbd *d, struct commit *c,
			   struct xlb_err *err)
{
	const struct xlb_state *s = c->s;
	long delta = 0;		/* old index - new index, last seen */
	size_t i;

	for (i = 0; i < s->n_backends; i++) {
		const struct xlb_backend_conf *b = &s->backends[i];
		const struct xlb_vip_conf *v = xlb_state_find_vip(s, &b->vip);
		long o = backend_index_at(&d->state, b, (size_t)((long)i + delta));
		long id = xlbd_beid_get(d, b->family, v->encap, b->addr);

		if (id < 0)	/* cannot happen after the capacity check */
			return xlb_errf(err, ENOSPC, "no backend id left");
		if (o >= 0)
			delta = o - (long)i;
		d->beids[id].refs++;
		c->nb_refs = i + 1;
		if (o >= 0) {
			c->nb[i] = d->rt_bes[o];
		} else {
			char k[XLBD_PREV_KEY_MAX];
			const struct xlbd_prev *p = NULL;

			/* only backends of known health have a record */
			if (d->n_prev_backends)
				p = xlbd_prev_find(d, xlbd_backend_key(b, k,
								       sizeof(k)));
			c->nb[i].health = p ? p->health : XLB_HC_UNKNOWN;
		}
		c->nb[i].id = (uint16_t)id;
		backend_check(d, s, b, &c->nb[i]);
	}
	return 0;
}

/* A failed commit: the daemon's runtime as it was. */
static void commit_undo(struct xlbd *d, struct commit *c)
{
	size_t k;

	/* give back the references taken for nb */
	while (c->nb_refs > 0)
		d->beids[c->nb[--c->nb_refs].id].refs--;
	/* ids allocated for this commit stay reserved until the next one */
	/* VIP runtime moved into nv goes back */
	for (k = 0; k < c->s->n_vips; k++) {
		long o = xlbd_vip_index(d, &c->s->vips[k].key);

		if (o >= 0 && d->rt_vips[o].id == UINT32_MAX)
			d->rt_vips[o] = c->nv[k];
	}
	free(c->nv);
	free(c->nb);
}

/* Accepted: s becomes the daemon's state, the old one is kept in c. */
static void commit_accept(struct xlbd *d, struct commit *c)
{
	c->old = d->state;
	c->global_changed = memcmp(&c->old.global, &c->s->global,
				   sizeof(c->s->global));
	d->state = *c->s;
	xlb_state_init(c->s);
}

/*
 * Health checks: those of backends that went away are deleted (and their
 * id references given back); those of the ones that stay or came and
 * changed are handed to the engine.  nb becomes the backend runtime.
 */
static void commit_health_checks(struct xlbd *d, struct commit *c)
{
	long delta = 0;		/* new index - old index, last seen */
	size_t i;

	for (i = 0; i < c->old.n_backends; i++) {
		long n = d->rt_bes[i].hc_id ?
			 backend_index_at(&d->state, &c->old.backends[i],
					  (size_t)((long)i + delta)) : 0;

		if (n < 0)
			xlb_hc_del(d->hc, d->rt_bes[i].hc_id);
		else if (d->rt_bes[i].hc_id)
			delta = n - (long)i;
		d->beids[d->rt_bes[i].id].refs--;
	}
	for (i = 0; i < d->state.n_backends; i++) {
		struct xlbd_be *rb = &c->nb[i];
		struct xlb_err e = { "" };

		if (!rb->hc_pending)
			continue;
		rb->hc_pending = false;
		if (!rb->hc_id)
			rb->hc_id = ++d->next_hc_id;
		if (xlb_hc_set(d->hc, rb->hc_id, &rb->target, &e))
			log_err("backend %s: health check: %s",
				d->state.backends[i].name, e.msg);
	}
	free(d->rt_bes);
	d->rt_bes = c->nb;
	c->nb = NULL;
	hc_index_rebuild(d);
}

/* The global settings, written when they changed or the map differs. */
static void commit_global(struct xlbd *d, const struct commit *c)
{
	const struct xlb_global_conf *g = &d->state.global;
	struct xlb_config cfg, cur;
	__u32 rate;
	int ret = 0;

	xlb_config_defaults(&cfg);
	cfg.key = g->key;
	cfg.src4 = g->src4;
	memcpy(cfg.src6, g->src6, sizeof(cfg.src6));
	cfg.gue_port = g->gue_port;
	cfg.mtu = g->mtu;
	cfg.ttl = g->ttl;
	cfg.udp_idle_s = g->udp_idle_s;
	if (c->global_changed || xlb_dp_config_get(&d->dp, &cur) ||
	    memcmp(&cur, &cfg, sizeof(cfg)))
		ret = xlb_dp_config_set(&d->dp, &cfg);
	if (ret)
		log_err("cannot write the global settings: %s", strerror(-ret));
	/* written only when it differs: writing refills the buckets */
	if (xlb_dp_ct_guard_get(&d->dp, &rate) || rate != g->new_flow_rate) {
		ret = xlb_dp_ct_guard_set(&d->dp, g->new_flow_rate);
		if (ret)
			log_err("cannot write the new-flow rate: %s",
				strerror(-ret));
	}
}

/*
 * VIPs that went away, and pinned VIPs no commit wanted: their entries
 * first, in one index switch, then their tables (on the worker pool).
 */
static void commit_vips_removed(struct xlbd *d, const struct commit *c)
{
	uint32_t *gone = calloc(c->old.n_vips + d->n_adopted_vips + 1,
				sizeof(*gone));
	struct xlb_err err = { "" };
	size_t i, n_gone = 0;

	xlb_dp_vip_hold(&d->dp);
	for (i = 0; i < c->old.n_vips; i++) {
		char vs[XLB_VIP_STR_MAX];

		if (d->rt_vips[i].id == UINT32_MAX)
			continue;	/* stays */
		xlb_dp_vip_del(&d->dp, &c->old.vips[i].key);
		if (gone)
			gone[n_gone++] = d->rt_vips[i].id;
		else
			xlb_dp_table_unpublish(&d->dp, d->rt_vips[i].id);
		log_info("VIP %s removed",
			 xlb_vip_str(&c->old.vips[i].key, vs));
	}
	for (i = 0; i < d->n_adopted_vips; i++) {	/* pinned, not wanted */
		struct xlbd_adopted *a = &d->adopted_vips[i];

		if (a->used)
			continue;
		xlb_dp_vip_del(&d->dp, &a->key);
		if (gone)
			gone[n_gone++] = a->val.id;
		else
			xlb_dp_table_unpublish(&d->dp, a->val.id);
		a->used = true;
	}
	/* packets stop seeing them before their tables go */
	if (xlb_dp_vip_release(&d->dp, &err)) {
		d->dirty = true;
		log_err("%s", err.msg);
	}
	xlbd_tables_unpublish(d, gone, n_gone);
	free(gone);
}

/* nv becomes the VIP runtime; the tables follow (xlbd_reconcile). */
static void commit_tables(struct xlbd *d, struct commit *c)
{
	size_t i;

	for (i = 0; i < c->old.n_vips; i++)
		xlbd_vip_rt_free(&d->rt_vips[i]);
	free(d->rt_vips);
	d->rt_vips = c->nv;
	c->nv = NULL;
	d->verify_next = 0;	/* indices moved: look at them all again */
	xlbd_reconcile(d);
}

int xlbd_commit(struct xlbd *d, struct xlb_state *s, struct xlb_err *err)
{
	struct commit c = { .s = s };
	int ret;

	ret = commit_check_capacity(d, s, err);
	if (ret)
		return ret;
	c.nv = calloc(s->n_vips ? s->n_vips : 1, sizeof(*c.nv));
	c.nb = xlb_mem_alloc(s->n_backends * sizeof(*c.nb), true);
	if (!c.nv || !c.nb) {
		free(c.nv);
		free(c.nb);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	commit_vips(d, &c);
	ret = commit_backends(d, &c, err);
	/* links last among the things that can fail */
	if (!ret)
		ret = xlbd_links_prepare(d, s, &c.nl, err);
	if (ret) {
		commit_undo(d, &c);
		return ret;
	}

	/* accepted: from here on the maps follow */
	commit_accept(d, &c);
	/* the new state's durable save overlaps its tables */
	if (d->save_on_accept)
		xlbd_save_begin(d);
	commit_health_checks(d, &c);
	commit_global(d, &c);
	xlbd_beid_sync(d);		/* backend entries new or changed */
	commit_vips_removed(d, &c);
	commit_tables(d, &c);
	xlbd_beid_release(d);		/* ids nobody uses any more */
	xlbd_beid_count_vips(d);	/* after the tables: see there */
	xlbd_links_commit(d, c.nl, d->state.n_links);
	xlb_state_free(&c.old);
	/* adopting the previous daemon's state is no change */
	if (!(d->lenient_links && d->adopted))
		d->generation++;
	d->runtime_dirty = true;
	d->ann.dirty = true;		/* VIPs, tables or links changed */
	return 0;
}

/* --- periodic ------------------------------------------------------------- */

void xlbd_refresh(struct xlbd *d)
{
	xlbd_beid_refresh(d);
	xlbd_links_retry(d);
}

/* --- adoption ------------------------------------------------------------- */

/* Remember a VIP of the pinned maps for the first commit to match. */
static int adopt_vip(struct xlbd *d, const struct xlb_vip_key *k,
		     const struct xlb_vip *v)
{
	struct xlbd_adopted *a;

	if (d->n_adopted_vips == d->cap_adopted_vips) {
		size_t cap = d->cap_adopted_vips ? 2 * d->cap_adopted_vips : 64;

		a = realloc(d->adopted_vips, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		d->adopted_vips = a;
		d->cap_adopted_vips = cap;
	}
	a = &d->adopted_vips[d->n_adopted_vips++];
	memset(a, 0, sizeof(*a));
	a->key = *k;
	a->val = *v;
	return 0;
}

/* One entry of the VIP map: the VIPs themselves are adopted. */
static int adopt_entry(struct xlbd *d, const struct xlb_vip_key *key,
		       const struct xlb_vip *val)
{
	if (key->family & XLB_FAMILY_FRAG || !key->proto ||
	    val->flags & XLB_VIP_F_ADDR_ONLY)
		return 0;	/* derived entries */
	return adopt_vip(d, key, val);
}

/* The VIP map in batches (a few system calls for 1000 VIPs). */
static int adopt_vips_batch(struct xlbd *d)
{
	enum { CHUNK = 1024 };
	struct xlb_vip_key *keys = calloc(CHUNK, sizeof(*keys));
	struct xlb_vip *vals = calloc(CHUNK, sizeof(*vals));
	__u32 in = 0, out = 0, count, i;
	void *from = NULL;
	int ret = -ENOMEM;

	while (keys && vals) {
		count = CHUNK;
		ret = bpf_map_lookup_batch(d->dp.vips, from, &out, keys, vals,
					   &count, NULL);
		if (ret && ret != -ENOENT)
			break;
		for (i = 0; i < count; i++)
			if (adopt_entry(d, &keys[i], &vals[i])) {
				ret = -ENOMEM;
				goto out;
			}
		if (ret == -ENOENT) {	/* past the last bucket */
			ret = 0;
			break;
		}
		in = out;
		from = &in;
	}
out:
	free(keys);
	free(vals);
	return ret;
}

int xlbd_adopt_ids(struct xlbd *d)
{
	struct xlb_vip_key key, next;
	struct xlb_vip val;
	void *prev = NULL;
	int ret;

	ret = xlbd_beid_adopt(d);
	if (ret)
		return ret;
	ret = adopt_vips_batch(d);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {	/* no batch operations: one entry at a time */
		d->n_adopted_vips = 0;
		while (!bpf_map_get_next_key(d->dp.vips, prev, &next)) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(d->dp.vips, &key, &val))
				continue;
			if (adopt_entry(d, &key, &val))
				return -ENOMEM;
		}
	}
	qsort(d->adopted_vips, d->n_adopted_vips, sizeof(*d->adopted_vips),
	      adopted_cmp);
	log_info("adopted %zu VIPs from the pinned maps", d->n_adopted_vips);
	return 0;
}

int xlbd_realize_init(struct xlbd *d)
{
	return xlbd_beid_init(d);
}

void xlbd_realize_free(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->state.n_vips; i++)
		xlbd_vip_rt_free(&d->rt_vips[i]);
	free(d->rt_vips);
	free(d->rt_bes);
	xlbd_beid_free(d);
	free(d->links);
	free(d->hc_index);
	free(d->adopted_vips);
	d->adopted_vips = NULL;
	d->n_adopted_vips = 0;
}
