/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC connection-ID routing in the data path (bpf/quic.h has the format
 * and what is routed how).  BPF side only: included by bpf/xlb.bpf.c after
 * struct choice and backend_get.
 */
#ifndef XLB_QUIC_DP_H
#define XLB_QUIC_DP_H

#include "quic.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_QUIC_SIDS);
	__type(key, struct xlb_quic_sid_key);
	__type(value, __u32);
} xlb_quic_sids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct xlb_quic_stats);
} xlb_quic_stats SEC(".maps");

/*
 * A UDP packet p of a QUIC VIP: 0 and *ch filled (backend, flow hash,
 * hop list [backend]) when its destination CID names a usable backend of
 * the VIP; -1 when it is to be routed as today.  A function of its own
 * (called from the general path only), so that its key and reads are on
 * no other frame; xlb_main's comment has the stack budget it fits.
 */
static __noinline int quic_pick(struct xdp_md *ctx,
				const struct xlb_config *cfg,
				const struct xlb_vip *vip, const struct pkt *p,
				struct choice *ch)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xlb_quic_sid_key k = {};
	struct xlb_quic_stats *qs;
	struct xlb_backend *be;
	__u32 off, len, need, i, *id;
	__u8 *q, sid_len, cr;

	if (!cfg || !vip || !p || !ch)
		return -1;
	k.vip = vip->id;
	qs = bpf_map_lookup_elem(&xlb_quic_stats, &k.vip);
	if (!qs)
		return -1;
	sid_len = XLB_QUIC_SID(vip->quic_cr_sid);
	cr = XLB_QUIC_CR(vip->quic_cr_sid);
	/* UDP payload: after the 8-byte header, within the IP length */
	off = p->l4_off;
	len = p->l3_off + p->l3_len;
	if (len < off + 8) {
		qs->short_packet++;
		return -1;
	}
	len -= off + 8;
	barrier_var(off);
	off &= 0x3fff;		/* a bound for the verifier */
	q = data + off + 8;
	if ((void *)(q + 1) > end || !len) {
		qs->short_packet++;
		return -1;
	}
	if (q[0] & 0x80) {
		qs->long_header++;
		return -1;
	}
	need = 2 + sid_len + vip->quic_nonce;
	if (len < need || (void *)(q + 2) > end) {
		qs->short_packet++;
		return -1;
	}
	if ((q[1] >> 5) != cr) {
		qs->other_config++;
		return -1;
	}
	/*
	 * The IP length is within the frame (parsing.h), so len >= need
	 * puts the CID there: the frame check is for the verifier.
	 */
#pragma unroll
	for (i = 0; i < XLB_QUIC_SID_MAX; i++)
		if (i < sid_len && (void *)(q + 3 + i) <= end)
			k.sid[i] = q[2 + i];
	id = bpf_map_lookup_elem(&xlb_quic_sids, &k);
	be = id ? backend_get(*id) : NULL;
	if (!be) {
		qs->unknown_id++;
		return -1;
	}
	ch->id = *id;
	ch->hash = xlb_flow_hash_mode(&cfg->key, &p->flow, vip->hash_mode);
	ch->slot.primary = (__u16)*id;
	ch->slot.secondary = XLB_BACKEND_NONE;
	qs->by_cid++;
	return 0;
}

#endif /* XLB_QUIC_DP_H */
