// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-analyze: compare placement functions on synthetic flows.
 *
 * N backends "backend-0" .. "backend-{N-1}" (ids = index) take K random IPv4
 * flows.  Every algorithm places the flows once before and once after one
 * membership change (add "backend-N", or remove "backend-{N/2}"), and the
 * tool reports balance, churn and cost:
 *
 *   maglev, ring  libxlb tables; a flow's backend is slots[hash % M].primary
 *   modn          hash % N (weights: backend i appears w_i times in a list)
 *   jump          Lamping-Veach jump consistent hash of the 64-bit flow hash
 *   rendezvous    highest random weight over (name hash, flow hash); with
 *                 weights the score is -w / ln(u)
 *
 * The cluster key and the flows both come from --seed, so runs repeat.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lookup_table.h"
#include "mono.h"
#include "number.h"
#include "rand.h"

#define PROG		"xlb-analyze"
#define NODES_MAX	65535u
#define KEYS_MAX	10000000u
#define WEIGHT_MAX	1000u
#define BUILD_RUNS	5
#define PLOT_KEYS_MAX	50000u
#define PLOT_VNODES_MAX	1024u
#define PLOT_NODES_MAX	512u
#define NAME_LEN	24
#define EXIT_USAGE	2

enum algo {
	ALGO_MAGLEV,
	ALGO_RING,
	ALGO_MODN,
	ALGO_JUMP,
	ALGO_HRW,
	ALGO_BOUNDED,	/* Maglev's table with bounded loads */
	ALGO_COUNT
};

#define ALGO_ALL	((1u << ALGO_COUNT) - 1)

static const char *const algo_names[ALGO_COUNT] = {
	"maglev", "ring", "modn", "jump", "rendezvous", "bounded",
};

enum change {
	CHANGE_ADD,
	CHANGE_REMOVE,
};

struct opts {
	unsigned int algos;	/* one bit per enum algo */
	uint32_t nodes;
	uint32_t vnodes;
	uint32_t size;
	uint32_t *weights;	/* n_weights entries, or NULL: all equal */
	size_t n_weights;
	uint32_t keys;
	enum change change;
	uint64_t seed;
	bool json;
	const char *plot;
	double bound;		/* bounded: c */
	double hotspot;		/* share of keys from HOT_SOURCES sources */
};

/*
 * Consistent hashing with bounded loads over the table's two choices
 * (Mirrokni, Thorup, Zadimoghaddam, "Consistent Hashing with Bounded
 * Loads", 2016; the slot's primary and secondary of docs/datapath.md):
 * keys arrive in order and stay (active connections); a key whose
 * primary would hold more than ceil(c x (placed + 1) x w / W) takes the
 * secondary if that one would not, else stays on the primary.
 */
#define BOUND_DEFAULT	1.25
/* The hot-spot workload: most flows from a few sources behind one NAT. */
#define HOT_SOURCES	4

/* A membership: backends in list order (which matters to modn and jump). */
struct bset {
	struct xlb_backend_spec *spec;
	char (*names)[NAME_LEN];
	size_t n;
};

/* One experiment: a membership before and after a change, and the flows. */
struct scenario {
	struct bset before, after;
	uint16_t changed;		/* id added or removed */
	enum change change;
	bool weighted;			/* weights were given */
	struct xlb_table_params tp;	/* size, vnodes, key; algo set per run */
	const uint64_t *hash;		/* 64-bit flow hashes */
	size_t keys;
	int build_runs;
	double bound;			/* bounded: c */
};

/* A built placement function. */
struct place {
	enum algo algo;
	const struct bset *set;
	bool weighted;
	struct xlb_table table;		/* maglev, ring */
	uint64_t *name_hash;		/* rendezvous */
	uint16_t *repl;			/* modn with weights */
	size_t n_repl;
	size_t mem;
};

struct result {
	double spilled;		/* bounded: keys not on the table's primary */
	double max_avg;
	double min_avg;
	double moved;
	double ideal;
	double build_us;
	bool only_changed;
	size_t mem;
};

/* ------------------------------------------------------------------ errors */

static int usage_err(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return -EINVAL;
}

/* ------------------------------------------------------------ memberships */

static void bset_free(struct bset *s)
{
	free(s->spec);
	free(s->names);
	s->spec = NULL;
	s->names = NULL;
	s->n = 0;
}

static int bset_alloc(struct bset *s, size_t n)
{
	s->spec = calloc(n, sizeof(*s->spec));
	s->names = calloc(n, sizeof(*s->names));
	s->n = n;
	if (s->spec && s->names)
		return 0;
	bset_free(s);
	return -ENOMEM;
}

static void bset_set(struct bset *s, size_t i, uint16_t id, uint32_t weight)
{
	snprintf(s->names[i], NAME_LEN, "backend-%u", id);
	s->spec[i] = (struct xlb_backend_spec){
		.name = s->names[i],
		.weight = weight,
		.id = id,
		.state = XLB_BACKEND_ACTIVE,
	};
}

static uint32_t bset_total_weight(const struct bset *s)
{
	uint32_t w = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		w += s->spec[i].weight;
	return w;
}

/* Initial membership: backend-i with id i and weight w[i] (or 1). */
static int bset_init(struct bset *s, uint32_t n, const uint32_t *w)
{
	uint32_t i;

	if (bset_alloc(s, n))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		bset_set(s, i, (uint16_t)i, w ? w[i] : 1);
	return 0;
}

/* Add: append backend-N with the mean weight (1 without weights). */
static int bset_add(struct bset *dst, const struct bset *src, uint16_t *id)
{
	uint32_t w;
	size_t i;

	if (!src->n || bset_alloc(dst, src->n + 1))
		return -ENOMEM;
	w = (bset_total_weight(src) + src->n / 2) / src->n;
	for (i = 0; i < src->n; i++)
		bset_set(dst, i, src->spec[i].id, src->spec[i].weight);
	*id = (uint16_t)src->n;
	bset_set(dst, src->n, *id, w ? w : 1);
	return 0;
}

/*
 * Remove backend-{N/2}.  The last backend takes its place in the list: the
 * usual way to shrink a jump hash anywhere but at the end.
 */
static int bset_remove(struct bset *dst, const struct bset *src, uint16_t *id)
{
	size_t i, k = src->n / 2, last = src->n - 1;

	if (src->n < 2 || bset_alloc(dst, src->n - 1))
		return -ENOMEM;
	for (i = 0; i < src->n - 1; i++) {
		size_t from = i == k ? last : i;

		bset_set(dst, i, src->spec[from].id, src->spec[from].weight);
	}
	*id = src->spec[k].id;
	return 0;
}

/* ------------------------------------------------------- placement kernels */

/* Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm". */
static uint32_t jump_hash(uint64_t key, uint32_t buckets)
{
	int64_t b = -1, j = 0;

	while (j < (int64_t)buckets) {
		b = j;
		key = key * 2862933555777941757ULL + 1;
		j = (int64_t)((double)(b + 1) *
			      ((double)(1LL << 31) / (double)((key >> 33) + 1)));
	}
	return (uint32_t)b;
}

/* MurmurHash3's 64-bit finalizer: a bijection with full avalanche. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Weighted HRW score: -w / ln(u), u uniform in (0, 1) from the mix. */
static double hrw_weighted(uint64_t s, uint32_t w)
{
	double u = ((double)(s >> 11) + 0.5) * 0x1.0p-53;

	return -(double)w / log(u);
}

static uint16_t hrw_pick(const struct place *p, uint64_t h)
{
	const struct bset *s = p->set;
	uint64_t best = 0;
	double wbest = -1.0;
	size_t i, pick = 0;

	for (i = 0; i < s->n; i++) {
		uint64_t v = mix64(p->name_hash[i] ^ h);

		if (p->weighted) {
			double d = hrw_weighted(v, s->spec[i].weight);

			if (d > wbest) {
				wbest = d;
				pick = i;
			}
		} else if (v > best || i == 0) {
			best = v;
			pick = i;
		}
	}
	return s->spec[pick].id;
}

static uint16_t place_lookup(const struct place *p, uint64_t h64)
{
	uint32_t h = xlb_hash_fold(h64);
	const struct bset *s = p->set;

	switch (p->algo) {
	case ALGO_MAGLEV:
	case ALGO_RING:
	case ALGO_BOUNDED:
		return p->table.slots[h % p->table.size].primary;
	case ALGO_MODN:
		if (p->repl)
			return p->repl[h % p->n_repl];
		return s->spec[h % s->n].id;
	case ALGO_JUMP:
		return s->spec[jump_hash(h64, (uint32_t)s->n)].id;
	default:
		return hrw_pick(p, h64);
	}
}

/* ---------------------------------------------------------- building them */

static void place_free(struct place *p)
{
	xlb_table_free(&p->table);
	free(p->name_hash);
	free(p->repl);
	p->name_hash = NULL;
	p->repl = NULL;
}

static int build_table(struct place *p, const struct scenario *sc,
		       struct xlb_err *err)
{
	struct xlb_table_params tp = sc->tp;
	int ret;

	tp.algo = p->algo == ALGO_RING ? XLB_ALGO_RING : XLB_ALGO_MAGLEV;
	ret = xlb_table_build(&p->table, &tp, p->set->spec, p->set->n, err);
	if (!ret)
		p->mem = (size_t)p->table.size * sizeof(*p->table.slots);
	return ret;
}

static int build_repl(struct place *p, struct xlb_err *err)
{
	const struct bset *s = p->set;
	size_t i, j, k = 0;

	p->n_repl = bset_total_weight(s);
	p->repl = malloc(p->n_repl * sizeof(*p->repl));
	if (!p->repl)
		return xlb_errf(err, ENOMEM, "out of memory for %zu modn entries",
				p->n_repl);
	for (i = 0; i < s->n; i++)
		for (j = 0; j < s->spec[i].weight; j++)
			p->repl[k++] = s->spec[i].id;
	p->mem = p->n_repl * sizeof(*p->repl);
	return 0;
}

static int build_hrw(struct place *p, const struct scenario *sc,
		     struct xlb_err *err)
{
	const struct bset *s = p->set;
	size_t i;

	p->name_hash = malloc(s->n * sizeof(*p->name_hash));
	if (!p->name_hash)
		return xlb_errf(err, ENOMEM, "out of memory for %zu name hashes",
				s->n);
	for (i = 0; i < s->n; i++)
		p->name_hash[i] = xlb_siphash13(&sc->tp.key, s->spec[i].name,
						strlen(s->spec[i].name));
	p->mem = s->n * sizeof(*p->name_hash);
	return 0;
}

static int place_build(struct place *p, enum algo a, const struct bset *set,
		       const struct scenario *sc, struct xlb_err *err)
{
	*p = (struct place){
		.algo = a,
		.set = set,
		.weighted = sc->weighted && a != ALGO_JUMP,
	};
	switch (a) {
	case ALGO_MAGLEV:
	case ALGO_RING:
	case ALGO_BOUNDED:
		return build_table(p, sc, err);
	case ALGO_MODN:
		return p->weighted ? build_repl(p, err) : 0;
	case ALGO_JUMP:
		return 0;
	default:
		return build_hrw(p, sc, err);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Build runs times, keep the last build, return the median time. */
static int place_build_timed(struct place *p, enum algo a,
			     const struct bset *set, const struct scenario *sc,
			     double *us, struct xlb_err *err)
{
	double t[BUILD_RUNS];
	int i, runs = sc->build_runs, ret;

	for (i = 0; i < runs; i++) {
		double t0 = xlb_mono_us();

		ret = place_build(p, a, set, sc, err);
		t[i] = xlb_mono_us() - t0;
		if (ret)
			return ret;
		if (i < runs - 1)
			place_free(p);
	}
	qsort(t, runs, sizeof(t[0]), cmp_double);
	*us = t[runs / 2];
	return 0;
}

/* -------------------------------------------------------------- measuring */

/* The weight an algorithm actually honours (jump: none). */
static uint32_t eff_weight(const struct place *p, size_t i)
{
	return p->weighted ? p->set->spec[i].weight : 1;
}

static uint32_t eff_total(const struct place *p)
{
	uint32_t w = 0;
	size_t i;

	for (i = 0; i < p->set->n; i++)
		w += eff_weight(p, i);
	return w;
}

/* max/avg and min/avg, avg being the weight-proportional share. */
static void balance(const struct place *p, const size_t *count, size_t keys,
		    struct result *r)
{
	double total = eff_total(p), ratio;
	size_t i;

	r->max_avg = 0.0;
	r->min_avg = INFINITY;
	for (i = 0; i < p->set->n; i++) {
		double avg = (double)keys * eff_weight(p, i) / total;

		ratio = (double)count[p->set->spec[i].id] / avg;
		r->max_avg = fmax(r->max_avg, ratio);
		r->min_avg = fmin(r->min_avg, ratio);
	}
}

/* Weight of the changed backend over the total that includes it. */
static double ideal_moved(const struct scenario *sc, const struct place *pb,
			  const struct place *pa)
{
	const struct place *big = sc->change == CHANGE_ADD ? pa : pb;
	size_t i;

	for (i = 0; i < big->set->n; i++)
		if (big->set->spec[i].id == sc->changed)
			return (double)eff_weight(big, i) / eff_total(big);
	return 0.0;
}

static void churn(const struct scenario *sc, const struct place *pb,
		  const struct place *pa, size_t *count, struct result *r)
{
	size_t i, moved = 0;

	r->only_changed = true;
	for (i = 0; i < sc->keys; i++) {
		uint16_t b = place_lookup(pb, sc->hash[i]);
		uint16_t a = place_lookup(pa, sc->hash[i]);

		count[b]++;
		if (a == b)
			continue;
		moved++;
		if ((sc->change == CHANGE_ADD ? a : b) != sc->changed)
			r->only_changed = false;
	}
	r->moved = (double)moved / (double)sc->keys;
}

/*
 * The bounded placement of every key (out[i]), keys arriving in order;
 * how many left their primary.  load: one counter per id, zeroed here.
 */
static size_t bounded_place(const struct scenario *sc, const struct place *p,
			    uint16_t *out, size_t *load, size_t n_load)
{
	double total = eff_total(p), c = sc->bound;
	uint32_t *w = calloc(n_load, sizeof(*w));
	size_t i, spilled = 0;

	memset(load, 0, n_load * sizeof(*load));
	for (i = 0; w && i < p->set->n; i++)
		w[p->set->spec[i].id] = eff_weight(p, i);
	for (i = 0; i < sc->keys; i++) {
		const struct xlb_slot *s =
			&p->table.slots[xlb_hash_fold(sc->hash[i]) % p->table.size];
		uint16_t pick = s->primary, sec = s->secondary;
		double share = c * (double)(i + 1) / total;

		if (w && pick < n_load &&
		    load[pick] + 1 > ceil(share * w[pick]) &&
		    sec < n_load && w[sec] &&
		    load[sec] + 1 <= ceil(share * w[sec])) {
			pick = sec;
			spilled++;
		}
		out[i] = pick;
		if (pick < n_load)
			load[pick]++;
	}
	free(w);
	return spilled;
}

/* churn() and the counts for bounded: two simulations, key by key. */
static int churn_bounded(const struct scenario *sc, const struct place *pb,
			 const struct place *pa, size_t *count,
			 struct result *r, struct xlb_err *err)
{
	size_t n = sc->before.n + 1, i, moved = 0;
	uint16_t *b = malloc(sc->keys * sizeof(*b));
	uint16_t *a = malloc(sc->keys * sizeof(*a));
	size_t *load = calloc(n, sizeof(*load));

	if (!a || !b || !load) {
		free(a);
		free(b);
		free(load);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	r->spilled = (double)bounded_place(sc, pb, b, count, n) / sc->keys;
	bounded_place(sc, pa, a, load, n);
	r->only_changed = true;
	for (i = 0; i < sc->keys; i++) {
		if (a[i] == b[i])
			continue;
		moved++;
		if ((sc->change == CHANGE_ADD ? a[i] : b[i]) != sc->changed)
			r->only_changed = false;
	}
	r->moved = (double)moved / (double)sc->keys;
	free(a);
	free(b);
	free(load);
	return 0;
}

static int evaluate(const struct scenario *sc, enum algo a, struct result *r,
		    struct xlb_err *err)
{
	struct place pb = { 0 }, pa = { 0 };
	size_t *count;
	int ret;

	/* ids are 0..N on add, 0..N-1 on remove */
	count = calloc(sc->before.n + 1, sizeof(*count));
	if (!count)
		return xlb_errf(err, ENOMEM, "out of memory");
	ret = place_build_timed(&pb, a, &sc->before, sc, &r->build_us, err);
	if (ret)
		goto out;
	ret = place_build(&pa, a, &sc->after, sc, err);
	if (ret)
		goto out;
	r->spilled = 0;
	if (a == ALGO_BOUNDED)
		ret = churn_bounded(sc, &pb, &pa, count, r, err);
	else
		churn(sc, &pb, &pa, count, r);
	if (ret)
		goto out;
	balance(&pb, count, sc->keys, r);
	r->ideal = ideal_moved(sc, &pb, &pa);
	r->mem = pb.mem;
out:
	place_free(&pa);
	place_free(&pb);
	free(count);
	return ret;
}

/* ------------------------------------------------------------- scenarios */

static void scenario_free(struct scenario *sc)
{
	bset_free(&sc->before);
	bset_free(&sc->after);
}

static int scenario_init(struct scenario *sc, uint32_t nodes,
			 const uint32_t *weights, enum change change)
{
	int ret;

	sc->change = change;
	sc->weighted = weights != NULL;
	ret = bset_init(&sc->before, nodes, weights);
	if (ret)
		return ret;
	if (change == CHANGE_ADD)
		ret = bset_add(&sc->after, &sc->before, &sc->changed);
	else
		ret = bset_remove(&sc->after, &sc->before, &sc->changed);
	if (ret)
		bset_free(&sc->before);
	return ret;
}

static struct xlb_hash_key key_from_seed(uint64_t seed)
{
	struct xlb_rand r = { .s = seed };
	struct xlb_hash_key k;

	k.k0 = xlb_rand_next(&r);
	k.k1 = xlb_rand_next(&r);
	return k;
}

/* K flow hashes; the flows come from a generator seeded apart from the key. */
/*
 * K flow hashes; the flows come from a generator seeded apart from the
 * key.  With hotspot > 0, that share of them (spread over the sequence)
 * comes from HOT_SOURCES sources of a VIP hashing on the source address:
 * every flow of a source has its source's hash.
 */
static uint64_t *make_hashes(const struct xlb_hash_key *key, uint64_t seed,
			     size_t keys, double hotspot)
{
	struct xlb_rand r = { .s = seed ^ 0x666c6f7773ULL };
	uint64_t *h = malloc(keys * sizeof(*h)), hot[HOT_SOURCES];
	struct xlb_flow f;
	size_t i;

	if (!h)
		return NULL;
	for (i = 0; i < HOT_SOURCES; i++) {
		xlb_rand_flow(&r, &f, XLB_FAMILY_INET);
		f.sport = f.dport = 0;
		hot[i] = xlb_flow_hash64(key, &f);
	}
	for (i = 0; i < keys; i++) {
		xlb_rand_flow(&r, &f, XLB_FAMILY_INET);
		if (hotspot > 0 &&
		    (double)(xlb_rand_next(&r) >> 11) / (double)(1ULL << 53) <
		    hotspot)
			h[i] = hot[xlb_rand_next(&r) % HOT_SOURCES];
		else
			h[i] = xlb_flow_hash64(key, &f);
	}
	return h;
}

/* --------------------------------------------------------------- output */

static const char *backend_name(const struct scenario *sc, char *buf,
				size_t len)
{
	snprintf(buf, len, "backend-%u", sc->changed);
	return buf;
}

static void print_header(const struct opts *o, const struct scenario *sc)
{
	const struct bset *s = sc->change == CHANGE_ADD ? &sc->after :
							 &sc->before;
	char name[NAME_LEN];
	size_t i;
	uint32_t w = 0;

	for (i = 0; i < s->n; i++)
		if (s->spec[i].id == sc->changed)
			w = s->spec[i].weight;
	printf("nodes %u, vnodes %u, table size %u, keys %u, change %s %s (weight %u), seed %llu%s",
	       o->nodes, o->vnodes, o->size, o->keys,
	       sc->change == CHANGE_ADD ? "add" : "remove",
	       backend_name(sc, name, sizeof(name)), w,
	       (unsigned long long)o->seed,
	       o->weights ? ", weighted" : "");
	if (o->hotspot > 0)
		printf(", hot spot: %.0f%% of keys from %d sources",
		       100 * o->hotspot, HOT_SOURCES);
	if (o->algos & (1u << ALGO_BOUNDED))
		printf(", bound c %.2f", o->bound);
	printf("\n%-10s %8s %8s %9s %9s %12s %11s %12s %8s\n", "algo",
	       "max/avg", "min/avg", "moved", "ideal", "only_changed",
	       "build_us", "memory_bytes", "spilled");
}

static void print_row(enum algo a, const struct result *r)
{
	printf("%-10s %8.4f %8.4f %9.6f %9.6f %12s %11.1f %12zu %8.6f\n",
	       algo_names[a], r->max_avg, r->min_avg, r->moved, r->ideal,
	       r->only_changed ? "yes" : "no", r->build_us, r->mem,
	       r->spilled);
}

static void print_json(const struct opts *o, enum algo a,
		       const struct result *r)
{
	printf("{\"algo\":\"%s\",\"nodes\":%u,\"vnodes\":%u,\"table_size\":%u,"
	       "\"keys\":%u,\"change\":\"%s\",\"seed\":%llu,"
	       "\"weighted\":%s,\"max_over_avg\":%.6f,\"min_over_avg\":%.6f,"
	       "\"moved_fraction\":%.6f,\"ideal_moved_fraction\":%.6f,"
	       "\"moved_only_changed\":%s,\"build_us\":%.3f,"
	       "\"memory_bytes\":%zu,\"spilled_fraction\":%.6f,"
	       "\"bound\":%.4f,\"hotspot\":%.4f}\n",
	       algo_names[a], o->nodes, o->vnodes, o->size, o->keys,
	       o->change == CHANGE_ADD ? "add" : "remove",
	       (unsigned long long)o->seed,
	       o->weights && a != ALGO_JUMP ? "true" : "false",
	       r->max_avg, r->min_avg, r->moved, r->ideal,
	       r->only_changed ? "true" : "false", r->build_us, r->mem,
	       r->spilled, a == ALGO_BOUNDED ? o->bound : 0.0, o->hotspot);
}

static void print_notes(const struct opts *o)
{
	FILE *out = o->json ? stderr : stdout;

	if (o->weights && (o->algos & (1u << ALGO_JUMP)))
		fprintf(out, "note: jump does not support weights; it ran with equal weights (its avg and ideal assume equal weights)\n");
	if (o->change == CHANGE_REMOVE &&
	    (o->algos & (1u << ALGO_JUMP | 1u << ALGO_MODN)))
		fprintf(out, "note: modn and jump number backends by list position; on remove the last backend takes the removed one's position\n");
}

static int run_table(const struct opts *o, struct scenario *sc)
{
	struct xlb_err err = { { 0 } };
	struct result r = { 0 };
	int a;

	if (!o->json)
		print_header(o, sc);
	for (a = 0; a < ALGO_COUNT; a++) {
		if (!(o->algos & (1u << a)))
			continue;
		if (evaluate(sc, a, &r, &err)) {
			fflush(stdout);
			fprintf(stderr, PROG ": %s: %s\n", algo_names[a], err.msg);
			return 1;
		}
		if (o->json)
			print_json(o, a, &r);
		else
			print_row(a, &r);
	}
	print_notes(o);
	return 0;
}

/* ------------------------------------------------------------------ plot */

/* Ring max/avg for vnodes 1, 2, 4, ... ; NaN beyond the ring token limit. */
static int plot_vnodes(FILE *f, const struct opts *o, struct scenario *sc,
		       double *maglev, struct xlb_err *err)
{
	struct result r = { 0 };
	uint32_t v;
	int ret;

	fprintf(f, "# vnodes ring_max_over_avg\n");
	for (v = 1; v <= PLOT_VNODES_MAX; v *= 2) {
		if ((uint64_t)v * o->nodes > XLB_RING_TOKENS_MAX) {
			fprintf(f, "%u NaN\n", v);
			continue;
		}
		sc->tp.vnodes = v;
		ret = evaluate(sc, ALGO_RING, &r, err);
		if (ret)
			return ret;
		fprintf(f, "%u %.6f\n", v, r.max_avg);
	}
	sc->tp.vnodes = o->vnodes;
	ret = evaluate(sc, ALGO_MAGLEV, &r, err);
	*maglev = r.max_avg;
	return ret;
}

static bool ring_fits(uint32_t nodes, uint32_t vnodes)
{
	return (uint64_t)(nodes + 1) * vnodes <= XLB_RING_TOKENS_MAX;
}

/* One row of the moved-fraction panel: every algorithm at n backends. */
static int plot_moved_row(FILE *f, struct scenario *base, uint32_t n,
			  struct xlb_err *err)
{
	struct scenario sc = *base;
	struct result r = { 0 };
	int a, ret;

	ret = scenario_init(&sc, n, NULL, CHANGE_ADD);
	if (ret)
		return xlb_errf(err, ENOMEM, "out of memory");
	fprintf(f, "%u", n);
	/* the stateless functions; bounded depends on the arrival order */
	for (a = 0; a < ALGO_BOUNDED && !ret; a++) {
		if (a == ALGO_RING && !ring_fits(n, sc.tp.vnodes)) {
			fprintf(f, " NaN");
			continue;
		}
		ret = evaluate(&sc, a, &r, err);
		fprintf(f, " %.6f", r.moved);
	}
	fprintf(f, " %.6f\n", 1.0 / (n + 1));
	scenario_free(&sc);
	return ret;
}

static int plot_moved(FILE *f, const struct opts *o, struct scenario *base,
		      struct xlb_err *err)
{
	uint32_t n;
	int ret;

	fprintf(f, "\n\n# nodes maglev ring modn jump rendezvous ideal\n");
	for (n = 2; n <= PLOT_NODES_MAX && n < o->size; n *= 2) {
		ret = plot_moved_row(f, base, n, err);
		if (ret)
			return ret;
	}
	return 0;
}

/* Quote s for gnuplot's single-quoted strings ('' is a quote). */
static void gp_quote(FILE *gp, const char *s)
{
	fputc('\'', gp);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', gp);
		fputc(*s, gp);
	}
	fputc('\'', gp);
}

static void gp_script(FILE *gp, const struct opts *o, const char *data,
		      size_t keys, double maglev)
{
	fprintf(gp, "set terminal png size 1200,500\nset output ");
	gp_quote(gp, o->plot);
	fprintf(gp, "\nset datafile missing 'NaN'\ndata = ");
	gp_quote(gp, data);
	fprintf(gp, "\nset multiplot layout 1,2 title \"xlb-analyze: %zu flows%s, equal weights, seed %llu\"\n",
		keys, keys < o->keys ? " (fewer than --keys, for speed)" : "",
		(unsigned long long)o->seed);
	fprintf(gp, "set grid\nset logscale x 2\nset key top right\n"
		"set title \"Balance at N=%u, M=%u\"\n"
		"set xlabel 'ring vnodes per backend'\n"
		"set ylabel 'max / avg flows per backend'\n"
		"plot data index 0 using 1:2 with linespoints lw 2 title 'ring', "
		"%.6f with lines lw 2 title 'maglev'\n",
		o->nodes, o->size, maglev);
	fprintf(gp, "set title \"Moved on adding one backend (M=%u, vnodes=%u)\"\n"
		"set xlabel 'backends N before the add'\n"
		"set ylabel 'fraction of flows moved'\n"
		"set logscale y 10\nset key bottom left\n"
		"plot for [c=2:6] data index 1 using 1:c with linespoints lw 2 "
		"title word('maglev ring modn jump rendezvous', c-1), "
		"data index 1 using 1:7 with lines lw 2 lc rgb 'black' "
		"title 'ideal 1/(N+1)'\n"
		"unset multiplot\n",
		o->size, o->vnodes);
}

static int gnuplot_run(const struct opts *o, const char *data, size_t keys,
		       double maglev)
{
	struct stat st;
	FILE *gp;
	int status;

	fflush(stdout);
	gp = popen("gnuplot", "w");
	if (!gp) {
		fprintf(stderr, PROG ": --plot: cannot run gnuplot: %s\n",
			strerror(errno));
		return 1;
	}
	gp_script(gp, o, data, keys, maglev);
	status = pclose(gp);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, PROG ": --plot: gnuplot failed (%s %d)%s\n",
			WIFEXITED(status) ? "exit status" : "status",
			WIFEXITED(status) ? WEXITSTATUS(status) : status,
			WIFEXITED(status) && WEXITSTATUS(status) == 127 ?
			"; is gnuplot installed (package gnuplot-nox)?" : "");
		return 1;
	}
	if (stat(o->plot, &st) || st.st_size == 0) {
		fprintf(stderr, PROG ": --plot: gnuplot wrote no image to %s\n",
			o->plot);
		return 1;
	}
	return 0;
}

static int plot_data(FILE *f, const struct opts *o, struct scenario *sc,
		     double *maglev)
{
	struct xlb_err err = { { 0 } };
	struct scenario cur = *sc;

	if (scenario_init(&cur, o->nodes, NULL, CHANGE_ADD)) {
		fprintf(stderr, PROG ": --plot: out of memory\n");
		return 1;
	}
	cur.build_runs = 1;
	if (plot_vnodes(f, o, &cur, maglev, &err) ||
	    plot_moved(f, o, &cur, &err)) {
		fprintf(stderr, PROG ": --plot: %s\n", err.msg);
		scenario_free(&cur);
		return 1;
	}
	scenario_free(&cur);
	if (fflush(f) || ferror(f)) {
		fprintf(stderr, PROG ": --plot: writing plot data: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}

static int run_plot(const struct opts *o, struct scenario *sc)
{
	const char *dir = getenv("TMPDIR");
	size_t keys = sc->keys;
	double maglev = 0.0;
	char path[4096];
	FILE *f;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/xlb-analyze.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, PROG ": --plot: temporary file %s: %s\n", path,
			strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return 1;
	}
	if (sc->keys > PLOT_KEYS_MAX)
		sc->keys = PLOT_KEYS_MAX;
	ret = plot_data(f, o, sc, &maglev);
	fclose(f);
	if (!ret)
		ret = gnuplot_run(o, path, sc->keys, maglev);
	unlink(path);
	sc->keys = keys;
	return ret;
}

/* ------------------------------------------------------------- arguments */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [options]\n"
		"Compare flow placement functions on synthetic flows.\n\n"
		"  --algo LIST          maglev,ring,modn,jump,rendezvous,bounded or all\n"
		"                       (default all)\n"
		"  --nodes N            backends before the change, 1..65535 (default 10)\n"
		"  --vnodes V           ring tokens per unit of weight (default 100)\n"
		"  --table-size M       table slots, an allowed prime (default 65537)\n"
		"  --weights W1,W2,...  one weight 1..1000 per node (default: equal)\n"
		"  --keys K             synthetic flows, 1..10000000 (default 200000)\n"
		"  --change add|remove  add backend-N or remove backend-{N/2} (default add)\n"
		"  --seed S             key and flow seed, 0..2^64-1 (default 1)\n"
		"  -j, --json           one JSON object per line per algorithm\n"
		"  --plot FILE.png      also draw balance and churn curves with gnuplot\n"
		"  --bound C            bounded: no backend above C x its share of the\n"
		"                       keys placed so far, 1 < C <= 10 (default 1.25)\n"
		"  --hotspot F          that share of keys (0..0.99) from 4 sources of a\n"
		"                       source-hash VIP: one hash each (default 0)\n"
		"  -h, --help           this text\n");
}

/* Unsigned decimal in [min, max]; opt names the option in messages. */
static int parse_u64(const char *opt, const char *s, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	int ret = xlb_parse_u64(s, min, max, out);

	if (ret == -ERANGE)
		return usage_err("%s: %s is out of range; accepted: an integer from %llu to %llu",
				 opt, s, (unsigned long long)min,
				 (unsigned long long)max);
	if (ret)
		return usage_err("%s: '%s' is not a number; accepted: an integer from %llu to %llu",
				 opt, s, (unsigned long long)min,
				 (unsigned long long)max);
	return 0;
}

static int parse_u32(const char *opt, const char *s, uint32_t min,
		     uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret = parse_u64(opt, s, min, max, &v);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

/* A decimal number in (lo, hi] (or [lo, hi] when lo_ok). */
static int parse_fraction(const char *opt, const char *s, double lo, double hi,
			  bool lo_ok, double *out)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || isnan(v) || v > hi ||
	    (lo_ok ? v < lo : v <= lo))
		return usage_err("%s: '%s' is not accepted; accepted: a number %s %g and at most %g",
				 opt, s, lo_ok ? "from" : "above", lo, hi);
	*out = v;
	return 0;
}

static int parse_algo_one(const char *s, size_t len, unsigned int *mask)
{
	int a;

	if (len == 3 && !strncmp(s, "all", 3)) {
		*mask |= ALGO_ALL;
		return 0;
	}
	for (a = 0; a < ALGO_COUNT; a++)
		if (strlen(algo_names[a]) == len &&
		    !strncmp(s, algo_names[a], len)) {
			*mask |= 1u << a;
			return 0;
		}
	return usage_err("--algo: unknown algorithm '%.*s'; accepted: a comma list of maglev, ring, modn, jump, rendezvous, bounded, or all",
			 (int)len, s);
}

static int parse_algos(const char *s, unsigned int *mask)
{
	const char *p = s;

	*mask = 0;
	for (;;) {
		size_t len = strcspn(p, ",");

		if (parse_algo_one(p, len, mask))
			return -EINVAL;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

static int parse_weights(const char *s, struct opts *o)
{
	char buf[32];
	const char *p = s;
	size_t n = 1, len;

	for (len = 0; s[len]; len++)
		n += s[len] == ',';
	if (n > NODES_MAX)
		return usage_err("--weights: %zu weights; accepted: at most %u, one per node",
				 n, NODES_MAX);
	free(o->weights);
	o->weights = calloc(n, sizeof(*o->weights));
	if (!o->weights)
		return usage_err("--weights: out of memory");
	for (o->n_weights = 0; o->n_weights < n; o->n_weights++) {
		len = strcspn(p, ",");
		if (!len || len >= sizeof(buf))
			return usage_err("--weights: bad element '%.*s' in '%s'; accepted: comma-separated integers from 1 to %u",
					 (int)len, p, s, WEIGHT_MAX);
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (parse_u32("--weights", buf, 1, WEIGHT_MAX,
			      &o->weights[o->n_weights]))
			return -EINVAL;
		p += len + 1;
	}
	return 0;
}

static int parse_change(const char *s, enum change *c)
{
	if (!strcmp(s, "add"))
		*c = CHANGE_ADD;
	else if (!strcmp(s, "remove"))
		*c = CHANGE_REMOVE;
	else
		return usage_err("--change: unknown change '%s'; accepted: add or remove",
				 s);
	return 0;
}

static int parse_size(const char *s, uint32_t *m)
{
	char list[256];
	size_t i, off = 0;

	if (parse_u32("--table-size", s, 1, XLB_TABLE_SIZE_MAX, m))
		return -EINVAL;
	if (xlb_table_size_valid(*m))
		return 0;
	for (i = 0; i < xlb_table_sizes_count && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%u",
				i ? ", " : "", xlb_table_sizes[i]);
	return usage_err("--table-size: %u is not an allowed size; accepted: %s",
			 *m, list);
}

enum {
	OPT_ALGO = 256,
	OPT_NODES,
	OPT_VNODES,
	OPT_SIZE,
	OPT_WEIGHTS,
	OPT_KEYS,
	OPT_CHANGE,
	OPT_SEED,
	OPT_PLOT,
	OPT_BOUND,
	OPT_HOTSPOT,
};

static const struct option long_opts[] = {
	{ "algo",	required_argument, NULL, OPT_ALGO },
	{ "nodes",	required_argument, NULL, OPT_NODES },
	{ "vnodes",	required_argument, NULL, OPT_VNODES },
	{ "table-size",	required_argument, NULL, OPT_SIZE },
	{ "weights",	required_argument, NULL, OPT_WEIGHTS },
	{ "keys",	required_argument, NULL, OPT_KEYS },
	{ "change",	required_argument, NULL, OPT_CHANGE },
	{ "seed",	required_argument, NULL, OPT_SEED },
	{ "json",	no_argument,	   NULL, 'j' },
	{ "plot",	required_argument, NULL, OPT_PLOT },
	{ "bound",	required_argument, NULL, OPT_BOUND },
	{ "hotspot",	required_argument, NULL, OPT_HOTSPOT },
	{ "help",	no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_opt(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case OPT_ALGO:
		return parse_algos(arg, &o->algos);
	case OPT_NODES:
		return parse_u32("--nodes", arg, 1, NODES_MAX, &o->nodes);
	case OPT_VNODES:
		return parse_u32("--vnodes", arg, 1, XLB_RING_TOKENS_MAX,
				 &o->vnodes);
	case OPT_SIZE:
		return parse_size(arg, &o->size);
	case OPT_WEIGHTS:
		return parse_weights(arg, o);
	case OPT_KEYS:
		return parse_u32("--keys", arg, 1, KEYS_MAX, &o->keys);
	case OPT_CHANGE:
		return parse_change(arg, &o->change);
	case OPT_SEED:
		return parse_u64("--seed", arg, 0, UINT64_MAX, &o->seed);
	case OPT_PLOT:
		if (!*arg)
			return usage_err("--plot: empty file name; accepted: a path for the PNG image");
		o->plot = arg;
		return 0;
	case 'j':
		o->json = true;
		return 0;
	case OPT_BOUND:
		return parse_fraction("--bound", arg, 1.0, 10.0, false,
				      &o->bound);
	case OPT_HOTSPOT:
		return parse_fraction("--hotspot", arg, 0.0, 0.99, true,
				      &o->hotspot);
	}
	fprintf(stderr, "Try '" PROG " --help'.\n");
	return -EINVAL;
}

/* Checks between options, once all are known. */
static int check_opts(const struct opts *o)
{
	if (o->weights && o->n_weights != o->nodes)
		return usage_err("--weights: %zu weights for --nodes %u; accepted: exactly one weight per node",
				 o->n_weights, o->nodes);
	if (o->change == CHANGE_ADD && o->nodes > XLB_BACKEND_ID_MAX)
		return usage_err("--nodes: %u leaves no backend id for the added backend; accepted with --change add: 1 to %u",
				 o->nodes, XLB_BACKEND_ID_MAX);
	if (o->change == CHANGE_REMOVE && o->nodes < 2)
		return usage_err("--nodes: %u leaves no backend after the removal; accepted with --change remove: 2 to %u",
				 o->nodes, NODES_MAX);
	return 0;
}

/* 0: run; 1: done (help); -EINVAL: usage error, already reported. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "jh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (parse_opt(c, optarg, o))
			return -EINVAL;
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s'; all arguments are options (see --help)",
				 argv[optind]);
	return check_opts(o);
}

/* ------------------------------------------------------------------ main */

static int run(const struct opts *o)
{
	struct scenario sc = {
		.tp = {
			.size = o->size,
			.vnodes = o->vnodes,
			.key = key_from_seed(o->seed),
		},
		.keys = o->keys,
		.build_runs = BUILD_RUNS,
		.bound = o->bound,
	};
	uint64_t *hash;
	int ret;

	hash = make_hashes(&sc.tp.key, o->seed, o->keys, o->hotspot);
	if (!hash || scenario_init(&sc, o->nodes, o->weights, o->change)) {
		fprintf(stderr, PROG ": out of memory for %u flows\n", o->keys);
		free(hash);
		return 1;
	}
	sc.hash = hash;
	ret = run_table(o, &sc);
	if (!ret && o->plot)
		ret = run_plot(o, &sc);
	scenario_free(&sc);
	free(hash);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.algos = ALGO_ALL,
		.nodes = 10,
		.vnodes = XLB_RING_VNODES_DEFAULT,
		.size = XLB_TABLE_SIZE_DEFAULT,
		.keys = 200000,
		.change = CHANGE_ADD,
		.seed = 1,
		.bound = BOUND_DEFAULT,
	};
	int ret;

	signal(SIGPIPE, SIG_IGN);
	ret = parse_args(argc, argv, &o);
	if (ret == 0)
		ret = run(&o);
	else
		ret = ret > 0 ? 0 : EXIT_USAGE;
	free(o.weights);
	return ret;
}
