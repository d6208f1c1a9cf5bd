// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: lookup tables (datapath.h, docs/design.md contracts 2 and 4), and
 * how they are published without stalling forwarding.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>

#include "dp_internal.h"

/* Inner table map flags, as the templates of bpf/maps.h have them. */
#define TABLE_FLAGS		BPF_F_MMAPABLE

/* An ARRAY map stores each value in round_up(value_size, 8) bytes. */
#define ARRAY_STRIDE		8

/* How often table_read retries when the table is replaced under it. */
#define READ_RETRIES		5

_Static_assert(sizeof(struct xlb_slot) <= ARRAY_STRIDE, "array stride");

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

int dp_vip_id_check(__u32 vip_id, struct xlb_err *err)
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

	ret = dp_vip_id_check(vip_id, err);
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
	ret = dp_vip_changed(dp);
	if (ret) {	/* the index still names the old size: keep it so */
		dp->vip_class[vip_id] = (__u8)old;
		dp->vip_stale[vip_id] &= (__u16)~(1u << old);
		bpf_map_delete_elem(outer, &vip_id);
		xlb_dp_changed(dp);
		return dp_vip_index_err(ret, err);
	}
	return 0;
}

int xlb_dp_table_unpublish(const struct xlb_dp *dp, __u32 vip_id)
{
	int ret = dp_vip_id_check(vip_id, NULL);
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

	ret = dp_vip_id_check(vip_id, err);
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
