/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The monotonic clock (CLOCK_MONOTONIC) that userspace measures intervals,
 * timeouts and deadlines with: the daemon, the CLI, the tools and the
 * tests read it through these, in the unit they need.  The data path's
 * own clock, kernel ticks, is clock.h.
 */
#ifndef XLB_MONO_H
#define XLB_MONO_H

#include <stdint.h>
#include <time.h>

static inline uint64_t xlb_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t xlb_mono_ms(void)
{
	return xlb_mono_ns() / 1000000;
}

static inline double xlb_mono_us(void)
{
	return (double)xlb_mono_ns() / 1e3;
}

static inline double xlb_mono_s(void)
{
	return (double)xlb_mono_ns() / 1e9;
}

#endif /* XLB_MONO_H */
