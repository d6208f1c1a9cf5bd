// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb's map access (user/lib/datapath.c) against real kernel maps.
 *
 * The fixture creates the maps of bpf/maps.h by hand (same types, key and
 * value sizes, flags and sizes), so these tests pin the library without the
 * data path program; two tests at the end open the real object.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mount.h>

#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kselftest_harness.h"

#include "clock.h"
#include "datapath.h"
#include "lookup_table.h"
#include "rand.h"
#include "structs.h"
#include "flow_hash.skel.h"
#include "xlb.skel.h"

/*
 * Cases here load the whole data path; on 6.1 under the vm tier's
 * software emulation a load alone takes 10 s, and three times that on a
 * loaded machine: the harness's 30 s would end them.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	120

#define TEST_KEY ((struct xlb_hash_key){ 0x786c6264617461ULL, 0x70617468ULL })

static int map_new(enum bpf_map_type type, const char *name, __u32 key,
		   __u32 value, __u32 max, __u32 flags, int inner_fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags,
		    .inner_map_fd = inner_fd > 0 ? inner_fd : 0);

	return bpf_map_create(type, name, key, value, max, &o);
}

/* The outer table maps of bpf/maps.h, one per size, templates made with tmpl_flags. */
static int tables_new(struct xlb_dp *dp, __u32 tmpl_flags)
{
	char name[16];
	int tmpl, c;

	for (c = 1; c <= XLB_TABLE_CLASSES; c++) {
		__u32 m = xlb_table_sizes[c - 1];

		tmpl = map_new(BPF_MAP_TYPE_ARRAY, "xlb_table_map", 4,
			       XLB_TABLE_BYTES(m), 1, tmpl_flags, 0);
		if (tmpl < 0)
			return tmpl;
		snprintf(name, sizeof(name), "%s%u", XLB_MAP_TABLES, m);
		dp->tables[c - 1] = map_new(BPF_MAP_TYPE_ARRAY_OF_MAPS, name,
					    4, 4, XLB_MAX_VIPS, 0, tmpl);
		close(tmpl);
		if (dp->tables[c - 1] < 0)
			return dp->tables[c - 1];
	}
	return 0;
}

/* The outer VIP index map, its template as in bpf/maps.h. */
static int vip_index_new(void)
{
	int tmpl, fd;

	tmpl = map_new(BPF_MAP_TYPE_ARRAY, "xlb_vip_idx", 4,
		       sizeof(struct xlb_vip_slot), XLB_VIP_INDEX_MAP_SLOTS,
		       BPF_F_MMAPABLE, 0);
	if (tmpl < 0)
		return tmpl;
	fd = map_new(BPF_MAP_TYPE_ARRAY_OF_MAPS, "xlb_vip_index", 4, 4, 1, 0,
		     tmpl);
	close(tmpl);
	return fd;
}

/* The maps of bpf/maps.h. */
static int dp_create(struct xlb_dp *dp)
{
	memset(dp, 0, sizeof(*dp));
	dp->config = map_new(BPF_MAP_TYPE_ARRAY, "xlb_config", 4,
			     sizeof(struct xlb_config), 1, 0, 0);
	dp->vips = map_new(BPF_MAP_TYPE_HASH, "xlb_vips",
			   sizeof(struct xlb_vip_key), sizeof(struct xlb_vip),
			   XLB_MAX_VIPS, 0, 0);
	dp->vip_index = vip_index_new();
	if (tables_new(dp, BPF_F_MMAPABLE))
		return -1;
	dp->backends = map_new(BPF_MAP_TYPE_ARRAY, "xlb_backends", 4,
			       sizeof(struct xlb_backend), XLB_MAX_BACKENDS,
			       BPF_F_MMAPABLE, 0);
	dp->conntrack = map_new(BPF_MAP_TYPE_ARRAY, "xlb_conntrack", 4,
				sizeof(struct xlb_ct_entry),
				XLB_CONNTRACK_DEFAULT, BPF_F_MMAPABLE, 0);
	dp->vip_stats = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_vip_stats", 4,
				sizeof(struct xlb_vip_stats), XLB_MAX_VIPS,
				0, 0);
	dp->backend_stats = map_new(BPF_MAP_TYPE_PERCPU_ARRAY,
				    "xlb_backend_st", 4,
				    sizeof(struct xlb_counter),
				    XLB_MAX_BACKENDS, 0, 0);
	dp->events = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_events", 4,
			     sizeof(__u64), XLB_EV_IN_MAP, 0, 0);
	dp->actions = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_actions", 4,
			      sizeof(__u64), XLB_ACTIONS * XLB_LINK_SLOTS, 0, 0);
	dp->tx_ports = map_new(BPF_MAP_TYPE_DEVMAP_HASH, "xlb_tx_ports", 4, 4,
			       64, 0, 0);
	dp->abi = map_new(BPF_MAP_TYPE_ARRAY, "xlb_abi", 4, 1, XLB_DP_ABI, 0, 0);
	dp->gen = map_new(BPF_MAP_TYPE_ARRAY, "xlb_bpf.bss", 4, 4, 1,
			  BPF_F_MMAPABLE, 0);
	dp->flow_cache = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_flow_cache", 4,
				 sizeof(struct xlb_fc_entry), XLB_FC_SLOTS, 0,
				 0);
	dp->ct_guard = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_ct_guard", 4,
			       sizeof(struct xlb_ct_guard), 1, 0, 0);
	dp->members = map_new(BPF_MAP_TYPE_ARRAY, "xlb_members", 4,
			      sizeof(struct xlb_member_bucket),
			      XLB_MEMBER_BUCKETS, BPF_F_MMAPABLE, 0);
	dp->quic_sids = map_new(BPF_MAP_TYPE_HASH, "xlb_quic_sids",
				sizeof(struct xlb_quic_sid_key), 4,
				XLB_QUIC_SIDS, 0, 0);
	dp->quic_stats = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_quic_stats", 4,
				 sizeof(struct xlb_quic_stats), XLB_MAX_VIPS,
				 0, 0);
	dp->be_conns = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, "xlb_be_conns", 4,
			       sizeof(__s64), XLB_MAX_BACKENDS, 0, 0);
	dp->ncpus = libbpf_num_possible_cpus();
	if (dp->config < 0 || dp->vips < 0 || dp->vip_index < 0 ||
	    dp->backends < 0 || dp->conntrack < 0 || dp->vip_stats < 0 ||
	    dp->backend_stats < 0 || dp->events < 0 || dp->actions < 0 ||
	    dp->tx_ports < 0 || dp->abi < 0 || dp->gen < 0 ||
	    dp->flow_cache < 0 || dp->ct_guard < 0 || dp->members < 0 ||
	    dp->quic_sids < 0 || dp->quic_stats < 0 || dp->be_conns < 0 ||
	    dp->ncpus <= 0)
		return -1;
	dp->member_map = mmap(NULL, XLB_MEMBER_BUCKETS *
			      sizeof(struct xlb_member_bucket),
			      PROT_READ | PROT_WRITE, MAP_SHARED, dp->members, 0);
	if (dp->member_map == MAP_FAILED) {
		dp->member_map = NULL;
		return -1;
	}
	dp->gen_map = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE),
			   PROT_READ | PROT_WRITE, MAP_SHARED, dp->gen, 0);
	if (dp->gen_map == MAP_FAILED) {
		dp->gen_map = NULL;
		return -1;
	}
	return 0;
}

/* A table of M slots over n backends with ids 0..n-1. */
static int table_make(struct xlb_table *t, __u32 algo, __u32 m, size_t n)
{
	struct xlb_table_params p = {
		.algo = algo, .size = m, .key = TEST_KEY,
		.vnodes = XLB_RING_VNODES_DEFAULT,
	};
	struct xlb_backend_spec spec[64];
	char names[64][32];
	struct xlb_err err;
	size_t i;

	for (i = 0; i < n && i < 64; i++) {
		snprintf(names[i], sizeof(names[i]), "192.0.2.%zu", i + 1);
		spec[i] = (struct xlb_backend_spec){
			.name = names[i], .weight = 1 + i % 3, .id = (__u16)i,
		};
	}
	return xlb_table_build(t, &p, spec, i, &err);
}

/* The id of the inner map in the outer map of size m at vip_id, or 0. */
static __u32 inner_id(const struct xlb_dp *dp, __u32 m, __u32 vip_id)
{
	__u32 map_id, c = xlb_table_class(m);

	if (!c || bpf_map_lookup_elem(dp->tables[c - 1], &vip_id, &map_id))
		return 0;
	return map_id;
}

/* Open the inner map published for vip_id in the outer map of size m. */
static int inner_open(const struct xlb_dp *dp, __u32 m, __u32 vip_id)
{
	__u32 map_id = inner_id(dp, m, vip_id);

	return map_id ? bpf_map_get_fd_by_id(map_id) : -1;
}

static __u32 map_entries(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.max_entries;
}

/* Entries of a hash map, counted key by key (independent of the library). */
static __u32 hash_count(int fd, __u32 key_size)
{
	char key[64], next[64];
	__u32 n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

/* Every entry of the VIP map, key by key, to fn. */
static int hash_walk_for_test(int fd, int (*fn)(const void *, const void *,
						void *), void *ctx)
{
	struct xlb_vip_key key, next;
	struct xlb_vip val;
	void *prev = NULL;
	int ret;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			return -errno;
		ret = fn(&key, &val, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

static struct xlb_vip_key vip4(const char *addr, __u16 port, __u8 proto)
{
	struct xlb_vip_key k = {
		.port = htons(port), .proto = proto,
		.family = XLB_FAMILY_INET,
	};

	inet_pton(AF_INET, addr, k.addr);
	return k;
}

static struct xlb_vip_key vip6(const char *addr, __u16 port, __u8 proto)
{
	struct xlb_vip_key k = {
		.port = htons(port), .proto = proto,
		.family = XLB_FAMILY_INET6,
	};

	inet_pton(AF_INET6, addr, k.addr);
	return k;
}

/* The marker key of a VIP's address (structs.h). */
static struct xlb_vip_key marker_of(struct xlb_vip_key k)
{
	k.port = 0;
	k.proto = 0;
	return k;
}

/* The fragment entry key of a VIP's address and protocol (structs.h). */
static struct xlb_vip_key frag_of(struct xlb_vip_key k)
{
	k.port = 0;
	k.family |= XLB_FAMILY_FRAG;
	return k;
}

static struct xlb_backend backend4(const char *addr)
{
	struct xlb_backend b = {
		.family = XLB_FAMILY_INET, .encap = XLB_ENCAP_GUE,
		.flags = XLB_BE_F_VALID,
	};

	inet_pton(AF_INET, addr, b.addr);
	return b;
}

FIXTURE(dp)
{
	struct xlb_dp dp;
	struct xlb_err err;
};

FIXTURE_SETUP(dp)
{
	ASSERT_EQ(0, dp_create(&self->dp))
		TH_LOG("cannot create the data path maps: %s (needs root)",
		       strerror(errno));
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(dp)
{
	xlb_dp_close(&self->dp);
}

/* --- config --------------------------------------------------------------- */

TEST_F(dp, config_round_trip)
{
	struct xlb_config c, got;

	xlb_config_defaults(&c);
	EXPECT_EQ(XLB_GUE_PORT_DEFAULT, c.gue_port);
	EXPECT_EQ(XLB_MTU_DEFAULT, c.mtu);
	EXPECT_EQ(XLB_TTL_DEFAULT, c.ttl);
	EXPECT_EQ(XLB_UDP_IDLE_DEFAULT, c.udp_idle_s);
	c.key = TEST_KEY;
	inet_pton(AF_INET, "198.51.100.1", &c.src4);
	inet_pton(AF_INET6, "2001:db8::1", c.src6);
	c.mtu = 9000;

	ASSERT_EQ(0, xlb_dp_config_set(&self->dp, &c));
	memset(&got, 0xa5, sizeof(got));
	ASSERT_EQ(0, xlb_dp_config_get(&self->dp, &got));
	EXPECT_EQ(0, memcmp(&c, &got, sizeof(c)));
}

/* CONFIG_HZ of the running kernel from its config, 0 if none is readable. */
static __u32 kconfig_hz(void)
{
	FILE *f = popen("{ zcat /proc/config.gz || cat /boot/config-$(uname -r); } "
			"2>/dev/null | sed -n 's/^CONFIG_HZ=//p'", "r");
	unsigned int hz = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%u", &hz) != 1)
		hz = 0;
	pclose(f);
	return hz;
}

/* The data path's clock rate: derived into the config, the kernel's HZ. */
TEST_F(dp, config_set_derives_the_tick_rate)
{
	struct xlb_config c, raw;
	__u32 hz = 0, khz = kconfig_hz(), key = 0;

	ASSERT_EQ(0, xlb_clock_hz(&hz));
	if (khz)
		EXPECT_EQ(khz, hz) TH_LOG("CONFIG_HZ says %u", khz);
	EXPECT_TRUE(hz >= 24 && hz <= 10000) TH_LOG("hz %u", hz);
	xlb_config_defaults(&c);
	c.key = TEST_KEY;
	ASSERT_EQ(0, xlb_dp_config_set(&self->dp, &c));
	ASSERT_EQ(0, bpf_map_lookup_elem(self->dp.config, &key, &raw));
	EXPECT_EQ(hz, raw.hz);
	EXPECT_NE(0, raw.ct_buckets);
}

/* The kernel's jiffies as /proc/timer_list prints them; 0 if unreadable. */
static __u64 kernel_jiffies(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	unsigned long long j = 0;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "jiffies: %llu", &j) == 1)
			break;
	fclose(f);
	return j;
}

/*
 * The tick clock is the kernel's jiffies (counted at the rate
 * config_set_derives_the_tick_rate pins): a reading falls between two
 * reads of jiffies made around it.  No duration is involved.
 */
TEST(clock_now_reads_the_kernel_jiffies)
{
	__u64 j0, t, j1;

	j0 = kernel_jiffies();
	ASSERT_NE(0, j0) TH_LOG("no jiffies in /proc/timer_list");
	ASSERT_EQ(0, xlb_clock_now(&t));
	j1 = kernel_jiffies();
	EXPECT_LE(j0, t) TH_LOG("jiffies %llu, then the clock %llu",
				(unsigned long long)j0, (unsigned long long)t);
	EXPECT_LE(t, j1) TH_LOG("the clock %llu, then jiffies %llu",
				(unsigned long long)t, (unsigned long long)j1);
}

/* --- VIPs ----------------------------------------------------------------- */

/* The VIP index the data path searches, read back; NULL when none is published. */
static struct xlb_vip_slot *index_read(const struct xlb_dp *dp, __u32 *n)
{
	struct xlb_vip_slot *s = NULL;
	__u32 key = 0, id;
	size_t bytes;
	void *m;
	int fd;

	if (bpf_map_lookup_elem(dp->vip_index, &key, &id))
		return NULL;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return NULL;
	/* the index's slots, then the address filter's (bpf/structs.h) */
	if (map_entries(fd) != XLB_VIP_INDEX_MAP_SLOTS) {
		close(fd);
		return NULL;
	}
	*n = XLB_VIP_INDEX_SLOTS;
	bytes = (size_t)XLB_VIP_INDEX_MAP_SLOTS * sizeof(*s);
	m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		s = malloc(bytes);
		if (s)
			memcpy(s, m, bytes);
		munmap(m, bytes);
	}
	close(fd);
	return s;
}

/* Slot of key k as the data path searches: from its hash, by probing. */
static const struct xlb_vip_slot *index_find(const struct xlb_vip_slot *s,
					     __u32 n, const struct xlb_vip_key *k)
{
	__u32 h = xlb_vip_index_hash(k), d;

	for (d = 0; d < XLB_VIP_PROBES; d++) {
		const struct xlb_vip_slot *e = &s[(h + d) & (n - 1)];

		if (!e->key.family)
			return NULL;
		if (!memcmp(&e->key, k, sizeof(*k)))
			return e;
	}
	return NULL;
}

struct index_check {
	const struct xlb_vip_slot *s;
	__u32 n, found;
	bool bad;
};

/* The filter bits the entries' addresses want, and whether each has it. */
struct filter_check {
	const __u64 *filter;		/* after the index's slots */
	__u64 want[XLB_VIP_FILTER_BITS / 64];
	__u32 missing;
};

static int filter_has(const void *key, const void *value, void *ctx)
{
	const struct xlb_vip_key *k = key;
	struct filter_check *c = ctx;
	__u64 d0 = (__u64)k->addr[0] | (__u64)k->addr[1] << 32;
	__u64 d1 = (__u64)k->addr[2] | (__u64)k->addr[3] << 32;
	__u32 h = xlb_vip_filter_hash(d0, d1, k->family & ~XLB_FAMILY_FRAG);

	(void)value;
	c->want[h / 64] |= 1ULL << (h % 64);
	if (!(c->filter[h / 64] >> (h % 64) & 1))
		c->missing++;
	return 0;
}

static int index_has(const void *key, const void *value, void *ctx)
{
	struct index_check *c = ctx;
	const struct xlb_vip_slot *e = index_find(c->s, c->n, key);

	if (!e || memcmp(&e->vip, value, sizeof(e->vip)))
		c->bad = true;
	c->found++;
	return 0;
}

/*
 * The index holds exactly the entries of xlb_vips (VIPs and their derived
 * entries), each where the data path's search finds it, and its address
 * filter exactly their addresses' bits; it follows every change; held
 * changes reach it at the release, all at once.
 */
TEST_F(dp, vip_index_mirrors_the_vip_map)
{
	struct xlb_vip_key k, held = vip4("203.0.113.200", 80, IPPROTO_TCP);
	struct xlb_vip v = { 0 };
	struct xlb_vip_slot *s;
	struct filter_check *fc;
	struct index_check c;
	__u32 n, i, used, entries;
	char a[48];

	/* 600 VIPs on 100 addresses: 900 entries with the derived ones */
	xlb_dp_vip_hold(&self->dp);	/* one switch, not 600 */
	for (i = 0; i < 600; i++) {
		snprintf(a, sizeof(a), "198.51.%u.%u", i / 6 / 50, i / 6 % 50 + 1);
		k = vip4(a, (__u16)(80 + i % 3), (i / 3) & 1 ? IPPROTO_TCP :
								IPPROTO_UDP);
		v.id = i;
		v.hash_mode = (__u8)(i % 3);
		ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k, &v, &self->err))
			TH_LOG("%s", self->err.msg);
	}
	ASSERT_EQ(0, xlb_dp_vip_release(&self->dp, &self->err))
		TH_LOG("%s", self->err.msg);
	s = index_read(&self->dp, &n);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(XLB_VIP_INDEX_SLOTS, n);
	for (i = 0, used = 0; i < n; i++)
		used += !!s[i].key.family;
	entries = hash_count(self->dp.vips, sizeof(k));
	EXPECT_EQ(entries, used);
	c = (struct index_check){ .s = s, .n = n };
	ASSERT_EQ(0, hash_walk_for_test(self->dp.vips, index_has, &c));
	EXPECT_FALSE(c.bad);
	EXPECT_EQ(entries, c.found);
	/* the address filter: the bits of the entries' addresses, no other */
	fc = calloc(1, sizeof(*fc));
	ASSERT_NE(NULL, fc);
	fc->filter = (const __u64 *)&s[XLB_VIP_INDEX_SLOTS];
	ASSERT_EQ(0, hash_walk_for_test(self->dp.vips, filter_has, fc));
	EXPECT_EQ(0, fc->missing);
	EXPECT_EQ(0, memcmp(fc->want, fc->filter, sizeof(fc->want)));
	for (i = 0, used = 0; i < XLB_VIP_FILTER_BITS / 64; i++)
		used += (__u32)__builtin_popcountll(fc->want[i]);
	/* 100 addresses; two may share a bit, rarely */
	EXPECT_LE(used, 100);
	EXPECT_GE(used, 98);
	free(fc);
	free(s);

	/* held: xlb_vips changes, the index waits for the release */
	xlb_dp_vip_hold(&self->dp);
	v.id = 700;
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &held, &v, &self->err));
	k = vip4("198.51.0.1", 80, IPPROTO_UDP);	/* VIP 0 */
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k));
	s = index_read(&self->dp, &n);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(NULL, index_find(s, n, &held));
	EXPECT_NE(NULL, index_find(s, n, &k));
	free(s);
	ASSERT_EQ(0, xlb_dp_vip_release(&self->dp, &self->err));
	s = index_read(&self->dp, &n);
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, index_find(s, n, &held));
	EXPECT_EQ(NULL, index_find(s, n, &k));
	free(s);
	/* not held: each change reaches the index at once */
	v.id = 0;	/* k's id again */
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k, &v, &self->err))
		TH_LOG("%s", self->err.msg);
	s = index_read(&self->dp, &n);
	ASSERT_NE(NULL, s);
	EXPECT_NE(NULL, index_find(s, n, &k));
	free(s);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &held));
	s = index_read(&self->dp, &n);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(NULL, index_find(s, n, &held));
	free(s);
}

TEST_F(dp, vip_set_get_del)
{
	struct xlb_vip_key k4 = vip4("203.0.113.10", 80, IPPROTO_TCP);
	struct xlb_vip_key k6 = vip6("2001:db8::10", 53, IPPROTO_UDP);
	struct xlb_vip v4 = { .id = 1, .hash_mode = XLB_HASH_5TUPLE };
	struct xlb_vip v6 = { .id = 1023, .flags = XLB_VIP_F_STATELESS,
			      .hash_mode = XLB_HASH_SRC };
	struct xlb_vip got;

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k4, &v4, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k6, &v6, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &k4, &got));
	EXPECT_EQ(0, memcmp(&v4, &got, sizeof(got)));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &k6, &got));
	EXPECT_EQ(0, memcmp(&v6, &got, sizeof(got)));

	/* replacing the value of a VIP keeps its id legal */
	v4.hash_mode = XLB_HASH_3TUPLE;
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k4, &v4, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &k4, &got));
	EXPECT_EQ(XLB_HASH_3TUPLE, got.hash_mode);

	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k4));
	EXPECT_EQ(-ENOENT, xlb_dp_vip_get(&self->dp, &k4, &got));
	EXPECT_EQ(-ENOENT, xlb_dp_vip_del(&self->dp, &k4));
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k6));
	EXPECT_EQ(0, hash_count(self->dp.vips, sizeof(k4)))
		TH_LOG("VIPs or markers left behind");
}

TEST_F(dp, vip_bad_forms_rejected_map_unchanged)
{
	struct xlb_vip_key good = vip4("203.0.113.1", 443, IPPROTO_TCP);
	struct xlb_vip ok = { .id = 7 };
	struct {
		const char *what;
		struct xlb_vip_key key;
		struct xlb_vip vip;
		int errnum;
		const char *says;
	} bad[] = {
		{ "family 5", good, ok, EINVAL, "family" },
		{ "family 0", good, ok, EINVAL, "family" },
		{ "ICMP", vip4("203.0.113.2", 0, IPPROTO_ICMP), ok, EINVAL,
		  "protocol" },
		{ "SCTP", vip4("203.0.113.2", 80, IPPROTO_SCTP), ok, EINVAL,
		  "protocol" },
		{ "protocol 0 (marker key)", marker_of(good), ok, EINVAL,
		  "protocol" },
		{ "IPv4 with addr[2] set", good, ok, EINVAL, "addr[1..3]" },
		{ "id 1024", vip4("203.0.113.3", 80, IPPROTO_TCP),
		  { .id = XLB_MAX_VIPS }, EINVAL, "id 1024" },
		{ "id 0xffffffff", vip4("203.0.113.3", 80, IPPROTO_TCP),
		  { .id = 0xffffffff }, EINVAL, "out of range" },
		{ "unknown flag", vip4("203.0.113.3", 80, IPPROTO_TCP),
		  { .id = 3, .flags = 1u << 7 }, EINVAL, "flags" },
		{ "address-only flag", vip4("203.0.113.3", 80, IPPROTO_TCP),
		  { .id = 3, .flags = XLB_VIP_F_ADDR_ONLY }, EINVAL, "flags" },
		{ "hash mode 3", vip4("203.0.113.3", 80, IPPROTO_TCP),
		  { .id = 3, .hash_mode = 3 }, EINVAL, "hash mode" },
		{ "id of another VIP", vip4("203.0.113.4", 80, IPPROTO_TCP),
		  { .id = 7 }, EEXIST, "already used by VIP 203.0.113.1:443/tcp" },
	};
	struct xlb_vip got;
	size_t i;

	bad[0].key.family = 5;
	bad[1].key.family = 0;
	bad[5].key.addr[2] = htonl(1);

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &good, &ok, &self->err))
		TH_LOG("%s", self->err.msg);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct xlb_err err = { "" };
		int ret;

		ret = xlb_dp_vip_set(&self->dp, &bad[i].key, &bad[i].vip, &err);
		EXPECT_EQ(-bad[i].errnum, ret) TH_LOG("%s: got %d (%s)",
						      bad[i].what, ret, err.msg);
		EXPECT_NE(NULL, strstr(err.msg, bad[i].says))
			TH_LOG("%s: message \"%s\" does not mention \"%s\"",
			       bad[i].what, err.msg, bad[i].says);
		TH_LOG("%-24s -> %s", bad[i].what, err.msg);
	}
	/* the good VIP, its address marker and fragment entry; nothing changed */
	EXPECT_EQ(3, hash_count(self->dp.vips, sizeof(good)));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &good, &got));
	EXPECT_EQ(0, memcmp(&ok, &got, sizeof(got)));
	EXPECT_EQ(-EINVAL, xlb_dp_vip_del(&self->dp, &bad[4].key))
		TH_LOG("a marker must not be deletable as a VIP");
}

/*
 * Derived entries: the address marker exists while the address has VIPs;
 * the fragment entry of (address, proto) while it has VIPs of that
 * protocol, holding the one port-less VIP's entry or address-only.
 */
TEST_F(dp, vip_address_marker_follows_vips)
{
	struct xlb_vip_key web = vip4("203.0.113.20", 80, IPPROTO_TCP);
	struct xlb_vip_key dns = vip4("203.0.113.20", 53, IPPROTO_UDP);
	struct xlb_vip_key dns2 = vip4("203.0.113.20", 5353, IPPROTO_UDP);
	struct xlb_vip_key all = vip4("203.0.113.20", 0, IPPROTO_TCP);
	struct xlb_vip_key mk = marker_of(web), other = vip4("203.0.113.21",
							    80, IPPROTO_TCP);
	struct xlb_vip_key ftcp = frag_of(web), fudp = frag_of(dns);
	struct xlb_vip vweb = { .id = 1, .hash_mode = XLB_HASH_5TUPLE };
	struct xlb_vip vdns = { .id = 2, .hash_mode = XLB_HASH_3TUPLE };
	struct xlb_vip vdns2 = { .id = 4, .hash_mode = XLB_HASH_SRC };
	struct xlb_vip vall = { .id = 3, .hash_mode = XLB_HASH_SRC };
	struct xlb_vip m;

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &web, &vweb, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &mk, &m));
	EXPECT_EQ(XLB_VIP_F_ADDR_ONLY, m.flags);
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &ftcp, &m));
	EXPECT_EQ(XLB_VIP_F_ADDR_ONLY, m.flags)
		TH_LOG("a 5-tuple VIP's fragments cannot be attributed");
	EXPECT_EQ(-ENOENT, xlb_dp_vip_get(&self->dp, &fudp, &m))
		TH_LOG("no UDP VIP: UDP fragments are not ours");

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &dns, &vdns, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &fudp, &m));
	EXPECT_EQ(0, memcmp(&vdns, &m, sizeof(m)))
		TH_LOG("the only port-less UDP VIP's entry steers UDP fragments");
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &ftcp, &m));
	EXPECT_EQ(XLB_VIP_F_ADDR_ONLY, m.flags)
		TH_LOG("a UDP VIP must not claim TCP fragments");

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &all, &vall, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &ftcp, &m));
	EXPECT_EQ(0, memcmp(&vall, &m, sizeof(m)));

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &dns2, &vdns2, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &fudp, &m));
	EXPECT_EQ(XLB_VIP_F_ADDR_ONLY, m.flags)
		TH_LOG("two port-less UDP VIPs: fragments cannot be attributed");

	/* the entries copy ids: they must not count as taken */
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &all));
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &other, &vall, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &dns2));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &fudp, &m));
	EXPECT_EQ(0, memcmp(&vdns, &m, sizeof(m)));

	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &dns));
	EXPECT_EQ(-ENOENT, xlb_dp_vip_get(&self->dp, &fudp, &m));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &mk, &m));
	EXPECT_EQ(XLB_VIP_F_ADDR_ONLY, m.flags);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &web));
	EXPECT_EQ(-ENOENT, xlb_dp_vip_get(&self->dp, &mk, &m))
		TH_LOG("marker outlived the last VIP of its address");
	EXPECT_EQ(-ENOENT, xlb_dp_vip_get(&self->dp, &ftcp, &m));
	/* other address: its VIP, its marker and its TCP fragment entry */
	EXPECT_EQ(3, hash_count(self->dp.vips, sizeof(mk)));
}

/* Every entry of xlb_vips, as text lines sorted, into buf. */
static int vips_text(int fd, char *buf, size_t cap)
{
	struct xlb_vip_key key, next;
	struct xlb_vip val;
	char (*lines)[96];
	void *prev = NULL;
	size_t n = 0, i, len = 0;

	lines = calloc(4096, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	while (n < 4096 && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			break;
		snprintf(lines[n++], sizeof(lines[0]),
			 "%u %08x %u %u id %u flags %x mode %u", key.family,
			 key.addr[0], key.port, key.proto, val.id, val.flags,
			 val.hash_mode);
	}
	qsort(lines, n, sizeof(lines[0]),
	      (int (*)(const void *, const void *))strcmp);
	buf[0] = 0;
	for (i = 0; i < n && len + sizeof(lines[0]) + 1 < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s\n", lines[i]);
	free(lines);
	return (int)n;
}

/*
 * One batch of VIP writes (ids checked, markers and fragment entries
 * derived), for held_vip_writes_are_the_unheld_ones; returns the number
 * of refusals, which must name the VIP that holds the id.
 */
static int vip_batch(struct xlb_dp *dp, struct xlb_err *err)
{
	struct xlb_vip_key web = vip4("203.0.113.30", 80, IPPROTO_TCP);
	struct xlb_vip_key dns = vip4("203.0.113.30", 53, IPPROTO_UDP);
	struct xlb_vip_key alt = vip4("203.0.113.31", 53, IPPROTO_UDP);
	struct xlb_vip_key late = vip4("203.0.113.32", 443, IPPROTO_TCP);
	struct xlb_vip v = { .id = 5, .hash_mode = XLB_HASH_5TUPLE };
	int refused = 0;

	if (xlb_dp_vip_set(dp, &web, &v, err))
		return -100;
	v.id = 6;
	v.hash_mode = XLB_HASH_3TUPLE;
	if (xlb_dp_vip_set(dp, &dns, &v, err))
		return -101;
	/* id 6 is dns's, written in this batch: refused, nothing written */
	if (xlb_dp_vip_set(dp, &alt, &v, err) == -EEXIST &&
	    strstr(err->msg, "203.0.113.30"))
		refused++;
	/* dns changed, then deleted: its id is free again */
	v.hash_mode = XLB_HASH_SRC;
	if (xlb_dp_vip_set(dp, &dns, &v, err) || xlb_dp_vip_del(dp, &dns))
		return -102;
	if (xlb_dp_vip_set(dp, &alt, &v, err))
		return -103;
	v.id = 7;
	if (xlb_dp_vip_set(dp, &late, &v, err) || xlb_dp_vip_del(dp, &web))
		return -104;
	/* web's id went with it; late may not take alt's */
	v.id = 6;
	if (xlb_dp_vip_set(dp, &late, &v, err) == -EEXIST)
		refused++;
	v.id = 5;
	if (xlb_dp_vip_set(dp, &web, &v, err))
		return -105;
	return refused;
}

/*
 * While VIP changes are held, libxlb keeps the VIP map's entries it read
 * once instead of reading the map for every write: the same batch held
 * and not held must check the same ids and leave the same entries.
 */
TEST_F(dp, held_vip_writes_are_the_unheld_ones)
{
	static char plain[16384], held[16384];
	struct xlb_vip_key k, other = vip4("203.0.113.34", 80, IPPROTO_TCP);
	struct xlb_vip v = { 0 };

	ASSERT_EQ(2, vip_batch(&self->dp, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(0, vips_text(self->dp.vips, plain, sizeof(plain)));
	/* empty it again, one VIP at a time */
	k = vip4("203.0.113.30", 80, IPPROTO_TCP);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k));
	k = vip4("203.0.113.31", 53, IPPROTO_UDP);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k));
	k = vip4("203.0.113.32", 443, IPPROTO_TCP);
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k));
	ASSERT_EQ(0, hash_count(self->dp.vips, sizeof(k)));

	/* a VIP written before the hold counts in the held batch's checks */
	k = vip4("203.0.113.33", 80, IPPROTO_TCP);
	v.id = 9;
	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k, &v, &self->err));
	xlb_dp_vip_hold(&self->dp);
	v.id = 9;
	EXPECT_EQ(-EEXIST, xlb_dp_vip_set(&self->dp, &other, &v, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_del(&self->dp, &k));
	ASSERT_EQ(2, vip_batch(&self->dp, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_vip_release(&self->dp, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(NULL, self->dp.vip_cache) TH_LOG("the copy outlived the hold");
	ASSERT_LT(0, vips_text(self->dp.vips, held, sizeof(held)));
	EXPECT_STREQ(plain, held);
}

/* --- backends ------------------------------------------------------------- */

TEST_F(dp, backend_epoch_and_two_writes)
{
	struct xlb_backend a = backend4("192.0.2.10"), b = backend4("192.0.2.11");
	struct xlb_backend got;
	const __u16 id = 42;

	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(0, got.flags);

	a.epoch = 777;	/* ignored: the library owns epochs */
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, id, &a, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(XLB_BE_F_VALID, got.flags);
	EXPECT_EQ(1, got.epoch);
	EXPECT_EQ(0, memcmp(a.addr, got.addr, sizeof(a.addr)));

	/* same backend, new next hop: content changes, epoch stays */
	a.flags |= XLB_BE_F_NEXTHOP;
	memcpy(a.dmac, "\x02\x00\x00\x00\x00\x01", 6);
	a.ifindex = 1;
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, id, &a, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(XLB_BE_F_VALID | XLB_BE_F_NEXTHOP, got.flags);
	EXPECT_EQ(1, got.epoch);
	EXPECT_EQ(1, got.ifindex);

	/* the id reused for another backend: new epoch */
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, id, &b, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(XLB_BE_F_VALID, got.flags);
	EXPECT_EQ(2, got.epoch);
	EXPECT_EQ(0, memcmp(b.addr, got.addr, sizeof(b.addr)));
	EXPECT_EQ(0, got.ifindex);

	/* clear keeps address and epoch; reuse after it still bumps */
	ASSERT_EQ(0, xlb_dp_backend_clear(&self->dp, id));
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(0, got.flags);
	EXPECT_EQ(2, got.epoch);
	EXPECT_EQ(0, memcmp(b.addr, got.addr, sizeof(b.addr)));
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, id, &a, &self->err));
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(3, got.epoch);
	/* back to the same backend after a clear: same epoch */
	ASSERT_EQ(0, xlb_dp_backend_clear(&self->dp, id));
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, id, &a, &self->err));
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, id, &got));
	EXPECT_EQ(3, got.epoch);
	EXPECT_EQ(XLB_BE_F_VALID | XLB_BE_F_NEXTHOP, got.flags);

	/* the last id works, the reserved one does not */
	ASSERT_EQ(0, xlb_dp_backend_set(&self->dp, XLB_BACKEND_ID_MAX, &b,
					&self->err));
	EXPECT_EQ(-EINVAL, xlb_dp_backend_set(&self->dp, XLB_BACKEND_NONE, &b,
					      &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "reserved"));
	EXPECT_EQ(-EINVAL, xlb_dp_backend_get(&self->dp, XLB_BACKEND_NONE,
					      &got));
}

TEST_F(dp, backend_bad_forms_rejected)
{
	struct xlb_backend good = backend4("192.0.2.10"), got;
	struct {
		const char *what;
		struct xlb_backend b;
		const char *says;
	} bad[] = {
		{ "family 0", good, "family" },
		{ "IPv4 with addr[1] set", good, "addr[1..3]" },
		{ "address 0.0.0.0", good, "unspecified" },
		{ "encap 2", good, "encapsulation" },
		{ "unknown flag", good, "flags" },
		{ "next hop without MAC", good, "MAC" },
	};
	size_t i;

	bad[0].b.family = 0;
	bad[1].b.addr[1] = htonl(1);
	bad[2].b.addr[0] = 0;
	bad[3].b.encap = 2;
	bad[4].b.flags |= 0x80;
	bad[5].b.flags |= XLB_BE_F_NEXTHOP;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct xlb_err err = { "" };

		EXPECT_EQ(-EINVAL, xlb_dp_backend_set(&self->dp, 5, &bad[i].b,
						      &err))
			TH_LOG("%s accepted", bad[i].what);
		EXPECT_NE(NULL, strstr(err.msg, bad[i].says))
			TH_LOG("%s: \"%s\"", bad[i].what, err.msg);
		TH_LOG("%-22s -> %s", bad[i].what, err.msg);
	}
	ASSERT_EQ(0, xlb_dp_backend_get(&self->dp, 5, &got));
	EXPECT_EQ(0, got.flags);
	EXPECT_EQ(0, got.epoch);
}

/* --- tables --------------------------------------------------------------- */

/* Publish, read back through the library and check the inner map itself. */
static void publish_and_check(struct __test_metadata *_metadata,
			      struct xlb_dp *dp, __u32 vip_id, __u32 algo,
			      __u32 m, size_t n)
{
	struct xlb_table t, back = { 0 };
	struct xlb_err err = { "" };
	struct bpf_map_info info = {};
	__u32 zero = 0, len = sizeof(info), *w;
	int fd;

	ASSERT_EQ(0, table_make(&t, algo, m, n));
	ASSERT_EQ(0, xlb_dp_table_publish(dp, vip_id, &t, &err))
		TH_LOG("M=%u: %s", m, err.msg);
	ASSERT_EQ(0, xlb_dp_table_read(dp, vip_id, &back, &err))
		TH_LOG("M=%u: %s", m, err.msg);
	EXPECT_EQ(m, back.size);
	EXPECT_EQ(0, memcmp(t.slots, back.slots, (size_t)m * sizeof(*t.slots)))
		TH_LOG("M=%u: read back %zu slots differ", m,
		       xlb_table_diff(&t, &back));

	/* the inner map itself: one value, header word then 4-byte slots */
	fd = inner_open(dp, m, vip_id);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bpf_obj_get_info_by_fd(fd, &info, &len));
	EXPECT_EQ(1, info.max_entries);
	EXPECT_EQ(4 * (m + 1), info.value_size);
	EXPECT_EQ(xlb_table_class(m), dp->vip_class[vip_id]);
	w = malloc(4 * ((size_t)m + 1));
	ASSERT_NE(NULL, w);
	ASSERT_EQ(0, bpf_map_lookup_elem(fd, &zero, w));
	EXPECT_EQ(m, xlb_table_hdr_size(w[0]));
	EXPECT_EQ(0, memcmp(w + 1, t.slots, (size_t)m * sizeof(*t.slots)));
	free(w);
	close(fd);
	xlb_table_free(&t);
	xlb_table_free(&back);
}

TEST_F(dp, table_publish_read_back_251)
{
	publish_and_check(_metadata, &self->dp, 0, XLB_ALGO_MAGLEV, 251, 7);
}

TEST_F(dp, table_publish_read_back_65537)
{
	publish_and_check(_metadata, &self->dp, 513, XLB_ALGO_MAGLEV, 65537,
			  50);
}

/* The VIP index entry of key, read back as the data path searches it. */
static bool index_vip(const struct xlb_dp *dp, const struct xlb_vip_key *k,
		      struct xlb_vip *out)
{
	const struct xlb_vip_slot *e;
	struct xlb_vip_slot *s;
	__u32 n;

	s = index_read(dp, &n);
	if (!s)
		return false;
	e = index_find(s, n, k);
	if (e)
		*out = e->vip;
	free(s);
	return e != NULL;
}

/*
 * A table of another size goes to the outer map of that size; the index
 * names the new size from its next switch on (held: at the release), and
 * the old size's entry goes after that switch, not before.
 */
TEST_F(dp, table_republish_new_size)
{
	struct xlb_vip_key k = vip4("203.0.113.9", 443, IPPROTO_TCP);
	struct xlb_vip v = { .id = 9 }, e;
	struct xlb_table back = { 0 }, t;
	__u32 id_before, id_after, vip = 9;

	ASSERT_EQ(0, xlb_dp_vip_set(&self->dp, &k, &v, &self->err));
	ASSERT_TRUE(index_vip(&self->dp, &k, &e));
	EXPECT_EQ(XLB_TABLE_CLASS_NONE, e.table) TH_LOG("no table yet");
	publish_and_check(_metadata, &self->dp, vip, XLB_ALGO_MAGLEV, 251, 5);
	id_before = inner_id(&self->dp, 251, vip);
	ASSERT_NE(0, id_before);
	ASSERT_TRUE(index_vip(&self->dp, &k, &e));
	EXPECT_EQ(xlb_table_class(251), e.table);
	/* the same size: rewritten in place, no map made, no index switch */
	publish_and_check(_metadata, &self->dp, vip, XLB_ALGO_RING, 251, 6);
	id_after = inner_id(&self->dp, 251, vip);
	EXPECT_EQ(id_before, id_after)
		TH_LOG("a table of the same size is rewritten in place");

	/* another size, held: packets keep the 251-slot table until the release */
	xlb_dp_vip_hold(&self->dp);
	ASSERT_EQ(0, table_make(&t, XLB_ALGO_RING, 1021, 9));
	ASSERT_EQ(0, xlb_dp_table_publish(&self->dp, vip, &t, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_NE(0, inner_id(&self->dp, 1021, vip));
	EXPECT_EQ(id_after, inner_id(&self->dp, 251, vip));
	ASSERT_TRUE(index_vip(&self->dp, &k, &e));
	EXPECT_EQ(xlb_table_class(251), e.table);
	ASSERT_EQ(0, xlb_dp_vip_release(&self->dp, &self->err));
	ASSERT_TRUE(index_vip(&self->dp, &k, &e));
	EXPECT_EQ(xlb_table_class(1021), e.table);
	EXPECT_EQ(0, inner_id(&self->dp, 251, vip))
		TH_LOG("the old size's entry outlived the switch");
	ASSERT_EQ(0, xlb_dp_table_read(&self->dp, vip, &back, &self->err));
	EXPECT_EQ(1021, back.size);
	EXPECT_EQ(0, memcmp(t.slots, back.slots, 1021 * sizeof(*t.slots)));
	xlb_table_free(&back);
	xlb_table_free(&t);
	/* xlb_vips keeps what was set: the class is the index's */
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &k, &e));
	EXPECT_EQ(0, e.table);

	/* not held: the switch comes with the publish */
	publish_and_check(_metadata, &self->dp, vip, XLB_ALGO_MAGLEV, 65537, 9);
	ASSERT_TRUE(index_vip(&self->dp, &k, &e));
	EXPECT_EQ(xlb_table_class(65537), e.table);
	EXPECT_EQ(0, inner_id(&self->dp, 1021, vip));

	/* the old map is gone once nothing refers to it */
	EXPECT_EQ(-ENOENT, xlb_dp_table_read(&self->dp, vip + 1, &back,
					     &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "no published table"));

	ASSERT_EQ(0, xlb_dp_table_unpublish(&self->dp, vip));
	EXPECT_EQ(-ENOENT, xlb_dp_table_read(&self->dp, vip, &back,
					     &self->err));
	EXPECT_EQ(-ENOENT, xlb_dp_table_unpublish(&self->dp, vip));
}

static __u8 member_state(const struct xlb_dp *dp, __u32 vip, __u16 id)
{
	__u8 st = 0;

	if (xlb_dp_member_get(dp, vip, id, &st, NULL))
		return 0;	/* no record */
	return st;
}

static void expect_table(struct __test_metadata *_metadata,
			 const struct xlb_dp *dp, __u32 vip,
			 const struct xlb_table *t)
{
	struct xlb_table back = { 0 };
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_dp_table_read(dp, vip, &back, &err))
		TH_LOG("VIP %u: %s", vip, err.msg);
	ASSERT_EQ(t->size, back.size);
	EXPECT_EQ(0, xlb_table_diff(t, &back)) TH_LOG("VIP %u", vip);
	xlb_table_free(&back);
}

/*
 * Two VIPs of one table share one map: the second gets no map of its
 * own.  A shared map is never rewritten in place: the next table of
 * either VIP is a fresh map, and the other keeps the shared one whole,
 * with its members.  A map of its own is rewritten in place again.
 */
TEST_F(dp, table_share_one_map_never_rewritten)
{
	struct xlb_table t, u, w;
	__u32 a = 21, b = 22, none = 23, id_t, id, id_u;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 509, 6));
	ASSERT_EQ(0, table_make(&u, XLB_ALGO_MAGLEV, 509, 5));
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id_t,
					     &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_share(&self->dp, b, a, &t, &id, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(id_t, id);
	EXPECT_EQ(id_t, inner_id(&self->dp, 509, b));
	EXPECT_EQ(xlb_table_class(509), self->dp.vip_class[b]);
	expect_table(_metadata, &self->dp, b, &t);
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, b, 5));

	/* bad forms: refused, b's table and members as they were */
	EXPECT_EQ(-ENOENT, xlb_dp_table_share(&self->dp, b, none, &t, &id,
					      &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "publishes no table of 509 slots"))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, table_make(&w, XLB_ALGO_MAGLEV, 251, 6));
	EXPECT_EQ(-ENOENT, xlb_dp_table_share(&self->dp, b, a, &w, &id,
					      &self->err))
		TH_LOG("a table of another size shared");
	xlb_table_free(&w);
	EXPECT_EQ(-ENOENT, xlb_dp_table_share(&self->dp, b, a,
					      &(struct xlb_table){ 0 }, &id,
					      &self->err)) TH_LOG("a table of no slots");
	EXPECT_EQ(-EINVAL, xlb_dp_table_share(&self->dp, b, b, &t, &id,
					      &self->err));
	EXPECT_EQ(-EINVAL, xlb_dp_table_share(&self->dp, XLB_MAX_VIPS, a, &t,
					      &id, &self->err));
	EXPECT_EQ(id_t, inner_id(&self->dp, 509, b));
	expect_table(_metadata, &self->dp, b, &t);

	/* a's next table: a fresh map; b keeps the shared one, whole */
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &u, &id_u,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_NE(id_t, id_u) TH_LOG("a shared map was rewritten in place");
	expect_table(_metadata, &self->dp, a, &u);
	expect_table(_metadata, &self->dp, b, &t);
	EXPECT_EQ(id_t, inner_id(&self->dp, 509, b));
	EXPECT_EQ(XLB_MEMBER_GONE, member_state(&self->dp, a, 5));
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, b, 5));
	/* a's own map now: rewritten in place */
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id,
					     &self->err));
	EXPECT_EQ(id_u, id) TH_LOG("a map of its own was not rewritten");
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, a, 5));
	/* b's next: a fresh map too (it shared one), a's untouched */
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, b, &u, &id,
					     &self->err));
	EXPECT_NE(id_t, id);
	EXPECT_NE(id_u, id);
	expect_table(_metadata, &self->dp, a, &t);
	expect_table(_metadata, &self->dp, b, &u);
	EXPECT_EQ(XLB_MEMBER_GONE, member_state(&self->dp, b, 5));
	xlb_table_free(&t);
	xlb_table_free(&u);
}

/*
 * A VIP's table unpublished (the VIP deleted first) takes its member
 * records with it: they become GONE, so that its id may name another VIP
 * and the places go to others.  A VIP that shares the table keeps its own.
 */
TEST_F(dp, table_unpublished_takes_its_members)
{
	struct xlb_table t;
	__u32 a = 31, b = 32, c = 33, id, i;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 509, 6));
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id,
					     &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_share(&self->dp, b, a, &t, &id, &self->err))
		TH_LOG("%s", self->err.msg);
	for (i = 0; i < 6; i++)
		ASSERT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, a, i));
	ASSERT_EQ(0, xlb_dp_table_unpublish(&self->dp, a));
	for (i = 0; i < 6; i++) {
		EXPECT_EQ(XLB_MEMBER_GONE, member_state(&self->dp, a, i))
			TH_LOG("backend %u is still a member of the VIP without a table", i);
		EXPECT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, b, i));
	}
	ASSERT_EQ(0, xlb_dp_table_unpublish(&self->dp, b));
	EXPECT_EQ(XLB_MEMBER_GONE, member_state(&self->dp, b, 5));
	/* members written with no table (a publish that failed) go too */
	ASSERT_EQ(0, xlb_dp_member_set(&self->dp, c, 7, XLB_MEMBER_ACTIVE,
				       &self->err));
	EXPECT_EQ(-ENOENT, xlb_dp_table_unpublish(&self->dp, c));
	EXPECT_EQ(XLB_MEMBER_GONE, member_state(&self->dp, c, 7));
	xlb_table_free(&t);
}

/* n_vips VIPs (ids 1..) of 100 members each, backend id of(v, k); 0: all placed */
static int members_place(struct __test_metadata *_metadata,
			 const struct xlb_dp *dp, __u32 n_vips,
			 __u16 (*of)(__u32 v, __u32 k, __u32 *seed),
			 __u8 state)
{
	struct xlb_err err = { "" };
	__u32 v, k, seed = 1, failed = 0;

	for (v = 1; v <= n_vips; v++)
		for (k = 0; k < 100; k++)
			if (xlb_dp_member_set(dp, v, of(v, k, &seed), state,
					      &err) && !failed++)
				TH_LOG("VIP %u, member %u: %s", v, k, err.msg);
	return failed;
}

static __u16 same_100(__u32 v, __u32 k, __u32 *seed)
{
	return (__u16)(k + 1);
}

/* VIP v's own window of 100 of 1000 backends (xlb-bench control) */
static __u16 window_100(__u32 v, __u32 k, __u32 *seed)
{
	return (__u16)((7 * v + k) % 1000 + 1);
}

/* 100 of 4000 ids, from a fixed xorshift sequence (repeats are updates) */
static __u16 random_100(__u32 v, __u32 k, __u32 *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 17;
	*seed ^= *seed << 5;
	return (__u16)(*seed % 4000 + 1);
}

/*
 * 1000 VIPs of 100 members each find a place, one configuration after
 * another as xlb-bench control applies them (each leaves GONE records
 * behind): all of them with the same 100 backends, each with its own
 * window of 1000 backends, then each with 100 of 4000 at random.
 */
TEST_F(dp, members_of_1000_vips_of_100_find_a_place)
{
	EXPECT_EQ(0, members_place(_metadata, &self->dp, 1000, same_100,
				   XLB_MEMBER_ACTIVE));
	EXPECT_EQ(0, members_place(_metadata, &self->dp, 1000, same_100,
				   XLB_MEMBER_GONE));
	EXPECT_EQ(0, members_place(_metadata, &self->dp, 1000, window_100,
				   XLB_MEMBER_ACTIVE));
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_state(&self->dp, 999,
						  window_100(999, 99, NULL)));
	EXPECT_EQ(0, members_place(_metadata, &self->dp, 1000, window_100,
				   XLB_MEMBER_GONE));
	EXPECT_EQ(0, members_place(_metadata, &self->dp, 1000, random_100,
				   XLB_MEMBER_ACTIVE));
}

/*
 * Whether the map of id is freed: a map lives while anything holds it (a
 * mapping too), and goes when the last holder lets go, after a grace
 * period the kernel defers.  How soon is no property of the test: the
 * wait is bounded (30 s) only so that a map that stays fails the case
 * rather than hanging it.
 */
static bool map_freed(__u32 id)
{
	int i, fd;

	for (i = 0; i < 3000; i++) {
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			return fd == -ENOENT;
		close(fd);
		usleep(10 * 1000);
	}
	return false;
}

/*
 * The handle keeps its own table map mapped between rewrites in place
 * (dp_table.c), and lets it go whenever the VIP's table stops being that
 * map: replaced behind its back, shared, unpublished, or the handle
 * closed.  Each time the old map is freed, and the new table is whole.
 */
TEST_F(dp, table_kept_mapping_follows_the_map)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct xlb_table t, u, w;
	__u32 a = 41, b = 42, m = 509, id_t, id, foreign_id, zero = 0, *words;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, m, 6));
	ASSERT_EQ(0, table_make(&u, XLB_ALGO_MAGLEV, m, 5));
	ASSERT_EQ(0, table_make(&w, XLB_ALGO_RING, m, 7));
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id_t,
					     &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &u, &id,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_EQ(id_t, id) TH_LOG("not rewritten in place");
	expect_table(_metadata, &self->dp, a, &u);

	/* replaced behind the handle's back: the next rewrite is of the new map */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_TABLE_MAP_NAME, sizeof(__u32),
			    XLB_TABLE_BYTES(m), 1, &opts);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	words = calloc(m + 1, sizeof(*words));
	ASSERT_NE(NULL, words);
	words[0] = xlb_table_hdr(m);
	memcpy(words + 1, t.slots, m * sizeof(*t.slots));
	ASSERT_EQ(0, bpf_map_update_elem(fd, &zero, words, BPF_ANY));
	free(words);
	ASSERT_EQ(0, bpf_obj_get_info_by_fd(fd, &info, &len));
	foreign_id = info.id;
	ASSERT_EQ(0, bpf_map_update_elem(self->dp.tables[xlb_table_class(m) - 1],
					 &a, &fd, BPF_ANY));
	close(fd);
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &w, &id,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_EQ(foreign_id, id);
	expect_table(_metadata, &self->dp, a, &w);
	EXPECT_TRUE(map_freed(id_t)) TH_LOG("the replaced map %u is held", id_t);

	/* shared: never rewritten in place again, so not kept either */
	ASSERT_EQ(0, xlb_dp_table_share(&self->dp, b, a, &w, &id, &self->err))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id_t,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_NE(foreign_id, id_t);
	ASSERT_EQ(0, xlb_dp_table_unpublish(&self->dp, b));
	EXPECT_TRUE(map_freed(foreign_id))
		TH_LOG("the shared map %u is held", foreign_id);
	expect_table(_metadata, &self->dp, a, &t);

	/* unpublished */
	ASSERT_EQ(0, xlb_dp_table_unpublish(&self->dp, a));
	EXPECT_TRUE(map_freed(id_t)) TH_LOG("the unpublished map %u is held",
					    id_t);

	/* the handle closed: its maps, tables and mappings all go */
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &u, &id_t,
					     &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_EQ(id_t, id);
	xlb_dp_close(&self->dp);
	EXPECT_TRUE(map_freed(id_t)) TH_LOG("map %u outlived its handle", id_t);
	xlb_table_free(&t);
	xlb_table_free(&u);
	xlb_table_free(&w);
}

/*
 * A handle that did not write a VIP's records (a daemon that adopts)
 * still finds its leavers, and does not rewrite in place a map it did
 * not make: another VIP may share it.
 */
TEST_F(dp, table_adopter_finds_leavers_and_makes_a_fresh_map)
{
	struct xlb_table t, u;
	__u32 a = 31, id_t, id;
	__u16 i;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_RING, 509, 8));
	ASSERT_EQ(0, table_make(&u, XLB_ALGO_RING, 509, 3));
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &t, &id_t,
					     &self->err)) TH_LOG("%s", self->err.msg);
	/* what a handle opened on these maps knows of them */
	memset(self->dp.vip_excl, 0, sizeof(self->dp.vip_excl));
	self->dp.mids_known = false;
	ASSERT_EQ(0, xlb_dp_table_publish_id(&self->dp, a, &u, &id,
					     &self->err)) TH_LOG("%s", self->err.msg);
	EXPECT_NE(id_t, id);
	expect_table(_metadata, &self->dp, a, &u);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(i < 3 ? XLB_MEMBER_ACTIVE : XLB_MEMBER_GONE,
			  member_state(&self->dp, a, i)) TH_LOG("backend %u", i);
	xlb_table_free(&t);
	xlb_table_free(&u);
}

/*
 * A rewrite in place that stopped halfway (its writer killed) leaves the
 * header flag set: reading the table says so instead of returning a
 * table that is neither, and the next publication makes it whole.
 */
TEST_F(dp, table_left_half_rewritten_is_refused_then_repaired)
{
	struct xlb_table t, u, back = { 0 };
	__u32 vip = 7, m = 509, id;
	size_t len = 4096 * ((XLB_TABLE_BYTES(509) + 4095) / 4096);
	volatile __u32 *w;
	int fd;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, m, 5));
	ASSERT_EQ(0, table_make(&u, XLB_ALGO_MAGLEV, m, 8));
	ASSERT_NE(0, xlb_table_diff(&t, &u));
	ASSERT_EQ(0, xlb_dp_table_publish(&self->dp, vip, &t, &self->err));
	id = inner_id(&self->dp, m, vip);
	fd = inner_open(&self->dp, m, vip);
	ASSERT_LE(0, fd);
	w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, (void *)w);
	/* what a writer stopped after its first slot leaves */
	w[0] |= XLB_TABLE_HDR_WRITING;
	w[1] = *(__u32 *)&u.slots[0];
	EXPECT_EQ(-EBUSY, xlb_dp_table_read(&self->dp, vip, &back, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "being rewritten"))
		TH_LOG("%s", self->err.msg);
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, xlb_dp_table_publish(&self->dp, vip, &u, &self->err));
	EXPECT_EQ(id, inner_id(&self->dp, m, vip));
	EXPECT_EQ(m, w[0]) TH_LOG("header flag left set: 0x%x", w[0]);
	ASSERT_EQ(0, xlb_dp_table_read(&self->dp, vip, &back, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(0, xlb_table_diff(&u, &back));
	EXPECT_EQ(0, memcmp(u.slots, back.slots, m * sizeof(*u.slots)));
	munmap((void *)w, len);
	xlb_table_free(&back);
	xlb_table_free(&t);
	xlb_table_free(&u);
}

TEST_F(dp, table_publish_bad_input_fails_cleanly)
{
	static const __u32 bad_ids[] = { XLB_MAX_VIPS, 0xffffffffu };
	struct xlb_table t, bad;
	__u32 map_id, vip;
	size_t i;
	int c;

	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 251, 3));
	for (i = 0; i < ARRAY_SIZE(bad_ids); i++) {
		struct xlb_err err = { "" };

		vip = bad_ids[i];
		EXPECT_EQ(-EINVAL, xlb_dp_table_publish(&self->dp, vip, &t,
							&err));
		EXPECT_NE(NULL, strstr(err.msg, "out of range"))
			TH_LOG("\"%s\"", err.msg);
		EXPECT_EQ(-EINVAL, xlb_dp_table_unpublish(&self->dp, vip));
	}
	bad = t;
	bad.size = 250;		/* not one of the primes */
	EXPECT_EQ(-EINVAL, xlb_dp_table_publish(&self->dp, 1, &bad,
						&self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "size 250"));
	TH_LOG("%s", self->err.msg);
	/*
	 * No table anywhere: every id of t's size, VIP 1 at every size (on
	 * 6.1 each lookup in a map of maps waits for a grace period: not
	 * every id at every size)
	 */
	c = (int)xlb_table_class(251) - 1;
	for (vip = 0; vip < XLB_MAX_VIPS; vip++)
		ASSERT_NE(0, bpf_map_lookup_elem(self->dp.tables[c], &vip,
						 &map_id))
			TH_LOG("a failed publish left a table at %u", vip);
	vip = 1;
	for (c = 0; c < XLB_TABLE_CLASSES; c++)
		ASSERT_NE(0, bpf_map_lookup_elem(self->dp.tables[c], &vip,
						 &map_id))
			TH_LOG("a failed publish left VIP 1 a table of size %u",
			       xlb_table_sizes[c]);
	for (vip = 0; vip < XLB_MAX_VIPS; vip++)
		ASSERT_EQ(XLB_TABLE_CLASS_NONE, self->dp.vip_class[vip]);
	xlb_table_free(&t);
}

/* An outer map whose template is not the one of bpf/maps.h refuses, clearly. */
TEST_F(dp, table_publish_refused_by_a_foreign_template)
{
	__u32 c = xlb_table_class(509), vip = 4, map_id;
	struct xlb_table t, back = { 0 };
	int tmpl;

	close(self->dp.tables[c - 1]);
	tmpl = map_new(BPF_MAP_TYPE_ARRAY, "xlb_table_map", 4,
		       XLB_TABLE_BYTES(509), 1, 0, 0);	/* not mmapable */
	ASSERT_LE(0, tmpl);
	self->dp.tables[c - 1] = map_new(BPF_MAP_TYPE_ARRAY_OF_MAPS, "xlb_tab_509",
					 4, 4, XLB_MAX_VIPS, 0, tmpl);
	close(tmpl);
	ASSERT_LE(0, self->dp.tables[c - 1]);
	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 509, 4));
	EXPECT_EQ(-EINVAL, xlb_dp_table_publish(&self->dp, vip, &t, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "xlb_tab_509 refused"))
		TH_LOG("%s", self->err.msg);
	EXPECT_NE(0, bpf_map_lookup_elem(self->dp.tables[c - 1], &vip, &map_id));
	EXPECT_EQ(XLB_TABLE_CLASS_NONE, self->dp.vip_class[vip]);
	EXPECT_EQ(-ENOENT, xlb_dp_table_read(&self->dp, vip, &back, &self->err));
	/* other sizes are unaffected */
	publish_and_check(_metadata, &self->dp, vip, XLB_ALGO_MAGLEV, 251, 4);
	xlb_table_free(&t);
}

/* --- counters ------------------------------------------------------------- */

TEST_F(dp, counters_sum_over_cpus)
{
	int n = self->dp.ncpus, cpu, i;
	__u64 per = (__u64)n * (n + 1) / 2;	/* 1 + 2 + ... + n */
	struct xlb_vip_stats *vs = calloc(n, sizeof(*vs)), vsum;
	struct xlb_counter *bc = calloc(n, sizeof(*bc)), bsum;
	__u64 *u = calloc(n, sizeof(*u)), ev[XLB_EV_MAX], act[XLB_ACTIONS];
	__u32 key;

	ASSERT_NE(NULL, vs);
	ASSERT_NE(NULL, bc);
	ASSERT_NE(NULL, u);
	for (cpu = 0; cpu < n; cpu++) {
		vs[cpu] = (struct xlb_vip_stats){ cpu + 1, 10 * (cpu + 1),
			100 * (cpu + 1), 1000 * (cpu + 1), 7, 3 * (cpu + 1) };
		bc[cpu] = (struct xlb_counter){ cpu + 1, 1500 * (cpu + 1) };
	}
	key = 17;
	ASSERT_EQ(0, bpf_map_update_elem(self->dp.vip_stats, &key, vs, 0));
	key = 300;
	ASSERT_EQ(0, bpf_map_update_elem(self->dp.backend_stats, &key, bc, 0));
	for (i = 0; i < XLB_EV_IN_MAP; i++) {
		for (cpu = 0; cpu < n; cpu++)
			u[cpu] = (__u64)(i + 1) * (cpu + 1);
		key = i;
		ASSERT_EQ(0, bpf_map_update_elem(self->dp.events, &key, u, 0));
	}
	/* ct_guard: the guard map's refusals, summed like the others */
	{
		struct xlb_ct_guard *g = calloc(n, sizeof(*g));

		ASSERT_NE(NULL, g);
		for (cpu = 0; cpu < n; cpu++)
			g[cpu] = (struct xlb_ct_guard){ .credits = 5,
				.stamp = 9, .rate = 3,
				.refused = (__u64)(XLB_EV_CT_GUARD + 1) *
					   (cpu + 1) };
		key = 0;
		ASSERT_EQ(0, bpf_map_update_elem(self->dp.ct_guard, &key, g,
						 0));
		free(g);
	}
	for (i = 0; i < XLB_ACTIONS; i++) {
		for (cpu = 0; cpu < n; cpu++)
			u[cpu] = (__u64)1 << (i * 8);
		key = i;
		ASSERT_EQ(0, bpf_map_update_elem(self->dp.actions, &key, u, 0));
		/* the link of ifindex 7 (slot 7), and the last slot */
		for (cpu = 0; cpu < n; cpu++)
			u[cpu] = (__u64)3 << (i * 8);
		key = 7 * XLB_ACTIONS + i;
		ASSERT_EQ(0, bpf_map_update_elem(self->dp.actions, &key, u, 0));
		key = (XLB_LINK_SLOTS - 1) * XLB_ACTIONS + i;
		ASSERT_EQ(0, bpf_map_update_elem(self->dp.actions, &key, u, 0));
	}

	ASSERT_EQ(0, xlb_dp_vip_stats(&self->dp, 17, &vsum));
	EXPECT_EQ(per, vsum.packets);
	EXPECT_EQ(10 * per, vsum.bytes);
	EXPECT_EQ(100 * per, vsum.new_flows);
	EXPECT_EQ(1000 * per, vsum.ct_hits);
	EXPECT_EQ(7ULL * n, vsum.ct_misses);
	EXPECT_EQ(3 * per, vsum.cache_hits);
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->dp, 16, &vsum));
	EXPECT_EQ(0, vsum.packets);
	EXPECT_EQ(-EINVAL, xlb_dp_vip_stats(&self->dp, XLB_MAX_VIPS, &vsum));

	ASSERT_EQ(0, xlb_dp_backend_stats(&self->dp, 300, &bsum));
	EXPECT_EQ(per, bsum.packets);
	EXPECT_EQ(1500 * per, bsum.bytes);

	ASSERT_EQ(0, xlb_dp_events(&self->dp, ev));
	for (i = 0; i < XLB_EV_MAX; i++)
		EXPECT_EQ((__u64)(i + 1) * per, ev[i]) TH_LOG("event %d", i);
	ASSERT_EQ(0, xlb_dp_actions(&self->dp, act));
	for (i = 0; i < XLB_ACTIONS; i++)
		EXPECT_EQ((__u64)7 * n << (i * 8), act[i]) TH_LOG("action %d", i);
	/* per link: its slot only, ifindexes XLB_LINK_SLOTS apart share one */
	ASSERT_EQ(0, xlb_dp_link_actions(&self->dp, 7, act));
	for (i = 0; i < XLB_ACTIONS; i++)
		EXPECT_EQ((__u64)3 * n << (i * 8), act[i]) TH_LOG("action %d", i);
	ASSERT_EQ(0, xlb_dp_link_actions(&self->dp, 7 + XLB_LINK_SLOTS, act));
	EXPECT_EQ((__u64)3 * n, act[0]);
	ASSERT_EQ(0, xlb_dp_link_actions(&self->dp, 0, act));
	EXPECT_EQ((__u64)n << 8, act[1]);
	ASSERT_EQ(0, xlb_dp_link_actions(&self->dp, 8, act));
	EXPECT_EQ(0, act[0] + act[1] + act[2] + act[3] + act[4]);
	TH_LOG("%d possible CPUs", n);
	free(vs);
	free(bc);
	free(u);
}

TEST(event_names_stable)
{
	static const char *const want[XLB_EV_MAX] = {
		"malformed", "fragment", "no_backend", "too_big", "no_route",
		"no_neigh", "unsupported", "no_table", "icmp_steered",
		"icmp_echo", "too_big_stack", "too_big_silent",
		"too_big_limited", "bounded", "ct_guard",
	};
	int i;

	for (i = 0; i < XLB_EV_MAX; i++)
		EXPECT_STREQ(want[i], xlb_event_name(i));
	EXPECT_EQ(NULL, xlb_event_name(XLB_EV_MAX));
	EXPECT_EQ(NULL, xlb_event_name(-1));
}

/* --- connection table ----------------------------------------------------- */

/* The connection table is indexed with the key derived from the config. */
static void ct_config(struct xlb_dp *dp)
{
	struct xlb_config c;

	xlb_config_defaults(&c);
	c.key = TEST_KEY;
	xlb_dp_config_set(dp, &c);
}

TEST_F(dp, ct_lookup_count_flush)
{
	const __u32 n = 10000;
	struct xlb_rand r = { 0x6374 };
	struct xlb_flow f, first;
	struct xlb_ct ct, got;
	__u32 i, count;

	ct_config(&self->dp);
	for (i = 0; i < n; i++) {
		xlb_rand_flow(&r, &f, i & 1 ? XLB_FAMILY_INET6 :
				      XLB_FAMILY_INET);
		ct = (struct xlb_ct){ .last_seen = i, .epoch = 3, .hash = i,
				      .backend = (__u16)(i % 100),
				      .vip = 1 };
		ASSERT_EQ(0, xlb_dp_ct_insert(&self->dp, &f, &ct, 1));
		if (!i)
			first = f;
	}
	/* 10 000 flows in 262 144 buckets of 4: none is pushed out */
	ASSERT_EQ(0, xlb_dp_ct_count(&self->dp, &count));
	EXPECT_EQ(n, count);
	ASSERT_EQ(0, xlb_dp_ct_lookup(&self->dp, &first, &got));
	EXPECT_EQ(0, got.last_seen);
	EXPECT_EQ(3, got.epoch);
	EXPECT_EQ(0, got.hash);
	EXPECT_EQ(0, got.backend);
	EXPECT_EQ(1, got.vip);
	/* an entry written again is one entry */
	ct = (struct xlb_ct){ .last_seen = 7, .epoch = 4, .backend = 9 };
	ASSERT_EQ(0, xlb_dp_ct_insert(&self->dp, &first, &ct, 1));
	ASSERT_EQ(0, xlb_dp_ct_count(&self->dp, &count));
	EXPECT_EQ(n, count);
	ASSERT_EQ(0, xlb_dp_ct_lookup(&self->dp, &first, &got));
	EXPECT_EQ(9, got.backend);
	EXPECT_EQ(4, got.epoch);

	ASSERT_EQ(0, xlb_dp_ct_flush(&self->dp));
	ASSERT_EQ(0, xlb_dp_ct_count(&self->dp, &count));
	EXPECT_EQ(0, count);
	EXPECT_EQ(-ENOENT, xlb_dp_ct_lookup(&self->dp, &first, &got));
	/* flushing an empty table is fine */
	EXPECT_EQ(0, xlb_dp_ct_flush(&self->dp));
}

/* --- tx ports ------------------------------------------------------------- */

TEST_F(dp, tx_port_add_del)
{
	__u32 lo = if_nametoindex("lo"), v;

	ASSERT_NE(0, lo);
	ASSERT_EQ(0, xlb_dp_tx_port_add(&self->dp, lo));
	ASSERT_EQ(0, bpf_map_lookup_elem(self->dp.tx_ports, &lo, &v));
	EXPECT_EQ(lo, v);
	EXPECT_EQ(0, xlb_dp_tx_port_add(&self->dp, lo)) TH_LOG("idempotent");
	ASSERT_EQ(0, xlb_dp_tx_port_del(&self->dp, lo));
	EXPECT_EQ(-ENOENT, xlb_dp_tx_port_del(&self->dp, lo));
	EXPECT_EQ(-EINVAL, xlb_dp_tx_port_add(&self->dp, 0));
}

/* --- opening the maps ----------------------------------------------------- */

#define TABLE_PIN(c, m)	XLB_MAP_TABLES #m,
static const char *const pin_names[] = {
	XLB_MAP_CONFIG, XLB_MAP_VIPS, XLB_MAP_BACKENDS,
	XLB_MAP_CONNTRACK, XLB_MAP_VIP_STATS, XLB_MAP_BACKEND_STATS,
	XLB_MAP_EVENTS, XLB_MAP_ACTIONS, XLB_MAP_TX_PORTS, XLB_MAP_VIP_INDEX,
	XLB_MAP_ABI, XLB_PIN_GEN, XLB_MAP_FLOW_CACHE, XLB_MAP_CT_GUARD,
	XLB_MAP_MEMBERS, XLB_MAP_QUIC_SIDS, XLB_MAP_QUIC_STATS,
	XLB_MAP_BE_CONNS, XLB_TABLE_SIZES_X(TABLE_PIN)
};

static int pin(const char *dir, const char *name, int fd)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	return bpf_obj_pin(fd, path);
}

/* Adopting pins sees the same maps; missing or foreign maps are refused. */
TEST_F(dp, from_pins)
{
	char dir[] = "/tmp/xlb-dp-test-XXXXXX";
#define TABLE_FD(c, m)	self->dp.tables[(c) - 1],
	const int fds[] = {
		self->dp.config, self->dp.vips,
		self->dp.backends, self->dp.conntrack, self->dp.vip_stats,
		self->dp.backend_stats, self->dp.events, self->dp.actions,
		self->dp.tx_ports, self->dp.vip_index, self->dp.abi,
		self->dp.gen, self->dp.flow_cache, self->dp.ct_guard,
		self->dp.members, self->dp.quic_sids, self->dp.quic_stats,
		self->dp.be_conns, XLB_TABLE_SIZES_X(TABLE_FD)
	};
	struct xlb_vip_key k = vip4("203.0.113.30", 80, IPPROTO_TCP);
	struct xlb_vip v = { .id = 12 }, got;
	struct xlb_table t, back = { 0 };
	struct xlb_dp pinned, again;
	char path[256], want[64];
	int other;
	size_t i;

	/* a private mount namespace and bpffs: nothing leaks out of the test */
	ASSERT_EQ(0, unshare(CLONE_NEWNS)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("bpf", dir, "bpf", 0, NULL))
		TH_LOG("mount bpffs: %s", strerror(errno));
	for (i = 0; i < ARRAY_SIZE(fds); i++)
		ASSERT_EQ(0, pin(dir, pin_names[i], fds[i]));

	ASSERT_EQ(0, xlb_dp_from_pins(&pinned, dir, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(self->dp.ncpus, pinned.ncpus);
	ASSERT_EQ(0, xlb_dp_vip_set(&pinned, &k, &v, &self->err));
	ASSERT_EQ(0, xlb_dp_vip_get(&self->dp, &k, &got));
	EXPECT_EQ(12, got.id);
	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 251, 4));
	ASSERT_EQ(0, xlb_dp_table_publish(&pinned, 12, &t, &self->err));
	/* the fixture's dp did not publish it: it learns the size on opening */
	ASSERT_EQ(0, xlb_dp_from_pins(&again, dir, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(xlb_table_class(251), again.vip_class[12]);
	ASSERT_EQ(0, xlb_dp_table_read(&again, 12, &back, &self->err));
	EXPECT_EQ(0, memcmp(t.slots, back.slots, 251 * sizeof(*t.slots)));
	xlb_dp_close(&again);
	xlb_table_free(&t);
	xlb_table_free(&back);
	xlb_dp_close(&pinned);
	EXPECT_EQ(-1, pinned.vips);

	/* a foreign map under a known name */
	ASSERT_EQ(0, pin(dir, XLB_MAP_VIPS, self->dp.backends));
	EXPECT_EQ(-EINVAL, xlb_dp_from_pins(&pinned, dir, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "map xlb_vips"))
		TH_LOG("%s", self->err.msg);
	TH_LOG("%s", self->err.msg);
	EXPECT_EQ(-1, pinned.config) TH_LOG("fds left open after an error");

	/* another data path ABI: named as such, before any other map */
	ASSERT_EQ(0, pin(dir, XLB_MAP_VIPS, self->dp.vips));
	other = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_MAP_ABI, 4, 1,
			       XLB_DP_ABI + 1, NULL);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, pin(dir, XLB_MAP_ABI, other));
	close(other);
	ASSERT_EQ(0, pin(dir, XLB_MAP_CONFIG, self->dp.vips));
	EXPECT_EQ(-EPROTO, xlb_dp_from_pins(&pinned, dir, &self->err));
	snprintf(want, sizeof(want),
		 "of data path ABI %u, this build of xlb speaks ABI %u",
		 XLB_DP_ABI + 1, XLB_DP_ABI);
	EXPECT_NE(NULL, strstr(self->err.msg, want))
		TH_LOG("%s", self->err.msg);
	TH_LOG("%s", self->err.msg);
	EXPECT_EQ(-1, pinned.abi) TH_LOG("fds left open after an error");
	ASSERT_EQ(0, pin(dir, XLB_MAP_CONFIG, self->dp.config));
	/* a data path from before the ABI map */
	snprintf(path, sizeof(path), "%s/%s", dir, XLB_MAP_ABI);
	ASSERT_EQ(0, unlink(path));
	EXPECT_EQ(-ENOENT, xlb_dp_from_pins(&pinned, dir, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "from before data path ABIs"))
		TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, pin(dir, XLB_MAP_ABI, self->dp.abi));
	ASSERT_EQ(0, xlb_dp_from_pins(&pinned, dir, &self->err))
		TH_LOG("the pins put back: %s", self->err.msg);
	xlb_dp_close(&pinned);

	/* a generation the daemon could not increment (not mmapable) */
	other = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_MAP_GEN, 4, 4, 1, NULL);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, pin(dir, XLB_PIN_GEN, other));
	close(other);
	EXPECT_GT(0, xlb_dp_from_pins(&pinned, dir, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "cannot map " XLB_MAP_GEN))
		TH_LOG("%s", self->err.msg);
	TH_LOG("%s", self->err.msg);
	EXPECT_EQ(-1, pinned.gen) TH_LOG("fds left open after an error");
	EXPECT_EQ(NULL, pinned.gen_map);
	ASSERT_EQ(0, pin(dir, XLB_PIN_GEN, self->dp.gen));

	/* a missing map */
	snprintf(path, sizeof(path), "%s/%s", dir, XLB_MAP_EVENTS);
	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, pin(dir, XLB_MAP_VIPS, self->dp.vips));
	EXPECT_EQ(-ENOENT, xlb_dp_from_pins(&pinned, dir, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, path))
		TH_LOG("%s", self->err.msg);
	TH_LOG("%s", self->err.msg);

	for (i = 0; i < ARRAY_SIZE(pin_names); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, pin_names[i]);
		unlink(path);
	}
	umount(dir);
	rmdir(dir);
}

/* The real data path object: its maps pass the layout checks. */
TEST(from_obj_real_data_path)
{
	struct xlb_err err = { "" };
	struct xlb_table t, back = { 0 };
	struct xlb_bpf *skel;
	struct xlb_dp dp;

	skel = xlb_bpf__open();
	ASSERT_NE(NULL, skel);
	EXPECT_EQ(-EBADF, xlb_dp_from_obj(&dp, skel->obj, &err));
	EXPECT_NE(NULL, strstr(err.msg, "load the object first"));
	ASSERT_EQ(0, xlb_bpf__load(skel)) TH_LOG("cannot load xlb.bpf.o: %s",
						 strerror(errno));
	ASSERT_EQ(0, xlb_dp_from_obj(&dp, skel->obj, &err))
		TH_LOG("%s", err.msg);
	ASSERT_EQ(0, table_make(&t, XLB_ALGO_MAGLEV, 251, 4));
	ASSERT_EQ(0, xlb_dp_table_publish(&dp, 1, &t, &err))
		TH_LOG("%s", err.msg);
	ASSERT_EQ(0, xlb_dp_table_read(&dp, 1, &back, &err));
	EXPECT_EQ(0, memcmp(t.slots, back.slots, 251 * sizeof(*t.slots)));
	xlb_table_free(&t);
	xlb_table_free(&back);
	/* dp has descriptors of its own: closing the object first is fine */
	xlb_bpf__destroy(skel);
	ASSERT_EQ(0, xlb_dp_table_unpublish(&dp, 1));
	xlb_dp_close(&dp);
}

/* Address of a kernel symbol from /proc/kallsyms, 0 if hidden or absent. */
static unsigned long long ksym(const char *name)
{
	unsigned long long a, found = 0;
	char type, sym[256], line[512];
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 &&
		    !strcmp(sym, name))
			found = a;
	fclose(f);
	return found;
}

/*
 * No lookup of the data path goes through the generic helper: every map
 * is known at its call site, so the verifier inlines array lookups (or
 * calls the map's own function).  Generic calls appear when the compiler
 * merges lookups of different maps (Makefile: -simplifycfg-sink-common).
 */
TEST(data_path_map_lookups_name_their_map)
{
	unsigned long long generic = ksym("bpf_map_lookup_elem");
	unsigned long long base = ksym("__bpf_call_base");
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n, i, calls = 0, bad = 0;
	struct bpf_insn *insns;
	struct xlb_bpf *skel;
	int fd;

	if (!generic || !base)
		SKIP(return, "kernel addresses are hidden (kptr_restrict)");
	skel = xlb_bpf__open_and_load();
	ASSERT_NE(NULL, skel);
	fd = bpf_program__fd(skel->progs.xlb_main);
	ASSERT_EQ(0, bpf_obj_get_info_by_fd(fd, &info, &len));
	n = info.xlated_prog_len / sizeof(*insns);
	insns = calloc(n, sizeof(*insns));
	ASSERT_NE(NULL, insns);
	memset(&info, 0, sizeof(info));
	info.xlated_prog_len = n * sizeof(*insns);
	info.xlated_prog_insns = (__u64)(unsigned long)insns;
	len = sizeof(info);
	ASSERT_EQ(0, bpf_obj_get_info_by_fd(fd, &info, &len));
	for (i = 0; i < n; i++) {
		if (insns[i].code != (BPF_JMP | BPF_CALL) || insns[i].src_reg)
			continue;	/* not a helper call */
		calls++;
		if (!insns[i].imm)
			SKIP(goto out, "call targets are hidden in the dump");
		bad += (unsigned long long)((long long)base + insns[i].imm) ==
		       generic;
	}
	EXPECT_EQ(0, bad) TH_LOG("%u of %u helper calls are the generic map lookup",
				 bad, calls);
	EXPECT_LT(0, calls);
out:
	free(insns);
	xlb_bpf__destroy(skel);
}

TEST(from_obj_names_missing_map)
{
	struct xlb_err err = { "" };
	struct flow_hash_bpf *skel;
	struct xlb_dp dp;

	skel = flow_hash_bpf__open();
	ASSERT_NE(NULL, skel);
	EXPECT_EQ(-ENOENT, xlb_dp_from_obj(&dp, skel->obj, &err));
	EXPECT_NE(NULL, strstr(err.msg, "no map named " XLB_MAP_ABI))
		TH_LOG("%s", err.msg);
	flow_hash_bpf__destroy(skel);
}

TEST_HARNESS_MAIN
