// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: the connection table (datapath.h; its layout and how entries
 * written by several CPUs at once stay safe to read: bpf/structs.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_internal.h"

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
int dp_ct_entries(const struct xlb_dp *dp, __u32 *n)
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
	int ret = dp_ct_entries(dp, &n);

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

/* Write entry i: check busy first, written last (as the data path). */
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
	dst[CT_W1] = (__u64)XLB_CT_CHECK_BUSY << 32;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (k = 0; k < sizeof(struct xlb_ct_entry) / 8; k++)
		if (k != CT_W1)
			dst[k] = w[k];
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	dst[CT_W1] = w[CT_W1];
	return 0;
}

/*
 * Entry i if it is whole and in use: 0 and *out, else -ENOENT with *out
 * as read (CT_FREE tells a free way), or another error if it could not
 * be read.
 */
static int ct_read(const struct ct_view *v, size_t i, struct xlb_ct_entry *out)
{
	__u64 w[sizeof(*out) / 8];
	int ret = ct_get(v, i, w);

	if (ret)	/* an index in range: no lookup answers ENOENT */
		return ret == -ENOENT ? -EIO : ret;
	memcpy(out, w, sizeof(*out));
	if (!out->check ||
	    out->check != xlb_ct_check(xlb_ct_hash(&v->key, &out->flow), w[5],
				       (__u32)w[CT_W1]))
		return -ENOENT;
	return 0;
}

/*
 * ct_read's answer r for a free way; the ways after it are free too
 * (structs.h): lookups and inserts stop there, as the data path does.
 */
#define CT_FREE(r, got)	((r) == -ENOENT && !(got).check)

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
		int r = ct_read(&v, b + w, &got);

		if (CT_FREE(r, got))
			break;
		if (r || memcmp(&got.flow, flow, sizeof(*flow)))
			continue;
		*ct = (struct xlb_ct){ .last_seen = got.last_seen,
				       .epoch = got.epoch, .hash = got.hash,
				       .backend = got.backend,
				       .vip = got.vip & XLB_CT_VIP_MASK,
				       .closed = !!(got.vip & XLB_CT_VIP_CLOSED) };
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
		int r = ct_read(v, b + w, &got);

		if (CT_FREE(r, got)) {
			victim = b + w;
			have = true;
			break;
		}
		if (r) {	/* torn or busy: taken before any in use */
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
	e.vip = (ct->vip & XLB_CT_VIP_MASK) |
		(ct->closed ? XLB_CT_VIP_CLOSED : 0);
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
	int ret = dp_ct_entries(dp, &n);

	if (ret)
		return ret;
	*capacity = n / XLB_CT_WAYS * XLB_CT_WAYS;
	return 0;
}
