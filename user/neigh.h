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
 * result.
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
 * The next hop toward addr (family XLB_FAMILY_INET or _INET6).  0 with *out
 * filled; -EAGAIN when the neighbour is not (yet) resolved and resolution
 * was requested; -ENETUNREACH when there is no route (or it is a blackhole,
 * unreachable, local or multipath route we cannot follow; err says which);
 * other negative errnos on netlink failures.
 */
int xlb_neigh_resolve(struct xlb_neigh *n, uint8_t family,
		      const __be32 addr[4], struct xlb_nh *out,
		      struct xlb_err *err);

#endif /* XLB_NEIGH_H */
