// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: VIPs (datapath.h).  Address markers and fragment entries are
 * derived from the VIPs here, so callers never write them; the data path
 * finds VIPs through the VIP index (dp_vip_index.c), switched after each
 * change.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <bpf/bpf.h>

#include "config.h"
#include "dp_internal.h"

/* Entries per batch syscall when walking a hash map. */
#define WALK_CHUNK		4096

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
	if (v->flags & ~(XLB_VIP_F_STATELESS | XLB_VIP_F_QUIC))
		return xlb_errf(err, EINVAL,
				"VIP flags 0x%x are not allowed: a VIP may set 0x%x (stateless) and 0x%x (quic)",
				v->flags, XLB_VIP_F_STATELESS, XLB_VIP_F_QUIC);
	if (!(v->flags & XLB_VIP_F_QUIC) && (v->quic_cr_sid || v->quic_nonce))
		return xlb_errf(err, EINVAL,
				"a VIP without the quic flag has no QUIC configuration");
	if (v->flags & XLB_VIP_F_QUIC &&
	    (XLB_QUIC_CR(v->quic_cr_sid) > XLB_QUIC_CR_MAX ||
	     v->quic_cr_sid & 0x80 ||
	     XLB_QUIC_SID(v->quic_cr_sid) < XLB_QUIC_SID_MIN ||
	     v->quic_nonce < XLB_QUIC_NONCE_MIN ||
	     v->quic_nonce > XLB_QUIC_NONCE_MAX ||
	     XLB_QUIC_SID(v->quic_cr_sid) + v->quic_nonce >
		     XLB_QUIC_CID_MAX - 1))
		return xlb_errf(err, EINVAL,
				"QUIC configuration rotation %u, server ID length %u, nonce length %u is not one of the draft: rotation 0..%d, server ID 1..%d, nonce %d..%d octets, both at most %d",
				XLB_QUIC_CR(v->quic_cr_sid),
				XLB_QUIC_SID(v->quic_cr_sid), v->quic_nonce,
				XLB_QUIC_CR_MAX, XLB_QUIC_SID_MAX,
				XLB_QUIC_NONCE_MIN, XLB_QUIC_NONCE_MAX,
				XLB_QUIC_CID_MAX - 1);
	if (v->hash_mode > XLB_HASH_SRC)
		return xlb_errf(err, EINVAL,
				"VIP hash mode %u is unknown: 0 (5-tuple), 1 (3-tuple) or 2 (source address)",
				v->hash_mode);
	return 0;
}

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

void dp_vip_table_free(struct vip_table *vt)
{
	free(vt->keys);
	free(vt->vals);
	memset(vt, 0, sizeof(*vt));
}

int dp_vip_dump(const struct xlb_dp *dp, struct vip_table *vt)
{
	__u32 n;
	int ret;

	memset(vt, 0, sizeof(*vt));
	ret = hash_walk(dp->vips, sizeof(struct xlb_vip_key),
			sizeof(struct xlb_vip), false, vip_collect, vt, &n);
	if (ret)
		dp_vip_table_free(vt);
	return ret;
}

/*
 * Every VIP, for a check or the markers: read from the map, or, while VIP
 * changes are held (a batch: xlbd applying a configuration), from the
 * copy read at the batch's first need and kept since by this handle's
 * own writes (vips_note).  Without it, each VIP written reads the whole
 * map twice: n VIPs cost n^2 entries copied out of the kernel.  Only
 * markers may be stale in the copy; nothing reads them there.  Any
 * failure drops the copy, and so does the release.
 */
static int vips_read(struct xlb_dp *dp, struct vip_table *own,
		     struct vip_table **vt)
{
	struct vip_table *c;
	int ret;

	*vt = own;
	if (!dp->vip_holds)
		return dp_vip_dump(dp, own);
	if (!dp->vip_cache) {
		c = malloc(sizeof(*c));
		if (!c)
			return -ENOMEM;
		ret = dp_vip_dump(dp, c);
		if (ret) {
			free(c);
			return ret;
		}
		dp->vip_cache = c;
	}
	*vt = dp->vip_cache;
	return 0;
}

static void vips_done(struct vip_table *vt, struct vip_table *own)
{
	if (vt == own)
		dp_vip_table_free(own);
}

void dp_vip_cache_drop(struct xlb_dp *dp)
{
	if (!dp->vip_cache)
		return;
	dp_vip_table_free(dp->vip_cache);
	free(dp->vip_cache);
	dp->vip_cache = NULL;
}

/* The copy after key was written with *v (NULL: deleted). */
static void vips_note(struct xlb_dp *dp, const struct xlb_vip_key *key,
		      const struct xlb_vip *v)
{
	struct vip_table *c = dp->vip_cache;
	__u32 i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		if (!memcmp(&c->keys[i], key, sizeof(*key)))
			break;
	if (i < c->n && v) {
		c->vals[i] = *v;
	} else if (i < c->n) {
		c->n--;
		c->keys[i] = c->keys[c->n];
		c->vals[i] = c->vals[c->n];
	} else if (v && vip_collect(key, v, c)) {
		dp_vip_cache_drop(dp);	/* read again at the next need */
	}
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
static int marker_sync(struct xlb_dp *dp, const struct xlb_vip_key *key)
{
	static const __u8 protos[] = { 0, IPPROTO_TCP, IPPROTO_UDP };
	struct xlb_vip_key mk = {};
	struct vip_table own, *vt;
	size_t i;
	int ret;

	ret = vips_read(dp, &own, &vt);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(protos) && !ret; i++) {
		memcpy(mk.addr, key->addr, sizeof(mk.addr));
		mk.proto = protos[i];
		mk.family = key->family | (protos[i] ? XLB_FAMILY_FRAG : 0);
		ret = marker_sync_one(dp, vt, &mk);
	}
	vips_done(vt, &own);
	return ret;
}

int xlb_dp_vip_set(struct xlb_dp *dp, const struct xlb_vip_key *key,
		   const struct xlb_vip *vip, struct xlb_err *err)
{
	struct xlb_vip v = *vip, old;
	struct vip_table own, *vt;
	bool had_old = false;
	char a[XLB_VIP_STR_MAX], b[XLB_VIP_STR_MAX];
	__u32 i;
	int ret, index_ret = 0;

	ret = vip_key_check(key, err);
	if (!ret)
		ret = vip_check(vip, err);
	if (ret)
		return ret;
	v.table = 0;	/* the index's business (vip_index_place) */

	ret = vips_read(dp, &own, &vt);
	if (ret)
		return xlb_errf(err, -ret, "cannot read the VIP map: %s",
				strerror(-ret));
	for (i = 0; i < vt->n; i++) {
		if (vip_is_marker(&vt->keys[i]))
			continue;
		if (!memcmp(&vt->keys[i], key, sizeof(*key))) {
			old = vt->vals[i];
			had_old = true;
		} else if (vt->vals[i].id == v.id) {
			ret = xlb_errf(err, EEXIST,
				       "VIP id %u is already used by VIP %s: every VIP needs an id of its own (for %s)",
				       v.id, xlb_vip_str(&vt->keys[i], a),
				       xlb_vip_str(key, b));
		}
	}
	vips_done(vt, &own);
	if (ret)
		return ret;

	ret = bpf_map_update_elem(dp->vips, key, &v, BPF_ANY);
	if (ret)
		dp_vip_cache_drop(dp);	/* the kernel may say E2BIG late */
	else
		vips_note(dp, key, &v);
	if (!ret) {
		ret = marker_sync(dp, key);
		if (!ret) {
			ret = dp_vip_changed(dp);
			if (ret)	/* the index could not be switched */
				index_ret = ret;
		}
		if (ret) {	/* all or nothing: put the VIP back */
			dp_vip_cache_drop(dp);
			if (had_old)
				bpf_map_update_elem(dp->vips, key, &old,
						    BPF_ANY);
			else
				bpf_map_delete_elem(dp->vips, key);
			marker_sync(dp, key);
			if (index_ret)
				dp_vip_index_sync(dp);
		}
	}
	if (index_ret)
		return dp_vip_index_err(index_ret, err);
	if (ret == -E2BIG)
		return xlb_errf(err, E2BIG,
				"cannot add VIP %s: the VIP map is full (it holds the VIPs and one marker per VIP address)",
				xlb_vip_str(key, a));
	if (ret)
		return xlb_errf(err, -ret, "cannot write VIP %s: %s",
				xlb_vip_str(key, a), strerror(-ret));
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
	vips_note(dp, key, NULL);
	ret = marker_sync(dp, key);
	if (ret)
		dp_vip_cache_drop(dp);
	return ret ? ret : dp_vip_changed(dp);
}

int xlb_dp_vip_get(const struct xlb_dp *dp, const struct xlb_vip_key *key,
		   struct xlb_vip *vip)
{
	return bpf_map_lookup_elem(dp->vips, key, vip);
}
