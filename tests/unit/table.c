// SPDX-License-Identifier: GPL-2.0
/* Bad input errors; size list, algo names, fingerprint, diff, count, slot layout. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "backends.h"

#define M 65537

static const uint32_t algos[] = { XLB_ALGO_MAGLEV, XLB_ALGO_RING };

static struct backend_set set, set2;

/*
 * Build must fail with -want, say why (msg contains substr) and leave the
 * output struct alone.  The sentinel is never dereferenced.
 */
static void expect_fail(struct __test_metadata *_metadata,
			const struct xlb_table_params *p,
			const struct xlb_backend_spec *b, size_t n, int want,
			const char *substr)
{
	struct xlb_table t = { .size = 12345, .slots = (void *)0x1 };
	struct xlb_err err = { "" };
	int ret;

	ret = xlb_table_build(&t, p, b, n, &err);
	TH_LOG("%s M=%u vnodes %u n=%zu: %d \"%s\"", xlb_algo_name(p->algo),
	       p->size, p->vnodes, n, ret, err.msg);
	EXPECT_EQ(-want, ret);
	EXPECT_NE(0, err.msg[0]);
	EXPECT_TRUE(strstr(err.msg, substr) != NULL)
		TH_LOG("message lacks \"%s\"", substr);
	EXPECT_EQ(12345, t.size);
	EXPECT_TRUE(t.slots == (void *)0x1);
	if (ret == 0 && t.slots != (void *)0x1)
		xlb_table_free(&t);
}

static void expect_ok(struct __test_metadata *_metadata,
		      const struct xlb_table_params *p,
		      const struct xlb_backend_spec *b, size_t n)
{
	struct xlb_table t = { 0 };
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_table_build(&t, p, b, n, &err))
		TH_LOG("%s M=%u: %s", xlb_algo_name(p->algo), p->size, err.msg);
	EXPECT_EQ(p->size, t.size);
	EXPECT_EQ(0, xlb_table_count(&t, XLB_BACKEND_NONE));
	xlb_table_free(&t);
}

static void build(struct __test_metadata *_metadata, struct xlb_table *t,
		  uint32_t algo, const struct backend_set *s, uint32_t m)
{
	struct xlb_table_params p = params(algo, m, XLB_RING_VNODES_DEFAULT);
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_table_build(t, &p, s->spec, s->n, &err))
		TH_LOG("build: %s", err.msg);
}

TEST(size_not_in_the_list_is_einval)
{
	static const uint32_t bad[] = { 0, 250, 1000, 65536, 1048575,
					UINT32_MAX };
	struct xlb_table_params p;
	size_t a, k;

	set_init(&set, 3);
	for (a = 0; a < 2; a++)
		for (k = 0; k < ARRAY_SIZE(bad); k++) {
			p = params(algos[a], bad[k], XLB_RING_VNODES_DEFAULT);
			expect_fail(_metadata, &p, set.spec, set.n, EINVAL,
				    "not allowed");
		}
}

TEST(more_backends_than_slots_is_e2big)
{
	struct xlb_table_params p;
	size_t a;

	set_init(&set, 252);
	for (a = 0; a < 2; a++) {
		p = params(algos[a], 251, 1);
		expect_fail(_metadata, &p, set.spec, set.n, E2BIG, "do not fit");
	}
	/* as many backends as slots is fine */
	set.n = 251;
	for (a = 0; a < 2; a++) {
		p = params(algos[a], 251, 1);
		expect_ok(_metadata, &p, set.spec, set.n);
	}
}

TEST(duplicate_name_is_eexist)
{
	struct xlb_table_params p;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 10);
		strcpy(set.names[7], set.names[2]);
		expect_fail(_metadata, &p, set.spec, set.n, EEXIST,
			    "used twice");
		/* also when one of the two gets no slots */
		set.spec[7].state = XLB_BACKEND_DOWN;
		expect_fail(_metadata, &p, set.spec, set.n, EEXIST,
			    "used twice");
	}
}

TEST(duplicate_id_is_eexist)
{
	struct xlb_table_params p;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 10);
		set.spec[7].id = 2;
		expect_fail(_metadata, &p, set.spec, set.n, EEXIST,
			    "used twice");
	}
}

TEST(id_ffff_is_einval)
{
	struct xlb_table_params p;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 10);
		set.spec[4].id = XLB_BACKEND_NONE;
		expect_fail(_metadata, &p, set.spec, set.n, EINVAL, "ids are");
		/* the largest id is fine */
		set.spec[4].id = XLB_BACKEND_ID_MAX;
		expect_ok(_metadata, &p, set.spec, set.n);
	}
}

TEST(total_weight_over_32_bits_is_eoverflow)
{
	struct xlb_table_params p;
	size_t a;

	set_init(&set, 2);
	set.spec[0].weight = UINT32_MAX;
	set.spec[1].weight = UINT32_MAX;
	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, 1);
		expect_fail(_metadata, &p, set.spec, set.n, EOVERFLOW,
			    "overflows");
	}
}

/*
 * The weight check accepts a total of exactly UINT32_MAX, so Maglev must
 * build it (in microseconds at M = 251).  If this test dies of SIGALRM, the
 * build did not finish within 10 s.
 */
TEST(maglev_total_weight_at_the_limit_builds)
{
	struct xlb_table_params p = params(XLB_ALGO_MAGLEV, 251, 0);

	set_init(&set, 2);
	set.spec[0].weight = 1;
	set.spec[1].weight = UINT32_MAX - 1;
	TH_LOG("weights 1 and %u, M=251: a SIGALRM below means the build hung",
	       UINT32_MAX - 1);
	alarm(10);
	expect_ok(_metadata, &p, set.spec, set.n);
	alarm(0);
}

/*
 * The build exactly at the limit sorts 4 Mi tokens: under ASan, on a
 * machine the vm tier's guests share, that took more than the harness's
 * 30 s once, so this test waits 5 minutes before it calls it a hang.
 */
FIXTURE(ring_limit) {
	int unused;
};

FIXTURE_SETUP(ring_limit)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(ring_limit)
{
}

TEST_F_TIMEOUT(ring_limit, tokens_over_the_limit_is_eoverflow, 300)
{
	struct xlb_table_params p;

	set_init(&set, 2);
	p = params(XLB_ALGO_RING, M, XLB_RING_TOKENS_MAX / 2 + 1);
	expect_fail(_metadata, &p, set.spec, set.n, EOVERFLOW, "limit");

	set.spec[1].weight = 3;
	p = params(XLB_ALGO_RING, M, XLB_RING_TOKENS_MAX / 4 + 1);
	expect_fail(_metadata, &p, set.spec, set.n, EOVERFLOW, "limit");

	p = params(XLB_ALGO_RING, M, UINT32_MAX);
	expect_fail(_metadata, &p, set.spec, set.n, EOVERFLOW, "limit");

	/* exactly at the limit is fine */
	p = params(XLB_ALGO_RING, M, XLB_RING_TOKENS_MAX / 4);
	expect_ok(_metadata, &p, set.spec, set.n);
}

TEST(null_or_empty_name_is_einval)
{
	struct xlb_table_params p;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 10);
		set.spec[5].name = NULL;
		expect_fail(_metadata, &p, set.spec, set.n, EINVAL,
			    "empty name");
		set.spec[5].name = "";
		expect_fail(_metadata, &p, set.spec, set.n, EINVAL,
			    "empty name");
	}
}

TEST(name_longer_than_name_max_is_enametoolong)
{
	char name[XLB_NAME_MAX + 2];
	struct xlb_table_params p;
	struct xlb_table t;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 10);
		memset(name, 'n', XLB_NAME_MAX + 1);
		name[XLB_NAME_MAX + 1] = 0;
		set.spec[5].name = name;
		expect_fail(_metadata, &p, set.spec, set.n, ENAMETOOLONG,
			    "longer than");

		/* exactly XLB_NAME_MAX bytes is a name like any other */
		name[XLB_NAME_MAX] = 0;
		build(_metadata, &t, algos[a], &set, M);
		EXPECT_GT(xlb_table_count(&t, 5), 0);
		xlb_table_free(&t);
	}
}

TEST(ring_vnodes_0_is_einval)
{
	struct xlb_table_params p = params(XLB_ALGO_RING, M, 0);

	set_init(&set, 3);
	expect_fail(_metadata, &p, set.spec, set.n, EINVAL, "vnodes");
	/* Maglev has no vnodes and ignores the field */
	p.algo = XLB_ALGO_MAGLEV;
	expect_ok(_metadata, &p, set.spec, set.n);
}

TEST(unknown_algo_is_einval)
{
	struct xlb_table_params p = params(7, M, XLB_RING_VNODES_DEFAULT);

	set_init(&set, 3);
	expect_fail(_metadata, &p, set.spec, set.n, EINVAL, "unknown");
}

TEST(unknown_state_is_einval)
{
	struct xlb_table_params p;
	size_t a;

	for (a = 0; a < 2; a++) {
		p = params(algos[a], M, XLB_RING_VNODES_DEFAULT);
		set_init(&set, 3);
		set.spec[1].state = 9;
		expect_fail(_metadata, &p, set.spec, set.n, EINVAL,
			    "unknown state");
	}
}

static int is_prime(uint32_t n)
{
	uint32_t d;

	if (n < 2)
		return 0;
	for (d = 2; (uint64_t)d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

/* Classes number the sizes as the data path's maps do (bpf/table.h). */
TEST(table_class_is_the_size_s_place_from_one)
{
#define CLASS_IS(c, m)	ASSERT_EQ((c), xlb_table_class(m));
	XLB_TABLE_SIZES_X(CLASS_IS)
#undef CLASS_IS
	ASSERT_EQ(XLB_TABLE_CLASSES, xlb_table_sizes_count);
	ASSERT_EQ(XLB_TABLE_CLASS_NONE, xlb_table_class(0));
	ASSERT_EQ(XLB_TABLE_CLASS_NONE, xlb_table_class(250));
	ASSERT_EQ(XLB_TABLE_CLASS_NONE, xlb_table_class(65536));
	ASSERT_EQ(XLB_TABLE_CLASS_NONE, xlb_table_class(UINT32_MAX));
}

/* The data path's remainder without a division is hash % M, exactly. */
TEST(mod_without_division_is_the_remainder_for_every_size)
{
	static const uint32_t edge[] = { 0, 1, 2, 0x7fffffffu, 0x80000000u,
					 0xfffffffeu, 0xffffffffu };
	uint64_t s = 0x6d6f64;
	size_t i, k;
	uint32_t m;

	for (i = 0; i < xlb_table_sizes_count; i++) {
		uint64_t c;

		m = xlb_table_sizes[i];
		c = XLB_MOD_C(m);
		for (k = 0; k < sizeof(edge) / sizeof(edge[0]); k++)
			ASSERT_EQ(edge[k] % m, xlb_mod(edge[k], m, c));
		/* around multiples of M, and the largest ones */
		for (k = 1; k < 4096; k++) {
			uint64_t x = (uint64_t)k * m;

			if (x <= 0xffffffffu)
				ASSERT_EQ(0, xlb_mod((uint32_t)x, m, c));
			if (x - 1 <= 0xffffffffu)
				ASSERT_EQ(m - 1, xlb_mod((uint32_t)(x - 1), m, c));
			x = 0xffffffffu - (uint64_t)k;
			ASSERT_EQ((uint32_t)x % m, xlb_mod((uint32_t)x, m, c));
		}
		for (k = 0; k < 200000; k++) {
			uint32_t x;

			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			x = (uint32_t)(s >> 32);
			ASSERT_EQ(x % m, xlb_mod(x, m, c)) TH_LOG("x %u m %u", x, m);
		}
	}
}

TEST(size_list_is_increasing_primes_with_the_default)
{
	static const uint32_t good[] = { 251, 1021, 4093, 16381, 65537,
					 262139, 1048573 };
	static const uint32_t bad[] = { 0, 250, 1000, 65536, 1048575,
					UINT32_MAX };
	int has_default = 0;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(good); k++)
		EXPECT_TRUE(xlb_table_size_valid(good[k])) TH_LOG("%u", good[k]);
	for (k = 0; k < ARRAY_SIZE(bad); k++)
		EXPECT_FALSE(xlb_table_size_valid(bad[k])) TH_LOG("%u", bad[k]);
	ASSERT_GT(xlb_table_sizes_count, 0);
	for (k = 0; k < xlb_table_sizes_count; k++) {
		EXPECT_TRUE(is_prime(xlb_table_sizes[k]))
			TH_LOG("%u is not prime", xlb_table_sizes[k]);
		if (k)
			EXPECT_LT(xlb_table_sizes[k - 1], xlb_table_sizes[k]);
		has_default |= xlb_table_sizes[k] == XLB_TABLE_SIZE_DEFAULT;
	}
	EXPECT_TRUE(has_default);
	EXPECT_EQ(XLB_TABLE_SIZE_MAX,
		  xlb_table_sizes[xlb_table_sizes_count - 1]);
}

TEST(algo_names_parse_exactly_and_round_trip)
{
	static const char *const bad[] = { "", "Maglev", "rings", "ring ",
					   "magle" };
	uint32_t algo;
	size_t k;

	algo = 99;
	EXPECT_EQ(0, xlb_algo_parse("maglev", &algo));
	EXPECT_EQ(XLB_ALGO_MAGLEV, algo);
	algo = 99;
	EXPECT_EQ(0, xlb_algo_parse("ring", &algo));
	EXPECT_EQ(XLB_ALGO_RING, algo);
	for (k = 0; k < ARRAY_SIZE(bad); k++)
		EXPECT_EQ(-EINVAL, xlb_algo_parse(bad[k], &algo))
			TH_LOG("bad name %zu accepted", k);
	for (k = 0; k < 2; k++) {
		algo = 99;
		EXPECT_EQ(0, xlb_algo_parse(xlb_algo_name(algos[k]), &algo));
		EXPECT_EQ(algos[k], algo);
	}
	EXPECT_EQ(-EINVAL, xlb_algo_parse(xlb_algo_name(7), &algo));
}

static void copy_table(struct __test_metadata *_metadata,
		       struct xlb_table *dst, const struct xlb_table *src)
{
	dst->size = src->size;
	dst->members = NULL;
	dst->n_members = 0;
	dst->slots = malloc(src->size * sizeof(*src->slots));
	ASSERT_NE(NULL, dst->slots);
	memcpy(dst->slots, src->slots, src->size * sizeof(*src->slots));
}

TEST(fingerprint_follows_every_slot)
{
	struct xlb_table a, b, c;
	uint64_t fa;
	size_t k;

	for (k = 0; k < 2; k++) {
		set_init(&set, 10);
		build(_metadata, &a, algos[k], &set, M);
		build(_metadata, &b, algos[k], &set, M);
		fa = xlb_table_fingerprint(&a, set.spec, set.n);
		EXPECT_EQ(fa, xlb_table_fingerprint(&a, set.spec, set.n));
		EXPECT_EQ(fa, xlb_table_fingerprint(&b, set.spec, set.n));
		xlb_table_free(&b);

		/* another membership */
		set_init(&set2, 11);
		build(_metadata, &b, algos[k], &set2, M);
		EXPECT_NE(fa, xlb_table_fingerprint(&b, set2.spec, set2.n));
		xlb_table_free(&b);
		set_init(&set2, 10);
		set_remove(&set2, 3);
		build(_metadata, &b, algos[k], &set2, M);
		EXPECT_NE(fa, xlb_table_fingerprint(&b, set2.spec, set2.n));
		xlb_table_free(&b);

		/* one primary changed by hand */
		copy_table(_metadata, &c, &a);
		c.slots[4321].primary = (c.slots[4321].primary + 1) % 10;
		EXPECT_NE(fa, xlb_table_fingerprint(&c, set.spec, set.n));
		EXPECT_EQ(1, xlb_table_diff(&a, &c));
		xlb_table_free(&c);

		/* one secondary changed by hand: a new digest, no diff */
		copy_table(_metadata, &c, &a);
		c.slots[M - 1].secondary = (c.slots[M - 1].secondary + 1) % 10;
		EXPECT_NE(fa, xlb_table_fingerprint(&c, set.spec, set.n));
		EXPECT_EQ(0, xlb_table_diff(&a, &c));
		xlb_table_free(&c);

		/* primary and secondary swapped in one slot */
		copy_table(_metadata, &c, &a);
		c.slots[0].primary = a.slots[0].secondary;
		c.slots[0].secondary = a.slots[0].primary;
		EXPECT_NE(fa, xlb_table_fingerprint(&c, set.spec, set.n));
		EXPECT_EQ(1, xlb_table_diff(&a, &c));
		xlb_table_free(&c);

		xlb_table_free(&a);
	}
}

/* Distinct primaries of t, counted the slow way. */
static uint32_t count_primaries(const struct xlb_table *t)
{
	static uint8_t seen[XLB_BACKEND_NONE + 1];
	uint32_t s, n = 0;

	memset(seen, 0, sizeof(seen));
	for (s = 0; s < t->size; s++) {
		uint16_t id = t->slots[s].primary;

		if (id <= XLB_BACKEND_ID_MAX && !seen[id]) {
			seen[id] = 1;
			n++;
		}
	}
	return n;
}

/*
 * The digest with the members counted beside it: the same digest, and
 * the distinct primaries, NONE not among them, ids the specs lack and
 * ids above all of theirs among them.
 */
TEST(fingerprint_members_counts_the_distinct_primaries)
{
	struct xlb_table a, c;
	uint32_t members;
	uint64_t fp;
	size_t k;

	for (k = 0; k < 2; k++) {
		set_init(&set, 10);
		set.spec[4].weight = 0;		/* draining: no slots */
		set.spec[7].state = XLB_BACKEND_DOWN;
		set.spec[9].id = 4000;
		build(_metadata, &a, algos[k], &set, M);
		members = 0;
		fp = xlb_table_fingerprint_members(&a, set.spec, set.n,
						   &members);
		EXPECT_EQ(xlb_table_fingerprint(&a, set.spec, set.n), fp);
		EXPECT_EQ(8, members);
		EXPECT_EQ(count_primaries(&a), members);

		/* by hand: an empty slot, an id of no spec, one above all */
		copy_table(_metadata, &c, &a);
		c.slots[0].primary = XLB_BACKEND_NONE;
		c.slots[1].primary = 20;
		c.slots[2].primary = XLB_BACKEND_ID_MAX;
		c.slots[3].secondary = XLB_BACKEND_ID_MAX;
		fp = xlb_table_fingerprint_members(&c, set.spec, set.n,
						   &members);
		EXPECT_EQ(xlb_table_fingerprint(&c, set.spec, set.n), fp);
		EXPECT_EQ(count_primaries(&c), members);
		EXPECT_EQ(10, members);
		xlb_table_free(&c);
		xlb_table_free(&a);
	}
}

TEST(diff_counts_exactly_the_changed_primaries)
{
	static const size_t changes[] = { 0, 1, 37, 1000, M };
	struct xlb_table a, c;
	size_t k, j, i;

	for (k = 0; k < 2; k++) {
		set_init(&set, 10);
		build(_metadata, &a, algos[k], &set, M);
		for (j = 0; j < ARRAY_SIZE(changes); j++) {
			copy_table(_metadata, &c, &a);
			/* slots i * 7919 % M are distinct for i < M (M prime) */
			for (i = 0; i < changes[j]; i++) {
				struct xlb_slot *s = &c.slots[i * 7919 % M];

				s->primary = s->primary == 3 ? 4 : 3;
				s->secondary = 9;
			}
			EXPECT_EQ(changes[j], xlb_table_diff(&a, &c));
			EXPECT_EQ(changes[j], xlb_table_diff(&c, &a));
			xlb_table_free(&c);
		}
		EXPECT_EQ(0, xlb_table_diff(&a, &a));
		xlb_table_free(&a);
	}
}

TEST(count_sums_to_m_over_all_ids_and_none)
{
	struct xlb_table t;
	size_t k, i, sum;

	for (k = 0; k < 2; k++) {
		set_init(&set, 10);
		set.spec[6].state = XLB_BACKEND_DOWN;
		build(_metadata, &t, algos[k], &set, M);
		/* some slots emptied by hand */
		for (i = 0; i < 100; i++)
			t.slots[i * 13].primary = XLB_BACKEND_NONE;
		sum = xlb_table_count(&t, XLB_BACKEND_NONE);
		EXPECT_EQ(100, sum);
		for (i = 0; i < 10; i++)
			sum += xlb_table_count(&t, i);
		EXPECT_EQ(M, sum);
		EXPECT_EQ(0, xlb_table_count(&t, 6));
		xlb_table_free(&t);

		set.n = 0;
		build(_metadata, &t, algos[k], &set, 251);
		EXPECT_EQ(251, xlb_table_count(&t, XLB_BACKEND_NONE));
		xlb_table_free(&t);
	}
}

TEST(slot_layout_is_two_u16_ids)
{
	EXPECT_EQ(4, sizeof(struct xlb_slot));
	EXPECT_EQ(0, offsetof(struct xlb_slot, primary));
	EXPECT_EQ(2, offsetof(struct xlb_slot, secondary));
	EXPECT_EQ(0xffff, XLB_BACKEND_NONE);
	EXPECT_EQ(0xfffe, XLB_BACKEND_ID_MAX);
}

/*
 * Builders keep scratch per thread between builds: builds on several
 * threads at once, of sizes that make each thread's scratch grow and be
 * reused, give exactly the tables one thread builds, and say how much
 * scratch they took.
 */
struct thread_job {
	const struct backend_set *s;
	uint64_t fp[2][3];
	size_t scratch[2][3];
	int ret;
};

static const uint32_t thread_sizes[3] = { 4093, 65537, 1021 };

static void *thread_builds(void *arg)
{
	struct thread_job *j = arg;
	struct xlb_err err;
	struct xlb_table t;
	size_t a, k;

	for (a = 0; a < 2; a++)
		for (k = 0; k < 3; k++) {
			struct xlb_table_params p =
				params(algos[a], thread_sizes[k], 20);

			j->ret |= xlb_table_build(&t, &p, j->s->spec, j->s->n,
						  &err);
			if (j->ret)
				return NULL;
			j->fp[a][k] = xlb_table_fingerprint(&t, j->s->spec,
							    j->s->n);
			j->scratch[a][k] = xlb_table_build_scratch();
			xlb_table_free(&t);
		}
	return NULL;
}

TEST(builds_on_several_threads_match_one_thread)
{
	struct thread_job one = { 0 }, many[4];
	pthread_t th[4];
	size_t i, a, k;

	set_init(&set, 100);
	one.s = &set;
	thread_builds(&one);
	ASSERT_EQ(0, one.ret);
	for (i = 0; i < 4; i++) {
		memset(&many[i], 0, sizeof(many[i]));
		many[i].s = &set;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, thread_builds,
					    &many[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		ASSERT_EQ(0, many[i].ret);
		for (a = 0; a < 2; a++)
			for (k = 0; k < 3; k++) {
				EXPECT_EQ(one.fp[a][k], many[i].fp[a][k]);
				EXPECT_EQ(one.scratch[a][k],
					  many[i].scratch[a][k]);
			}
	}
	/* Maglev: a state byte per slot at least; ring: 16 bytes a token */
	for (k = 0; k < 3; k++) {
		EXPECT_GE(one.scratch[0][k], thread_sizes[k]);
		EXPECT_GE(one.scratch[1][k], 16 * 100 * 20);
	}
	EXPECT_GT(one.scratch[0][1], one.scratch[0][0]);
}

TEST_HARNESS_MAIN
