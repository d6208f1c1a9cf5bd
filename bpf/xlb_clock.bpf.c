// SPDX-License-Identifier: GPL-2.0
/*
 * The data path's clock as userspace reads it.  Connection entries carry
 * bpf_jiffies64() (the verifier inlines it as one load on 64-bit JITs, where
 * any other clock is a helper call per packet); libxlb runs this program
 * once per reading (BPF_PROG_TEST_RUN) to learn "now" on that clock: the
 * first 8 bytes of the frame it returns.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xlb_clock(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 *out = data;

	if ((void *)(out + 1) > end)
		return XDP_ABORTED;
	*out = bpf_jiffies64();
	return XDP_PASS;
}
