// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: numbers as people write them (number.h).
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "number.h"

int xlb_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	uint64_t x = 0;
	bool big = false;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > 9)
			return -EINVAL;
		if (x > (UINT64_MAX - d) / 10)
			big = true;
		else
			x = x * 10 + d;
	}
	if (big || x < lo || x > hi)
		return -ERANGE;
	*v = x;
	return 0;
}

int xlb_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *v)
{
	uint64_t x;
	int ret = xlb_parse_u64(s, lo, hi, &x);

	if (!ret)
		*v = (uint32_t)x;
	return ret;
}

int xlb_parse_real(const char *s, double lo, double hi, double *v)
{
	char *end;
	double x;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtod(s, &end);
	if (*end || end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (!isfinite(x))
		return -EINVAL;
	if (x < lo || x > hi)
		return -ERANGE;
	*v = x;
	return 0;
}
