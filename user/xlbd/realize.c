// SPDX-License-Identifier: GPL-2.0
/*
 * Realizing the desired state: runtime ids, health checks, tables and the
 * data path's maps.  Everything here runs on the event loop with d->lock
 * held.
 *
 * Order of writes in a commit, so that the data path never follows a
 * reference to something not written yet: global config, backend entries
 * (new ids), tables, VIP entries; then removals in the reverse order: VIP
 * entries, tables, backend entries.  Each table is published whole (map in
 * map, DESIGN contract 4).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "attach.h"
#include "config.h"
#include "xlbd.h"

/* --- data-path backend ids: one per (family, address, encapsulation) ----- */

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

static void beid_hash_rebuild(struct xlbd *d)
{
	uint32_t id;

	memset(d->beid_hash, 0, d->beid_hash_size * sizeof(*d->beid_hash));
	for (id = 0; id < XLB_MAX_BACKENDS; id++)
		if (d->beids[id].family)
			beid_hash_insert(d, (uint16_t)id);
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

/* The id of (family, encap, addr), allocating the lowest free one. */
static long beid_get(struct xlbd *d, uint8_t family, uint8_t encap,
		     const __be32 addr[4])
{
	long id = beid_find(d, family, encap, addr);
	struct xlbd_beid *b;

	if (id >= 0)
		return id;
	for (id = 0; id < XLB_MAX_BACKENDS; id++)
		if (!beid_taken(&d->beids[id]))
			break;
	if (id == XLB_MAX_BACKENDS)
		return -ENOSPC;
	b = &d->beids[id];
	memset(b, 0, sizeof(*b));
	b->family = family;
	b->encap = encap;
	memcpy(b->addr, addr, sizeof(b->addr));
	beid_hash_insert(d, (uint16_t)id);
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

	beid_entry(&d->beids[id], &e);
	/* redirecting out of the next hop's interface needs it in the devmap */
	if (e.flags & XLB_BE_F_NEXTHOP)
		xlb_dp_tx_port_add(&d->dp, e.ifindex);
	return xlb_dp_backend_set(&d->dp, id, &e, err);
}

static void hc_index_rebuild(struct xlbd *d);
static size_t hc_index_find(const struct xlbd *d, uint64_t id);

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

/* --- tables --------------------------------------------------------------- */

static void specs_free(struct xlb_backend_spec *specs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free((char *)specs[i].name);
	free(specs);
}

static void rt_vip_free(struct xlbd_vip *rv)
{
	xlb_table_free(&rv->table);
	specs_free(rv->specs, rv->n_specs);
	rv->specs = NULL;
	rv->n_specs = 0;
}

/*
 * The table inputs of VIP i: specs of its backends (by name, as the state
 * keeps them) with their effective state, and whether panic mode holds.
 */
static int vip_specs(struct xlbd *d, size_t vi, struct xlb_backend_spec **out,
		     size_t *n_out, bool *panic)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];
	struct xlbd_vip *rv = &d->rt_vips[vi];
	struct xlb_backend_spec *specs;
	size_t first = 0, n = 0, i;
	uint32_t eligible = 0, down = 0;

	n = xlbd_vip_backends(d, vi, &first);
	specs = calloc(n ? n : 1, sizeof(*specs));
	if (!specs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[first + i];

		if (b->admin == XLB_ADMIN_ACTIVE && b->weight) {
			eligible++;
			down += xlbd_backend_down(d, vi, first + i);
		}
	}
	*panic = xlb_hc_panic(eligible, down, v->panic_pct);
	rv->eligible = eligible;
	rv->down = down;
	for (i = 0; i < n; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[first + i];
		const struct xlbd_be *rb = &d->rt_bes[first + i];
		struct xlb_backend_spec *sp = &specs[i];

		sp->name = strdup(b->name);
		if (!sp->name) {
			specs_free(specs, i);
			return -ENOMEM;
		}
		sp->weight = b->weight;
		sp->id = rb->id;
		if (b->admin == XLB_ADMIN_DOWN)
			sp->state = XLB_BACKEND_DOWN;
		else if (b->admin == XLB_ADMIN_DRAIN)
			sp->state = XLB_BACKEND_DRAIN;
		else if (!*panic && xlbd_backend_down(d, vi, first + i))
			sp->state = XLB_BACKEND_DOWN;
		else
			sp->state = XLB_BACKEND_ACTIVE;
	}
	*out = specs;
	*n_out = n;
	return 0;
}

static bool specs_equal(const struct xlb_backend_spec *a, size_t na,
			const struct xlb_backend_spec *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].weight != b[i].weight || a[i].id != b[i].id ||
		    a[i].state != b[i].state || strcmp(a[i].name, b[i].name))
			return false;
	return true;
}

static void table_params(const struct xlbd *d, const struct xlb_vip_conf *v,
			 struct xlb_table_params *p)
{
	memset(p, 0, sizeof(*p));
	p->algo = v->algo;
	p->size = v->table_size;
	p->vnodes = v->vnodes;
	p->key = d->state.global.key;
}

/*
 * Bringing tables up to date with their inputs, in three steps: decide on
 * the event loop which VIPs' inputs changed (prepare), build and publish
 * those tables on worker threads (work: table builds are independent, and
 * publishing waits for an RCU grace period in the kernel, which concurrent
 * publishers share), then record the results on the event loop (finish).
 * A table equal slot for slot to the published one is not published again
 * (so an adopting daemon causes no churn), but its inputs are remembered.
 */
struct table_job {
	size_t vi;
	uint32_t id;
	uint32_t map_id;	/* of the table published */
	uint64_t inputs;
	struct xlb_table_params p;
	struct xlb_backend_spec *specs;
	size_t n;
	const struct xlb_table *old;	/* published, or NULL */
	struct xlb_table t;
	bool published;
	int ret;
	struct xlb_err err;
	double build_ms, publish_ms;
};

/* FNV-1a over everything a table depends on. */
static uint64_t inputs_digest(const struct xlb_table_params *p,
			      const struct xlb_backend_spec *sp, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	const uint8_t *b;
	size_t i, k;

#define MIX(ptr, len)						\
	do {							\
		b = (const uint8_t *)(ptr);			\
		for (k = 0; k < (len); k++)			\
			h = (h ^ b[k]) * 1099511628211ull;	\
	} while (0)
	MIX(p, sizeof(*p));
	for (i = 0; i < n; i++) {
		MIX(sp[i].name, strlen(sp[i].name) + 1);
		MIX(&sp[i].weight, sizeof(sp[i].weight));
		MIX(&sp[i].id, sizeof(sp[i].id));
		MIX(&sp[i].state, sizeof(sp[i].state));
	}
#undef MIX
	return h;
}

const struct xlb_table *xlbd_vip_table(struct xlbd *d, size_t vi)
{
	struct xlbd_vip *rv = &d->rt_vips[vi];
	struct xlb_err err = { "" };
	struct xlb_table t;

	if (!rv->published)
		return NULL;
	if (!rv->lazy)
		return &rv->table;
	if (xlb_dp_table_read_map(rv->map_id, &t, &err) ||
	    t.size != rv->table.size) {
		char vs[XLB_VIP_STR_MAX];

		if (!err.msg[0])
			xlb_table_free(&t);
		log_warn("VIP %s: the adopted table is gone (%s); publishing it again",
			 xlb_vip_str(&d->state.vips[vi].key, vs),
			 err.msg[0] ? err.msg : "other size");
		rv->lazy = false;
		rv->published = false;
		d->dirty = true;
		return NULL;
	}
	rv->table = t;
	rv->lazy = false;
	return &rv->table;
}

/* A job for VIP vi if its inputs changed; 0 with *need false otherwise. */
static int table_prepare(struct xlbd *d, size_t vi, struct table_job *j,
			 bool *need)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];
	struct xlbd_vip *rv = &d->rt_vips[vi];
	bool panic;
	int ret;

	*need = false;
	memset(j, 0, sizeof(*j));
	table_params(d, v, &j->p);
	ret = vip_specs(d, vi, &j->specs, &j->n, &panic);
	if (ret)
		return ret;
	if (panic != rv->panic) {
		char vs[XLB_VIP_STR_MAX];

		if (panic)
			log_err("VIP %s: PANIC: %u of %u backends are down (more than %u%%); keeping all of them in the table",
				xlb_vip_str(&v->key, vs), rv->down, rv->eligible,
				v->panic_pct);
		else
			log_notice("VIP %s: panic over: %u of %u backends down",
				   xlb_vip_str(&v->key, vs), rv->down,
				   rv->eligible);
		rv->panic = panic;
	}
	if (rv->published && !memcmp(&j->p, &rv->params, sizeof(j->p)) &&
	    specs_equal(j->specs, j->n, rv->specs, rv->n_specs)) {
		specs_free(j->specs, j->n);
		j->specs = NULL;
		return 0;
	}
	j->inputs = inputs_digest(&j->p, j->specs, j->n);
	if (rv->prev_valid && rv->prev_inputs == j->inputs) {
		/*
		 * Adopting: the previous daemon published a table from these
		 * very inputs; take its record, read the table only when
		 * someone asks (reading a map of maps waits for a grace
		 * period, which a restart of 1000 VIPs cannot afford).
		 */
		rv->prev_valid = false;
		rv->specs = j->specs;
		rv->n_specs = j->n;
		rv->params = j->p;
		rv->inputs = j->inputs;
		rv->fingerprint = rv->prev_fp;
		rv->map_id = rv->prev_map_id;
		rv->in_table = rv->prev_in_table;
		rv->table.size = j->p.size;
		rv->table.slots = NULL;
		rv->lazy = true;
		rv->published = true;
		j->specs = NULL;
		return 0;
	}
	rv->prev_valid = false;
	j->vi = vi;
	j->id = rv->id;
	j->old = rv->published && rv->table.slots ? &rv->table : NULL;
	*need = true;
	return 0;
}

/* On a worker: no daemon state is touched but the job and the maps. */
static void table_work(struct xlb_dp *dp, struct table_job *j)
{
	double t0 = xlbd_now(), t1;

	j->ret = xlb_table_build(&j->t, &j->p, j->specs, j->n, &j->err);
	t1 = xlbd_now();
	j->build_ms = (t1 - t0) * 1e3;
	if (j->ret)
		return;
	if (j->old && j->t.size == j->old->size &&
	    !memcmp(j->t.slots, j->old->slots,
		    j->t.size * sizeof(*j->t.slots)))
		return;
	j->ret = xlb_dp_table_publish_id(dp, j->id, &j->t, &j->map_id,
					 &j->err);
	j->publish_ms = (xlbd_now() - t1) * 1e3;
	j->published = !j->ret;
}

/* Distinct primaries of t: one pass, whatever the number of backends. */
static uint32_t table_members(const struct xlb_table *t)
{
	static uint64_t seen[(XLB_BACKEND_ID_MAX + 64) / 64];
	uint32_t s, n = 0;

	memset(seen, 0, sizeof(seen));
	for (s = 0; s < t->size; s++) {
		uint16_t id = t->slots[s].primary;

		if (id > XLB_BACKEND_ID_MAX || seen[id / 64] & (1ull << id % 64))
			continue;
		seen[id / 64] |= 1ull << id % 64;
		n++;
	}
	return n;
}

/* Back on the event loop; false when the job failed (err logged). */
static bool table_finish(struct xlbd *d, struct table_job *j)
{
	struct xlbd_vip *rv = &d->rt_vips[j->vi];
	char vs[XLB_VIP_STR_MAX];

	xlb_vip_str(&d->state.vips[j->vi].key, vs);
	if (j->ret) {
		log_err("VIP %s: cannot publish its table: %s", vs, j->err.msg);
		xlb_table_free(&j->t);
		specs_free(j->specs, j->n);
		return false;
	}
	if (j->published) {
		rv->generation++;
		rv->changed_at = xlbd_now();
		rv->map_id = j->map_id;
	}
	rv->inputs = j->inputs;
	rv->lazy = false;
	xlb_table_free(&rv->table);
	rv->table = j->t;
	specs_free(rv->specs, rv->n_specs);
	rv->specs = j->specs;
	rv->n_specs = j->n;
	rv->params = j->p;
	rv->published = true;
	rv->fingerprint = xlb_table_fingerprint(&rv->table, rv->specs, rv->n_specs);
	rv->in_table = table_members(&rv->table);
	if (j->published)
		log_info("VIP %s: table generation %llu published (built in %.1f ms, switched in %.1f ms), fingerprint 0x%016llx, %u backends in it",
			 vs, (unsigned long long)rv->generation, j->build_ms,
			 j->publish_ms, (unsigned long long)rv->fingerprint,
			 rv->in_table);
	return true;
}

struct pool {
	struct xlb_dp *dp;
	struct table_job *jobs;
	size_t n;
	size_t next;		/* atomically taken */
};

static void *pool_worker(void *arg)
{
	struct pool *pl = arg;
	size_t k;

	while ((k = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED)) <
	       pl->n)
		table_work(pl->dp, &pl->jobs[k]);
	return NULL;
}

#define POOL_THREADS	16

/* Removing a table waits for a grace period too: share them as well. */
struct unpub {
	struct xlb_dp *dp;
	const uint32_t *ids;
	size_t n, next;
};

static void *unpub_worker(void *arg)
{
	struct unpub *u = arg;
	size_t k;

	while ((k = __atomic_fetch_add(&u->next, 1, __ATOMIC_RELAXED)) < u->n)
		xlb_dp_table_unpublish(u->dp, u->ids[k]);
	return NULL;
}

static void unpublish_all(struct xlbd *d, const uint32_t *ids, size_t n)
{
	struct unpub u = { &d->dp, ids, n, 0 };
	pthread_t th[POOL_THREADS];
	size_t k, started = 0;

	for (k = 0; k + 1 < POOL_THREADS && k + 1 < n; k++)
		if (!pthread_create(&th[k], NULL, unpub_worker, &u))
			started++;
	unpub_worker(&u);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}

static void pool_run(struct xlbd *d, struct table_job *jobs, size_t n)
{
	struct pool pl = { &d->dp, jobs, n, 0 };
	pthread_t th[POOL_THREADS];
	size_t k, started = 0;

	for (k = 0; k + 1 < POOL_THREADS && k + 1 < n; k++)
		if (!pthread_create(&th[k], NULL, pool_worker, &pl))
			started++;
	pool_worker(&pl);
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}

static void vip_value(const struct xlbd *d, size_t vi, struct xlb_vip *out)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];

	memset(out, 0, sizeof(*out));
	out->id = d->rt_vips[vi].id;
	out->flags = v->stateless ? XLB_VIP_F_STATELESS : 0;
	out->hash_mode = v->hash_mode;
	out->src4 = v->src4;
	memcpy(out->src6, v->src6, sizeof(out->src6));
}

static int vip_entry_sync(struct xlbd *d, size_t vi, struct xlb_err *err)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];
	struct xlb_vip want, cur;

	vip_value(d, vi, &want);
	if (!xlb_dp_vip_get(&d->dp, &v->key, &cur) &&
	    !memcmp(&cur, &want, sizeof(cur)))
		return 0;
	return xlb_dp_vip_set(&d->dp, &v->key, &want, err);
}

/* --- links ---------------------------------------------------------------- */

static bool link_runs_ours(const struct xlbd *d, int ifindex, int generic)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	__u32 id = 0;
	bool found = false;

	if (xlb_link_prog_id(ifindex, generic, &id) || !id)
		return false;
	if (id == d->prog_id)
		return true;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return false;
	while ((p = xdp_multiprog__next_prog(p, mp)))
		found |= xdp_program__id(p) == d->prog_id;
	xdp_multiprog__close(mp);
	return found;
}

static int link_attach(struct xlbd *d, struct xlbd_link *l,
		       struct xlb_err *err)
{
	int ifindex = (int)if_nametoindex(l->ifname);
	int ret;

	if (!ifindex)
		return xlb_errf(err, ENODEV, "link %s: no such interface",
				l->ifname);
	l->ifindex = ifindex;
	if (link_runs_ours(d, ifindex, l->mode == XLB_ATTACH_GENERIC)) {
		l->attached = true;
		l->error[0] = 0;
		return 0;
	}
	xlbd_libbpf_quiet = true;
	ret = xlb_link_attach(&d->xprog, NULL, ifindex,
			      l->mode == XLB_ATTACH_GENERIC, err);
	xlbd_libbpf_quiet = false;
	if (ret)
		return ret;
	/* the data path redirects out of every attached link */
	xlb_dp_tx_port_add(&d->dp, (__u32)ifindex);
	l->attached = true;
	l->error[0] = 0;
	log_notice("link %s: data path attached (%s)", l->ifname,
		   l->mode == XLB_ATTACH_GENERIC ? "generic" : "native");
	return 0;
}

static void link_detach(struct xlbd *d, struct xlbd_link *l)
{
	struct xlb_err err = { "" };
	int ifindex = (int)if_nametoindex(l->ifname);

	if (!l->attached || !ifindex)
		return;
	if (link_runs_ours(d, ifindex, l->mode == XLB_ATTACH_GENERIC) &&
	    xlb_link_detach(d->xprog, ifindex, l->mode == XLB_ATTACH_GENERIC,
			    &err))
		log_err("link %s: %s", l->ifname, err.msg);
	else
		log_notice("link %s: data path detached", l->ifname);
	xlb_dp_tx_port_del(&d->dp, (__u32)ifindex);
	l->attached = false;
}

void xlbd_detach_all(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		link_detach(d, &d->links[i]);
}

static struct xlbd_link *link_find(struct xlbd_link *links, size_t n,
				   const char *ifname)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(links[i].ifname, ifname))
			return &links[i];
	return NULL;
}

/*
 * New link list for s: links kept as they are, new ones attached.  On a
 * failed attach the ones attached here are detached again and the error
 * returned; *out is then NULL.
 */
static int links_prepare(struct xlbd *d, const struct xlb_state *s,
			 struct xlbd_link **out, struct xlb_err *err)
{
	struct xlbd_link *nl = calloc(s->n_links ? s->n_links : 1, sizeof(*nl));
	size_t i, j;
	int ret;

	*out = NULL;
	if (!nl)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < s->n_links; i++) {
		struct xlbd_link *old = link_find(d->links, d->n_links,
						  s->links[i].ifname);

		if (old && old->mode == s->links[i].mode) {
			nl[i] = *old;
			continue;
		}
		snprintf(nl[i].ifname, sizeof(nl[i].ifname), "%s",
			 s->links[i].ifname);
		nl[i].mode = s->links[i].mode;
		if (old)	/* mode changes: detach the old way first */
			link_detach(d, old);
		ret = link_attach(d, &nl[i], err);
		if (ret && d->lenient_links) {
			snprintf(nl[i].error, sizeof(nl[i].error), "%s",
				 err->msg);
			log_err("%s (retrying every second)", err->msg);
			continue;
		}
		if (ret) {
			for (j = 0; j < i; j++)
				if (!link_find(d->links, d->n_links,
					       nl[j].ifname))
					link_detach(d, &nl[j]);
			free(nl);
			return ret;
		}
	}
	*out = nl;
	return 0;
}

/* --- commit --------------------------------------------------------------- */

/* Distinct (family, address, encap) of s: the data-path ids it needs. */
struct id_need {
	uint8_t family, encap;
	__be32 addr[4];
};

static int id_need_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct id_need));
}

static int count_ids(struct xlbd *d, const struct xlb_state *s, size_t *n)
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

static size_t free_ids(const struct xlbd *d)
{
	size_t id, n = 0;

	for (id = 0; id < XLB_MAX_BACKENDS; id++)
		n += !beid_taken(&d->beids[id]);
	return n;
}

/* Adopted from the pinned maps at start, matched by the first commit. */
struct adopted_vip {
	struct xlb_vip_key key;
	struct xlb_vip val;
	bool used;
};

static struct adopted_vip *adopted;
static size_t n_adopted;

static struct adopted_vip *adopted_find(const struct xlb_vip_key *key)
{
	size_t i;

	for (i = 0; i < n_adopted; i++)
		if (!adopted[i].used &&
		    !memcmp(&adopted[i].key, key, sizeof(*key)))
			return &adopted[i];
	return NULL;
}

static bool vip_id_used(const struct xlbd *d, const struct xlbd_vip *nv,
			size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (nv[i].id == id)
			return true;
	for (i = 0; i < n_adopted; i++)
		if (!adopted[i].used && adopted[i].val.id == id)
			return true;
	(void)d;
	return false;
}

static int prev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xlbd_prev *)a)->key,
		      ((const struct xlbd_prev *)b)->key);
}

/* xlbd_prev is sorted by key once it is loaded (runtime.c). */
static const struct xlbd_prev *prev_find(const char *key)
{
	struct xlbd_prev k;

	if (!xlbd_n_prev)
		return NULL;
	snprintf(k.key, sizeof(k.key), "%s", key);
	return bsearch(&k, xlbd_prev, xlbd_n_prev, sizeof(k), prev_cmp);
}

static void backend_key(const struct xlb_backend_conf *b, char *out,
			size_t len)
{
	char v[XLB_VIP_STR_MAX], a[XLB_ADDR_STR_MAX];

	snprintf(out, len, "%s %s", xlb_vip_str(&b->vip, v),
		 xlb_addr_str(b->family, b->addr, a));
}

int xlbd_commit(struct xlbd *d, struct xlb_state *s, struct xlb_err *err)
{
	struct xlbd_vip *nv = NULL;
	struct xlbd_be *nb = NULL;
	struct xlbd_link *nl = NULL;
	struct xlb_state old;
	bool ids_freed = false, global_changed;
	size_t i, need;
	int ret;

	/* capacity first: nothing is touched when it does not fit */
	ret = count_ids(d, s, &need);
	if (ret)
		return xlb_errf(err, ENOMEM, "out of memory");
	if (need > free_ids(d))
		return xlb_errf(err, ENOSPC,
				"too many distinct backends: %zu more needed, %zu free of %u (a backend is counted once per address and encapsulation)",
				need, free_ids(d), XLB_MAX_BACKENDS);

	nv = calloc(s->n_vips ? s->n_vips : 1, sizeof(*nv));
	nb = calloc(s->n_backends ? s->n_backends : 1, sizeof(*nb));
	if (!nv || !nb) {
		free(nv);
		free(nb);
		return xlb_errf(err, ENOMEM, "out of memory");
	}

	/* VIP runtime: carried over by key, else adopted, else a new id */
	for (i = 0; i < s->n_vips; i++) {
		long o = vip_index_in(&d->state, &s->vips[i].key);
		struct adopted_vip *a;

		if (o >= 0) {
			nv[i] = d->rt_vips[o];
			memset(&d->rt_vips[o], 0, sizeof(d->rt_vips[o]));
			d->rt_vips[o].id = UINT32_MAX;	/* moved */
			continue;
		}
		a = adopted_find(&s->vips[i].key);
		if (a) {
			char vs[XLB_VIP_STR_MAX];
			const struct xlbd_prev *p;

			a->used = true;
			nv[i].id = a->val.id;
			p = prev_find(xlb_vip_str(&s->vips[i].key, vs));
			if (p) {
				nv[i].generation = p->generation;
				nv[i].changed_at = p->changed_at;
				nv[i].prev_valid = p->has_table;
				nv[i].prev_inputs = p->inputs;
				nv[i].prev_fp = p->fingerprint;
				nv[i].prev_map_id = p->map_id;
				nv[i].prev_in_table = p->in_table;
			}
			continue;
		}
		nv[i].id = UINT32_MAX;
	}
	for (i = 0; i < s->n_vips; i++) {
		uint32_t id = 0;

		if (nv[i].id != UINT32_MAX)
			continue;
		while (vip_id_used(d, nv, s->n_vips, id))
			id++;
		nv[i].id = id;
		nv[i].changed_at = xlbd_now();
	}
	/* old VIPs that stay were moved; the others are released below */

	/* backend runtime: carried over by (VIP, address), else new */
	for (i = 0; i < s->n_backends; i++) {
		const struct xlb_backend_conf *b = &s->backends[i];
		const struct xlb_vip_conf *v = xlb_state_find_vip(s, &b->vip);
		long o = backend_index_in(&d->state, b);
		long id = beid_get(d, b->family, v->encap, b->addr);
		bool wanted;

		if (id < 0) {	/* cannot happen after count_ids */
			ret = xlb_errf(err, ENOSPC, "no backend id left");
			goto undo;
		}
		d->beids[id].refs++;
		if (o >= 0) {
			nb[i] = d->rt_bes[o];
		} else {
			char k[160];
			const struct xlbd_prev *p;

			backend_key(b, k, sizeof(k));
			p = prev_find(k);
			nb[i].health = p ? p->health : XLB_HC_UNKNOWN;
		}
		nb[i].id = (uint16_t)id;
		{
			struct xlb_hc_target t;

			health_target(s, b, &t, &wanted);
			nb[i].hc_pending = wanted &&
				(!nb[i].hc_id ||
				 memcmp(&t, &nb[i].target, sizeof(t)));
			if (nb[i].hc_id && nb[i].hc_pending &&
			    (t.family != nb[i].target.family ||
			     t.port != nb[i].target.port ||
			     memcmp(t.addr, nb[i].target.addr, sizeof(t.addr)) ||
			     t.cfg.kind != nb[i].target.cfg.kind))
				nb[i].health = XLB_HC_UNKNOWN;	/* restarts */
			nb[i].target = t;
		}
		if (!wanted && nb[i].hc_id) {
			xlb_hc_del(d->hc, nb[i].hc_id);
			nb[i].hc_id = 0;
			nb[i].health = XLB_HC_UNKNOWN;
			nb[i].has_result = false;
		}
	}

	/* links last among the things that can fail */
	ret = links_prepare(d, s, &nl, err);
	if (ret)
		goto undo;

	/* accepted: from here on the maps follow */
	old = d->state;
	global_changed = memcmp(&old.global, &s->global, sizeof(s->global));
	d->state = *s;
	xlb_state_init(s);

	/* health checks of backends that went away */
	for (i = 0; i < old.n_backends; i++) {
		if (backend_index_in(&d->state, &old.backends[i]) < 0 &&
		    d->rt_bes[i].hc_id)
			xlb_hc_del(d->hc, d->rt_bes[i].hc_id);
		d->beids[d->rt_bes[i].id].refs--;
	}
	/* and of the ones that stay or came */
	for (i = 0; i < d->state.n_backends; i++) {
		struct xlb_err e = { "" };

		if (!nb[i].hc_pending)
			continue;
		nb[i].hc_pending = false;
		if (!nb[i].hc_id)
			nb[i].hc_id = ++d->next_hc_id;
		if (xlb_hc_set(d->hc, nb[i].hc_id, &nb[i].target, &e))
			log_err("backend %s: health check: %s",
				d->state.backends[i].name, e.msg);
	}

	free(d->rt_bes);
	d->rt_bes = nb;
	nb = NULL;
	hc_index_rebuild(d);

	{
		struct xlb_config c, cur;

		xlb_config_defaults(&c);
		c.key = d->state.global.key;
		c.src4 = d->state.global.src4;
		memcpy(c.src6, d->state.global.src6, sizeof(c.src6));
		c.gue_port = d->state.global.gue_port;
		c.mtu = d->state.global.mtu;
		c.ttl = d->state.global.ttl;
		c.udp_idle_s = d->state.global.udp_idle_s;
		ret = 0;
		if (global_changed || xlb_dp_config_get(&d->dp, &cur) ||
		    memcmp(&cur, &c, sizeof(c)))
			ret = xlb_dp_config_set(&d->dp, &c);
		if (ret)
			log_err("cannot write the global settings: %s",
				strerror(-ret));
	}

	/* backend entries that are new or changed */
	for (i = 0; i < XLB_MAX_BACKENDS; i++) {
		struct xlb_backend cur, want;
		struct xlb_err e = { "" };

		if (!d->beids[i].refs)
			continue;
		if (!d->beids[i].nh_ok)
			beid_resolve(d, (uint16_t)i);
		beid_entry(&d->beids[i], &want);
		if (!xlb_dp_backend_get(&d->dp, (uint16_t)i, &cur) &&
		    cur.flags == want.flags &&
		    !memcmp(cur.addr, want.addr, sizeof(cur.addr)) &&
		    cur.family == want.family && cur.encap == want.encap &&
		    !memcmp(cur.dmac, want.dmac, 12) &&
		    cur.ifindex == want.ifindex)
			continue;
		if (beid_write(d, (uint16_t)i, &e))
			log_err("%s", e.msg);
	}

	/* VIPs removed: entries first, then their tables (in parallel) */
	{
		uint32_t *gone = calloc(old.n_vips + n_adopted + 1,
					sizeof(*gone));
		struct xlb_err err = { "" };
		size_t n_gone = 0;

		xlb_dp_vip_hold(&d->dp);

		for (i = 0; i < old.n_vips; i++) {
			char vs[XLB_VIP_STR_MAX];

			if (d->rt_vips[i].id == UINT32_MAX)
				continue;	/* stays */
			xlb_dp_vip_del(&d->dp, &old.vips[i].key);
			if (gone)
				gone[n_gone++] = d->rt_vips[i].id;
			else
				xlb_dp_table_unpublish(&d->dp,
						       d->rt_vips[i].id);
			log_info("VIP %s removed",
				 xlb_vip_str(&old.vips[i].key, vs));
		}
		for (i = 0; i < n_adopted; i++) {	/* pinned, not wanted */
			if (adopted[i].used)
				continue;
			xlb_dp_vip_del(&d->dp, &adopted[i].key);
			if (gone)
				gone[n_gone++] = adopted[i].val.id;
			else
				xlb_dp_table_unpublish(&d->dp,
						       adopted[i].val.id);
			adopted[i].used = true;
		}
		/* packets stop seeing them before their tables go */
		if (xlb_dp_vip_release(&d->dp, &err)) {
			d->dirty = true;
			log_err("%s", err.msg);
		}
		unpublish_all(d, gone, n_gone);
		free(gone);
	}
	for (i = 0; i < old.n_vips; i++)
		rt_vip_free(&d->rt_vips[i]);
	free(d->rt_vips);
	d->rt_vips = nv;
	nv = NULL;
	xlbd_reconcile(d);

	/* backend ids nobody uses any more */
	for (i = 0; i < XLB_MAX_BACKENDS; i++) {
		if (d->beids[i].refs || !d->beids[i].family)
			continue;
		xlb_dp_backend_clear(&d->dp, (uint16_t)i);
		memset(&d->beids[i], 0, sizeof(d->beids[i]));
		ids_freed = true;
	}
	if (ids_freed)
		beid_hash_rebuild(d);

	/* links that went away */
	for (i = 0; i < d->n_links; i++)
		if (!link_find(nl, d->state.n_links, d->links[i].ifname))
			link_detach(d, &d->links[i]);
	free(d->links);
	d->links = nl;
	d->n_links = d->state.n_links;

	xlb_state_free(&old);
	/* adopting the previous daemon's state is no change */
	if (!(d->lenient_links && d->adopted))
		d->generation++;
	d->runtime_dirty = true;
	return 0;

undo:
	/* give back the references taken for nb */
	while (i-- > 0)
		d->beids[nb[i].id].refs--;
	/* ids allocated for this commit stay reserved until the next one */
	/* VIP runtime moved into nv goes back */
	{
		size_t k;

		for (k = 0; k < s->n_vips; k++) {
			long o = vip_index_in(&d->state, &s->vips[k].key);

			if (o >= 0 && d->rt_vips[o].id == UINT32_MAX)
				d->rt_vips[o] = nv[k];
		}
	}
	free(nv);
	free(nb);
	return ret;
}

void xlbd_reconcile(struct xlbd *d)
{
	struct table_job *jobs;
	double t0 = xlbd_now();
	size_t i, n = 0;
	bool any = false;

	jobs = calloc(d->state.n_vips ? d->state.n_vips : 1, sizeof(*jobs));
	if (!jobs) {
		d->dirty = true;
		return;
	}
	for (i = 0; i < d->state.n_vips; i++) {
		bool need;

		if (table_prepare(d, i, &jobs[n], &need)) {
			d->dirty = true;	/* out of memory: later */
			continue;
		}
		n += need;
	}
	/*
	 * Every VIP entry changed here, and every table that changed size,
	 * reaches packets in one index switch, at the release below.  The
	 * pool publishes on several threads: libxlb wants the hold for that.
	 */
	xlb_dp_vip_hold(&d->dp);
	pool_run(d, jobs, n);
	for (i = 0; i < n; i++) {
		if (!table_finish(d, &jobs[i])) {
			d->publish_errors++;
			d->rt_vips[jobs[i].vi].errors++;
			d->dirty = true;	/* try again on the next tick */
			continue;
		}
		d->rt_vips[jobs[i].vi].errors = 0;
		any |= jobs[i].published;
	}
	free(jobs);
	for (i = 0; i < d->state.n_vips; i++) {
		struct xlb_err err = { "" };
		char vs[XLB_VIP_STR_MAX];

		if (!d->rt_vips[i].published)
			continue;	/* no table yet: no entry either */
		if (vip_entry_sync(d, i, &err)) {
			d->publish_errors++;
			d->dirty = true;
			log_err("VIP %s: %s",
				xlb_vip_str(&d->state.vips[i].key, vs),
				err.msg);
		}
	}
	{
		struct xlb_err err = { "" };

		if (xlb_dp_vip_release(&d->dp, &err)) {
			d->publish_errors++;
			d->dirty = true;
			log_err("%s", err.msg);
		}
	}
	if (any) {
		d->last_publish_at = xlbd_now();
		d->updates++;
		d->update_seconds_last = d->last_publish_at - t0;
		d->update_seconds_sum += d->update_seconds_last;
		d->runtime_dirty = true;
	}
}

void xlbd_health_result(void *ctx, uint64_t id, const struct xlb_hc_result *r)
{
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
		if (r->flipped)
			log_warn("backend %s of VIP %s is %s (%s)",
				 d->state.backends[i].name,
				 xlb_vip_str(&d->state.backends[i].vip, vs),
				 r->health == XLB_HC_UP ? "up" : "down",
				 r->detail);
		rb->health = r->health;
		d->dirty = true;
		d->runtime_dirty = true;
		return;
	}
}

/* --- health check id -> backend index ----------------------------------- */

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

/* --- periodic ------------------------------------------------------------- */

void xlbd_refresh(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < XLB_MAX_BACKENDS; i++) {
		struct xlbd_beid *b = &d->beids[i];
		bool had = b->nh_ok;
		struct xlb_nh before = b->nh;
		struct xlb_err e = { "" };

		if (!b->refs)
			continue;
		beid_resolve(d, (uint16_t)i);
		if (b->nh_ok == had &&
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
	for (i = 0; i < d->n_links; i++) {
		struct xlbd_link *l = &d->links[i];
		struct xlb_err e = { "" };

		if (l->attached)
			continue;
		if (link_attach(d, l, &e))
			snprintf(l->error, sizeof(l->error), "%s", e.msg);
	}
}

/* --- adoption ------------------------------------------------------------- */

/* Remember a VIP of the pinned maps for the first commit to match. */
static int adopt_vip(const struct xlb_vip_key *k, const struct xlb_vip *v)
{
	struct adopted_vip *a;

	a = realloc(adopted, (n_adopted + 1) * sizeof(*adopted));
	if (!a)
		return -ENOMEM;
	adopted = a;
	a = &adopted[n_adopted++];
	memset(a, 0, sizeof(*a));
	a->key = *k;
	a->val = *v;
	return 0;
}

int xlbd_adopt_ids(struct xlbd *d)
{
	struct xlb_vip_key key, next;
	struct xlb_vip val;
	void *prev = NULL;
	uint32_t id;
	struct xlb_backend *all = calloc(XLB_MAX_BACKENDS, sizeof(*all));
	__u32 *keys = calloc(XLB_MAX_BACKENDS, sizeof(*keys));
	__u32 in = 0, out = 0, count = XLB_MAX_BACKENDS, got = 0;
	int ret = 0;

	if (!all || !keys) {
		free(all);
		free(keys);
		return -ENOMEM;
	}
	/* the whole array in a few system calls */
	while (got < XLB_MAX_BACKENDS && !ret) {
		count = XLB_MAX_BACKENDS - got;
		ret = bpf_map_lookup_batch(d->dp.backends, got ? &in : NULL,
					   &out, keys + got, all + got, &count,
					   NULL);
		got += count;
		in = out;
	}
	if (ret && ret != -ENOENT) {	/* old kernel: one by one */
		for (id = 0; id < XLB_MAX_BACKENDS; id++) {
			keys[id] = id;
			xlb_dp_backend_get(&d->dp, (uint16_t)id, &all[id]);
		}
		got = XLB_MAX_BACKENDS;
	}
	for (id = 0; id < got; id++) {
		struct xlb_backend b = all[id];
		struct xlbd_beid *e;

		if (keys[id] >= XLB_MAX_BACKENDS || !(b.flags & XLB_BE_F_VALID))
			continue;
		e = &d->beids[keys[id]];
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
	}
	free(all);
	free(keys);
	beid_hash_rebuild(d);

	while (!bpf_map_get_next_key(d->dp.vips, prev, &next)) {
		key = next;
		prev = &key;
		if (key.family & XLB_FAMILY_FRAG || !key.proto)
			continue;	/* derived entries */
		if (bpf_map_lookup_elem(d->dp.vips, &key, &val))
			continue;
		if (val.flags & XLB_VIP_F_ADDR_ONLY)
			continue;
		if (adopt_vip(&key, &val))
			return -ENOMEM;
	}
	log_info("adopted %zu VIPs from the pinned maps", n_adopted);
	return 0;
}

int xlbd_realize_init(struct xlbd *d)
{
	d->beids = calloc(XLB_MAX_BACKENDS, sizeof(*d->beids));
	d->beid_hash_size = 1u << 17;
	d->beid_hash = calloc(d->beid_hash_size, sizeof(*d->beid_hash));
	if (!d->beids || !d->beid_hash)
		return -ENOMEM;
	return 0;
}

void xlbd_realize_free(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->state.n_vips; i++)
		rt_vip_free(&d->rt_vips[i]);
	free(d->rt_vips);
	free(d->rt_bes);
	free(d->beids);
	free(d->beid_hash);
	free(d->links);
	free(d->hc_index);
	free(adopted);
	adopted = NULL;
	n_adopted = 0;
}
