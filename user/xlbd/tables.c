// SPDX-License-Identifier: GPL-2.0
/*
 * Tables: each VIP's table rebuilt from its inputs (backends, weights,
 * states, health, panic) when they change, published whole (map in map,
 * docs/design.md contract 4), and the VIP entries that name them.  On the
 * event loop, under d->lock; builds and publishes run on the worker pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "xlbd.h"

/* Specs and their names are one allocation (vip_specs). */
static void specs_free(struct xlb_backend_spec *specs)
{
	free(specs);
}

/*
 * Drop one reference to a table whose memory twins may share (refs: how
 * many hold it, or NULL when only this one does).
 */
static void table_unref(struct xlb_table *t, uint32_t *refs)
{
	if (refs && --*refs) {
		memset(t, 0, sizeof(*t));
		return;
	}
	free(refs);
	xlb_table_free(t);
}

void xlbd_vip_rt_free(struct xlbd_vip *rv)
{
	table_unref(&rv->table, rv->table_refs);
	rv->table_refs = NULL;
	specs_free(rv->specs);
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
	size_t first = 0, n = 0, i, len = 0;
	uint32_t eligible = 0, down = 0;
	char *names;

	n = xlbd_vip_backends(d, vi, &first);
	for (i = 0; i < n; i++)
		len += strlen(d->state.backends[first + i].name) + 1;
	/* one allocation: 100 000 names are as many mallocs otherwise */
	specs = malloc((n ? n : 1) * sizeof(*specs) + len);
	if (!specs)
		return -ENOMEM;
	names = (char *)(specs + (n ? n : 1));
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

		len = strlen(b->name) + 1;
		memset(sp, 0, sizeof(*sp));
		sp->name = memcpy(names, b->name, len);
		names += len;
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
	double live_at;		/* unix seconds: the publication returned */
	uint64_t fingerprint;	/* of t */
	uint32_t members;	/* backends with slots in t */
	long moved;		/* slots that moved from old, -1: unknown */
	/* the job with the same inputs that builds for both, or NULL */
	const struct table_job *twin;
	uint32_t *refs;		/* jobs and VIPs sharing t, or NULL */
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
	char vs[XLB_VIP_STR_MAX];
	const char *why = NULL;
	struct xlb_table t;

	if (!rv->published)
		return NULL;
	if (!rv->lazy)
		return &rv->table;
	/*
	 * Adopted: read now, and checked against the runtime file's
	 * fingerprint, which is what was shown of it until now.
	 */
	if (xlb_dp_table_read_map(rv->map_id, &t, &err))
		why = err.msg;
	else if (t.size != rv->table.size)
		why = "it has another size";
	else if (xlb_table_fingerprint(&t, rv->specs, rv->n_specs) !=
		 rv->fingerprint)
		why = "its slots differ from the runtime file's fingerprint";
	if (why) {
		log_warn("VIP %s: the adopted table cannot be used (%s); publishing it again",
			 xlb_vip_str(&d->state.vips[vi].key, vs), why);
		if (!err.msg[0])
			xlb_table_free(&t);
		rv->lazy = false;
		rv->published = false;
		d->dirty = true;
		return NULL;
	}
	rv->table = t;
	rv->table_refs = NULL;
	rv->lazy = false;
	return &rv->table;
}

bool xlbd_tables_verify(struct xlbd *d, double budget_ms)
{
	double until = xlbd_now() + budget_ms / 1e3;

	while (d->verify_next < d->state.n_vips) {
		size_t vi = d->verify_next++;

		if (d->rt_vips[vi].lazy) {
			xlbd_vip_table(d, vi);
			if (xlbd_now() >= until)
				break;
		}
	}
	return d->verify_next < d->state.n_vips;
}

size_t xlbd_tables_unverified(const struct xlbd *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->state.n_vips; i++)
		n += d->rt_vips[i].lazy;
	return n;
}

/*
 * The runtime file's record of VIP vi names the table map the data path
 * publishes for it (one lookup, no copy): else the record is not this
 * data path's (another daemon's pins, a table replaced by hand) and the
 * table is built and published again.
 */
static bool adopted_map_ok(struct xlbd *d, size_t vi)
{
	struct xlbd_vip *rv = &d->rt_vips[vi];
	char vs[XLB_VIP_STR_MAX];
	__u32 id = 0;
	int ret;

	ret = xlb_dp_table_map_id(&d->dp, rv->id, &id);
	if (!ret && id == rv->prev_map_id)
		return true;
	log_warn("VIP %s: the runtime file records table map %u, the data path %s %u; building and publishing its table again",
		 xlb_vip_str(&d->state.vips[vi].key, vs), rv->prev_map_id,
		 ret ? "has none for VIP id" : "publishes map",
		 ret ? rv->id : id);
	return false;
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
		specs_free(j->specs);
		j->specs = NULL;
		return 0;
	}
	j->inputs = inputs_digest(&j->p, j->specs, j->n);
	if (rv->prev_valid && rv->prev_inputs == j->inputs &&
	    adopted_map_ok(d, vi)) {
		/*
		 * Adopting: the previous daemon published a table from these
		 * very inputs, and the data path holds the table map it
		 * recorded; take its record, read the table only when
		 * someone asks (a copy of 1000 tables is what a restart
		 * cannot afford; xlbd_vip_table checks the fingerprint then).
		 */
		rv->prev_valid = false;
		rv->specs = j->specs;
		rv->n_specs = j->n;
		rv->params = j->p;
		rv->inputs = j->inputs;
		rv->fingerprint = rv->prev_fp;
		rv->map_id = rv->prev_map_id;
		rv->in_table = rv->prev_in_table;
		table_unref(&rv->table, rv->table_refs);
		rv->table_refs = NULL;
		rv->table.size = j->p.size;
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

/*
 * On workers: no daemon state is touched but the job and the maps.  A
 * table is built (a twin takes its builder's: table_twin_ref), then
 * published; what the daemon shows of it (fingerprint, members, slots
 * moved) is computed after it is live.
 */
static void table_build(struct table_job *j)
{
	double t0 = xlbd_now();

	j->moved = -1;
	j->ret = xlb_table_build(&j->t, &j->p, j->specs, j->n, &j->err);
	j->build_ms = (xlbd_now() - t0) * 1e3;
}

static void table_publish(struct xlb_dp *dp, struct table_job *j)
{
	const struct table_job *tw = j->twin && !j->twin->ret ? j->twin : NULL;
	double t1 = xlbd_now();
	bool same_size;

	if (j->ret)
		return;
	same_size = j->old && j->t.size == j->old->size;
	if (!same_size || (j->t.slots != j->old->slots &&
			   memcmp(j->t.slots, j->old->slots,
				  j->t.size * sizeof(*j->t.slots))) ||
	    !xlb_table_members_equal(&j->t, j->old)) {
		/*
		 * A twin points at its builder's table map (published by
		 * now: builders go first), or gets one of its own if that
		 * cannot be.
		 */
		j->ret = 1;
		if (tw)
			j->ret = xlb_dp_table_share(dp, j->id, tw->id, &j->t,
						    &j->map_id, &j->err);
		if (j->ret)
			j->ret = xlb_dp_table_publish_id(dp, j->id, &j->t,
							 &j->map_id, &j->err);
		j->live_at = xlbd_now();
		j->publish_ms = (j->live_at - t1) * 1e3;
		j->published = !j->ret;
		if (j->ret)
			return;
		/* twins' old tables are often shared too: diffed once */
		if (same_size && tw && tw->old && tw->moved >= 0 &&
		    tw->old->slots == j->old->slots)
			j->moved = tw->moved;
		else if (same_size)
			j->moved = (long)xlb_table_diff(j->old, &j->t);
	}
	if (tw && tw->members) {	/* the same table, the same specs */
		j->fingerprint = tw->fingerprint;
		j->members = tw->members;
		return;
	}
	j->fingerprint = xlb_table_fingerprint_members(&j->t, j->specs, j->n,
						       &j->members);
}

struct table_jobs {
	struct xlb_dp *dp;
	struct table_job *jobs;
	const size_t *order;	/* of the jobs in this run */
};

static void table_build_run(void *ctx, size_t k)
{
	struct table_jobs *tj = ctx;

	table_build(&tj->jobs[tj->order[k]]);
}

static void table_publish_run(void *ctx, size_t k)
{
	struct table_jobs *tj = ctx;

	table_publish(tj->dp, &tj->jobs[tj->order[k]]);
}

static bool params_equal(const struct xlb_table_params *a,
			 const struct xlb_table_params *b)
{
	return a->algo == b->algo && a->size == b->size &&
	       a->vnodes == b->vnodes && a->key.k0 == b->key.k0 &&
	       a->key.k1 == b->key.k1;
}

/*
 * Tables are a function of their inputs: of jobs with the same inputs
 * (VIPs of one backend pool, say a service on several ports) the first
 * builds, and the others (its twins) share its table, in the daemon's
 * memory and in the data path's (xlb_dp_table_share).  order gets the
 * builders first, then the twins; returns how many build.
 */
static size_t table_twins(struct table_job *jobs, size_t n, size_t *order)
{
	size_t cap = 16, i, k, built = 0, copies = 0, *slot;

	while (cap < 2 * n)
		cap *= 2;
	slot = calloc(cap, sizeof(*slot));	/* job index + 1, 0 empty */
	for (i = 0; i < n; i++) {
		struct table_job *j = &jobs[i];

		j->twin = NULL;
		for (k = j->inputs & (cap - 1); slot && slot[k];
		     k = (k + 1) & (cap - 1)) {
			const struct table_job *o = &jobs[slot[k] - 1];

			if (o->inputs == j->inputs &&
			    params_equal(&o->p, &j->p) &&
			    specs_equal(o->specs, o->n, j->specs, j->n)) {
				j->twin = o;
				break;
			}
		}
		if (slot && !j->twin)
			slot[k] = i + 1;
	}
	free(slot);
	for (i = 0; i < n; i++)
		if (!jobs[i].twin)
			order[built++] = i;
	for (i = 0; i < n; i++)
		if (jobs[i].twin)
			order[built + copies++] = i;
	return built;
}

/*
 * Threads for the twins' publications: one outer entry and the member
 * records each, work for the CPU, where threads beyond the cores only
 * contend for the locks, unless the kernel waits a grace period in each
 * switch of an outer entry (then many threads share one wait).
 */
static size_t table_share_threads(const struct xlb_dp *dp)
{
	uint64_t ns = xlb_dp_switch_ns(dp);

	return !ns || ns > XLBD_SWITCH_WAITS_NS ? XLBD_POOL_THREADS :
						  xlbd_cores();
}

/*
 * A twin takes its builder's table (on the event loop, after the builds):
 * both hold a reference to one copy of the slots and members.
 */
static void table_twin_ref(struct table_job *j, struct table_job *jobs)
{
	struct table_job *b = &jobs[j->twin - jobs];

	j->ret = b->ret;
	j->err = b->err;
	if (j->ret)
		return;
	if (!b->refs) {
		b->refs = malloc(sizeof(*b->refs));
		if (!b->refs) {
			j->ret = xlb_errf(&j->err, ENOMEM, "out of memory");
			return;
		}
		*b->refs = 1;
	}
	++*b->refs;
	j->refs = b->refs;
	j->t = b->t;
	j->moved = -1;
}

/* Back on the event loop; false when the job failed (err logged). */
static bool table_finish(struct xlbd *d, struct table_job *j)
{
	struct xlbd_vip *rv = &d->rt_vips[j->vi];
	char vs[XLB_VIP_STR_MAX], moved[64] = "";

	xlb_vip_str(&d->state.vips[j->vi].key, vs);
	if (j->ret) {
		log_err("VIP %s: cannot publish its table: %s", vs, j->err.msg);
		table_unref(&j->t, j->refs);
		specs_free(j->specs);
		return false;
	}
	if (j->published) {
		rv->generation++;
		rv->changed_at = xlbd_now();
		rv->map_id = j->map_id;
	}
	/* how much of the table moved (not known for a table never read) */
	if (j->published && j->moved >= 0)
		snprintf(moved, sizeof(moved), ", %ld of %u slots moved",
			 j->moved, j->t.size);
	rv->inputs = j->inputs;
	rv->lazy = false;
	table_unref(&rv->table, rv->table_refs);
	rv->table = j->t;
	rv->table_refs = j->refs;
	specs_free(rv->specs);
	rv->specs = j->specs;
	rv->n_specs = j->n;
	rv->params = j->p;
	rv->published = true;
	rv->fingerprint = j->fingerprint;
	rv->in_table = j->members;
	if (j->published)
		log_info("VIP %s: table generation %llu published (built in %.1f ms, switched in %.1f ms), fingerprint 0x%016llx, %u backends in it%s",
			 vs, (unsigned long long)rv->generation, j->build_ms,
			 j->publish_ms, (unsigned long long)rv->fingerprint,
			 rv->in_table, moved);
	return true;
}


static void vip_value(const struct xlbd *d, size_t vi, struct xlb_vip *out)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];

	memset(out, 0, sizeof(*out));
	out->id = d->rt_vips[vi].id;
	out->flags = v->stateless ? XLB_VIP_F_STATELESS : 0;
	if (v->quic) {
		out->flags |= XLB_VIP_F_QUIC;
		out->quic_cr_sid = XLB_QUIC_CR_SID(v->quic_cr, v->quic_sid_len);
		out->quic_nonce = v->quic_nonce_len;
	}
	out->hash_mode = v->hash_mode;
	out->src4 = v->src4;
	memcpy(out->src6, v->src6, sizeof(out->src6));
}

/* The VIP's entry, written when it differs from the one written last. */
static int vip_entry_sync(struct xlbd *d, size_t vi, struct xlb_err *err)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];
	struct xlbd_vip *rv = &d->rt_vips[vi];
	struct xlb_vip want;
	int ret;

	vip_value(d, vi, &want);
	if (rv->entry_ok && !memcmp(&rv->entry, &want, sizeof(want)))
		return 0;
	ret = xlb_dp_vip_set(&d->dp, &v->key, &want, err);
	rv->entry_ok = !ret;
	rv->entry = want;
	return ret;
}


/*
 * The server IDs of QUIC VIPs (bpf/quic.h): every backend with a quic-id
 * of a quic VIP, unless it is down (by its state, or by health checks
 * outside panic), to its id.  A draining backend keeps its connections,
 * so its ID stays.  Written whole after each change; a backend leaves
 * the map before its id can go to another (xlbd_beid_release follows).
 */
static void quic_sids_sync(struct xlbd *d)
{
	struct xlb_quic_sid *sids;
	struct xlb_err err = { "" };
	size_t vi, i, first, n_be, n = 0;

	sids = calloc(d->state.n_backends ? d->state.n_backends : 1,
		      sizeof(*sids));
	if (!sids) {
		d->dirty = true;
		return;
	}
	for (vi = 0; vi < d->state.n_vips; vi++) {
		const struct xlb_vip_conf *v = &d->state.vips[vi];

		if (!v->quic || d->rt_vips[vi].id == UINT32_MAX)
			continue;
		n_be = xlbd_vip_backends(d, vi, &first);
		for (i = first; i < first + n_be; i++) {
			const struct xlb_backend_conf *b = &d->state.backends[i];

			if (!b->quic_id_len || b->admin == XLB_ADMIN_DOWN ||
			    (!d->rt_vips[vi].panic &&
			     xlbd_backend_down(d, vi, i)))
				continue;
			memset(&sids[n], 0, sizeof(sids[n]));
			sids[n].key.vip = d->rt_vips[vi].id;
			memcpy(sids[n].key.sid, b->quic_id, b->quic_id_len);
			sids[n].backend = d->rt_bes[i].id;
			n++;
		}
	}
	if (xlb_dp_quic_sids_sync(&d->dp, sids, n, &err)) {
		d->publish_errors++;
		d->dirty = true;
		log_err("QUIC server IDs: %s", err.msg);
	}
	free(sids);
}

void xlbd_reconcile(struct xlbd *d)
{
	struct table_job *jobs;
	size_t *order;
	double t0 = xlbd_now(), t_pool, live_at = 0;
	size_t i, n = 0;
	bool any = false;

	d->ann.dirty = true;	/* a VIP may have lost or gained its backends */
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
	t_pool = xlbd_now();
	order = calloc(n ? n : 1, sizeof(*order));
	if (order) {
		/*
		 * The builders on a thread per core; their publications,
		 * which mostly wait for the kernel (fresh pages of a new
		 * map, a grace period on some kernels), on many threads;
		 * then the twins, which share the builders' maps.
		 */
		size_t built = table_twins(jobs, n, order);
		struct table_jobs tj = { &d->dp, jobs, order };

		xlbd_pool_run(xlbd_cores(), built, table_build_run, &tj);
		for (i = built; i < n; i++)
			table_twin_ref(&jobs[order[i]], jobs);
		xlbd_pool_run(XLBD_POOL_THREADS, built, table_publish_run,
			      &tj);
		tj.order = order + built;
		xlbd_pool_run(table_share_threads(&d->dp), n - built,
			      table_publish_run, &tj);
		free(order);
	} else {
		for (i = 0; i < n; i++) {
			jobs[i].twin = NULL;
			table_build(&jobs[i]);
			table_publish(&d->dp, &jobs[i]);
		}
	}
	d->ph.pool = (xlbd_now() - t_pool) * 1e3;
	d->ph.build = d->ph.publish = 0;
	for (i = 0; i < n; i++) {
		if (jobs[i].build_ms > d->ph.build)
			d->ph.build = jobs[i].build_ms;
		if (jobs[i].publish_ms > d->ph.publish)
			d->ph.publish = jobs[i].publish_ms;
		if (jobs[i].published && jobs[i].live_at > live_at)
			live_at = jobs[i].live_at;
	}
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
	quic_sids_sync(d);
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
		/* new entries, or tables of another size: live at the switch */
		bool index = d->dp.vip_dirty;

		if (xlb_dp_vip_release(&d->dp, &err)) {
			d->publish_errors++;
			d->dirty = true;
			log_err("%s", err.msg);
		} else if (index && any) {
			live_at = xlbd_now();
		}
	}
	d->ph.reconcile = (xlbd_now() - t0) * 1e3 - d->ph.pool;
	if (any) {
		/* a table is live when the data path can see it */
		d->last_publish_at = live_at;
		d->updates++;
		d->update_seconds_last = d->last_publish_at - t0;
		d->update_seconds_sum += d->update_seconds_last;
		d->runtime_dirty = true;
	}
}

struct unpublish {
	struct xlb_dp *dp;
	const uint32_t *ids;
};

static void unpublish_one(void *ctx, size_t k)
{
	struct unpublish *u = ctx;

	xlb_dp_table_unpublish(u->dp, u->ids[k]);
}

/* Remove the tables of VIP ids (their entries gone), on the worker pool. */
void xlbd_tables_unpublish(struct xlbd *d, const uint32_t *ids, size_t n)
{
	xlbd_pool_run(XLBD_POOL_THREADS, n, unpublish_one,
		      &(struct unpublish){ &d->dp, ids });
}
