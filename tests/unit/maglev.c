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

TEST_HARNESS_MAIN
