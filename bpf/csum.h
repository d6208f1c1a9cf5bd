/* SPDX-License-Identifier: GPL-2.0 */
/* Internet checksum (RFC 1071) helpers for the data path. */
#ifndef XLB_CSUM_H
#define XLB_CSUM_H

#include <linux/types.h>
#include <bpf/bpf_endian.h>

/* Fold a 64-bit one's complement accumulator to 16 bits (not inverted). */
static __always_inline __u16 csum_fold64(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* Sum of n 16-bit words at p (n a compile-time constant). */
static __always_inline __u64 csum_words(const void *p, int n)
{
	const __u16 *w = p;
	__u64 s = 0;
	int i;

#pragma unroll
	for (i = 0; i < n; i++)
		s += w[i];
	return s;
}

/* Sum of an IPv6 address (or an IPv4 one with words = 2). */
static __always_inline __u64 csum_addr(const __be32 *a, int words)
{
	__u64 s = 0;
	int i;

#pragma unroll
	for (i = 0; i < words; i++)
		s += a[i];
	return s;
}

/*
 * Pseudo-header sum (RFC 768 / RFC 8200 8.1) as 32-bit big-endian words
 * added in host order: the caller folds and stores it in network order
 * with the same convention, so the byte order cancels out.
 */
static __always_inline __u64 csum_pseudo(const __be32 *src, const __be32 *dst,
					 int family, __u32 len, __u8 proto)
{
	int words = family == 4 ? 1 : 4;

	return csum_addr(src, words) + csum_addr(dst, words) +
	       bpf_htonl(len) + bpf_htonl(proto);
}

#endif /* XLB_CSUM_H */
