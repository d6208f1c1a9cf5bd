// SPDX-License-Identifier: GPL-2.0
/*
 * Next hops toward backends (user/lib/neigh.c) against the real kernel: every
 * case builds two fresh network namespaces of its own, "lb" (where the
 * resolver runs) and "peer", joined by a veth pair with fixed MACs:
 *
 *   lb:   xnh0 02:00:00:00:98:01  10.98.0.1/24  fd00:98::1/64
 *   peer: xnh1 02:00:00:00:98:02  10.98.0.2/24  fd00:98::2/64
 *
 * The namespaces are anonymous (unshare, then held by file descriptors
 * only), so they and the veth pair vanish when the fixture closes them in
 * the teardown, and at the latest when the test's process exits, whatever
 * failed.  Packets (ARP, neighbour discovery) stay on that veth pair.
 *
 * Expectations come from the configuration the case made (addresses, MACs)
 * and from `ip neigh`, not from the resolver.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../kmod/nl.h"
#include "flow_hash.h"
#include "mono.h"
#include "neigh.h"

#define LB_IF		"xnh0"
#define PEER_IF		"xnh1"
#define LB_MAC		"02:00:00:00:98:01"
#define PEER_MAC	"02:00:00:00:98:02"
#define WAIT_MS		3000
#define STEP_MS		50

static const uint8_t lb_mac[6] = { 2, 0, 0, 0, 0x98, 1 };
static const uint8_t peer_mac[6] = { 2, 0, 0, 0, 0x98, 2 };

FIXTURE(nh) {
	int home;		/* the namespace the test started in */
	int lb, peer;		/* the test's namespaces */
	struct xlb_neigh *n;
	int ifindex;		/* of xnh0, in lb */
};

static int ns_fd(void)
{
	return open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
}

/*
 * Run ip commands, one a line, in one `ip -batch` (a process is expensive
 * in the qemu guest); it stops at the first that fails.
 */
static int ip_batch(const char *lines)
{
	FILE *f = popen("ip -batch -", "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(lines, f) < 0;
	return pclose(f) || ret ? -1 : 0;
}

/* The same in the peer namespace, then back to lb. */
static int peer_batch(FIXTURE_DATA(nh) *self, const char *lines)
{
	int ret;

	if (setns(self->peer, CLONE_NEWNET))
		return -1;
	ret = ip_batch(lines);
	if (setns(self->lb, CLONE_NEWNET))
		return -1;
	return ret;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * Write a sysctl of the current network namespace (what /proc/sys/net
 * shows depends on the namespace of who opens it).
 */
static int set_sysctl(const char *name, const char *value)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fputs(value, f) < 0;
	ret |= fclose(f) != 0;
	return ret ? -1 : 0;
}

/*
 * Wait until ifname (in the current namespace) is operationally up
 * (nl_operstate; IFF_RUNNING is also reported before, while the state is
 * still unknown).  A veth's queue is activated by the kernel's link watch,
 * up to a second after the carrier came, after the state; frames sent
 * before (our first ARP or neighbour solicitation) are dropped.  Setting
 * the MTU the device has takes the lock the link watch holds for both.
 */
static int wait_oper_up(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int fd, waited, ret = -1;

	for (waited = 0; waited < WAIT_MS; waited += STEP_MS) {
		if (nl_operstate(ifname) == IF_OPER_UP) {
			ret = 0;
			break;
		}
		sleep_ms(STEP_MS);
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ret && (ioctl(fd, SIOCGIFMTU, &ifr) || ioctl(fd, SIOCSIFMTU, &ifr)))
		ret = -1;
	close(fd);
	return ret;
}

FIXTURE_SETUP(nh)
{
	char cmd[384];
	int peer, ret;

	self->lb = self->peer = -1;
	self->n = NULL;
	self->home = ns_fd();
	ASSERT_LE(0, self->home);
	ASSERT_EQ(0, unshare(CLONE_NEWNET)) TH_LOG("unshare: needs root");
	self->peer = ns_fd();
	ASSERT_LE(0, self->peer);
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	self->lb = ns_fd();
	ASSERT_LE(0, self->lb);
	/*
	 * No duplicate address detection on the interfaces to come: the
	 * kernel sends neighbour solicitations only from a link-local
	 * address that finished it (a second or two after link up).
	 */
	ASSERT_EQ(0, setns(self->peer, CLONE_NEWNET));
	ASSERT_EQ(0, set_sysctl("net/ipv6/conf/default/accept_dad", "0"));
	ASSERT_EQ(0, setns(self->lb, CLONE_NEWNET));
	ASSERT_EQ(0, set_sysctl("net/ipv6/conf/default/accept_dad", "0"));

	/* the peer end is created straight in the peer namespace */
	peer = fcntl(self->peer, F_DUPFD, 10);	/* without O_CLOEXEC */
	ASSERT_LE(0, peer);
	snprintf(cmd, sizeof(cmd),
		 "link add " LB_IF " address " LB_MAC " type veth peer name "
		 PEER_IF " address " PEER_MAC " netns /proc/%d/fd/%d\n"
		 "link set lo up\n"
		 "link set " LB_IF " up\n"
		 "addr add 10.98.0.1/24 dev " LB_IF "\n"
		 "addr add fd00:98::1/64 dev " LB_IF " nodad\n",
		 getpid(), peer);
	ret = ip_batch(cmd);
	close(peer);
	ASSERT_EQ(0, ret);
	/*
	 * Resolution gives up after 3 probes 100 ms apart instead of 1 s,
	 * so a peer that never answers is FAILED within the case; a STALE
	 * entry in use is probed at once instead of after 5 s.  (A fresh
	 * namespace has no "default" to set them for all interfaces.)
	 */
	ASSERT_EQ(0, set_sysctl("net/ipv4/neigh/" LB_IF "/retrans_time_ms",
				"100"));
	ASSERT_EQ(0, set_sysctl("net/ipv6/neigh/" LB_IF "/retrans_time_ms",
				"100"));
	ASSERT_EQ(0, set_sysctl("net/ipv4/neigh/" LB_IF
				"/delay_first_probe_time", "0"));
	ASSERT_EQ(0, peer_batch(self,
		"link set lo up\n"
		"link set " PEER_IF " up\n"
		"addr add 10.98.0.2/24 dev " PEER_IF "\n"
		"addr add fd00:98::2/64 dev " PEER_IF " nodad\n"));
	ASSERT_EQ(0, wait_oper_up(LB_IF));
	ASSERT_EQ(0, setns(self->peer, CLONE_NEWNET));
	ASSERT_EQ(0, wait_oper_up(PEER_IF));
	ASSERT_EQ(0, setns(self->lb, CLONE_NEWNET));
	self->ifindex = (int)if_nametoindex(LB_IF);
	ASSERT_NE(0, self->ifindex);
	self->n = xlb_neigh_open(NULL);
	ASSERT_NE(NULL, self->n);
}

FIXTURE_TEARDOWN(nh)
{
	xlb_neigh_close(self->n);
	/* leaving and closing them is what ends the namespaces */
	if (self->home >= 0 && setns(self->home, CLONE_NEWNET))
		TH_LOG("cannot return to the test's first namespace");
	if (self->lb >= 0)
		close(self->lb);
	if (self->peer >= 0)
		close(self->peer);
	if (self->home >= 0)
		close(self->home);
}

/* An address as struct xlb_backend holds it (IPv4 in a[0]). */
static void addr_of(const char *s, __be32 a[4])
{
	memset(a, 0, 16);
	if (inet_pton(strchr(s, ':') ? AF_INET6 : AF_INET, s, a) != 1)
		abort();
}

/* One resolution of the address s. */
static int resolve(struct xlb_neigh *n, const char *s, struct xlb_nh *out,
		   struct xlb_err *err)
{
	uint8_t family = strchr(s, ':') ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
	__be32 a[4];

	addr_of(s, a);
	return xlb_neigh_resolve(n, family, a, out, err);
}

/* Resolve until the answer is not -EAGAIN, at most WAIT_MS. */
static int resolve_wait(struct xlb_neigh *n, uint8_t family, const char *s,
			struct xlb_nh *out, struct xlb_err *err)
{
	__be32 a[4];
	int waited, ret;

	addr_of(s, a);
	for (waited = 0;; waited += STEP_MS) {
		ret = xlb_neigh_resolve(n, family, a, out, err);
		if (ret != -EAGAIN || waited >= WAIT_MS)
			return ret;
		sleep_ms(STEP_MS);
	}
}

/* What `ip neigh show` says about one entry ("" when there is none). */
static void neigh_show(const char *args, char *buf, size_t len)
{
	char cmd[160];
	FILE *f;
	size_t got;

	snprintf(cmd, sizeof(cmd), "ip neigh show %s", args);
	buf[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return;
	got = fread(buf, 1, len - 1, f);
	buf[got] = '\0';
	pclose(f);
}

/*
 * A result the resolver must not write: every byte (padding included, so
 * compared bytewise) is 0xa5.
 */
static void poison(struct xlb_nh *out)
{
	memset(out, 0xa5, sizeof(*out));
}

static bool untouched(const struct xlb_nh *out)
{
	const uint8_t *p = (const uint8_t *)out;
	size_t i;

	for (i = 0; i < sizeof(*out); i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

/* The answer must be ret, with err naming why, and out as it was. */
static void expect_refused(struct __test_metadata *_metadata,
			   struct xlb_neigh *n, uint8_t family, const char *s,
			   int ret, const char *why)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	__be32 a[4];

	poison(&out);
	addr_of(s, a);
	EXPECT_EQ(ret, xlb_neigh_resolve(n, family, a, &out, &err))
		TH_LOG("%s: %s", s, err.msg);
	EXPECT_NE(NULL, strstr(err.msg, why)) TH_LOG("%s: %s", s, err.msg);
	EXPECT_TRUE(untouched(&out))
		TH_LOG("%s: result written although refused", s);
}

static void expect_nh(struct __test_metadata *_metadata,
		      const struct xlb_nh *out, int ifindex, uint8_t family,
		      const char *via, const uint8_t dmac[6])
{
	__be32 a[4];

	addr_of(via, a);
	EXPECT_EQ(ifindex, out->ifindex);
	EXPECT_EQ(family, out->family);
	EXPECT_EQ(0, memcmp(a, out->via, 16)) TH_LOG("next hop is not %s", via);
	EXPECT_EQ(0, memcmp(dmac, out->dmac, 6));
	EXPECT_EQ(0, memcmp(lb_mac, out->smac, 6));
}

TEST_F(nh, on_link_ipv4_peer_resolves_and_stays_managed)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];
	__be32 a[4];
	int ret;

	poison(&out);
	/* nothing has talked to the peer yet: there is no entry */
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	ASSERT_STREQ("", show);
	addr_of("10.98.0.2", a);
	ret = xlb_neigh_resolve(self->n, XLB_FAMILY_INET, a, &out, &err);
	ASSERT_EQ(-EAGAIN, ret) TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(err.msg, "10.98.0.2")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(untouched(&out));
	/* the resolver asked for a managed entry, which the kernel resolves */
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, " managed")) TH_LOG("%s", show);

	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.98.0.2",
				  &out, &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "lladdr " PEER_MAC " managed REACHABLE"))
		TH_LOG("%s", show);

	/* asking again is answered at once, and changes nothing */
	memset(&out, 0, sizeof(out));
	ASSERT_EQ(0, xlb_neigh_resolve(self->n, XLB_FAMILY_INET, a, &out, &err))
		TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);
}

TEST_F(nh, gateway_is_the_next_hop)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];

	poison(&out);
	ASSERT_EQ(0, ip_batch("route add 10.99.0.0/24 via 10.98.0.2\n"));
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.99.0.7", &out,
				  &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);
	/* the gateway was resolved, not the backend behind it */
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "managed")) TH_LOG("%s", show);
	neigh_show("10.99.0.7", show, sizeof(show));
	EXPECT_STREQ("", show);
}

TEST_F(nh, on_link_ipv6_peer_and_ipv6_gateway)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];

	poison(&out);
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET6, "fd00:98::2",
				  &out, &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET6,
		  "fd00:98::2", peer_mac);
	neigh_show("fd00:98::2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "managed")) TH_LOG("%s", show);

	ASSERT_EQ(0, ip_batch("route add fd00:99::/64 via fd00:98::2\n"));
	poison(&out);
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET6, "fd00:99::7",
				  &out, &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET6,
		  "fd00:98::2", peer_mac);
}

TEST_F(nh, ipv4_route_via_ipv6_gateway)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;

	poison(&out);
	/* RTA_VIA: an IPv4 destination behind an IPv6 next hop (RFC 5549) */
	ASSERT_EQ(0, ip_batch("route add 10.91.0.0/24 via inet6 fd00:98::2 dev "
			      LB_IF "\n"));
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.91.0.3", &out,
				  &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET6,
		  "fd00:98::2", peer_mac);
}

TEST_F(nh, no_route_is_unreachable)
{
	/* the namespace has no default route */
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.200.0.1",
		       -ENETUNREACH, "no route to 10.200.0.1");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "2001:db8:200::1",
		       -ENETUNREACH, "no route to 2001:db8:200::1");
}

TEST_F(nh, blackhole_unreachable_and_prohibit_routes_are_refused)
{
	ASSERT_EQ(0, ip_batch("route add blackhole 10.96.0.0/24\n"
			      "route add unreachable 10.96.1.0/24\n"
			      "route add prohibit 10.96.2.0/24\n"
			      "route add blackhole fd00:96::/64\n"
			      "route add unreachable fd00:96:1::/64\n"
			      "route add prohibit fd00:96:2::/64\n"));
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.96.0.1",
		       -ENETUNREACH, "blackhole");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.96.1.1",
		       -ENETUNREACH, "unreachable");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.96.2.1",
		       -ENETUNREACH, "prohibit");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "fd00:96::1",
		       -ENETUNREACH, "blackhole");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "fd00:96:1::1",
		       -ENETUNREACH, "unreachable");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "fd00:96:2::1",
		       -ENETUNREACH, "prohibit");
}

TEST_F(nh, local_address_is_refused)
{
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.98.0.1",
		       -ENETUNREACH, "address of this host");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "127.0.0.1",
		       -ENETUNREACH, "address of this host");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "fd00:98::1",
		       -ENETUNREACH, "address of this host");
	/* broadcast is not a backend either */
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.98.0.255",
		       -ENETUNREACH, "broadcast");
}

TEST_F(nh, multipath_routes_are_refused)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;

	poison(&out);
	ASSERT_EQ(0, ip_batch(
		"route add 10.97.0.0/24 nexthop via 10.98.0.2 "
		"nexthop via 10.98.0.3\n"
		"route add fd00:97::/64 nexthop via fd00:98::2 dev " LB_IF
		" nexthop via fd00:98::3 dev " LB_IF "\n"
		/* the same as nexthop objects: one group, one single */
		"nexthop add id 1 via 10.98.0.2 dev " LB_IF "\n"
		"nexthop add id 2 via 10.98.0.3 dev " LB_IF "\n"
		"nexthop add id 10 group 1/2\n"
		"route add 10.97.1.0/24 nhid 10\n"
		"route add 10.97.2.0/24 nhid 1\n"));
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.97.0.1",
		       -ENETUNREACH, "multipath");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET6, "fd00:97::1",
		       -ENETUNREACH, "multipath");
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.97.1.1",
		       -ENETUNREACH, "multipath");
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.97.2.1", &out,
				  &err)) TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);

	/* routes keep only their nexthop id: the group is looked up */
	ASSERT_EQ(0, set_sysctl("net/ipv4/nexthop_compat_mode", "0"));
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.97.1.1",
		       -ENETUNREACH, "multipath");
	poison(&out);
	ASSERT_EQ(0, resolve(self->n, "10.97.2.1", &out, &err))
		TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);
}

TEST_F(nh, silent_peer_stays_eagain_and_is_never_answered)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];
	__be32 a[4];
	int i, ret;

	poison(&out);
	/* nobody has 10.98.0.77: ARP goes unanswered */
	addr_of("10.98.0.77", a);
	for (i = 0; i < 30; i++) {
		ret = xlb_neigh_resolve(self->n, XLB_FAMILY_INET, a, &out,
					&err);
		ASSERT_EQ(-EAGAIN, ret) TH_LOG("call %d: %s", i, err.msg);
		ASSERT_TRUE(untouched(&out))
			TH_LOG("call %d: result written although unresolved",
			       i);
		sleep_ms(STEP_MS);
	}
	/* 1.5 s: three probes 100 ms apart have failed long ago */
	EXPECT_NE(NULL, strstr(err.msg, "10.98.0.77")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(strstr(err.msg, "FAILED") || strstr(err.msg, "INCOMPLETE"))
		TH_LOG("%s", err.msg);
	neigh_show("10.98.0.77 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "managed")) TH_LOG("%s", show);
	EXPECT_EQ(NULL, strstr(show, "lladdr")) TH_LOG("%s", show);
}

TEST_F(nh, permanent_entry_is_used_as_it_is)
{
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0x98, 0x50 };
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];

	poison(&out);
	/* an administrator's static entry, for an address nobody has */
	ASSERT_EQ(0, ip_batch("neigh add 10.98.0.50 lladdr 02:00:00:00:98:50 "
			      "dev " LB_IF " nud permanent\n"));
	ASSERT_EQ(0, resolve(self->n, "10.98.0.50", &out, &err))
		TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET,
		  "10.98.0.50", mac);
	neigh_show("10.98.0.50 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "PERMANENT")) TH_LOG("%s", show);
	EXPECT_EQ(NULL, strstr(show, "managed")) TH_LOG("%s", show);
}

TEST_F(nh, stale_entry_is_used_and_adopted)
{
	struct xlb_err err = { "" };
	struct xlb_nh out;
	char show[512];
	int waited;

	poison(&out);
	/* what the stack leaves behind after talking to the peer once */
	ASSERT_EQ(0, ip_batch("neigh add 10.98.0.2 lladdr " PEER_MAC
			      " dev " LB_IF " nud stale\n"));
	ASSERT_EQ(0, resolve(self->n, "10.98.0.2", &out, &err))
		TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  peer_mac);
	/* now managed, and the kernel confirms it without any traffic of ours */
	for (waited = 0; waited < WAIT_MS; waited += STEP_MS) {
		neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
		if (strstr(show, "REACHABLE"))
			break;
		sleep_ms(STEP_MS);
	}
	EXPECT_NE(NULL, strstr(show, "managed REACHABLE")) TH_LOG("%s", show);
}

/*
 * The point of managed entries: the data path's packets never confirm a
 * neighbour, yet a changed MAC (a replaced backend, a gateway failover)
 * must reach the data path.  The kernel re-probes a managed entry on its
 * own (every interval_probe_time_ms, 5 s, a table-wide setting this test
 * leaves alone).  Here reachability lapses after ~100 ms, a failed
 * unicast probe falls back to broadcast, and the answer with the new MAC
 * is taken at once (locktime 0; with the default 1 s the kernel ignores
 * it, the entry fails, and the next re-probe learns the MAC), so the new
 * MAC is learnt at the first re-probe after the change.
 */
TEST_F(nh, changed_peer_mac_is_followed_without_traffic)
{
	static const uint8_t new_mac[6] = { 2, 0, 0, 0, 0x98, 3 };
	struct xlb_err err = { "" };
	struct xlb_nh out;
	uint64_t t0;
	char show[512];
	int waited;

	poison(&out);
	ASSERT_EQ(0, set_sysctl("net/ipv4/neigh/" LB_IF
				"/base_reachable_time_ms", "100"));
	ASSERT_EQ(0, set_sysctl("net/ipv4/neigh/" LB_IF "/mcast_resolicit",
				"3"));
	ASSERT_EQ(0, set_sysctl("net/ipv4/neigh/" LB_IF "/locktime", "0"));
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.98.0.2", &out,
				  &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, memcmp(peer_mac, out.dmac, 6));
	ASSERT_EQ(0, peer_batch(self, "link set " PEER_IF
					 " address 02:00:00:00:98:03\n"));
	/*
	 * Only watched meanwhile, not resolved: the kernel alone must
	 * learn the new MAC.  One re-probe period and then some.
	 */
	t0 = xlb_mono_ms();
	for (waited = 0; waited < 12000; waited = (int)(xlb_mono_ms() - t0)) {
		neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
		if (strstr(show, "lladdr 02:00:00:00:98:03 "))
			break;
		sleep_ms(STEP_MS);
	}
	EXPECT_NE(NULL, strstr(show, "lladdr 02:00:00:00:98:03 managed"))
		TH_LOG("after %d ms: %s", waited, show);
	TH_LOG("the kernel learnt the new MAC after %d ms", waited);
	poison(&out);
	ASSERT_EQ(0, resolve(self->n, "10.98.0.2", &out, &err))
		TH_LOG("%s", err.msg);
	expect_nh(_metadata, &out, self->ifindex, XLB_FAMILY_INET, "10.98.0.2",
		  new_mac);
}

/*
 * Entries resolution made are marked with xlb's protocol and released when
 * no backend needs them; entries someone else made (an administrator's,
 * one resolution only adopted) stay whatever is released.
 */
TEST_F(nh, release_removes_only_the_entries_resolution_made)
{
	struct xlb_err err = { "" };
	struct xlb_nh out, hop, other;
	char show[512], want[64];
	__be32 a[4];

	/* ours: made by resolution, with the protocol */
	ASSERT_EQ(0, resolve_wait(self->n, XLB_FAMILY_INET, "10.98.0.2",
				  &out, &err)) TH_LOG("%s", err.msg);
	snprintf(want, sizeof(want), "proto %d", XLB_NEIGH_PROTO);
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, want)) TH_LOG("%s", show);
	addr_of("10.98.0.2", a);
	ASSERT_EQ(0, xlb_neigh_hop(self->n, XLB_FAMILY_INET, a, &hop, &err))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(self->ifindex, (int)hop.ifindex);
	EXPECT_EQ(XLB_FAMILY_INET, hop.family);
	EXPECT_EQ(0, memcmp(a, hop.via, 16)) TH_LOG("next hop is not 10.98.0.2");
	/* looking up the next hop changed nothing */
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "managed")) TH_LOG("%s", show);
	EXPECT_EQ(1, xlb_neigh_release(self->n, &hop, &err))
		TH_LOG("%s", err.msg);
	neigh_show("10.98.0.2 dev " LB_IF, show, sizeof(show));
	EXPECT_STREQ("", show);
	/* released again: nothing there, nothing done */
	EXPECT_EQ(0, xlb_neigh_release(self->n, &hop, &err))
		TH_LOG("%s", err.msg);

	/* an administrator's stale entry, adopted by resolution, stays */
	ASSERT_EQ(0, ip_batch("neigh add 10.98.0.3 lladdr 02:00:00:00:98:03 "
			      "dev " LB_IF " nud stale\n"));
	ASSERT_EQ(0, resolve(self->n, "10.98.0.3", &out, &err))
		TH_LOG("%s", err.msg);
	addr_of("10.98.0.3", a);
	ASSERT_EQ(0, xlb_neigh_hop(self->n, XLB_FAMILY_INET, a, &other, &err))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(0, xlb_neigh_release(self->n, &other, &err))
		TH_LOG("%s", err.msg);
	/*
	 * Still there, without our protocol.  Its MAC may be gone by now:
	 * nobody answers for 10.98.0.3, and once the kernel's probes of
	 * the stale entry have run out (a few seconds; more in a loaded
	 * guest) it is FAILED, without an address.
	 */
	neigh_show("10.98.0.3 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "10.98.0.3 ")) TH_LOG("%s", show);
	EXPECT_EQ(NULL, strstr(show, want)) TH_LOG("%s", show);

	/* and a permanent one */
	ASSERT_EQ(0, ip_batch("neigh add 10.98.0.50 lladdr 02:00:00:00:98:50 "
			      "dev " LB_IF " nud permanent\n"));
	addr_of("10.98.0.50", a);
	ASSERT_EQ(0, xlb_neigh_hop(self->n, XLB_FAMILY_INET, a, &other, &err))
		TH_LOG("%s", err.msg);
	EXPECT_EQ(0, xlb_neigh_release(self->n, &other, &err))
		TH_LOG("%s", err.msg);
	neigh_show("10.98.0.50 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "PERMANENT")) TH_LOG("%s", show);

	/* bad input: a clear error, nothing removed */
	other.family = 9;
	EXPECT_EQ(-EINVAL, xlb_neigh_release(self->n, &other, &err));
	EXPECT_NE(NULL, strstr(err.msg, "family 9")) TH_LOG("%s", err.msg);
	EXPECT_EQ(-EINVAL, xlb_neigh_hop(self->n, 9, a, &other, &err));
	addr_of("10.99.0.1", a);	/* no route */
	EXPECT_EQ(-ENETUNREACH, xlb_neigh_hop(self->n, XLB_FAMILY_INET, a,
					      &other, &err));
	neigh_show("10.98.0.50 dev " LB_IF, show, sizeof(show));
	EXPECT_NE(NULL, strstr(show, "PERMANENT")) TH_LOG("%s", show);
}

TEST_F(nh, egress_without_ethernet_is_refused)
{
	ASSERT_EQ(0, ip_batch("route add 10.95.0.0/24 dev lo\n"));
	expect_refused(_metadata, self->n, XLB_FAMILY_INET, "10.95.0.1",
		       -ENETUNREACH, "not an Ethernet interface");
}

TEST_F(nh, bad_family_is_einval)
{
	expect_refused(_metadata, self->n, 0, "10.98.0.2", -EINVAL, "family 0");
	expect_refused(_metadata, self->n, 2 /* AF_INET, not XLB_FAMILY_INET */,
		       "10.98.0.2", -EINVAL, "family 2");
	expect_refused(_metadata, self->n, 10, "fd00:98::2", -EINVAL,
		       "family 10");
}

TEST_HARNESS_MAIN
