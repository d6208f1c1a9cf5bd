// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP data path (bpf/xlb.bpf.c) through BPF_PROG_TEST_RUN, part 2:
 * what packets leave behind and what earlier packets decide.
 *   - fragments: 3-tuple and source-hash VIPs send every fragment of a
 *     packet to one backend (later fragments found by the address marker
 *     of structs.h); 5-tuple VIPs forward the first and drop the rest;
 *   - the connection table (docs/design.md contract 6): entries made, kept
 *     across table changes, replaced when their backend goes, none for
 *     stateless VIPs, UDP entries expire;
 *   - counters per VIP, per backend, per verdict.
 * Fixture and expectations: tests/bpf/lb_fixture.h.
 */
#include <sched.h>
#include <sys/mman.h>

#include "kselftest_harness.h"

#include "clock.h"
#include "lb_fixture.h"

/* --- fragments ------------------------------------------------------------ */

/* Make s (a client packet) the first (later = false) or a later fragment. */
static void fragment(struct pkt_spec *s, bool later)
{
	if (s->family == XLB_FAMILY_INET) {
		s->ip_id = 0x4242;
		s->mf = !later;
		s->frag_off = later ? 9 : 0;	/* 72 bytes in */
	} else {
		s->n_ext = 1;
		s->ext[0] = (struct pkt_ext6){
			.type = IPPROTO_FRAGMENT, .frag_off = later ? 9 : 0,
			.more = !later, .frag_id = 0x4242,
		};
	}
	s->payload_len = later ? 40 : 64;
}


TEST_F(lb, address_markers_written_by_libxlb)
{
	static const struct {
		int kind;
		int copy_of;	/* -1: XLB_VIP_F_ADDR_ONLY */
	} addrs[] = {
		{ K_TCP_IPIP4, -1 }, { K_PORT0, -1 }, { K_3TUPLE, K_3TUPLE },
		{ K_SRCHASH, K_SRCHASH }, { K_ATOMIC, -1 },
	};
	struct xlb_vip_key mk;
	struct xlb_vip m, want;
	struct xlb_err err;
	unsigned int i;

	for (i = 0; i < 2 * LB_N(addrs); i++) {
		int a = (int)(i % LB_N(addrs));
		int fam = lb_families[i / LB_N(addrs)];
		int v = lb_vip(fam, addrs[a].kind);

		mk = self->lb.key[v];
		mk.port = 0;
		mk.proto = 0;
		ASSERT_EQ(0, xlb_dp_vip_get(&self->lb.dp, &mk, &m))
			TH_LOG("no marker for the address of %s",
			       lb_kind(v)->name);
		EXPECT_TRUE(m.flags & XLB_VIP_F_ADDR_ONLY);
		/* the fragment entry of (address, the VIP's protocol) */
		mk.proto = self->lb.key[v].proto;
		mk.family |= XLB_FAMILY_FRAG;
		ASSERT_EQ(0, xlb_dp_vip_get(&self->lb.dp, &mk, &m))
			TH_LOG("no fragment entry for the address of %s",
			       lb_kind(v)->name);
		if (addrs[a].copy_of < 0) {
			EXPECT_TRUE(m.flags & XLB_VIP_F_ADDR_ONLY);
			continue;
		}
		want = self->lb.vip[lb_vip(fam, addrs[a].copy_of)];
		EXPECT_EQ(want.id, m.id);
		EXPECT_EQ(want.flags, m.flags);
		EXPECT_EQ(want.hash_mode, m.hash_mode);
	}
	/* markers are libxlb's own: a caller cannot write one */
	EXPECT_EQ(-EINVAL, xlb_dp_vip_set(&self->lb.dp, &mk, &m, &err));
}

TEST_F(lb, fragments_of_3tuple_and_src_vips_reach_one_backend)
{
	static const int kinds[] = { K_3TUPLE, K_SRCHASH };
	struct pkt_outer o1, o2;
	struct pkt_spec s;
	unsigned int i, n;
	char what[64];
	int v;

	lb_for_each_vip(i, v, kinds) {
		int w = lb_vip_family(v) == XLB_FAMILY_INET ? 0 : 3;

		for (n = 0; n < 8; n++) {
			struct xlb_flow f;

			lb_spec(&self->lb, v, &s);
			s.src[w] = htonl(ntohl(s.src[w]) + n);
			s.sport = (__u16)(40000 + n);
			f = lb_flow(&s);
			fragment(&s, false);
			snprintf(what, sizeof(what), "client %u first fragment",
				 n);
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
					    what, &o1));
			fragment(&s, true);
			snprintf(what, sizeof(what), "client %u later fragment",
				 n);
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
					    what, &o2));
			EXPECT_EQ(0, memcmp(o1.dst, o2.dst, 16));
		}
	}
}

/* Later fragments have no ports: only the fragment entry names the VIP. */
TEST_F(lb, later_fragment_without_marker_not_forwarded)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_vip_key mk;
	static const int kinds[] = { K_3TUPLE };
	struct pkt_spec s;
	unsigned int i;
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		mk = self->lb.key[v];
		mk.port = 0;
		mk.family |= XLB_FAMILY_FRAG;
		ASSERT_EQ(0, bpf_map_delete_elem(self->lb.dp.vips, &mk));
		/* the data path sees xlb_vips through the index */
		ASSERT_EQ(0, xlb_dp_vip_sync(&self->lb.dp, NULL));
		lb_spec(&self->lb, v, &s);
		fragment(&s, true);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_TRUE(lb_expect_pass(in, len, &r, "later fragment, "
					   "fragment entry deleted"));
	}
}

TEST_F(lb, fragments_of_5tuple_vip_first_forwarded_rest_dropped)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6, K_UDP_GUE4 };
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	unsigned int i;
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct xlb_flow f;
		char what[96];

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		fragment(&s, false);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				    "first fragment", NULL));
		fragment(&s, true);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "later fragment [VIP %s, %s "
			 "client]", lb_kind(v)->name,
			 lb_fam_name(lb_vip_family(v)));
		EXPECT_TRUE(lb_expect_drop(in, len, &r, XLB_EV_FRAGMENT,
					   what));
	}
}

/*
 * The marker of an address names one VIP for its later fragments, but a
 * later fragment also says its protocol: one of a protocol that VIP is not
 * for must not follow it.  A_3TUPLE has a 3-tuple TCP VIP and a 5-tuple
 * UDP VIP: later UDP fragments belong to the 5-tuple VIP (drop, counted
 * as fragment), not to the TCP VIP's backends.
 */
TEST_F(lb, later_udp_fragment_of_5tuple_vip_beside_3tuple_tcp_vip_dropped)
{
	static const int kinds[] = { K_3TUPLE_UDP5 };
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	struct xlb_flow f;
	unsigned int i;
	char what[128];
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		fragment(&s, false);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				    "first UDP fragment", NULL));
		fragment(&s, true);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "later UDP fragment to the "
			 "5-tuple UDP VIP beside a 3-tuple TCP VIP [%s]",
			 lb_fam_name(lb_vip_family(v)));
		EXPECT_TRUE(lb_expect_drop(in, len, &r, XLB_EV_FRAGMENT, what));
	}
}

/*
 * A_SRC has only a TCP VIP: the first fragment of a UDP datagram to it is
 * not for a VIP and passes to the stack, so its later fragments must too
 * (the stack reassembles them, contract 7).
 */
TEST_F(lb, later_udp_fragment_to_tcp_only_vip_address_passes)
{
	static const int kinds[] = { K_SRCHASH };
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	unsigned int i;
	char what[128];
	size_t len;
	int v;

	lb_for_each_vip(i, v, kinds) {
		lb_spec(&self->lb, v, &s);
		s.proto = IPPROTO_UDP;
		fragment(&s, false);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "first UDP fragment to a TCP-only "
			 "VIP address [%s]", lb_fam_name(lb_vip_family(v)));
		EXPECT_TRUE(lb_expect_pass(in, len, &r, what));
		fragment(&s, true);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		snprintf(what, sizeof(what), "later UDP fragment to a TCP-only "
			 "VIP address [%s]", lb_fam_name(lb_vip_family(v)));
		EXPECT_TRUE(lb_expect_pass(in, len, &r, what));
	}
}

/* --- connection table ----------------------------------------------------- */

/* A client packet of VIP v whose primary differs between tables a and b. */
static bool moving_flow(const struct lb *lb, int v, const struct xlb_table *a,
			const struct xlb_table *b, struct pkt_spec *s)
{
	struct xlb_flow f;
	unsigned int port;

	for (port = 40000; port < 65000; port++) {
		lb_spec(lb, v, s);
		s->sport = (__u16)port;
		f = lb_flow(s);
		if (lb_pick_in(lb, v, a, &f).primary !=
		    lb_pick_in(lb, v, b, &f).primary)
			return true;
	}
	return false;
}

static bool ct_is(struct __test_metadata *_metadata, const struct lb *lb,
		  const struct xlb_flow *f, __u16 backend, int v,
		  const char *what)
{
	struct xlb_ct ct;

	if (xlb_dp_ct_lookup(&lb->dp, f, &ct)) {
		TH_LOG("%s: no connection entry", what);
		return false;
	}
	if (ct.backend != backend || ct.vip != v ||
	    ct.epoch != lb->be[backend].epoch || !ct.last_seen) {
		TH_LOG("%s: entry backend %u epoch %u vip %u last_seen %llu, "
		       "want backend %u epoch %u vip %d", what, ct.backend,
		       ct.epoch, ct.vip, (unsigned long long)ct.last_seen,
		       backend, lb->be[backend].epoch, v);
		return false;
	}
	return true;
}

/* Entries are stamped on the clock libxlb reads (user/lib/clock.h). */
TEST_F(lb, ct_entry_stamped_in_ticks_of_the_libxlb_clock)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4);
	__u64 before, after;
	struct pkt_spec s;
	struct xlb_flow f;
	struct xlb_ct ct;

	lb_spec(&self->lb, v, &s);
	f = lb_flow(&s);
	ASSERT_EQ(0, xlb_clock_now(&before));
	ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
			       "first packet", NULL));
	ASSERT_EQ(0, xlb_clock_now(&after));
	ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
	EXPECT_LE(before, ct.last_seen);
	EXPECT_GE(after, ct.last_seen);
}

TEST_F(lb, ct_first_packet_inserts_entry)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6, K_UDP_GUE4,
				     K_3TUPLE };
	struct pkt_spec s;
	struct xlb_ct ct;
	unsigned int i;
	__u32 n0, n1;
	int v;

	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &n0));
	EXPECT_EQ(0, n0);
	lb_for_each_vip(i, v, kinds) {
		struct xlb_flow f;
		struct xlb_pick p;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		p = lb_pick(&self->lb, v, &f);
		ASSERT_EQ(-ENOENT, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				    "first packet", NULL));
		EXPECT_TRUE(ct_is(_metadata, &self->lb, &f, p.primary, v,
				  lb_kind(v)->name));
		ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
		EXPECT_EQ(p.hash, ct.hash);
	}
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &n1));
	EXPECT_EQ(2 * LB_N(kinds), n1);
}

/*
 * A flow of VIP v stays on its backend p0 while the table changes, and
 * moves to the table's primary (its entry replaced) once p0 is cleared
 * and out of the table.
 */
static void ct_keep_case(struct __test_metadata *_metadata, struct lb *lb,
			 int v)
{
	int g = lb_kind(v)->group, i, n = 0;
	__u32 m = lb->tbl[v].size;
	struct xlb_table t1, t2;
	__u16 p0, ids[LB_GROUP_SIZE];
	struct pkt_spec s;
	struct xlb_flow f;
	char why[256];

	/* T1: one backend more, so some slots move to it */
	ASSERT_EQ(0, lb_table(lb, v, 0, 5, m, &t1));
	ASSERT_TRUE(moving_flow(lb, v, &lb->tbl[v], &t1, &s));
	f = lb_flow(&s);
	p0 = lb_pick(lb, v, &f).primary;
	ASSERT_TRUE(lb_run_fwd(lb, v, &s, &f, LB_EXPLAIN, "first packet", NULL));
	ASSERT_TRUE(ct_is(_metadata, lb, &f, p0, v, "after the first packet"));

	ASSERT_EQ(0, lb_install(lb, v, &t1, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_NE(p0, lb_pick(lb, v, &f).primary);
	s.tcp_flags = PKT_TCP_ACK;
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p0, "after a table change", NULL));
	EXPECT_TRUE(ct_is(_metadata, lb, &f, p0, v, "after a table change"));

	/* p0 goes: cleared, and out of the table */
	ASSERT_EQ(0, xlb_dp_backend_clear(&lb->dp, p0));
	ASSERT_EQ(0, xlb_dp_backend_get(&lb->dp, p0, &lb->be[p0]));
	for (i = 0; i < 5; i++)
		if (lb_id(g, i) != p0)
			ids[n++] = lb_id(g, i);
	ASSERT_EQ(0, lb_table_ids(lb, ids, n, m, &t2, why, sizeof(why)))
		TH_LOG("%s", why);
	ASSERT_EQ(0, lb_install(lb, v, &t2, why, sizeof(why)))
		TH_LOG("%s", why);
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, LB_EXPLAIN,
			    "after its backend went", NULL));
	EXPECT_TRUE(ct_is(_metadata, lb, &f, lb_pick(lb, v, &f).primary, v,
			  "after its backend went"));

	/* back, for the other family's VIP */
	lb->be[p0].flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP;
	ASSERT_EQ(0, xlb_dp_backend_set(&lb->dp, p0, &lb->be[p0], NULL));
	ASSERT_EQ(0, xlb_dp_backend_get(&lb->dp, p0, &lb->be[p0]));
}

TEST_F(lb, ct_flow_keeps_backend_until_backend_goes)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6, K_UDP_IPIP6 };
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds)
		ct_keep_case(_metadata, &self->lb, v);
}

/* --- members (bpf/structs.h, "Members") ---------------------------------- */

static __u8 member_of(const struct lb *lb, int v, __u16 id)
{
	__u8 st = XLB_MEMBER_FREE;

	if (xlb_dp_member_get(&lb->dp, (__u32)v, id, &st, NULL))
		return XLB_MEMBER_FREE;
	return st;
}

/*
 * A backend marked down (one write) gets no new flow from the next packet
 * on: the slot's secondary takes it; marked active again, the slot's
 * primary has them again.  Stateful and stateless VIPs alike.
 */
TEST_F(lb, member_down_sends_new_flows_to_the_slot_secondary)
{
	static const int kinds[] = { K_TCP_IPIP4, K_UDP_GUE4, K_STATELESS,
				     K_TCP_GUE6 };
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct xlb_err err = { "" };
		struct pkt_spec s;
		struct xlb_flow f;
		struct xlb_pick p;
		struct xlb_ct ct;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		p = lb_pick(&self->lb, v, &f);
		ASSERT_NE(XLB_BACKEND_NONE, p.secondary);
		ASSERT_NE(p.primary, p.secondary);
		ASSERT_EQ(XLB_MEMBER_ACTIVE, member_of(&self->lb, v, p.primary))
			TH_LOG("publication makes the slots' backends members");
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.primary, XLB_MEMBER_DOWN,
					       &err));
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.secondary,
				       "new flow, primary down", NULL));
		if (!(lb_kind(v)->flags & XLB_VIP_F_STATELESS)) {
			ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
			EXPECT_EQ(p.secondary, ct.backend);
			ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		}
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.primary, XLB_MEMBER_ACTIVE,
					       &err));
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
				       "new flow, primary back", NULL));
		/* primary and secondary both out: no backend for the slot */
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.primary, XLB_MEMBER_DRAIN,
					       &err));
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.secondary, XLB_MEMBER_DOWN,
					       &err));
		{
			static __u8 in[LB_BUF];
			static struct lb_res r;
			size_t len = lb_build(&s, in);

			lb_run(&self->lb, in, len, &r);
			EXPECT_EQ(XDP_DROP, r.retval)
				TH_LOG("%s: no usable backend, not dropped",
				       lb_kind(v)->name);
		}
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.primary, XLB_MEMBER_ACTIVE,
					       NULL));
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.secondary, XLB_MEMBER_ACTIVE,
					       NULL));
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
	}
}

/*
 * An established flow of VIP v (TCP or UDP) whose backend p0 is then
 *   drained: stays on p0;
 *   marked down: moves (re-picked: the slot's secondary, as a new flow);
 *   removed from v by a publication while p0 still serves v's twin of the
 *   other family (its backend entry valid): moves, never stays on p0.
 */
static void member_case(struct __test_metadata *_metadata, struct lb *lb,
			int v)
{
	int twin = (v + LB_KINDS) % (2 * LB_KINDS), g = lb_kind(v)->group;
	__u32 m = lb->tbl[v].size;
	struct xlb_table_member mem[LB_TABLE_BACKENDS];
	struct xlb_err err = { "" };
	__u16 ids[LB_TABLE_BACKENDS];
	struct xlb_table t;
	struct xlb_pick p;
	struct pkt_spec s;
	struct xlb_flow f;
	char why[256];
	int i, n = 0;

	lb_spec(lb, v, &s);
	f = lb_flow(&s);
	p = lb_pick(lb, v, &f);
	ASSERT_TRUE(lb_run_fwd(lb, v, &s, &f, p.primary, "first packet", NULL));
	ASSERT_TRUE(ct_is(_metadata, lb, &f, p.primary, v, "first packet"));
	if (f.proto == IPPROTO_TCP)
		s.tcp_flags = PKT_TCP_ACK;

	ASSERT_EQ(0, xlb_dp_member_set(&lb->dp, (__u32)v, p.primary,
				       XLB_MEMBER_DRAIN, &err));
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p.primary, "drained", NULL));
	EXPECT_TRUE(ct_is(_metadata, lb, &f, p.primary, v, "drained"));

	ASSERT_EQ(0, xlb_dp_member_set(&lb->dp, (__u32)v, p.primary,
				       XLB_MEMBER_DOWN, &err));
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p.secondary, "down", NULL));
	EXPECT_TRUE(ct_is(_metadata, lb, &f, p.secondary, v, "down"));
	ASSERT_EQ(0, xlb_dp_member_set(&lb->dp, (__u32)v, p.primary,
				       XLB_MEMBER_ACTIVE, &err));
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p.secondary,
			       "primary back: the moved flow stays", NULL));

	/* removed: a table (with its member list) without p0 = its secondary now */
	ASSERT_EQ(0, xlb_dp_ct_flush(&lb->dp));
	s.tcp_flags = PKT_TCP_SYN;
	ASSERT_TRUE(lb_run_fwd(lb, v, &s, &f, p.primary, "again", NULL));
	if (f.proto == IPPROTO_TCP)
		s.tcp_flags = PKT_TCP_ACK;
	for (i = 0; i < LB_TABLE_BACKENDS; i++)
		if (lb_id(g, i) != p.primary) {
			mem[n].id = ids[n] = lb_id(g, i);
			mem[n++].state = XLB_MEMBER_ACTIVE;
		}
	ASSERT_EQ(0, lb_table_ids(lb, ids, n, m, &t, why, sizeof(why)))
		TH_LOG("%s", why);
	t.members = malloc(sizeof(mem));
	ASSERT_NE(NULL, t.members);
	memcpy(t.members, mem, (size_t)n * sizeof(*mem));
	t.n_members = (__u32)n;
	ASSERT_EQ(0, lb_install(lb, v, &t, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(XLB_MEMBER_GONE, member_of(lb, v, p.primary));
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(lb, twin, p.primary))
		TH_LOG("the twin VIP keeps it");
	ASSERT_EQ(0, xlb_dp_backend_get(&lb->dp, p.primary, &lb->be[p.primary]));
	EXPECT_TRUE(lb->be[p.primary].flags & XLB_BE_F_VALID);
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, LB_EXPLAIN,
			       "removed from its VIP, alive under another", NULL));
	EXPECT_TRUE(ct_is(_metadata, lb, &f, lb_pick(lb, v, &f).primary, v,
			  "removed from its VIP"));
	EXPECT_NE(p.primary, lb_pick(lb, v, &f).primary);

	/* the fixture's table again: p0 a member again */
	ASSERT_EQ(0, lb_publish(lb, v, 0, LB_TABLE_BACKENDS, m));
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(lb, v, p.primary));
	ASSERT_EQ(0, xlb_dp_ct_flush(&lb->dp));
}

TEST_F(lb, member_state_decides_established_flows_tcp_and_udp)
{
	static const int kinds[] = { K_TCP_IPIP4, K_UDP_IPIP4, K_TCP_GUE6,
				     K_UDP_GUE6 };
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds)
		member_case(_metadata, &self->lb, v);
}

/* Bad input: a clear error, nothing written. */
TEST_F(lb, member_set_refuses_bad_input)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4);
	__u16 id = lb_id(G_IPIP4, 0);
	struct xlb_err err = { "" };

	EXPECT_EQ(-EINVAL, xlb_dp_member_set(&self->lb.dp, XLB_MAX_VIPS, id,
					     XLB_MEMBER_DOWN, &err));
	EXPECT_NE(NULL, strstr(err.msg, "out of range")) TH_LOG("%s", err.msg);
	EXPECT_EQ(-EINVAL, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					     XLB_BACKEND_NONE, XLB_MEMBER_DOWN,
					     &err));
	EXPECT_NE(NULL, strstr(err.msg, "reserved")) TH_LOG("%s", err.msg);
	EXPECT_EQ(-EINVAL, xlb_dp_member_set(&self->lb.dp, (__u32)v, id, 0,
					     &err));
	EXPECT_EQ(-EINVAL, xlb_dp_member_set(&self->lb.dp, (__u32)v, id, 9,
					     &err));
	EXPECT_NE(NULL, strstr(err.msg, "state 9")) TH_LOG("%s", err.msg);
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(&self->lb, v, id));
	EXPECT_EQ(-ENOENT, xlb_dp_member_get(&self->lb.dp, (__u32)v,
					     lb_id(G_IPIP4, 8), &(__u8){ 0 },
					     NULL));
}

TEST_F(lb, ct_stateless_vip_makes_no_entries)
{
	static const int kinds[] = { K_STATELESS, K_ATOMIC };
	int sv = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4), v;
	struct pkt_spec s;
	struct xlb_flow f;
	struct xlb_ct ct;
	unsigned int i, n;
	__u32 before, after;

	/* one stateful flow, so the count is not trivially 0 */
	lb_spec(&self->lb, sv, &s);
	f = lb_flow(&s);
	ASSERT_TRUE(lb_run_fwd(&self->lb, sv, &s, &f, LB_EXPLAIN, "stateful",
			    NULL));
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &before));
	ASSERT_EQ(1, before);
	lb_for_each_vip(i, v, kinds) {
		for (n = 0; n < 10; n++) {
			lb_spec(&self->lb, v, &s);
			s.sport = (__u16)(50000 + n);
			f = lb_flow(&s);
			ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
					    "stateless", NULL));
			EXPECT_EQ(-ENOENT,
				  xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
		}
	}
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &after));
	EXPECT_EQ(before, after);
}

/* Make the flow's entry look idle since boot. */
static int ct_age(const struct lb *lb, const struct xlb_flow *f)
{
	struct xlb_ct ct;

	if (xlb_dp_ct_lookup(&lb->dp, f, &ct))
		return -1;
	ct.last_seen = 0;
	return xlb_dp_ct_insert(&lb->dp, f, &ct, 1);
}

/*
 * A flow of VIP v on p0; the table changes (p1 would be the pick now);
 * then its entry ages past the UDP idle time: UDP moves to p1, TCP stays.
 */
static void ct_idle_case(struct __test_metadata *_metadata, struct lb *lb,
			 int v)
{
	bool udp = lb_kind(v)->proto == IPPROTO_UDP;
	struct xlb_table t1;
	struct pkt_spec s;
	struct xlb_flow f;
	__u16 p0, p1;
	char why[256];

	ASSERT_EQ(0, lb_table(lb, v, 0, 5, lb->tbl[v].size, &t1));
	ASSERT_TRUE(moving_flow(lb, v, &lb->tbl[v], &t1, &s));
	f = lb_flow(&s);
	p0 = lb_pick(lb, v, &f).primary;
	ASSERT_TRUE(lb_run_fwd(lb, v, &s, &f, LB_EXPLAIN, "first packet", NULL));
	ASSERT_EQ(0, lb_install(lb, v, &t1, why, sizeof(why)))
		TH_LOG("%s", why);
	p1 = lb_pick(lb, v, &f).primary;
	ASSERT_NE(p0, p1);
	/* within the idle time: stays */
	EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p0, "fresh entry", NULL));
	ASSERT_EQ(0, ct_age(lb, &f));
	if (udp) {
		EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, LB_EXPLAIN,
				    "idle UDP entry", NULL));
		EXPECT_TRUE(ct_is(_metadata, lb, &f, p1, v,
				  "idle UDP entry replaced"));
	} else {
		EXPECT_TRUE(lb_run_fwd(lb, v, &s, &f, p0, "idle TCP entry", NULL));
		EXPECT_TRUE(ct_is(_metadata, lb, &f, p0, v,
				  "idle TCP entry kept"));
	}
}

/*
 * The connection table as the data path sees it, mapped: the entries of
 * f's bucket (*way set to f's own way, or -1).
 */
struct ct_raw {
	struct xlb_ct_entry *map;
	size_t bytes;
	struct xlb_ct_entry *bucket;
};

static int ct_raw_open(const struct lb *lb, const struct xlb_flow *f,
		       struct ct_raw *r, int *way)
{
	struct xlb_ct_key key;
	__u32 cap;
	int w;

	if (xlb_dp_ct_capacity(&lb->dp, &cap))
		return -1;
	r->bytes = (size_t)cap * sizeof(*r->map);
	r->map = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		      lb->dp.conntrack, 0);
	if (r->map == MAP_FAILED)
		return -1;
	xlb_ct_key_derive(&lb->cfg.key, &key);
	r->bucket = r->map + (size_t)xlb_ct_bucket(xlb_ct_hash(&key, f),
						     cap / XLB_CT_WAYS) *
				     XLB_CT_WAYS;
	*way = -1;
	for (w = 0; w < XLB_CT_WAYS; w++)
		if (r->bucket[w].check &&
		    !memcmp(&r->bucket[w].flow, f, sizeof(*f)))
			*way = w;
	return 0;
}

/*
 * An entry that does not check (what a reader sees when two CPUs wrote
 * it at once) is a miss: the packet goes by the table, and the entry is
 * written whole again.
 */
TEST_F(lb, ct_torn_entry_is_a_miss_and_is_rewritten)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6 };
	struct xlb_table t1;
	struct pkt_spec s;
	struct xlb_flow f;
	struct ct_raw r;
	unsigned int i;
	char why[256];
	__u16 p0, p1;
	int v, way;

	lb_for_each_vip(i, v, kinds) {
		ASSERT_EQ(0, lb_table(&self->lb, v, 0, 5,
				      self->lb.tbl[v].size, &t1));
		ASSERT_TRUE(moving_flow(&self->lb, v, &self->lb.tbl[v], &t1,
					&s));
		f = lb_flow(&s);
		p0 = lb_pick(&self->lb, v, &f).primary;
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "first packet", NULL));
		ASSERT_EQ(0, lb_install(&self->lb, v, &t1, why, sizeof(why)))
			TH_LOG("%s", why);
		p1 = lb_pick(&self->lb, v, &f).primary;
		ASSERT_NE(p0, p1);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p0, "whole entry",
				       NULL));
		/* the flow hash of another writer, with this one's check */
		ASSERT_EQ(0, ct_raw_open(&self->lb, &f, &r, &way));
		ASSERT_LE(0, way);
		r.bucket[way].hash ^= 0x5a5a;
		xlb_dp_changed(&self->lb.dp);	/* written behind libxlb */
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p1, "torn entry",
				       NULL));
		EXPECT_TRUE(ct_is(_metadata, &self->lb, &f, p1, v,
				  "rewritten entry"));
		munmap(r.map, r.bytes);
	}
}

/* n flows of VIP v in one bucket, found by their index hash */
static bool bucket_flows(const struct lb *lb, int v, struct pkt_spec *s,
			 struct xlb_flow *f, unsigned int n)
{
	struct xlb_ct_key key;
	unsigned int i, k = 0;
	__u32 cap, bucket = 0;

	if (xlb_dp_ct_capacity(&lb->dp, &cap))
		return false;
	xlb_ct_key_derive(&lb->cfg.key, &key);
	for (i = 0; i < (1u << 24) && k < n; i++) {
		struct pkt_spec t;
		struct xlb_flow g;
		__u32 b;

		lb_spec(lb, v, &t);
		t.sport = (__u16)(1024 + i % 60000);
		t.src[0] ^= htonl(i / 60000);
		g = lb_flow(&t);
		b = xlb_ct_bucket(xlb_ct_hash(&key, &g), cap / XLB_CT_WAYS);
		if (k && b != bucket)
			continue;
		bucket = b;
		s[k] = t;
		f[k++] = g;
	}
	return k == n;
}

/*
 * A bucket holds XLB_CT_WAYS flows; a flow that finds it full takes the
 * way seen longest ago, and the others stay.
 */
TEST_F(lb, ct_full_bucket_gives_its_oldest_way)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4), way, w;
	struct pkt_spec s[XLB_CT_WAYS + 1];
	struct xlb_flow f[XLB_CT_WAYS + 1];
	struct ct_raw r;
	struct xlb_ct ct;

	ASSERT_TRUE(bucket_flows(&self->lb, v, s, f, XLB_CT_WAYS + 1))
		TH_LOG("no five flows of one bucket");
	for (w = 0; w < XLB_CT_WAYS; w++)
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s[w], &f[w], LB_EXPLAIN,
				       "filling the bucket", NULL));
	/* the third flow is the one seen longest ago */
	ASSERT_EQ(0, ct_age(&self->lb, &f[2]));
	ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s[XLB_CT_WAYS], &f[XLB_CT_WAYS],
			       LB_EXPLAIN, "fifth flow", NULL));
	EXPECT_EQ(-ENOENT, xlb_dp_ct_lookup(&self->lb.dp, &f[2], &ct));
	for (w = 0; w <= XLB_CT_WAYS; w++)
		if (w != 2)
			EXPECT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f[w], &ct))
				TH_LOG("flow %d of the bucket", w);
	ASSERT_EQ(0, ct_raw_open(&self->lb, &f[XLB_CT_WAYS], &r, &way));
	EXPECT_LE(0, way);
	munmap(r.map, r.bytes);
}

/*
 * The ways in use come first (structs.h): an insert takes the first free
 * way, a writer's busy mark is no free way, and a lookup, the data
 * path's and libxlb's alike, stops at the first free way.  A free way
 * before one in use is a flush's hole, made here by hand.
 */
TEST_F(lb, ct_ways_in_use_come_first_and_a_lookup_stops_at_a_free_one)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4), way, w;
	struct xlb_vip_stats vs0, vs1;
	struct pkt_spec s[3];
	struct xlb_flow f[3];
	struct ct_raw r;
	struct xlb_ct ct;

	ASSERT_TRUE(bucket_flows(&self->lb, v, s, f, 3))
		TH_LOG("no three flows of one bucket");
	for (w = 0; w < 3; w++) {
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s[w], &f[w], LB_EXPLAIN,
				       "filling the bucket", NULL));
		ASSERT_EQ(0, ct_raw_open(&self->lb, &f[w], &r, &way));
		EXPECT_EQ(w, way) TH_LOG("flow %d of the bucket", w);
		munmap(r.map, r.bytes);
	}

	/* way 0 as a writer leaves it while it writes: flow 1 still hits */
	ASSERT_EQ(0, ct_raw_open(&self->lb, &f[0], &r, &way));
	r.bucket[0].check = XLB_CT_CHECK_BUSY;
	xlb_dp_changed(&self->lb.dp);	/* written behind libxlb */
	EXPECT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f[1], &ct));
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, v, &vs0));
	EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s[1], &f[1], LB_EXPLAIN,
			       "behind a busy way", NULL));
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, v, &vs1));
	EXPECT_EQ(1, vs1.ct_hits - vs0.ct_hits);
	EXPECT_EQ(0, vs1.ct_misses - vs0.ct_misses);

	/* way 0 free: flow 1, behind it, is a miss and takes way 0 */
	r.bucket[0].check = 0;
	xlb_dp_changed(&self->lb.dp);
	EXPECT_EQ(-ENOENT, xlb_dp_ct_lookup(&self->lb.dp, &f[1], &ct));
	EXPECT_EQ(-ENOENT, xlb_dp_ct_lookup(&self->lb.dp, &f[2], &ct));
	vs0 = vs1;
	EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s[1], &f[1], LB_EXPLAIN,
			       "behind a free way", NULL));
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, v, &vs1));
	EXPECT_EQ(0, vs1.ct_hits - vs0.ct_hits);
	EXPECT_EQ(1, vs1.ct_misses - vs0.ct_misses);
	EXPECT_EQ(0, memcmp(&r.bucket[0].flow, &f[1], sizeof(f[1])));
	EXPECT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f[1], &ct));
	munmap(r.map, r.bytes);
}

TEST_F(lb, ct_udp_entry_expires_when_idle_tcp_does_not)
{
	static const int kinds[] = { K_UDP_IPIP4, K_UDP_GUE6, K_TCP_IPIP4,
				     K_TCP_GUE6 };
	unsigned int i;
	int v;

	self->lb.cfg.udp_idle_s = 1;
	ASSERT_EQ(0, xlb_dp_config_set(&self->lb.dp, &self->lb.cfg));
	lb_for_each_vip(i, v, kinds)
		ct_idle_case(_metadata, &self->lb, v);
}

/* --- what makes an entry; the new-flow guard -------------------------------- */

/*
 * Per protocol (structs.h, "What makes a connection entry"): TCP SYN and
 * a mid-stream ACK make one, RST and FIN (with or without ACK) and a
 * segment without ACK do not, UDP does; every one of them is forwarded
 * as the table says.  No guard here (rate 0, the map as loaded).
 */
TEST_F(lb, ct_entry_made_by_syn_ack_udp_never_rst_fin)
{
	static const struct {
		const char *name;
		__u8 flags;
		bool creates;
	} segs[] = {
		{ "SYN", PKT_TCP_SYN, true },
		{ "ACK", PKT_TCP_ACK, true },
		{ "ACK PSH", PKT_TCP_ACK | PKT_TCP_PSH, true },
		{ "RST", PKT_TCP_RST, false },
		{ "RST ACK", PKT_TCP_RST | PKT_TCP_ACK, false },
		{ "FIN", PKT_TCP_FIN, false },
		{ "FIN ACK", PKT_TCP_FIN | PKT_TCP_ACK, false },
		{ "SYN RST", PKT_TCP_SYN | PKT_TCP_RST, false },
		{ "no flags", 0, false },
		{ "PSH only", PKT_TCP_PSH, false },
	};
	static const int tcp[] = { K_TCP_IPIP4, K_TCP_GUE6 };
	static const int udp[] = { K_UDP_GUE4, K_UDP_IPIP4 };
	struct pkt_spec s;
	struct xlb_ct ct;
	unsigned int i, k, n = 0;
	char what[96];
	int v;

	lb_for_each_vip(i, v, tcp) {
		for (k = 0; k < LB_N(segs); k++) {
			struct xlb_flow f;

			lb_spec(&self->lb, v, &s);
			s.sport = (__u16)(20000 + n++);
			s.tcp_flags = segs[k].flags;
			f = lb_flow(&s);
			snprintf(what, sizeof(what), "first segment %s",
				 segs[k].name);
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
					       what, NULL));
			EXPECT_EQ(segs[k].creates ? 0 : -ENOENT,
				  xlb_dp_ct_lookup(&self->lb.dp, &f, &ct))
				TH_LOG("%s [VIP %s]: an entry %s", what,
				       lb_kind(v)->name, segs[k].creates ?
				       "missing" : "made");
		}
	}
	lb_for_each_vip(i, v, udp) {
		struct xlb_flow f;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "first datagram", NULL));
		EXPECT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct))
			TH_LOG("UDP [VIP %s]: no entry", lb_kind(v)->name);
	}
}

/* --- bounded loads (structs.h: member flags, "Active connections") ------ */

static __s64 conns_of(const struct lb *lb, __u16 id)
{
	__s64 n = 0;

	if (xlb_dp_backend_conns(&lb->dp, id, &n))
		return INT64_MIN;
	return n;
}

static __u64 bounded_events(const struct lb *lb)
{
	__u64 ev[XLB_EV_MAX] = { 0 };

	xlb_dp_events(&lb->dp, ev);
	return ev[XLB_EV_BOUNDED];
}

/* Full with a budget that outlasts the test, or not full. */
static int full(struct lb *lb, int v, __u16 id, bool on)
{
	return xlb_dp_member_flags_set(&lb->dp, (__u32)v, id,
				       on ? XLB_MEMBER_F_FULL : 0,
				       on ? XLB_MEMBER_BUDGET_MAX : 0);
}

static __s16 budget_of(struct lb *lb, int v, __u16 id)
{
	__s16 b = -1000;
	__u8 fl;

	if (xlb_dp_member_flags_get(&lb->dp, (__u32)v, id, &fl, &b))
		return -1000;
	return b;
}

/*
 * A full primary gives a new flow (SYN, UDP) to the slot's secondary,
 * which then keeps it; pickups, a full or unusable secondary, and a
 * cleared flag leave it on the primary.
 */
TEST_F(lb, bound_full_primary_gives_new_flows_to_the_secondary)
{
	static const int kinds[] = { K_TCP_IPIP4, K_UDP_GUE4, K_TCP_GUE6 };
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct pkt_spec s;
		struct xlb_flow f;
		struct xlb_pick p;
		struct xlb_ct ct;
		__u64 ev0;
		__u8 fl = 0;
		bool tcp;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		tcp = f.proto == IPPROTO_TCP;
		p = lb_pick(&self->lb, v, &f);
		ASSERT_NE(XLB_BACKEND_NONE, p.secondary);
		ASSERT_NE(p.primary, p.secondary);
		ASSERT_EQ(1, full(&self->lb, v, p.primary, true));
		ASSERT_EQ(0, full(&self->lb, v, p.primary, true))
			TH_LOG("set twice: no change the second time");
		ASSERT_EQ(0, xlb_dp_member_flags_get(&self->lb.dp, (__u32)v,
						     p.primary, &fl, NULL));
		EXPECT_EQ(XLB_MEMBER_F_FULL, fl);
		EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(&self->lb, v, p.primary));

		ev0 = bounded_events(&self->lb);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.secondary,
				       "new flow, primary full", NULL));
		EXPECT_EQ(ev0 + 1, bounded_events(&self->lb));
		ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
		EXPECT_EQ(p.secondary, ct.backend);
		if (tcp) {
			s.tcp_flags = PKT_TCP_ACK;
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       p.secondary,
					       "established, primary full",
					       NULL));
			/* an entry lost: a pickup goes by the table */
			ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
					       "pickup, primary full", NULL));
			s.tcp_flags = PKT_TCP_SYN;
		}
		EXPECT_EQ(ev0 + 1, bounded_events(&self->lb));

		/* both full: the primary keeps it */
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		ASSERT_EQ(1, full(&self->lb, v, p.secondary, true));
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
				       "new flow, both full", NULL));
		/* a secondary that takes no new flows: likewise */
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.secondary, XLB_MEMBER_DOWN,
					       NULL));
		ASSERT_EQ(0, xlb_dp_member_flags_get(&self->lb.dp, (__u32)v,
						     p.secondary, &fl, NULL));
		EXPECT_EQ(0, fl) TH_LOG("a state written clears the flags");
		EXPECT_EQ(-ENOENT, full(&self->lb, v, p.secondary, true))
			TH_LOG("only an active member is full");
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
				       "new flow, secondary down", NULL));
		ASSERT_EQ(0, xlb_dp_member_set(&self->lb.dp, (__u32)v,
					       p.secondary, XLB_MEMBER_ACTIVE,
					       NULL));
		/* the flag cleared: the primary again */
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		ASSERT_EQ(1, full(&self->lb, v, p.primary, false));
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
				       "new flow, primary no longer full",
				       NULL));
		EXPECT_EQ(ev0 + 1, bounded_events(&self->lb));
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
	}
}

/*
 * A full primary gives away as many new flows as its budget says, one
 * taken per flow given, then keeps them; the program takes nothing else
 * from the record.  xlbd's next look writes a budget anew, also when the
 * flag stays.  The same SYN again after a flush is a new flow each time.
 */
TEST_F(lb, bound_budget_spent_keeps_new_flows_on_the_primary)
{
	static const int kinds[] = { K_TCP_IPIP4, K_UDP_GUE4 };
	unsigned int i;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct pkt_spec s;
		struct xlb_flow f;
		struct xlb_pick p;
		__u64 ev0;
		bool bounded;
		int k;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		p = lb_pick(&self->lb, v, &f);
		ASSERT_NE(XLB_BACKEND_NONE, p.secondary);
		ASSERT_NE(p.primary, p.secondary);
		ASSERT_EQ(1, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						     p.primary,
						     XLB_MEMBER_F_FULL, 2));
		ev0 = bounded_events(&self->lb);
		for (k = 0; k < 2; k++) {
			EXPECT_EQ(p.secondary,
				  xlb_dp_member_pick(&self->lb.dp, (__u32)v,
						     p.primary, p.secondary,
						     true, &bounded));
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f,
					       p.secondary,
					       "new flow, budget left", NULL));
			EXPECT_EQ(1 - k, budget_of(&self->lb, v, p.primary));
			ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		}
		EXPECT_EQ(ev0 + 2, bounded_events(&self->lb));
		EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(&self->lb, v,
						       p.primary));
		/* spent: the primary, and explain's pick says so too */
		EXPECT_EQ(p.primary,
			  xlb_dp_member_pick(&self->lb.dp, (__u32)v, p.primary,
					     p.secondary, true, &bounded));
		EXPECT_FALSE(bounded);
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
				       "new flow, budget spent", NULL));
		EXPECT_EQ(0, budget_of(&self->lb, v, p.primary))
			TH_LOG("a spent budget is not taken below 0");
		EXPECT_EQ(ev0 + 2, bounded_events(&self->lb));
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		/* written anew with the flag unchanged: 0, and it steers */
		EXPECT_EQ(0, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						     p.primary,
						     XLB_MEMBER_F_FULL, 1));
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.secondary,
				       "new flow, budget written anew", NULL));
		EXPECT_EQ(0, budget_of(&self->lb, v, p.primary));
		EXPECT_EQ(ev0 + 3, bounded_events(&self->lb));
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->lb.dp));
		ASSERT_EQ(1, full(&self->lb, v, p.primary, false));
	}
}

/* Bad flags and members that are not there change nothing. */
TEST_F(lb, bound_flags_refuse_bad_input)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4);
	struct pkt_spec s;
	struct xlb_flow f;
	struct xlb_pick p;
	__s16 budget = -1;
	__u8 fl = 0xff;

	lb_spec(&self->lb, v, &s);
	f = lb_flow(&s);
	p = lb_pick(&self->lb, v, &f);
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   p.primary, 0x80, 0));
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, XLB_MAX_VIPS,
						   p.primary,
						   XLB_MEMBER_F_FULL, 1));
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   XLB_BACKEND_ID_MAX + 1,
						   XLB_MEMBER_F_FULL, 1));
	/* budgets out of range, or without the flag */
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   p.primary,
						   XLB_MEMBER_F_FULL, -1));
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   p.primary, XLB_MEMBER_F_FULL,
						   XLB_MEMBER_BUDGET_MAX + 1));
	EXPECT_EQ(-EINVAL, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   p.primary, 0, 5));
	/* a backend of the fixture that is no member of this VIP */
	EXPECT_EQ(-ENOENT, xlb_dp_member_flags_set(&self->lb.dp, (__u32)v,
						   LB_TABLE_BACKENDS + 1,
						   XLB_MEMBER_F_FULL, 1));
	ASSERT_EQ(0, xlb_dp_member_flags_get(&self->lb.dp, (__u32)v,
					     p.primary, &fl, &budget));
	EXPECT_EQ(0, fl);
	EXPECT_EQ(0, budget);
	EXPECT_EQ(XLB_MEMBER_ACTIVE, member_of(&self->lb, v, p.primary));
	EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
			       "after the refusals", NULL));
}

/*
 * Active connections: +1 for an entry made, -1 at its FIN or RST (once),
 * +1 again for a SYN on the closed entry, which is picked anew; a closed
 * entry still holds the flow's last segments.
 */
TEST_F(lb, conns_count_open_entries_through_fin_rst_and_syn)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_GUE6 };
	static const struct {
		__u8 flags;
		int delta;
		const char *what;
	} segs[] = {
		{ PKT_TCP_SYN, 1, "SYN" },
		{ PKT_TCP_ACK, 0, "ACK" },
		{ PKT_TCP_SYN, 0, "SYN again" },
		{ PKT_TCP_ACK | PKT_TCP_PSH, 0, "ACK PSH" },
		{ PKT_TCP_FIN | PKT_TCP_ACK, -1, "FIN ACK" },
		{ PKT_TCP_ACK, 0, "ACK after the FIN" },
		{ PKT_TCP_FIN | PKT_TCP_ACK, 0, "FIN again" },
		{ PKT_TCP_SYN, 1, "SYN on the closed entry" },
		{ PKT_TCP_RST, -1, "RST" },
		{ PKT_TCP_RST | PKT_TCP_ACK, 0, "RST again" },
	};
	unsigned int i, k;
	int v;

	lb_for_each_vip(i, v, kinds) {
		struct pkt_spec s;
		struct xlb_flow f;
		struct xlb_pick p;
		struct xlb_ct ct;
		__s64 c0, want;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		p = lb_pick(&self->lb, v, &f);
		c0 = conns_of(&self->lb, p.primary);
		ASSERT_NE(INT64_MIN, c0);
		want = c0;
		for (k = 0; k < LB_N(segs); k++) {
			s.tcp_flags = segs[k].flags;
			want += segs[k].delta;
			EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, p.primary,
					       segs[k].what, NULL));
			EXPECT_EQ(want, conns_of(&self->lb, p.primary))
				TH_LOG("%s [VIP %s]", segs[k].what,
				       lb_kind(v)->name);
			ASSERT_EQ(0, xlb_dp_ct_lookup(&self->lb.dp, &f, &ct));
			EXPECT_EQ(want == c0, ct.closed)
				TH_LOG("%s: entry closed %u", segs[k].what,
				       ct.closed);
			EXPECT_EQ(v, ct.vip);
		}
	}
}

/* Every CPU's guard bucket: rate, credits, stamp. */
static int guard_write(const struct lb *lb, __u32 rate, __u64 credits,
		       __u64 stamp)
{
	int n = lb->dp.ncpus, i, ret;
	struct xlb_ct_guard *g = calloc((size_t)n, sizeof(*g));
	__u32 key = 0;

	if (!g)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		g[i].rate = rate;
		g[i].credits = credits;
		g[i].stamp = stamp;
	}
	ret = bpf_map_update_elem(lb->dp.ct_guard, &key, g, BPF_ANY) ?
	      -errno : 0;
	free(g);
	return ret;
}

/*
 * One TCP segment of a new flow (source port sport) with flags fl, after
 * the guard's bucket is set to `credits` of rate `rate` now: did it make
 * an entry, and did ct_guard count it?  Retried (up to 5 times, fresh
 * flows) while the run took `margin` ticks or more, which would refill
 * the bucket past what the case means to test.
 */
static int guard_case(struct __test_metadata *_metadata, struct lb *lb,
		      int v, __u16 *sport, __u8 fl, __u32 rate,
		      __u64 credits, __u64 margin, bool *made, __u64 *guarded)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct pkt_spec s;
	struct xlb_flow f;
	struct xlb_ct ct;
	__u64 t0, t1;
	int tries;

	for (tries = 0; tries < 5; tries++) {
		lb_spec(lb, v, &s);
		s.sport = (*sport)++;
		s.tcp_flags = fl;
		f = lb_flow(&s);
		if (xlb_clock_now(&t0) || guard_write(lb, rate, credits, t0))
			return -1;
		lb_run(lb, in, lb_build(&s, in), &r);
		if (xlb_clock_now(&t1))
			return -1;
		if (r.err || r.retval != XDP_TX) {
			TH_LOG("segment not forwarded: %s", lb_action(r.retval));
			return -1;
		}
		if (t1 - t0 < margin) {
			*made = !xlb_dp_ct_lookup(&lb->dp, &f, &ct);
			*guarded = r.ev[XLB_EV_CT_GUARD];
			return 0;
		}
	}
	TH_LOG("the machine is too slow for this case: %llu ticks a packet",
	       (unsigned long long)(t1 - t0));
	return -1;
}

/*
 * The guard's bucket (structs.h): with half of it or less left, a
 * mid-stream ACK makes no entry (counted) while a SYN still does; with
 * less than one entry's credits, a SYN makes none either (counted); a
 * full bucket takes both.  RST never asks the guard, so never counts.
 */
TEST_F(lb, ct_guard_refuses_pickups_first_then_syns)
{
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4);
	const __u32 rate = 64;
	__u16 sport = 30000;
	__u32 hz;
	__u64 g, half;
	bool made;

	ASSERT_EQ(0, xlb_clock_hz(&hz));
	half = (__u64)rate * hz / 2;
	/* a quarter of a second of refill short of half the bucket */
	ASSERT_EQ(0, guard_case(_metadata, &self->lb, v, &sport, PKT_TCP_ACK,
				rate, half - rate * (hz / 4), hz / 4, &made, &g));
	EXPECT_FALSE(made) TH_LOG("ACK below half a bucket made an entry");
	EXPECT_EQ(1, g);
	ASSERT_EQ(0, guard_case(_metadata, &self->lb, v, &sport, PKT_TCP_SYN,
				rate, half - rate * (hz / 4), hz / 4, &made, &g));
	EXPECT_TRUE(made) TH_LOG("SYN below half a bucket made no entry");
	EXPECT_EQ(0, g);
	/* rate 1: an entry's credits come back after a second */
	ASSERT_EQ(0, guard_case(_metadata, &self->lb, v, &sport, PKT_TCP_SYN,
				1, 0, hz / 2, &made, &g));
	EXPECT_FALSE(made) TH_LOG("SYN on an empty bucket made an entry");
	EXPECT_EQ(1, g);
	ASSERT_EQ(0, guard_case(_metadata, &self->lb, v, &sport, PKT_TCP_RST,
				1, 0, hz / 2, &made, &g));
	EXPECT_FALSE(made);
	EXPECT_EQ(0, g) TH_LOG("RST counted by the guard");
	/* a full bucket */
	ASSERT_EQ(0, guard_case(_metadata, &self->lb, v, &sport, PKT_TCP_ACK,
				rate, (__u64)rate * hz, hz / 4, &made, &g));
	EXPECT_TRUE(made) TH_LOG("ACK on a full bucket made no entry");
	EXPECT_EQ(0, g);
}

TEST_F(lb, ct_guard_rate_set_by_libxlb)
{
	__u32 rate = 7;

	ASSERT_EQ(0, xlb_dp_ct_guard_get(&self->lb.dp, &rate));
	EXPECT_EQ(0, rate) TH_LOG("the map as loaded: no limit");
	ASSERT_EQ(0, xlb_dp_ct_guard_set(&self->lb.dp, 1234));
	ASSERT_EQ(0, xlb_dp_ct_guard_get(&self->lb.dp, &rate));
	EXPECT_EQ(1234, rate);
	EXPECT_EQ(-EINVAL, xlb_dp_ct_guard_set(&self->lb.dp,
					       XLB_CT_RATE_MAX + 1));
	ASSERT_EQ(0, xlb_dp_ct_guard_get(&self->lb.dp, &rate));
	EXPECT_EQ(1234, rate) TH_LOG("a refused rate changed the map");
}

/*
 * A full connection table of established flows (SYN, then an ACK each),
 * then a flood of spoofed segments of new flows: ACKs (mid-stream
 * pickups), RSTs, FINs.  Every one is forwarded; the RSTs and FINs make
 * no entry at all, and the ACKs at most what the guard's rate allows in
 * the time the flood took: the established entries stay.
 */
#define FLOOD_TABLE	256
#define FLOOD_PACKETS	6000

/*
 * Keep this thread on the CPU it runs on, whose per-CPU state (the flow
 * cache, the new-flow guard) a case then reads: its CPU, or -1.
 */
static int pin_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

FIXTURE(lb_small)
{
	struct lb lb;
};

FIXTURE_SETUP(lb_small)
{
	char why[256] = "";

	ASSERT_EQ(0, lb_init_ct(&self->lb, FLOOD_TABLE, why, sizeof(why)))
		TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(lb_small)
{
	lb_fini(&self->lb);
}

TEST_F(lb_small, ct_junk_flood_leaves_established_entries)
{
	static const __u8 junk[] = {
		PKT_TCP_ACK, PKT_TCP_RST, PKT_TCP_FIN | PKT_TCP_ACK,
		PKT_TCP_ACK | PKT_TCP_PSH, PKT_TCP_RST | PKT_TCP_ACK,
	};
	static struct xlb_flow est[2 * FLOOD_TABLE];
	static __u8 in[LB_BUF];
	static struct lb_res r;
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4);
	const __u32 rate = 16;
	__u64 ev0[XLB_EV_MAX] = { 0 }, ev1[XLB_EV_MAX] = { 0 };
	__u64 t0, t1, allowed, acks = 0, fwd = 0;
	unsigned int i, n_est = 0, kept = 0;
	struct pkt_spec s;
	struct xlb_ct ct;
	__u32 cap, hz, count;

	ASSERT_EQ(0, xlb_dp_ct_capacity(&self->lb.dp, &cap));
	ASSERT_EQ(FLOOD_TABLE, cap);
	ASSERT_EQ(0, xlb_clock_hz(&hz));
	/* established: twice the table's size of flows, no guard */
	for (i = 0; i < 2 * FLOOD_TABLE; i++) {
		struct xlb_flow f;

		lb_spec(&self->lb, v, &s);
		s.src[0] = htonl(0xc6120000 + i);	/* 198.18.0.0/15 */
		s.sport = (__u16)(10000 + i);
		s.tcp_flags = PKT_TCP_SYN;
		f = lb_flow(&s);
		lb_run(&self->lb, in, lb_build(&s, in), &r);
		ASSERT_EQ(XDP_TX, r.retval);
		s.tcp_flags = PKT_TCP_ACK;
		lb_run(&self->lb, in, lb_build(&s, in), &r);
		ASSERT_EQ(XDP_TX, r.retval);
		est[i] = f;
	}
	ASSERT_EQ(0, xlb_dp_ct_count(&self->lb.dp, &count));
	for (i = 0; i < 2 * FLOOD_TABLE; i++)
		if (!xlb_dp_ct_lookup(&self->lb.dp, &est[i], &ct))
			est[n_est++] = est[i];
	TH_LOG("table of %u: %u entries, %u established flows in it", cap,
	       count, n_est);
	ASSERT_GE(n_est, cap * 3 / 4) TH_LOG("the table did not fill");

	/* the guard is per CPU: the flood meets one CPU's bucket */
	ASSERT_LE(0, pin_cpu());
	ASSERT_EQ(0, xlb_dp_ct_guard_set(&self->lb.dp, rate));
	ASSERT_EQ(0, xlb_dp_events(&self->lb.dp, ev0));
	ASSERT_EQ(0, xlb_clock_now(&t0));
	for (i = 0; i < FLOOD_PACKETS; i++) {
		lb_spec(&self->lb, v, &s);
		s.src[0] = htonl(0x0a000000 + i * 7919);	/* spoofed */
		s.sport = (__u16)(1024 + i % 50000);
		s.tcp_flags = junk[i % LB_N(junk)];
		acks += !(s.tcp_flags & (PKT_TCP_RST | PKT_TCP_FIN));
		lb_run_c(&self->lb, in, lb_build(&s, in), &r, false);
		fwd += r.retval == XDP_TX;
	}
	ASSERT_EQ(0, xlb_clock_now(&t1));
	ASSERT_EQ(0, xlb_dp_events(&self->lb.dp, ev1));
	for (i = 0; i < n_est; i++)
		kept += !xlb_dp_ct_lookup(&self->lb.dp, &est[i], &ct);
	/* half a bucket of pickups, the refill while it ran, one to spare */
	allowed = rate / 2 + (t1 - t0) * rate / hz + 1;
	TH_LOG("%u spoofed segments (%llu ACKs) in %llu ticks: %u of %u "
	       "established entries kept, ct_guard %llu, allowed %llu",
	       FLOOD_PACKETS, (unsigned long long)acks,
	       (unsigned long long)(t1 - t0), kept, n_est,
	       (unsigned long long)(ev1[XLB_EV_CT_GUARD] - ev0[XLB_EV_CT_GUARD]),
	       (unsigned long long)allowed);
	EXPECT_EQ(FLOOD_PACKETS, fwd) TH_LOG("junk not forwarded");
	EXPECT_GE(kept + allowed, n_est);
	EXPECT_GE(ev1[XLB_EV_CT_GUARD] - ev0[XLB_EV_CT_GUARD] + allowed, acks);
	EXPECT_LE(ev1[XLB_EV_CT_GUARD] - ev0[XLB_EV_CT_GUARD], acks);
}

/*
 * Under a mix of segments of many flows in a small table (evictions,
 * rewrites of a flow's own way, closes), every backend's count is the
 * number of its open entries.
 */
TEST_F(lb_small, conns_are_the_open_entries_under_evictions)
{
	static const __u8 flags[] = { PKT_TCP_SYN, PKT_TCP_SYN, PKT_TCP_ACK,
				      PKT_TCP_FIN | PKT_TCP_ACK, PKT_TCP_RST,
				      PKT_TCP_SYN };
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP4), n;
	__s64 want[LB_MAX_ID] = { 0 }, got;
	struct xlb_flow fl[4 * FLOOD_TABLE];
	unsigned int seed = 7, k;
	__u16 id;

	for (n = 0; n < (int)LB_N(fl); n++) {
		struct pkt_spec s;

		lb_spec(&self->lb, v, &s);
		s.sport = (__u16)(10000 + n);
		fl[n] = lb_flow(&s);
	}
	for (k = 0; k < 10 * FLOOD_TABLE; k++) {
		struct pkt_spec s;
		struct xlb_flow f;
		static __u8 in[LB_BUF];
		static struct lb_res r;

		n = (int)(rand_r(&seed) % LB_N(fl));
		lb_spec(&self->lb, v, &s);
		s.sport = (__u16)(10000 + n);
		s.tcp_flags = flags[rand_r(&seed) % LB_N(flags)];
		f = lb_flow(&s);
		ASSERT_EQ(0, memcmp(&f, &fl[n], sizeof(f)));
		lb_run(&self->lb, in, lb_build(&s, in), &r);
		ASSERT_EQ(XDP_TX, r.retval) TH_LOG("segment %u", k);
	}
	for (n = 0; n < (int)LB_N(fl); n++) {
		struct xlb_ct ct;

		if (!xlb_dp_ct_lookup(&self->lb.dp, &fl[n], &ct) && !ct.closed) {
			ASSERT_GT(LB_MAX_ID, ct.backend);
			want[ct.backend]++;
		}
	}
	for (id = 0; id < LB_MAX_ID; id++) {
		got = conns_of(&self->lb, id);
		EXPECT_EQ(want[id], got) TH_LOG("backend %u", id);
	}
}

/* --- counters ------------------------------------------------------------- */

struct sent {
	__u64 packets, bytes;
};

TEST_F(lb, counters_follow_packets_and_verdicts)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_vip_stats vs0, vs1, ss0, ss1;
	struct xlb_counter bc0[LB_TABLE_BACKENDS], bc1;
	struct sent want_be[LB_TABLE_BACKENDS] = { { 0 } };
	__u64 ac0[XLB_ACTIONS], ac1[XLB_ACTIONS], ev0[XLB_EV_MAX],
	      ev1[XLB_EV_MAX];
	/* groups of their own: backend counters see only v's packets */
	int v = lb_vip(XLB_FAMILY_INET, K_TCP_IPIP6);
	int sv = lb_vip(XLB_FAMILY_INET6, K_STATELESS);
	int g = lb_kind(v)->group, i;
	__u64 bytes = 0, sbytes = 0;
	struct pkt_spec s;
	size_t len;

	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, v, &vs0));
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, sv, &ss0));
	for (i = 0; i < LB_TABLE_BACKENDS; i++)
		ASSERT_EQ(0, xlb_dp_backend_stats(&self->lb.dp, lb_id(g, i),
						  &bc0[i]));
	ASSERT_EQ(0, xlb_dp_actions(&self->lb.dp, ac0));
	ASSERT_EQ(0, xlb_dp_events(&self->lb.dp, ev0));

	/* flow A: 3 packets, flow B: 2 packets; IP bytes are counted */
	for (i = 0; i < 5; i++) {
		struct xlb_flow f;
		__u16 id;

		lb_spec(&self->lb, v, &s);
		s.sport = i < 3 ? 41000 : 42000;
		s.tcp_flags = i == 0 || i == 3 ? PKT_TCP_SYN : PKT_TCP_ACK;
		s.payload_len = 10 + 50 * (size_t)i;
		f = lb_flow(&s);
		id = lb_pick(&self->lb, v, &f).primary;
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN, "counted",
				    NULL));
		len = lb_build(&s, in);
		bytes += len - PKT_ETH_LEN;
		want_be[id - lb_id(g, 0)].packets++;
		want_be[id - lb_id(g, 0)].bytes += len - PKT_ETH_LEN;
	}
	/* stateless: counted, but no flows, hits or misses */
	for (i = 0; i < 2; i++) {
		struct xlb_flow f;

		lb_spec(&self->lb, sv, &s);
		s.payload_len = 100;
		f = lb_flow(&s);
		ASSERT_TRUE(lb_run_fwd(&self->lb, sv, &s, &f, LB_EXPLAIN,
				    "stateless counted", NULL));
		sbytes += lb_build(&s, in) - PKT_ETH_LEN;
	}
	/* one packet passed, one dropped */
	lb_spec(&self->lb, v, &s);
	s.dport = 9;
	len = lb_build(&s, in);
	lb_run(&self->lb, in, len, &r);
	EXPECT_TRUE(lb_expect_pass(in, len, &r, "not for a VIP"));
	/* and one to an address that has no VIP: the filter's early exit */
	lb_spec(&self->lb, v, &s);
	s.dst[0] = inet_addr("198.18.0.77");
	len = lb_build(&s, in);
	lb_run(&self->lb, in, len, &r);
	EXPECT_TRUE(lb_expect_pass(in, len, &r, "not to a VIP address"));
	lb_spec(&self->lb, v, &s);
	len = lb_build(&s, in);
	lb_run(&self->lb, in, len - 1, &r);	/* cut: malformed */
	EXPECT_TRUE(lb_expect_drop(in, len - 1, &r, XLB_EV_MALFORMED,
				   "cut VIP packet"));

	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, v, &vs1));
	EXPECT_EQ(5, vs1.packets - vs0.packets);
	EXPECT_EQ(bytes, vs1.bytes - vs0.bytes);
	EXPECT_EQ(2, vs1.new_flows - vs0.new_flows);
	EXPECT_EQ(2, vs1.ct_misses - vs0.ct_misses);
	EXPECT_EQ(3, vs1.ct_hits - vs0.ct_hits);
	for (i = 0; i < LB_TABLE_BACKENDS; i++) {
		ASSERT_EQ(0, xlb_dp_backend_stats(&self->lb.dp, lb_id(g, i),
						  &bc1));
		EXPECT_EQ(want_be[i].packets, bc1.packets - bc0[i].packets)
			TH_LOG("backend %u", lb_id(g, i));
		EXPECT_EQ(want_be[i].bytes, bc1.bytes - bc0[i].bytes)
			TH_LOG("backend %u", lb_id(g, i));
	}
	ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, sv, &ss1));
	EXPECT_EQ(2, ss1.packets - ss0.packets);
	EXPECT_EQ(sbytes, ss1.bytes - ss0.bytes);
	EXPECT_EQ(0, ss1.new_flows - ss0.new_flows);
	EXPECT_EQ(0, ss1.ct_hits - ss0.ct_hits);
	EXPECT_EQ(0, ss1.ct_misses - ss0.ct_misses);

	ASSERT_EQ(0, xlb_dp_actions(&self->lb.dp, ac1));
	EXPECT_EQ(0, ac1[XDP_ABORTED] - ac0[XDP_ABORTED]);
	EXPECT_EQ(1, ac1[XDP_DROP] - ac0[XDP_DROP]);
	EXPECT_EQ(2, ac1[XDP_PASS] - ac0[XDP_PASS]);
	EXPECT_EQ(7, ac1[XDP_TX] - ac0[XDP_TX]);
	EXPECT_EQ(0, ac1[XDP_REDIRECT] - ac0[XDP_REDIRECT]);
	ASSERT_EQ(0, xlb_dp_events(&self->lb.dp, ev1));
	for (i = 0; i < XLB_EV_MAX; i++)
		EXPECT_EQ(i == XLB_EV_MALFORMED, ev1[i] - ev0[i])
			TH_LOG("event %s", xlb_event_name(i));
}

/*
 * A packet answered with ICMP too-big never reaches the backend, so the
 * backend's counters must not grow by it.
 */
TEST_F(lb, counters_too_big_answer_not_counted_for_backend)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_counter b0, b1;
	unsigned int fi;

	for (fi = 0; fi < LB_N(lb_families); fi++) {
		int v = lb_vip(lb_families[fi], K_TCP_IPIP4);
		struct pkt_spec s;
		struct xlb_flow f;
		__u16 id;
		size_t len;

		lb_spec(&self->lb, v, &s);
		f = lb_flow(&s);
		id = lb_pick(&self->lb, v, &f).primary;
		ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN, "SYN",
				    NULL));
		ASSERT_EQ(0, xlb_dp_backend_stats(&self->lb.dp, id, &b0));
		s.tcp_flags = PKT_TCP_ACK;
		s.df = true;
		/* a full-size packet: over the limit with any tunnel */
		s.payload_len = LB_MTU - PKT_TCP_LEN -
				(s.family == 4 ? PKT_IP4_LEN : PKT_IP6_LEN);
		len = lb_build(&s, in);
		lb_run(&self->lb, in, len, &r);
		ASSERT_EQ(XDP_TX, r.retval);
		ASSERT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
		ASSERT_EQ(0, xlb_dp_backend_stats(&self->lb.dp, id, &b1));
		EXPECT_EQ(0, b1.packets - b0.packets)
			TH_LOG("%s: backend %u counted a packet it never got",
			       lb_fam_name(lb_families[fi]), id);
		EXPECT_EQ(0, b1.bytes - b0.bytes)
			TH_LOG("%s: backend %u counted %llu bytes it never got",
			       lb_fam_name(lb_families[fi]), id,
			       (unsigned long long)(b1.bytes - b0.bytes));
	}
}

/* --- flow cache ----------------------------------------------------------- */

/*
 * The flow cache (structs.h) is per CPU: these tests keep to one CPU, so
 * that a flow's second packet meets what its first left there.
 */
/* This CPU's entry of f's slot. */
static int fc_entry(const struct lb *lb, int cpu, const struct xlb_flow *f,
		    struct xlb_fc_entry *out)
{
	struct xlb_fc_entry *all = calloc((size_t)lb->dp.ncpus, sizeof(*all));
	__u32 slot = xlb_fc_slot(f);
	int ret = -1;

	if (all && !bpf_map_lookup_elem(lb->dp.flow_cache, &slot, all)) {
		*out = all[cpu];
		ret = 0;
	}
	free(all);
	return ret;
}

/*
 * A flow's later packets, sent from the cache, leave exactly as the whole
 * path sent its first (same bytes, that one checked in full), and count
 * as the whole path counts them.  A stateless VIP's flow is cached by
 * its first packet; a stateful VIP's by its first connection-table hit,
 * not by the packet that made the entry (a flood of new flows does not
 * push established ones out).  The traffic class / TOS is the packet's
 * own even from the cache (ECN marks change from packet to packet).
 */
TEST_F(lb, fc_cached_packets_leave_as_the_whole_path_sends_them)
{
	static const int kinds[] = { K_TCP_IPIP4, K_TCP_IPIP6, K_UDP_IPIP6,
				     K_TCP_GUE4, K_UDP_GUE4, K_STATELESS,
				     K_OVERRIDE4, K_ATOMIC };
	static __u8 in[LB_BUF];
	static struct lb_res r0, r;
	struct xlb_vip_stats vs0, vs1;
	__u64 ac0[XLB_ACTIONS], ac1[XLB_ACTIONS];
	struct xlb_fc_entry e;
	struct pkt_spec s;
	unsigned int i;
	int v, cpu = pin_cpu();

	ASSERT_LE(0, cpu);
	lb_for_each_vip(i, v, kinds) {
		bool stateful = !(lb_kind(v)->flags & XLB_VIP_F_STATELESS);
		const char *name = lb_kind(v)->name;
		struct xlb_flow f;
		size_t len;
		int k;

		lb_spec(&self->lb, v, &s);
		s.tcp_flags = PKT_TCP_ACK;	/* a SYN is never cached */
		f = lb_flow(&s);
		len = lb_build(&s, in);
		xlb_dp_changed(&self->lb.dp);	/* no live entry in the way */
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, self->lb.vip[v].id,
					      &vs0));
		ASSERT_EQ(0, xlb_dp_actions(&self->lb.dp, ac0));
		lb_run(&self->lb, in, len, &r0);
		ASSERT_TRUE(lb_expect_fwd(&self->lb, v, &f, in, len, &r0,
					  LB_EXPLAIN, "first packet", NULL));
		ASSERT_EQ(0, fc_entry(&self->lb, cpu, &f, &e));
		EXPECT_EQ(!stateful, !memcmp(&e.flow, &f, sizeof(f)))
			TH_LOG("VIP %s: the flow %s in the cache after its first packet",
			       name, stateful ? "is" : "is not");
		for (k = 0; k < 4; k++) {
			lb_run(&self->lb, in, len, &r);
			ASSERT_EQ(r0.retval, r.retval);
			ASSERT_EQ(r0.len, r.len);
			EXPECT_EQ(0, memcmp(r0.out, r.out, r0.len))
				TH_LOG("VIP %s: packet %d differs from the first",
				       name, k + 2);
		}
		ASSERT_EQ(0, fc_entry(&self->lb, cpu, &f, &e));
		EXPECT_EQ(0, memcmp(&e.flow, &f, sizeof(f)))
			TH_LOG("VIP %s: the flow cache does not hold the flow",
			       name);
		EXPECT_EQ(*self->lb.dp.gen_map, e.gen);
		s.tos = 0x2b;	/* DSCP 10, ECN CE */
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "another TOS", NULL));
		s.tos = 0;
		EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
				       "TOS 0 again", NULL));
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, self->lb.vip[v].id,
					      &vs1));
		EXPECT_EQ(7, vs1.packets - vs0.packets);
		EXPECT_EQ(stateful ? 1 : 0, vs1.new_flows - vs0.new_flows);
		EXPECT_EQ(stateful ? 6 : 0, vs1.ct_hits - vs0.ct_hits)
			TH_LOG("VIP %s: connection hits, from the cache or not",
			       name);
		EXPECT_EQ(stateful ? 5 : 6, vs1.cache_hits - vs0.cache_hits)
			TH_LOG("VIP %s: packets sent from the cache", name);
		/* and by their action, as the whole path counts its own */
		ASSERT_EQ(0, xlb_dp_actions(&self->lb.dp, ac1));
		EXPECT_EQ(7, ac1[r0.retval] - ac0[r0.retval])
			TH_LOG("VIP %s: action %u", name, r0.retval);
		EXPECT_EQ(7, ac1[XDP_ABORTED] + ac1[XDP_DROP] + ac1[XDP_PASS] +
			     ac1[XDP_TX] + ac1[XDP_REDIRECT] - ac0[XDP_ABORTED] -
			     ac0[XDP_DROP] - ac0[XDP_PASS] - ac0[XDP_TX] -
			     ac0[XDP_REDIRECT]);
	}
}

/*
 * Packets of a cached flow that its entry does not fit take the whole
 * path, as they would without the cache: one too big to tunnel is
 * answered with ICMP, a frame with Ethernet padding leaves without it, a
 * frame cut short of its IP length is dropped as malformed; none is sent
 * from the cache, and the entry stays for the flow's next packet.
 */
TEST_F(lb, fc_packets_the_entry_does_not_fit_take_the_whole_path)
{
	static const int kinds[] = { K_TCP_IPIP4, K_ATOMIC };
	static __u8 in[LB_BUF];
	static struct lb_res r0, r;
	struct xlb_vip_stats vs0, vs1;
	struct pkt_info pi;
	struct pkt_spec s, big;
	unsigned int i;
	int v, cpu = pin_cpu();

	ASSERT_LE(0, cpu);
	lb_for_each_vip(i, v, kinds) {
		const char *name = lb_kind(v)->name;
		__u32 id = self->lb.vip[v].id;
		struct xlb_fc_entry e;
		struct xlb_flow f;
		size_t len;

		lb_spec(&self->lb, v, &s);
		s.tcp_flags = PKT_TCP_ACK;	/* a SYN is never cached */
		f = lb_flow(&s);
		len = lb_build(&s, in);
		xlb_dp_changed(&self->lb.dp);
		lb_run(&self->lb, in, len, &r0);
		lb_run(&self->lb, in, len, &r);	/* cached by now */
		ASSERT_EQ(XDP_TX, r.retval);
		ASSERT_EQ(0, fc_entry(&self->lb, cpu, &f, &e));
		ASSERT_EQ(0, memcmp(&e.flow, &f, sizeof(f)))
			TH_LOG("VIP %s: flow not cached", name);
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, id, &vs0));

		big = s;
		big.df = true;	/* without DF it goes to the kernel */
		big.payload_len = LB_MTU - PKT_TCP_LEN -
				  (s.family == 4 ? PKT_IP4_LEN : PKT_IP6_LEN);
		len = lb_build(&big, in);
		lb_run(&self->lb, in, len, &r);
		EXPECT_EQ(XDP_TX, r.retval);
		EXPECT_EQ(1, r.ev[XLB_EV_TOO_BIG]);
		EXPECT_TRUE(lb_is_too_big_answer(in, len, &r, &pi))
			TH_LOG("VIP %s: a packet over the MTU not answered",
			       name);

		len = lb_build(&s, in);
		memset(in + len, 0, 8);		/* Ethernet padding */
		lb_run(&self->lb, in, len + 8, &r);
		EXPECT_EQ(XDP_TX, r.retval);
		ASSERT_EQ(r0.len, r.len) TH_LOG("VIP %s: padded frame", name);
		EXPECT_EQ(0, memcmp(r0.out, r.out, r0.len))
			TH_LOG("VIP %s: padded frame left otherwise", name);

		lb_run(&self->lb, in, len - 8, &r);	/* cut short */
		EXPECT_EQ(XDP_DROP, r.retval);
		EXPECT_EQ(1, r.ev[XLB_EV_MALFORMED]);

		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, id, &vs1));
		EXPECT_EQ(0, vs1.cache_hits - vs0.cache_hits)
			TH_LOG("VIP %s: sent from the cache", name);
		lb_run(&self->lb, in, len, &r);
		ASSERT_EQ(XDP_TX, r.retval);
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp, id, &vs0));
		EXPECT_EQ(1, vs0.cache_hits - vs1.cache_hits)
			TH_LOG("VIP %s: the entry did not stay", name);
	}
}

/*
 * A cached flow keeps its slot against other flows that miss on it, up
 * to XLB_FC_STAY - 1 of them since its last hit; the next one takes it.
 */
TEST_F(lb, fc_live_entry_gives_way_to_the_stay_th_other_flow)
{
	int v = lb_vip(XLB_FAMILY_INET, K_ATOMIC), cpu = pin_cpu();
	static __u8 ina[LB_BUF], inb[LB_BUF];
	static struct lb_res r;
	struct xlb_vip_stats vs0, vs1;
	struct xlb_flow fa, fb;
	struct pkt_spec a, b;
	struct xlb_fc_entry e;
	size_t la, lb;
	int k;

	ASSERT_LE(0, cpu);
	lb_spec(&self->lb, v, &a);
	a.tcp_flags = PKT_TCP_ACK;	/* a SYN is never cached */
	fa = lb_flow(&a);
	b = a;
	do {	/* another flow of the same slot */
		b.sport++;
		fb = lb_flow(&b);
	} while (xlb_fc_slot(&fb) != xlb_fc_slot(&fa));
	la = lb_build(&a, ina);
	lb = lb_build(&b, inb);
	xlb_dp_changed(&self->lb.dp);
	lb_run(&self->lb, ina, la, &r);		/* a: cached */
	ASSERT_EQ(XDP_TX, r.retval);
	for (k = 0; k < 2 * XLB_FC_STAY; k++) {
		lb_run(&self->lb, inb, lb, &r);	/* b misses */
		ASSERT_EQ(XDP_TX, r.retval);
		if (k % 2 == 0)
			continue;
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp,
					      self->lb.vip[v].id, &vs0));
		lb_run(&self->lb, ina, la, &r);	/* a hits: b starts over */
		ASSERT_EQ(XDP_TX, r.retval);
		ASSERT_EQ(0, xlb_dp_vip_stats(&self->lb.dp,
					      self->lb.vip[v].id, &vs1));
		EXPECT_EQ(1, vs1.cache_hits - vs0.cache_hits)
			TH_LOG("flow a lost its slot to %d misses of flow b",
			       k % 2 + 1);
	}
	for (k = 0; k < XLB_FC_STAY; k++) {
		ASSERT_EQ(0, fc_entry(&self->lb, cpu, &fb, &e));
		EXPECT_EQ(0, memcmp(&e.flow, &fa, sizeof(fa)))
			TH_LOG("flow b took the slot after %d misses", k);
		lb_run(&self->lb, inb, lb, &r);
		ASSERT_EQ(XDP_TX, r.retval);
	}
	ASSERT_EQ(0, fc_entry(&self->lb, cpu, &fb, &e));
	EXPECT_EQ(0, memcmp(&e.flow, &fb, sizeof(fb)))
		TH_LOG("flow b's %dth miss did not take the slot", XLB_FC_STAY);
}

/* First packet of s's flow, then the next one's Ethernet destination. */
static int fc_dmac_now(struct lb *lb, const struct pkt_spec *s, __u8 mac[6])
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	size_t len = lb_build(s, in);

	lb_run(lb, in, len, &r);
	if (r.retval != XDP_TX)
		return -1;
	memcpy(mac, r.out, 6);
	return 0;
}

/*
 * The cache remembers only what the state said: a write behind libxlb
 * goes unseen until xlb_dp_changed (which shows the cache is what answers),
 * and each of libxlb's writes is seen by the very next packet: backend,
 * config, table, connection table, VIP.
 */
TEST_F(lb, fc_every_libxlb_change_reaches_the_next_packet)
{
	int v = lb_vip(XLB_FAMILY_INET, K_ATOMIC), cpu = pin_cpu();
	static __u8 in[LB_BUF];
	static struct lb_res r;
	struct xlb_backend b, raw;
	struct xlb_err err = { "" };
	struct xlb_config cfg;
	struct xlb_table t1;
	struct pkt_spec s;
	struct xlb_flow f;
	__u8 mac[6], old[6];
	char why[256];
	__u32 key;
	__u16 id;

	ASSERT_LE(0, cpu);
	ASSERT_EQ(0, lb_table(&self->lb, v, 0, 5, self->lb.tbl[v].size, &t1));
	ASSERT_TRUE(moving_flow(&self->lb, v, &self->lb.tbl[v], &t1, &s));
	s.tcp_flags = PKT_TCP_ACK;	/* a SYN is never cached */
	f = lb_flow(&s);
	id = lb_pick(&self->lb, v, &f).primary;
	ASSERT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
			       "first packet", NULL));
	ASSERT_EQ(0, fc_dmac_now(&self->lb, &s, old));

	/* behind libxlb: the cache still answers, until told */
	key = id;
	ASSERT_EQ(0, bpf_map_lookup_elem(self->lb.dp.backends, &key, &raw));
	raw.dmac[5] ^= 0x11;
	ASSERT_EQ(0, bpf_map_update_elem(self->lb.dp.backends, &key, &raw, 0));
	ASSERT_EQ(0, fc_dmac_now(&self->lb, &s, mac));
	EXPECT_EQ(0, memcmp(mac, old, 6))
		TH_LOG("a packet after a write behind libxlb did not come from the cache");
	xlb_dp_changed(&self->lb.dp);
	ASSERT_EQ(0, fc_dmac_now(&self->lb, &s, mac));
	EXPECT_EQ(raw.dmac[5], mac[5]);

	/* libxlb's writes */
	b = self->lb.be[id];
	b.dmac[5] ^= 0x22;	/* a new next hop only: same epoch */
	ASSERT_EQ(0, xlb_dp_backend_set(&self->lb.dp, id, &b, &err))
		TH_LOG("%s", err.msg);
	self->lb.be[id] = b;
	EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
			       "after backend_set", NULL));
	cfg = self->lb.cfg;
	cfg.ttl = LB_TTL + 1;
	ASSERT_EQ(0, xlb_dp_config_set(&self->lb.dp, &cfg));
	lb_run(&self->lb, in, lb_build(&s, in), &r);
	ASSERT_EQ(XDP_TX, r.retval);
	EXPECT_EQ(LB_TTL + 1, r.out[14 + 8]) TH_LOG("outer TTL after config_set");
	ASSERT_EQ(0, xlb_dp_config_set(&self->lb.dp, &self->lb.cfg));
	ASSERT_EQ(0, lb_install(&self->lb, v, &t1, why, sizeof(why)))
		TH_LOG("%s", why);
	EXPECT_NE(id, lb_pick(&self->lb, v, &f).primary);
	EXPECT_TRUE(lb_run_fwd(&self->lb, v, &s, &f, LB_EXPLAIN,
			       "after a table publish", NULL));
	ASSERT_EQ(0, xlb_dp_vip_del(&self->lb.dp, &self->lb.key[v]));
	lb_run(&self->lb, in, lb_build(&s, in), &r);
	EXPECT_TRUE(lb_expect_pass(in, lb_build(&s, in), &r,
				   "after the VIP is gone"));
}

TEST_HARNESS_MAIN
