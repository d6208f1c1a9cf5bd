// SPDX-License-Identifier: GPL-2.0
/*
 * Results of the read commands (fields listed in user/lib/proto.h), built from
 * the desired state, the runtime and the maps.  Called with d->lock held.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "config.h"
#include "explain.h"
#include "number.h"
#include "xlbd.h"

#define jadd(o, k, v)	json_object_object_add((o), (k), (v))
#define jstr(s)		json_object_new_string(s)
#define jint(v)		json_object_new_int64((int64_t)(v))
#define jbool(v)	json_object_new_boolean((v) ? 1 : 0)
#define jdbl(v)		json_object_new_double(v)

static const char *const health_kinds[] = {
	[XLB_HEALTH_NONE] = "none", [XLB_HEALTH_TCP] = "tcp",
	[XLB_HEALTH_HTTP] = "http", [XLB_HEALTH_UDP] = "udp",
	[XLB_HEALTH_INHERIT] = "inherit",
};
static const char *const hash_names[] = { "5tuple", "3tuple", "src" };
static const char *const encap_names[] = { "ipip", "gue" };
static const char *const admin_names[] = { "active", "drain", "down" };
static const char *const health_names[] = { "unknown", "up", "down" };

static json_object *health_json(const struct xlb_health *h)
{
	json_object *o = json_object_new_object();

	jadd(o, "kind", jstr(h->kind <= XLB_HEALTH_INHERIT ?
			     health_kinds[h->kind] : "?"));
	jadd(o, "port", jint(h->port));
	jadd(o, "interval_ms", jint(h->interval_ms));
	jadd(o, "timeout_ms", jint(h->timeout_ms));
	jadd(o, "rise", jint(h->rise));
	jadd(o, "fall", jint(h->fall));
	jadd(o, "http_path", jstr(h->http_path));
	jadd(o, "http_status", jint(h->http_status));
	return o;
}

static json_object *fp_json(uint64_t fp)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%016llx", (unsigned long long)fp);
	return jstr(b);
}

static const char *const action_names[XLB_ACTIONS] = {
	"aborted", "drop", "pass", "tx", "redirect",
};

/* Actions by name; *total gets their sum. */
static json_object *actions_json(const __u64 *act, __u64 *total)
{
	json_object *o = json_object_new_object();
	int k;

	*total = 0;
	for (k = 0; k < XLB_ACTIONS; k++) {
		jadd(o, action_names[k], jint(act[k]));
		*total += act[k];
	}
	return o;
}

/*
 * Link i's packets by action (bpf/structs.h, per-link counters): its
 * own and, for a bond, its slaves' (XDP runs on the slaves' receive
 * path), each slave's also on its own; and the other attached links
 * whose counters it shares.
 */
static void link_counters(struct xlbd *d, size_t i, json_object *o)
{
	const struct xlbd_link *l = &d->links[i];
	__u64 sum[XLB_ACTIONS] = { 0 }, act[XLB_ACTIONS], total;
	json_object *lo, *sh = NULL;
	int lowers[16], n, k, a;
	char name[IF_NAMESIZE];
	size_t j;

	xlb_dp_link_actions(&d->dp, (__u32)l->ifindex, sum);
	n = xlbd_link_lowers(l->ifindex, lowers, 16);
	if (n > 0) {
		json_object *arr = json_object_new_array();

		for (k = 0; k < n && k < 16; k++) {
			memset(act, 0, sizeof(act));
			xlb_dp_link_actions(&d->dp, (__u32)lowers[k], act);
			for (a = 0; a < XLB_ACTIONS; a++)
				sum[a] += act[a];
			lo = json_object_new_object();
			jadd(lo, "ifname", jstr(if_indextoname((unsigned)lowers[k],
							       name) ?: "?"));
			jadd(lo, "ifindex", jint(lowers[k]));
			jadd(lo, "actions", actions_json(act, &total));
			jadd(lo, "packets", jint(total));
			json_object_array_add(arr, lo);
		}
		jadd(o, "lower", arr);
	}
	jadd(o, "actions", actions_json(sum, &total));
	jadd(o, "packets", jint(total));
	for (j = 0; j < d->n_links; j++) {
		if (j == i || d->links[j].ifindex <= 0 ||
		    XLB_LINK_SLOT(d->links[j].ifindex) !=
		    XLB_LINK_SLOT(l->ifindex))
			continue;
		if (!sh)
			sh = json_object_new_array();
		json_object_array_add(sh, jstr(d->links[j].ifname));
	}
	if (sh)
		jadd(o, "counters_shared_with", sh);
}

json_object *xlbd_show_links(struct xlbd *d)
{
	json_object *r = json_object_new_object(), *a = json_object_new_array();
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		const struct xlbd_link *l = &d->links[i];
		json_object *o = json_object_new_object();

		jadd(o, "ifname", jstr(l->ifname));
		jadd(o, "ifindex", jint(l->ifindex));
		jadd(o, "mode", jstr(l->mode == XLB_ATTACH_GENERIC ?
				     "generic" : "native"));
		jadd(o, "attached", jbool(l->attached));
		jadd(o, "prog_id", jint(l->attached ? d->prog_id : 0));
		if (l->error[0])
			jadd(o, "error", jstr(l->error));
		if (l->ifindex > 0)
			link_counters(d, i, o);
		json_object_array_add(a, o);
	}
	jadd(r, "links", a);
	return r;
}

/* Where the start's time went (struct xlbd_start_phases), in ms. */
static json_object *start_json(const struct xlbd *d)
{
	json_object *o = json_object_new_object();

#define ST(name)	jadd(o, #name, jdbl(d->st.name))
	ST(init);
	ST(state);
	ST(metrics);
	ST(data_path);
	ST(runtime);
	ST(adopt);
	ST(commit);
	ST(tables);
	ST(rest);
	ST(listen);
	ST(loop);
	ST(answer);
#undef ST
	return o;
}

/* The state cache: its file, whether it is current, what the start did. */
static json_object *cache_json(const struct xlbd *d)
{
	json_object *o = json_object_new_object();

	jadd(o, "file", jstr(d->cache_file));
	jadd(o, "state", jstr(xlbd_cache_state(d)));
	if (d->cacher.error[0])
		jadd(o, "error", jstr(d->cacher.error));
	jadd(o, "start", jstr(d->cacher.start[0] ? d->cacher.start :
			      "no state.conf"));
	return o;
}

/* VIPs whose last table publication failed (retried every tick). */
static size_t tables_failing(const struct xlbd *d)
{
	size_t i, n = 0;

	for (i = 0; d->rt_vips && i < d->state.n_vips; i++)
		n += d->rt_vips[i].errors > 0;
	return n;
}

json_object *xlbd_show_status(struct xlbd *d)
{
	json_object *r = json_object_new_object(), *links;
	__u32 cap;

	jadd(r, "version", jstr(XLBD_VERSION));
	jadd(r, "pid", jint(getpid()));
	jadd(r, "instance", jstr(d->o.instance));
	jadd(r, "uptime_s", jdbl(xlbd_now() - d->started_at));
	jadd(r, "generation", jint(d->generation));
	jadd(r, "config_file", jstr(d->o.config));
	jadd(r, "state_file", jstr(d->state_file));
	jadd(r, "state_cache", cache_json(d));
	jadd(r, "pin_dir", jstr(d->pin_dir));
	jadd(r, "adopted", jbool(d->adopted));
	jadd(r, "tables_unverified", jint(xlbd_tables_unverified(d)));
	jadd(r, "tables_failing", jint(tables_failing(d)));
	if (!xlb_dp_ct_capacity(&d->dp, &cap))
		jadd(r, "conntrack_capacity", jint(cap));
	jadd(r, "vips", jint(d->state.n_vips));
	jadd(r, "backends", jint(d->state.n_backends));
	links = xlbd_show_links(d);
	jadd(r, "links", json_object_get(json_object_object_get(links,
								"links")));
	json_object_put(links);
	{	/* health verdicts written to the data path at once */
		json_object *f = json_object_new_object();

		jadd(f, "downs", jint(d->failover.downs));
		jadd(f, "ups", jint(d->failover.ups));
		jadd(f, "last_ms", jdbl(d->failover.last_ms));
		jadd(f, "max_ms", jdbl(d->failover.max_ms));
		jadd(f, "last_at", jdbl(d->failover.last_at));
		jadd(r, "failover", f);
	}
	jadd(r, "bound_marks", jint(d->bound_marks));
	if (d->cl)
		jadd(r, "cluster", xlbd_cluster_status(d));
	jadd(r, "announce", xlbd_announce_show(d));
	jadd(r, "start_ms", start_json(d));
	return r;
}

static int find_vip(struct xlbd *d, const char *s, long *idx,
		    struct xlb_err *err)
{
	struct xlb_vip_key k;
	char vs[XLB_VIP_STR_MAX];
	int ret;

	ret = xlb_vip_parse(s, &k, err);
	if (ret)
		return ret;
	*idx = xlbd_vip_index(d, &k);
	if (*idx < 0)
		return xlb_errf(err, ENOENT, "no VIP %s", xlb_vip_str(&k, vs));
	return 0;
}

/* Bytes the kernel charges for the VIP's table map (M + 1 u32 values). */
static uint64_t table_bytes(uint32_t m)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t b = ((uint64_t)m + 1) * sizeof(struct xlb_slot);

	/* mmapable arrays are page-rounded */
	return (b + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
}

static json_object *vip_stats_json(struct xlbd *d, uint32_t id)
{
	json_object *o = json_object_new_object();
	struct xlb_vip_stats st = { 0 };

	xlb_dp_vip_stats(&d->dp, id, &st);
	jadd(o, "packets", jint(st.packets));
	jadd(o, "bytes", jint(st.bytes));
	jadd(o, "new_flows", jint(st.new_flows));
	jadd(o, "ct_hits", jint(st.ct_hits));
	jadd(o, "ct_misses", jint(st.ct_misses));
	jadd(o, "cache_hits", jint(st.cache_hits));
	return o;
}

/* A quic VIP's configuration and its counters (bpf/quic.h). */
static json_object *quic_json(struct xlbd *d, const struct xlb_vip_conf *v,
			      uint32_t id)
{
	json_object *o = json_object_new_object(), *c;
	struct xlb_quic_stats st = { 0 };
	const __u64 *w = (const __u64 *)&st;
	int i;

	jadd(o, "cr", jint(v->quic_cr));
	jadd(o, "sid_len", jint(v->quic_sid_len));
	jadd(o, "nonce_len", jint(v->quic_nonce_len));
	xlb_dp_quic_stats(&d->dp, id, &st);
	c = json_object_new_object();
	for (i = 0; i < XLB_QUIC_STATS_N; i++)
		jadd(c, xlb_quic_stat_names[i], jint(w[i]));
	jadd(o, "stats", c);
	return o;
}

static size_t vip_first_backend(const struct xlbd *d, size_t vi)
{
	size_t first;

	xlbd_vip_backends(d, vi, &first);
	return first;
}

static json_object *vip_json(struct xlbd *d, size_t i)
{
	const struct xlb_vip_conf *v = &d->state.vips[i];
	const struct xlbd_vip *rv = &d->rt_vips[i];
	json_object *o = json_object_new_object();
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	static const __be32 zero[4];
	size_t n = xlb_state_vip_backends(&d->state, &v->key, NULL, 0);
	size_t k, healthy = 0, first;

	jadd(o, "vip", jstr(xlb_vip_str(&v->key, vs)));
	jadd(o, "id", jint(rv->id));
	jadd(o, "algo", jstr(xlb_algo_name(v->algo)));
	jadd(o, "table_size", jint(v->table_size));
	jadd(o, "vnodes", jint(v->vnodes));
	jadd(o, "hash", jstr(v->hash_mode < 3 ? hash_names[v->hash_mode] : "?"));
	jadd(o, "encap", jstr(v->encap < 2 ? encap_names[v->encap] : "?"));
	jadd(o, "stateless", jbool(v->stateless));
	jadd(o, "panic", jint(v->panic_pct));
	jadd(o, "health_consensus", jbool(v->health_consensus));
	/* bounded loads: c, or null */
	jadd(o, "bound", v->bound_pct ? jdbl(v->bound_pct / 100.0) : NULL);
	if (v->quic)
		jadd(o, "quic", quic_json(d, v, rv->id));
	if (v->src4) {
		__be32 a4[4] = { v->src4 };

		jadd(o, "src4", jstr(xlb_addr_str(XLB_FAMILY_INET, a4, as)));
	}
	if (memcmp(v->src6, zero, sizeof(zero)))
		jadd(o, "src6", jstr(xlb_addr_str(XLB_FAMILY_INET6, v->src6,
						  as)));
	jadd(o, "health", health_json(&v->health));
	first = vip_first_backend(d, i);
	for (k = first; k < first + n; k++)
		healthy += d->rt_bes[k].health != XLB_HC_DOWN;
	jadd(o, "backends", jint(n));
	jadd(o, "healthy", jint(healthy));
	jadd(o, "in_table", jint(rv->in_table));
	jadd(o, "panic_active", jbool(rv->panic));
	jadd(o, "generation", jint(rv->generation));
	jadd(o, "fingerprint", fp_json(rv->fingerprint));
	jadd(o, "changed_at", jdbl(rv->changed_at));
	jadd(o, "memory_bytes", jint(table_bytes(v->table_size)));
	jadd(o, "stats", vip_stats_json(d, rv->id));
	return o;
}

int xlbd_show_vips(struct xlbd *d, const char *vip, json_object **out,
		   struct xlb_err *err)
{
	json_object *r, *a;
	size_t i;
	long idx = -1;
	int ret;

	if (vip) {
		ret = find_vip(d, vip, &idx, err);
		if (ret)
			return ret;
	}
	r = json_object_new_object();
	a = json_object_new_array();
	for (i = 0; i < d->state.n_vips; i++)
		if (idx < 0 || (size_t)idx == i)
			json_object_array_add(a, vip_json(d, i));
	jadd(r, "vips", a);
	*out = r;
	return 0;
}

/* Slots per backend id of VIP i's published table (counts[id]). */
static const struct xlb_table no_table;

/* The VIP's published table (read now if it was adopted unread). */
static const struct xlb_table *vip_table(struct xlbd *d, size_t vi)
{
	const struct xlb_table *t = xlbd_vip_table(d, vi);

	return t && t->slots ? t : &no_table;
}

static uint32_t *slot_counts(const struct xlb_table *t)
{
	uint32_t *c = calloc(XLB_MAX_BACKENDS + 1, sizeof(*c));
	uint32_t s;

	if (!c)
		return NULL;
	for (s = 0; s < t->size; s++)
		if (t->slots[s].primary <= XLB_BACKEND_ID_MAX)
			c[t->slots[s].primary]++;
	return c;
}

/*
 * The data path counts per backend id (one per address and
 * encapsulation, bpf/structs.h), not per VIP.  Under a VIP a backend's
 * counters are its own only while no other VIP uses its id (an id that
 * stops being shared starts again from zero: xlbd_beid_count_vips);
 * otherwise they are null and shared_with says by how many other VIPs.
 */
static void member_counters(struct xlbd *d, uint16_t id, json_object *o)
{
	const struct xlbd_beid *be = xlbd_beid(d, id);
	uint32_t vips = be ? be->vips : 0;
	struct xlb_counter c = { 0 };

	jadd(o, "shared_with", jint(vips > 1 ? vips - 1 : 0));
	if (vips > 1) {
		jadd(o, "packets", NULL);
		jadd(o, "bytes", NULL);
		return;
	}
	xlb_dp_backend_stats(&d->dp, id, &c);
	jadd(o, "packets", jint(c.packets));
	jadd(o, "bytes", jint(c.bytes));
}

int xlbd_show_backends(struct xlbd *d, const char *vip, json_object **out,
		       struct xlb_err *err)
{
	const struct xlb_table *tbl;
	json_object *r, *a;
	uint32_t *counts;
	size_t i, first, n;
	long vi;
	int ret;

	ret = find_vip(d, vip, &vi, err);
	if (ret)
		return ret;
	tbl = vip_table(d, (size_t)vi);
	counts = slot_counts(tbl);
	if (!counts)
		return xlb_errf(err, ENOMEM, "out of memory");
	n = xlb_state_vip_backends(&d->state, &d->state.vips[vi].key, NULL, 0);
	first = vip_first_backend(d, (size_t)vi);
	r = json_object_new_object();
	a = json_object_new_array();
	for (i = first; i < first + n; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[i];
		const struct xlbd_be *rb = &d->rt_bes[i];
		json_object *o = json_object_new_object();
		struct xlb_health h;
		char as[XLB_ADDR_STR_MAX];
		uint32_t m = tbl->size;

		xlbd_backend_health(d, i, &h);
		jadd(o, "addr", jstr(xlb_addr_str(b->family, b->addr, as)));
		jadd(o, "name", jstr(b->name));
		jadd(o, "id", jint(rb->id));
		jadd(o, "weight", jint(b->weight));
		jadd(o, "state", jstr(admin_names[b->admin % 3]));
		if (b->quic_id_len) {
			char hex[2 * XLB_QUIC_SID_MAX + 1];
			int k;

			for (k = 0; k < b->quic_id_len; k++)
				sprintf(hex + 2 * k, "%02x", b->quic_id[k]);
			jadd(o, "quic_id", jstr(hex));
		}
		/* without a check always healthy, as the tables and metrics
		 * take it */
		jadd(o, "health", jstr(h.kind == XLB_HEALTH_NONE ? "up" :
				       health_names[rb->health % 3]));
		jadd(o, "check", health_json(&h));
		if (rb->has_result) {
			json_object *lc = json_object_new_object();

			jadd(lc, "ok", jbool(rb->last.ok));
			jadd(lc, "detail", jstr(rb->last.detail));
			jadd(lc, "at", jdbl(rb->last_at));
			jadd(lc, "rtt_ms", jint(rb->last.rtt_ms));
			jadd(o, "last_check", lc);
		} else {
			jadd(o, "last_check", NULL);
		}
		jadd(o, "in_table", jbool(counts[rb->id] > 0));
		jadd(o, "slots", jint(counts[rb->id]));
		jadd(o, "share", jdbl(m ? (double)counts[rb->id] / m : 0));
		{	/* bounded loads: its count and mark */
			__s64 c = 0;
			__s16 budget = 0;
			__u8 fl = 0;

			xlb_dp_backend_conns(&d->dp, rb->id, &c);
			xlb_dp_member_flags_get(&d->dp, d->rt_vips[vi].id,
						rb->id, &fl, &budget);
			jadd(o, "connections", jint(c > 0 ? c : 0));
			jadd(o, "full", jbool(fl & XLB_MEMBER_F_FULL));
			/* the new flows it still gives away while full */
			jadd(o, "bound_budget",
			     jint(fl & XLB_MEMBER_F_FULL && budget > 0 ?
				  budget : 0));
		}
		member_counters(d, rb->id, o);
		json_object_array_add(a, o);
	}
	free(counts);
	jadd(r, "vip", jstr(vip));
	jadd(r, "backends", a);
	*out = r;
	return 0;
}

int xlbd_show_table(struct xlbd *d, const char *vip, json_object **out,
		    struct xlb_err *err)
{
	const struct xlb_vip_conf *v;
	const struct xlbd_vip *rv;
	const struct xlb_table *tbl;
	json_object *r, *a;
	uint32_t *counts, max = 0, total_w = 0, in = 0;
	size_t i, first, n;
	char vs[XLB_VIP_STR_MAX];
	long vi;
	int ret;

	ret = find_vip(d, vip, &vi, err);
	if (ret)
		return ret;
	v = &d->state.vips[vi];
	rv = &d->rt_vips[vi];
	tbl = vip_table(d, (size_t)vi);
	counts = slot_counts(tbl);
	if (!counts)
		return xlb_errf(err, ENOMEM, "out of memory");
	n = xlb_state_vip_backends(&d->state, &v->key, NULL, 0);
	first = vip_first_backend(d, (size_t)vi);
	for (i = 0; i < rv->n_specs; i++)
		if (rv->specs[i].state == XLB_BACKEND_ACTIVE)
			total_w += rv->specs[i].weight;
	r = json_object_new_object();
	a = json_object_new_array();
	for (i = first; i < first + n; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[i];
		uint16_t id = d->rt_bes[i].id;
		json_object *o = json_object_new_object();
		char as[XLB_ADDR_STR_MAX];
		double ideal = 0;
		size_t k;

		for (k = 0; k < rv->n_specs; k++)
			if (rv->specs[k].id == id &&
			    rv->specs[k].state == XLB_BACKEND_ACTIVE &&
			    total_w)
				ideal = (double)rv->specs[k].weight / total_w;
		jadd(o, "name", jstr(b->name));
		jadd(o, "addr", jstr(xlb_addr_str(b->family, b->addr, as)));
		jadd(o, "id", jint(id));
		jadd(o, "slots", jint(counts[id]));
		jadd(o, "share", jdbl(tbl->size ?
				      (double)counts[id] / tbl->size : 0));
		jadd(o, "ideal_share", jdbl(ideal));
		json_object_array_add(a, o);
		if (counts[id]) {
			in++;
			if (counts[id] > max)
				max = counts[id];
		}
	}
	jadd(r, "vip", jstr(xlb_vip_str(&v->key, vs)));
	jadd(r, "algo", jstr(xlb_algo_name(v->algo)));
	jadd(r, "table_size", jint(tbl->size));
	jadd(r, "generation", jint(rv->generation));
	jadd(r, "fingerprint", fp_json(rv->fingerprint));
	jadd(r, "changed_at", jdbl(rv->changed_at));
	jadd(r, "backends_max_avg",
	     jdbl(in ? (double)max / ((double)tbl->size / in) : 0));
	jadd(r, "backends", a);
	if (v->algo == XLB_ALGO_MAGLEV && in &&
	    (uint64_t)v->table_size < 100ull * in) {
		char w[200];

		snprintf(w, sizeof(w),
			 "table size %u is below 100 x %u backends: Maglev moves more flows than the ideal on every change; use a larger table-size",
			 v->table_size, in);
		jadd(r, "warning", jstr(w));
	}
	free(counts);
	*out = r;
	return 0;
}

/*
 * The counters of each backend id (address and encapsulation) once, with
 * the VIPs using it: their sum over ids is what was sent.  With only >= 0
 * just the ids of the backends of VIP only (with all their VIPs).
 */
static json_object *backend_totals(struct xlbd *d, long only)
{
	size_t k, run = 0, n_ids = d->beid_hi ? d->beid_hi : 1;
	json_object **vl, *a = json_object_new_array();
	size_t *seen;		/* the VIP run last listed, per id */
	bool *want;
	uint32_t id;

	vl = calloc(n_ids, sizeof(*vl));
	seen = calloc(n_ids, sizeof(*seen));
	want = calloc(n_ids, sizeof(*want));
	if (!vl || !seen || !want || !a) {
		free(vl);
		free(seen);
		free(want);
		json_object_put(a);
		return NULL;
	}
	if (only >= 0) {
		size_t first, n = xlbd_vip_backends(d, (size_t)only, &first);

		for (k = first; k < first + n; k++)
			if (d->rt_bes[k].id < d->beid_hi)
				want[d->rt_bes[k].id] = true;
	}
	/* backends are sorted by VIP: a VIP's are one run */
	for (k = 0; k < d->state.n_backends; k++) {
		const struct xlb_backend_conf *b = &d->state.backends[k];
		char vs[XLB_VIP_STR_MAX];

		if (!k || xlb_vip_key_cmp(&d->state.backends[k - 1].vip,
					  &b->vip))
			run++;
		id = d->rt_bes[k].id;
		if (id >= d->beid_hi || (only >= 0 && !want[id]))
			continue;
		if (seen[id] == run)
			continue;
		seen[id] = run;
		if (!vl[id])
			vl[id] = json_object_new_array();
		json_object_array_add(vl[id], jstr(xlb_vip_str(&b->vip, vs)));
	}
	for (id = 0; id < d->beid_hi; id++) {
		const struct xlbd_beid *be = xlbd_beid(d, (uint16_t)id);
		struct xlb_counter c = { 0 };
		char as[XLB_ADDR_STR_MAX];
		json_object *o;

		if (!vl[id])
			continue;
		if (!be) {
			json_object_put(vl[id]);
			continue;
		}
		o = json_object_new_object();
		xlb_dp_backend_stats(&d->dp, (uint16_t)id, &c);
		jadd(o, "id", jint(id));
		jadd(o, "addr", jstr(xlb_addr_str(be->family, be->addr, as)));
		jadd(o, "encap", jstr(encap_names[be->encap % 2]));
		jadd(o, "vips", vl[id]);
		jadd(o, "packets", jint(c.packets));
		jadd(o, "bytes", jint(c.bytes));
		json_object_array_add(a, o);
	}
	free(vl);
	free(seen);
	free(want);
	return a;
}

int xlbd_show_stats(struct xlbd *d, const char *vip, json_object **out,
		    struct xlb_err *err)
{
	static const char *const actions[XLB_ACTIONS] = {
		"aborted", "drop", "pass", "tx", "redirect" };
	__u64 ev[XLB_EV_MAX] = { 0 }, act[XLB_ACTIONS] = { 0 };
	json_object *r, *a, *e, *x;
	long only = -1;
	struct xlbd_ct_figures ctf;
	__u32 cnt = 0;
	size_t i, k;
	int ret;

	if (vip) {
		ret = find_vip(d, vip, &only, err);
		if (ret)
			return ret;
	}
	r = json_object_new_object();
	a = json_object_new_array();
	jadd(r, "time", jdbl(xlbd_now()));
	for (i = 0; i < d->state.n_vips; i++) {
		const struct xlb_vip_conf *v = &d->state.vips[i];
		json_object *o, *bs = json_object_new_array();
		size_t first, n;
		char vs[XLB_VIP_STR_MAX];

		if (only >= 0 && (size_t)only != i) {
			json_object_put(bs);
			continue;
		}
		o = vip_stats_json(d, d->rt_vips[i].id);
		jadd(o, "vip", jstr(xlb_vip_str(&v->key, vs)));
		n = xlb_state_vip_backends(&d->state, &v->key, NULL, 0);
		first = vip_first_backend(d, i);
		for (k = first; k < first + n; k++) {
			const struct xlb_backend_conf *b = &d->state.backends[k];
			json_object *bo = json_object_new_object();
			char as[XLB_ADDR_STR_MAX];

			jadd(bo, "name", jstr(b->name));
			jadd(bo, "addr", jstr(xlb_addr_str(b->family, b->addr,
							   as)));
			jadd(bo, "id", jint(d->rt_bes[k].id));
			member_counters(d, d->rt_bes[k].id, bo);
			json_object_array_add(bs, bo);
		}
		jadd(o, "backends", bs);
		json_object_array_add(a, o);
	}
	jadd(r, "vips", a);
	a = backend_totals(d, only);
	if (!a) {
		json_object_put(r);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	jadd(r, "backends", a);
	xlb_dp_events(&d->dp, ev);
	e = json_object_new_object();
	for (k = 0; k < XLB_EV_MAX; k++)
		jadd(e, xlb_event_name((int)k), jint(ev[k]));
	jadd(r, "events", e);
	xlb_dp_actions(&d->dp, act);
	x = json_object_new_object();
	for (k = 0; k < XLB_ACTIONS; k++)
		jadd(x, actions[k], jint(act[k]));
	jadd(r, "actions", x);
	if (xlbd_ctcount_get(d, &ctf)) {
		jadd(r, "conntrack_entries", jint(ctf.count));
		jadd(r, "conntrack_age_s", json_object_new_double(ctf.age_s));
	}
	if (!xlb_dp_ct_capacity(&d->dp, &cnt))
		jadd(r, "conntrack_capacity", jint(cnt));
	*out = r;
	return 0;
}

/* --- explain -------------------------------------------------------------- */

/* "ADDR:PORT" (IPv6 in brackets) into family, address, port. */
static int host_port(const char *s, uint8_t *family, __be32 addr[4],
		     __be16 *port)
{
	const char *colon = strrchr(s, ':');
	char a[XLB_ADDR_STR_MAX + 2];
	uint32_t p;

	if (!colon || (size_t)(colon - s) >= sizeof(a))
		return -EINVAL;
	memcpy(a, s, (size_t)(colon - s));
	a[colon - s] = 0;
	if (strchr(a, ':') && a[0] != '[')
		return -EINVAL;
	if (xlb_addr_parse(a, family, addr))
		return -EINVAL;
	if (xlb_parse_u32(colon + 1, 0, 65535, &p))
		return -EINVAL;
	*port = htons((uint16_t)p);
	return 0;
}

/* A connection ID in hex: its octets (1..XLB_QUIC_CID_MAX), else -1. */
static int parse_cid(const char *h, __u8 *out)
{
	size_t len = strlen(h), i;
	unsigned int x;

	if (!len || len % 2 || len > 2 * XLB_QUIC_CID_MAX)
		return -1;
	for (i = 0; i < len; i++)
		if (!isxdigit((unsigned char)h[i]))
			return -1;
	for (i = 0; i < len / 2; i++) {
		sscanf(h + 2 * i, "%2x", &x);
		out[i] = (__u8)x;
	}
	return (int)(len / 2);
}

/*
 * PROTO SRC:PORT -> DST:PORT [dcid HEX]: the flow, and the destination
 * connection ID of a QUIC short header (*dcid_len 0: none given).
 */
static int parse_flow(const char *s, struct xlb_flow *f, __u8 *dcid,
		      int *dcid_len, struct xlb_err *err)
{
	char proto[8], src[80], arrow[4], dst[80], kw[8], hex[64], extra[2];
	uint8_t fs, fd;
	int n;

	memset(f, 0, sizeof(*f));
	*dcid_len = 0;
	n = sscanf(s, "%7s %79s %3s %79s %7s %63s %1s", proto, src, arrow, dst,
		   kw, hex, extra);
	if ((n != 4 && n != 6) || strcmp(arrow, "->") ||
	    (n == 6 && strcmp(kw, "dcid")))
		return xlb_errf(err, EINVAL,
				"flow \"%.80s\": expected PROTO SRC:PORT -> DST:PORT [dcid HEX], e.g. tcp 198.51.100.7:40000 -> 192.0.2.10:80",
				s);
	if (n == 6) {
		*dcid_len = parse_cid(hex, dcid);
		if (*dcid_len < 0 || strcmp(proto, "udp"))
			return xlb_errf(err, EINVAL,
					"flow: dcid \"%.40s\" is not a QUIC connection ID of a UDP flow: 1..%d octets in hex",
					hex, XLB_QUIC_CID_MAX);
	}
	if (!strcmp(proto, "tcp"))
		f->proto = IPPROTO_TCP;
	else if (!strcmp(proto, "udp"))
		f->proto = IPPROTO_UDP;
	else
		return xlb_errf(err, EINVAL,
				"flow: unknown protocol \"%s\"; use tcp or udp",
				proto);
	if (host_port(src, &fs, f->src.v6, &f->sport))
		return xlb_errf(err, EINVAL,
				"flow: source \"%s\" is not ADDR:PORT (IPv6 in brackets)",
				src);
	if (host_port(dst, &fd, f->dst.v6, &f->dport))
		return xlb_errf(err, EINVAL,
				"flow: destination \"%s\" is not ADDR:PORT (IPv6 in brackets)",
				dst);
	if (fs != fd)
		return xlb_errf(err, EINVAL,
				"flow: source and destination are of different families");
	f->family = fs;
	return 0;
}

static json_object *be_json(struct xlbd *d, size_t vi, uint16_t id)
{
	json_object *o = json_object_new_object();
	const struct xlbd_vip *rv = &d->rt_vips[vi];
	const struct xlbd_beid *b = xlbd_beid(d, id);
	char as[XLB_ADDR_STR_MAX];
	size_t k;

	jadd(o, "id", jint(id));
	for (k = 0; k < rv->n_specs; k++)
		if (rv->specs[k].id == id)
			jadd(o, "name", jstr(rv->specs[k].name));
	if (b)
		jadd(o, "addr", jstr(xlb_addr_str(b->family, b->addr, as)));
	return o;
}

/*
 * What the data path makes of a QUIC VIP's packet with destination CID
 * dcid (a short header; none given: any other packet), as bpf/quic.h
 * says, from its maps: the backend id when the CID routes it, else -1,
 * with the reason in r's "quic".
 */
static int quic_explain(struct xlbd *d, size_t vi, const __u8 *dcid,
			int dcid_len, json_object *r)
{
	const struct xlb_vip_conf *v = &d->state.vips[vi];
	struct xlb_quic_sid_key k;
	struct xlb_backend be;
	json_object *q = json_object_new_object();
	char hex[2 * XLB_QUIC_CID_MAX + 1], cfg[96];
	__u8 pkt[1 + XLB_QUIC_CID_MAX];
	__u32 id;
	int i, ret = -1, how;

	snprintf(cfg, sizeof(cfg),
		 "rotation %u, server ID %u octets, nonce %u octets",
		 v->quic_cr, v->quic_sid_len, v->quic_nonce_len);
	jadd(q, "config", jstr(cfg));
	jadd(r, "quic", q);
	if (!dcid_len) {
		jadd(q, "outcome", jstr("no dcid given: a long header (Initial, Handshake, 0-RTT, version negotiation) is routed as any UDP flow; give dcid HEX for a short header"));
		return -1;
	}
	for (i = 0; i < dcid_len; i++)
		sprintf(hex + 2 * i, "%02x", dcid[i]);
	jadd(q, "dcid", jstr(hex));
	pkt[0] = 0x40;
	memcpy(pkt + 1, dcid, (size_t)dcid_len);
	memset(&k, 0, sizeof(k));
	k.vip = d->rt_vips[vi].id;
	how = xlb_quic_short_sid(pkt, (__u32)(1 + dcid_len), v->quic_cr,
				 v->quic_sid_len, v->quic_nonce_len, k.sid);
	if (how == -2) {
		jadd(q, "outcome", jstr("short_packet: the CID is shorter than the configuration's; routed as any UDP flow"));
		return -1;
	}
	if (how == -3) {
		jadd(q, "outcome", jstr("other_config: the CID's rotation bits are not the VIP's (or 7, unroutable); routed as any UDP flow"));
		return -1;
	}
	for (i = 0; i < v->quic_sid_len; i++)
		sprintf(hex + 2 * i, "%02x", k.sid[i]);
	jadd(q, "server_id", jstr(hex));
	if (xlb_dp_quic_sid_get(&d->dp, &k, &id) ||
	    xlb_dp_backend_get(&d->dp, (__u16)id, &be) ||
	    !(be.flags & XLB_BE_F_VALID)) {
		jadd(q, "outcome", jstr("unknown_id: no usable backend of the VIP has this server ID (none has it, or it is down); routed as any UDP flow"));
		return -1;
	}
	jadd(q, "outcome", jstr("by_cid"));
	ret = (int)id;
	return ret;
}

static void flow_str(const struct xlb_flow *f, char *out, size_t len)
{
	char s[XLB_ADDR_STR_MAX], t[XLB_ADDR_STR_MAX];
	bool v6 = f->family == XLB_FAMILY_INET6;

	snprintf(out, len, "%s %s%s%s:%u -> %s%s%s:%u",
		 f->proto == IPPROTO_TCP ? "tcp" : "udp", v6 ? "[" : "",
		 xlb_addr_str(f->family, f->src.v6, s), v6 ? "]" : "",
		 ntohs(f->sport), v6 ? "[" : "",
		 xlb_addr_str(f->family, f->dst.v6, t), v6 ? "]" : "",
		 ntohs(f->dport));
}

int xlbd_explain(struct xlbd *d, const char *flow, json_object **out,
		 struct xlb_err *err)
{
	struct xlb_vip_key k = { 0 };
	const struct xlb_vip_conf *v;
	const struct xlb_table *tbl;
	struct xlb_pick pick;
	struct xlb_flow f;
	struct xlb_ct ct;
	json_object *r;
	char fs[200], vs[XLB_VIP_STR_MAX];
	__u8 dcid[XLB_QUIC_CID_MAX];
	long vi;
	int ret, target = -1, dcid_len, by_cid;
	bool bounded = false;

	ret = parse_flow(flow, &f, dcid, &dcid_len, err);
	if (ret)
		return ret;
	r = json_object_new_object();
	flow_str(&f, fs, sizeof(fs));
	jadd(r, "flow", jstr(fs));

	/* the data path's VIP match: exact port, then port 0 */
	memcpy(k.addr, f.dst.v6, sizeof(k.addr));
	k.family = f.family;
	k.proto = f.proto;
	k.port = f.dport;
	vi = xlbd_vip_index(d, &k);
	if (vi < 0) {
		k.port = 0;
		vi = xlbd_vip_index(d, &k);
	}
	if (vi < 0) {
		jadd(r, "verdict", jstr("pass"));
		jadd(r, "reason", jstr("not addressed to a VIP: passed to the stack untouched"));
		*out = r;
		return 0;
	}
	v = &d->state.vips[vi];
	jadd(r, "vip", jstr(xlb_vip_str(&v->key, vs)));
	tbl = vip_table(d, (size_t)vi);
	xlb_explain_pick(&d->state.global.key, v->hash_mode, tbl, &f, &pick);
	jadd(r, "hash", jint(pick.hash));
	jadd(r, "slot", jint(pick.slot));
	jadd(r, "table_size", jint(tbl->size));
	if (pick.primary != XLB_BACKEND_NONE)
		jadd(r, "primary", be_json(d, (size_t)vi, pick.primary));
	if (pick.secondary != XLB_BACKEND_NONE)
		jadd(r, "secondary", be_json(d, (size_t)vi, pick.secondary));

	by_cid = v->quic ? quic_explain(d, (size_t)vi, dcid, dcid_len, r) : -1;
	if (by_cid >= 0) {
		jadd(r, "verdict", jstr("forward"));
		jadd(r, "reason", jstr("QUIC short header: its connection ID names the backend's server ID, whatever the addresses and ports"));
		jadd(r, "backend", be_json(d, (size_t)vi, (uint16_t)by_cid));
		*out = r;
		return 0;
	}
	if (!v->stateless && !xlb_dp_ct_lookup(&d->dp, &f, &ct)) {
		json_object *c = json_object_new_object();
		struct xlb_backend be;
		__u64 now = 0, age = 0;
		__u32 hz = 0;
		bool valid, aged;

		/* last_seen is in the data path's ticks (clock.h) */
		aged = !xlb_clock_now(&now) && !xlb_clock_hz(&hz);
		if (aged && (__s64)(now - ct.last_seen) > 0)
			age = now - ct.last_seen;
		valid = !xlb_dp_backend_get(&d->dp, ct.backend, &be) &&
			(be.flags & XLB_BE_F_VALID) && be.epoch == ct.epoch &&
			(f.proto != IPPROTO_UDP || !aged ||
			 age <= (__u64)d->state.global.udp_idle_s * hz) &&
			xlb_dp_member_keeps(&d->dp, ct.vip, ct.backend);
		jadd(c, "backend", be_json(d, (size_t)vi, ct.backend));
		{	/* what keeps it: its backend a usable member of its VIP */
			__u8 st = XLB_MEMBER_FREE;

			xlb_dp_member_get(&d->dp, ct.vip, ct.backend, &st, NULL);
			jadd(c, "member", jstr(xlb_member_state_name(st)));
		}
		if (aged)	/* else the clock is unreadable: no age */
			jadd(c, "age_ms", jint(xlb_ticks_ms(age, hz)));
		jadd(c, "valid", jbool(valid));
		jadd(r, "conntrack", c);
		if (valid)
			target = ct.backend;
	}
	if (target >= 0) {
		jadd(r, "verdict", jstr("forward"));
		jadd(r, "reason", jstr("established: the connection table keeps the flow on its backend"));
	} else if (pick.primary == XLB_BACKEND_NONE) {
		jadd(r, "verdict", jstr("drop"));
		jadd(r, "reason", jstr(tbl->size ?
			"the VIP's table is empty: no usable backend" :
			"the VIP has no table yet"));
	} else if ((target = xlb_dp_member_pick(&d->dp, d->rt_vips[vi].id,
						pick.primary, pick.secondary,
						!v->stateless, &bounded)) < 0) {
		jadd(r, "verdict", jstr("drop"));
		jadd(r, "reason", jstr("the slot's primary and secondary take no new flows (down, draining or removed)"));
	} else if (bounded) {
		jadd(r, "verdict", jstr("forward"));
		jadd(r, "reason", jstr("new flow: the slot's primary is over the VIP's bound (full, with budget left), so its secondary, which is not"));
	} else if (target != pick.primary) {
		jadd(r, "verdict", jstr("forward"));
		jadd(r, "reason", jstr("the slot's primary takes no new flows (down or draining): its secondary, until the rebuilt table"));
	} else {
		jadd(r, "verdict", jstr("forward"));
		jadd(r, "reason", jstr(v->stateless ?
			"stateless VIP: every packet takes the table's primary" :
			"new flow: the table's primary (the connection table will remember it)"));
	}
	if (target >= 0)
		jadd(r, "backend", be_json(d, (size_t)vi, (uint16_t)target));
	*out = r;
	return 0;
}
