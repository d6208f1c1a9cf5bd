// SPDX-License-Identifier: GPL-2.0
/*
 * The backend module under traffic: a thread floods a backend namespace
 * with GUE frames of every kind (delivered, forwarded, malformed) while the
 * test unloads and reloads the module, switches it off and on, and
 * destroys an enabled namespace.  Survival is the property: the kernel
 * neither oopses nor warns (tests/vm/kmod.sh checks the taint flags after
 * all programs ran), and the module works again after each reload.
 *
 *   c: xku0 02:00:00:00:00:01 10.3.0.1, 10.3.0.3  <->  b: xku1 10.3.0.2
 *                                                         lo 198.51.100.1
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "kmod.h"
#include "pkt.h"

#define C_IF		"xku0"
#define B_IF		"xku1"
#define CYCLES		4
#define BUF		2048
/* the LB and the hop the flood names: the sources b accepts */
#define ON		"allow 10.3.0.0/24\nenable"

FIXTURE(unload) {
	int home, c, b;
	int pc;			/* packet socket on xku0, in c */
	pthread_t flood;
	bool flooding;
	atomic_bool stop;
	atomic_long sent;
};

FIXTURE_SETUP(unload)
{
	self->c = self->b = self->pc = -1;
	self->flooding = false;
	atomic_store(&self->stop, false);
	atomic_store(&self->sent, 0);
	ASSERT_EQ(0, km_load()) TH_LOG("cannot load %s", km_ko());
	self->home = km_ns_self();
	ASSERT_LE(0, self->home);
	self->c = km_ns_new();
	ASSERT_LE(0, self->c) TH_LOG("unshare: needs root");
	self->b = km_ns_new();
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, setns(self->c, CLONE_NEWNET));
	ASSERT_EQ(0, nl_veth(C_IF, "02:00:00:00:00:01", B_IF,
			     "02:00:00:00:00:02", self->b));
	ASSERT_EQ(0, nl_up(C_IF, NULL));
	ASSERT_EQ(0, nl_addr(C_IF, "10.3.0.1", 24));
	ASSERT_EQ(0, nl_addr(C_IF, "10.3.0.3", 24));
	ASSERT_EQ(0, setns(self->b, CLONE_NEWNET));
	ASSERT_EQ(0, nl_up(B_IF, NULL));
	ASSERT_EQ(0, nl_addr(B_IF, "10.3.0.2", 24));
	ASSERT_EQ(0, nl_addr("lo", "198.51.100.1", 32));
	ASSERT_EQ(0, nl_route("192.0.2.0", 24, "10.3.0.1"));
	ASSERT_EQ(0, setns(self->home, CLONE_NEWNET));
	ASSERT_EQ(0, km_wait_up(self->c, C_IF));
	ASSERT_EQ(0, km_wait_up(self->b, B_IF));
	ASSERT_EQ(0, km_ctl(self->b, ON));
	self->pc = km_packet_socket(self->c, C_IF);
	ASSERT_LE(0, self->pc);
}

FIXTURE_TEARDOWN(unload)
{
	if (self->flooding) {
		atomic_store(&self->stop, true);
		pthread_join(self->flood, NULL);
	}
	if (setns(self->home, CLONE_NEWNET))
		TH_LOG("cannot return to the first namespace");
	if (self->pc >= 0)
		close(self->pc);
	if (self->c >= 0)
		close(self->c);
	if (self->b >= 0)
		close(self->b);
	close(self->home);
	/* whatever happened, leave the module loaded for the next test */
	km_load();
}

/* Frame i of the flood: a UDP datagram, an unknown ACK, a broken one. */
static size_t flood_frame(__u8 *buf, unsigned int i)
{
	struct pkt_encap e;
	struct pkt_spec s;
	size_t n;

	pkt_encap_init(&e, XLB_ENCAP_GUE, XLB_FAMILY_INET);
	pkt_addr(XLB_FAMILY_INET, "10.3.0.1", e.src);
	pkt_addr(XLB_FAMILY_INET, "10.3.0.2", e.dst);
	memcpy(e.hops[0], e.dst, 16);
	pkt_addr(XLB_FAMILY_INET, "10.3.0.3", e.hops[1]);
	e.udp_no_csum = true;
	pkt_spec_init(&s, XLB_FAMILY_INET,
		      i % 3 == 0 ? IPPROTO_UDP : IPPROTO_TCP);
	s.tcp_flags = PKT_TCP_ACK;
	s.sport = (__u16)(10000 + i % 20000);
	n = pkt_build_encap(&e, &s, buf, BUF);
	if (i % 3 == 2)		/* a hop list without magic */
		buf[PKT_ETH_LEN + PKT_IP4_LEN + PKT_UDP_LEN + PKT_GUE_LEN] = 0;
	return n;
}

static void *flood(void *arg)
{
	FIXTURE_DATA(unload) *self = arg;
	__u8 buf[BUF];
	unsigned int i;

	for (i = 0; !atomic_load(&self->stop); i++) {
		size_t n = flood_frame(buf, i);

		if (n && km_send(self->pc, buf, n) == 0)
			atomic_fetch_add(&self->sent, 1);
		else
			km_sleep_ms(1);	/* queue full: let the guest breathe */
		if (i % 64 == 0)
			km_drain(self->pc);
	}
	return NULL;
}

static void start_flood(struct __test_metadata *_metadata,
			FIXTURE_DATA(unload) *self)
{
	ASSERT_EQ(0, pthread_create(&self->flood, NULL, flood, self));
	self->flooding = true;
}

/* The module handles b's traffic: its counter grows. */
static bool handling(int b)
{
	long long before = km_stat(b, "received");

	return before >= 0 && km_stat_wait(b, "received", before + 1) > before;
}

TEST_F(unload, module_unloads_and_reloads_under_traffic)
{
	int i;

	start_flood(_metadata, self);
	ASSERT_TRUE(handling(self->b));
	for (i = 0; i < CYCLES; i++) {
		ASSERT_EQ(0, km_unload()) TH_LOG("rmmod, cycle %d", i);
		EXPECT_FALSE(km_loaded());
		EXPECT_EQ(-1, km_stat(self->b, "received"));
		km_sleep_ms(100);
		ASSERT_EQ(0, km_load()) TH_LOG("insmod, cycle %d", i);
		/* a fresh module: every namespace starts switched off */
		EXPECT_EQ(0, km_stat(self->b, "enabled"));
		ASSERT_EQ(0, km_ctl(self->b, ON));
		EXPECT_TRUE(handling(self->b)) TH_LOG("cycle %d", i);
	}
	TH_LOG("%d unload cycles, %ld frames sent", CYCLES,
	       atomic_load(&self->sent));
}

TEST_F(unload, switching_off_and_on_under_traffic)
{
	int i;

	start_flood(_metadata, self);
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, km_ctl(self->b, i % 2 ? "enable" : "disable"));
		km_sleep_ms(5);
	}
	ASSERT_EQ(0, km_ctl(self->b, "enable"));
	EXPECT_TRUE(handling(self->b));
	EXPECT_LT(0, km_stat(self->b, "malformed"));
	EXPECT_LT(0, km_stat(self->b, "forwarded"));
	EXPECT_LT(0, km_stat(self->b, "delivered"));
}

TEST_F(unload, enabled_namespace_dies_under_traffic)
{
	int i;

	start_flood(_metadata, self);
	ASSERT_TRUE(handling(self->b));
	/* the last reference to b goes: the kernel dismantles it */
	close(self->b);
	self->b = -1;
	for (i = 0; i < 20; i++)
		km_sleep_ms(50);
	/* and the module is still fine for a new one */
	self->b = km_ns_new();
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, setns(self->home, CLONE_NEWNET));
	EXPECT_EQ(0, km_ctl(self->b, ON));
	EXPECT_EQ(1, km_stat(self->b, "enabled"));
	ASSERT_EQ(0, km_unload());
	ASSERT_EQ(0, km_load());
}

TEST_HARNESS_MAIN
