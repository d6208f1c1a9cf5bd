// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded loads (docs/datapath.md, "Bounded loads").  Every
 * XLBD_BOUND_INTERVAL_MS, for each VIP with a bound, the active
 * connections of its active members, as the data path counts them per
 * backend id (bpf/structs.h, "Active connections"), against the bound
 * (xlb_bound_full): a member over it is marked full, one under it
 * cleared, each one store into its member record that the next new flow
 * reads.  A VIP whose bound went away has its marks cleared once; so has
 * every VIP of a data path adopted at start (marks the last daemon left).
 *
 * A mark comes with a budget (xlb_bound_budget): the new flows the
 * member gives away before it is within its bound again, taken by the
 * program one per flow given, so that a mark made on small counts stops
 * steering when it has done its work and not only at the next round (a
 * burst of new flows would otherwise all pass the member by).
 *
 * The data path counts per backend id, so a backend that serves two VIPs
 * brings the connections of both: the bound is then on what the backend
 * carries, which is what it protects.  Between two rounds the program
 * does not see new counts: a burst of new flows within one interval may
 * take a backend past its bound by as many flows as the burst gives it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

#include "health.h"
#include "xlbd.h"

/* One round over every VIP; the loop's lock held. */
void xlbd_bound_tick(struct xlbd *d)
{
	size_t vi, k, first, n;
	__s64 *conns = NULL;
	uint32_t hi = d->beid_hi;

	/* every id's count in one lookup: ids below beid_hi are the used ones */
	if (hi && (!(conns = calloc(hi, sizeof(*conns))) ||
		   xlb_dp_backend_conns_first(&d->dp, hi, conns))) {
		free(conns);
		return;		/* the next round tries again */
	}
	for (vi = 0; vi < d->state.n_vips; vi++) {
		const struct xlb_vip_conf *v = &d->state.vips[vi];
		struct xlbd_vip *rv = &d->rt_vips[vi];
		uint64_t total = 0, wsum = 0;

		if (!v->bound_pct && !rv->bounded)
			continue;
		n = xlbd_vip_backends(d, vi, &first);
		/* the mean: active members of weight > 0 */
		for (k = first; k < first + n && v->bound_pct; k++) {
			uint16_t id = d->rt_bes[k].id;
			__u8 st;

			if (!d->state.backends[k].weight || id >= hi ||
			    xlb_dp_member_get(&d->dp, rv->id, id, &st, NULL) ||
			    st != XLB_MEMBER_ACTIVE)
				continue;
			total += conns[id] > 0 ? (uint64_t)conns[id] : 0;
			wsum += d->state.backends[k].weight;
		}
		for (k = first; k < first + n; k++) {
			uint16_t id = d->rt_bes[k].id;
			uint32_t budget = 0;

			if (v->bound_pct && id < hi)
				budget = xlb_bound_budget(
					conns[id] > 0 ? (uint64_t)conns[id] : 0,
					total, d->state.backends[k].weight,
					wsum, v->bound_pct,
					XLB_MEMBER_BUDGET_MAX);
			/* -ENOENT: not an active member (never full) */
			if (xlb_dp_member_flags_set(&d->dp, rv->id, id,
						    budget ? XLB_MEMBER_F_FULL :
							     0,
						    (int)budget) > 0)
				d->bound_marks++;
		}
		rv->bounded = v->bound_pct != 0;
	}
	free(conns);
}

/* The round's timer runs while some VIP has a bound. */
void xlbd_bound_arm(struct xlbd *d, int tfd)
{
	static const struct itimerspec on = {
		{ 0, XLBD_BOUND_INTERVAL_MS * 1000000L },
		{ 0, XLBD_BOUND_INTERVAL_MS * 1000000L },
	}, off;
	bool want = false;
	size_t vi;

	for (vi = 0; vi < d->state.n_vips && !want; vi++)
		want = d->state.vips[vi].bound_pct || d->rt_vips[vi].bounded;
	if (want == d->bound_armed)
		return;
	if (timerfd_settime(tfd, 0, want ? &on : &off, NULL)) {
		log_err("bounded loads: cannot %s the timer: %s",
			want ? "start" : "stop", strerror(errno));
		return;
	}
	d->bound_armed = want;
}
