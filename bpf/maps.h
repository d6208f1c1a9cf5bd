/* SPDX-License-Identifier: GPL-2.0 */
/* The data path's maps (layouts in structs.h).  BPF side only. */
#ifndef XLB_MAPS_H
#define XLB_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_config);
} xlb_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_VIP_ENTRIES);
	__type(key, struct xlb_vip_key);
	__type(value, struct xlb_vip);
} xlb_vips SEC(".maps");

/* Template of the VIP index (structs.h); real ones are made by libxlb. */
struct xlb_vip_index_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_VIP_INDEX_MAP_SLOTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xlb_vip_slot));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct xlb_vip_index_map);
} xlb_vip_index SEC(".maps");

/*
 * The per-VIP tables, one outer map per table size M (structs.h says
 * why): xlb_tab_<M>[vip id] is the VIP's table when its index entry says
 * that size.  The inner map is a template; real ones are made by libxlb:
 * an ARRAY of one value, the whole table, XLB_TABLE_BYTES(M) bytes (the
 * header word, then the slots, 4 bytes each: an ARRAY would store a
 * 4-byte value in 8).  Mmapable, so libxlb fills and rewrites a table
 * with plain stores.
 */
#define XLB_TABLE_MAP(m)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);		\
		__uint(max_entries, XLB_MAX_VIPS);			\
		__type(key, __u32);					\
		__array(values, struct {				\
			__uint(type, BPF_MAP_TYPE_ARRAY);		\
			__uint(map_flags, BPF_F_MMAPABLE);		\
			__uint(max_entries, 1);				\
			__uint(key_size, sizeof(__u32));		\
			__uint(value_size, XLB_TABLE_BYTES(m));		\
		});							\
	} xlb_tab_##m SEC(".maps")

#define XLB_TABLE_MAP_ITEM(c, m)	XLB_TABLE_MAP(m);
XLB_TABLE_SIZES_X(XLB_TABLE_MAP_ITEM)

/* libxlb maps it: a restarting xlbd reads every id without a system call */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xlb_backend);
} xlb_backends SEC(".maps");

/* Each (VIP, backend)'s state (structs.h, "Members"); libxlb maps it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_MEMBER_BUCKETS);
	__type(key, __u32);
	__type(value, struct xlb_member_bucket);
} xlb_members SEC(".maps");

/*
 * The connection table: buckets of XLB_CT_WAYS entries (structs.h says
 * how and why).  Mmapable, so libxlb counts, flushes and fills it without
 * a syscall per entry.  Capacity: xlbd --conntrack-entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_CONNTRACK_DEFAULT);
	__type(key, __u32);
	__type(value, struct xlb_ct_entry);
} xlb_conntrack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct xlb_vip_stats);
} xlb_vip_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_counter);
} xlb_backend_stats SEC(".maps");

/* Active connections per backend (structs.h), one CPU's share each. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, __s64);
} xlb_be_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_EV_IN_MAP);
	__type(key, __u32);
	__type(value, __u64);
} xlb_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_ACTIONS * XLB_LINK_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} xlb_actions SEC(".maps");

/*
 * Incremented by libxlb after each change (structs.h, "Flow cache").  A
 * global, so that reading it is one load, not a map lookup (pkt
 * benchmark: 4-6% of a non-VIP packet); libbpf makes the object's .bss
 * an mmapable ARRAY map of one value, named XLB_MAP_GEN.
 */
__u32 xlb_gen;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_FC_SLOTS);
	__type(key, __u32);
	__type(value, struct xlb_fc_entry);
} xlb_flow_cache SEC(".maps");

/*
 * The new-flow guard's bucket and rate, per CPU (structs.h), looked up
 * with a key in read-only data: a key on the stack would take 8 bytes of
 * a frame that has none to spare (xlb_main's comment).
 */
volatile const __u32 xlb_key0 = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_ct_guard);
} xlb_ct_guard SEC(".maps");

/* The rate limit of too-big answers (structs.h, "Too big"). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_icmp_bucket);
} xlb_icmp_bucket SEC(".maps");

/* Never read by the program: its max_entries is XLB_DP_ABI (structs.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_DP_ABI);
	__type(key, __u32);
	__type(value, __u8);
} xlb_abi SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xlb_tx_ports SEC(".maps");

#endif /* XLB_MAPS_H */
