// SPDX-License-Identifier: GPL-2.0
/* Maglev population: fill, balance, weights, determinism, disruption, secondary. */
#include "kselftest_harness.h"
#include "backends.h"

#define M 65537

static struct backend_set set, set2;

static void build(struct __test_metadata *_metadata, struct xlb_table *t,
		  const struct backend_set *s, uint32_t m)
{
	struct xlb_table_params p = params(XLB_ALGO_MAGLEV, m, 0);
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_table_build(t, &p, s->spec, s->n, &err))
		TH_LOG("build: %s", err.msg);
}

TEST(every_slot_filled_with_distinct_secondary)
{
	static const size_t sizes[] = { 1, 2, 3, 10, 100 };
	struct xlb_table t;
	size_t k, i;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		set_init(&set, sizes[k]);
		build(_metadata, &t, &set, M);
		for (i = 0; i < M; i++) {
			ASSERT_LT(t.slots[i].primary, sizes[k]);
			if (sizes[k] == 1) {
				ASSERT_EQ(XLB_BACKEND_NONE, t.slots[i].secondary);
			} else {
				ASSERT_LT(t.slots[i].secondary, sizes[k]);
				ASSERT_NE(t.slots[i].primary, t.slots[i].secondary);
			}
		}
		xlb_table_free(&t);
	}
}

TEST(equal_weights_share_within_one_percent)
{
	static const size_t sizes[] = { 2, 3, 5, 7, 10, 13, 32, 50, 77, 100 };
	struct xlb_table t;
	double hi, lo;
	size_t k;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		set_init(&set, sizes[k]);
		build(_metadata, &t, &set, M);
		share_stats(&t, &set, &hi, &lo);
		EXPECT_LE(hi, 1.01) TH_LOG("N=%zu max/avg %.4f", sizes[k], hi);
		EXPECT_GE(lo, 0.99) TH_LOG("N=%zu min/avg %.4f", sizes[k], lo);
		xlb_table_free(&t);
	}
}

TEST(weights_1_2_3)
{
	struct xlb_table t;
	size_t i;

	set_init(&set, 3);
	for (i = 0; i < 3; i++)
		set.spec[i].weight = i + 1;
	build(_metadata, &t, &set, M);
	for (i = 0; i < 3; i++) {
		double share = (double)xlb_table_count(&t, i) / M;
		double want = (i + 1) / 6.0;

		TH_LOG("weight %zu: share %.5f, ideal %.5f", i + 1, share, want);
		EXPECT_LT(share, want * 1.01);
		EXPECT_GT(share, want * 0.99);
	}
	xlb_table_free(&t);
}

TEST(insertion_order_does_not_matter)
{
	struct xlb_table a, b;
	uint64_t seed;

	set_init(&set, 100);
	set.spec[3].weight = 5;
	build(_metadata, &a, &set, M);
	for (seed = 1; seed <= 5; seed++) {
		set_shuffle(&set, seed);
		build(_metadata, &b, &set, M);
		EXPECT_EQ(0, memcmp(a.slots, b.slots, M * sizeof(*a.slots)));
		EXPECT_EQ(xlb_table_fingerprint(&a, set.spec, set.n),
			  xlb_table_fingerprint(&b, set.spec, set.n));
		xlb_table_free(&b);
	}
	xlb_table_free(&a);
}

static double removal_disruption(struct __test_metadata *_metadata,
				 size_t n, uint32_t m)
{
	struct xlb_table a, b;
	double moved;

	set_init(&set, n);
	build(_metadata, &a, &set, m);
	set_remove(&set, n / 2);
	build(_metadata, &b, &set, m);
	moved = (double)xlb_table_diff(&a, &b) / m;
	xlb_table_free(&a);
	xlb_table_free(&b);
	return moved;
}

TEST(removal_moves_at_most_two_over_n)
{
	static const size_t sizes[] = { 3, 10, 50, 100 };
	size_t k;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double moved = removal_disruption(_metadata, sizes[k], M);

		TH_LOG("M=%d N=%zu: removing one backend changed %.4f of slots (1/N = %.4f, bound 2/N = %.4f)",
		       M, sizes[k], moved, 1.0 / sizes[k], 2.0 / sizes[k]);
		EXPECT_LE(moved, 2.0 / sizes[k]);
	}
	/* Not a bound: Maglev disruption grows with N/M; shown for scale. */
	TH_LOG("M=%d N=1000: removing one backend changed %.4f of slots (1/N = 0.0010): M is too small for N=1000",
	       M, removal_disruption(_metadata, 1000, M));
}

/*
 * The property we guarantee for the Maglev secondary: it is a usable backend
 * other than the primary (tested above), and when the primary is removed the
 * rebuilt table hands most of its slots to their secondaries.  At the fixed
 * test key we require at least 95% (measured: 97-99.8%, printed); a
 * regression in the secondary walk falls far below that.
 */
TEST(secondary_inherits_slots_of_removed_primary)
{
	static const size_t sizes[] = { 3, 10, 100 };
	struct xlb_table a, b;
	size_t k, i;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], gone = n / 2, owned = 0, inherited = 0;

		set_init(&set, n);
		build(_metadata, &a, &set, M);
		set_remove(&set, gone);
		build(_metadata, &b, &set, M);
		for (i = 0; i < M; i++) {
			if (a.slots[i].primary != gone)
				continue;
			owned++;
			inherited += b.slots[i].primary == a.slots[i].secondary;
		}
		TH_LOG("N=%zu: %zu of %zu slots of the removed backend went to their secondary (%.1f%%)",
		       n, inherited, owned, 100.0 * inherited / owned);
		EXPECT_GE(inherited * 100, owned * 95);
		xlb_table_free(&a);
		xlb_table_free(&b);
	}
}

TEST(drained_and_down_get_no_slots)
{
	struct xlb_table t;
	double hi, lo;
	size_t i;

	set_init(&set, 10);
	set.spec[2].weight = 0;
	set.spec[5].state = XLB_BACKEND_DOWN;
	set.spec[7].state = XLB_BACKEND_DRAIN;
	build(_metadata, &t, &set, M);
	EXPECT_EQ(0, xlb_table_count(&t, 2));
	EXPECT_EQ(0, xlb_table_count(&t, 5));
	EXPECT_EQ(0, xlb_table_count(&t, 7));
	for (i = 0; i < M; i++) {
		EXPECT_NE(2, t.slots[i].secondary);
		EXPECT_NE(5, t.slots[i].secondary);
		EXPECT_NE(7, t.slots[i].secondary);
	}
	share_stats(&t, &set, &hi, &lo);
	EXPECT_LE(hi, 1.01);
	xlb_table_free(&t);
}

TEST(no_usable_backend_gives_empty_table)
{
	struct xlb_table t;
	size_t i;

	set_init(&set, 3);
	set.spec[0].state = XLB_BACKEND_DOWN;
	set.spec[1].weight = 0;
	set.spec[2].state = XLB_BACKEND_DRAIN;
	build(_metadata, &t, &set, 251);
	for (i = 0; i < 251; i++) {
		EXPECT_EQ(XLB_BACKEND_NONE, t.slots[i].primary);
		EXPECT_EQ(XLB_BACKEND_NONE, t.slots[i].secondary);
	}
	xlb_table_free(&t);

	set.n = 0;
	build(_metadata, &t, &set, 251);
	EXPECT_EQ(251, t.size);
	EXPECT_EQ(XLB_BACKEND_NONE, t.slots[0].primary);
	xlb_table_free(&t);
}

TEST(every_size_in_the_list_builds)
{
	struct xlb_table t;
	size_t k;

	set_init(&set, 7);
	for (k = 0; k < xlb_table_sizes_count; k++) {
		build(_metadata, &t, &set, xlb_table_sizes[k]);
		EXPECT_EQ(0, xlb_table_count(&t, XLB_BACKEND_NONE));
		xlb_table_free(&t);
	}
}

TEST(ids_do_not_change_placement)
{
	struct xlb_table a, b;
	size_t i;

	set_init(&set, 20);
	set_init(&set2, 20);
	for (i = 0; i < 20; i++)
		set2.spec[i].id = (uint16_t)(1000 + 19 - i);
	build(_metadata, &a, &set, M);
	build(_metadata, &b, &set2, M);
	for (i = 0; i < M; i++)
		ASSERT_EQ(1000 + 19 - a.slots[i].primary, b.slots[i].primary);
	EXPECT_EQ(xlb_table_fingerprint(&a, set.spec, set.n),
		  xlb_table_fingerprint(&b, set2.spec, set2.n));
	xlb_table_free(&a);
	xlb_table_free(&b);
}

/*
 * An independent model of Maglev as maglev.c documents it, written for
 * clarity, not speed: usable backends in name order, offset = h % M and
 * skip = h' % (M - 1) + 1 from the keyed hash of the name; rounds in name
 * order, w turns for weight w, each claiming the next free slot of the
 * walk; the first other walk to reach a taken slot is its secondary; then
 * one step per backend per round until every slot has a secondary.
 */
static int cmp_spec_ptr(const void *a, const void *b)
{
	const struct xlb_backend_spec *x = *(const struct xlb_backend_spec * const *)a;
	const struct xlb_backend_spec *y = *(const struct xlb_backend_spec * const *)b;

	return strcmp(x->name, y->name);
}

static void model_specs(const struct xlb_backend_spec *spec, size_t ns,
			uint32_t m, struct xlb_hash_key key,
			struct xlb_slot *out)
{
	const struct xlb_backend_spec **u = calloc(ns + 1, sizeof(*u));
	uint64_t *pos = calloc(ns + 1, sizeof(*pos));
	uint64_t *skip = calloc(ns + 1, sizeof(*skip));
	size_t n = 0, i, filled = 0, missing = 0;
	uint32_t k;

	if (!u || !pos || !skip)
		abort();
	for (i = 0; i < ns; i++)
		if (spec[i].state == XLB_BACKEND_ACTIVE && spec[i].weight)
			u[n++] = &spec[i];
	qsort(u, n, sizeof(u[0]), cmp_spec_ptr);
	for (i = 0; i < n; i++) {
		uint64_t h = xlb_siphash13(&key, u[i]->name, strlen(u[i]->name));

		pos[i] = (uint32_t)h % m;
		skip[i] = (uint32_t)(h >> 32) % (m - 1) + 1;
	}
	for (k = 0; k < m; k++)
		out[k].primary = out[k].secondary = XLB_BACKEND_NONE;
	if (!n)
		goto out;
	while (filled < m) {
		for (i = 0; i < n && filled < m; i++) {
			uint32_t t;

			for (t = 0; t < u[i]->weight && filled < m; t++) {
				while (out[pos[i]].primary != XLB_BACKEND_NONE) {
					if (out[pos[i]].secondary == XLB_BACKEND_NONE &&
					    out[pos[i]].primary != u[i]->id)
						out[pos[i]].secondary = u[i]->id;
					pos[i] = (pos[i] + skip[i]) % m;
				}
				out[pos[i]].primary = u[i]->id;
				pos[i] = (pos[i] + skip[i]) % m;
				filled++;
			}
		}
	}
	if (n < 2)
		goto out;
	for (k = 0; k < m; k++)
		missing += out[k].secondary == XLB_BACKEND_NONE;
	while (missing) {
		for (i = 0; i < n && missing; i++) {
			struct xlb_slot *sl = &out[pos[i]];

			if (sl->secondary == XLB_BACKEND_NONE &&
			    sl->primary != u[i]->id) {
				sl->secondary = u[i]->id;
				missing--;
			}
			pos[i] = (pos[i] + skip[i]) % m;
		}
	}
out:
	free(u);
	free(pos);
	free(skip);
}

static void model_maglev(const struct backend_set *s, uint32_t m,
			 struct xlb_hash_key key, struct xlb_slot *out)
{
	model_specs(s->spec, s->n, m, key, out);
}

static void check_model(struct __test_metadata *_metadata,
			const struct backend_set *s, uint32_t m)
{
	struct xlb_slot *want = calloc(m, sizeof(*want));
	struct xlb_table t;
	uint32_t k;

	ASSERT_NE(NULL, want);
	model_maglev(s, m, TEST_KEY, want);
	build(_metadata, &t, s, m);
	for (k = 0; k < m; k++) {
		ASSERT_EQ(want[k].primary, t.slots[k].primary)
			TH_LOG("M=%u N=%zu slot %u: primary", m, s->n, k);
		ASSERT_EQ(want[k].secondary, t.slots[k].secondary)
			TH_LOG("M=%u N=%zu slot %u: secondary", m, s->n, k);
	}
	xlb_table_free(&t);
	free(want);
}

TEST(every_slot_matches_the_model)
{
	static const struct { uint32_t m; size_t n; int pattern; } cases[] = {
		{ 251, 1, GOLD_W_FLAT }, { 251, 2, GOLD_W_FLAT },
		{ 251, 251, GOLD_W_FLAT }, { 251, 200, GOLD_W_MIXED },
		{ 4093, 7, GOLD_W_HEAVY }, { 4093, 1000, GOLD_W_MIXED },
		{ 65537, 3, GOLD_W_FLAT }, { 65537, 100, GOLD_W_MIXED },
		{ 65537, 1000, GOLD_W_FLAT }, { 65537, 50, GOLD_W_HEAVY },
		/* the last set named in bytes, the first in 16-bit words */
		{ 65537, 253, GOLD_W_MIXED }, { 65537, 254, GOLD_W_MIXED },
		{ 4093, 253, GOLD_W_FLAT }, { 4093, 254, GOLD_W_FLAT },
	};
	size_t k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		set_golden(&set, cases[k].n, cases[k].pattern);
		set_shuffle(&set, k + 1);
		check_model(_metadata, &set, cases[k].m);
	}
}

/*
 * The builder names walkers in bytes up to 253 usable backends, in 16-bit
 * words above that but for the largest sets (more than 65533): both sides of that limit, with as
 * many backends as ids allow, match the model, in a table large enough
 * that every one of them walks before the last 1/256 of the slots.
 */
#define M_LARGE	131071

TEST(the_largest_sets_match_the_model)
{
	static const size_t sizes[] = { 65533, 65534, XLB_BACKEND_ID_MAX + 1 };
	struct xlb_backend_spec *spec;
	char (*names)[24];
	size_t k, i;

	spec = calloc(XLB_BACKEND_ID_MAX + 1, sizeof(*spec));
	names = calloc(XLB_BACKEND_ID_MAX + 1, sizeof(*names));
	ASSERT_NE(NULL, spec);
	ASSERT_NE(NULL, names);
	for (i = 0; i <= XLB_BACKEND_ID_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "10.%zu.%zu.%zu",
			 i / 65536, (i / 256) % 256, i % 256);
		spec[i].name = names[i];
		spec[i].weight = 1 + (i % 8 == 0);
		spec[i].id = (uint16_t)(XLB_BACKEND_ID_MAX - i);
	}
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct xlb_table_params p = params(XLB_ALGO_MAGLEV, M_LARGE, 0);
		struct xlb_slot *want = calloc(M_LARGE, sizeof(*want));
		struct xlb_err err;
		struct xlb_table t;
		uint32_t x;

		ASSERT_NE(NULL, want);
		model_specs(spec, sizes[k], M_LARGE, TEST_KEY, want);
		ASSERT_EQ(0, xlb_table_build(&t, &p, spec, sizes[k], &err))
			TH_LOG("%s", err.msg);
		for (x = 0; x < M_LARGE; x++) {
			ASSERT_EQ(want[x].primary, t.slots[x].primary)
				TH_LOG("N=%zu slot %u: primary", sizes[k], x);
			ASSERT_EQ(want[x].secondary, t.slots[x].secondary)
				TH_LOG("N=%zu slot %u: secondary", sizes[k], x);
		}
		xlb_table_free(&t);
		free(want);
	}
	free(spec);
	free(names);
}

/*
 * Golden tables: fingerprints (every slot's primary and secondary) of
 * Maglev tables built from fixed inputs, recorded before the builder was made
 * faster.  Placement is the interface between hosts and versions: a change
 * here means every LB host running another version disagrees on where flows
 * go.  If one of these fails, the builder's output changed; fix the builder,
 * never the number.
 */
static const struct golden maglev_golden[] = {
	{ 251, 1, GOLD_W_FLAT, 0, 0, 0xee864fa76291439bULL },
	{ 251, 2, GOLD_W_FLAT, 0, 0, 0x48587da3c9f26f7aULL },
	{ 251, 250, GOLD_W_MIXED, 0, 0, 0x929769ee0e88da16ULL },
	{ 251, 251, GOLD_W_FLAT, 0, 0, 0xdebe7df86b55b20fULL },
	{ 4093, 3, GOLD_W_FLAT, 0, 0, 0x9c049c7c6600b949ULL },
	{ 4093, 10, GOLD_W_FLAT, 0, 0, 0x50041dc610163dc7ULL },
	{ 4093, 100, GOLD_W_FLAT, 0, 0, 0x5120d54c0a74bcd7ULL },
	{ 4093, 1000, GOLD_W_FLAT, 0, 0, 0x61fab2a43f929fddULL },
	{ 4093, 1000, GOLD_W_MIXED, 0, 1, 0xdb3d4e618896f6a1ULL },
	{ 4093, 100, GOLD_W_HEAVY, 0, 0, 0x52295e457cb964f1ULL },
	{ 65537, 2, GOLD_W_FLAT, 0, 0, 0x11b41d639bba7538ULL },
	{ 65537, 10, GOLD_W_FLAT, 0, 0, 0x8124ce837de28512ULL },
	{ 65537, 100, GOLD_W_FLAT, 0, 0, 0xb01434941c25ed2dULL },
	{ 65537, 100, GOLD_W_FLAT, 0, 1, 0x0f760b716f0a00f7ULL },
	{ 65537, 1000, GOLD_W_FLAT, 0, 0, 0x328b3a4191d029edULL },
	{ 65537, 100, GOLD_W_MIXED, 0, 0, 0xa03442584c255299ULL },
	{ 65537, 1000, GOLD_W_MIXED, 0, 1, 0x4d08f899900a7614ULL },
	{ 65537, 10, GOLD_W_HEAVY, 0, 0, 0xc3c118630a2d87f1ULL },
	{ 1048573, 100, GOLD_W_FLAT, 0, 0, 0x83ee5ab9c493a6d4ULL },
	{ 4093, 63, GOLD_NAMES, 0, 0, 0x180f891ca8d7ce85ULL },
	{ 65537, 200, GOLD_NAMES, 0, 1, 0x989343cb884c5570ULL },
};

TEST(golden_tables_are_unchanged)
{
	struct xlb_err err = { "" };
	size_t i;
	int ret;

	for (i = 0; i < sizeof(maglev_golden) / sizeof(maglev_golden[0]); i++) {
		const struct golden *g = &maglev_golden[i];
		uint64_t fp = golden_fp(g, XLB_ALGO_MAGLEV, &set, &err, &ret);

		ASSERT_EQ(0, ret) TH_LOG("case %zu: %s", i, err.msg);
		EXPECT_EQ(g->fp, fp)
			TH_LOG("case %zu (M=%u N=%u pattern %d vnodes %u key %d): fingerprint 0x%016llx, golden 0x%016llx",
			       i, g->m, g->n, g->pattern, g->vnodes, g->key,
			       (unsigned long long)fp,
			       (unsigned long long)g->fp);
	}
}

TEST_HARNESS_MAIN
