// SPDX-License-Identifier: GPL-2.0
/*
 * Validation and the parts shared by both table algorithms: size list,
 * canonical (name) order, fingerprint, diff.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

const uint32_t xlb_table_sizes[] = { XLB_TABLE_SIZES };
const size_t xlb_table_sizes_count =
	sizeof(xlb_table_sizes) / sizeof(xlb_table_sizes[0]);

uint32_t xlb_table_class(uint32_t m)
{
	size_t i;

	for (i = 0; i < xlb_table_sizes_count; i++)
		if (xlb_table_sizes[i] == m)
			return (uint32_t)i + 1;
	return XLB_TABLE_CLASS_NONE;
}

int xlb_table_size_valid(uint32_t m)
{
	return xlb_table_class(m) != XLB_TABLE_CLASS_NONE;
}

int xlb_algo_parse(const char *s, uint32_t *algo)
{
	if (!strcmp(s, "maglev"))
		*algo = XLB_ALGO_MAGLEV;
	else if (!strcmp(s, "ring"))
		*algo = XLB_ALGO_RING;
	else
		return -EINVAL;
	return 0;
}

const char *xlb_algo_name(uint32_t algo)
{
	switch (algo) {
	case XLB_ALGO_MAGLEV:
		return "maglev";
	case XLB_ALGO_RING:
		return "ring";
	}
	return "unknown";
}

/*
 * Scratch a thread keeps between builds: the builders' working arrays are
 * larger than malloc's mmap threshold, and fresh pages cost a fault and a
 * clear each, which on this kind of machine is a third of a ring build.
 * Freed when the thread exits.
 */
struct scratch_cache {
	void *p;
	size_t cap;
};

static __thread struct scratch_cache cache;
static __thread size_t last_scratch;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

static void cache_release(void *arg)
{
	struct scratch_cache *sc = arg;

	free(sc->p);
	sc->p = NULL;
	sc->cap = 0;
}

static void cache_key_init(void)
{
	cache_key_ok = !pthread_key_create(&cache_key, cache_release);
}

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

void *xlb_build_scratch(struct xlb_build_ctx *c, size_t bytes)
{
	size_t want = round_up(bytes ? bytes : 1, 64);
	void *p;

	pthread_once(&cache_once, cache_key_init);
	if (want <= XLB_SCRATCH_KEEP && cache_key_ok) {
		if (cache.cap < want) {
			cache_release(&cache);
			p = aligned_alloc(64, want);
			if (!p)
				return NULL;
			if (pthread_setspecific(cache_key, &cache)) {
				free(p);
				return NULL;
			}
			cache.p = p;
			cache.cap = want;
		}
		c->scratch = cache.p;
		c->scratch_own = 0;
	} else {
		c->scratch = aligned_alloc(64, want);
		if (!c->scratch)
			return NULL;
		c->scratch_own = 1;
	}
	c->scratch_bytes = bytes;
	return c->scratch;
}

size_t xlb_table_build_scratch(void)
{
	return last_scratch;
}

static int cmp_spec_name(const void *a, const void *b)
{
	const struct xlb_backend_spec *x = *(const struct xlb_backend_spec * const *)a;
	const struct xlb_backend_spec *y = *(const struct xlb_backend_spec * const *)b;

	return strcmp(x->name, y->name);
}

static void sizes_list(char *buf, size_t len)
{
	size_t i, off = 0;

	for (i = 0; i < xlb_table_sizes_count && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%u", i ? ", " : "",
				xlb_table_sizes[i]);
}

static int validate_params(const struct xlb_table_params *p, size_t n,
			   struct xlb_err *err)
{
	char sizes[160];

	if (!xlb_table_size_valid(p->size)) {
		sizes_list(sizes, sizeof(sizes));
		return xlb_errf(err, EINVAL,
				"table size %u is not allowed; use one of: %s",
				p->size, sizes);
	}
	if (p->algo != XLB_ALGO_MAGLEV && p->algo != XLB_ALGO_RING)
		return xlb_errf(err, EINVAL,
				"algorithm %u is unknown; use maglev or ring",
				p->algo);
	if (p->algo == XLB_ALGO_RING && p->vnodes == 0)
		return xlb_errf(err, EINVAL,
				"vnodes must be at least 1 for the ring");
	if (n > p->size)
		return xlb_errf(err, E2BIG,
				"%zu backends do not fit a table of %u slots",
				n, p->size);
	if (n > XLB_BACKEND_ID_MAX + 1)
		return xlb_errf(err, E2BIG,
				"%zu backends exceed the limit of %u per VIP",
				n, XLB_BACKEND_ID_MAX + 1);
	return 0;
}

static int validate_backend(const struct xlb_backend_spec *b,
			    struct xlb_err *err)
{
	size_t len;

	if (!b->name || !b->name[0])
		return xlb_errf(err, EINVAL, "backend id %u has an empty name",
				b->id);
	len = strnlen(b->name, XLB_NAME_MAX + 1);
	if (len > XLB_NAME_MAX)
		return xlb_errf(err, ENAMETOOLONG,
				"backend name \"%.*s...\" is longer than %d bytes",
				16, b->name, XLB_NAME_MAX);
	if (b->id > XLB_BACKEND_ID_MAX)
		return xlb_errf(err, EINVAL,
				"backend \"%s\" has id %u; ids are 0..%u",
				b->name, b->id, XLB_BACKEND_ID_MAX);
	if (b->state > XLB_BACKEND_DOWN)
		return xlb_errf(err, EINVAL,
				"backend \"%s\" has unknown state %u",
				b->name, b->state);
	return 0;
}

/*
 * Validate everything, then sort a pointer array by name; the sorted order
 * is the canonical order both algorithms work in.  Duplicate names show up
 * as neighbours after sorting; duplicate ids through a bitmap.
 */
static int canonical_order(const struct xlb_backend_spec *b, size_t n,
			   const struct xlb_backend_spec **sorted,
			   struct xlb_err *err)
{
	uint8_t *seen;
	size_t i;
	int ret = 0;

	seen = calloc((XLB_BACKEND_ID_MAX + 8) / 8, 1);
	if (!seen)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		ret = validate_backend(&b[i], err);
		if (ret)
			goto out;
		if (seen[b[i].id / 8] & (1u << (b[i].id % 8))) {
			ret = xlb_errf(err, EEXIST,
				       "backend id %u is used twice (again by \"%s\")",
				       b[i].id, b[i].name);
			goto out;
		}
		seen[b[i].id / 8] |= 1u << (b[i].id % 8);
		sorted[i] = &b[i];
	}
	qsort(sorted, n, sizeof(*sorted), cmp_spec_name);
	for (i = 1; i < n; i++)
		if (!strcmp(sorted[i - 1]->name, sorted[i]->name)) {
			ret = xlb_errf(err, EEXIST,
				       "backend name \"%s\" is used twice",
				       sorted[i]->name);
			goto out;
		}
out:
	free(seen);
	return ret;
}

static int usable(const struct xlb_backend_spec *b)
{
	return b->state == XLB_BACKEND_ACTIVE && b->weight > 0;
}

static int check_weights(const struct xlb_table_params *p,
			 const struct xlb_backend_spec **u, size_t n,
			 struct xlb_err *err)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < n; i++)
		total += u[i]->weight;
	if (total > UINT32_MAX)
		return xlb_errf(err, EOVERFLOW,
				"total weight %llu overflows; the sum of weights must be at most %u",
				(unsigned long long)total, UINT32_MAX);
	if (p->algo == XLB_ALGO_RING &&
	    total * p->vnodes > XLB_RING_TOKENS_MAX)
		return xlb_errf(err, EOVERFLOW,
				"vnodes %u x total weight %llu = %llu ring tokens; the limit is %u",
				p->vnodes, (unsigned long long)total,
				(unsigned long long)total * p->vnodes,
				XLB_RING_TOKENS_MAX);
	return 0;
}

int xlb_table_build(struct xlb_table *t, const struct xlb_table_params *p,
		    const struct xlb_backend_spec *b, size_t n,
		    struct xlb_err *err)
{
	const struct xlb_backend_spec **sorted = NULL;
	struct xlb_build_ctx c = { .p = p };
	struct xlb_table_member *members;
	struct xlb_slot *slots = NULL;
	size_t i, nu = 0;
	int ret;

	ret = validate_params(p, n, err);
	if (ret)
		return ret;
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	slots = malloc((size_t)p->size * sizeof(*slots));
	if (!sorted || !slots) {
		ret = xlb_errf(err, ENOMEM, "out of memory for %u slots",
			       p->size);
		goto fail;
	}
	ret = canonical_order(b, n, sorted, err);
	if (ret)
		goto fail;
	for (i = 0; i < n; i++)
		if (usable(sorted[i]))
			sorted[nu++] = sorted[i];
	ret = check_weights(p, sorted, nu, err);
	if (ret)
		goto fail;

	memset(slots, 0xff, (size_t)p->size * sizeof(*slots));
	c.usable = sorted;
	c.n_usable = nu;
	c.slots = slots;
	if (nu) {
		ret = p->algo == XLB_ALGO_MAGLEV ? xlb_maglev_fill(&c, err) :
						   xlb_ring_fill(&c, err);
		if (c.scratch_own)
			free(c.scratch);
		if (ret)
			goto fail;
	}
	/* the canonical order, its id bitmap and the builder's scratch */
	last_scratch = (n ? n : 1) * sizeof(*sorted) +
		       (XLB_BACKEND_ID_MAX + 8) / 8 + c.scratch_bytes;
	free(sorted);
	members = calloc(n ? n : 1, sizeof(*members));
	if (!members) {
		ret = xlb_errf(err, ENOMEM, "out of memory for %zu members", n);
		free(slots);
		return ret;
	}
	for (i = 0; i < n; i++) {	/* in the caller's order */
		members[i].id = b[i].id;
		members[i].state = usable(&b[i]) ? XLB_MEMBER_ACTIVE :
				   b[i].state == XLB_BACKEND_DOWN ?
				   XLB_MEMBER_DOWN : XLB_MEMBER_DRAIN;
	}
	t->size = p->size;
	t->slots = slots;
	t->members = members;
	t->n_members = (uint32_t)n;
	return 0;
fail:
	free(sorted);
	free(slots);
	return ret;
}

void xlb_table_free(struct xlb_table *t)
{
	free(t->slots);
	free(t->members);
	t->slots = NULL;
	t->members = NULL;
	t->n_members = 0;
	t->size = 0;
}

int xlb_table_members_equal(const struct xlb_table *a,
			    const struct xlb_table *b)
{
	uint32_t i;

	if (!a->members || !b->members || a->n_members != b->n_members)
		return 0;
	for (i = 0; i < a->n_members; i++)
		if (a->members[i].id != b->members[i].id ||
		    a->members[i].state != b->members[i].state)
			return 0;
	return 1;
}

static uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/*
 * One pass over the slots.  The digest is a chain of a multiply per slot,
 * which leaves the counting of members beside it for free: a bit per id,
 * NONE's included and taken off at the end.  The names' hashes sit in an
 * array of the ids up to the largest the specs have: an id above it is
 * none of theirs and hashes as 0, as NONE does.
 */
uint64_t xlb_table_fingerprint_members(const struct xlb_table *t,
				       const struct xlb_backend_spec *b,
				       size_t n, uint32_t *members)
{
	static const struct xlb_hash_key fp_key = { 0x786c622d66707231ULL,
						    0x7461626c652d6670ULL };
	uint64_t seen[(XLB_BACKEND_NONE + 1) / 64];
	uint32_t top = 0, count = 0, p, q;
	uint64_t *nh, h;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i].id <= XLB_BACKEND_ID_MAX && b[i].name && b[i].id > top)
			top = b[i].id;
	/* nh[id] = hash of the name behind id; nh[top + 1] = 0 */
	nh = calloc((size_t)top + 2, sizeof(*nh));
	if (!nh)
		return 0;
	for (i = 0; i < n; i++)
		if (b[i].id <= XLB_BACKEND_ID_MAX && b[i].name)
			nh[b[i].id] = xlb_siphash13(&fp_key, b[i].name,
						    strlen(b[i].name)) | 1;
	memset(seen, 0, sizeof(seen));
	h = 0x9e3779b97f4a7c15ULL ^ t->size;
	for (i = 0; i < t->size; i++) {
		uint64_t x;

		p = t->slots[i].primary;
		q = t->slots[i].secondary;
		seen[p / 64] |= 1ull << p % 64;
		x = nh[p <= top ? p : top + 1] +
		    rotl64(nh[q <= top ? q : top + 1], 29);
		h = (rotl64(h, 27) ^ x) * 0xff51afd7ed558ccdULL;
	}
	free(nh);
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	if (members) {
		for (i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
			count += (uint32_t)__builtin_popcountll(seen[i]);
		*members = count - (uint32_t)(seen[XLB_BACKEND_NONE / 64] >>
					      XLB_BACKEND_NONE % 64 & 1);
	}
	return h;
}

uint64_t xlb_table_fingerprint(const struct xlb_table *t,
			       const struct xlb_backend_spec *b, size_t n)
{
	return xlb_table_fingerprint_members(t, b, n, NULL);
}

size_t xlb_table_diff(const struct xlb_table *a, const struct xlb_table *b)
{
	size_t i, d = 0;

	for (i = 0; i < a->size && i < b->size; i++)
		d += a->slots[i].primary != b->slots[i].primary;
	return d;
}

size_t xlb_table_count(const struct xlb_table *t, uint16_t id)
{
	size_t i, c = 0;

	for (i = 0; i < t->size; i++)
		c += t->slots[i].primary == id;
	return c;
}
