// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: access to the data path's maps.  See datapath.h for the contract;
 * here: how tables are published without stalling forwarding.
 *
 * A table is a fresh inner ARRAY map filled before anything points at it,
 * then swapped in with one update of the outer ARRAY_OF_MAPS entry (the
 * kernel waits an RCU grace period there, so when the update returns no
 * program still reads the old map; packets never wait).  Filling is by
 * mmap (the inner maps are BPF_F_MMAPABLE): one memory write per slot
 * instead of a syscall or a copy_from_user per slot.  The inner map's flags
 * and size must equal those of the outer map's template: there is an outer
 * map per table size (bpf/structs.h).
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "clock.h"
#include "datapath.h"

/* Inner table map flags, as the templates of bpf/maps.h have them. */
#define TABLE_FLAGS		BPF_F_MMAPABLE

/* An ARRAY map stores each value in round_up(value_size, 8) bytes. */
#define ARRAY_STRIDE		8

/* Entries per batch syscall when walking a hash map. */
#define WALK_CHUNK		4096

/* How often table_read retries when the table is replaced under it. */
#define READ_RETRIES		5

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
	     sizeof(__u64), XLB_EV_MAX, "__u64"),
	SPEC(XLB_MAP_ACTIONS, actions, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(__u64), XLB_ACTIONS, "__u64"),
	SPEC(XLB_MAP_TX_PORTS, tx_ports, BPF_MAP_TYPE_DEVMAP_HASH, 4, 4, 1,
	     "an ifindex"),
	SPEC(XLB_MAP_GEN, gen, BPF_MAP_TYPE_ARRAY, 4, 4, 1, "__u32"),
	SPEC(XLB_MAP_FLOW_CACHE, flow_cache, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_fc_entry), 1, "struct xlb_fc_entry"),
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define N_MAPS		ARRAY_SIZE(map_specs)

/* Counters are read as arrays of __u64 per CPU. */
_Static_assert(sizeof(struct xlb_vip_stats) % 8 == 0, "per-CPU layout");
_Static_assert(sizeof(struct xlb_counter) % 8 == 0, "per-CPU layout");
_Static_assert(sizeof(struct xlb_slot) <= ARRAY_STRIDE, "array stride");

static int *dp_fd(struct xlb_dp *dp, const struct map_spec *s)
{
	return (int *)((char *)dp + s->fd_off);
}

static void dp_init(struct xlb_dp *dp)
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
 * cache entry of the old state looking current.
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

static int vip_classes_learn(struct xlb_dp *dp, struct xlb_err *err);

static int dp_finish(struct xlb_dp *dp, struct xlb_err *err)
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
	return vip_classes_learn(dp, err);
}

/* Take fd as dp's descriptor of map s, after checking its layout. */
static int dp_adopt(struct xlb_dp *dp, const struct map_spec *s, int fd,
		    struct xlb_err *err)
{
	*dp_fd(dp, s) = fd;
	return map_check(fd, s, err);
}

int xlb_dp_from_obj(struct xlb_dp *dp, struct bpf_object *obj,
		    struct xlb_err *err)
{
	const struct map_spec *s;
	struct bpf_map *map;
	size_t i;
	int fd, ret;

	dp_init(dp);
	for (i = 0; i < N_MAPS; i++) {
		s = &map_specs[i];
		map = bpf_object__find_map_by_name(obj, s->name);
		if (!map) {
			ret = xlb_errf(err, ENOENT,
				       "BPF object %s has no map named %s",
				       bpf_object__name(obj), s->name);
			goto fail;
		}
		fd = bpf_map__fd(map);
		if (fd < 0) {
			ret = xlb_errf(err, EBADF,
				       "map %s of BPF object %s is not created yet: load the object first",
				       s->name, bpf_object__name(obj));
			goto fail;
		}
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			ret = xlb_errf(err, errno, "cannot duplicate the fd of map %s: %s",
				       s->name, strerror(errno));
			goto fail;
		}
		ret = dp_adopt(dp, s, fd, err);
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

int xlb_dp_from_pins(struct xlb_dp *dp, const char *dir, struct xlb_err *err)
{
	const struct map_spec *s;
	char path[4096], *dot;
	size_t i;
	int fd, ret;

	dp_init(dp);
	for (i = 0; i < N_MAPS; i++) {
		s = &map_specs[i];
		if (snprintf(path, sizeof(path), "%s/%s", dir, s->name) >=
		    (int)sizeof(path)) {
			ret = xlb_errf(err, ENAMETOOLONG,
				       "pin folder name is too long: %s", dir);
			goto fail;
		}
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
			ret = xlb_errf(err, -fd, "cannot open pinned map %s: %s%s",
				       path, strerror(-fd), hint);
			goto fail;
		}
		ret = dp_adopt(dp, s, fd, err);
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

void xlb_ct_key_derive(const struct xlb_hash_key *key, struct xlb_ct_key *out)
{
	char label[32];
	int i, n;

	for (i = 0; i < (int)ARRAY_SIZE(out->k); i++) {
		n = snprintf(label, sizeof(label), "xlb conntrack index %d", i);
		out->k[i] = (__u32)xlb_siphash13(key, label, (__u64)n);
	}
}

/* Entries of the connection table map (a multiple of XLB_CT_WAYS used). */
static int ct_entries(const struct xlb_dp *dp, __u32 *n)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	*n = 0;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(dp->conntrack, &info, &len))
		return -errno;
	*n = info.max_entries;
	return 0;
}

int xlb_dp_config_set(const struct xlb_dp *dp, const struct xlb_config *c)
{
	struct xlb_config w = *c;
	__u32 key = 0, n;
	int ret = ct_entries(dp, &n);

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

/* --- hash map walks ------------------------------------------------------- */

typedef int (*walk_fn)(const void *key, const void *value, void *ctx);

/*
 * Visit every entry of a hash map, WALK_CHUNK per syscall; with del, the
 * visited entries are deleted.  *n gets the number visited.
 */
static int hash_walk(int fd, __u32 key_size, __u32 value_size, bool del,
		     walk_fn fn, void *ctx, __u32 *n)
{
	__u32 in_batch = 0, out_batch = 0, count, i;
	char *keys, *values;
	void *in = NULL;	/* NULL: from the first bucket */
	int ret;

	*n = 0;
	keys = malloc((size_t)WALK_CHUNK * key_size);
	values = malloc((size_t)WALK_CHUNK * value_size);
	if (!keys || !values) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		count = WALK_CHUNK;
		if (del)
			ret = bpf_map_lookup_and_delete_batch(fd, in, &out_batch,
							      keys, values,
							      &count, NULL);
		else
			ret = bpf_map_lookup_batch(fd, in, &out_batch, keys,
						   values, &count, NULL);
		if (ret && ret != -ENOENT)
			goto out;
		*n += count;
		for (i = 0; fn && i < count; i++) {
			int r = fn(keys + (size_t)i * key_size,
				   values + (size_t)i * value_size, ctx);

			if (r) {
				ret = r;
				goto out;
			}
		}
		if (ret == -ENOENT) {	/* walked past the last bucket */
			ret = 0;
			goto out;
		}
		in_batch = out_batch;
		in = &in_batch;
	}
out:
	free(keys);
	free(values);
	return ret;
}

/* --- VIPs ----------------------------------------------------------------- */

/*
 * Address markers and fragment entries (structs.h) are derived from the
 * VIPs, so callers never write them: every VIP change brings the entries
 * of its address up to date.
 */
static bool vip_is_marker(const struct xlb_vip_key *k)
{
	return !k->proto || k->family & XLB_FAMILY_FRAG;
}

static bool vip_same_addr(const struct xlb_vip_key *a,
			  const struct xlb_vip_key *b)
{
	return a->family == b->family &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static const char *proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "?";
}

/* "tcp 192.0.2.1:80", "udp [2001:db8::1]:53", "tcp 192.0.2.1:*" */
static const char *vip_str(const struct xlb_vip_key *k, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN], port[8] = "*";
	int v6 = k->family == XLB_FAMILY_INET6;

	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, k->addr, addr, sizeof(addr)))
		snprintf(addr, sizeof(addr), "?");
	if (k->port)
		snprintf(port, sizeof(port), "%u", ntohs(k->port));
	snprintf(buf, len, "%s %s%s%s:%s", proto_name(k->proto), v6 ? "[" : "",
		 addr, v6 ? "]" : "", port);
	return buf;
}

static int vip_key_check(const struct xlb_vip_key *k, struct xlb_err *err)
{
	if (k->family != XLB_FAMILY_INET && k->family != XLB_FAMILY_INET6)
		return xlb_errf(err, EINVAL,
				"VIP address family %u is neither 4 (IPv4) nor 6 (IPv6)",
				k->family);
	if (k->proto != IPPROTO_TCP && k->proto != IPPROTO_UDP)
		return xlb_errf(err, EINVAL,
				"VIP protocol %u is neither TCP (6) nor UDP (17)",
				k->proto);
	if (k->family == XLB_FAMILY_INET &&
	    (k->addr[1] || k->addr[2] || k->addr[3]))
		return xlb_errf(err, EINVAL,
				"IPv4 VIP key has bits set in addr[1..3]: an IPv4 address goes in addr[0], the rest must be zero");
	return 0;
}

static int vip_check(const struct xlb_vip *v, struct xlb_err *err)
{
	if (v->id >= XLB_MAX_VIPS)
		return xlb_errf(err, EINVAL,
				"VIP id %u is out of range: ids are 0..%u",
				v->id, XLB_MAX_VIPS - 1);
	if (v->flags & ~XLB_VIP_F_STATELESS)
		return xlb_errf(err, EINVAL,
				"VIP flags 0x%x are not allowed: a VIP may set 0x%x (stateless)",
				v->flags, XLB_VIP_F_STATELESS);
	if (v->hash_mode > XLB_HASH_SRC)
		return xlb_errf(err, EINVAL,
				"VIP hash mode %u is unknown: 0 (5-tuple), 1 (3-tuple) or 2 (source address)",
				v->hash_mode);
	return 0;
}

/* Every entry of the VIP map, markers included. */
struct vip_table {
	struct xlb_vip_key *keys;
	struct xlb_vip *vals;
	__u32 n, cap;
};

static int vip_collect(const void *key, const void *value, void *ctx)
{
	struct vip_table *vt = ctx;
	struct xlb_vip_key *keys;
	struct xlb_vip *vals;
	__u32 cap;

	if (vt->n == vt->cap) {
		cap = vt->cap ? 2 * vt->cap : 64;
		keys = realloc(vt->keys, cap * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		vt->keys = keys;
		vals = realloc(vt->vals, cap * sizeof(*vals));
		if (!vals)
			return -ENOMEM;
		vt->vals = vals;
		vt->cap = cap;
	}
	memcpy(&vt->keys[vt->n], key, sizeof(*vt->keys));
	memcpy(&vt->vals[vt->n], value, sizeof(*vt->vals));
	vt->n++;
	return 0;
}

static void vip_table_free(struct vip_table *vt)
{
	free(vt->keys);
	free(vt->vals);
	memset(vt, 0, sizeof(*vt));
}

static int vip_dump(const struct xlb_dp *dp, struct vip_table *vt)
{
	__u32 n;
	int ret;

	memset(vt, 0, sizeof(*vt));
	ret = hash_walk(dp->vips, sizeof(struct xlb_vip_key),
			sizeof(struct xlb_vip), false, vip_collect, vt, &n);
	if (ret)
		vip_table_free(vt);
	return ret;
}

/*
 * What the derived key mk should hold, given every VIP: the address marker
 * (proto 0) exists while any VIP uses the address; the fragment entry of
 * (address, proto) exists while any VIP of that address and protocol does,
 * and holds a copy of the one among them that hashes without ports, or
 * XLB_VIP_F_ADDR_ONLY when none or several do.
 */
static bool marker_want(const struct vip_table *vt,
			const struct xlb_vip_key *mk, struct xlb_vip *m)
{
	__u32 i, vips = 0, same_proto = 0, portless = 0;
	struct xlb_vip_key base = *mk;

	base.family &= ~XLB_FAMILY_FRAG;
	memset(m, 0, sizeof(*m));
	for (i = 0; i < vt->n; i++) {
		if (vip_is_marker(&vt->keys[i]) ||
		    !vip_same_addr(&vt->keys[i], &base))
			continue;
		vips++;
		if (vt->keys[i].proto != mk->proto)
			continue;
		same_proto++;
		if (vt->vals[i].hash_mode != XLB_HASH_5TUPLE) {
			portless++;
			*m = vt->vals[i];
		}
	}
	if (!mk->proto || portless != 1) {
		memset(m, 0, sizeof(*m));
		m->flags = XLB_VIP_F_ADDR_ONLY;
	}
	return mk->proto ? same_proto > 0 : vips > 0;
}

static int marker_sync_one(const struct xlb_dp *dp, const struct vip_table *vt,
			   const struct xlb_vip_key *mk)
{
	struct xlb_vip m, cur;
	int ret;

	if (marker_want(vt, mk, &m)) {
		ret = bpf_map_lookup_elem(dp->vips, mk, &cur);
		if (ret || memcmp(&cur, &m, sizeof(m)))
			ret = bpf_map_update_elem(dp->vips, mk, &m, BPF_ANY);
		return ret;
	}
	ret = bpf_map_delete_elem(dp->vips, mk);
	return ret == -ENOENT ? 0 : ret;
}

/* Bring the address marker and the fragment entries of key's address up to date. */
static int marker_sync(const struct xlb_dp *dp, const struct xlb_vip_key *key)
{
	static const __u8 protos[] = { 0, IPPROTO_TCP, IPPROTO_UDP };
	struct xlb_vip_key mk = {};
	struct vip_table vt;
	size_t i;
	int ret;

	ret = vip_dump(dp, &vt);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(protos) && !ret; i++) {
		memcpy(mk.addr, key->addr, sizeof(mk.addr));
		mk.proto = protos[i];
		mk.family = key->family | (protos[i] ? XLB_FAMILY_FRAG : 0);
		ret = marker_sync_one(dp, &vt, &mk);
	}
	vip_table_free(&vt);
	return ret;
}

/* --- VIP index ----------------------------------------------------------- */

#define VIP_INDEX_FLAGS		BPF_F_MMAPABLE

/* Place the entries by linear probing, each within XLB_VIP_PROBES slots. */
static int vip_index_place(const struct xlb_dp *dp,
			   const struct vip_table *vt, struct xlb_vip_slot **out)
{
	struct xlb_vip_slot *s;
	__u32 i, d, pos = 0;

	s = calloc(XLB_VIP_INDEX_SLOTS, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < vt->n; i++) {
		__u32 h = xlb_vip_index_hash(&vt->keys[i]);

		for (d = 0; d < XLB_VIP_PROBES; d++) {
			pos = (h + d) & (XLB_VIP_INDEX_SLOTS - 1);
			if (!s[pos].key.family)
				break;
		}
		if (d == XLB_VIP_PROBES) {
			free(s);
			return -E2BIG;
		}
		s[pos].key = vt->keys[i];
		s[pos].vip = vt->vals[i];
		/* the size class of the table the VIP has now */
		if (!(vt->vals[i].flags & XLB_VIP_F_ADDR_ONLY) &&
		    vt->vals[i].id < XLB_MAX_VIPS)
			s[pos].vip.table = dp->vip_class[vt->vals[i].id];
	}
	*out = s;
	return 0;
}

/* Build the index from the VIPs in vt and switch the data path to it. */
static int vip_index_publish(struct xlb_dp *dp, const struct vip_table *vt)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = VIP_INDEX_FLAGS);
	struct xlb_vip_slot *s;
	size_t bytes;
	__u32 key = 0;
	void *m;
	int fd, ret;

	ret = vip_index_place(dp, vt, &s);
	if (ret)
		return ret;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xlb_vip_idx", 4, sizeof(*s),
			    XLB_VIP_INDEX_SLOTS, &opts);
	if (fd < 0) {
		free(s);
		return -errno;
	}
	bytes = (size_t)XLB_VIP_INDEX_SLOTS * sizeof(*s);
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
	} else {
		memcpy(m, s, bytes);
		munmap(m, bytes);
		ret = bpf_map_update_elem(dp->vip_index, &key, &fd, BPF_ANY);
		xlb_dp_changed(dp);
	}
	close(fd);	/* the outer map holds the index now */
	free(s);
	return ret;
}

/*
 * Tables of sizes the index no longer names: after a switch no packet
 * reads them (the switch waited for every program that could).
 */
static void tables_stale_drop(struct xlb_dp *dp)
{
	__u32 id, c;

	for (id = 0; id < XLB_MAX_VIPS; id++) {
		for (c = 1; dp->vip_stale[id] && c <= XLB_TABLE_CLASSES; c++) {
			if (!(dp->vip_stale[id] & 1u << c))
				continue;
			if (c != dp->vip_class[id])
				bpf_map_delete_elem(dp->tables[c - 1], &id);
			dp->vip_stale[id] &= (__u16)~(1u << c);
		}
	}
}

static int vip_index_sync(struct xlb_dp *dp)
{
	struct vip_table vt;
	int ret = vip_dump(dp, &vt);

	if (ret)
		return ret;
	ret = vip_index_publish(dp, &vt);
	vip_table_free(&vt);
	dp->vip_dirty = ret != 0;
	if (!ret)
		tables_stale_drop(dp);
	return ret;
}

/*
 * The size class of every VIP's table, as the published index names it
 * (nothing published: none).  Tables of other sizes are not looked for
 * (on 6.1 every lookup in a map of maps waits for a grace period): one
 * left by a daemon stopped between an index switch and the removal
 * stays until its VIP goes back to that size, or xlbd --cleanup.
 */
static int vip_classes_learn(struct xlb_dp *dp, struct xlb_err *err)
{
	size_t bytes = (size_t)XLB_VIP_INDEX_SLOTS * sizeof(struct xlb_vip_slot);
	const struct xlb_vip_slot *s;
	__u32 key = 0, id, i;
	int fd;

	memset(dp->vip_class, 0, sizeof(dp->vip_class));
	memset(dp->vip_stale, 0, sizeof(dp->vip_stale));
	if (bpf_map_lookup_elem(dp->vip_index, &key, &id))
		return 0;	/* no index yet */
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return xlb_errf(err, errno, "cannot open the VIP index: %s",
				strerror(errno));
	s = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return xlb_errf(err, errno, "cannot map the VIP index: %s",
				strerror(errno));
	for (i = 0; i < XLB_VIP_INDEX_SLOTS; i++) {
		if (!s[i].key.family || s[i].vip.flags & XLB_VIP_F_ADDR_ONLY ||
		    s[i].vip.id >= XLB_MAX_VIPS ||
		    s[i].vip.table > XLB_TABLE_CLASSES)
			continue;
		dp->vip_class[s[i].vip.id] = s[i].vip.table;
	}
	munmap((void *)s, bytes);
	return 0;
}

static int vip_index_err(int ret, struct xlb_err *err)
{
	if (ret == -E2BIG)
		return xlb_errf(err, E2BIG, "cannot index the VIPs: %u slots do not hold them all within %u probes",
				XLB_VIP_INDEX_SLOTS, XLB_VIP_PROBES);
	if (ret == -EINVAL)
		return xlb_errf(err, EINVAL, "map %s refused the VIP index: its inner map template must be an ARRAY of %u %zu-byte slots with flags 0x%x",
				XLB_MAP_VIP_INDEX, XLB_VIP_INDEX_SLOTS,
				sizeof(struct xlb_vip_slot), VIP_INDEX_FLAGS);
	return xlb_errf(err, -ret, "cannot publish the VIP index: %s",
			strerror(-ret));
}

int xlb_dp_vip_sync(struct xlb_dp *dp, struct xlb_err *err)
{
	int ret = vip_index_sync(dp);

	return ret ? vip_index_err(ret, err) : 0;
}

void xlb_dp_vip_hold(struct xlb_dp *dp)
{
	dp->vip_holds++;
}

int xlb_dp_vip_release(struct xlb_dp *dp, struct xlb_err *err)
{
	if (dp->vip_holds > 0)
		dp->vip_holds--;
	if (dp->vip_holds || !dp->vip_dirty)
		return 0;
	return xlb_dp_vip_sync(dp, err);
}

/* After a change to xlb_vips: the index now, or at the release. */
static int vip_changed(struct xlb_dp *dp)
{
	dp->vip_dirty = true;
	return dp->vip_holds ? 0 : vip_index_sync(dp);
}

int xlb_dp_vip_set(struct xlb_dp *dp, const struct xlb_vip_key *key,
		   const struct xlb_vip *vip, struct xlb_err *err)
{
	struct xlb_vip v = *vip, old;
	struct vip_table vt;
	bool had_old = false;
	char a[80], b[80];
	__u32 i;
	int ret, index_ret = 0;

	ret = vip_key_check(key, err);
	if (!ret)
		ret = vip_check(vip, err);
	if (ret)
		return ret;
	v.table = 0;	/* the index's business (vip_index_place) */
	memset(v.pad, 0, sizeof(v.pad));

	ret = vip_dump(dp, &vt);
	if (ret)
		return xlb_errf(err, -ret, "cannot read the VIP map: %s",
				strerror(-ret));
	for (i = 0; i < vt.n; i++) {
		if (vip_is_marker(&vt.keys[i]))
			continue;
		if (!memcmp(&vt.keys[i], key, sizeof(*key))) {
			old = vt.vals[i];
			had_old = true;
		} else if (vt.vals[i].id == v.id) {
			ret = xlb_errf(err, EEXIST,
				       "VIP id %u is already used by VIP %s: every VIP needs an id of its own (for %s)",
				       v.id, vip_str(&vt.keys[i], a, sizeof(a)),
				       vip_str(key, b, sizeof(b)));
		}
	}
	vip_table_free(&vt);
	if (ret)
		return ret;

	ret = bpf_map_update_elem(dp->vips, key, &v, BPF_ANY);
	if (!ret) {
		ret = marker_sync(dp, key);
		if (!ret) {
			ret = vip_changed(dp);
			if (ret)	/* the index could not be switched */
				index_ret = ret;
		}
		if (ret) {	/* all or nothing: put the VIP back */
			if (had_old)
				bpf_map_update_elem(dp->vips, key, &old,
						    BPF_ANY);
			else
				bpf_map_delete_elem(dp->vips, key);
			marker_sync(dp, key);
			if (index_ret)
				vip_index_sync(dp);
		}
	}
	if (index_ret)
		return vip_index_err(index_ret, err);
	if (ret == -E2BIG)
		return xlb_errf(err, E2BIG,
				"cannot add VIP %s: the VIP map is full (it holds the VIPs and one marker per VIP address)",
				vip_str(key, a, sizeof(a)));
	if (ret)
		return xlb_errf(err, -ret, "cannot write VIP %s: %s",
				vip_str(key, a, sizeof(a)), strerror(-ret));
	return 0;
}

int xlb_dp_vip_del(struct xlb_dp *dp, const struct xlb_vip_key *key)
{
	int ret;

	ret = vip_key_check(key, NULL);
	if (ret)
		return ret;
	ret = bpf_map_delete_elem(dp->vips, key);
	if (ret)
		return ret;
	ret = marker_sync(dp, key);
	return ret ? ret : vip_changed(dp);
}

int xlb_dp_vip_get(const struct xlb_dp *dp, const struct xlb_vip_key *key,
		   struct xlb_vip *vip)
{
	return bpf_map_lookup_elem(dp->vips, key, vip);
}

/* --- backends ------------------------------------------------------------- */

static int backend_id_check(__u16 id, struct xlb_err *err)
{
	if (id > XLB_BACKEND_ID_MAX)
		return xlb_errf(err, EINVAL,
				"backend id %u is reserved (no backend): ids are 0..%u",
				id, XLB_BACKEND_ID_MAX);
	return 0;
}

static int backend_check(__u16 id, const struct xlb_backend *b,
			 struct xlb_err *err)
{
	static const __be32 zero[4];
	int ret;

	ret = backend_id_check(id, err);
	if (ret)
		return ret;
	if (b->family != XLB_FAMILY_INET && b->family != XLB_FAMILY_INET6)
		return xlb_errf(err, EINVAL,
				"backend %u: address family %u is neither 4 (IPv4) nor 6 (IPv6)",
				id, b->family);
	if (b->family == XLB_FAMILY_INET &&
	    (b->addr[1] || b->addr[2] || b->addr[3]))
		return xlb_errf(err, EINVAL,
				"backend %u: IPv4 address has bits set in addr[1..3]: they must be zero",
				id);
	if (!memcmp(b->addr, zero, sizeof(zero)))
		return xlb_errf(err, EINVAL,
				"backend %u: address is unspecified (all zero)",
				id);
	if (b->encap != XLB_ENCAP_IPIP && b->encap != XLB_ENCAP_GUE)
		return xlb_errf(err, EINVAL,
				"backend %u: encapsulation %u is unknown: 0 (IP-in-IP) or 1 (GUE)",
				id, b->encap);
	if (b->flags & ~(XLB_BE_F_VALID | XLB_BE_F_NEXTHOP))
		return xlb_errf(err, EINVAL,
				"backend %u: flags 0x%x have unknown bits: known are 0x%x",
				id, b->flags, XLB_BE_F_VALID | XLB_BE_F_NEXTHOP);
	if ((b->flags & XLB_BE_F_NEXTHOP) &&
	    !memcmp(b->dmac, zero, sizeof(b->dmac)))
		return xlb_errf(err, EINVAL,
				"backend %u: a fixed next hop needs its MAC address",
				id);
	return 0;
}

/* Same destination: connection entries made for a stay valid for b. */
static bool backend_same_target(const struct xlb_backend *a,
				const struct xlb_backend *b)
{
	return a->family == b->family && a->encap == b->encap &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

int xlb_dp_backend_set(const struct xlb_dp *dp, __u16 id,
		       const struct xlb_backend *b, struct xlb_err *err)
{
	struct xlb_backend old, new;
	bool disabled = false;
	__u32 key = id;
	int ret;

	ret = backend_check(id, b, err);
	if (ret)
		return ret;
	ret = bpf_map_lookup_elem(dp->backends, &key, &old);
	if (ret)
		return xlb_errf(err, -ret, "cannot read backend %u: %s", id,
				strerror(-ret));

	new = *b;
	new.pad = 0;
	new.epoch = backend_same_target(&old, &new) ? old.epoch : old.epoch + 1;
	if (!memcmp(&old, &new, sizeof(new)))
		return 0;

	/*
	 * Nobody may see the old entry's flags with the new destination.  A
	 * change of next hop only (same target, same epoch) is one write: a
	 * packet then leaves by the old or the new next hop, and the flows
	 * that remember this backend stay with it.
	 */
	if ((old.flags & XLB_BE_F_VALID) && new.epoch != old.epoch) {
		old.flags = 0;
		ret = bpf_map_update_elem(dp->backends, &key, &old, BPF_ANY);
		if (ret)
			return xlb_errf(err, -ret,
					"cannot disable backend %u before replacing it: %s",
					id, strerror(-ret));
		disabled = true;
		xlb_dp_changed(dp);
	}
	ret = bpf_map_update_elem(dp->backends, &key, &new, BPF_ANY);
	xlb_dp_changed(dp);
	if (ret)
		return xlb_errf(err, -ret,
				"cannot write backend %u: %s%s", id,
				strerror(-ret),
				disabled ? " (it stays disabled)" : "");
	return 0;
}

int xlb_dp_backend_clear(const struct xlb_dp *dp, __u16 id)
{
	struct xlb_backend b;
	__u32 key = id;
	int ret;

	ret = backend_id_check(id, NULL);
	if (ret)
		return ret;
	ret = bpf_map_lookup_elem(dp->backends, &key, &b);
	if (ret || !b.flags)
		return ret;
	b.flags = 0;
	ret = bpf_map_update_elem(dp->backends, &key, &b, BPF_ANY);
	xlb_dp_changed(dp);
	return ret;
}

int xlb_dp_backend_get(const struct xlb_dp *dp, __u16 id,
		       struct xlb_backend *b)
{
	__u32 key = id;
	int ret;

	ret = backend_id_check(id, NULL);
	if (ret)
		return ret;
	return bpf_map_lookup_elem(dp->backends, &key, b);
}

/* --- tables --------------------------------------------------------------- */

static size_t array_bytes(__u32 entries)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)entries * ARRAY_STRIDE;

	return (len + page - 1) / page * page;
}

/* Write header and slots through a shared mapping of the array. */
static int table_fill_mmap(int fd, const struct xlb_table *t)
{
	size_t len = array_bytes(t->size + 1);
	char *p;
	__u32 i;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*(struct xlb_slot *)p = xlb_table_hdr(t->size);
	for (i = 0; i < t->size; i++)
		*(struct xlb_slot *)(p + (size_t)(i + 1) * ARRAY_STRIDE) =
			t->slots[i];
	munmap(p, len);
	return 0;
}

static int table_fill_batch(int fd, const struct xlb_table *t)
{
	struct xlb_slot hdr = xlb_table_hdr(t->size);
	__u32 i, key = 0, count = t->size;
	__u32 *keys;
	int ret;

	keys = malloc((size_t)t->size * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < t->size; i++)
		keys[i] = i + 1;
	ret = bpf_map_update_elem(fd, &key, &hdr, BPF_ANY);
	if (!ret)
		ret = bpf_map_update_batch(fd, keys, t->slots, &count, NULL);
	free(keys);
	return ret;
}

/* A new inner map holding t; nothing refers to it yet. */
static int table_map_new(__u32 flags, const struct xlb_table *t,
			 struct xlb_err *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
	int fd, ret = -EINVAL;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_TABLE_MAP_NAME,
			    sizeof(__u32), sizeof(struct xlb_slot),
			    t->size + 1, &opts);
	if (fd < 0)
		return xlb_errf(err, -fd,
				"cannot create a table map of %u slots: %s",
				t->size, strerror(-fd));
	if (flags & BPF_F_MMAPABLE)
		ret = table_fill_mmap(fd, t);
	if (ret)
		ret = table_fill_batch(fd, t);
	if (ret) {
		close(fd);
		return xlb_errf(err, -ret,
				"cannot fill a table map of %u slots: %s",
				t->size, strerror(-ret));
	}
	return fd;
}

static int vip_id_check(__u32 vip_id, struct xlb_err *err)
{
	if (vip_id >= XLB_MAX_VIPS)
		return xlb_errf(err, EINVAL,
				"VIP id %u is out of range: ids are 0..%u",
				vip_id, XLB_MAX_VIPS - 1);
	return 0;
}

int xlb_dp_table_publish(struct xlb_dp *dp, __u32 vip_id,
			 const struct xlb_table *t, struct xlb_err *err)
{
	return xlb_dp_table_publish_id(dp, vip_id, t, NULL, err);
}

int xlb_dp_table_publish_id(struct xlb_dp *dp, __u32 vip_id,
			    const struct xlb_table *t, __u32 *map_id,
			    struct xlb_err *err)
{
	__u32 c, old;
	int fd, ret, outer;

	ret = vip_id_check(vip_id, err);
	if (ret)
		return ret;
	c = t->slots ? xlb_table_class(t->size) : XLB_TABLE_CLASS_NONE;
	if (c == XLB_TABLE_CLASS_NONE)
		return xlb_errf(err, EINVAL,
				"table for VIP %u has size %u: not one of the allowed primes %u..%u",
				vip_id, t->size, xlb_table_sizes[0],
				XLB_TABLE_SIZE_MAX);
	outer = dp->tables[c - 1];
	fd = table_map_new(TABLE_FLAGS, t, err);
	if (fd < 0)
		return fd;
	if (map_id) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		*map_id = bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
	}
	ret = bpf_map_update_elem(outer, &vip_id, &fd, BPF_ANY);
	close(fd);	/* the outer map holds the table now */
	xlb_dp_changed(dp);
	if (ret == -EINVAL)
		return xlb_errf(err, EINVAL,
				"map %s%u refused the table of VIP %u: its inner map template must be an ARRAY of %u 4-byte slots with flags 0x%x",
				XLB_MAP_TABLES, t->size, vip_id, t->size + 1,
				TABLE_FLAGS);
	if (ret)
		return xlb_errf(err, -ret, "cannot publish the table of VIP %u: %s",
				vip_id, strerror(-ret));
	old = dp->vip_class[vip_id];
	if (old == c)
		return 0;
	/*
	 * Another size: the index names it from its next switch on; the
	 * old size's entry goes after that switch.  Only this VIP's own
	 * fields are written (publishes of other VIPs may run beside).
	 */
	dp->vip_class[vip_id] = (__u8)c;
	if (old != XLB_TABLE_CLASS_NONE)
		dp->vip_stale[vip_id] |= (__u16)(1u << old);
	dp->vip_stale[vip_id] &= (__u16)~(1u << c);
	ret = vip_changed(dp);
	if (ret) {	/* the index still names the old size: keep it so */
		dp->vip_class[vip_id] = (__u8)old;
		dp->vip_stale[vip_id] &= (__u16)~(1u << old);
		bpf_map_delete_elem(outer, &vip_id);
		xlb_dp_changed(dp);
		return vip_index_err(ret, err);
	}
	return 0;
}

int xlb_dp_table_unpublish(const struct xlb_dp *dp, __u32 vip_id)
{
	int ret = vip_id_check(vip_id, NULL);
	__u32 c;

	if (ret)
		return ret;
	c = dp->vip_class[vip_id];
	if (c == XLB_TABLE_CLASS_NONE)
		return -ENOENT;
	ret = bpf_map_delete_elem(dp->tables[c - 1], &vip_id);
	xlb_dp_changed(dp);
	return ret;
}

/* The published inner map of vip_id, opened; -ENOENT if there is none. */
static int table_open(const struct xlb_dp *dp, __u32 vip_id)
{
	__u32 map_id, c = dp->vip_class[vip_id];
	int i, fd = -ENOENT;

	if (c == XLB_TABLE_CLASS_NONE)
		return -ENOENT;
	/* the table may be replaced (and freed) between lookup and open */
	for (i = 0; i < READ_RETRIES && fd == -ENOENT; i++) {
		fd = bpf_map_lookup_elem(dp->tables[c - 1], &vip_id, &map_id);
		if (fd)
			return fd;
		fd = bpf_map_get_fd_by_id(map_id);
	}
	return fd;
}

static int table_read_mmap(int fd, __u32 m, struct xlb_slot *slots)
{
	size_t len = array_bytes(m + 1);
	const char *p;
	__u32 i;

	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	for (i = 0; i < m; i++)
		slots[i] = *(const struct xlb_slot *)(p + (size_t)(i + 1) *
						      ARRAY_STRIDE);
	munmap((void *)p, len);
	return 0;
}

static int table_read_batch(int fd, __u32 m, struct xlb_slot *slots)
{
	__u32 in_batch = 0, out_batch, count, done = 0;
	__u32 *keys;
	int ret = 0;

	keys = malloc((size_t)m * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	/* in_batch is the key before the first one read: entry 0, the header */
	while (done < m) {
		count = m - done;
		ret = bpf_map_lookup_batch(fd, &in_batch, &out_batch, keys,
					   slots + done, &count, NULL);
		done += count;
		if (ret)
			break;
		in_batch = out_batch;
	}
	free(keys);
	if (ret == -ENOENT || !ret)
		return done == m ? 0 : -EIO;
	return ret;
}

/* Read the table map fd (closed here) of VIP vip_id into out. */
static int table_read_fd(int fd, __u32 vip_id, struct xlb_table *out,
			 struct xlb_err *err)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info), key = 0, m;
	struct xlb_slot hdr, *slots = NULL;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (!ret)
		ret = bpf_map_lookup_elem(fd, &key, &hdr);
	if (ret) {
		ret = xlb_errf(err, -ret, "cannot read the table of VIP %u: %s",
			       vip_id, strerror(-ret));
		goto out;
	}
	m = xlb_table_hdr_size(&hdr);
	if (info.value_size != sizeof(struct xlb_slot) ||
	    info.max_entries != m + 1 || !m) {
		ret = xlb_errf(err, EIO,
			       "table of VIP %u is inconsistent: its header says %u slots, the map has %u entries of %u bytes",
			       vip_id, m, info.max_entries, info.value_size);
		goto out;
	}
	slots = malloc((size_t)m * sizeof(*slots));
	if (!slots) {
		ret = xlb_errf(err, ENOMEM, "no memory for a table of %u slots",
			       m);
		goto out;
	}
	ret = -EINVAL;
	if (info.map_flags & BPF_F_MMAPABLE)
		ret = table_read_mmap(fd, m, slots);
	if (ret)
		ret = table_read_batch(fd, m, slots);
	if (ret) {
		free(slots);
		ret = xlb_errf(err, -ret, "cannot read the %u slots of VIP %u: %s",
			       m, vip_id, strerror(-ret));
		goto out;
	}
	if (strcmp(info.name, XLB_TABLE_MAP_NAME)) {
		free(slots);
		ret = xlb_errf(err, EIO, "map %u is not an xlb table (%s)",
			       info.id, info.name);
		goto out;
	}
	out->size = m;
	out->slots = slots;
out:
	close(fd);
	return ret;
}

int xlb_dp_table_read(const struct xlb_dp *dp, __u32 vip_id,
		      struct xlb_table *out, struct xlb_err *err)
{
	int fd, ret;

	ret = vip_id_check(vip_id, err);
	if (ret)
		return ret;
	fd = table_open(dp, vip_id);
	if (fd == -ENOENT)
		return xlb_errf(err, ENOENT, "VIP %u has no published table",
				vip_id);
	if (fd < 0)
		return xlb_errf(err, -fd, "cannot open the table of VIP %u: %s",
				vip_id, strerror(-fd));
	return table_read_fd(fd, vip_id, out, err);
}

int xlb_dp_table_read_map(__u32 map_id, struct xlb_table *out,
			  struct xlb_err *err)
{
	int fd = bpf_map_get_fd_by_id(map_id);

	if (fd < 0)
		return xlb_errf(err, errno, "no table map %u: %s", map_id,
				strerror(errno));
	return table_read_fd(fd, UINT32_MAX, out, err);
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

	ret = vip_id_check(vip_id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->vip_stats, vip_id, w, sizeof(*sum) / 8);
	memcpy(sum, w, sizeof(*sum));
	return ret;
}

int xlb_dp_backend_stats(const struct xlb_dp *dp, __u16 id,
			 struct xlb_counter *sum)
{
	__u64 w[sizeof(*sum) / 8] = { 0 };
	int ret;

	ret = backend_id_check(id, NULL);
	if (!ret)
		ret = percpu_sum(dp, dp->backend_stats, id, w,
				 sizeof(*sum) / 8);
	memcpy(sum, w, sizeof(*sum));
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
	return percpu_sum_all(dp, dp->events, out, XLB_EV_MAX);
}

int xlb_dp_actions(const struct xlb_dp *dp, __u64 out[XLB_ACTIONS])
{
	return percpu_sum_all(dp, dp->actions, out, XLB_ACTIONS);
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
};

_Static_assert(ARRAY_SIZE(event_names) == XLB_EV_MAX,
	       "every event has a name");

const char *xlb_event_name(int ev)
{
	if (ev < 0 || ev >= XLB_EV_MAX)
		return NULL;
	return event_names[ev];
}

/* --- connection table ----------------------------------------------------- */

/*
 * The connection table.  Entries are read and written one by one through
 * the map (lookups, a few inserts), or in place through a mapping of the
 * whole array (scans, bulk inserts: mapping it maps every page at once,
 * which costs more than a few syscalls).  structs.h tells how a reader
 * tells a whole entry from a torn one.
 */
struct ct_view {
	const struct xlb_dp *dp;
	struct xlb_ct_entry *e;	/* the mapping, or NULL */
	size_t bytes;
	size_t entries;		/* all of the map */
	__u32 buckets;		/* as the data path indexes it (config) */
	struct xlb_ct_key key;
};

static int ct_open(const struct xlb_dp *dp, struct ct_view *v, bool map)
{
	struct xlb_config c;
	__u32 key = 0, n;
	long page = sysconf(_SC_PAGESIZE);
	int ret = ct_entries(dp, &n);

	if (ret)
		return ret;
	if (bpf_map_lookup_elem(dp->config, &key, &c))
		return -errno;
	v->dp = dp;
	v->entries = n;
	v->buckets = c.ct_buckets;
	v->key = c.ct_key;
	v->e = NULL;
	if (!map)
		return 0;
	v->bytes = ((size_t)n * sizeof(*v->e) + (size_t)page - 1) &
		   ~((size_t)page - 1);
	v->e = mmap(NULL, v->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		    dp->conntrack, 0);
	if (v->e == MAP_FAILED) {
		v->e = NULL;
		return -errno;
	}
	return 0;
}

static void ct_close(struct ct_view *v)
{
	if (v->e)
		munmap(v->e, v->bytes);
}

/* Entry i as 8 words, as one reader sees them. */
static int ct_get(const struct ct_view *v, size_t i,
		  __u64 w[sizeof(struct xlb_ct_entry) / 8])
{
	const volatile __u64 *src;
	__u32 idx = (__u32)i;
	size_t k;

	if (!v->e)
		return bpf_map_lookup_elem(v->dp->conntrack, &idx, w) ? -errno : 0;
	src = (const volatile __u64 *)&v->e[i];
	for (k = 0; k < sizeof(struct xlb_ct_entry) / 8; k++)
		w[k] = src[k];
	return 0;
}

/* Word 6 of an entry: backend, vip and check. */
#define CT_W1	6

/* Write entry i: check zeroed first, written last (as the data path). */
static int ct_set(const struct ct_view *v, size_t i,
		  const __u64 w[sizeof(struct xlb_ct_entry) / 8])
{
	volatile __u64 *dst;
	__u32 idx = (__u32)i;
	size_t k;

	if (!v->e)	/* one copy in the kernel; readers check what they see */
		return bpf_map_update_elem(v->dp->conntrack, &idx, w, BPF_ANY) ?
			       -errno : 0;
	dst = (volatile __u64 *)&v->e[i];
	dst[CT_W1] = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (k = 0; k < sizeof(struct xlb_ct_entry) / 8; k++)
		if (k != CT_W1)
			dst[k] = w[k];
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	dst[CT_W1] = w[CT_W1];
	return 0;
}

/* Entry i if it is whole and in use: 0 and *out, else -ENOENT. */
static int ct_read(const struct ct_view *v, size_t i, struct xlb_ct_entry *out)
{
	__u64 w[sizeof(*out) / 8];
	int ret = ct_get(v, i, w);

	if (ret)
		return ret;
	memcpy(out, w, sizeof(*out));
	if (!out->check ||
	    out->check != xlb_ct_check(xlb_ct_hash(&v->key, &out->flow), w[5],
				       (__u32)w[CT_W1]))
		return -ENOENT;
	return 0;
}

/* First entry of the flow's bucket. */
static size_t ct_bucket(const struct ct_view *v, const struct xlb_flow *flow,
			__u64 *h)
{
	*h = xlb_ct_hash(&v->key, flow);
	return (size_t)xlb_ct_bucket(*h, v->buckets) * XLB_CT_WAYS;
}

_Static_assert(offsetof(struct xlb_ct_entry, epoch) == 40 &&
	       offsetof(struct xlb_ct_entry, backend) == 8 * CT_W1,
	       "entry words as ct_read and ct_set see them");

int xlb_dp_ct_lookup(const struct xlb_dp *dp, const struct xlb_flow *flow,
		     struct xlb_ct *ct)
{
	struct xlb_ct_entry got;
	struct ct_view v;
	size_t b;
	__u64 h;
	int ret, w;

	ret = ct_open(dp, &v, false);
	if (ret)
		return ret;
	b = ct_bucket(&v, flow, &h);
	ret = -ENOENT;
	for (w = 0; w < XLB_CT_WAYS; w++) {
		if (ct_read(&v, b + w, &got) ||
		    memcmp(&got.flow, flow, sizeof(*flow)))
			continue;
		*ct = (struct xlb_ct){ .last_seen = got.last_seen,
				       .epoch = got.epoch, .hash = got.hash,
				       .backend = got.backend, .vip = got.vip };
		ret = 0;
		break;
	}
	ct_close(&v);
	return ret;
}

/*
 * Write one entry as the data path would: the flow's own way, else a
 * free one, else the bucket's oldest.
 */
static int ct_put(const struct ct_view *v, const struct xlb_flow *flow,
		  const struct xlb_ct *ct)
{
	struct xlb_ct_entry e, got;
	__u64 h, age, vage = 0, now = ct->last_seen;
	__u64 words[sizeof(e) / 8];
	size_t b, victim = 0;
	bool have = false;
	int w;

	b = ct_bucket(v, flow, &h);
	for (w = 0; w < XLB_CT_WAYS; w++) {
		if (ct_read(v, b + w, &got)) {
			if (vage != ~0ULL) {
				victim = b + w;
				vage = ~0ULL;
				have = true;
			}
			continue;
		}
		if (!memcmp(&got.flow, flow, sizeof(*flow))) {
			victim = b + w;
			have = true;
			break;
		}
		/* as the data path ages them: a later stamp is age 0 */
		age = (__s64)(now - got.last_seen) > 0 ? now - got.last_seen : 0;
		if (!have || age > vage) {
			victim = b + w;
			vage = age;
			have = true;
		}
	}
	memset(&e, 0, sizeof(e));
	e.flow = *flow;
	e.epoch = ct->epoch;
	e.hash = ct->hash;
	e.backend = ct->backend;
	e.vip = ct->vip;
	e.last_seen = ct->last_seen;
	memcpy(words, &e, sizeof(e));
	e.check = xlb_ct_check(h, words[5], (__u32)words[CT_W1]);
	memcpy(words, &e, sizeof(e));
	return ct_set(v, victim, words);
}

int xlb_dp_ct_insert(const struct xlb_dp *dp, const struct xlb_flow *flows,
		     const struct xlb_ct *cts, size_t n)
{
	struct ct_view v;
	size_t i;
	int ret;

	ret = ct_open(dp, &v, n >= 256);
	for (i = 0; !ret && i < n; i++)
		ret = ct_put(&v, &flows[i], &cts[i]);
	ct_close(&v);
	xlb_dp_changed(dp);
	return ret;
}

/* Visit every entry: free it (flush), or count the whole ones in use. */
static int ct_scan(const struct xlb_dp *dp, bool flush, __u32 *count)
{
	struct xlb_ct_entry got;
	struct ct_view v;
	__u32 n = 0;
	size_t i;
	int ret;

	ret = ct_open(dp, &v, true);
	if (ret)
		return ret;
	for (i = 0; i < v.entries; i++) {
		if (flush)
			((volatile __u64 *)&v.e[i])[CT_W1] = 0;	/* check 0 */
		else if (v.e[i].check && !ct_read(&v, i, &got))
			n++;
	}
	ct_close(&v);
	if (count)
		*count = n;
	return 0;
}

int xlb_dp_ct_flush(const struct xlb_dp *dp)
{
	int ret = ct_scan(dp, true, NULL);

	xlb_dp_changed(dp);
	return ret;
}

int xlb_dp_ct_count(const struct xlb_dp *dp, __u32 *count)
{
	return ct_scan(dp, false, count);
}

int xlb_dp_ct_capacity(const struct xlb_dp *dp, __u32 *capacity)
{
	__u32 n;
	int ret = ct_entries(dp, &n);

	if (ret)
		return ret;
	*capacity = n / XLB_CT_WAYS * XLB_CT_WAYS;
	return 0;
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
