/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC connection-ID routing: the plaintext connection-ID format of the
 * IETF QUIC-LB draft (draft-ietf-quic-load-balancers, "Plaintext CID
 * Algorithm"), shared by the data path (bpf/xlb.bpf.c) and libxlb.
 *
 * A server that takes part encodes its server ID in every connection ID
 * it issues:
 *
 *   octet 0          config rotation (top 3 bits), then 5 bits that are
 *                    the CID's length minus one or random
 *   octets 1..S      the server ID (S = server ID length, 1..15)
 *   then N octets    nonce (N = nonce length, 4..18; S + N <= 19)
 *
 * Config rotation 0b111 is reserved for CIDs that carry no routing
 * information.  A VIP marked quic names one configuration (its rotation
 * bits, S and N: xlb_vip.quic_cr_sid, quic_nonce) and each backend its
 * server ID (xlb_quic_sids).  Short-header packets (first octet's top bit
 * 0), whose destination CID follows the first octet directly, and whose
 * CID has the VIP's rotation bits and a known server ID of a usable
 * backend, go to that backend whatever their addresses and ports.
 * Everything else (long headers: Initial, 0-RTT, Handshake, Retry,
 * version negotiation; another configuration; unknown IDs; datagrams too
 * short to hold the CID) is routed as any UDP packet: connection table,
 * then table.  Each outcome is counted per VIP (struct xlb_quic_stats).
 *
 * The data path never caches a QUIC VIP's flows (the flow cache keys on
 * addresses and ports, which a CID-routed packet does not follow), so
 * such a VIP's packets take the general path.
 */
#ifndef XLB_QUIC_H
#define XLB_QUIC_H

#include <linux/types.h>

#define XLB_VIP_F_QUIC		(1u << 2)	/* route short headers by CID */

#define XLB_QUIC_CR_MAX		6	/* 7: unroutable CIDs */
#define XLB_QUIC_CR_UNROUTABLE	7
#define XLB_QUIC_SID_MIN	1
#define XLB_QUIC_SID_MAX	15
#define XLB_QUIC_NONCE_MIN	4
#define XLB_QUIC_NONCE_MAX	18
#define XLB_QUIC_CID_MAX	20	/* RFC 9000: CIDs of up to 20 octets */
#define XLB_QUIC_SIDS		65536	/* server IDs in all VIPs */

/* xlb_vip.quic_cr_sid: config rotation bits and server ID length. */
#define XLB_QUIC_CR_SID(cr, sid)	((__u8)((cr) << 4 | (sid)))
#define XLB_QUIC_CR(v)			((v) >> 4 & 7)
#define XLB_QUIC_SID(v)			((v) & 0xf)

/*
 * xlb_quic_sids: HASH (VIP id, server ID) -> backend id (__u32).  The
 * server ID is zero-padded; its length is the VIP's.
 */
struct xlb_quic_sid_key {
	__u32 vip;
	__u8 sid[16];
};

_Static_assert(sizeof(struct xlb_quic_sid_key) == 20, "sid key layout");

/* xlb_quic_stats: PERCPU_ARRAY[XLB_MAX_VIPS], packets of QUIC VIPs. */
struct xlb_quic_stats {
	__u64 by_cid;		/* short header, known server ID: its backend */
	__u64 long_header;	/* long header: routed as today */
	__u64 unknown_id;	/* server ID of no usable backend of the VIP */
	__u64 other_config;	/* other rotation bits (or 0b111: unroutable) */
	__u64 short_packet;	/* too short for the header and the CID */
};

#define XLB_QUIC_STATS_N	5
_Static_assert(sizeof(struct xlb_quic_stats) == 8 * XLB_QUIC_STATS_N,
	       "counters");

/*
 * The server ID a short-header datagram's payload p (len octets) carries
 * under configuration (cr, sid_len, nonce_len), copied to sid (sid_len
 * octets): 0; -1 a long header, -2 too short, -3 another configuration.
 * The data path's reading, in userspace (explain, tests).
 */
static inline int xlb_quic_short_sid(const __u8 *p, __u32 len, __u8 cr,
				     __u8 sid_len, __u8 nonce_len, __u8 *sid)
{
	__u32 i;

	if (len < 1)
		return -2;
	if (p[0] & 0x80)
		return -1;
	if (len < 2u + sid_len + nonce_len)
		return -2;
	if ((p[1] >> 5) != cr)
		return -3;
	for (i = 0; i < sid_len; i++)
		sid[i] = p[2 + i];
	return 0;
}

#endif /* XLB_QUIC_H */
