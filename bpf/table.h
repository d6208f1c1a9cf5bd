/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lookup table: the interface between control plane and data path
 * (docs/design.md contract 2).  Shared by the BPF program and libxlb.
 *
 * Per VIP: M slots, M one of XLB_TABLE_SIZES_X.  The data path reads
 * slots[hash % M]; it does not know whether Maglev or the ring filled them.
 */
#ifndef XLB_TABLE_H
#define XLB_TABLE_H

#include <linux/types.h>

/* A slot that names no backend (empty table, or no second choice). */
#define XLB_BACKEND_NONE	0xffff

/* Largest backend id; ids are 16-bit and XLB_BACKEND_NONE is reserved. */
#define XLB_BACKEND_ID_MAX	0xfffe

struct xlb_slot {
	__u16 primary;		/* backend id that owns the slot */
	__u16 secondary;	/* who would own it were the primary gone */
};

_Static_assert(sizeof(struct xlb_slot) == 4, "a slot is 4 bytes");

/*
 * The allowed table sizes, all prime (Maglev needs M prime for every skip to
 * walk a full permutation).  Roughly doubling, so an operator can keep
 * M >= 100 x backends.
 */
#define XLB_TABLE_SIZES_X(X)						\
	X(1, 251) X(2, 509) X(3, 1021) X(4, 2039) X(5, 4093)		\
	X(6, 8191) X(7, 16381) X(8, 32749) X(9, 65537) X(10, 131071)	\
	X(11, 262139) X(12, 524287) X(13, 1048573)

#define XLB_TABLE_SIZE_ITEM(c, m)	m,
#define XLB_TABLE_SIZES		XLB_TABLE_SIZES_X(XLB_TABLE_SIZE_ITEM)

/*
 * Each size is a class of its own in the data path (bpf/structs.h): class
 * c (the first number above, from 1) holds the tables of the c-th size.
 * Class 0: no table.
 */
#define XLB_TABLE_CLASSES	13
#define XLB_TABLE_CLASS_NONE	0

/*
 * hash % m without a division, for the data path (a 64-bit division is
 * most of a stateless pick's critical path: pkt benchmark).  Lemire, Kaser
 * and Kurz, "Faster remainder by direct computation" (2019): with
 * c = XLB_MOD_C(m), the remainder is the high 64 bits of (c * x mod 2^64)
 * times m, here from two 32 x 32 -> 64-bit products.  Exact for every
 * 32-bit x and 1 < m < 2^32 (tests/unit/table.c checks every size).
 */
#define XLB_MOD_C(m)	(~0ULL / (m) + 1)

static inline __u32 xlb_mod(__u32 x, __u32 m, __u64 c)
{
	__u64 low = c * x;

	return (__u32)(((low >> 32) * m +
			(((low & 0xffffffffULL) * m) >> 32)) >> 32);
}

/*
 * A table in memory (the value of an inner map of xlb_tab_<M>, and what
 * libxlb maps): XLB_TABLE_BYTES(M) bytes, 32-bit words.  Word 0 is the
 * header: M in its low bits, and XLB_TABLE_HDR_WRITING while libxlb
 * rewrites slots in place (bpf/structs.h, "Publication").  Word 1 + i is
 * slot i, struct xlb_slot read as one word (primary in the low half).
 */
#define XLB_TABLE_BYTES(m)	(4 * ((m) + 1))
#define XLB_TABLE_HDR_SIZE	0x00ffffffu
#define XLB_TABLE_HDR_WRITING	0x80000000u

#define XLB_TABLE_SIZE_DEFAULT	65537
#define XLB_TABLE_SIZE_MAX	1048573

#endif /* XLB_TABLE_H */
