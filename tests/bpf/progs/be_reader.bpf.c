// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only XDP program: a reader of one backend entry that stays in
 * flight for a while, as a data path run that a user-space write lands
 * in the middle of.  It copies entry `id` of xlb_backends (the data
 * path's own map, shared by tests/bpf/xlb_order.c before load) into
 * `first`, spins `spins` empty rounds of bpf_loop, and copies it again
 * into `second`.  XDP_PASS; XDP_ABORTED without the entry.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_backend);
} xlb_backends SEC(".maps");

__u32 id;
__u32 spins;
struct xlb_backend first, second;

static long spin(__u32 i, void *ctx)
{
	return 0;
}

SEC("xdp")
int xlb_test_be_reader(struct xdp_md *ctx)
{
	struct xlb_backend *b;
	__u32 key = id;

	b = bpf_map_lookup_elem(&xlb_backends, &key);
	if (!b)
		return XDP_ABORTED;
	__builtin_memcpy(&first, b, sizeof(first));
	bpf_loop(spins, spin, NULL, 0);
	__builtin_memcpy(&second, b, sizeof(second));
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
