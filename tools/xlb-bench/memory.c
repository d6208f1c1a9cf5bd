// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench memory: bytes per connection entry, table, VIP and backend, as
 * the kernel reports the maps' memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"


/* The kernel's figure for a map's memory, as bpftool shows it (fdinfo). */
static long long map_memlock(int fd)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct map_mem {
	long long memlock;
	struct bpf_map_info info;
};

static int map_mem(int fd, struct map_mem *m)
{
	__u32 len = sizeof(m->info);

	memset(&m->info, 0, sizeof(m->info));
	m->memlock = map_memlock(fd);
	if (m->memlock < 0 || bpf_obj_get_info_by_fd(fd, &m->info, &len))
		return -1;
	return 0;
}

static double per_entry(const struct map_mem *m)
{
	return (double)m->memlock / m->info.max_entries;
}

static long map_count(int fd, __u32 key_size)
{
	char k[64], next[64];
	long n = 0;
	void *prev = NULL;

	if (key_size > sizeof(k))
		return -1;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(k, next, key_size);
		prev = k;
		n++;
	}
	return n;
}

int bench_memory(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct map_mem ct, vips, outer, vstats, be, bstats, tab;
	int fds[14], ncpu = libbpf_num_possible_cpus(), ret = 1;
	__u32 cap = 0;
	double vip_fixed, vip_payload, table_default = 0;
	long long total = 0;
	long before, after;
	size_t i;
	struct fig f;

	if (pkt_setup(&b, o, 0, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		goto out;
	}
	if (map_mem(b.dp.conntrack, &ct) || map_mem(b.dp.vips, &vips) ||
	    map_mem(b.dp.tables[xlb_table_class(65537) - 1], &outer) ||
	    map_mem(b.dp.vip_stats, &vstats) ||
	    map_mem(b.dp.backends, &be) ||
	    map_mem(b.dp.backend_stats, &bstats)) {
		fprintf(stderr, "xlb-bench: cannot read the maps' memory (fdinfo memlock)\n");
		goto out;
	}
	if (!o->json)
		printf("memory as the kernel reports it (memlock in /proc/PID/fdinfo, as bpftool map show), %d possible CPUs\n",
		       ncpu);

#define MEM_FIG(nm, val, base, what)					\
	do {								\
		memset(&f, 0, sizeof(f));				\
		f.bench = "memory";					\
		f.unit = "B";						\
		snprintf(f.name, sizeof(f.name), "%s", nm);		\
		fig_exact(&f, val);					\
		f.baseline = base;					\
		f.baseline_what = what;					\
	} while (0)

	MEM_FIG("memory.conntrack_entry", per_entry(&ct),
		ct.info.value_size, "the entry, flow included");
	PARAM(&f, "\"map\":\"xlb_conntrack\",\"type\":\"array, buckets of 4 ways\",\"max_entries\":%u,\"memlock\":%lld",
	      ct.info.max_entries, ct.memlock);
	fig_emit(o, &f);
	if (xlb_dp_ct_capacity(&b.dp, &cap) || !cap) {
		fprintf(stderr, "xlb-bench: cannot read the connection table's capacity\n");
		goto out;
	}
	MEM_FIG("memory.conntrack_per_flow", (double)ct.memlock / cap,
		sizeof(struct xlb_flow), "the flow's key alone");
	PARAM(&f, "\"map\":\"xlb_conntrack\",\"flows\":%u,\"memlock\":%lld,\"note\":\"the whole map over the flows it holds when full\"",
	      cap, ct.memlock);
	fig_emit(o, &f);
	MEM_FIG("memory.conntrack_map", (double)ct.memlock, 0, NULL);
	PARAM(&f, "\"map\":\"xlb_conntrack\",\"max_entries\":%u,\"note\":\"all of it from load on: the entries are preallocated\"",
	      ct.info.max_entries);
	fig_emit(o, &f);

	/* a table of each M, published to VIP_IPIP, its inner map measured */
	for (i = 0; i < ARRAY_SIZE(table_ms); i++) {
		struct xlb_table t;
		__u32 id;
		int fd;

		if (vip_table(&b, VIP_IPIP, 4, BACKENDS, table_ms[i], &t, &err) ||
		    xlb_dp_table_publish(&b.dp, VIP_IPIP, &t, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			goto out;
		}
		xlb_table_free(&t);
		if (bpf_map_lookup_elem(b.dp.tables[xlb_table_class(table_ms[i]) - 1],
					&(__u32){ VIP_IPIP }, &id))
			goto out;
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			goto out;
		if (map_mem(fd, &tab)) {
			close(fd);
			goto out;
		}
		close(fd);
		if (table_ms[i] == 65537)
			table_default = (double)tab.memlock;
		MEM_FIG("", (double)tab.memlock, 4.0 * table_ms[i],
			"4-byte slots");
		snprintf(f.name, sizeof(f.name), "memory.table.M%u",
			 table_ms[i]);
		PARAM(&f, "\"M\":%u,\"map_entries\":%u,\"value_size\":%u,\"bytes_per_slot\":%.3f",
		      table_ms[i], tab.info.max_entries, tab.info.value_size,
		      (double)tab.memlock / table_ms[i]);
		fig_emit(o, &f);
	}

	/* a VIP at a new address: its xlb_vips entries counted, not assumed */
	before = map_count(b.dp.vips, vips.info.key_size);
	{
		struct xlb_vip_key k = { .port = htons(80), .proto = IPPROTO_TCP,
					 .family = 4 };
		struct xlb_vip v = { .id = 1 };

		extra_vip_addr(1, k.addr);
		if (xlb_dp_vip_set(&b.dp, &k, &v, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			goto out;
		}
	}
	after = map_count(b.dp.vips, vips.info.key_size);
	vip_fixed = (after - before) * per_entry(&vips) + per_entry(&vstats) +
		    per_entry(&outer);
	vip_payload = (after - before) * (double)(vips.info.key_size +
						  vips.info.value_size) +
		      (double)vstats.info.value_size * ncpu + 4;
	MEM_FIG("memory.vip_fixed", vip_fixed, vip_payload,
		"keys + values (stats per CPU)");
	PARAM(&f, "\"vips_entries_per_vip\":%ld,\"vips_entry\":%.1f,\"vip_stats_entry\":%.1f,\"tables_outer_entry\":%.1f,\"note\":\"a VIP at an address of its own; without its table\"",
	      after - before, per_entry(&vips), per_entry(&vstats),
	      per_entry(&outer));
	fig_emit(o, &f);
	MEM_FIG("memory.vip_total.M65537", vip_fixed + table_default,
		vip_payload + 4.0 * 65537, "keys + values + 4-byte slots");
	PARAM(&f, "\"M\":65537,\"note\":\"the default table size\"");
	f.goal = 300 * 1024;	/* issue 17: 300 KiB */
	f.goal_what = "issue 17";
	fig_emit(o, &f);

	MEM_FIG("memory.backend", per_entry(&be) + per_entry(&bstats),
		be.info.value_size + (double)bstats.info.value_size * ncpu,
		"values (stats per CPU)");
	PARAM(&f, "\"backends_entry\":%.1f,\"backend_stats_entry\":%.1f,\"max_backends\":%u,\"note\":\"arrays: every id's entry exists from load on\"",
	      per_entry(&be), per_entry(&bstats), be.info.max_entries);
	fig_emit(o, &f);

	fds[0] = b.dp.config;
	fds[1] = b.dp.vips;
	fds[2] = -1;	/* the outer table maps: below */
	fds[3] = b.dp.backends;
	fds[4] = b.dp.conntrack;
	fds[5] = b.dp.vip_stats;
	fds[6] = b.dp.backend_stats;
	fds[7] = b.dp.events;
	fds[8] = b.dp.actions;
	fds[9] = b.dp.tx_ports;
	fds[10] = b.dp.vip_index;
	{	/* the VIP index published in it */
		__u32 zero = 0, id;

		fds[11] = bpf_map_lookup_elem(b.dp.vip_index, &zero, &id) ?
				  -1 : bpf_map_get_fd_by_id(id);
	}
	fds[12] = b.dp.abi;
	fds[13] = b.dp.members;
	for (i = 0; i < 14; i++) {
		long long m = fds[i] >= 0 ? map_memlock(fds[i]) : 0;

		total += m > 0 ? m : 0;
	}
	for (i = 0; i < XLB_TABLE_CLASSES; i++) {
		long long m = map_memlock(b.dp.tables[i]);

		total += m > 0 ? m : 0;
	}
	if (fds[11] >= 0)
		close(fds[11]);
	MEM_FIG("memory.datapath_maps", (double)total, 0, NULL);
	PARAM(&f, "\"maps\":%d,\"note\":\"every map of the data path and the VIP index, without the per-VIP tables\"",
	      12 + XLB_TABLE_CLASSES);
	fig_emit(o, &f);
#undef MEM_FIG
	ret = 0;
out:
	pkt_teardown(&b);
	return ret;
}
