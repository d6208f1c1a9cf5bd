/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a flow lives in the connection table, and the check that tells a
 * whole entry from a torn one.  Compiled into the data path and libxlb;
 * both must agree on every bit.
 *
 * The index hash is not the flow hash (flow_hash.h): SipHash costs about
 * as much as the rest of a connection-table hit (pkt benchmark), and the
 * index only needs keyed spreading, not a PRF.  It is NH (the universal
 * hash of UMAC: sums of products of key-offset 32-bit words, here source
 * word i paired with destination word i, and the two tail words) followed
 * by a multiply-xorshift finalizer.  The key is derived from the cluster
 * secret, so an outsider cannot aim flows at one bucket to push others
 * out; a bucket has XLB_CT_WAYS entries either way.
 */
#ifndef XLB_CT_HASH_H
#define XLB_CT_HASH_H

#include <linux/types.h>

#include "flow_hash.h"

#define XLB_CT_WAYS	4

/* Index key: 10 32-bit words, one per 32-bit word of a struct xlb_flow. */
struct xlb_ct_key {
	__u32 k[10];
};

/* 32-bit word i of a flow, read as bytes (no aliasing assumptions). */
static __always_inline __u32 xlb_ct_word(const struct xlb_flow *f, int i)
{
	__u32 w;

	__builtin_memcpy(&w, (const char *)f + 4 * i, 4);
	return w;
}

#define XLB_CT_NH(f, k, i, j)						\
	((__u64)(__u32)(xlb_ct_word(f, i) + (k)[i]) *			\
	 (__u32)(xlb_ct_word(f, j) + (k)[j]))

/* 64-bit index hash of a flow (all 40 bytes, padding zero). */
static __always_inline __u64 xlb_ct_hash(const struct xlb_ct_key *key,
					 const struct xlb_flow *f)
{
	const __u32 *k = key->k;
	__u64 h;

	h = XLB_CT_NH(f, k, 0, 4) + XLB_CT_NH(f, k, 1, 5) +
	    XLB_CT_NH(f, k, 2, 6) + XLB_CT_NH(f, k, 3, 7) +
	    XLB_CT_NH(f, k, 8, 9);
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	return h;
}

/* Bucket of a flow: the high half of the hash scaled to [0, buckets). */
static __always_inline __u32 xlb_ct_bucket(__u64 h, __u32 buckets)
{
	return (__u32)(((h >> 32) * buckets) >> 32);
}

/*
 * The check of an entry: index hash of its flow with its two value words
 * (epoch | hash << 32, and backend | vip << 16), odd: never 0 (free)
 * nor XLB_CT_CHECK_BUSY (structs.h).
 */
static __always_inline __u32 xlb_ct_check(__u64 h, __u64 v0, __u32 v1)
{
	__u64 c = h ^ v0 * 0xc2b2ae3d27d4eb4fULL ^
		  (__u64)v1 * 0x165667b19e3779f9ULL;

	c ^= c >> 32;
	return (__u32)c | 1;
}

#endif /* XLB_CT_HASH_H */
