// SPDX-License-Identifier: GPL-2.0
/*
 * One flow hash (docs/design.md contract 1): the clang -target bpf build of
 * bpf/flow_hash.h, run in the kernel through BPF_PROG_TEST_RUN, gives the
 * same values as the gcc build in userspace for random keys and flows.
 *
 * The test program is tests/bpf/progs/flow_hash.bpf.c; the packet layout
 * below must match it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kselftest_harness.h"

#include "flow_hash.h"
#include "rand.h"
#include "flow_hash.skel.h"

#define FH_OFF_KEY	0
#define FH_OFF_FLOW	16
#define FH_OFF_MODE	56
#define FH_OFF_HASH32	64
#define FH_OFF_HASH64	72
#define FH_LEN		80

#define FH_FLOWS	100000
#define FH_SEED		0x786c62666c6f7768ULL	/* "xlbflowh" */

_Static_assert(FH_OFF_FLOW == sizeof(struct xlb_hash_key), "layout");
_Static_assert(FH_OFF_MODE == FH_OFF_FLOW + sizeof(struct xlb_flow), "layout");

FIXTURE(flow_hash)
{
	struct flow_hash_bpf *skel;
	int prog_fd;
};

FIXTURE_SETUP(flow_hash)
{
	self->skel = flow_hash_bpf__open_and_load();
	ASSERT_NE(NULL, self->skel) TH_LOG("cannot open/load flow_hash.bpf.o: %s "
					   "(needs root and a kernel with BPF)",
					   strerror(errno));
	self->prog_fd = bpf_program__fd(self->skel->progs.xlb_test_flow_hash);
	ASSERT_LE(0, self->prog_fd) TH_LOG("no fd for xlb_test_flow_hash");
}

FIXTURE_TEARDOWN(flow_hash)
{
	flow_hash_bpf__destroy(self->skel);
}

/* Run the program once on in[0..len); out gets the packet afterwards. */
static int run_prog(int prog_fd, const void *in, __u32 len, void *out,
		    __u32 out_size, __u32 *out_len, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = in,
		.data_size_in = len,
		.data_out = out,
		.data_size_out = out_size,
		.repeat = 1,
	);
	int err = bpf_prog_test_run_opts(prog_fd, &opts);

	*retval = opts.retval;
	*out_len = opts.data_size_out;
	return err;
}

static void hex(const char *what, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	fprintf(stderr, "#   %-5s", what);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i && i % 8 == 0 ? " " : "", b[i]);
	fprintf(stderr, "\n");
}

static const char *mode_name(__u32 mode)
{
	switch (mode) {
	case XLB_HASH_5TUPLE:	return "5tuple";
	case XLB_HASH_3TUPLE:	return "3tuple";
	case XLB_HASH_SRC:	return "src";
	}
	return "?";
}

TEST_F(flow_hash, bpf_equals_userspace)
{
	static const __u32 modes[] = {
		XLB_HASH_5TUPLE, XLB_HASH_3TUPLE, XLB_HASH_SRC,
	};
	struct xlb_rand r = { .s = FH_SEED };
	unsigned char in[FH_LEN], out[FH_LEN + 64];
	unsigned long n, v4 = 0, v6 = 0;
	__u32 out_len, retval;

	for (n = 0; n < FH_FLOWS; n++) {
		struct xlb_hash_key key;
		struct xlb_flow flow;
		__u32 mode = modes[n % 3], h32, want32;
		__u64 h64, want64;
		int family;

		key.k0 = xlb_rand_next(&r);
		key.k1 = xlb_rand_next(&r);
		family = xlb_rand_next(&r) & 1 ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		xlb_rand_flow(&r, &flow, family);
		if (family == XLB_FAMILY_INET)
			v4++;
		else
			v6++;

		memset(in, 0, sizeof(in));
		memcpy(in + FH_OFF_KEY, &key, sizeof(key));
		memcpy(in + FH_OFF_FLOW, &flow, sizeof(flow));
		memcpy(in + FH_OFF_MODE, &mode, sizeof(mode));

		ASSERT_EQ(0, run_prog(self->prog_fd, in, sizeof(in), out,
				      sizeof(out), &out_len, &retval))
			TH_LOG("bpf_prog_test_run_opts: %s", strerror(errno));
		ASSERT_EQ((__u32)XDP_TX, retval);
		ASSERT_EQ((__u32)FH_LEN, out_len);

		memcpy(&h32, out + FH_OFF_HASH32, sizeof(h32));
		memcpy(&h64, out + FH_OFF_HASH64, sizeof(h64));
		want32 = xlb_flow_hash_mode(&key, &flow, mode);
		want64 = xlb_flow_hash64(&key, &flow);
		if (h32 != want32 || h64 != want64) {
			fprintf(stderr, "# flow %lu: IPv%d mode %s (%u)\n", n,
				family, mode_name(mode), mode);
			hex("key", &key, sizeof(key));
			hex("flow", &flow, sizeof(flow));
			fprintf(stderr, "#   hash_mode bpf %08x gcc %08x\n",
				h32, want32);
			fprintf(stderr, "#   hash64    bpf %016llx gcc %016llx\n",
				(unsigned long long)h64,
				(unsigned long long)want64);
		}
		ASSERT_EQ(want32, h32) TH_LOG("flow %lu: 32-bit hash differs", n);
		ASSERT_EQ(want64, h64) TH_LOG("flow %lu: 64-bit hash differs", n);
	}
	TH_LOG("compared %lu flows (%lu IPv4, %lu IPv6) x 3 modes round-robin",
	       n, v4, v6);
}

TEST_F(flow_hash, short_packet_aborts)
{
	unsigned char in[55], out[FH_LEN + 64];
	__u32 out_len, retval;

	memset(in, 0xa5, sizeof(in));
	ASSERT_EQ(0, run_prog(self->prog_fd, in, sizeof(in), out, sizeof(out),
			      &out_len, &retval))
		TH_LOG("bpf_prog_test_run_opts: %s", strerror(errno));
	EXPECT_EQ((__u32)XDP_ABORTED, retval);
}

TEST_HARNESS_MAIN
