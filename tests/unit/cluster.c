// SPDX-License-Identifier: GPL-2.0
/*
 * The shared configuration's etcd keys: a state encodes to one global key
 * and one key per VIP and reads back into the same state; deleting a key
 * removes its part; bad values (no format line, a newer format, grammar
 * errors, per-host settings, lines of another VIP, wrong verbs, unknown
 * keys) are refused with the key, revision, line and column; per-host and
 * cluster commands are told apart; merge keeps the host's own settings.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "cluster.h"

#define KEY_HEX	"000102030405060708090a0b0c0d0e0f"
#define CONF	"set key " KEY_HEX "\n" \
		"set src4 192.0.2.1\n" \
		"set mtu 1400\n" \
		"link attach eth0\n" \
		"vip add 10.0.0.1:80/tcp encap gue health tcp\n" \
		"backend add 10.0.0.1:80/tcp 10.1.0.1 weight 2\n" \
		"backend add 10.0.0.1:80/tcp 10.1.0.2 state drain\n" \
		"vip add [2001:db8::1]:443/tcp algo ring\n" \
		"backend add [2001:db8::1]:443/tcp 2001:db8:1::1 name b1\n" \
		"vip add 10.0.0.2/udp\n"
#define P	"/xlb/c/config/"

static void load(struct __test_metadata *_metadata, const char *text,
		 struct xlb_state *s)
{
	struct xlb_err e = { "" };

	ASSERT_EQ(0, xlb_config_parse(text, strlen(text), "t", s, &e))
		TH_LOG("%s", e.msg);
}

static int apply(struct xlb_state *s, const char *key, const char *value,
		 struct xlb_err *e)
{
	return xlb_cluster_apply_key(s, "c", key, value,
				     value ? strlen(value) : 0, 42, e);
}

TEST(names_and_keys)
{
	struct xlb_err e = { "" };
	struct xlb_vip_key k;
	char buf[XLB_CLUSTER_KEY_MAX];

	EXPECT_EQ(0, xlb_cluster_name_check("edge-1.a_b", &e));
	EXPECT_EQ(-EINVAL, xlb_cluster_name_check("", &e));
	EXPECT_EQ(-EINVAL, xlb_cluster_name_check("a/b", &e));
	EXPECT_NE(NULL, strstr(e.msg, "A-Z a-z 0-9"));
	EXPECT_EQ(-EINVAL, xlb_cluster_name_check(
		"0123456789012345678901234567890123456789012345678901234567890123", &e));
	xlb_cluster_config_prefix("c", buf, sizeof(buf));
	EXPECT_STREQ(P, buf);
	xlb_cluster_hosts_prefix("c", buf, sizeof(buf));
	EXPECT_STREQ("/xlb/c/hosts/", buf);
	xlb_cluster_global_key("c", buf, sizeof(buf));
	EXPECT_STREQ(P "global", buf);
	ASSERT_EQ(0, xlb_vip_parse("[2001:db8::1]:443/tcp", &k, &e));
	xlb_cluster_vip_key("c", &k, buf, sizeof(buf));
	EXPECT_STREQ(P "vips/[2001:db8::1]:443/tcp", buf);
}

TEST(encode_then_read_back)
{
	struct xlb_state s, shared, back;
	struct xlb_cluster_kv *kvs;
	struct xlb_err e = { "" };
	size_t n, i;

	load(_metadata, CONF, &s);
	ASSERT_EQ(0, xlb_cluster_encode(&s, "c", &kvs, &n));
	ASSERT_EQ(4, n);
	EXPECT_STREQ(P "global", kvs[0].key);
	EXPECT_STREQ("format 1\nset key " KEY_HEX "\nset mtu 1400\n",
		     kvs[0].value);
	EXPECT_STREQ(P "vips/10.0.0.1:80/tcp", kvs[1].key);
	EXPECT_STREQ("format 1\n"
		     "vip add 10.0.0.1:80/tcp encap gue health tcp\n"
		     "backend add 10.0.0.1:80/tcp 10.1.0.1 weight 2\n"
		     "backend add 10.0.0.1:80/tcp 10.1.0.2 state drain\n",
		     kvs[1].value);
	EXPECT_STREQ(P "vips/10.0.0.2/udp", kvs[2].key);
	EXPECT_STREQ(P "vips/[2001:db8::1]:443/tcp", kvs[3].key);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(strlen(kvs[i].value), kvs[i].len);
	}

	/* read back in any order: the shared part of the state, exactly */
	xlb_state_init(&back);
	for (i = n; i-- > 0;) {
		ASSERT_EQ(0, xlb_cluster_apply_key(&back, "c", kvs[i].key,
						   kvs[i].value, kvs[i].len,
						   7, &e)) TH_LOG("%s", e.msg);
	}
	ASSERT_EQ(0, xlb_state_validate(&back, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_cluster_shared_of(&s, &shared));
	EXPECT_TRUE(xlb_state_equal(&shared, &back));
	EXPECT_EQ(0, shared.n_links);
	EXPECT_EQ(0, shared.global.src4);

	/* one key alone */
	do {
		char *v;

		ASSERT_EQ(0, xlb_cluster_encode_key(&s, "c", kvs[1].key, &v,
						    &e));
		EXPECT_STREQ(kvs[1].value, v);
		free(v);
		ASSERT_EQ(0, xlb_cluster_encode_key(&s, "c",
						    P "vips/10.9.9.9:1/tcp",
						    &v, &e));
		EXPECT_EQ(NULL, v);
		EXPECT_EQ(-ENOENT, xlb_cluster_encode_key(&s, "c", P "other",
							  &v, &e));
	} while (0);
	xlb_cluster_kvs_free(kvs, n);
	xlb_state_free(&s);
	xlb_state_free(&shared);
	xlb_state_free(&back);
}

TEST(a_state_without_settings_has_no_global_key)
{
	struct xlb_cluster_kv *kvs;
	struct xlb_state s;
	size_t n;

	xlb_state_init(&s);
	ASSERT_EQ(0, xlb_cluster_encode(&s, "c", &kvs, &n));
	EXPECT_EQ(0, n);
	xlb_cluster_kvs_free(kvs, n);
}

TEST(deleted_keys_remove_their_part)
{
	struct xlb_err e = { "" };
	struct xlb_state s;

	load(_metadata, CONF, &s);
	ASSERT_EQ(0, apply(&s, P "vips/10.0.0.1:80/tcp", NULL, &e));
	EXPECT_EQ(2, s.n_vips);
	EXPECT_EQ(1, s.n_backends);
	/* deleting what is not there is no error */
	ASSERT_EQ(0, apply(&s, P "vips/10.0.0.1:80/tcp", NULL, &e));
	ASSERT_EQ(0, apply(&s, P "global", NULL, &e));
	EXPECT_FALSE(s.global.key_set);
	EXPECT_EQ(XLB_MTU_DEFAULT, s.global.mtu);
	/* the host's own source is not the global key's to clear */
	EXPECT_NE(0, s.global.src4);
	/* a value replaces the VIP whole: backends not named go */
	ASSERT_EQ(0, apply(&s, P "vips/10.0.0.2/udp",
			   "format 1\nvip add 10.0.0.2/udp hash src\n"
			   "backend add 10.0.0.2/udp 10.1.0.9\n", &e));
	ASSERT_EQ(0, apply(&s, P "vips/10.0.0.2/udp",
			   "format 1\n# comments and blank lines\n\n"
			   "vip add 10.0.0.2/udp\nbackend add 10.0.0.2/udp 10.1.0.8\n",
			   &e));
	EXPECT_EQ(2, s.n_backends);
	EXPECT_EQ(XLB_HASH_5TUPLE, xlb_state_find_vip(&s, &s.vips[0].key)->hash_mode);
	xlb_state_free(&s);
}

static const struct {
	const char *key;
	const char *value;
	int ret;
	const char *says;
} bad[] = {
	{ P "global", "set key " KEY_HEX "\n", -EINVAL,
	  "line 1 column 1: the value must start with the line \"format 1\"" },
	{ P "global", "", -EINVAL, "line 1 column 1: the value must start" },
	{ P "global", "format 2\nset mtu 1400\n", -EPROTONOSUPPORT,
	  "line 1 column 8: format 2 is newer than this xlbd reads (format 1)" },
	{ P "vips/10.0.0.1:80/tcp", "format 17 \nvip add 10.0.0.1:80/tcp shiny\n",
	  -EPROTONOSUPPORT, "line 1 column 8: format 17 is newer" },
	{ P "global", "format one\n", -EINVAL,
	  "line 1 column 8: format \"one\" is not a format number" },
	{ P "global", "format 1 x\n", -EINVAL,
	  "line 1 column 10: nothing may follow" },
	{ P "global", "format 1\nset mtu 99999\n", -ERANGE,
	  "line 2 column 9: mtu 99999 is out of range" },
	{ P "global", "format 1\nset mtu 1400\nset src4 192.0.2.1\n", -EINVAL,
	  "line 3 column 5: set src4 is a per-host setting" },
	{ P "global", "format 1\nset announce table 100\n", -EINVAL,
	  "line 2 column 5: set announce is a per-host setting" },
	{ P "global", "format 1\nvip add 10.0.0.1:80/tcp\n", -EINVAL,
	  "line 2 column 1: config/global holds only \"set\" lines" },
	{ P "global", "format 1\nset mtu 1400\0\n", -EINVAL,
	  "line 2 column 1: NUL byte" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nvip add 10.0.0.1:80/tcp algo foo\n",
	  -EINVAL, "line 2 column 30: unknown algo \"foo\"" },
	{ P "vips/10.0.0.1:80/tcp",
	  "format 1\nvip add 10.0.0.1:80/tcp\nbackend add 10.0.0.1:80/tcp 10.1.0.1 weight x\n",
	  -EINVAL, "line 3 column 45: weight \"x\" is not a number" },
	{ P "vips/10.0.0.1:80/tcp",
	  "format 1\nbackend add 10.0.0.1:80/tcp 10.1.0.1\nvip add 10.0.0.1:80/tcp\n",
	  -EINVAL, "line 2 column 1: the \"vip add 10.0.0.1:80/tcp\" line must come before" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nvip add 10.0.0.3:80/tcp\n",
	  -EINVAL, "line 2 column 9: this is config/vips/10.0.0.1:80/tcp" },
	{ P "vips/10.0.0.1:80/tcp",
	  "format 1\nvip add 10.0.0.1:80/tcp\nbackend add 10.0.0.3:80/tcp 10.1.0.1\n",
	  -EINVAL, "line 3 column 13: this is config/vips/10.0.0.1:80/tcp" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nvip add 10.0.0.1:80/tcp encap gue src 192.0.2.7\n",
	  -EINVAL, "line 2 column 35: a VIP's src is an address of one host" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nlink attach eth0\n",
	  -EINVAL, "line 2 column 1: link is a per-host setting" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nvip set 10.0.0.1:80/tcp algo ring\n",
	  -EINVAL, "line 2 column 5: a VIP's key holds the whole VIP" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\nset mtu 1400\n",
	  -EINVAL, "line 2 column 1: \"set\" lines go in config/global" },
	{ P "vips/10.0.0.1:80/tcp", "format 1\n# nothing\n",
	  -EINVAL, "line 2 column 1: the value has no \"vip add 10.0.0.1:80/tcp\" line" },
	{ P "vips/10.0.0.1:80/tcp",
	  "format 1\nvip add 10.0.0.1:80/tcp\nbackend add 10.0.0.1:80/tcp 10.1.0.1\n"
	  "backend add 10.0.0.1:80/tcp 10.1.0.1\n",
	  -EEXIST, "line 4 column 29: backend 10.1.0.1 of VIP 10.0.0.1:80/tcp already exists" },
	{ P "vips/10.0.0.01:80/tcp", "format 1\n", -ENOENT,
	  "vips/10.0.0.01:80/tcp: VIP" },
	{ P "vips/10.0.0.1:080/tcp", "format 1\n", -ENOENT,
	  "the VIP is written 10.0.0.1:80/tcp in a key" },
	{ P "vip/10.0.0.1:80/tcp", "format 1\n", -ENOENT,
	  "is not one of the cluster's" },
	{ "/xlb/d/config/global", "format 1\n", -ENOENT, "is not under /xlb/c/config/" },
};

TEST(bad_values_refused_with_their_place)
{
	struct xlb_state s, before;
	size_t i;

	load(_metadata, CONF, &s);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xlb_err e = { "" };
		size_t len = strlen(bad[i].value);
		char want[400];

		/* the NUL case: its text goes on past the NUL */
		if (strstr(bad[i].says, "NUL"))
			len = strlen(bad[i].value) + 2;
		ASSERT_EQ(0, xlb_state_copy(&before, &s));
		EXPECT_EQ(bad[i].ret, xlb_cluster_apply_key(&before, "c", bad[i].key,
							    bad[i].value, len,
							    42, &e)) {
			TH_LOG("value %zu: %s", i, e.msg);
		}
		snprintf(want, sizeof(want), "(revision 42)");
		EXPECT_NE(NULL, strstr(e.msg, want)) TH_LOG("value %zu: %s", i, e.msg);
		EXPECT_NE(NULL, strstr(e.msg, bad[i].says)) {
			TH_LOG("value %zu: \"%s\" does not say \"%s\"", i,
			       e.msg, bad[i].says);
		}
		if (bad[i].ret != -ENOENT)
			EXPECT_NE(NULL, strstr(e.msg, bad[i].key)) {
				TH_LOG("value %zu: no key in \"%s\"", i, e.msg);
			}
		xlb_state_free(&before);
	}
	xlb_state_free(&s);
}

static int scope_of(const char *line, struct xlb_err *e)
{
	struct xlb_op op;
	int empty;

	if (xlb_op_parse_line(line, &op, &empty, e))
		return -100;
	return xlb_cluster_op_scope(&op, e);
}

TEST(per_host_and_cluster_commands)
{
	struct xlb_err e = { "" };

	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("link attach eth0", &e));
	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("link detach eth0", &e));
	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("set src4 192.0.2.1", &e));
	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("set src6 2001:db8::7", &e));
	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("set announce table 100", &e));
	EXPECT_EQ(XLB_SCOPE_HOST, scope_of("set announce off", &e));
	EXPECT_EQ(XLB_SCOPE_CLUSTER, scope_of("set key " KEY_HEX, &e));
	EXPECT_EQ(XLB_SCOPE_CLUSTER, scope_of("set mtu 1400", &e));
	EXPECT_EQ(XLB_SCOPE_CLUSTER, scope_of("vip add 10.0.0.1:80/tcp", &e));
	EXPECT_EQ(XLB_SCOPE_CLUSTER, scope_of("vip del 10.0.0.1:80/tcp", &e));
	EXPECT_EQ(XLB_SCOPE_CLUSTER,
		  scope_of("backend set 10.0.0.1:80/tcp 10.1.0.1 weight 3", &e));
	EXPECT_EQ(-EINVAL, scope_of("vip set 10.0.0.1:80/tcp src 192.0.2.9", &e));
	EXPECT_NE(NULL, strstr(e.msg, "set src4"));
}

TEST(merge_keeps_the_hosts_settings)
{
	struct xlb_state a, b, shared, m;

	load(_metadata, CONF, &a);
	load(_metadata, "set src4 192.0.2.99\nlink attach eth1 generic\n"
	     "link attach eth2\nset announce table 100\n", &b);
	a.global.announce_table = 7;
	ASSERT_EQ(0, xlb_cluster_shared_of(&a, &shared));
	EXPECT_EQ(0, shared.global.announce_table);
	ASSERT_EQ(0, xlb_cluster_merge(&shared, &b, &m));
	EXPECT_EQ(2, m.n_links);
	EXPECT_STREQ("eth1", m.links[0].ifname);
	EXPECT_EQ(b.global.src4, m.global.src4);
	EXPECT_EQ(100, m.global.announce_table);
	EXPECT_EQ(1400, m.global.mtu);
	EXPECT_EQ(a.n_vips, m.n_vips);
	EXPECT_EQ(a.n_backends, m.n_backends);
	xlb_state_free(&a);
	xlb_state_free(&b);
	xlb_state_free(&shared);
	xlb_state_free(&m);
}

TEST_HARNESS_MAIN
