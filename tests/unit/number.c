// SPDX-License-Identifier: GPL-2.0
/*
 * Numbers as people write them (user/lib/number.c), the one parser behind
 * the config grammar, the daemons' and the CLI's options and the tools'
 * arguments: what is accepted, each bad form with the error it gets, and
 * that a rejected input leaves the result untouched.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "kselftest_harness.h"
#include "number.h"

#define UNTOUCHED	0x5a5a5a5a5a5a5a5aULL

TEST(u64_accepts_digits_in_range)
{
	uint64_t v;

	ASSERT_EQ(0, xlb_parse_u64("0", 0, 10, &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, xlb_parse_u64("007", 0, 10, &v));
	EXPECT_EQ(7, v);
	ASSERT_EQ(0, xlb_parse_u64("10", 0, 10, &v));
	EXPECT_EQ(10, v);
	ASSERT_EQ(0, xlb_parse_u64("18446744073709551615", 0, UINT64_MAX, &v));
	EXPECT_EQ(UINT64_MAX, v);
}

TEST(u64_rejects_what_is_not_a_plain_decimal)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "+1", "-1", "1x", "0x10", "1.0", "1e3", "١",
	};
	uint64_t v = UNTOUCHED;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, xlb_parse_u64(bad[i], 0, UINT64_MAX, &v))
			TH_LOG("\"%s\"", bad[i]);
		EXPECT_EQ(UNTOUCHED, v);
	}
}

TEST(u64_out_of_range_is_erange)
{
	uint64_t v = UNTOUCHED;

	EXPECT_EQ(-ERANGE, xlb_parse_u64("0", 1, 10, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_u64("11", 1, 10, &v));
	/* past 2^64 - 1: no wrap-around into range */
	EXPECT_EQ(-ERANGE, xlb_parse_u64("18446744073709551616", 0,
					 UINT64_MAX, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_u64("18446744073709551621", 0, 10, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_u64("99999999999999999999999", 0,
					 UINT64_MAX, &v));
	EXPECT_EQ(UNTOUCHED, v);
}

TEST(u32_bounds)
{
	uint32_t v = 0x5a5a5a5a;

	ASSERT_EQ(0, xlb_parse_u32("4294967295", 0, UINT32_MAX, &v));
	EXPECT_EQ(UINT32_MAX, v);
	v = 0x5a5a5a5a;
	EXPECT_EQ(-ERANGE, xlb_parse_u32("4294967296", 0, UINT32_MAX, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_u32("65536", 0, 65535, &v));
	EXPECT_EQ(-EINVAL, xlb_parse_u32("", 0, 65535, &v));
	EXPECT_EQ(0x5a5a5a5a, v);
}

TEST(real_accepts_decimal_forms)
{
	double v;

	ASSERT_EQ(0, xlb_parse_real("0.5", 0, 1, &v));
	EXPECT_EQ(0.5, v);
	ASSERT_EQ(0, xlb_parse_real("1e-1", 0, 1, &v));
	EXPECT_EQ(0.1, v);
	ASSERT_EQ(0, xlb_parse_real("-2", -3, 0, &v));
	EXPECT_EQ(-2, v);
	ASSERT_EQ(0, xlb_parse_real("3600", 0.1, 3600, &v));
	EXPECT_EQ(3600, v);
}

TEST(real_rejects_what_is_not_a_finite_number)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "1,5", "nan", "NaN", "inf", "-infinity", "x",
		"1s",
	};
	double v = 42;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, xlb_parse_real(bad[i], -1e300, 1e300, &v))
			TH_LOG("\"%s\"", bad[i]);
		EXPECT_EQ(42, v);
	}
}

TEST(real_out_of_range_is_erange)
{
	double v = 42;

	EXPECT_EQ(-ERANGE, xlb_parse_real("0.09", 0.1, 3600, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_real("3600.5", 0.1, 3600, &v));
	EXPECT_EQ(-ERANGE, xlb_parse_real("1e999", 0, INFINITY, &v));
	EXPECT_EQ(42, v);
}

TEST_HARNESS_MAIN
