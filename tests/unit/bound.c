// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded loads outside the data path: a VIP's bound in the grammar
 * (values, save round trip, every bad form refused with its reason and
 * place, the state unchanged) and the capacity rule xlbd marks backends
 * full by (xlb_bound_full) and the budget it gives a mark
 * (xlb_bound_budget), at their edges and against a brute force.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "config.h"
#include "health.h"

#define KEY_LINE	"set key 000102030405060708090a0b0c0d0e0f\n"
#define BVIP		"192.0.2.20:80/tcp"
/* Three lines; a bad line appended to it is line 4. */
#define BASE		KEY_LINE "vip add " BVIP " bound 1.25\n"	\
			"vip add 192.0.2.20:81/tcp stateless\n"

static int parse(const char *text, struct xlb_state *s, struct xlb_err *e)
{
	return xlb_config_parse(text, strlen(text), "t.conf", s, e);
}

static const struct xlb_vip_conf *vip0(const struct xlb_state *s)
{
	return s->n_vips ? &s->vips[0] : NULL;
}

TEST(bound_values_and_save_round_trip)
{
	static const struct {
		const char *v;
		unsigned int pct;
	} ok[] = {
		{ "1", 100 }, { "1.0", 100 }, { "1.25", 125 }, { "1.5", 150 },
		{ "2.05", 205 }, { "100", 10000 }, { "100.00", 10000 },
		{ "off", 0 },
	};
	struct xlb_state s, back;
	struct xlb_err e = { "" };
	char text[256], *t;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text), KEY_LINE "vip add " BVIP " bound %s\n",
			 ok[i].v);
		ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s: %s", ok[i].v, e.msg);
		EXPECT_EQ(ok[i].pct, vip0(&s)->bound_pct) TH_LOG("%s", ok[i].v);
		ASSERT_EQ(0, xlb_config_save(&s, &t));
		EXPECT_EQ(ok[i].pct != 0, strstr(t, " bound ") != NULL)
			TH_LOG("%s", t);
		ASSERT_EQ(0, parse(t, &back, &e)) TH_LOG("%s", e.msg);
		EXPECT_TRUE(xlb_state_equal(&s, &back)) TH_LOG("%s", t);
		free(t);
		xlb_state_free(&back);
		xlb_state_free(&s);
	}
	/* vip set changes it and leaves the rest; off takes it away */
	ASSERT_EQ(0, parse(BASE "vip set " BVIP " bound 2\n", &s, &e))
		TH_LOG("%s", e.msg);
	EXPECT_EQ(200, vip0(&s)->bound_pct);
	xlb_state_free(&s);
	ASSERT_EQ(0, parse(BASE "vip set " BVIP " bound off\n", &s, &e));
	EXPECT_EQ(0, vip0(&s)->bound_pct);
	xlb_state_free(&s);
	/* the default: none */
	ASSERT_EQ(0, parse(KEY_LINE "vip add " BVIP "\n", &s, &e));
	EXPECT_EQ(0, vip0(&s)->bound_pct);
	xlb_state_free(&s);
}

static const struct {
	const char *line;
	const char *msg;	/* part of the error */
	int col;		/* 1-based column of the token at fault */
} bad_lines[] = {
	{ "vip add 192.0.2.21:80/tcp bound 0.99", "bound 0.99 is out of range: off, or 1..100", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 0", "bound 0 is out of range", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 100.01", "bound 100.01 is out of range", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 1000", "bound 1000 is out of range", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 1.255", "bad bound \"1.255\": off, or a factor 1..100 with at most two decimals", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 1.", "bad bound \"1.\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound .5", "bad bound \".5\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound -1", "bad bound \"-1\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 1,25", "bad bound \"1,25\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 1e2", "bad bound \"1e2\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound on", "bad bound \"on\"", 33 },
	{ "vip add 192.0.2.21:80/tcp bound 99999999999", "bad bound", 33 },
	{ "vip add 192.0.2.21:80/tcp bound", "bound needs a value: off, or a factor 1..100", 27 },
	{ "vip add 192.0.2.21:80/tcp bound 1.5 bound 2", "option bound is given twice", 37 },
	{ "vip add 192.0.2.21:80/tcp stateless bound 1.5", "is stateless: a bound needs the connection table", 37 },
	{ "vip set 192.0.2.20:81/tcp bound 1.5", "VIP 192.0.2.20:81/tcp is stateless: a bound needs", 27 },
	/* the bound is not in the line: the VIP is what is at fault */
	{ "vip set " BVIP " stateless", "VIP 192.0.2.20:80/tcp is stateless: a bound needs", 9 },
	{ "backend add " BVIP " 10.1.0.1 bound 2", "unknown option \"bound\" for backend add", 40 },
};

TEST(bound_bad_lines_are_refused_with_reason_and_place)
{
	struct xlb_state s, sentinel;
	struct xlb_err e;
	char text[2048], where[32];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		snprintf(text, sizeof(text), BASE "%s\n", bad_lines[i].line);
		memset(&s, 0xa5, sizeof(s));
		sentinel = s;
		strcpy(e.msg, "");
		ret = parse(text, &s, &e);
		EXPECT_LT(ret, 0) TH_LOG("accepted: %s", bad_lines[i].line);
		if (!ret) {
			xlb_state_free(&s);
			continue;
		}
		EXPECT_NE(NULL, strstr(e.msg, bad_lines[i].msg))
			TH_LOG("%s\n   got: %s\n  want: %s", bad_lines[i].line,
			       e.msg, bad_lines[i].msg);
		snprintf(where, sizeof(where), "t.conf:4:%d: ", bad_lines[i].col);
		EXPECT_EQ(0, strncmp(e.msg, where, strlen(where)))
			TH_LOG("%s: %s, want %s", bad_lines[i].line, e.msg,
			       where);
		EXPECT_EQ(0, memcmp(&s, &sentinel, sizeof(s)));
	}
}

/* A refused command leaves a running state as it was. */
TEST(bound_rejected_commands_change_nothing)
{
	struct xlb_state s, before;
	struct xlb_err e = { "" };
	struct xlb_op op;
	size_t i;
	int empty;

	ASSERT_EQ(0, parse(BASE, &s, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_copy(&before, &s));
	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		if (xlb_op_parse_line(bad_lines[i].line, &op, &empty, &e))
			continue;	/* refused by the grammar */
		EXPECT_NE(0, xlb_state_apply(&s, &op, &e))
			TH_LOG("applied: %s", bad_lines[i].line);
		EXPECT_TRUE(xlb_state_equal(&s, &before))
			TH_LOG("changed by: %s", bad_lines[i].line);
	}
	xlb_state_free(&before);
	xlb_state_free(&s);
}

/*
 * Full: one connection more would exceed ceil(c x (total + 1) x w / W).
 * Four equal backends, c = 1.25, 100 connections: capacity
 * ceil(1.25 x 101 / 4) = 32, so 31 takes one more and 32 is full.
 */
TEST(bound_full_at_the_capacity_edges)
{
	EXPECT_FALSE(xlb_bound_full(31, 100, 1, 4, 125));
	EXPECT_TRUE(xlb_bound_full(32, 100, 1, 4, 125));
	EXPECT_TRUE(xlb_bound_full(90, 100, 1, 4, 125));
	/* nothing yet: everyone may take the first */
	EXPECT_FALSE(xlb_bound_full(0, 0, 1, 4, 125));
	/* c = 1, 8 on 4 equal: ceil(9 / 4) = 3 */
	EXPECT_FALSE(xlb_bound_full(2, 8, 1, 4, 100));
	EXPECT_TRUE(xlb_bound_full(3, 8, 1, 4, 100));
	/* weight 3 of 4: ceil(1.25 x 101 x 3 / 4) = 95 */
	EXPECT_FALSE(xlb_bound_full(94, 100, 3, 4, 125));
	EXPECT_TRUE(xlb_bound_full(95, 100, 3, 4, 125));
	/* no bound, weight 0, no weight at all: never */
	EXPECT_FALSE(xlb_bound_full(1000, 1000, 1, 4, 0));
	EXPECT_FALSE(xlb_bound_full(1000, 1000, 0, 4, 125));
	EXPECT_FALSE(xlb_bound_full(1000, 1000, 1, 0, 125));
	/* huge counts do not overflow */
	EXPECT_FALSE(xlb_bound_full(1ull << 40, 1ull << 42, 1, 4, 10000));
	EXPECT_TRUE(xlb_bound_full(~0ull >> 1, ~0ull >> 1, 1, 4, 125));
}

/*
 * Against the capacity counted out slowly: c x (total + 1) x w / W; and
 * the budget against flows counted out one at a time until the member
 * fits.
 */
TEST(bound_full_and_budget_agree_with_a_brute_force)
{
	unsigned int seed = 11, i;

	for (i = 0; i < 20000; i++) {
		uint64_t wsum = 1 + rand_r(&seed) % 50;
		uint32_t w = 1 + rand_r(&seed) % (unsigned int)wsum;
		uint64_t total = rand_r(&seed) % 500;
		uint64_t conns = rand_r(&seed) % (total + 1);
		unsigned int pct = 100 + rand_r(&seed) % 400;
		uint64_t cap = 0, k = 0;

		/* the least cap with cap x 100 x wsum >= pct x (total+1) x w */
		while (cap * 100 * wsum < (uint64_t)pct * (total + 1) * w)
			cap++;
		ASSERT_EQ(conns + 1 > cap,
			  xlb_bound_full(conns, total, w, wsum, pct))
			TH_LOG("conns %llu total %llu w %u/%llu c %u",
			       (unsigned long long)conns,
			       (unsigned long long)total, w,
			       (unsigned long long)wsum, pct);
		if (conns + 1 > cap)
			for (k = 1; xlb_bound_full(conns, total + k, w, wsum,
						   pct); k++)
				;
		ASSERT_EQ(k > 0x7fff ? 0x7fff : k,
			  xlb_bound_budget(conns, total, w, wsum, pct, 0x7fff))
			TH_LOG("budget: conns %llu total %llu w %u/%llu c %u",
			       (unsigned long long)conns,
			       (unsigned long long)total, w,
			       (unsigned long long)wsum, pct);
	}
}

/*
 * The budget: the fewest new flows elsewhere after which a full member is
 * full no more.  Four equal backends, c = 1.25: 32 of 100 is full
 * (capacity 32); at 102 the capacity is ceil(1.25 x 103 / 4) = 33, so 2.
 */
TEST(bound_budget_at_its_edges)
{
	EXPECT_EQ(0, xlb_bound_budget(31, 100, 1, 4, 125, 0x7fff));
	EXPECT_EQ(2, xlb_bound_budget(32, 100, 1, 4, 125, 0x7fff));
	EXPECT_FALSE(xlb_bound_full(32, 102, 1, 4, 125));
	EXPECT_TRUE(xlb_bound_full(32, 101, 1, 4, 125));
	/* one on four, c = 1: 1 of 1 is full until 3 more came elsewhere */
	EXPECT_EQ(3, xlb_bound_budget(1, 1, 1, 4, 100, 0x7fff));
	/* capped: a member far over its bound */
	EXPECT_EQ(0x7fff, xlb_bound_budget(1000000, 1000000, 1, 4, 125,
					    0x7fff));
	EXPECT_EQ(10, xlb_bound_budget(1000000, 1000000, 1, 4, 125, 10));
	/* never full, never a budget */
	EXPECT_EQ(0, xlb_bound_budget(1000, 1000, 0, 4, 125, 0x7fff));
	EXPECT_EQ(0, xlb_bound_budget(1000, 1000, 1, 4, 0, 0x7fff));
}

TEST_HARNESS_MAIN
