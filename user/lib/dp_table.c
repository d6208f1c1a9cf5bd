// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: lookup tables (datapath.h, docs/design.md contracts 2 and 4), and
 * how they are published without stalling forwarding.
 *
 * A table is an inner ARRAY map of one value, the whole table
 * (bpf/table.h: a header word, then 4-byte slots), mmapable.
 *
 * A table of the size already published, in a map that is the VIP's alone,
 * is rewritten in place (table_rewrite): only the slots that differ, each with one aligned
 * 32-bit store, then a new state generation.  No map is made or switched,
 * so nothing waits for the kernel's RCU grace period, and a VIP has one
 * table's memory, not two.  A packet reads one slot word (docs/design.md
 * contract 4), so it sees that slot of the old table or of the new one,
 * whole: what it would have seen had the whole table been switched
 * before or after it.  The call returns without waiting for packets that
 * read a slot before its store; they forward by the old slot, as they
 * would have by an old table (a backend id is reused only after such a
 * wait: dp_backend.c).
 *
 * A table of another size (or a VIP's first, or one whose map other VIPs
 * share) is a fresh inner map, filled through mmap before anything points
 * at it, then swapped in with one update of the outer ARRAY_OF_MAPS entry
 * of its size, and the VIP index switched to that size (some kernels wait
 * an RCU grace period in each such update).
 *
 * VIPs whose tables are built from the same inputs (one backend pool
 * behind several ports, say) may share one inner map (xlb_dp_table_share):
 * one outer entry each, no map made or filled (on a virtual machine the
 * first write to each fresh page of a map can cost far more than the
 * copy itself).  A shared map is never rewritten in place, as that would
 * change the other VIPs' tables with it.  The inner map's flags and value size must equal those of the
 * outer map's template: there is an outer map per table size
 * (bpf/structs.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <pthread.h>

#include <bpf/bpf.h>

#include "dp_internal.h"

/* Inner table map flags, as the templates of bpf/maps.h have them. */
#define TABLE_FLAGS		BPF_F_MMAPABLE

/* How often table_read retries when the table is replaced under it. */
#define READ_RETRIES		5
/* ... and reads a table rewritten in place (table_rewrite) */
#define READ_TRIES		200
#define READ_PAUSE_US		500

_Static_assert(sizeof(struct xlb_slot) == sizeof(__u32), "a slot is a word");

static __u64 dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Bytes of the mapping of a table of m slots: whole pages. */
static size_t table_map_len(__u32 m)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = XLB_TABLE_BYTES((size_t)m);

	return (len + page - 1) / page * page;
}

/* The table t as the data path reads it: header word, then the slots. */
static void table_words(__u32 *w, const struct xlb_table *t)
{
	w[0] = xlb_table_hdr(t->size);
	memcpy(w + 1, t->slots, (size_t)t->size * sizeof(*t->slots));
}

/*
 * Write header and slots through a shared mapping of the table's value,
 * left in *keep if given.
 */
static int table_fill_mmap(int fd, const struct xlb_table *t, void **keep)
{
	size_t len = table_map_len(t->size);
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	table_words(p, t);
	if (keep)
		*keep = p;
	else
		munmap(p, len);
	return 0;
}

/* The same with one update of the value (a map that is not mmapable). */
static int table_fill_update(int fd, const struct xlb_table *t)
{
	__u32 key = 0, *w;
	int ret;

	w = malloc(XLB_TABLE_BYTES((size_t)t->size));
	if (!w)
		return -ENOMEM;
	table_words(w, t);
	ret = bpf_map_update_elem(fd, &key, w, BPF_ANY);
	free(w);
	return ret;
}

/*
 * A new inner map holding t; nothing refers to it yet.  *keep gets its
 * mapping if it was filled through one, else NULL.
 */
static int table_map_new(__u32 flags, const struct xlb_table *t,
			 void **keep, struct xlb_err *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
	int fd, ret = -EINVAL;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_TABLE_MAP_NAME,
			    sizeof(__u32), XLB_TABLE_BYTES(t->size), 1, &opts);
	if (fd < 0)
		return xlb_errf(err, -fd,
				"cannot create a table map of %u slots: %s",
				t->size, strerror(-fd));
	*keep = NULL;
	if (flags & BPF_F_MMAPABLE)
		ret = table_fill_mmap(fd, t, keep);
	if (ret)
		ret = table_fill_update(fd, t);
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

/*
 * Writers of one VIP's table, one at a time (in this process; xlbd is the
 * one process that publishes): two rewrites in place interleaved would
 * leave a table that is neither.
 */
static pthread_mutex_t vip_lock[XLB_MAX_VIPS] = {
	[0 ... XLB_MAX_VIPS - 1] = PTHREAD_MUTEX_INITIALIZER
};

/*
 * The mapping of a VIP's own table map is kept from one rewrite in place
 * to the next: mapping the table afresh for each rewrite made the first
 * store to each of its pages cost more than all the compares and stores
 * together where page tables are shadowed (a virtual machine; BENCHMARKS.md,
 * "A table kept mapped between rewrites").  Callers hold the VIP's lock.
 */
static void tmap_drop(struct xlb_dp *dp, __u32 vip_id)
{
	struct dp_tmap *tm = &dp->vip_tmap[vip_id];

	if (tm->p)
		munmap(tm->p, table_map_len(tm->size));
	memset(tm, 0, sizeof(*tm));
}

static void tmap_keep(struct xlb_dp *dp, __u32 vip_id, void *p, __u32 map_id,
		      __u32 size)
{
	tmap_drop(dp, vip_id);
	dp->vip_tmap[vip_id] = (struct dp_tmap){
		.p = p, .map_id = map_id, .size = size,
	};
}

void dp_tables_unmap(struct xlb_dp *dp)
{
	__u32 i;

	for (i = 0; i < XLB_MAX_VIPS; i++)
		tmap_drop(dp, i);
}

/*
 * Rewrite the published table of vip_id (class c, the size of t) in place:
 * the header says XLB_TABLE_HDR_WRITING meanwhile, then every slot that
 * differs gets one aligned 32-bit store (primary and secondary together),
 * then the header is clear again.  Returns 1 when there is no published
 * table of that size to rewrite (the caller makes one).
 */
static int table_rewrite(struct xlb_dp *dp, __u32 c, __u32 vip_id,
			 const struct xlb_table *t, __u32 *map_id,
			 struct xlb_err *err)
{
	size_t len = table_map_len(t->size);
	struct dp_tmap *tm = &dp->vip_tmap[vip_id];
	struct bpf_map_info info;
	__u32 id, i, n, ilen = sizeof(info);
	const __u32 *src = (const __u32 *)t->slots;
	volatile __u32 *w;
	void *p;
	int fd;

	if (dp->vip_class[vip_id] != c ||
	    bpf_map_lookup_elem(dp->tables[c - 1], &vip_id, &id))
		return 1;
	/* the id of a map is not reused while our mapping holds it */
	if (tm->p && (tm->map_id != id || tm->size != t->size))
		tmap_drop(dp, vip_id);
	if (!tm->p) {
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			return 1;	/* replaced and freed since: a new one */
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &ilen) ||
		    info.value_size != XLB_TABLE_BYTES(t->size) ||
		    !(info.map_flags & BPF_F_MMAPABLE)) {
			close(fd);
			return 1;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return xlb_errf(err, errno,
					"cannot map the table of VIP %u to rewrite it: %s",
					vip_id, strerror(errno));
		tmap_keep(dp, vip_id, p, id, t->size);
	}
	w = tm->p;
	__atomic_store_n(&w[0], xlb_table_hdr(t->size) | XLB_TABLE_HDR_WRITING,
			 __ATOMIC_RELAXED);
	for (i = 0, n = 0; i < t->size; i++) {
		if (w[1 + i] == src[i])
			continue;
		__atomic_store_n(&w[1 + i], src[i], __ATOMIC_RELAXED);
		n++;
	}
	__atomic_store_n(&w[0], xlb_table_hdr(t->size), __ATOMIC_RELEASE);
	if (n)
		xlb_dp_changed(dp);
	if (map_id)
		*map_id = id;
	return 0;
}

/*
 * Put the table map fd in the outer map of its size (class c) as the
 * table of vip_id, and switch the VIP index to that size if it was
 * another.
 */
static int table_put(struct xlb_dp *dp, __u32 c, __u32 vip_id, int fd,
		     __u32 size, __u32 *map_id, struct xlb_err *err)
{
	int ret, outer = dp->tables[c - 1];
	__u64 t0;
	__u32 old;

	if (map_id) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		*map_id = bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
	}
	t0 = dp_now_ns();
	ret = bpf_map_update_elem(outer, &vip_id, &fd, BPF_ANY);
	__atomic_store_n(&dp->switch_ns, dp_now_ns() - t0, __ATOMIC_RELAXED);
	xlb_dp_changed(dp);
	if (ret == -EINVAL)
		return xlb_errf(err, EINVAL,
				"map %s%u refused the table of VIP %u: its inner map template must be an ARRAY of one %u-byte value (header and %u 4-byte slots) with flags 0x%x",
				XLB_MAP_TABLES, size, vip_id,
				XLB_TABLE_BYTES(size), size, TABLE_FLAGS);
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

/* A new inner map with t, put in the outer map of its size (class c). */
static int table_swap(struct xlb_dp *dp, __u32 c, __u32 vip_id,
		      const struct xlb_table *t, __u32 *map_id,
		      struct xlb_err *err)
{
	__u32 id = 0;
	void *p;
	int fd, ret;

	fd = table_map_new(TABLE_FLAGS, t, &p, err);
	if (fd < 0)
		return fd;
	ret = table_put(dp, c, vip_id, fd, t->size, &id, err);
	close(fd);	/* the outer map holds the table now */
	if (ret) {
		if (p)
			munmap(p, table_map_len(t->size));
		return ret;
	}
	dp->vip_excl[vip_id] = true;	/* a fresh map: its own */
	if (p && id) {	/* the mapping that filled it serves its rewrites */
		tmap_keep(dp, vip_id, p, id, t->size);
	} else {
		if (p)
			munmap(p, table_map_len(t->size));
		tmap_drop(dp, vip_id);
	}
	if (map_id)
		*map_id = id;
	return 0;
}

int xlb_dp_table_publish_id(struct xlb_dp *dp, __u32 vip_id,
			    const struct xlb_table *t, __u32 *map_id,
			    struct xlb_err *err)
{
	__u32 c;
	int ret;

	ret = dp_vip_id_check(vip_id, err);
	if (ret)
		return ret;
	c = t->slots ? xlb_table_class(t->size) : XLB_TABLE_CLASS_NONE;
	if (c == XLB_TABLE_CLASS_NONE)
		return xlb_errf(err, EINVAL,
				"table for VIP %u has size %u: not one of the allowed primes %u..%u",
				vip_id, t->size, xlb_table_sizes[0],
				XLB_TABLE_SIZE_MAX);
	pthread_mutex_lock(&vip_lock[vip_id]);
	ret = dp_members_sync(dp, vip_id, t, 0, err);
	if (!ret)
		ret = dp->vip_excl[vip_id] ?
		      table_rewrite(dp, c, vip_id, t, map_id, err) : 1;
	if (ret > 0)
		ret = table_swap(dp, c, vip_id, t, map_id, err);
	if (!ret)
		ret = dp_members_sync(dp, vip_id, t, 1, err);
	pthread_mutex_unlock(&vip_lock[vip_id]);
	return ret;
}

int xlb_dp_table_share(struct xlb_dp *dp, __u32 vip_id, __u32 from_vip,
		       const struct xlb_table *t, __u32 *map_id,
		       struct xlb_err *err)
{
	__u32 c, id;
	int fd, ret;

	ret = dp_vip_id_check(vip_id, err);
	if (!ret)
		ret = dp_vip_id_check(from_vip, err);
	if (ret)
		return ret;
	if (vip_id == from_vip)
		return xlb_errf(err, EINVAL,
				"VIP %u cannot share its own table", vip_id);
	c = t->slots ? xlb_table_class(t->size) : XLB_TABLE_CLASS_NONE;
	/*
	 * from_vip's map, never to be rewritten in place again: the caller
	 * publishes no table of from_vip meanwhile (its lock is not held
	 * below, where vip_id's is).
	 */
	pthread_mutex_lock(&vip_lock[from_vip]);
	if (c == XLB_TABLE_CLASS_NONE || dp->vip_class[from_vip] != c ||
	    bpf_map_lookup_elem(dp->tables[c - 1], &from_vip, &id))
		ret = xlb_errf(err, ENOENT,
			       "VIP %u publishes no table of %u slots to share",
			       from_vip, t->size);
	else {
		dp->vip_excl[from_vip] = false;
		tmap_drop(dp, from_vip);
	}
	pthread_mutex_unlock(&vip_lock[from_vip]);
	if (ret)
		return ret;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return xlb_errf(err, -fd,
				"cannot open the table map %u of VIP %u: %s",
				id, from_vip, strerror(-fd));
	pthread_mutex_lock(&vip_lock[vip_id]);
	ret = dp_members_sync(dp, vip_id, t, 0, err);
	if (!ret)
		ret = table_put(dp, c, vip_id, fd, t->size, map_id, err);
	if (!ret) {
		dp->vip_excl[vip_id] = false;
		tmap_drop(dp, vip_id);
		ret = dp_members_sync(dp, vip_id, t, 1, err);
	}
	pthread_mutex_unlock(&vip_lock[vip_id]);
	close(fd);
	return ret;
}

__u64 xlb_dp_switch_ns(const struct xlb_dp *dp)
{
	return __atomic_load_n(&dp->switch_ns, __ATOMIC_RELAXED);
}

int xlb_dp_table_unpublish(struct xlb_dp *dp, __u32 vip_id)
{
	int ret = dp_vip_id_check(vip_id, NULL);
	__u32 c;

	if (ret)
		return ret;
	c = dp->vip_class[vip_id];
	if (c == XLB_TABLE_CLASS_NONE) {
		dp_members_clear(dp, vip_id);	/* of a publish that failed */
		return -ENOENT;
	}
	pthread_mutex_lock(&vip_lock[vip_id]);
	ret = bpf_map_delete_elem(dp->tables[c - 1], &vip_id);
	dp->vip_excl[vip_id] = false;
	tmap_drop(dp, vip_id);
	/* its members' places are for others (even after a failed publish) */
	dp_members_clear(dp, vip_id);
	pthread_mutex_unlock(&vip_lock[vip_id]);
	xlb_dp_changed(dp);
	return ret;
}

int xlb_dp_table_map_id(const struct xlb_dp *dp, __u32 vip_id, __u32 *map_id)
{
	__u32 c;

	if (vip_id >= XLB_MAX_VIPS)
		return -EINVAL;
	c = dp->vip_class[vip_id];
	if (c == XLB_TABLE_CLASS_NONE)
		return -ENOENT;
	return bpf_map_lookup_elem(dp->tables[c - 1], &vip_id, map_id) ?
	       -errno : 0;
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

/*
 * The table's words (header, then slots) into w, as they were while no
 * rewrite was under way (its header flag clear before and after the
 * copy); -EBUSY if every try overlapped one.
 */
static int table_read_words(int fd, const struct bpf_map_info *info,
			    __u32 *w)
{
	size_t len = table_map_len(info->value_size / 4 - 1);
	__u32 key = 0, hdr;
	int i, ret = -EBUSY;
	void *p;

	if (!(info->map_flags & BPF_F_MMAPABLE)) {
		ret = bpf_map_lookup_elem(fd, &key, w);
		return ret || !(w[0] & XLB_TABLE_HDR_WRITING) ? ret : -EBUSY;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	for (i = 0; i < READ_TRIES && ret; i++) {
		if (i)
			usleep(READ_PAUSE_US);
		hdr = __atomic_load_n((__u32 *)p, __ATOMIC_ACQUIRE);
		if (hdr & XLB_TABLE_HDR_WRITING)
			continue;
		memcpy(w, p, info->value_size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n((__u32 *)p, __ATOMIC_RELAXED) == hdr)
			ret = 0;
	}
	munmap(p, len);
	return ret;
}

/* Read the table map fd (closed here) of VIP vip_id into out. */
static int table_read_fd(int fd, __u32 vip_id, struct xlb_table *out,
			 struct xlb_err *err)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info), m, *w = NULL;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (ret) {
		ret = xlb_errf(err, -ret, "cannot read the table of VIP %u: %s",
			       vip_id, strerror(-ret));
		goto out;
	}
	if (strcmp(info.name, XLB_TABLE_MAP_NAME)) {
		ret = xlb_errf(err, EIO, "map %u is not an xlb table (%s)",
			       info.id, info.name);
		goto out;
	}
	m = info.value_size / 4 - 1;
	if (info.max_entries != 1 || info.value_size % 4 || !m ||
	    m > XLB_TABLE_SIZE_MAX) {
		ret = xlb_errf(err, EIO,
			       "table of VIP %u is inconsistent: the map has %u entries of %u bytes, a table is one value of 4 * (M + 1) bytes",
			       vip_id, info.max_entries, info.value_size);
		goto out;
	}
	w = malloc(info.value_size);
	if (!w) {
		ret = xlb_errf(err, ENOMEM, "no memory for a table of %u slots",
			       m);
		goto out;
	}
	ret = table_read_words(fd, &info, w);
	if (ret == -EBUSY) {
		ret = xlb_errf(err, EBUSY,
			       "table of VIP %u is being rewritten, or a writer stopped halfway through: publish it again",
			       vip_id);
		goto out;
	}
	if (ret) {
		ret = xlb_errf(err, -ret, "cannot read the %u slots of VIP %u: %s",
			       m, vip_id, strerror(-ret));
		goto out;
	}
	if (xlb_table_hdr_size(w[0]) != m) {
		ret = xlb_errf(err, EIO,
			       "table of VIP %u is inconsistent: its header says %u slots, the map holds %u",
			       vip_id, xlb_table_hdr_size(w[0]), m);
		goto out;
	}
	/* the slots, moved to the front: they are what the caller frees */
	memmove(w, w + 1, (size_t)m * sizeof(*w));
	out->size = m;
	out->slots = (struct xlb_slot *)w;
	out->members = NULL;	/* the data path keeps them apart */
	out->n_members = 0;
	w = NULL;
out:
	free(w);
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
