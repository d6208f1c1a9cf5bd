/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data path's clock: kernel ticks (jiffies), what bpf_jiffies64()
 * returns and connection entries keep as last_seen.  Ticks are the cheapest
 * time a packet can read (one load; every helper call costs more than the
 * rest of a connection-table hit, docs/datapath.md), and their resolution
 * (1 to 10 ms) is plenty for idle times and for which way is oldest.
 */
#ifndef XLB_CLOCK_H
#define XLB_CLOCK_H

#include <linux/types.h>

/*
 * Ticks per second of the running kernel (CONFIG_HZ), from the resolution
 * of CLOCK_MONOTONIC_COARSE, which is one tick.  0 or -errno.
 */
int xlb_clock_hz(__u32 *hz);

/* The current tick count as the data path reads it.  0 or -errno. */
int xlb_clock_now(__u64 *ticks);

/* Milliseconds from ticks at hz (for ages shown to people). */
static inline __u64 xlb_ticks_ms(__u64 ticks, __u32 hz)
{
	return hz ? ticks * 1000 / hz : 0;
}

#endif /* XLB_CLOCK_H */
