// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: access to the data path's maps (datapath.h is the contract,
 * dp_internal.h says which file does what).  Here: opening the maps of a
 * loaded object or of bpffs pins, each checked against structs.h and the
 * data path ABI; the global settings; counters; redirect egress.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "dp_internal.h"

struct map_spec {
	const char *name;
	size_t fd_off;		/* offsetof(struct xlb_dp, <fd>) */
	__u32 type;
	__u32 key_size;
	__u32 value_size;
	__u32 min_entries;	/* userspace indexes up to this */
	const char *value;	/* what a value is, for messages */
};

#define SPEC(n, field, t, k, v, min, what) \
	{ n, offsetof(struct xlb_dp, field), t, k, v, min, what }

static const struct map_spec map_specs[] = {
	/* first: another ABI explains any other difference */
	SPEC(XLB_MAP_ABI, abi, BPF_MAP_TYPE_ARRAY, 4, 1, XLB_DP_ABI,
	     "__u8 (its size is the data path ABI)"),
	SPEC(XLB_MAP_CONFIG, config, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_config), 1, "struct xlb_config"),
	SPEC(XLB_MAP_VIPS, vips, BPF_MAP_TYPE_HASH, sizeof(struct xlb_vip_key),
	     sizeof(struct xlb_vip), 1, "struct xlb_vip"),
	SPEC(XLB_MAP_VIP_INDEX, vip_index, BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4, 1,
	     "an inner map"),
#define TABLE_SPEC(c, m)						\
	SPEC(XLB_MAP_TABLES #m, tables[(c) - 1], BPF_MAP_TYPE_ARRAY_OF_MAPS,	\
	     4, 4, XLB_MAX_VIPS, "an inner map"),
	XLB_TABLE_SIZES_X(TABLE_SPEC)
	SPEC(XLB_MAP_BACKENDS, backends, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_backend), XLB_MAX_BACKENDS,
	     "struct xlb_backend"),
	SPEC(XLB_MAP_CONNTRACK, conntrack, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_ct_entry), XLB_CT_WAYS, "struct xlb_ct_entry"),
	SPEC(XLB_MAP_VIP_STATS, vip_stats, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_vip_stats), XLB_MAX_VIPS,
	     "struct xlb_vip_stats"),
	SPEC(XLB_MAP_BACKEND_STATS, backend_stats, BPF_MAP_TYPE_PERCPU_ARRAY,
	     4, sizeof(struct xlb_counter), XLB_MAX_BACKENDS,
	     "struct xlb_counter"),
	SPEC(XLB_MAP_EVENTS, events, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(__u64), XLB_EV_IN_MAP, "__u64"),
	SPEC(XLB_MAP_ACTIONS, actions, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(__u64), XLB_ACTIONS * XLB_LINK_SLOTS, "__u64"),
	SPEC(XLB_MAP_TX_PORTS, tx_ports, BPF_MAP_TYPE_DEVMAP_HASH, 4, 4, 1,
	     "an ifindex"),
	SPEC(XLB_MAP_GEN, gen, BPF_MAP_TYPE_ARRAY, 4, 4, 1, "__u32"),
	SPEC(XLB_MAP_FLOW_CACHE, flow_cache, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_fc_entry), 1, "struct xlb_fc_entry"),
	SPEC(XLB_MAP_CT_GUARD, ct_guard, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_ct_guard), 1, "struct xlb_ct_guard"),
	SPEC(XLB_MAP_MEMBERS, members, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_member_bucket), XLB_MEMBER_BUCKETS,
	     "struct xlb_member_bucket"),
	SPEC(XLB_MAP_QUIC_SIDS, quic_sids, BPF_MAP_TYPE_HASH,
	     sizeof(struct xlb_quic_sid_key), 4, 1, "__u32 (a backend id)"),
	SPEC(XLB_MAP_QUIC_STATS, quic_stats, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_quic_stats), XLB_MAX_VIPS,
	     "struct xlb_quic_stats"),
	SPEC(XLB_MAP_BE_CONNS, be_conns, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(__s64), XLB_MAX_BACKENDS, "__s64"),
};

#define N_MAPS		ARRAY_SIZE(map_specs)

/* Counters are read as arrays of __u64 per CPU. */
_Static_assert(sizeof(struct xlb_vip_stats) % 8 == 0, "per-CPU layout");
_Static_assert(sizeof(struct xlb_counter) % 8 == 0, "per-CPU layout");
_Static_assert(sizeof(struct xlb_quic_stats) % 8 == 0, "per-CPU layout");

static int *dp_fd(struct xlb_dp *dp, const struct map_spec *s)
{
	return (int *)((char *)dp + s->fd_off);
}

void dp_init(struct xlb_dp *dp)
{
	size_t i;

	memset(dp, 0, sizeof(*dp));
	for (i = 0; i < N_MAPS; i++)
		*dp_fd(dp, &map_specs[i]) = -1;
}

void xlb_dp_close(struct xlb_dp *dp)
{
	size_t i;
	int *fd;

	if (dp->gen_map)
		munmap(dp->gen_map, (size_t)sysconf(_SC_PAGESIZE));
	dp->gen_map = NULL;
	if (dp->member_map)
		munmap(dp->member_map, XLB_MEMBER_BUCKETS *
		       sizeof(struct xlb_member_bucket));
	dp->member_map = NULL;
	if (dp->backend_map)
		munmap((void *)dp->backend_map,
		       XLB_MAX_BACKENDS * sizeof(struct xlb_backend));
	dp->backend_map = NULL;
	dp_vip_cache_drop(dp);
	dp_tables_unmap(dp);
	for (i = 0; i < XLB_MAX_VIPS; i++)
		free(dp->vip_mids[i].ids);
	memset(dp->vip_mids, 0, sizeof(dp->vip_mids));
	dp->mids_known = false;
	for (i = 0; i < N_MAPS; i++) {
		fd = dp_fd(dp, &map_specs[i]);
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
}

/*
 * An atomic increment on the mapped value: several processes may change
 * the state at once (xlbd, a test), and a lost increment would leave a
 * cache entry of the old state looking current.  It is also the release
 * of the flow cache's protocol (bpf/structs.h, "Flow cache"): every write
 * before it, by syscall or through a mapping, is visible to a CPU that
 * sees the new generation and reads after it (the program's acquire).
 * Sequentially consistent, which includes release, on every CPU.
 */
void xlb_dp_changed(const struct xlb_dp *dp)
{
	if (dp->gen_map)
		__atomic_add_fetch(dp->gen_map, 1, __ATOMIC_SEQ_CST);
}

static const char *map_type_str(__u32 type)
{
	const char *s = libbpf_bpf_map_type_str(type);

	return s ? s : "unknown";
}

/* The map that carries the data path ABI as its size (structs.h). */
static bool is_abi_map(const struct map_spec *s)
{
	return s->fd_off == offsetof(struct xlb_dp, abi);
}

/* Refuse maps whose layout is not the one of structs.h. */
static int map_check(int fd, const struct map_spec *s, struct xlb_err *err)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int ret;

	memset(&info, 0, sizeof(info));
	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (ret)
		return xlb_errf(err, -ret, "cannot query map %s: %s", s->name,
				strerror(-ret));
	if (info.type != s->type)
		return xlb_errf(err, EINVAL,
				"map %s is of type %s, expected %s: not an xlb data path map of this version",
				s->name, map_type_str(info.type),
				map_type_str(s->type));
	if (info.key_size != s->key_size || info.value_size != s->value_size)
		return xlb_errf(err, EINVAL,
				"map %s has %u-byte keys and %u-byte values, expected %u and %u (%s): the maps are from another xlb version",
				s->name, info.key_size, info.value_size,
				s->key_size, s->value_size, s->value);
	if (is_abi_map(s) && info.max_entries != XLB_DP_ABI)
		return xlb_errf(err, EPROTO,
				"the data path is of data path ABI %u, this build of xlb speaks ABI %u: the program and the maps are another xlb version's",
				info.max_entries, XLB_DP_ABI);
	if (info.max_entries < s->min_entries)
		return xlb_errf(err, EINVAL,
				"map %s has %u entries, expected at least %u",
				s->name, info.max_entries, s->min_entries);
	return 0;
}

int dp_finish(struct xlb_dp *dp, struct xlb_err *err)
{
	void *g;

	dp->ncpus = libbpf_num_possible_cpus();
	if (dp->ncpus <= 0)
		return xlb_errf(err, dp->ncpus ? -dp->ncpus : EINVAL,
				"cannot count the possible CPUs (/sys/devices/system/cpu/possible)");
	g = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
		 MAP_SHARED, dp->gen, 0);
	if (g == MAP_FAILED)
		return xlb_errf(err, errno, "cannot map %s, the generation (made without BPF_F_MMAPABLE?): %s",
				XLB_MAP_GEN, strerror(errno));
	dp->gen_map = g;
	g = mmap(NULL, XLB_MEMBER_BUCKETS * sizeof(struct xlb_member_bucket),
		 PROT_READ | PROT_WRITE, MAP_SHARED, dp->members, 0);
	if (g == MAP_FAILED)
		return xlb_errf(err, errno, "cannot map %s (made without BPF_F_MMAPABLE?): %s",
				XLB_MAP_MEMBERS, strerror(errno));
	dp->member_map = g;
	g = mmap(NULL, XLB_MAX_BACKENDS * sizeof(struct xlb_backend), PROT_READ,
		 MAP_SHARED, dp->backends, 0);
	if (g == MAP_FAILED)
		return xlb_errf(err, errno, "cannot map %s (made without BPF_F_MMAPABLE?): %s",
				XLB_MAP_BACKENDS, strerror(errno));
	dp->backend_map = g;
	return dp_vip_classes_learn(dp, err);
}

/* Take fd as dp's descriptor of map s, after checking its layout. */
int dp_adopt(struct xlb_dp *dp, const struct map_spec *s, int fd,
		    struct xlb_err *err)
{
	*dp_fd(dp, s) = fd;
	return map_check(fd, s, err);
}

/*
 * Open every map of the data path: fd_of gives map s's descriptor (of a
 * loaded object, or of its pin) or a negative error; each is checked and
 * kept.  Whole or not at all: after an error dp holds nothing.
 */
static int dp_open(struct xlb_dp *dp,
		   int (*fd_of)(const struct map_spec *s, const void *from,
				struct xlb_err *err),
		   const void *from, struct xlb_err *err)
{
	size_t i;
	int fd, ret;

	dp_init(dp);
	for (i = 0; i < N_MAPS; i++) {
		fd = fd_of(&map_specs[i], from, err);
		if (fd < 0) {
			ret = fd;
			goto fail;
		}
		ret = dp_adopt(dp, &map_specs[i], fd, err);
		if (ret)
			goto fail;
	}
	ret = dp_finish(dp, err);
	if (ret)
		goto fail;
	return 0;
fail:
	xlb_dp_close(dp);
	return ret;
}

/* A descriptor of its own for map s of a loaded object. */
static int obj_map_fd(const struct map_spec *s, const void *from,
		      struct xlb_err *err)
{
	const struct bpf_object *obj = from;
	struct bpf_map *map;
	int fd;

	map = bpf_object__find_map_by_name(obj, s->name);
	if (!map)
		return xlb_errf(err, ENOENT, "BPF object %s has no map named %s",
				bpf_object__name(obj), s->name);
	fd = bpf_map__fd(map);
	if (fd < 0)
		return xlb_errf(err, EBADF,
				"map %s of BPF object %s is not created yet: load the object first",
				s->name, bpf_object__name(obj));
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return xlb_errf(err, errno,
				"cannot duplicate the fd of map %s: %s",
				s->name, strerror(errno));
	return fd;
}

/* The pin of map s in folder `from`, opened. */
static int pin_map_fd(const struct map_spec *s, const void *from,
		      struct xlb_err *err)
{
	const char *dir = from;
	char path[4096], *dot;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, s->name) >=
	    (int)sizeof(path))
		return xlb_errf(err, ENAMETOOLONG,
				"pin folder name is too long: %s", dir);
	/* as bpf_object__pin_maps names pins: bpffs takes no dots */
	for (dot = path + strlen(dir) + 1; (dot = strchr(dot, '.'));)
		*dot = '_';
	fd = bpf_obj_get(path);
	if (fd < 0) {
		const char *hint = "";

		if (fd == -ENOENT)
			hint = is_abi_map(s) ?
			       " (is the data path loaded and pinned there? xlb versions from before data path ABIs pin no such map)" :
			       " (is the data path loaded and pinned there?)";
		return xlb_errf(err, -fd, "cannot open pinned map %s: %s%s",
				path, strerror(-fd), hint);
	}
	return fd;
}

int xlb_dp_from_obj(struct xlb_dp *dp, struct bpf_object *obj,
		    struct xlb_err *err)
{
	return dp_open(dp, obj_map_fd, obj, err);
}

int xlb_dp_from_pins(struct xlb_dp *dp, const char *dir, struct xlb_err *err)
{
	return dp_open(dp, pin_map_fd, dir, err);
}

/* --- config --------------------------------------------------------------- */

void xlb_config_defaults(struct xlb_config *c)
{
	memset(c, 0, sizeof(*c));
	c->gue_port = XLB_GUE_PORT_DEFAULT;
	c->mtu = XLB_MTU_DEFAULT;
	c->ttl = XLB_TTL_DEFAULT;
	c->udp_idle_s = XLB_UDP_IDLE_DEFAULT;
}

int xlb_dp_config_get(const struct xlb_dp *dp, struct xlb_config *c)
{
	__u32 key = 0;
	int ret = bpf_map_lookup_elem(dp->config, &key, c);

	/* derived fields are libxlb's business, not the caller's */
	c->ct_buckets = 0;
	c->hz = 0;
	memset(&c->ct_key, 0, sizeof(c->ct_key));
	return ret;
}

int xlb_dp_config_set(const struct xlb_dp *dp, const struct xlb_config *c)
{
	struct xlb_config w = *c;
	__u32 key = 0, n;
	int ret = dp_ct_entries(dp, &n);

	if (!ret)
		ret = xlb_clock_hz(&w.hz);
	if (ret)
		return ret;
	w.ct_buckets = n / XLB_CT_WAYS;
	xlb_ct_key_derive(&c->key, &w.ct_key);
	ret = bpf_map_update_elem(dp->config, &key, &w, BPF_ANY);
	xlb_dp_changed(dp);
	return ret;
}

int xlb_dp_ct_guard_set(const struct xlb_dp *dp, __u32 rate)
{
	struct xlb_ct_guard *v;
	__u32 key = 0;
	int cpu, ret;

	if (rate > XLB_CT_RATE_MAX)
		return -EINVAL;
	if (dp->ncpus <= 0)
		return -EINVAL;
	v = calloc((size_t)dp->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* the refusals counted so far stay (an increment in between is lost) */
	ret = bpf_map_lookup_elem(dp->ct_guard, &key, v) ? -errno : 0;
	for (cpu = 0; !ret && cpu < dp->ncpus; cpu++) {
		v[cpu].rate = rate;
		v[cpu].credits = 0;
		v[cpu].stamp = 0;
	}
	if (!ret)
		ret = bpf_map_update_elem(dp->ct_guard, &key, v, BPF_ANY) ?
		      -errno : 0;
	free(v);
	return ret;
}

int xlb_dp_ct_guard_get(const struct xlb_dp *dp, __u32 *rate)
{
	struct xlb_ct_guard *v;
	__u32 key = 0;
	int ret;

	if (dp->ncpus <= 0)
		return -EINVAL;
	v = calloc((size_t)dp->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ret = bpf_map_lookup_elem(dp->ct_guard, &key, v) ? -errno : 0;
	if (!ret)
		*rate = v[0].rate;
	free(v);
	return ret;
}

/* --- counters ------------------------------------------------------------- */

/* Sum words __u64 values of every CPU at key. */
static int percpu_sum(const struct xlb_dp *dp, int fd, __u32 key,
		      __u64 *sum, size_t words)
{
	__u64 *v;
	size_t w;
	int cpu, ret;

	memset(sum, 0, words * sizeof(*sum));
	if (dp->ncpus <= 0)
		return -EINVAL;
	v = calloc((size_t)dp->ncpus * words, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ret = bpf_map_lookup_elem(fd, &key, v);
	for (cpu = 0; !ret && cpu < dp->ncpus; cpu++)
		for (w = 0; w < words; w++)
			sum[w] += v[(size_t)cpu * words + w];
	free(v);
	return ret;
}

int xlb_dp_vip_stats(const struct xlb_dp *dp, __u32 vip_id,
		     struct xlb_vip_stats *sum)
{
	__u64 w[sizeof(*sum) / 8] = { 0 };
	int ret;

	ret = dp_vip_id_check(vip_id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->vip_stats, vip_id, w, sizeof(*sum) / 8);
	memcpy(sum, w, sizeof(*sum));
	return ret;
}

int xlb_dp_quic_stats(const struct xlb_dp *dp, __u32 vip_id,
		      struct xlb_quic_stats *sum)
{
	__u64 w[XLB_QUIC_STATS_N] = { 0 };
	int ret;

	ret = dp_vip_id_check(vip_id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->quic_stats, vip_id, w,
				 XLB_QUIC_STATS_N);
	memcpy(sum, w, sizeof(*sum));
	return ret;
}

int xlb_dp_backend_stats(const struct xlb_dp *dp, __u16 id,
			 struct xlb_counter *sum)
{
	__u64 w[sizeof(*sum) / 8] = { 0 };
	int ret;

	ret = dp_backend_id_check(id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->backend_stats, id, w,
				 sizeof(*sum) / 8);
	memcpy(sum, w, sizeof(*sum));
	return ret;
}

int xlb_dp_backend_conns(const struct xlb_dp *dp, __u16 id, __s64 *sum)
{
	__u64 w = 0;
	int ret;

	ret = dp_backend_id_check(id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->be_conns, id, &w, 1);
	*sum = (__s64)w;
	return ret;
}

int xlb_dp_backend_stats_clear(const struct xlb_dp *dp, __u16 id)
{
	struct xlb_counter *v;
	__u32 key = id;
	int ret;

	ret = dp_backend_id_check(id, NULL);
	if (ret)
		return ret;
	if (dp->ncpus <= 0)
		return -EINVAL;
	v = calloc((size_t)dp->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	ret = bpf_map_update_elem(dp->backend_stats, &key, v, BPF_ANY) ?
	      -errno : 0;
	free(v);
	return ret;
}

static int percpu_sum_all(const struct xlb_dp *dp, int fd, __u64 *out,
			  __u32 n)
{
	__u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = percpu_sum(dp, fd, i, &out[i], 1);
		if (ret)
			return ret;
	}
	return 0;
}

int xlb_dp_events(const struct xlb_dp *dp, __u64 out[XLB_EV_MAX])
{
	struct xlb_ct_guard g;
	int ret = percpu_sum_all(dp, dp->events, out, XLB_EV_IN_MAP);

	if (!ret)
		ret = percpu_sum(dp, dp->ct_guard, 0, (__u64 *)&g,
				 sizeof(g) / 8);
	out[XLB_EV_CT_GUARD] = ret ? 0 : g.refused;
	return ret;
}

/*
 * Keys 0..n-1 of per-CPU map fd (one __u64 a CPU), each summed over CPUs
 * into out[key]: one batch lookup, else (no batches) one lookup a key.
 */
static int percpu_sum_first(const struct xlb_dp *dp, int fd, __u64 *out,
			    __u32 n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	__u32 *keys, count = n, out_batch = 0, i;
	__u64 *v;
	int cpu, ret;

	memset(out, 0, n * sizeof(*out));
	if (dp->ncpus <= 0)
		return -EINVAL;
	keys = calloc(n, sizeof(*keys));
	v = calloc((size_t)n * dp->ncpus, sizeof(*v));
	if (!keys || !v) {
		free(keys);
		free(v);
		return -ENOMEM;
	}
	ret = bpf_map_lookup_batch(fd, NULL, &out_batch, keys, v, &count, &o);
	if (ret && errno == ENOENT)	/* the end came in this batch */
		ret = 0;
	ret = ret ? -errno : 0;
	for (i = 0; !ret && i < count; i++)
		for (cpu = 0; cpu < dp->ncpus; cpu++)
			if (keys[i] < n)
				out[keys[i]] += v[(size_t)i * dp->ncpus + cpu];
	free(keys);
	free(v);
	if (ret == -EINVAL || ret == -EOPNOTSUPP)	/* no batches */
		ret = percpu_sum_all(dp, fd, out, n);
	return ret;
}

/*
 * Every link's actions, summed over CPUs into by_slot[slot * XLB_ACTIONS +
 * action]: one batch lookup of the whole map.
 */
static int actions_read(const struct xlb_dp *dp, __u64 *by_slot)
{
	return percpu_sum_first(dp, dp->actions, by_slot,
				XLB_ACTIONS * XLB_LINK_SLOTS);
}

int xlb_dp_backend_conns_first(const struct xlb_dp *dp, __u32 n, __s64 *out)
{
	if (n > XLB_MAX_BACKENDS)
		return -EINVAL;
	/* two's complement: the sum of the CPUs' __u64 is the __s64 sum */
	return n ? percpu_sum_first(dp, dp->be_conns, (__u64 *)out, n) : 0;
}

int xlb_dp_actions(const struct xlb_dp *dp, __u64 out[XLB_ACTIONS])
{
	__u64 *all = calloc(XLB_ACTIONS * XLB_LINK_SLOTS, sizeof(*all));
	__u32 s, a;
	int ret;

	memset(out, 0, XLB_ACTIONS * sizeof(*out));
	if (!all)
		return -ENOMEM;
	ret = actions_read(dp, all);
	for (s = 0; !ret && s < XLB_LINK_SLOTS; s++)
		for (a = 0; a < XLB_ACTIONS; a++)
			out[a] += all[s * XLB_ACTIONS + a];
	free(all);
	return ret;
}

int xlb_dp_link_actions(const struct xlb_dp *dp, __u32 ifindex,
			__u64 out[XLB_ACTIONS])
{
	__u32 a, base = XLB_LINK_SLOT(ifindex) * XLB_ACTIONS;
	int ret;

	for (a = 0; a < XLB_ACTIONS; a++) {
		ret = percpu_sum(dp, dp->actions, base + a, &out[a], 1);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *const event_names[] = {
	[XLB_EV_MALFORMED]	= "malformed",
	[XLB_EV_FRAGMENT]	= "fragment",
	[XLB_EV_NO_BACKEND]	= "no_backend",
	[XLB_EV_TOO_BIG]	= "too_big",
	[XLB_EV_NO_ROUTE]	= "no_route",
	[XLB_EV_NO_NEIGH]	= "no_neigh",
	[XLB_EV_UNSUPPORTED]	= "unsupported",
	[XLB_EV_NO_TABLE]	= "no_table",
	[XLB_EV_ICMP_STEERED]	= "icmp_steered",
	[XLB_EV_ICMP_ECHO]	= "icmp_echo",
	[XLB_EV_TOO_BIG_STACK]	= "too_big_stack",
	[XLB_EV_TOO_BIG_SILENT]	= "too_big_silent",
	[XLB_EV_TOO_BIG_LIMITED] = "too_big_limited",
	[XLB_EV_BOUNDED]	= "bounded",
	[XLB_EV_CT_GUARD]	= "ct_guard",
};

_Static_assert(ARRAY_SIZE(event_names) == XLB_EV_MAX,
	       "every event has a name");

const char *xlb_event_name(int ev)
{
	if (ev < 0 || ev >= XLB_EV_MAX)
		return NULL;
	return event_names[ev];
}

/* --- redirect egress ------------------------------------------------------ */

int xlb_dp_tx_port_add(const struct xlb_dp *dp, __u32 ifindex)
{
	if (!ifindex)
		return -EINVAL;
	return bpf_map_update_elem(dp->tx_ports, &ifindex, &ifindex, BPF_ANY);
}

int xlb_dp_tx_port_del(const struct xlb_dp *dp, __u32 ifindex)
{
	return bpf_map_delete_elem(dp->tx_ports, &ifindex);
}
