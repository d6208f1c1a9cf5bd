// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmarks' baseline: the least an XDP program can do and still
 * send a packet (XDP_TX, untouched).  xlb-bench measures the data path's
 * cost per packet as a ratio to this, in the same harness and run.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xlb_reflect(struct xdp_md *ctx)
{
	return XDP_TX;
}
