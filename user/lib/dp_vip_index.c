// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: the VIP index (bpf/structs.h): an open-addressing array of every
 * entry of the VIP map and the filter of their addresses, built here and
 * switched whole into the data path after each change (or once at
 * xlb_dp_vip_release).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>

#include "dp_internal.h"

#define VIP_INDEX_FLAGS		BPF_F_MMAPABLE

/* Set the filter bit of k's address (the fragment flag left out). */
static void vip_filter_set(struct xlb_vip_slot *s, const struct xlb_vip_key *k)
{
	__u64 d0 = (__u64)k->addr[0] | (__u64)k->addr[1] << 32;
	__u64 d1 = (__u64)k->addr[2] | (__u64)k->addr[3] << 32;
	__u32 h = xlb_vip_filter_hash(d0, d1, k->family & ~XLB_FAMILY_FRAG);
	__u64 *w = (__u64 *)&s[XLB_VIP_INDEX_SLOTS + (h >> 9)];

	w[(h >> 6) & 7] |= 1ULL << (h & 63);
}

/*
 * Place the entries by linear probing, each within XLB_VIP_PROBES slots,
 * and set their addresses' filter bits.
 */
static int vip_index_place(const struct xlb_dp *dp,
			   const struct vip_table *vt, struct xlb_vip_slot **out)
{
	struct xlb_vip_slot *s;
	__u32 i, d, pos = 0;

	s = calloc(XLB_VIP_INDEX_MAP_SLOTS, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < vt->n; i++) {
		__u32 h = xlb_vip_index_hash(&vt->keys[i]);

		vip_filter_set(s, &vt->keys[i]);

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
			    XLB_VIP_INDEX_MAP_SLOTS, &opts);
	if (fd < 0) {
		free(s);
		return -errno;
	}
	bytes = (size_t)XLB_VIP_INDEX_MAP_SLOTS * sizeof(*s);
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

int dp_vip_index_sync(struct xlb_dp *dp)
{
	struct vip_table vt;
	int ret = dp_vip_dump(dp, &vt);

	if (ret)
		return ret;
	ret = vip_index_publish(dp, &vt);
	dp_vip_table_free(&vt);
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
int dp_vip_classes_learn(struct xlb_dp *dp, struct xlb_err *err)
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

int dp_vip_index_err(int ret, struct xlb_err *err)
{
	if (ret == -E2BIG)
		return xlb_errf(err, E2BIG, "cannot index the VIPs: %u slots do not hold them all within %u probes",
				XLB_VIP_INDEX_SLOTS, XLB_VIP_PROBES);
	if (ret == -EINVAL)
		return xlb_errf(err, EINVAL, "map %s refused the VIP index: its inner map template must be an ARRAY of %u %zu-byte slots with flags 0x%x",
				XLB_MAP_VIP_INDEX, XLB_VIP_INDEX_MAP_SLOTS,
				sizeof(struct xlb_vip_slot), VIP_INDEX_FLAGS);
	return xlb_errf(err, -ret, "cannot publish the VIP index: %s",
			strerror(-ret));
}

int xlb_dp_vip_sync(struct xlb_dp *dp, struct xlb_err *err)
{
	int ret = dp_vip_index_sync(dp);

	return ret ? dp_vip_index_err(ret, err) : 0;
}

void xlb_dp_vip_hold(struct xlb_dp *dp)
{
	dp->vip_holds++;
}

int xlb_dp_vip_release(struct xlb_dp *dp, struct xlb_err *err)
{
	if (dp->vip_holds > 0)
		dp->vip_holds--;
	if (!dp->vip_holds)
		dp_vip_cache_drop(dp);
	if (dp->vip_holds || !dp->vip_dirty)
		return 0;
	return xlb_dp_vip_sync(dp, err);
}

/* After a change to xlb_vips: the index now, or at the release. */
int dp_vip_changed(struct xlb_dp *dp)
{
	dp->vip_dirty = true;
	return dp->vip_holds ? 0 : dp_vip_index_sync(dp);
}
