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

/*
 * Template of the per-VIP tables; real ones are made by userspace.  The
 * value is a struct xlb_slot read as one __u32 (primary in the low half):
 * clang would emit the struct only as a forward declaration here.
 * Mmapable, so userspace fills a new table with one copy.
 */
struct xlb_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__array(values, struct xlb_table_map);
} xlb_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_backend);
} xlb_backends SEC(".maps");

/*
 * One entry per flow, shared by all CPUs (a flow's packets may arrive on
 * any CPU, and xlbctl explain reads it), with per-CPU LRU lists so the
 * eviction bookkeeping never takes a lock shared by all CPUs.  The common
 * list makes a new flow 20-25% cheaper on one CPU (pkt.new_flow, runs
 * alternated), but every CPU refills from it under one lock, and a full
 * table under a SYN flood on a many-core LB would queue there.
 * Capacity: xlbd --conntrack-entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, XLB_CONNTRACK_DEFAULT);
	__type(key, struct xlb_flow);
	__type(value, struct xlb_ct);
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xlb_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_ACTIONS);
	__type(key, __u32);
	__type(value, __u64);
} xlb_actions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xlb_tx_ports SEC(".maps");

#endif /* XLB_MAPS_H */
