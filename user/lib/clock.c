// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: the data path's clock seen from userspace (clock.h).
 *
 * "Now" in ticks cannot be derived from a userspace clock (jiffies start at
 * an offset the kernel picks and only roughly follow CLOCK_MONOTONIC), so
 * it is read where the data path reads it: a one-instruction program
 * (bpf/xlb_clock.bpf.c), loaded once per process and run per reading.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "xlb_clock.skel.h"

int xlb_clock_hz(__u32 *hz)
{
	struct timespec res;
	__u64 ns;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res))
		return -errno;
	ns = (__u64)res.tv_sec * 1000000000ULL + (__u64)res.tv_nsec;
	/* one tick is (10^9 + HZ / 2) / HZ ns: rounding gives HZ back */
	if (!ns || ns > 1000000000ULL)
		return -EINVAL;
	*hz = (__u32)((1000000000ULL + ns / 2) / ns);
	return 0;
}

static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xlb_clock_bpf *clock_skel;

int xlb_clock_now(__u64 *ticks)
{
	/* XDP test runs want at least an Ethernet header's worth */
	__u8 in[64] = { 0 }, out[64];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
		    .data_size_in = sizeof(in), .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);
	int fd, ret = 0;

	pthread_mutex_lock(&clock_lock);
	if (!clock_skel) {
		clock_skel = xlb_clock_bpf__open_and_load();
		if (!clock_skel)
			ret = errno ? -errno : -EINVAL;
	}
	fd = clock_skel ? bpf_program__fd(clock_skel->progs.xlb_clock) : -1;
	pthread_mutex_unlock(&clock_lock);
	if (ret)
		return ret;
	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	if (o.retval != XDP_PASS || o.data_size_out < sizeof(*ticks))
		return -EIO;
	memcpy(ticks, out, sizeof(*ticks));
	return 0;
}
