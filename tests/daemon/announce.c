// SPDX-License-Identifier: GPL-2.0
/*
 * xlbd's VIP announcements (user/xlbd/announce.c, docs/edge.md): a real
 * daemon in a network namespace of the test's own, driven with the real
 * CLI; the routes are read back with `ip route show table N proto 250`,
 * as bird2 or FRR would learn them.
 *
 * Needs root.  Each case gets a fresh namespace, instance, socket and state
 * folder, and its teardown kills the daemon, runs `xlbd --cleanup` and
 * deletes the namespace, also when the case fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "kselftest_harness.h"

#include "mono.h"

#define ENV_TAG		"a"
#include "lib.h"


#define VIP6		"[fd00:100::1]:80/tcp"
#define PROTO		"250"

/* The VIP routes of table (v4 and v6), one "ADDR" per line, sorted. */
static const char *routes(struct env *e, const char *table)
{
	sh("{ ip -n %s -4 route show table %s proto " PROTO " 2>/dev/null; "
	   "ip -n %s -6 route show table %s proto " PROTO " 2>/dev/null; } "
	   "| awk '{ print $1 }' | sort | tr '\\n' ' '",
	   e->ns, table, e->ns, table);
	return out;
}

/* Until table holds exactly want (the sync runs at once; 5 s bound). */
static int wait_routes(struct env *e, const char *table, const char *want)
{
	int i;

	for (i = 0; i < 250; i++) {
		if (!strcmp(routes(e, table), want))
			return 0;
		usleep(20000);
	}
	return -1;
}

/* xlbctl host show's field, as a string (in out2). */
static char out2[4096];

static const char *host_field(struct env *e, const char *path)
{
	json_object *j = ctl_json(e, "host show");
	const char *s = j ? jget_str(j, path) : NULL;

	snprintf(out2, sizeof(out2), "%s", s ? s : "(none)");
	json_object_put(j);
	return out2;
}

#define BOTH	"10.100.0.1 fd00:100::1 "

/* Two VIPs (one per family), one backend each, the data path on xdA. */
static int two_vips(struct env *e, bool attach)
{
	int ret = ctl(e, "vip add " VIP);

	if (!ret)
		ret = ctl(e, "vip add " VIP6);
	if (!ret)
		ret = ctl(e, "backend add " VIP " " BE_NET "2");
	if (!ret)
		ret = ctl(e, "backend add " VIP6 " " BE_NET "2");
	if (!ret && attach)
		ret = ctl(e, "link attach xdA");
	return ret;
}

DAEMON_FIXTURE(ann);

TEST_F(ann, off_by_default_and_nothing_without_a_table)
{
	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	EXPECT_STREQ("off", host_field(&self->e, "state"));
	EXPECT_STREQ("0", host_field(&self->e, "table"));
	sh("ip -n %s route show table all proto " PROTO "; "
	   "ip -n %s -6 route show table all proto " PROTO, self->e.ns,
	   self->e.ns);
	EXPECT_STREQ("", out);
}

TEST_F(ann, a_route_per_servable_address_only_while_a_link_is_attached)
{
	ASSERT_EQ(0, two_vips(&self->e, false)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	/* no link yet: nothing, and host show says why */
	EXPECT_EQ(0, wait_routes(&self->e, "100", "")) TH_LOG("%s", out);
	EXPECT_STREQ("withdrawn", host_field(&self->e, "state"));
	EXPECT_STREQ("no link attached", host_field(&self->e, "reason"));
	ASSERT_EQ(0, ctl(&self->e, "link attach xdA")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	EXPECT_STREQ("announcing", host_field(&self->e, "state"));
	EXPECT_STREQ("2", host_field(&self->e, "announced"));
	/* host routes via lo, the route protocol xlbd's own */
	sh("ip -n %s -4 route show table 100 10.100.0.1/32", self->e.ns);
	EXPECT_NE(NULL, strstr(out, "dev lo")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "proto " PROTO)) TH_LOG("%s", out);
	/* two VIPs on one address: one route */
	ASSERT_EQ(0, ctl(&self->e, "vip add 10.100.0.1:443/tcp")) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "backend add 10.100.0.1:443/tcp " BE_NET "3"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	/* no backend in the table (down): withdrawn, the other stays */
	ASSERT_EQ(0, ctl(&self->e, "backend set " VIP6 " " BE_NET "2 state down"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "10.100.0.1 ")) TH_LOG("%s", out);
	EXPECT_STREQ("no backend in its VIPs' tables",
		     host_field(&self->e, "addresses.1.reason"));
	ASSERT_EQ(0, ctl(&self->e, "backend set " VIP6 " " BE_NET "2 state active"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	/* a VIP without backends at all, and a deleted VIP: withdrawn */
	ASSERT_EQ(0, ctl(&self->e, "backend del " VIP6 " " BE_NET "2"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "10.100.0.1 ")) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "vip del " VIP));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "10.100.0.1 ")) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "vip del 10.100.0.1:443/tcp"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "")) TH_LOG("%s", out);
	/* the link gone: nothing */
	ASSERT_EQ(0, ctl(&self->e, "vip add " VIP));
	ASSERT_EQ(0, ctl(&self->e, "backend add " VIP " " BE_NET "2"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "10.100.0.1 ")) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "link detach xdA")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", "")) TH_LOG("%s", out);
}

TEST_F_TIMEOUT(ann, panic_keeps_announcing, 90)
{
	/* every backend failing its check: panic keeps them in the table */
	ASSERT_EQ(0, ctl(&self->e, "vip add " VIP " health tcp interval 100 timeout 50 rise 1 fall 1 panic 50"));
	ASSERT_EQ(0, ctl(&self->e, "backend add " VIP " " BE_NET "2"));
	ASSERT_EQ(0, ctl(&self->e, "link attach xdA"));
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "10.100.0.1 ")) TH_LOG("%s", out);
	/* nothing listens on .2:80: after its check fails, panic */
	{
		json_object *j = NULL;
		int i;

		for (i = 0; i < 250; i++) {
			j = ctl_json(&self->e, "vip show " VIP);
			if (j && !strcmp(jget_str(j, "vips.0.panic_active") ?: "",
					 "true"))
				break;
			json_object_put(j);
			j = NULL;
			usleep(20000);
		}
		EXPECT_NE(NULL, j) TH_LOG("no panic");
		json_object_put(j);
		j = NULL;
	}
	EXPECT_STREQ("10.100.0.1 ", routes(&self->e, "100"));
	/* panic 100: never panic, the failing backend leaves: withdrawn */
	ASSERT_EQ(0, ctl(&self->e, "vip set " VIP " panic 100"));
	EXPECT_EQ(0, wait_routes(&self->e, "100", "")) TH_LOG("%s", out);
}

TEST_F(ann, drain_withdraws_all_keeps_forwarding_and_survives_a_restart)
{
	json_object *j;

	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "host drain")) TH_LOG("%s", out);
	EXPECT_STREQ("", routes(&self->e, "100"));
	EXPECT_STREQ("drained", host_field(&self->e, "state"));
	/* forwarding goes on: the data path stays on the link */
	j = ctl_json(&self->e, "link show");
	EXPECT_STREQ("true", jget_str(j, "links.0.attached")) TH_LOG("%s", out);
	json_object_put(j);
	/* a restart keeps the drain */
	daemon_stop(&self->e, SIGTERM);
	ASSERT_EQ(0, daemon_start(&self->e, NULL));
	EXPECT_STREQ("true", host_field(&self->e, "drained"));
	EXPECT_STREQ("", routes(&self->e, "100"));
	ASSERT_EQ(0, ctl(&self->e, "host undrain")) TH_LOG("%s", out);
	EXPECT_STREQ(BOTH, routes(&self->e, "100"));
	EXPECT_STREQ("announcing", host_field(&self->e, "state"));
	/* bad use: a verb it does not know, an argument too many */
	EXPECT_EQ(2, ctl(&self->e, "host sleep"));
	EXPECT_NE(NULL, strstr(out, "unknown verb")) TH_LOG("%s", out);
	EXPECT_EQ(2, ctl(&self->e, "host drain now"));
	EXPECT_STREQ(BOTH, routes(&self->e, "100"));
}

TEST_F(ann, another_table_or_off_moves_or_withdraws_the_routes)
{
	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 70000")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "70000", BOTH)) TH_LOG("%s", out);
	EXPECT_STREQ("", routes(&self->e, "100"));
	/* saved as a setting of this host */
	ctl(&self->e, "save");
	EXPECT_NE(NULL, strstr(out, "set announce table 70000\n")) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce off")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "70000", "")) TH_LOG("%s", out);
	ctl(&self->e, "save");
	EXPECT_EQ(NULL, strstr(out, "announce")) TH_LOG("%s", out);
}

TEST_F_TIMEOUT(ann, bad_tables_are_refused_and_nothing_changes, 90)
{
	static const struct {
		const char *args, *msg;
	} bad[] = {
		{ "table 0", "announce table 0 is no routing table" },
		{ "table 4294967296", "out of range; use 1..4294967295" },
		{ "table 99999999999999999999", "out of range" },
		{ "table -1", "is not a number" },
		{ "table 1e3", "is not a number" },
		{ "table x", "is not a number" },
		{ "table 253", "the kernel's default table" },
		{ "table 254", "the kernel's main table" },
		{ "table 255", "the kernel's local table" },
		{ "table", "needs a routing table number" },
		{ "", "set announce needs a value" },
		{ "on", "unknown announce value" },
		{ "table 5 6", "unexpected" },
	};
	static char before[sizeof(out)];
	char ans[1024];
	size_t i;

	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	ctl(&self->e, "save");
	snprintf(before, sizeof(before), "%s", out);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[256];

		/* xlbctl checks first (exit 2); xlbd itself too (exec) */
		EXPECT_EQ(2, ctl(&self->e, "set announce %s", bad[i].args))
			TH_LOG("%s", bad[i].args);
		EXPECT_NE(NULL, strstr(out, bad[i].msg))
			TH_LOG("%s: %s", bad[i].args, out);
		snprintf(line, sizeof(line),
			 "{\"version\":1,\"cmd\":\"exec\",\"lines\":[\"set announce %s\"]}\n",
			 bad[i].args);
		ASSERT_EQ(0, raw_call(&self->e, line, strlen(line), ans,
				      sizeof(ans), 5000));
		EXPECT_NE(NULL, strstr(ans, "\"ok\":false")) TH_LOG("%s: %s", line, ans);
		EXPECT_NE(NULL, strstr(ans, bad[i].msg)) TH_LOG("%s: %s", line, ans);
	}
	ctl(&self->e, "save");
	EXPECT_STREQ(before, out);
	EXPECT_STREQ(BOTH, routes(&self->e, "100"));
	EXPECT_STREQ("100", host_field(&self->e, "table"));
	/* a config file says the same (line and column) */
	sh("printf 'set key " KEY_HEX "\\nset announce table 254\\n' > %s/bad.conf; "
	   "build/xlbctl -s %s restore %s/bad.conf 2>&1", self->e.dir,
	   self->e.sock, self->e.dir);
	EXPECT_NE(NULL, strstr(out, "bad.conf:2")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "main table")) TH_LOG("%s", out);
	ctl(&self->e, "save");
	EXPECT_STREQ(before, out);
}

TEST_F_TIMEOUT(ann, kill_and_sigterm_keep_the_routes_and_the_next_xlbd_adopts_them, 90)
{
	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	daemon_stop(&self->e, SIGKILL);
	EXPECT_STREQ(BOTH, routes(&self->e, "100"));
	ASSERT_EQ(0, daemon_start(&self->e, NULL));
	/* adopted: announced, and not one route added or withdrawn */
	EXPECT_STREQ("2", host_field(&self->e, "announced"));
	EXPECT_STREQ("0", host_field(&self->e, "announcements"));
	EXPECT_STREQ("0", host_field(&self->e, "withdrawals"));
	daemon_stop(&self->e, SIGTERM);
	EXPECT_STREQ(BOTH, routes(&self->e, "100"));
	/* a route deleted by hand comes back (the table is read back) */
	ASSERT_EQ(0, daemon_start(&self->e, NULL));
	sh("ip -n %s route del 10.100.0.1/32 table 100", self->e.ns);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	/* the metrics say so (127.0.0.1:9437 in the namespace) */
	sh("nsenter --net=/var/run/netns/%s curl -sf http://127.0.0.1:9437/metrics | grep '^xlb_announce'",
	   self->e.ns);
	EXPECT_NE(NULL, strstr(out, "xlb_announce_table 100\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "xlb_announce_routes 2\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "xlb_announce_drained 0\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "xlb_announce_changes_total{change=\"announce\"} 1\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "xlb_announce_route{address=\"fd00:100::1\"} 1\n")) TH_LOG("%s", out);
	/* xlbd --cleanup withdraws them */
	daemon_stop(&self->e, SIGTERM);
	EXPECT_EQ(0, sh("nsenter --net=/var/run/netns/%s build/xlbd --instance %s --state-dir %s --cleanup 2>&1",
			self->e.ns, self->e.inst, self->e.dir)) TH_LOG("%s", out);
	EXPECT_STREQ("", routes(&self->e, "100"));
}

TEST_F(ann, shutdown_withdraws_the_routes)
{
	ASSERT_EQ(0, two_vips(&self->e, true)) TH_LOG("%s", out);
	ASSERT_EQ(0, ctl(&self->e, "set announce table 100")) TH_LOG("%s", out);
	EXPECT_EQ(0, wait_routes(&self->e, "100", BOTH)) TH_LOG("%s", out);
	EXPECT_EQ(0, ctl(&self->e, "shutdown")) TH_LOG("%s", out);
	EXPECT_EQ(0, WEXITSTATUS(daemon_stop(&self->e, 0)));
	EXPECT_STREQ("", routes(&self->e, "100"));
}

TEST_HARNESS_MAIN
