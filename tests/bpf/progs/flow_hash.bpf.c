// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only XDP program: runs the data path's flow hash (bpf/flow_hash.h
 * compiled by clang -target bpf) on inputs taken from the packet, so that
 * tests/bpf/flow_hash.c can compare it with the gcc build in libxlb.
 *
 * Packet layout (all host byte order except the flow, which is as the hash
 * sees it):
 *   0  struct xlb_hash_key  16 bytes   in
 *   16 struct xlb_flow      40 bytes   in
 *   56 __u32 mode                      in
 *   60 __u32 (unused)
 *   64 __u32 xlb_flow_hash_mode(key, flow, mode)       out
 *   68 __u32 (unused)
 *   72 __u64 xlb_flow_hash64(key, flow) (unmasked)      out
 *   80 end
 * A packet shorter than 80 bytes returns XDP_ABORTED, otherwise XDP_TX.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "flow_hash.h"

#define FH_OFF_KEY	0
#define FH_OFF_FLOW	16
#define FH_OFF_MODE	56
#define FH_OFF_HASH32	64
#define FH_OFF_HASH64	72
#define FH_LEN		80

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xlb_test_flow_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xlb_hash_key key;
	struct xlb_flow flow;
	__u32 mode;

	if (data + FH_LEN > data_end)
		return XDP_ABORTED;

	__builtin_memcpy(&key, data + FH_OFF_KEY, sizeof(key));
	__builtin_memcpy(&flow, data + FH_OFF_FLOW, sizeof(flow));
	__builtin_memcpy(&mode, data + FH_OFF_MODE, sizeof(mode));

	*(__u32 *)(data + FH_OFF_HASH32) = xlb_flow_hash_mode(&key, &flow, mode);
	*(__u64 *)(data + FH_OFF_HASH64) = xlb_flow_hash64(&key, &flow);
	return XDP_TX;
}
