// SPDX-License-Identifier: GPL-2.0
/*
 * libxlb: the server IDs of QUIC VIPs (bpf/quic.h), xlb_quic_sids.  xlbd
 * hands over the whole set it wants after every change; the map is made
 * equal to it, new and changed entries first, then the ones that went.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "dp_internal.h"

const char *const xlb_quic_stat_names[XLB_QUIC_STATS_N] = {
	"by_cid", "long_header", "unknown_id", "other_config", "short_packet",
};

static int sid_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct xlb_quic_sid_key));
}

static int sids_check(const struct xlb_quic_sid *sids, size_t n,
		      struct xlb_quic_sid_key **sorted, struct xlb_err *err)
{
	struct xlb_quic_sid_key *k;
	size_t i;

	if (n > XLB_QUIC_SIDS)
		return xlb_errf(err, EINVAL,
				"%zu QUIC server IDs: the data path holds at most %d",
				n, XLB_QUIC_SIDS);
	k = calloc(n ? n : 1, sizeof(*k));
	if (!k)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		if (sids[i].key.vip >= XLB_MAX_VIPS ||
		    sids[i].backend >= XLB_MAX_BACKENDS) {
			free(k);
			return xlb_errf(err, EINVAL,
					"QUIC server ID of VIP id %u to backend id %u: ids are below %d and %d",
					sids[i].key.vip, sids[i].backend,
					XLB_MAX_VIPS, XLB_MAX_BACKENDS);
		}
		k[i] = sids[i].key;
	}
	qsort(k, n, sizeof(*k), sid_cmp);
	for (i = 1; i < n; i++)
		if (!sid_cmp(&k[i - 1], &k[i])) {
			__u32 vip = k[i].vip;

			free(k);
			return xlb_errf(err, EINVAL,
					"a QUIC server ID of VIP id %u is given twice",
					vip);
		}
	*sorted = k;
	return 0;
}

int xlb_dp_quic_sids_sync(const struct xlb_dp *dp,
			  const struct xlb_quic_sid *sids, size_t n,
			  struct xlb_err *err)
{
	struct xlb_quic_sid_key *want = NULL, *gone = NULL, key, last;
	size_t i, n_gone = 0, cap = 0;
	bool changed = false, have = false;
	__u32 id;
	int ret;

	ret = sids_check(sids, n, &want, err);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (!bpf_map_lookup_elem(dp->quic_sids, &sids[i].key, &id) &&
		    id == sids[i].backend)
			continue;
		id = sids[i].backend;
		if (bpf_map_update_elem(dp->quic_sids, &sids[i].key, &id,
					BPF_ANY)) {
			ret = xlb_errf(err, errno,
				       "cannot write a QUIC server ID: %s",
				       strerror(errno));
			goto out;
		}
		changed = true;
	}
	/* the ones that went: listed whole, then deleted */
	while (!bpf_map_get_next_key(dp->quic_sids, have ? &last : NULL,
				     &key)) {
		last = key;
		have = true;
		if (bsearch(&key, want, n, sizeof(*want), sid_cmp))
			continue;
		if (n_gone == cap) {
			struct xlb_quic_sid_key *g;

			cap = cap ? 2 * cap : 64;
			g = realloc(gone, cap * sizeof(*g));
			if (!g) {
				ret = xlb_errf(err, ENOMEM, "out of memory");
				goto out;
			}
			gone = g;
		}
		gone[n_gone++] = key;
	}
	for (i = 0; i < n_gone; i++)
		if (!bpf_map_delete_elem(dp->quic_sids, &gone[i]))
			changed = true;
out:
	free(want);
	free(gone);
	if (changed)
		xlb_dp_changed(dp);
	return ret;
}

int xlb_dp_quic_sid_get(const struct xlb_dp *dp,
			const struct xlb_quic_sid_key *key, __u32 *backend)
{
	return bpf_map_lookup_elem(dp->quic_sids, key, backend) ? -errno : 0;
}
