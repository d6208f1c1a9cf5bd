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
 * in the middle of the run.  Rounds bounded in count; no timed assertion.
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

TEST_HARNESS_MAIN
