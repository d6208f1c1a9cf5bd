/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Next hops toward backends, for the data path's XLB_BE_F_NEXTHOP entries
 * (the data path then skips bpf_fib_lookup, which costs about 100 ns per
 * packet).  Uses rtnetlink (libmnl): the route to the backend gives the
 * egress interface and gateway; the neighbour table gives the gateway's
 * (or the on-link backend's) MAC.  When the neighbour is not resolved,
 * resolution asks the kernel for a *managed* neighbour entry
 * (NTF_EXT_MANAGED, Linux >= 5.16), which the kernel resolves and keeps
 * fresh without traffic, and answers -EAGAIN; asking again later gives the
 * result.  A valid entry that is not managed is made managed too (its state
 * and address kept), except PERMANENT, NOARP and NTF_EXT_LEARNED entries,
 * which are used as they are and never written.
 *
 * For the caller (xlbd):
 *  - Resolve every backend periodically (every 1 to 5 s is right): the
 *    kernel re-probes managed entries every interval_probe_time_ms (5 s by
 *    default), so a changed MAC shows up here within about one to two such
 *    periods, and routes may change at any time.  On 0, write dmac, smac and
 *    ifindex with XLB_BE_F_NEXTHOP when they differ from the map (and make
 *    sure ifindex is in the data path's TX device map); on -ENETUNREACH,
 *    clear XLB_BE_F_NEXTHOP (the data path's FIB lookup then decides, and
 *    counts what it drops); on -EAGAIN (INCOMPLETE, FAILED or no entry)
 *    either keep a next hop already known or leave the flag clear; on
 *    other errors keep what the map has and log err.
 *  - A resolved call costs four request/answer exchanges with the kernel
 *    (two route lookups, a link and a neighbour lookup), about 12 us; one
 *    that creates or adopts an entry one more; a nexthop-object route
 *    without expanded next hops (nexthop_compat_mode=0) one more.  Nothing
 *    is cached here: every answer reflects the kernel at the time of the
 *    call.
 *  - On kernels without managed entries (before 5.16) the entry is only
 *    "used" (NTF_USE) on each call while unresolved or not managed, which
 *    starts or refreshes resolution: there, entries stay fresh only as long
 *    as the daemon keeps resolving.
 *  - One struct xlb_neigh per thread; it works in the network namespace it
 *    was opened in.  No call blocks for longer than 2 s.
 *  - The egress interface may be any Ethernet-like device the route names
 *    (a VLAN, bond or bridge device too); whether XDP can transmit on it is
 *    the data path's concern.
 */
#ifndef XLB_NEIGH_H
#define XLB_NEIGH_H

#include <stdint.h>

#include <linux/types.h>

#include "error.h"

struct xlb_nh {
	uint32_t ifindex;	/* egress interface */
	uint8_t dmac[6];	/* next hop's MAC */
	uint8_t smac[6];	/* the egress interface's MAC */
	uint8_t family;		/* of the next hop address */
	__be32 via[4];		/* next hop address (gateway or backend) */
};

struct xlb_neigh;

/* An rtnetlink socket in the caller's network namespace. */
struct xlb_neigh *xlb_neigh_open(struct xlb_err *err);
void xlb_neigh_close(struct xlb_neigh *n);

/*
 * The next hop toward addr (family XLB_FAMILY_INET or _INET6; IPv4 in
 * addr[0]).  0 with *out filled; -EAGAIN when the neighbour is not (yet)
 * resolved and resolution was requested; -ENETUNREACH when there is no
 * route (or it is a blackhole, unreachable, prohibit, throw, local,
 * broadcast or other non-unicast route, a multipath route, or one leaving
 * through a non-Ethernet interface; err says which); -EINVAL for a bad
 * family; other negative errnos on netlink failures.  *out is written only
 * on success.  out->family and out->via are the next hop's, which may be
 * of the other family than addr (an IPv4 route via an IPv6 gateway).
 */
int xlb_neigh_resolve(struct xlb_neigh *n, uint8_t family,
		      const __be32 addr[4], struct xlb_nh *out,
		      struct xlb_err *err);

/*
 * Neighbour entries made by the resolution above carry this NDA_PROTOCOL
 * (the route protocol xlbd's VIP routes carry too; `ip neigh` shows
 * "proto 250"); entries it only adopted (made managed) keep theirs.
 */
#define XLB_NEIGH_PROTO		250

/*
 * The next hop toward addr as xlb_neigh_resolve would use it (out->family,
 * out->via, out->ifindex; no MACs), from route lookups only: nothing is
 * created or changed.  Errors as xlb_neigh_resolve's.
 */
int xlb_neigh_hop(struct xlb_neigh *n, uint8_t family, const __be32 addr[4],
		  struct xlb_nh *out, struct xlb_err *err);

/*
 * Remove the neighbour entry of hop (hop->via on hop->ifindex, as
 * xlb_neigh_hop gives it) if resolution made it (XLB_NEIGH_PROTO): 1 when
 * removed, 0 when there is none or it is someone else's (an
 * administrator's, the kernel's own, one only adopted), a negative errno
 * with err on failure.  The caller releases a next hop when no backend it
 * still serves goes through it.
 */
int xlb_neigh_release(struct xlb_neigh *n, const struct xlb_nh *hop,
		      struct xlb_err *err);

#endif /* XLB_NEIGH_H */
