/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture of the packet-level suite of the XDP data path
 * (tests/bpf/xlb_*.c): the real program (build/xlb.skel.h) loaded, its maps
 * populated through libxlb exactly as xlbd does (xlb_dp_config_set,
 * xlb_dp_backend_set, xlb_table_build + xlb_dp_table_publish,
 * xlb_dp_vip_set, which also keeps the address markers of structs.h), and
 * packets run through it with BPF_PROG_TEST_RUN.
 *
 * Expectations never come from the program's own headers: the backend a
 * flow must reach is libxlb's xlb_explain_pick over the table the fixture
 * published, and every frame the program emits is checked by the
 * independent parsers of tools/lib/pkt.h (pkt_parse_outer for tunnels,
 * pkt_parse for ICMP answers).
 *
 * Layout:
 *   backends  four groups of LB_GROUP_SIZE, one per way of reaching a
 *             backend: IPIP over IPv4 (ids 0..), IPIP over IPv6 (16..),
 *             GUE over IPv4 (32..), GUE over IPv6 (48..); all with a fixed
 *             next hop (XLB_BE_F_NEXTHOP, dmac/smac), so no FIB lookup.
 *   VIPs      LB_KINDS kinds (lb_kinds[]), each once for IPv4 and once for
 *             IPv6 clients; a VIP's table is Maglev over the first
 *             LB_TABLE_BACKENDS backends of its group.
 */
#ifndef XLB_TESTS_LB_FIXTURE_H
#define XLB_TESTS_LB_FIXTURE_H

#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "datapath.h"
#include "explain.h"
#include "lookup_table.h"
#include "pkt.h"
#include "rand.h"
#include "structs.h"
#include "xlb.skel.h"

#define LB_KEY_K0		0x786c622d74657374ULL	/* "xlb-test" */
#define LB_KEY_K1		0x7061636b65747321ULL	/* "packets!" */
#define LB_SRC4			"203.0.113.1"
#define LB_SRC6			"2001:db8:ff::1"
#define LB_OVERRIDE4		"203.0.113.99"
#define LB_OVERRIDE6		"2001:db8:ff::99"
#define LB_GUE_PORT		7080	/* not the default */
#define LB_MTU			1500
#define LB_TTL			37	/* not the default */
#define LB_UDP_IDLE		30
#define LB_CLIENT4		"192.0.2.1"
#define LB_CLIENT6		"2001:db8::1"

#define LB_BUF			4096	/* input frames, data_out */
#define LB_M_SMALL		1021
#define LB_M_LARGE		XLB_TABLE_SIZE_DEFAULT

/* --- backends ------------------------------------------------------------ */

enum lb_group {
	G_IPIP4,		/* IPIP / 6in4 over IPv4 */
	G_IPIP6,		/* 4in6 / ip6ip6 over IPv6 */
	G_GUE4,			/* GUE over IPv4 */
	G_GUE6,			/* GUE over IPv6 */
	LB_GROUPS,
};

#define LB_GROUP_SIZE		9	/* backends per group */
#define LB_GROUP_STRIDE		16	/* group g: g * 16 + 0..8 */
#define LB_TABLE_BACKENDS	4	/* a VIP's table: the first 4 */
#define LB_MAX_ID		(LB_GROUPS * LB_GROUP_STRIDE)

static const struct {
	const char *name;
	int family;
	int encap;
	const char *fmt;	/* address of backend i: fmt with i + 1 */
} lb_groups[LB_GROUPS] = {
	[G_IPIP4] = { "ipip4", XLB_FAMILY_INET, XLB_ENCAP_IPIP, "10.4.0.%d" },
	[G_IPIP6] = { "ipip6", XLB_FAMILY_INET6, XLB_ENCAP_IPIP, "fd00:4::%d" },
	[G_GUE4] = { "gue4", XLB_FAMILY_INET, XLB_ENCAP_GUE, "10.44.0.%d" },
	[G_GUE6] = { "gue6", XLB_FAMILY_INET6, XLB_ENCAP_GUE, "fd00:44::%d" },
};

static inline __u16 lb_id(int group, int i)
{
	return (__u16)(group * LB_GROUP_STRIDE + i);
}

/* --- VIPs ----------------------------------------------------------------- */

enum lb_addr {
	A_MAIN,			/* 5-tuple VIPs only: marker ADDR_ONLY */
	A_PORT0,		/* one port-0 VIP */
	A_3TUPLE,		/* a 3-tuple TCP VIP and a 5-tuple UDP VIP */
	A_SRC,			/* one source-hash VIP */
	A_ATOMIC,		/* the VIP the publication test republishes */
	LB_ADDRS,
};

static const char *const lb_addr4[LB_ADDRS] = {
	"198.51.100.10", "198.51.100.11", "198.51.100.12", "198.51.100.13",
	"198.51.100.14",
};

static const char *const lb_addr6[LB_ADDRS] = {
	"2001:db8:1::10", "2001:db8:1::11", "2001:db8:1::12", "2001:db8:1::13",
	"2001:db8:1::14",
};

enum lb_kind {
	K_TCP_IPIP4, K_TCP_IPIP6, K_TCP_GUE4, K_TCP_GUE6,
	K_UDP_IPIP4, K_UDP_IPIP6, K_UDP_GUE4, K_UDP_GUE6,
	K_STATELESS,		/* stateless, GUE over IPv4, M 65537 */
	K_OVERRIDE4,		/* own outer sources, IPIP over IPv4 */
	K_OVERRIDE6,		/* own outer sources, IPIP over IPv6 */
	K_PORT0,
	K_3TUPLE,
	K_3TUPLE_UDP5,		/* 5-tuple UDP VIP, 3-tuple address */
	K_SRCHASH,
	K_ATOMIC,		/* stateless, IPIP over IPv4 */
	LB_KINDS,
};

static const struct lb_kind_def {
	const char *name;
	int addr;		/* enum lb_addr */
	__u8 proto;
	__u16 port;
	__u32 flags;
	__u8 mode;
	int group;
	__u32 m;
	bool override;		/* src4/src6 of the VIP set */
} lb_kinds[LB_KINDS] = {
	[K_TCP_IPIP4] = { "tcp_ipip4", A_MAIN, IPPROTO_TCP, 80, 0,
			  XLB_HASH_5TUPLE, G_IPIP4, LB_M_LARGE },
	[K_TCP_IPIP6] = { "tcp_ipip6", A_MAIN, IPPROTO_TCP, 81, 0,
			  XLB_HASH_5TUPLE, G_IPIP6, LB_M_SMALL },
	[K_TCP_GUE4] = { "tcp_gue4", A_MAIN, IPPROTO_TCP, 82, 0,
			 XLB_HASH_5TUPLE, G_GUE4, LB_M_SMALL },
	[K_TCP_GUE6] = { "tcp_gue6", A_MAIN, IPPROTO_TCP, 83, 0,
			 XLB_HASH_5TUPLE, G_GUE6, LB_M_SMALL },
	[K_UDP_IPIP4] = { "udp_ipip4", A_MAIN, IPPROTO_UDP, 53, 0,
			  XLB_HASH_5TUPLE, G_IPIP4, LB_M_SMALL },
	[K_UDP_IPIP6] = { "udp_ipip6", A_MAIN, IPPROTO_UDP, 54, 0,
			  XLB_HASH_5TUPLE, G_IPIP6, LB_M_SMALL },
	[K_UDP_GUE4] = { "udp_gue4", A_MAIN, IPPROTO_UDP, 55, 0,
			 XLB_HASH_5TUPLE, G_GUE4, LB_M_SMALL },
	[K_UDP_GUE6] = { "udp_gue6", A_MAIN, IPPROTO_UDP, 56, 0,
			 XLB_HASH_5TUPLE, G_GUE6, LB_M_SMALL },
	[K_STATELESS] = { "stateless", A_MAIN, IPPROTO_TCP, 84,
			  XLB_VIP_F_STATELESS, XLB_HASH_5TUPLE, G_GUE4,
			  LB_M_LARGE },
	[K_OVERRIDE4] = { "override4", A_MAIN, IPPROTO_TCP, 85, 0,
			  XLB_HASH_5TUPLE, G_IPIP4, LB_M_SMALL, true },
	[K_OVERRIDE6] = { "override6", A_MAIN, IPPROTO_TCP, 86, 0,
			  XLB_HASH_5TUPLE, G_GUE6, LB_M_SMALL, true },
	[K_PORT0] = { "port0", A_PORT0, IPPROTO_TCP, 0, 0, XLB_HASH_5TUPLE,
		      G_IPIP4, LB_M_SMALL },
	[K_3TUPLE] = { "3tuple", A_3TUPLE, IPPROTO_TCP, 80, 0,
		       XLB_HASH_3TUPLE, G_IPIP4, LB_M_SMALL },
	[K_3TUPLE_UDP5] = { "3tuple_addr_udp5", A_3TUPLE, IPPROTO_UDP, 53, 0,
			    XLB_HASH_5TUPLE, G_GUE4, LB_M_SMALL },
	[K_SRCHASH] = { "srchash", A_SRC, IPPROTO_TCP, 80, 0, XLB_HASH_SRC,
			G_GUE4, LB_M_SMALL },
	[K_ATOMIC] = { "atomic", A_ATOMIC, IPPROTO_TCP, 80,
		       XLB_VIP_F_STATELESS, XLB_HASH_5TUPLE, G_IPIP4,
		       LB_M_SMALL },
};

#define LB_NVIPS		(2 * LB_KINDS)

#define LB_N(a)		(sizeof(a) / sizeof((a)[0]))

static const int lb_families[] = { XLB_FAMILY_INET, XLB_FAMILY_INET6 };

static inline const char *lb_fam_name(int family)
{
	return family == XLB_FAMILY_INET ? "IPv4" : "IPv6";
}

/*
 * For every kind of the array kinds, for IPv4 and for IPv6 clients: v is
 * the VIP, i counts.
 */
#define lb_for_each_vip(i, v, kinds)					\
	for ((i) = 0; (i) < 2 * LB_N(kinds) &&				\
	     ((v) = lb_vip(lb_families[(i) / LB_N(kinds)],		\
			   (kinds)[(i) % LB_N(kinds)]), 1); (i)++)

/* VIP index (= VIP id) of a kind for clients of a family. */
static inline int lb_vip(int family, int kind)
{
	return kind + (family == XLB_FAMILY_INET6 ? LB_KINDS : 0);
}

static inline int lb_vip_family(int v)
{
	return v < LB_KINDS ? XLB_FAMILY_INET : XLB_FAMILY_INET6;
}

static inline const struct lb_kind_def *lb_kind(int v)
{
	return &lb_kinds[v % LB_KINDS];
}

/* --- the fixture ---------------------------------------------------------- */

struct lb {
	struct xlb_bpf *skel;
	bool shared;				/* skel is lb_shared */
	int prog_fd;
	struct xlb_dp dp;
	struct xlb_config cfg;
	struct xlb_backend be[LB_MAX_ID];	/* as written, by id */
	struct xlb_table tbl[LB_NVIPS];		/* as published */
	struct xlb_vip vip[LB_NVIPS];
	struct xlb_vip_key key[LB_NVIPS];
};

static inline int lb_fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int lb_fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

static inline void lb_backend_addr(int group, int i, __be32 addr[4])
{
	char s[64];

	snprintf(s, sizeof(s), lb_groups[group].fmt, i + 1);
	pkt_addr(lb_groups[group].family, s, addr);
}

static inline int lb_addr_str(int family, const __be32 *a, char *s, size_t n)
{
	return inet_ntop(family == XLB_FAMILY_INET ? AF_INET : AF_INET6, a, s,
			 (socklen_t)n) ? 0 : -1;
}

/* Build a table (Maglev, the config's key) over backends ids[0..n). */
static inline int lb_table_ids(const struct lb *lb, const __u16 *ids, int n,
			       __u32 m, struct xlb_table *t, char *why,
			       size_t wn)
{
	struct xlb_table_params p = {
		.algo = XLB_ALGO_MAGLEV, .size = m,
		.vnodes = XLB_RING_VNODES_DEFAULT, .key = lb->cfg.key,
	};
	struct xlb_backend_spec spec[LB_MAX_ID];
	char names[LB_MAX_ID][INET6_ADDRSTRLEN];
	struct xlb_err err;
	int i;

	for (i = 0; i < n; i++) {
		const struct xlb_backend *b = &lb->be[ids[i]];

		lb_addr_str(b->family, b->addr, names[i], sizeof(names[i]));
		spec[i] = (struct xlb_backend_spec){
			.name = names[i], .weight = 1, .id = ids[i],
			.state = XLB_BACKEND_ACTIVE,
		};
	}
	if (xlb_table_build(t, &p, spec, (size_t)n, &err))
		return lb_fail(why, wn, "xlb_table_build: %s", err.msg);
	/*
	 * No member list: publishing adds the backends the slots name to
	 * the VIP's members and removes none, so a backend a table change
	 * left keeps its connections (as a drained one does).  The member
	 * tests of xlb_state.c set states themselves.
	 */
	free(t->members);
	t->members = NULL;
	t->n_members = 0;
	return 0;
}

static inline void lb_note_pub(__u32 size, __u32 vip);

/* Publish t as VIP v's table; the fixture owns t afterwards. */
static inline int lb_install(struct lb *lb, int v, struct xlb_table *t,
			     char *why, size_t wn)
{
	struct xlb_err err;

	if (xlb_dp_table_publish(&lb->dp, (__u32)v, t, &err)) {
		xlb_table_free(t);
		return lb_fail(why, wn, "xlb_dp_table_publish VIP %d: %s", v,
			       err.msg);
	}
	lb_note_pub(t->size, (__u32)v);
	xlb_table_free(&lb->tbl[v]);
	lb->tbl[v] = *t;
	memset(t, 0, sizeof(*t));
	return 0;
}

/* A table for VIP v over backends first..first+n-1 of its group. */
static inline int lb_table(const struct lb *lb, int v, int first, int n,
			   __u32 m, struct xlb_table *t)
{
	__u16 ids[LB_GROUP_SIZE];
	char why[256];
	int i;

	for (i = 0; i < n; i++)
		ids[i] = lb_id(lb_kind(v)->group, first + i);
	if (lb_table_ids(lb, ids, n, m, t, why, sizeof(why))) {
		fprintf(stderr, "# VIP %d: %s\n", v, why);
		return -1;
	}
	return 0;
}

/* Build and publish VIP v's table over first..first+n-1 of its group. */
static inline int lb_publish(struct lb *lb, int v, int first, int n,
			     __u32 m)
{
	struct xlb_table t;
	char why[256];

	if (lb_table(lb, v, first, n, m, &t))
		return -1;
	if (lb_install(lb, v, &t, why, sizeof(why))) {
		fprintf(stderr, "# %s\n", why);
		return -1;
	}
	return 0;
}

/*
 * One load per test program.  The verifier's pass over the data path is
 * most of what a fresh fixture costs (a second or more per load under
 * the vm tier's emulated CPU), so the object is loaded once, before the
 * harness forks its first test (each test runs in a child that inherits
 * the descriptors), and every test's setup first returns the maps to the
 * state of a fresh load (lb_reset): arrays zeroed, hash maps and map
 * slots emptied.  The program keeps no state outside its maps; the
 * read-only data is the loader's and is left alone.
 */
static struct xlb_bpf *lb_shared;
static int lb_shared_errno;

/*
 * The table slots the tests published (xlb_tab_<size>[vip]), in memory
 * the forked tests share with the harness, so that a reset empties those
 * and no others: on 6.1 every syscall on a map of maps, a lookup of an
 * empty slot included, waits for an RCU grace period (16 ms a slot in
 * the vm tier's guest).  Past LB_PUBS slots, every slot is emptied.
 */
#define LB_PUBS	256
struct lb_pubs {
	unsigned int n;
	bool overflow;
	struct {
		__u32 size;
		__u32 vip;
	} e[LB_PUBS];
};
static struct lb_pubs *lb_pubs;

__attribute__((constructor)) static void lb_shared_load(void)
{
	lb_pubs = mmap(NULL, sizeof(*lb_pubs), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (lb_pubs == MAP_FAILED) {
		lb_shared_errno = errno;
		lb_pubs = NULL;
		return;
	}
	lb_shared = xlb_bpf__open_and_load();
	lb_shared_errno = lb_shared ? 0 : errno;
}

/* Table of size `size` published for VIP vip (libxlb's xlb_tab_<size>). */
static inline void lb_note_pub(__u32 size, __u32 vip)
{
	unsigned int i;

	if (!lb_pubs)
		return;
	for (i = 0; i < lb_pubs->n; i++)
		if (lb_pubs->e[i].size == size && lb_pubs->e[i].vip == vip)
			return;
	if (lb_pubs->n == LB_PUBS) {
		lb_pubs->overflow = true;
		return;
	}
	lb_pubs->e[lb_pubs->n].size = size;
	lb_pubs->e[lb_pubs->n].vip = vip;
	lb_pubs->n++;
}

static inline int lb_map_reset(struct bpf_map *m)
{
	enum bpf_map_type t = bpf_map__type(m);
	__u32 n = bpf_map__max_entries(m), i;
	size_t vs = bpf_map__value_size(m), len;
	int fd = bpf_map__fd(m), ncpu, ret = 0;
	const char *name = bpf_map__name(m);
	__u32 *keys;
	void *vals;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (strstr(name, ".rodata") || strstr(name, ".kconfig"))
		return 0;
	switch (t) {
	case BPF_MAP_TYPE_ARRAY:
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		if (bpf_map__map_flags(m) & BPF_F_MMAPABLE) {
			len = ((vs + 7) & ~(size_t)7) * n;
			vals = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, 0);
			if (vals == MAP_FAILED)
				return -errno;
			memset(vals, 0, len);
			munmap(vals, len);
			return 0;
		}
		ncpu = t == BPF_MAP_TYPE_PERCPU_ARRAY ?
		       libbpf_num_possible_cpus() : 1;
		if (ncpu < 1)
			return -EINVAL;
		vs = ((vs + 7) & ~(size_t)7) * (size_t)ncpu;
		keys = malloc(sizeof(*keys) * n);
		vals = calloc(n, vs);
		if (!keys || !vals) {
			ret = -ENOMEM;
		} else {
			for (i = 0; i < n; i++)
				keys[i] = i;
			if (bpf_map_update_batch(fd, keys, vals, &n, &opts))
				ret = -errno;
		}
		free(keys);
		free(vals);
		return ret;
	case BPF_MAP_TYPE_ARRAY_OF_MAPS:
		return 0;	/* lb_reset: the slots lb_pubs lists */
	default: {
		/* hash maps: delete the first key until none is left */
		char key[256];

		if (bpf_map__key_size(m) > sizeof(key))
			return -E2BIG;
		while (!bpf_map_get_next_key(fd, NULL, key))
			if (bpf_map_delete_elem(fd, key))
				return -errno;
		return errno == ENOENT ? 0 : -errno;
	}
	}
}

static inline int lb_reset(struct xlb_bpf *skel, char *why, size_t wn)
{
	struct bpf_map *m;
	char name[32];
	unsigned int i;
	__u32 k;
	int ret;

	bpf_object__for_each_map(m, skel->obj) {
		if (bpf_map__type(m) != BPF_MAP_TYPE_ARRAY_OF_MAPS)
			continue;
		for (k = 0; lb_pubs->overflow && k < bpf_map__max_entries(m);
		     k++)
			if (bpf_map_delete_elem(bpf_map__fd(m), &k) &&
			    errno != ENOENT)
				return lb_fail(why, wn, "cannot empty %s[%u]: %s",
					       bpf_map__name(m), k,
					       strerror(errno));
	}
	for (i = 0; !lb_pubs->overflow && i < lb_pubs->n; i++) {
		k = lb_pubs->e[i].vip;
		snprintf(name, sizeof(name), "xlb_tab_%u", lb_pubs->e[i].size);
		m = bpf_object__find_map_by_name(skel->obj, name);
		if (!m)
			return lb_fail(why, wn, "no map %s", name);
		if (bpf_map_delete_elem(bpf_map__fd(m), &k) && errno != ENOENT)
			return lb_fail(why, wn, "cannot empty %s[%u]: %s",
				       name, k, strerror(errno));
	}
	lb_pubs->n = 0;
	lb_pubs->overflow = false;
	bpf_object__for_each_map(m, skel->obj) {
		ret = lb_map_reset(m);
		if (ret)
			return lb_fail(why, wn, "cannot empty map %s: %s",
				       bpf_map__name(m), strerror(-ret));
	}
	return 0;
}

/*
 * lb_init_ct: with a connection table of ct_entries (0: the object's
 * size, and the program loaded once for all tests), for tests that fill
 * it.
 */
static inline int lb_init_ct(struct lb *lb, __u32 ct_entries, char *why,
			     size_t wn)
{
	struct xlb_err err;
	int g, i, v;

	memset(lb, 0, sizeof(*lb));
	lb->dp.config = -1;
	if (!ct_entries && !lb_shared)
		return lb_fail(why, wn, "cannot load xlb.bpf.o: %s (needs root "
			       "and BPF)", strerror(lb_shared_errno));
	if (!ct_entries) {
		lb->skel = lb_shared;
		lb->shared = true;
		if (lb_reset(lb->skel, why, wn))
			return -1;
	} else {
		lb->skel = xlb_bpf__open();
	}
	if (lb->skel && ct_entries &&
	    bpf_map__set_max_entries(lb->skel->maps.xlb_conntrack, ct_entries)) {
		xlb_bpf__destroy(lb->skel);
		lb->skel = NULL;
	}
	if (lb->skel && !lb->shared && xlb_bpf__load(lb->skel)) {
		xlb_bpf__destroy(lb->skel);
		lb->skel = NULL;
	}
	if (!lb->skel)
		return lb_fail(why, wn, "cannot load xlb.bpf.o: %s (needs root "
			       "and BPF)", strerror(errno));
	lb->prog_fd = bpf_program__fd(lb->skel->progs.xlb_main);
	if (xlb_dp_from_obj(&lb->dp, lb->skel->obj, &err))
		return lb_fail(why, wn, "xlb_dp_from_obj: %s", err.msg);

	xlb_config_defaults(&lb->cfg);
	lb->cfg.key.k0 = LB_KEY_K0;
	lb->cfg.key.k1 = LB_KEY_K1;
	inet_pton(AF_INET, LB_SRC4, &lb->cfg.src4);
	inet_pton(AF_INET6, LB_SRC6, lb->cfg.src6);
	lb->cfg.gue_port = LB_GUE_PORT;
	lb->cfg.mtu = LB_MTU;
	lb->cfg.ttl = LB_TTL;
	lb->cfg.udp_idle_s = LB_UDP_IDLE;
	if (xlb_dp_config_set(&lb->dp, &lb->cfg))
		return lb_fail(why, wn, "xlb_dp_config_set: %s",
			       strerror(errno));

	for (g = 0; g < LB_GROUPS; g++) {
		for (i = 0; i < LB_GROUP_SIZE; i++) {
			__u16 id = lb_id(g, i);
			struct xlb_backend *b = &lb->be[id];
			static const __u8 smac[6] = { 0x02, 0xaa, 0, 0, 0, 1 };
			__u8 dmac[6] = { 0x02, 0xbb, 0, 0, (__u8)g, (__u8)i };

			memset(b, 0, sizeof(*b));
			b->family = (__u8)lb_groups[g].family;
			b->encap = (__u8)lb_groups[g].encap;
			b->flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP;
			lb_backend_addr(g, i, b->addr);
			memcpy(b->dmac, dmac, 6);
			memcpy(b->smac, smac, 6);
			if (xlb_dp_backend_set(&lb->dp, id, b, &err))
				return lb_fail(why, wn,
					       "xlb_dp_backend_set %u: %s",
					       id, err.msg);
			if (xlb_dp_backend_get(&lb->dp, id, b))
				return lb_fail(why, wn, "xlb_dp_backend_get %u",
					       id);
		}
	}

	for (v = 0; v < LB_NVIPS; v++) {
		const struct lb_kind_def *k = lb_kind(v);
		int fam = lb_vip_family(v);
		struct xlb_vip_key *key = &lb->key[v];
		struct xlb_vip *vip = &lb->vip[v];
		__u16 ids[LB_TABLE_BACKENDS];
		struct xlb_table t;

		for (i = 0; i < LB_TABLE_BACKENDS; i++)
			ids[i] = lb_id(k->group, i);
		if (lb_table_ids(lb, ids, LB_TABLE_BACKENDS, k->m, &t, why,
				 wn) || lb_install(lb, v, &t, why, wn))
			return -1;
		memset(key, 0, sizeof(*key));
		pkt_addr(fam, fam == XLB_FAMILY_INET ? lb_addr4[k->addr] :
			 lb_addr6[k->addr], key->addr);
		key->port = htons(k->port);
		key->proto = k->proto;
		key->family = (__u8)fam;
		memset(vip, 0, sizeof(*vip));
		vip->id = (__u32)v;
		vip->flags = k->flags;
		vip->hash_mode = k->mode;
		if (k->override) {
			inet_pton(AF_INET, LB_OVERRIDE4, &vip->src4);
			inet_pton(AF_INET6, LB_OVERRIDE6, vip->src6);
		}
		if (xlb_dp_vip_set(&lb->dp, key, vip, &err))
			return lb_fail(why, wn, "xlb_dp_vip_set %s/IPv%d: %s",
				       k->name, fam, err.msg);
	}
	return 0;
}

static inline int lb_init(struct lb *lb, char *why, size_t wn)
{
	return lb_init_ct(lb, 0, why, wn);
}

static inline void lb_fini(struct lb *lb)
{
	int v;

	for (v = 0; v < LB_NVIPS; v++)
		xlb_table_free(&lb->tbl[v]);
	if (lb->dp.config >= 0)
		xlb_dp_close(&lb->dp);
	if (!lb->shared)
		xlb_bpf__destroy(lb->skel);
	lb->skel = NULL;
}

/* --- packets -------------------------------------------------------------- */

/* Bytes for payloads: a recognisable pattern. */
static inline const __u8 *lb_pattern(void)
{
	static __u8 p[LB_BUF];
	static bool done;
	size_t i;

	if (!done) {
		for (i = 0; i < sizeof(p); i++)
			p[i] = (__u8)(i * 7 + 3);
		done = true;
	}
	return p;
}

/* A client packet to VIP v (port 0 VIP: to port 8080). */
static inline void lb_spec(const struct lb *lb, int v, struct pkt_spec *s)
{
	const struct lb_kind_def *k = lb_kind(v);
	int fam = lb_vip_family(v);

	pkt_spec_init(s, fam, k->proto);
	pkt_addr(fam, fam == XLB_FAMILY_INET ? LB_CLIENT4 : LB_CLIENT6,
		 s->src);
	memcpy(s->dst, lb->key[v].addr, 16);
	s->dport = k->port ? k->port : 8080;
	s->tcp_flags = PKT_TCP_SYN;
	s->payload = lb_pattern();
	s->payload_len = 32;
}

/* The flow a spec's packet carries, as the data path receives it. */
static inline struct xlb_flow lb_flow(const struct pkt_spec *s)
{
	struct xlb_flow f;

	memset(&f, 0, sizeof(f));
	f.family = (__u8)s->family;
	f.proto = (__u8)s->proto;
	memcpy(f.src.v6, s->src, 16);
	memcpy(f.dst.v6, s->dst, 16);
	f.sport = htons(s->sport);
	f.dport = htons(s->dport);
	return f;
}

/* What libxlb says a new flow of VIP v gets. */
static inline struct xlb_pick lb_pick(const struct lb *lb, int v,
				      const struct xlb_flow *f)
{
	struct xlb_pick p;

	xlb_explain_pick(&lb->cfg.key, lb->vip[v].hash_mode, &lb->tbl[v], f,
			 &p);
	return p;
}

/* The same with another table (not the published one). */
static inline struct xlb_pick lb_pick_in(const struct lb *lb, int v,
					 const struct xlb_table *t,
					 const struct xlb_flow *f)
{
	struct xlb_pick p;

	xlb_explain_pick(&lb->cfg.key, lb->vip[v].hash_mode, t, f, &p);
	return p;
}

static inline size_t lb_build(const struct pkt_spec *s, __u8 *buf)
{
	return pkt_build(s, buf, LB_BUF);
}

/* IP length the frame's IP header claims (0: not IP). */
static inline size_t lb_ip_len(const __u8 *f, size_t len, size_t *l3_off)
{
	struct pkt_l2 l2;
	char err[PKT_ERR_MAX];

	if (pkt_parse_l2(f, len, &l2, err))
		return 0;
	*l3_off = l2.l3_off;
	if (l2.ethertype == PKT_ETH_IP && len >= l2.l3_off + 20)
		return pkt_get16(f + l2.l3_off + 2);
	if (l2.ethertype == PKT_ETH_IPV6 && len >= l2.l3_off + 40)
		return 40 + (size_t)pkt_get16(f + l2.l3_off + 4);
	return 0;
}

/* --- running the program -------------------------------------------------- */

struct lb_res {
	int err;			/* bpf_prog_test_run_opts: -errno */
	__u32 retval;
	__u32 len;
	__u64 ev[XLB_EV_MAX];		/* events: after - before */
	__u64 act[XLB_ACTIONS];		/* actions: after - before */
	__u8 out[LB_BUF + 512];
};

/* Run once; with counters, r->ev and r->act hold what moved. */
static inline void lb_run_c(const struct lb *lb, const void *in, size_t len,
			    struct lb_res *r, bool counters)
{
	__u64 ev0[XLB_EV_MAX] = { 0 }, ev1[XLB_EV_MAX] = { 0 };
	__u64 ac0[XLB_ACTIONS] = { 0 }, ac1[XLB_ACTIONS] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = (__u32)len,
		.data_out = r->out,
		.data_size_out = sizeof(r->out),
		.repeat = 1,
	);
	int i;

	/*
	 * Test runs come in on the namespace's loopback: its link's
	 * counters (bpf/structs.h), five lookups instead of the whole map.
	 */
	if (counters) {
		xlb_dp_events(&lb->dp, ev0);
		xlb_dp_link_actions(&lb->dp, if_nametoindex("lo"), ac0);
	}
	r->err = bpf_prog_test_run_opts(lb->prog_fd, &opts) ? -errno : 0;
	r->retval = opts.retval;
	r->len = opts.data_size_out;
	if (counters) {
		xlb_dp_events(&lb->dp, ev1);
		xlb_dp_link_actions(&lb->dp, if_nametoindex("lo"), ac1);
	}
	for (i = 0; i < XLB_EV_MAX; i++)
		r->ev[i] = ev1[i] - ev0[i];
	for (i = 0; i < XLB_ACTIONS; i++)
		r->act[i] = ac1[i] - ac0[i];
}

static inline void lb_run(const struct lb *lb, const void *in, size_t len,
			  struct lb_res *r)
{
	lb_run_c(lb, in, len, r, true);
}

/*
 * Like lb_run, for long loops: reads the event counters once per packet;
 * ev holds the totals after the previous call (start from xlb_dp_events).
 * r->act is not filled.
 */
static inline void lb_run_ev(const struct lb *lb, const void *in, size_t len,
			     struct lb_res *r, __u64 ev[XLB_EV_MAX])
{
	__u64 now[XLB_EV_MAX] = { 0 };
	int i;

	lb_run_c(lb, in, len, r, false);
	xlb_dp_events(&lb->dp, now);
	for (i = 0; i < XLB_EV_MAX; i++) {
		r->ev[i] = now[i] - ev[i];
		ev[i] = now[i];
	}
}

static inline const char *lb_action(__u32 a)
{
	static const char *const n[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS",
					 "XDP_TX", "XDP_REDIRECT" };

	return a < 5 ? n[a] : "XDP_?";
}

static inline void lb_hex(const char *what, const void *p, size_t n)
{
	const __u8 *b = p;
	size_t i;

	fprintf(stderr, "#   %-6s(%zu)", what, n);
	for (i = 0; i < n && i < 160; i++)
		fprintf(stderr, "%s%02x", i % 16 == 0 ? "\n#     " :
			i % 4 == 0 ? " " : "", b[i]);
	fprintf(stderr, "%s\n", n > 160 ? " ..." : "");
}

static inline void lb_events_str(const __u64 *ev, char *s, size_t n)
{
	size_t off = 0;
	int i;

	s[0] = 0;
	for (i = 0; i < XLB_EV_MAX && off < n; i++)
		if (ev[i])
			off += (size_t)snprintf(s + off, n - off, " %s+%llu",
						xlb_event_name(i),
						(unsigned long long)ev[i]);
	if (!s[0])
		snprintf(s, n, " none");
}

static inline void lb_report(const char *what, const char *why,
			     const void *in, size_t len,
			     const struct lb_res *r)
{
	char ev[256];

	lb_events_str(r->ev, ev, sizeof(ev));
	fprintf(stderr, "# %s: %s\n#   got %s (err %d), %u bytes out, "
		"events:%s\n", what, why, lb_action(r->retval), r->err, r->len,
		ev);
	lb_hex("in", in, len);
	if (r->retval != XDP_DROP)
		lb_hex("out", r->out, r->len);
}

/* --- expectations --------------------------------------------------------- */

/* Any one event counter moved. */
static inline bool lb_any_event(const struct lb_res *r)
{
	int i;

	for (i = 0; i < XLB_EV_MAX; i++)
		if (r->ev[i] && i != XLB_EV_ICMP_STEERED)
			return true;
	return false;
}

/* XDP_PASS with the frame byte for byte as it came. */
static inline bool lb_expect_pass(const void *in, size_t len,
				  const struct lb_res *r, const char *what)
{
	if (!r->err && r->retval == XDP_PASS && r->len == len &&
	    !memcmp(r->out, in, len))
		return true;
	lb_report(what, r->retval == XDP_PASS ? "XDP_PASS but the frame "
		  "changed" : "want XDP_PASS, frame untouched", in, len, r);
	return false;
}

/* XDP_DROP counting event ev (once). */
static inline bool lb_expect_drop(const void *in, size_t len,
				  const struct lb_res *r, int ev,
				  const char *what)
{
	char why[128];

	if (!r->err && r->retval == XDP_DROP && r->ev[ev] == 1)
		return true;
	snprintf(why, sizeof(why), "want XDP_DROP counting event %s",
		 xlb_event_name(ev));
	lb_report(what, why, in, len, r);
	return false;
}

static inline const struct xlb_backend *lb_be(const struct lb *lb, __u16 id)
{
	return id < LB_MAX_ID ? &lb->be[id] : NULL;
}

/* The outer source a VIP's packets to backend b carry. */
static inline void lb_outer_src(const struct lb *lb, int v,
				const struct xlb_backend *b, __be32 src[4])
{
	const struct xlb_vip *vip = &lb->vip[v];
	static const __be32 zero[4];

	memset(src, 0, 16);
	if (b->family == XLB_FAMILY_INET)
		src[0] = vip->src4 ? vip->src4 : lb->cfg.src4;
	else
		memcpy(src, memcmp(vip->src6, zero, 16) ? vip->src6 :
		       lb->cfg.src6, 16);
}

/* Bytes the encapsulation toward b adds, from structs.h's description. */
static inline size_t lb_overhead(const struct xlb_backend *b)
{
	size_t ip = b->family == XLB_FAMILY_INET ? PKT_IP4_LEN : PKT_IP6_LEN;

	if (b->encap != XLB_ENCAP_GUE)
		return ip;
	return ip + PKT_UDP_LEN + PKT_GUE_LEN + 4 +
	       XLB_HOPS * pkt_addr_len(b->family);
}

#define LB_EXPLAIN	0xffffffffu	/* want: the table's primary */

/*
 * The frame is in's IP packet, encapsulated toward the backend VIP v
 * gives the flow (want = LB_EXPLAIN: xlb_explain_pick's primary, with the
 * hop list [primary, secondary]; else backend id want, hop 0 only):
 * XDP_TX, accepted by pkt_parse_outer, outer addresses, TTL, TOS, GUE
 * ports, Ethernet from the backend's next hop, tags kept, inner packet
 * byte for byte.  *o gets the parsed frame.
 */
static inline bool lb_expect_fwd(const struct lb *lb, int v,
				 const struct xlb_flow *f, const __u8 *in,
				 size_t len, const struct lb_res *r,
				 __u32 want, const char *what,
				 struct pkt_outer *o)
{
	struct pkt_outer tmp;
	struct pkt_l2 l2;
	struct xlb_pick p = lb_pick(lb, v, f);
	const struct xlb_backend *b, *sec = NULL;
	__be32 src[4];
	size_t l3_off = 0, ip_len;
	char why[256], e[PKT_ERR_MAX], a[INET6_ADDRSTRLEN], w[INET6_ADDRSTRLEN];
	int want_hops;

	if (!o)
		o = &tmp;
	memset(o, 0, sizeof(*o));
	ip_len = lb_ip_len(in, len, &l3_off);
	pkt_parse_l2(in, len, &l2, e);
	if (want == LB_EXPLAIN) {
		b = lb_be(lb, p.primary);
		if (p.secondary != XLB_BACKEND_NONE)
			sec = lb_be(lb, p.secondary);
	} else {
		b = lb_be(lb, (__u16)want);
	}
	if (!b) {
		snprintf(why, sizeof(why), "test bug: no backend %u (explain "
			 "primary %u)", want, p.primary);
		goto fail;
	}
	if (r->err || r->retval != XDP_TX) {
		snprintf(why, sizeof(why), "want XDP_TX");
		goto fail;
	}
	if (pkt_parse_outer(r->out, r->len, o)) {
		snprintf(why, sizeof(why), "pkt_parse_outer: %s", o->err);
		goto fail;
	}
	if (o->family != b->family || memcmp(o->dst, b->addr, 16)) {
		lb_addr_str(o->family, o->dst, a, sizeof(a));
		lb_addr_str(b->family, b->addr, w, sizeof(w));
		snprintf(why, sizeof(why), "outer dst %s, want backend %u %s "
			 "(hash %08x slot %u primary %u secondary %u)", a,
			 want == LB_EXPLAIN ? p.primary : want, w, p.hash,
			 p.slot, p.primary, p.secondary);
		goto fail;
	}
	lb_outer_src(lb, v, b, src);
	if (memcmp(o->src, src, 16)) {
		lb_addr_str(o->family, o->src, a, sizeof(a));
		lb_addr_str(b->family, src, w, sizeof(w));
		snprintf(why, sizeof(why), "outer src %s, want %s", a, w);
		goto fail;
	}
	if (o->encap != b->encap) {
		snprintf(why, sizeof(why), "encapsulation %d, backend has %d",
			 o->encap, b->encap);
		goto fail;
	}
	if (o->ttl != lb->cfg.ttl) {
		snprintf(why, sizeof(why), "outer TTL %u, config says %u",
			 o->ttl, lb->cfg.ttl);
		goto fail;
	}
	if (!ip_len || o->inner_len != ip_len || o->l2.l3_off != l3_off ||
	    l3_off + ip_len > len ||
	    memcmp(r->out + o->inner_off, in + l3_off, ip_len)) {
		snprintf(why, sizeof(why), "inner packet (%zu bytes at %zu) is "
			 "not the input's IP packet (%zu bytes at %zu)",
			 o->inner_len, o->inner_off, ip_len, l3_off);
		goto fail;
	}
	if (o->tos != (in[l3_off] >> 4 == 4 ? in[l3_off + 1] :
		       (__u8)(pkt_get32(in + l3_off) >> 20))) {
		snprintf(why, sizeof(why),
			 "outer TOS 0x%02x is not the inner's", o->tos);
		goto fail;
	}
	if (memcmp(o->l2.dst_mac, b->dmac, 6) ||
	    memcmp(o->l2.src_mac, b->smac, 6)) {
		snprintf(why, sizeof(why), "Ethernet addresses are not the "
			 "backend's next hop");
		goto fail;
	}
	if (o->l2.vlans != l2.vlans ||
	    memcmp(o->l2.vlan, l2.vlan, sizeof(l2.vlan))) {
		snprintf(why, sizeof(why), "VLAN tags %d, input had %d (or "
			 "another TCI)", o->l2.vlans, l2.vlans);
		goto fail;
	}
	if (b->encap == XLB_ENCAP_GUE) {
		if (o->dport != lb->cfg.gue_port) {
			snprintf(why, sizeof(why),
				 "GUE dport %u, config says %u", o->dport,
				 lb->cfg.gue_port);
			goto fail;
		}
		if (o->sport < 0xc000) {
			snprintf(why, sizeof(why), "GUE sport %u below 0xc000",
				 o->sport);
			goto fail;
		}
		if (o->hop_index != 0 || memcmp(o->hops[0], b->addr, 16)) {
			snprintf(why, sizeof(why), "hop list: index %u, hop 0 "
				 "not the backend", o->hop_index);
			goto fail;
		}
		if (want == LB_EXPLAIN) {
			want_hops = sec && sec->family == b->family &&
				    (sec->flags & XLB_BE_F_VALID) ? 2 : 1;
			if (o->hop_count != want_hops ||
			    (want_hops == 2 &&
			     memcmp(o->hops[1], sec->addr, 16))) {
				snprintf(why, sizeof(why), "hop list count %u, "
					 "want %d: [primary %u, secondary %u]",
					 o->hop_count, want_hops, p.primary,
					 p.secondary);
				goto fail;
			}
		}
	}
	if (r->len != ip_len + l3_off + lb_overhead(b)) {
		snprintf(why, sizeof(why), "frame of %u bytes, want %zu",
			 r->len, ip_len + l3_off + lb_overhead(b));
		goto fail;
	}
	return true;
fail:
	lb_report(what, why, in, len, r);
	return false;
}

/* Is the output the ICMP too-big answer (any correct one) to in? */
static inline bool lb_is_too_big_answer(const __u8 *in, size_t len,
					const struct lb_res *r,
					struct pkt_info *pi)
{
	size_t l3_off;

	if (pkt_parse(r->out, r->len, pi) || !pi->family)
		return false;
	if (!lb_ip_len(in, len, &l3_off))
		return false;
	if (pi->family == XLB_FAMILY_INET)
		return pi->proto == IPPROTO_ICMP && pi->icmp_type == 3 &&
		       pi->icmp_code == 4 &&
		       !memcmp(pi->dst, in + l3_off + 12, 4) &&
		       !memcmp(r->out + pi->payload_off, in + l3_off,
			       pi->payload_len);
	return pi->proto == IPPROTO_ICMPV6 && pi->icmp_type == 2 &&
	       pi->icmp_code == 0 && !memcmp(pi->dst, in + l3_off + 8, 16) &&
	       !memcmp(r->out + pi->payload_off, in + l3_off, pi->payload_len);
}

/* Outer dst is one of the fixture's valid backends. */
static inline bool lb_is_backend(const struct lb *lb, int family,
				 const __be32 *addr)
{
	int id;

	for (id = 0; id < LB_MAX_ID; id++)
		if ((lb->be[id].flags & XLB_BE_F_VALID) &&
		    lb->be[id].family == family &&
		    !memcmp(lb->be[id].addr, addr, 16))
			return true;
	return false;
}

/* addr (IPv4: 4 bytes, IPv6: 16, unaligned) is a VIP's address. */
static inline bool lb_is_vip_addr(const struct lb *lb, int family,
				  const __u8 *addr)
{
	int v;

	for (v = 0; v < LB_NVIPS; v++)
		if (lb->key[v].family == family &&
		    !memcmp(lb->key[v].addr, addr, pkt_addr_len(family)))
			return true;
	return false;
}

/*
 * Contract 8 for any input: XDP_TX/REDIRECT only with a correct tunnel of
 * the input's IP packet to a backend (or a correct too-big answer),
 * XDP_DROP only with an event counted, XDP_PASS only byte for byte (or,
 * counted as too_big_stack, an IPv4 tunnel with DF clear to a backend),
 * never XDP_ABORTED.  False with the reason in why.
 */
static inline bool lb_sane(const struct lb *lb, const __u8 *in, size_t len,
			   const struct lb_res *r, char *why, size_t wn)
{
	struct pkt_outer o;
	struct pkt_info pi;

	if (r->err) {
		snprintf(why, wn, "bpf_prog_test_run_opts failed: %s",
			 strerror(-r->err));
		return false;
	}
	switch (r->retval) {
	case XDP_PASS:
		if (r->len == len && !memcmp(r->out, in, len))
			return true;
		/* too big, IPv4 without DF: tunnelled, for the kernel */
		if (r->ev[XLB_EV_TOO_BIG_STACK] &&
		    !pkt_parse_outer(r->out, r->len, &o) && !o.df &&
		    o.family == XLB_FAMILY_INET &&
		    o.l2.l3_off + o.inner_len <= len &&
		    !memcmp(r->out + o.inner_off, in + o.l2.l3_off,
			    o.inner_len) &&
		    lb_is_backend(lb, o.family, o.dst))
			return true;
		snprintf(why, wn, "XDP_PASS, but the frame changed (and is "
			 "no tunnel with DF clear for the kernel)");
		return false;
	case XDP_DROP:
		if (lb_any_event(r))
			return true;
		snprintf(why, wn, "XDP_DROP without an event counted");
		return false;
	case XDP_TX:
	case XDP_REDIRECT:
		if (!pkt_parse_outer(r->out, r->len, &o)) {
			if (o.l2.l3_off + o.inner_len > len ||
			    memcmp(r->out + o.inner_off, in + o.l2.l3_off,
				   o.inner_len)) {
				snprintf(why, wn, "tunnel, but its inner "
					 "packet is not the input's");
				return false;
			}
			if (!lb_is_backend(lb, o.family, o.dst)) {
				snprintf(why, wn, "tunnel to an address "
					 "that is no backend");
				return false;
			}
			if (!lb_is_vip_addr(lb, o.inner_family,
					    r->out + o.inner_off +
					    (o.inner_family == 4 ? 16 : 24))) {
				snprintf(why, wn, "tunnel of a packet that is "
					 "not addressed to a VIP");
				return false;
			}
			return true;
		}
		if (lb_is_too_big_answer(in, len, r, &pi) &&
		    r->ev[XLB_EV_TOO_BIG])
			return true;
		snprintf(why, wn, "sent, but no correct tunnel "
			 "(pkt_parse_outer: %s) nor too-big answer", o.err);
		return false;
	default:
		snprintf(why, wn, "verdict %u", r->retval);
		return false;
	}
}

static inline bool lb_expect_sane(const struct lb *lb, const __u8 *in,
				  size_t len, const struct lb_res *r,
				  const char *what)
{
	char why[256];

	if (lb_sane(lb, in, len, r, why, sizeof(why)))
		return true;
	lb_report(what, why, in, len, r);
	return false;
}

/* --- the harness fixture (include kselftest_harness.h first) ------------- */

FIXTURE(lb)
{
	struct lb lb;
};

FIXTURE_SETUP(lb)
{
	char why[256] = "";

	ASSERT_EQ(0, lb_init(&self->lb, why, sizeof(why))) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(lb)
{
	lb_fini(&self->lb);
}

/* Build s, run it, and check it is forwarded as want says (lb_expect_fwd). */
static inline bool lb_run_fwd(struct lb *lb, int v, const struct pkt_spec *s,
			      const struct xlb_flow *f, __u32 want,
			      const char *what, struct pkt_outer *o)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	size_t len = lb_build(s, in);
	char label[160];

	snprintf(label, sizeof(label), "%s [VIP %s, %s client]", what,
		 lb_kind(v)->name, lb_fam_name(lb_vip_family(v)));
	if (!len) {
		fprintf(stderr, "# %s: test bug: pkt_build refused it\n",
			label);
		return false;
	}
	lb_run(lb, in, len, &r);
	return lb_expect_fwd(lb, v, f, in, len, &r, want, label, o);
}

#endif /* XLB_TESTS_LB_FIXTURE_H */
