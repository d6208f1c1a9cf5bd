// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: backend entries (datapath.h) and their epochs.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

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
