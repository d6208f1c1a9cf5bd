// SPDX-License-Identifier: GPL-2.0
/*
 * Attaching through libxdp: native and generic on veth, several links at
 * once sharing one program and its maps, detach leaves nothing behind, bad
 * interfaces give clear errors.  Each test runs in a network namespace of
 * its own (unshare), so nothing outlives it.
 */
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "kselftest_harness.h"
#include "attach.h"
#include "xlb.skel.h"

/*
 * Cases here load the whole data path; on 6.1 under the vm tier's
 * software emulation a load alone takes 10 s, and three times that on a
 * loaded machine: the harness's 30 s would end them.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	120

FIXTURE(att) {
	struct xlb_bpf *skel;
	struct xdp_program *prog;
	int if0, if1;
};

FIXTURE_SETUP(att)
{
	libxdp_set_print(NULL);
	libbpf_set_print(NULL);
	ASSERT_EQ(0, unshare(CLONE_NEWNET)) TH_LOG("unshare: needs root");
	ASSERT_EQ(0, system("ip link add xlbt0 type veth peer name xlbt1 && "
			    "ip link set xlbt0 up && ip link set xlbt1 up"));
	self->if0 = (int)if_nametoindex("xlbt0");
	self->if1 = (int)if_nametoindex("xlbt1");
	ASSERT_NE(0, self->if0);
	self->skel = xlb_bpf__open();
	ASSERT_NE(NULL, self->skel);
	self->prog = NULL;
}

FIXTURE_TEARDOWN(att)
{
	if (self->prog)
		xdp_program__close(self->prog);
	xlb_bpf__destroy(self->skel);
}

static __u32 prog_id(int ifindex, int generic)
{
	__u32 id = 0;

	if (xlb_link_prog_id(ifindex, generic, &id))
		return 0;
	return id;
}

/* The program the kernel runs is ours, or libxdp's dispatcher running it. */
static int runs_ours(struct xdp_program *prog, int ifindex, int generic)
{
	__u32 id = prog_id(ifindex, generic);
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	int found = 0;

	if (!id)
		return 0;
	if (id == xdp_program__id(prog))
		return 1;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return 0;
	while ((p = xdp_multiprog__next_prog(p, mp)))
		found |= xdp_program__id(p) == xdp_program__id(prog);
	xdp_multiprog__close(mp);
	return found;
}

TEST_F(att, native_and_generic_share_one_program_and_its_maps)
{
	struct xlb_err err = { "" };
	__u32 key = 0;
	struct {
		char b[48];
	} cfg = { { 7 } }, back;

	ASSERT_EQ(0, xlb_link_attach(&self->prog, self->skel->obj, self->if0,
				     0, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, xlb_link_attach(&self->prog, self->skel->obj, self->if1,
				     1, &err)) TH_LOG("%s", err.msg);
	EXPECT_TRUE(runs_ours(self->prog, self->if0, 0));
	EXPECT_TRUE(runs_ours(self->prog, self->if1, 1));
	EXPECT_EQ(0, prog_id(self->if1, 0)) TH_LOG("generic asked, native used");
	/* the maps libxdp loaded are the skeleton's: userspace sees them */
	ASSERT_EQ(0, bpf_map_update_elem(bpf_map__fd(self->skel->maps.xlb_config),
					 &key, &cfg, 0));
	ASSERT_EQ(0, bpf_map_lookup_elem(bpf_map__fd(self->skel->maps.xlb_config),
					 &key, &back));
	EXPECT_EQ(7, back.b[0]);

	ASSERT_EQ(0, xlb_link_detach(self->prog, self->if0, 0, &err))
		TH_LOG("%s", err.msg);
	ASSERT_EQ(0, xlb_link_detach(self->prog, self->if1, 1, &err))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(0, prog_id(self->if0, 0));
	EXPECT_EQ(0, prog_id(self->if1, 1));
}

TEST_F(att, missing_interface_is_a_clear_error)
{
	struct xlb_err err = { "" };

	EXPECT_EQ(-ENODEV, xlb_link_attach(&self->prog, self->skel->obj, 9999,
					   0, &err));
	EXPECT_NE(NULL, strstr(err.msg, "no interface with index 9999"))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(NULL, self->prog);
}

TEST_F(att, detach_of_unattached_link_fails_cleanly)
{
	struct xlb_err err = { "" };

	ASSERT_EQ(0, xlb_link_attach(&self->prog, self->skel->obj, self->if0,
				     0, &err)) TH_LOG("%s", err.msg);
	EXPECT_NE(0, xlb_link_detach(self->prog, self->if1, 0, &err));
	EXPECT_NE(NULL, strstr(err.msg, "xlbt1")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(runs_ours(self->prog, self->if0, 0))
		TH_LOG("a failed detach elsewhere must not touch xlbt0");
	EXPECT_EQ(0, xlb_link_detach(self->prog, self->if0, 0, &err));
}

TEST_HARNESS_MAIN
