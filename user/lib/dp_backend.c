// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: backend entries (datapath.h) and their epochs.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

#include "dp_internal.h"

int dp_backend_id_check(__u16 id, struct xlb_err *err)
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

	ret = dp_backend_id_check(id, err);
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

/*
 * Wait until no run of the data path that began before the call is still
 * running (an RCU grace period: XDP and BPF_PROG_TEST_RUN run inside RCU
 * read-side sections).  The kernel waits for one whenever a map-in-map
 * entry is updated from user space, "so that userspace knows that all
 * programs that could be running use the new map value"
 * (kernel/bpf/syscall.c): putting the VIP index back where it is is such
 * an update.  Without an index yet, membarrier(MEMBARRIER_CMD_GLOBAL),
 * which is synchronize_rcu() too.
 */
int dp_wait_readers(const struct xlb_dp *dp)
{
	__u32 key = 0, id;
	int fd, ret;

	if (!bpf_map_lookup_elem(dp->vip_index, &key, &id)) {
		fd = bpf_map_get_fd_by_id(id);
		if (fd >= 0) {
			ret = bpf_map_update_elem(dp->vip_index, &key, &fd,
						  BPF_EXIST);
			close(fd);
			if (!ret)
				return 0;
		}
	}
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	return -errno;
}

static int backend_write(const struct xlb_dp *dp, __u32 key,
			 const struct xlb_backend *b)
{
	int ret = bpf_map_update_elem(dp->backends, &key, b, BPF_ANY);

	xlb_dp_changed(dp);
	return ret;
}

/*
 * The entry protocol (bpf/structs.h, "A backend"): the program uses an
 * entry only while it says XLB_BE_F_VALID, and reads it field by field
 * while a write (a copy in the kernel, in no set order) may be under
 * way.  So nobody may read an entry while it changes to another target:
 *   1. the old entry with flags 0, then a wait until every run that may
 *      have seen it valid has ended (dp_wait_readers);
 *   2. the new content with flags 0: no run uses it;
 *   3. on CPUs that reorder loads (not x86: its loads are not reordered
 *      with older loads, and stores become visible in order), another
 *      wait, so that every run that sees step 4's flags also sees step
 *      2's content;
 *   4. the new entry, flags set: the same bytes, but the flags byte.
 * A run sees the old entry whole, flags 0, or the new entry whole.  A
 * change of next hop only (same target and epoch) is one write: a packet
 * may then leave with the next hop half old, half new (a frame lost,
 * never another backend).  A wait is a grace period (milliseconds): only
 * a change of target pays it, which only the reuse of a backend id is.
 */
int xlb_dp_backend_set(const struct xlb_dp *dp, __u16 id,
		       const struct xlb_backend *b, struct xlb_err *err)
{
	struct xlb_backend old, new, off;
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

	/* the protocol above; a change of next hop only: one write */
	if ((old.flags & XLB_BE_F_VALID) && new.epoch != old.epoch) {
		old.flags = 0;
		ret = backend_write(dp, key, &old);
		if (ret)
			return xlb_errf(err, -ret,
					"cannot disable backend %u before replacing it: %s",
					id, strerror(-ret));
		disabled = true;
		ret = dp_wait_readers(dp);
		if (ret)
			return xlb_errf(err, -ret,
					"cannot wait for the data path to leave backend %u before replacing it: %s (it stays disabled)",
					id, strerror(-ret));
	}
	if ((new.flags & XLB_BE_F_VALID) &&
	    (disabled || !(old.flags & XLB_BE_F_VALID))) {
		off = new;
		off.flags = 0;
		ret = backend_write(dp, key, &off);
#if !defined(__x86_64__) && !defined(__i386__)
		if (!ret)
			ret = dp_wait_readers(dp);
#endif
		if (ret)
			return xlb_errf(err, -ret,
					"cannot write backend %u: %s (it stays disabled)",
					id, strerror(-ret));
		disabled = true;
	}
	ret = backend_write(dp, key, &new);
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

	ret = dp_backend_id_check(id, NULL);
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

	ret = dp_backend_id_check(id, NULL);
	if (ret)
		return ret;
	return bpf_map_lookup_elem(dp->backends, &key, b);
}
