// SPDX-License-Identifier: GPL-2.0
/*
 * The backend entry protocol (bpf/structs.h, "A backend";
 * user/lib/dp_backend.c): while a run of the data path may be reading an
 * entry it saw valid, libxlb never changes the entry's target under it.
 *
 * A reader in flight: tests/bpf/progs/be_reader.bpf.c on the data path's
 * own xlb_backends map copies the entry, spins for milliseconds
 * (bpf_loop, bounded), and copies it again.  A writer thread replaces the
 * backend with another target (a new address, MAC and epoch) a moment
 * after the reader started.  Whatever the timing, a reader whose first
 * copy was valid sees the same target in its second copy (only the flags
 * may have gone to 0), and every valid copy is one of the two entries
 * whole.  Two plain writes (the protocol before) let the new target land
 * in the middle of the run.  Then the real program, run in a loop while a
 * thread replaces its backend: no frame mixes the two.  Rounds and
 * packets bounded in count; no timed assertion.
 */
#include <pthread.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "lb_fixture.h"
#include "be_reader.skel.h"

#define ROUNDS		12
#define SPINS		(1u << 22)	/* milliseconds of bpf_loop */
#define WRITE_AFTER_US	2000

struct writer {
	const struct lb *lb;
	struct xlb_backend b;
	__u16 id;
	int ret;
	char msg[256];
};

static void *write_later(void *arg)
{
	struct writer *w = arg;
	struct xlb_err err = { "" };

	usleep(WRITE_AFTER_US);
	w->ret = xlb_dp_backend_set(&w->lb->dp, w->id, &w->b, &err);
	snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
	return NULL;
}

/* The target fields: all but flags (and pad). */
static bool same_target(const struct xlb_backend *a,
			const struct xlb_backend *b)
{
	return !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       a->family == b->family && a->encap == b->encap &&
	       a->epoch == b->epoch && !memcmp(a->dmac, b->dmac, 6) &&
	       !memcmp(a->smac, b->smac, 6) && a->ifindex == b->ifindex;
}

TEST_F(lb, backend_target_never_changes_under_a_reader)
{
	struct be_reader_bpf *rd;
	struct xlb_backend v[2], now;
	struct writer w;
	pthread_t t;
	int prog, round, moved = 0;
	__u16 id = lb_id(G_IPIP4, 0);

	rd = be_reader_bpf__open();
	ASSERT_NE(NULL, rd);
	ASSERT_EQ(0, bpf_map__reuse_fd(rd->maps.xlb_backends,
				       self->lb.dp.backends));
	ASSERT_EQ(0, be_reader_bpf__load(rd));
	prog = bpf_program__fd(rd->progs.xlb_test_be_reader);
	rd->bss->id = id;
	rd->bss->spins = SPINS;

	/* two targets: the fixture's backend and another address and MAC */
	ASSERT_EQ(0, xlb_dp_backend_get(&self->lb.dp, id, &v[0]));
	ASSERT_TRUE(v[0].flags & XLB_BE_F_VALID);
	v[1] = v[0];
	v[1].addr[0] = htonl(0x0a04ff01);	/* 10.4.255.1 */
	v[1].dmac[5] ^= 0x55;

	for (round = 0; round < ROUNDS; round++) {
		struct xlb_backend *want = &v[(round + 1) % 2];
		LIBBPF_OPTS(bpf_test_run_opts, opts,
			.data_in = lb_pattern(),
			.data_size_in = 64,
			.repeat = 1,
		);
		bool first_valid;

		memset(&w, 0, sizeof(w));
		w.lb = &self->lb;
		w.id = id;
		w.b = *want;
		w.b.epoch = 0;	/* libxlb sets it */
		ASSERT_EQ(0, pthread_create(&t, NULL, write_later, &w));
		ASSERT_EQ(0, bpf_prog_test_run_opts(prog, &opts));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(XDP_PASS, opts.retval);
		ASSERT_EQ(0, w.ret) TH_LOG("%s", w.msg);

		first_valid = rd->bss->first.flags & XLB_BE_F_VALID;
		if (first_valid && !same_target(&rd->bss->first,
						&rd->bss->second))
			moved++;
		EXPECT_TRUE(!first_valid || same_target(&rd->bss->first,
							 &rd->bss->second))
			TH_LOG("round %d: the target changed under a reader "
			       "that saw the entry valid (addr %08x -> %08x, "
			       "epoch %u -> %u)", round,
			       ntohl(rd->bss->first.addr[0]),
			       ntohl(rd->bss->second.addr[0]),
			       rd->bss->first.epoch, rd->bss->second.epoch);
		/* what a reader took as valid is one of the entries whole */
		if (rd->bss->second.flags & XLB_BE_F_VALID) {
			struct xlb_backend s = rd->bss->second;

			s.epoch = 0;
			v[0].epoch = v[1].epoch = 0;
			EXPECT_TRUE(same_target(&s, &v[0]) ||
				    same_target(&s, &v[1]))
				TH_LOG("round %d: a valid entry that is "
				       "neither target whole", round);
		}
		/* the write is done and whole */
		ASSERT_EQ(0, xlb_dp_backend_get(&self->lb.dp, id, &now));
		EXPECT_TRUE(now.flags & XLB_BE_F_VALID);
		EXPECT_EQ(0, memcmp(now.addr, want->addr, 16));
		EXPECT_EQ(0, memcmp(now.dmac, want->dmac, 6));
	}
	TH_LOG("%d of %d rounds saw the target change under a reader", moved,
	       ROUNDS);
	be_reader_bpf__destroy(rd);
}

/* --- the real program under a writer ------------------------------------- */

#define FLIPS		16
#define MAX_PACKETS	200000

struct flipper {
	const struct lb *lb;
	struct xlb_backend v[2];
	__u16 id;
	int ret;
	int done;		/* atomic */
	char msg[256];
};

static void *flip(void *arg)
{
	struct flipper *f = arg;
	struct xlb_err err = { "" };
	int i;

	for (i = 0; i < FLIPS && !f->ret; i++) {
		f->ret = xlb_dp_backend_set(&f->lb->dp, f->id, &f->v[(i + 1) % 2],
					    &err);
		usleep(1000);
	}
	snprintf(f->msg, sizeof(f->msg), "%s", err.msg);
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * xlb_main itself, BPF_PROG_TEST_RUN in a loop (bounded in count), while
 * a thread replaces its VIP's one backend FLIPS times between two
 * targets (address and next hop MAC each).  Every frame it sends pairs an
 * address with its own MAC: never one target's address with the other's
 * MAC; packets in the moment between the two are dropped and counted
 * (no_backend), never sent anywhere else.
 */
TEST_F(lb, forwarding_never_mixes_two_backends_under_replacement)
{
	static __u8 in[LB_BUF];
	static struct lb_res r;
	int v = lb_vip(XLB_FAMILY_INET, K_ATOMIC), n, mixed = 0, other = 0;
	int seen[2] = { 0, 0 }, dropped = 0;
	__u16 id = lb_id(G_IPIP4, 0);
	struct flipper f;
	struct pkt_spec s;
	struct pkt_outer o;
	pthread_t t;
	size_t len;

	ASSERT_EQ(0, lb_publish(&self->lb, v, 0, 1, LB_M_SMALL));
	memset(&f, 0, sizeof(f));
	f.lb = &self->lb;
	f.id = id;
	ASSERT_EQ(0, xlb_dp_backend_get(&self->lb.dp, id, &f.v[0]));
	f.v[1] = f.v[0];
	f.v[1].addr[0] = htonl(0x0a04ff02);	/* 10.4.255.2 */
	f.v[1].dmac[5] ^= 0x33;
	f.v[0].epoch = f.v[1].epoch = 0;

	lb_spec(&self->lb, v, &s);
	ASSERT_EQ(0, pthread_create(&t, NULL, flip, &f));
	for (n = 0; n < MAX_PACKETS &&
	     !__atomic_load_n(&f.done, __ATOMIC_ACQUIRE); n++) {
		s.sport = (__u16)(1024 + n % 4096);
		len = lb_build(&s, in);
		lb_run_c(&self->lb, in, len, &r, false);
		if (r.retval == XDP_DROP) {
			dropped++;
			continue;
		}
		if (r.retval != XDP_TX || pkt_parse_outer(r.out, r.len, &o)) {
			other++;
			continue;
		}
		if (!memcmp(o.dst, f.v[0].addr, 4))
			mixed += !!memcmp(o.l2.dst_mac, f.v[0].dmac, 6),
			seen[0]++;
		else if (!memcmp(o.dst, f.v[1].addr, 4))
			mixed += !!memcmp(o.l2.dst_mac, f.v[1].dmac, 6),
			seen[1]++;
		else
			other++;
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, f.ret) TH_LOG("%s", f.msg);
	TH_LOG("%d packets: %d to the first target, %d to the second, %d "
	       "dropped in between", n, seen[0], seen[1], dropped);
	EXPECT_EQ(0, mixed);
	EXPECT_EQ(0, other);
	/* and the last write holds */
	len = lb_build(&s, in);
	lb_run(&self->lb, in, len, &r);
	ASSERT_EQ(XDP_TX, r.retval);
	ASSERT_EQ(0, pkt_parse_outer(r.out, r.len, &o));
	EXPECT_EQ(0, memcmp(o.dst, f.v[FLIPS % 2].addr, 4));
	EXPECT_EQ(0, memcmp(o.l2.dst_mac, f.v[FLIPS % 2].dmac, 6));
}

TEST_HARNESS_MAIN
