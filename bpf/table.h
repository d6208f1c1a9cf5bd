/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lookup table: the interface between control plane and data path
 * (DESIGN contract 2).  Shared by the BPF program and libxlb.
 *
 * Per VIP: M slots, M one of XLB_TABLE_SIZES.  The data path reads
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
#define XLB_TABLE_SIZES							\
	251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65537, 131071,	\
	262139, 524287, 1048573

#define XLB_TABLE_SIZE_DEFAULT	65537
#define XLB_TABLE_SIZE_MAX	1048573

#endif /* XLB_TABLE_H */
