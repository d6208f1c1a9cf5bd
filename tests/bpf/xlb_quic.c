// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data path (bpf/xlb.bpf.c) through BPF_PROG_TEST_RUN: QUIC
 * connection-ID routing (bpf/quic.h).  A UDP VIP marked quic sends
 * short-header packets whose destination CID carries a known server ID
 * (the QUIC-LB draft's plaintext format) to that backend from any
 * address and port; everything else goes as any UDP packet (connection
 * table, then table), and is never sent to a backend a CID did not name.
 * Fixture and expectations: tests/bpf/lb_fixture.h.
 */
#include "kselftest_harness.h"

#include "lb_fixture.h"

/* The configuration most tests use: the draft's first test vector's. */
#define Q_CR		0
#define Q_SID		3
#define Q_NONCE		4

/* The VIPs under test: UDP over IPIP (IPv4 backends), GUE over IPv6. */
static const int q_kinds[] = { K_UDP_IPIP4, K_UDP_GUE6 };

/* Backend i of VIP v's group (the table holds 0..LB_TABLE_BACKENDS-1). */
static __u16 q_be(int v, int i)
{
	return lb_id(lb_kind(v)->group, i);
}

/* Mark VIP v quic with configuration (cr, sid, nonce); flags 0: unmark. */
static int q_mark(struct lb *lb, int v, __u32 quic, __u8 cr, __u8 sid,
		  __u8 nonce)
{
	struct xlb_vip vip = lb->vip[v];
	struct xlb_err err;

	vip.flags = (vip.flags & ~XLB_VIP_F_QUIC) | quic;
	vip.quic_cr_sid = quic ? XLB_QUIC_CR_SID(cr, sid) : 0;
	vip.quic_nonce = quic ? nonce : 0;
	if (xlb_dp_vip_set(&lb->dp, &lb->key[v], &vip, &err)) {
		fprintf(stderr, "# xlb_dp_vip_set: %s\n", err.msg);
		return -1;
	}
	lb->vip[v] = vip;
	return 0;
}

/* A server ID of n octets from a number (big-endian, as written). */
static void q_sid(__u64 x, __u8 n, __u8 *sid)
{
	int i;

	for (i = n - 1; i >= 0; i--, x >>= 8)
		sid[i] = (__u8)x;
}

static struct xlb_quic_sid q_entry(int v, const __u8 *sid, __u8 n,
				   __u16 backend)
{
	struct xlb_quic_sid e;

	memset(&e, 0, sizeof(e));
	e.key.vip = (__u32)v;
	memcpy(e.key.sid, sid, n);
	e.backend = backend;
	return e;
}

/* A short-header payload: first octet, CID (cr, sid, nonce), then bytes. */
static size_t q_short(__u8 *p, __u8 cr, const __u8 *sid, __u8 sid_len,
		      __u8 nonce_len, __u64 nonce, size_t tail)
{
	size_t n = 0, i;

	p[n++] = 0x40 | 0x01;		/* short header, fixed bit, pn len 2 */
	p[n++] = (__u8)(cr << 5 | (sid_len + nonce_len));	/* length */
	memcpy(p + n, sid, sid_len);
	n += sid_len;
	for (i = 0; i < nonce_len; i++)
		p[n++] = (__u8)(nonce >> (8 * (i % 8)));
	for (i = 0; i < tail; i++)
		p[n++] = (__u8)(0xa5 ^ i);
	return n;
}

/*
 * A long-header payload of the given version whose DCID is dcid (n
 * octets): an Initial (type 0) unless version is 0 (version negotiation).
 */
static size_t q_long(__u8 *p, __u32 version, const __u8 *dcid, __u8 n)
{
	size_t k = 0, i;

	p[k++] = 0xc0 | 0x03;		/* long header, fixed bit, Initial */
	pkt_put32(p + k, version);
	k += 4;
	p[k++] = n;
	memcpy(p + k, dcid, n);
	k += n;
	p[k++] = 8;			/* SCID */
	for (i = 0; i < 8; i++)
		p[k++] = (__u8)(0x11 * (i + 1));
	for (i = 0; i < 40; i++)	/* token, length, packet: filler */
		p[k++] = (__u8)i;
	return k;
}

/* A client UDP packet to v from client number c (address and port). */
static void q_spec(const struct lb *lb, int v, unsigned int c,
		   const __u8 *payload, size_t len, struct pkt_spec *s)
{
	lb_spec(lb, v, s);
	if (s->family == XLB_FAMILY_INET)
		s->src[0] = htonl(0xc6120000u | (c & 0xffff));	/* 198.18/16 */
	else
		s->src[3] = htonl(0x10000u + c);
	s->sport = (__u16)(1024 + (c * 7919) % 60000);
	s->payload = payload;
	s->payload_len = len;
}

static int q_stats(const struct lb *lb, int v, struct xlb_quic_stats *q)
{
	return xlb_dp_quic_stats(&lb->dp, (__u32)v, q);
}

/*
 * Initial from one client, then short headers whose CID names the
 * backend the Initial reached, from new addresses and ports: all reach
 * that backend.  A backend outside the table is reached the same way.
 */
TEST_F(lb, quic_short_header_follows_its_server_id_from_any_address)
{
	static __u8 pl[256];
	unsigned int i, k, c;
	struct xlb_quic_stats q0, q1;
	struct xlb_quic_sid e[3];
	struct xlb_err err;
	struct pkt_spec s;
	struct xlb_flow f;
	struct xlb_pick p;
	__u8 sid[3][Q_SID], dcid[8] = { 0x83, 0x94, 0xc8, 0xf0, 3, 1, 4, 1 };
	size_t len;

	for (k = 0; k < 2 * LB_N(q_kinds); k++) {
		int v = lb_vip(lb_families[k / LB_N(q_kinds)],
			       q_kinds[k % LB_N(q_kinds)]);
		__u16 first;

		ASSERT_EQ(0, q_mark(&self->lb, v, XLB_VIP_F_QUIC, Q_CR, Q_SID,
				    Q_NONCE));
		/* the Initial: a long header, routed as any new UDP flow */
		len = q_long(pl, 1, dcid, sizeof(dcid));
		q_spec(&self->lb, v, 1, pl, len, &s);
		f = lb_flow(&s);
		p = lb_pick(&self->lb, v, &f);
		first = p.primary;
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "Initial", NULL));
		/* its server's ID, one of another table member, one outside */
		q_sid(0xc4605e, Q_SID, sid[0]);
		q_sid(0x010203 + k, Q_SID, sid[1]);
		q_sid(0xfffffe - k, Q_SID, sid[2]);
		e[0] = q_entry(v, sid[0], Q_SID, first);
		e[1] = q_entry(v, sid[1], Q_SID,
			       q_be(v, first == q_be(v, 0) ? 1 : 0));
		e[2] = q_entry(v, sid[2], Q_SID, q_be(v, LB_TABLE_BACKENDS + 1));
		ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, e, 3, &err))
			TH_LOG("%s", err.msg);
		ASSERT_EQ(0, q_stats(&self->lb, v, &q0));
		for (c = 0; c < 300; c++) {
			i = c % 3;
			len = q_short(pl, Q_CR, sid[i], Q_SID, Q_NONCE, c, 24);
			q_spec(&self->lb, v, 2 + c, pl, len, &s);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       e[i].backend, "short header",
					       NULL))
				TH_LOG("client %u, server ID %u", c, i);
		}
		/* the Initial's own address too: the CID wins over its entry */
		len = q_short(pl, Q_CR, sid[2], Q_SID, Q_NONCE, 7, 24);
		q_spec(&self->lb, v, 1, pl, len, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, e[2].backend,
				       "short header from the Initial's address",
				       NULL));
		ASSERT_EQ(0, q_stats(&self->lb, v, &q1));
		EXPECT_EQ(301, q1.by_cid - q0.by_cid);
		EXPECT_EQ(0, q1.unknown_id - q0.unknown_id);
		EXPECT_EQ(0, q1.short_packet - q0.short_packet);
	}
}

/*
 * What the CID does not route goes exactly where a plain UDP flow goes
 * (the table's primary of a new flow), and is counted by outcome: unknown
 * IDs, other configurations (rotation 7: unroutable), truncated headers,
 * wrong lengths, long headers with a known ID in their DCID, version
 * negotiation.
 */
TEST_F(lb, quic_unrouted_packets_go_as_any_udp_flow_and_are_counted)
{
	static __u8 pl[256];
	struct xlb_quic_stats q0, q1;
	struct xlb_quic_sid e;
	struct xlb_err err;
	struct pkt_spec s;
	struct xlb_flow f;
	unsigned int k, c = 1000;
	__u8 sid[Q_SID], other[Q_SID], dcid[8];
	__u64 want[XLB_QUIC_STATS_N] = { 0 };
	size_t len, full;
	int i, cr;

	for (k = 0; k < 2 * LB_N(q_kinds); k++) {
		int v = lb_vip(lb_families[k / LB_N(q_kinds)],
			       q_kinds[k % LB_N(q_kinds)]);
		__u16 outside = q_be(v, LB_TABLE_BACKENDS + 2);

		ASSERT_EQ(0, q_mark(&self->lb, v, XLB_VIP_F_QUIC, Q_CR, Q_SID,
				    Q_NONCE));
		/* one known ID, of a backend the table never picks */
		q_sid(0x424242, Q_SID, sid);
		e = q_entry(v, sid, Q_SID, outside);
		ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, &e, 1, &err))
			TH_LOG("%s", err.msg);
		ASSERT_EQ(0, q_stats(&self->lb, v, &q0));
		memset(want, 0, sizeof(want));

		/* unknown IDs */
		for (i = 0; i < 50; i++) {
			q_sid(0x100000 + (__u64)i * 977, Q_SID, other);
			len = q_short(pl, Q_CR, other, Q_SID, Q_NONCE, i, 24);
			q_spec(&self->lb, v, c++, pl, len, &s);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       LB_EXPLAIN, "unknown ID", NULL));
			want[2]++;
		}
		/* the known ID under every other rotation, 7 included */
		for (cr = 0; cr <= XLB_QUIC_CR_UNROUTABLE; cr++) {
			if (cr == Q_CR)
				continue;
			len = q_short(pl, (__u8)cr, sid, Q_SID, Q_NONCE, 9, 24);
			q_spec(&self->lb, v, c++, pl, len, &s);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       LB_EXPLAIN, "other rotation",
					       NULL))
				TH_LOG("rotation %d", cr);
			want[3]++;
		}
		/*
		 * Truncated: the known ID's CID cut anywhere short of its
		 * length (first octet + CID = 2 + Q_SID + Q_NONCE), and
		 * an empty datagram.
		 */
		full = q_short(pl, Q_CR, sid, Q_SID, Q_NONCE, 5, 0);
		for (len = 0; len < full; len++) {
			q_spec(&self->lb, v, c++, pl, len, &s);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       LB_EXPLAIN, "truncated", NULL))
				TH_LOG("%zu of %zu octets", len, full);
			want[4]++;
		}
		/* exactly the CID and nothing after it: routed by it */
		q_spec(&self->lb, v, c++, pl, full, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, outside,
				       "header and CID only", NULL));
		want[0]++;
		/* long headers whose DCID is the known ID's CID, any version */
		len = q_short(pl, Q_CR, sid, Q_SID, Q_NONCE, 5, 0);
		memcpy(dcid, pl + 1, sizeof(dcid));
		for (i = 0; i < 3; i++) {
			static const __u32 versions[] = {
				1, 0 /* version negotiation */, 0x6b3343cf,
			};

			len = q_long(pl, versions[i], dcid, sizeof(dcid));
			q_spec(&self->lb, v, c++, pl, len, &s);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       LB_EXPLAIN, "long header", NULL))
				TH_LOG("version 0x%08x", versions[i]);
			want[1]++;
		}
		ASSERT_EQ(0, q_stats(&self->lb, v, &q1));
		EXPECT_EQ(want[0], q1.by_cid - q0.by_cid);
		EXPECT_EQ(want[1], q1.long_header - q0.long_header);
		EXPECT_EQ(want[2], q1.unknown_id - q0.unknown_id);
		EXPECT_EQ(want[3], q1.other_config - q0.other_config);
		EXPECT_EQ(want[4], q1.short_packet - q0.short_packet);
	}
}

/*
 * A server ID belongs to one VIP: another QUIC VIP does not route by it,
 * a VIP not marked quic ignores CIDs altogether, and an ID whose backend
 * is no longer usable routes nothing.
 */
TEST_F(lb, quic_server_ids_are_per_vip_and_need_a_usable_backend)
{
	static __u8 pl[256];
	int a = lb_vip(XLB_FAMILY_INET, K_UDP_IPIP4);
	int b = lb_vip(XLB_FAMILY_INET, K_UDP_GUE4);
	struct xlb_quic_stats q0, q1;
	struct xlb_backend gone;
	struct xlb_quic_sid e;
	struct xlb_err err;
	struct pkt_spec s;
	struct xlb_flow f;
	__u8 sid[Q_SID];
	__u16 outside = q_be(a, LB_TABLE_BACKENDS + 3);
	size_t len;
	int c;

	ASSERT_EQ(0, q_mark(&self->lb, a, XLB_VIP_F_QUIC, Q_CR, Q_SID, Q_NONCE));
	ASSERT_EQ(0, q_mark(&self->lb, b, XLB_VIP_F_QUIC, Q_CR, Q_SID, Q_NONCE));
	q_sid(0x0a0b0c, Q_SID, sid);
	e = q_entry(a, sid, Q_SID, outside);
	ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, &e, 1, &err));
	len = q_short(pl, Q_CR, sid, Q_SID, Q_NONCE, 1, 24);

	q_spec(&self->lb, a, 1, pl, len, &s);
	f = lb_flow(&s);
	ASSERT_TRUE(lb_run_fwd(&self->lb, a, &s, &f, outside, "its VIP", NULL));
	ASSERT_EQ(0, q_stats(&self->lb, b, &q0));
	for (c = 0; c < 20; c++) {
		q_spec(&self->lb, b, 100 + c, pl, len, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, b, &s, &f, LB_EXPLAIN,
				       "another VIP", NULL));
	}
	ASSERT_EQ(0, q_stats(&self->lb, b, &q1));
	EXPECT_EQ(20, q1.unknown_id - q0.unknown_id);

	/* unmarked: no CID is read, nothing counted */
	ASSERT_EQ(0, q_mark(&self->lb, a, 0, 0, 0, 0));
	ASSERT_EQ(0, q_stats(&self->lb, a, &q0));
	for (c = 0; c < 20; c++) {
		q_spec(&self->lb, a, 200 + c, pl, len, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, a, &s, &f, LB_EXPLAIN,
				       "VIP not marked quic", NULL));
	}
	ASSERT_EQ(0, q_stats(&self->lb, a, &q1));
	EXPECT_EQ(0, q1.by_cid + q1.unknown_id + q1.long_header +
		     q1.other_config + q1.short_packet -
		     (q0.by_cid + q0.unknown_id + q0.long_header +
		      q0.other_config + q0.short_packet));

	/* marked again, its backend no longer valid: routed as any flow */
	ASSERT_EQ(0, q_mark(&self->lb, a, XLB_VIP_F_QUIC, Q_CR, Q_SID, Q_NONCE));
	gone = self->lb.be[outside];
	ASSERT_EQ(0, xlb_dp_backend_clear(&self->lb.dp, outside));
	ASSERT_EQ(0, q_stats(&self->lb, a, &q0));
	q_spec(&self->lb, a, 300, pl, len, &s);
	f = lb_flow(&s);
	ASSERT_TRUE(lb_run_fwd(&self->lb, a, &s, &f, LB_EXPLAIN,
			       "server ID of a backend gone", NULL));
	ASSERT_EQ(0, q_stats(&self->lb, a, &q1));
	EXPECT_EQ(1, q1.unknown_id - q0.unknown_id);
	ASSERT_EQ(0, xlb_dp_backend_set(&self->lb.dp, outside, &gone, &err));
}

/*
 * The draft's test vectors of the plaintext format (Appendix B, "Test
 * Vectors", "Unencrypted CIDs"), sent as short headers through the
 * program:
 *   cr_bits 0, sid c4605e, nonce 4504cc4f: cid 07c4605e4504cc4f
 *   cr_bits 1, sid 350d28b420, nonce 3487d970b: the draft prints the
 *     nonce with 9 hex digits and the CID with a first octet that does
 *     not match cr_bits 1; the CID here is what its section on the
 *     first octet and the plaintext algorithm make of it: first octet
 *     0x2a (rotation 1, length 10), sid, the nonce 3487d9700b.
 * A server ID one octet off routes nothing.
 */
TEST_F(lb, quic_draft_plaintext_test_vectors)
{
	static const struct {
		__u8 cr, sid_len, nonce_len;
		const char *sid, *cid;
	} vec[] = {
		{ 0, 3, 4, "c4605e", "07c4605e4504cc4f" },
		{ 1, 5, 5, "350d28b420", "2a350d28b4203487d9700b" },
	};
	static __u8 pl[256];
	int v = lb_vip(XLB_FAMILY_INET6, K_UDP_IPIP4);
	__u16 to = q_be(v, LB_TABLE_BACKENDS + 4);
	struct xlb_quic_sid e;
	struct xlb_err err;
	struct pkt_spec s;
	struct xlb_flow f;
	unsigned int i, j;
	__u8 sid[16];
	size_t n;

	for (i = 0; i < LB_N(vec); i++) {
		memset(sid, 0, sizeof(sid));
		for (j = 0; j < vec[i].sid_len; j++)
			sscanf(vec[i].sid + 2 * j, "%2hhx", &sid[j]);
		n = strlen(vec[i].cid) / 2;
		pl[0] = 0x41;
		for (j = 0; j < n; j++)
			sscanf(vec[i].cid + 2 * j, "%2hhx", &pl[1 + j]);
		ASSERT_EQ(n, 1u + vec[i].sid_len + vec[i].nonce_len);
		ASSERT_EQ(vec[i].cr, pl[1] >> 5);
		memset(pl + 1 + n, 0x5a, 24);
		ASSERT_EQ(0, q_mark(&self->lb, v, XLB_VIP_F_QUIC, vec[i].cr,
				    vec[i].sid_len, vec[i].nonce_len));
		e = q_entry(v, sid, vec[i].sid_len, to);
		ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, &e, 1, &err));
		q_spec(&self->lb, v, 40 + i, pl, 1 + n + 24, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, to, vec[i].cid,
				       NULL));
		/* the same CID, last server ID octet changed: not ours */
		pl[1 + vec[i].sid_len] ^= 1;
		q_spec(&self->lb, v, 50 + i, pl, 1 + n + 24, &s);
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "server ID off by one bit", NULL));
	}
}

/* libxlb refuses what the draft does not allow, and changes nothing. */
TEST_F(lb, quic_bad_configurations_and_server_ids_are_refused)
{
	static const __u8 bad[][3] = {
		/* cr, sid, nonce */
		{ 7, 3, 4 }, { 0, 0, 4 }, { 0, 3, 3 }, { 0, 3, 19 },
		{ 0, 15, 5 }, { 0, 2, 18 },
	};
	int v = lb_vip(XLB_FAMILY_INET, K_UDP_IPIP4);
	struct xlb_quic_sid e[2];
	struct xlb_vip vip, got;
	struct xlb_err err;
	__u8 sid[3] = { 1, 2, 3 };
	__u32 id;
	unsigned int i;

	ASSERT_EQ(0, q_mark(&self->lb, v, XLB_VIP_F_QUIC, Q_CR, Q_SID, Q_NONCE));
	for (i = 0; i < LB_N(bad); i++) {
		vip = self->lb.vip[v];
		vip.quic_cr_sid = (__u8)(bad[i][0] << 4 | bad[i][1]);
		vip.quic_nonce = bad[i][2];
		err.msg[0] = 0;
		EXPECT_EQ(-EINVAL, xlb_dp_vip_set(&self->lb.dp,
						  &self->lb.key[v], &vip, &err))
			TH_LOG("rotation %u sid %u nonce %u accepted",
			       bad[i][0], bad[i][1], bad[i][2]);
		EXPECT_NE(0, err.msg[0]);
		ASSERT_EQ(0, xlb_dp_vip_get(&self->lb.dp, &self->lb.key[v],
					    &got));
		EXPECT_EQ(XLB_QUIC_CR_SID(Q_CR, Q_SID), got.quic_cr_sid);
		EXPECT_EQ(Q_NONCE, got.quic_nonce);
	}
	/* a configuration without the flag */
	vip = self->lb.vip[v];
	vip.flags &= ~XLB_VIP_F_QUIC;
	EXPECT_EQ(-EINVAL, xlb_dp_vip_set(&self->lb.dp, &self->lb.key[v], &vip,
					  &err));

	e[0] = q_entry(v, sid, 3, q_be(v, 1));
	ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, e, 1, &err));
	/* twice the same key, ids out of range: nothing written */
	e[1] = e[0];
	e[1].backend = q_be(v, 2);
	EXPECT_EQ(-EINVAL, xlb_dp_quic_sids_sync(&self->lb.dp, e, 2, &err));
	e[1].key.vip = XLB_MAX_VIPS;
	EXPECT_EQ(-EINVAL, xlb_dp_quic_sids_sync(&self->lb.dp, e + 1, 1, &err));
	e[1].key.vip = (__u32)v;
	e[1].backend = XLB_MAX_BACKENDS;
	EXPECT_EQ(-EINVAL, xlb_dp_quic_sids_sync(&self->lb.dp, e + 1, 1, &err));
	ASSERT_EQ(0, xlb_dp_quic_sid_get(&self->lb.dp, &e[0].key, &id));
	EXPECT_EQ(q_be(v, 1), id);
	/* an empty set removes every entry */
	ASSERT_EQ(0, xlb_dp_quic_sids_sync(&self->lb.dp, NULL, 0, &err));
	EXPECT_EQ(-ENOENT, xlb_dp_quic_sid_get(&self->lb.dp, &e[0].key, &id));
}

TEST_HARNESS_MAIN
