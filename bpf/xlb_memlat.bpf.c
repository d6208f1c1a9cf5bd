// SPDX-License-Identifier: GPL-2.0
/*
 * What a line of memory costs a program in a test run (xlb-bench pkt,
 * memlat.run_*): each call reads one 64-byte line of a 64 MiB array,
 * the next of a cycle that xlb-bench sets through the global data, and
 * sends the packet back (XDP_TX) as the baseline program does.
 *
 *   touch  0: no line read (what the call costs without one)
 *   mask   lines in the cycle - 1 (a power of two less one)
 *   stride lines between two lines of the cycle: 1 packs them, 64 puts
 *          each in a 4 KiB page of its own
 *
 * Call i reads line ((i * an odd number) & mask) * stride: every line of
 * the cycle once per mask + 1 calls, neighbours far apart.  It adds the
 * line's first word to sum, so that xlb-bench can check the cycle (it
 * writes each line's index there, through the map's mapping).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define XLB_MEMLAT_LINES	(1u << 20)	/* 64 MiB */

struct xlb_memlat_line {
	__u64 w[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_MEMLAT_LINES);
	__type(key, __u32);
	__type(value, struct xlb_memlat_line);
} xlb_memlat_lines SEC(".maps");

__u32 touch, mask, stride, seq;
__u64 sum;

SEC("xdp")
int xlb_memlat(struct xdp_md *ctx)
{
	__u32 k = ((seq++ * 0x9e3779b1u) & mask) * stride;
	struct xlb_memlat_line *l;

	if (!touch)
		return XDP_TX;
	l = bpf_map_lookup_elem(&xlb_memlat_lines, &k);
	if (l)
		sum += l->w[0];
	return XDP_TX;
}
