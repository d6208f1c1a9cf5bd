// SPDX-License-Identifier: GPL-2.0
/*
 * The command grammar and the desired state: every form parses to its
 * values, defaults, bad input is refused with its reason and location and
 * changes nothing, save round-trips, transactions are all or nothing.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "config.h"

#define KEY_HEX		"000102030405060708090a0b0c0d0e0f"
#define KEY_LINE	"set key " KEY_HEX "\n"
/* Three lines; a bad line appended to it is line 4. */
#define BASE		KEY_LINE "vip add 10.0.0.1:80/tcp\n" \
			"backend add 10.0.0.1:80/tcp 10.1.0.1\n"

static int parse(const char *text, struct xlb_state *s, struct xlb_err *e)
{
	return xlb_config_parse(text, strlen(text), "t.conf", s, e);
}

static struct xlb_vip_key vip4(const char *addr, uint16_t port, uint8_t proto)
{
	struct xlb_vip_key k;

	memset(&k, 0, sizeof(k));
	inet_pton(AF_INET, addr, k.addr);
	k.family = XLB_FAMILY_INET;
	k.port = htons(port);
	k.proto = proto;
	return k;
}

static struct xlb_vip_key vip6(const char *addr, uint16_t port, uint8_t proto)
{
	struct xlb_vip_key k;

	memset(&k, 0, sizeof(k));
	inet_pton(AF_INET6, addr, k.addr);
	k.family = XLB_FAMILY_INET6;
	k.port = htons(port);
	k.proto = proto;
	return k;
}

static const struct xlb_backend_conf *
backend(const struct xlb_state *s, const struct xlb_vip_key *vip,
	const char *addr)
{
	__be32 a[4] = { 0 };
	uint8_t family = strchr(addr, ':') ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;

	inet_pton(family == XLB_FAMILY_INET6 ? AF_INET6 : AF_INET, addr, a);
	return xlb_state_find_backend(s, vip, family, a);
}

static char *save(struct xlb_state *s)
{
	char *t = NULL;

	if (xlb_config_save(s, &t))
		return NULL;
	return t;
}

/* --- forms and values ----------------------------------------------------- */

TEST(defaults_of_state_vip_and_backend)
{
	struct xlb_vip_key k = vip4("10.0.0.1", 80, IPPROTO_TCP);
	const struct xlb_backend_conf *b;
	const struct xlb_vip_conf *v;
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(BASE, &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(XLB_GUE_PORT_DEFAULT, s.global.gue_port);
	EXPECT_EQ(XLB_MTU_DEFAULT, s.global.mtu);
	EXPECT_EQ(XLB_TTL_DEFAULT, s.global.ttl);
	EXPECT_EQ(XLB_UDP_IDLE_DEFAULT, s.global.udp_idle_s);
	EXPECT_EQ(0, s.global.src4);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_EQ(XLB_ALGO_MAGLEV, v->algo);
	EXPECT_EQ(XLB_TABLE_SIZE_DEFAULT, v->table_size);
	EXPECT_EQ(XLB_RING_VNODES_DEFAULT, v->vnodes);
	EXPECT_EQ(XLB_HASH_5TUPLE, v->hash_mode);
	EXPECT_EQ(XLB_ENCAP_IPIP, v->encap);
	EXPECT_FALSE(v->stateless);
	EXPECT_EQ(50, v->panic_pct);
	EXPECT_EQ(0, v->src4);
	EXPECT_EQ(XLB_HEALTH_NONE, v->health.kind);
	EXPECT_EQ(0, v->health.port);
	EXPECT_EQ(2000, v->health.interval_ms);
	EXPECT_EQ(1000, v->health.timeout_ms);
	EXPECT_EQ(2, v->health.rise);
	EXPECT_EQ(3, v->health.fall);
	EXPECT_STREQ("/", v->health.http_path);
	EXPECT_EQ(200, v->health.http_status);
	b = backend(&s, &k, "10.1.0.1");
	ASSERT_NE(NULL, b);
	EXPECT_STREQ("10.1.0.1", b->name);
	EXPECT_EQ(1, b->weight);
	EXPECT_EQ(XLB_ADMIN_ACTIVE, b->admin);
	EXPECT_EQ(XLB_HEALTH_INHERIT, b->health.kind);
	EXPECT_EQ(2000, b->health.interval_ms);
	xlb_state_free(&s);
}

TEST(set_announce_table_parses_saves_and_turns_off)
{
	struct xlb_err e = { "" };
	struct xlb_state s;
	char *t = NULL;

	ASSERT_EQ(0, parse("set announce table 100\n", &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(100, s.global.announce_table);
	ASSERT_EQ(0, xlb_config_save(&s, &t));
	EXPECT_STREQ("set announce table 100\n", t);
	free(t);
	xlb_state_free(&s);
	ASSERT_EQ(0, parse("set announce table 4294967295\nset announce table 1\n",
			   &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(1, s.global.announce_table);
	xlb_state_free(&s);
	ASSERT_EQ(0, parse("set announce table 256\nset announce off\n", &s, &e));
	EXPECT_EQ(0, s.global.announce_table);
	ASSERT_EQ(0, xlb_config_save(&s, &t));
	EXPECT_EQ(NULL, strstr(t, "announce"));
	free(t);
	xlb_state_free(&s);
}

TEST(set_lines_set_globals)
{
	static const char text[] =
		"set key 0011223344556677" "8899AABBCCDDEEFF\n"
		"set src4 192.0.2.1\nset src6 2001:db8::1\n"
		"set gue-port 7000\nset mtu 9000\nset ttl 32\nset udp-idle 60\n";
	struct xlb_err e = { "" };
	struct xlb_state s;
	__be32 a6[4];

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_TRUE(s.global.key_set);
	EXPECT_EQ(0x0011223344556677ULL, s.global.key.k0);
	EXPECT_EQ(0x8899aabbccddeeffULL, s.global.key.k1);
	EXPECT_EQ(htonl(0xc0000201), s.global.src4);
	inet_pton(AF_INET6, "2001:db8::1", a6);
	EXPECT_EQ(0, memcmp(a6, s.global.src6, sizeof(a6)));
	EXPECT_EQ(7000, s.global.gue_port);
	EXPECT_EQ(9000, s.global.mtu);
	EXPECT_EQ(32, s.global.ttl);
	EXPECT_EQ(60, s.global.udp_idle_s);
	xlb_state_free(&s);
}

TEST(links_attach_with_mode_and_detach)
{
	static const char text[] = "link attach eth1 generic\n"
				   "link attach eth0\nlink attach eth2 native\n"
				   "link detach eth2\n";
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(2, s.n_links);
	EXPECT_STREQ("eth0", s.links[0].ifname);
	EXPECT_EQ(XLB_ATTACH_NATIVE, s.links[0].mode);
	EXPECT_STREQ("eth1", s.links[1].ifname);
	EXPECT_EQ(XLB_ATTACH_GENERIC, s.links[1].mode);
	EXPECT_EQ(NULL, xlb_state_find_link(&s, "eth2"));
	EXPECT_NE(NULL, xlb_state_find_link(&s, "eth1"));
	xlb_state_free(&s);
}

TEST(vip_add_with_every_option)
{
	static const char text[] = KEY_LINE
		"vip add 10.0.0.1:443/udp algo ring table-size 251 vnodes 7 "
		"hash 3tuple encap gue stateless panic 0 src 192.0.2.9 "
		"src 2001:db8::9 health http health-port 8080 interval 500 "
		"timeout 499 rise 1 fall 100 http-path /healthz http-status 204\n";
	struct xlb_vip_key k = vip4("10.0.0.1", 443, IPPROTO_UDP);
	const struct xlb_vip_conf *v;
	struct xlb_err e = { "" };
	struct xlb_state s;
	__be32 a6[4];

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_EQ(XLB_ALGO_RING, v->algo);
	EXPECT_EQ(251, v->table_size);
	EXPECT_EQ(7, v->vnodes);
	EXPECT_EQ(XLB_HASH_3TUPLE, v->hash_mode);
	EXPECT_EQ(XLB_ENCAP_GUE, v->encap);
	EXPECT_TRUE(v->stateless);
	EXPECT_EQ(0, v->panic_pct);
	EXPECT_EQ(htonl(0xc0000209), v->src4);
	inet_pton(AF_INET6, "2001:db8::9", a6);
	EXPECT_EQ(0, memcmp(a6, v->src6, sizeof(a6)));
	EXPECT_EQ(XLB_HEALTH_HTTP, v->health.kind);
	EXPECT_EQ(8080, v->health.port);
	EXPECT_EQ(500, v->health.interval_ms);
	EXPECT_EQ(499, v->health.timeout_ms);
	EXPECT_EQ(1, v->health.rise);
	EXPECT_EQ(100, v->health.fall);
	EXPECT_STREQ("/healthz", v->health.http_path);
	EXPECT_EQ(204, v->health.http_status);
	xlb_state_free(&s);
}

TEST(other_keywords_parse)
{
	static const char text[] = KEY_LINE
		"vip add 10.0.0.1:1/tcp algo maglev hash src encap ipip health udp\n"
		"vip add 10.0.0.2:1/tcp hash 5tuple stateful health none\n"
		"vip add 10.0.0.3:1/tcp health tcp\n"
		"backend add 10.0.0.1:1/tcp 10.1.0.1 state drain health none\n"
		"backend add 10.0.0.1:1/tcp 10.1.0.2 state down health tcp\n"
		"backend add 10.0.0.1:1/tcp 10.1.0.3 state active health http\n"
		"backend add 10.0.0.1:1/tcp 10.1.0.4 health udp\n"
		"backend add 10.0.0.1:1/tcp 10.1.0.5 health inherit weight 0\n";
	struct xlb_vip_key k1 = vip4("10.0.0.1", 1, IPPROTO_TCP);
	struct xlb_vip_key k2 = vip4("10.0.0.2", 1, IPPROTO_TCP);
	struct xlb_vip_key k3 = vip4("10.0.0.3", 1, IPPROTO_TCP);
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(XLB_HASH_SRC, xlb_state_find_vip(&s, &k1)->hash_mode);
	EXPECT_EQ(XLB_HEALTH_UDP, xlb_state_find_vip(&s, &k1)->health.kind);
	EXPECT_EQ(XLB_HASH_5TUPLE, xlb_state_find_vip(&s, &k2)->hash_mode);
	EXPECT_FALSE(xlb_state_find_vip(&s, &k2)->stateless);
	EXPECT_EQ(XLB_HEALTH_TCP, xlb_state_find_vip(&s, &k3)->health.kind);
	EXPECT_EQ(XLB_ADMIN_DRAIN, backend(&s, &k1, "10.1.0.1")->admin);
	EXPECT_EQ(XLB_HEALTH_NONE, backend(&s, &k1, "10.1.0.1")->health.kind);
	EXPECT_EQ(XLB_ADMIN_DOWN, backend(&s, &k1, "10.1.0.2")->admin);
	EXPECT_EQ(XLB_HEALTH_TCP, backend(&s, &k1, "10.1.0.2")->health.kind);
	EXPECT_EQ(XLB_HEALTH_HTTP, backend(&s, &k1, "10.1.0.3")->health.kind);
	EXPECT_EQ(XLB_HEALTH_UDP, backend(&s, &k1, "10.1.0.4")->health.kind);
	EXPECT_EQ(0, backend(&s, &k1, "10.1.0.5")->weight);
	xlb_state_free(&s);
}

TEST(backend_add_set_del)
{
	static const char text[] = KEY_LINE
		"vip add 10.0.0.1:80/tcp\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.1 name web-1 weight 3 state drain "
		"health tcp health-port 81 interval 300 timeout 100 rise 5 fall 6 "
		"http-path /x http-status 301\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.3\n"
		"backend set 10.0.0.1:80/tcp 10.1.0.2 weight 9 name a.first\n"
		"backend del 10.0.0.1:80/tcp 10.1.0.3\n";
	struct xlb_vip_key k = vip4("10.0.0.1", 80, IPPROTO_TCP);
	const struct xlb_backend_conf *list[4], *b;
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	b = backend(&s, &k, "10.1.0.1");
	ASSERT_NE(NULL, b);
	EXPECT_STREQ("web-1", b->name);
	EXPECT_EQ(3, b->weight);
	EXPECT_EQ(XLB_ADMIN_DRAIN, b->admin);
	EXPECT_EQ(XLB_HEALTH_TCP, b->health.kind);
	EXPECT_EQ(81, b->health.port);
	EXPECT_EQ(300, b->health.interval_ms);
	EXPECT_EQ(100, b->health.timeout_ms);
	EXPECT_EQ(5, b->health.rise);
	EXPECT_EQ(6, b->health.fall);
	EXPECT_STREQ("/x", b->health.http_path);
	EXPECT_EQ(301, b->health.http_status);
	EXPECT_EQ(NULL, backend(&s, &k, "10.1.0.3"));
	/* by name: the renamed one moved to the front */
	ASSERT_EQ(2, xlb_state_vip_backends(&s, &k, list, 4));
	EXPECT_STREQ("a.first", list[0]->name);
	EXPECT_EQ(9, list[0]->weight);
	EXPECT_STREQ("web-1", list[1]->name);
	ASSERT_EQ(2, xlb_state_vip_backends(&s, &k, list, 1));
	xlb_state_free(&s);
}

TEST(vip_set_changes_only_given_options)
{
	static const char text[] = KEY_LINE
		"vip add 10.0.0.1:80/tcp algo ring vnodes 10 panic 10\n"
		"vip set 10.0.0.1:80/tcp panic 20 health tcp\n";
	struct xlb_vip_key k = vip4("10.0.0.1", 80, IPPROTO_TCP);
	const struct xlb_vip_conf *v;
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_EQ(XLB_ALGO_RING, v->algo);
	EXPECT_EQ(10, v->vnodes);
	EXPECT_EQ(20, v->panic_pct);
	EXPECT_EQ(XLB_HEALTH_TCP, v->health.kind);
	xlb_state_free(&s);
}

TEST(vip_del_removes_its_backends)
{
	static const char text[] = BASE
		"vip add 10.0.0.2:80/tcp\n"
		"backend add 10.0.0.2:80/tcp 10.2.0.1\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n"
		"vip del 10.0.0.1:80/tcp\n";
	struct xlb_vip_key k2 = vip4("10.0.0.2", 80, IPPROTO_TCP);
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(1, s.n_vips);
	ASSERT_EQ(1, s.n_backends);
	EXPECT_EQ(0, xlb_vip_key_cmp(&k2, &s.backends[0].vip));
	EXPECT_EQ(0, xlb_state_validate(&s, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&s);
}

TEST(ipv6_vips_and_mixed_family_backends)
{
	static const char text[] = KEY_LINE
		"vip add [2001:db8::1]:443/tcp\n"
		"vip add [2001:0db8:0:0::2]/udp\n"
		"vip add 10.0.0.1/tcp health tcp health-port 80\n"
		"backend add [2001:db8::1]:443/tcp 2001:db8:1::10\n"
		"backend add [2001:db8::1]:443/tcp [2001:db8:1::11]\n"
		"backend add [2001:db8::1]:443/tcp 10.1.0.1\n"
		"backend add 10.0.0.1/tcp 2001:db8:1::12\n";
	struct xlb_vip_key a = vip6("2001:db8::1", 443, IPPROTO_TCP);
	struct xlb_vip_key b = vip6("2001:db8::2", 0, IPPROTO_UDP);
	struct xlb_vip_key c = vip4("10.0.0.1", 0, IPPROTO_TCP);
	const struct xlb_backend_conf *be;
	struct xlb_err e = { "" };
	struct xlb_state s;
	char buf[XLB_VIP_STR_MAX];

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	ASSERT_NE(NULL, xlb_state_find_vip(&s, &a));
	ASSERT_NE(NULL, xlb_state_find_vip(&s, &b));
	ASSERT_NE(NULL, xlb_state_find_vip(&s, &c));
	EXPECT_STREQ("[2001:db8::2]/udp", xlb_vip_str(&b, buf));
	EXPECT_STREQ("[2001:db8::1]:443/tcp", xlb_vip_str(&a, buf));
	be = backend(&s, &a, "2001:db8:1::11");
	ASSERT_NE(NULL, be);
	EXPECT_STREQ("2001:db8:1::11", be->name);
	EXPECT_EQ(XLB_FAMILY_INET6, be->family);
	be = backend(&s, &a, "10.1.0.1");
	ASSERT_NE(NULL, be);
	EXPECT_EQ(XLB_FAMILY_INET, be->family);
	EXPECT_NE(NULL, backend(&s, &c, "2001:db8:1::12"));
	xlb_state_free(&s);
}

TEST(comments_quotes_and_blank_lines)
{
	static const char text[] =
		"# xlb.conf\n"
		"\n"
		"   \t  \n"
		KEY_LINE
		"\"vip\" add \t \"10.0.0.1:80/tcp\"   # trailing comment\n"
		"  # indented comment\r\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.1 health http http-path \"/a#b\\\"c\\\\d\"\r\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2 health http http-path /p#q\n"
		"link attach \"e#1\"";	/* no final newline */
	struct xlb_vip_key k = vip4("10.0.0.1", 80, IPPROTO_TCP);
	struct xlb_err e = { "" };
	struct xlb_state s, s2;
	char *t1, *t2;

	ASSERT_EQ(0, parse(text, &s, &e)) TH_LOG("%s", e.msg);
	EXPECT_STREQ("/a#b\"c\\d", backend(&s, &k, "10.1.0.1")->health.http_path);
	EXPECT_STREQ("/p#q", backend(&s, &k, "10.1.0.2")->health.http_path);
	EXPECT_STREQ("e#1", s.links[0].ifname);
	t1 = save(&s);
	ASSERT_NE(NULL, t1);
	EXPECT_NE(NULL, strstr(t1, "http-path \"/a#b\\\"c\\\\d\"")) TH_LOG("%s", t1);
	EXPECT_NE(NULL, strstr(t1, "link attach \"e#1\"\n")) TH_LOG("%s", t1);
	ASSERT_EQ(0, parse(t1, &s2, &e)) TH_LOG("%s\n%s", e.msg, t1);
	t2 = save(&s2);
	EXPECT_STREQ(t1, t2);
	EXPECT_TRUE(xlb_state_equal(&s, &s2));
	free(t1);
	free(t2);
	xlb_state_free(&s);
	xlb_state_free(&s2);
}

TEST(parse_line_and_argv)
{
	char *argv[] = { "backend", "add", "[2001:db8::1]:443/tcp", "10.1.0.1",
			 "weight", "3", "name", "web1" };
	char *bad[] = { "backend", "add", "10.0.0.1:80/tcp", "10.1.0.1",
			"weight", "70000" };
	struct xlb_err e = { "" };
	struct xlb_op op;
	int empty = -1;

	ASSERT_EQ(0, xlb_op_parse_argv(8, argv, &op, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(XLB_OBJ_BACKEND, op.object);
	EXPECT_EQ(XLB_VERB_ADD, op.verb);
	EXPECT_EQ(XLB_FAMILY_INET6, op.backend.vip.family);
	EXPECT_EQ(htons(443), op.backend.vip.port);
	EXPECT_EQ(XLB_FAMILY_INET, op.backend.family);
	EXPECT_EQ(XLB_OPT(XLB_OPT_WEIGHT) | XLB_OPT(XLB_OPT_NAME), op.given);
	EXPECT_EQ(3, op.backend.weight);
	EXPECT_STREQ("web1", op.backend.name);
	EXPECT_EQ(4, op.tok[XLB_OPT_WEIGHT]);

	EXPECT_EQ(-ERANGE, xlb_op_parse_argv(6, bad, &op, &e));
	EXPECT_STREQ("argument 6: weight 70000 is out of range; use 0..65535",
		     e.msg);
	EXPECT_EQ(-EINVAL, xlb_op_parse_argv(0, bad, &op, &e));
	EXPECT_NE(NULL, strstr(e.msg, "no command"));

	ASSERT_EQ(0, xlb_op_parse_line("  # nothing\n", &op, &empty, &e));
	EXPECT_EQ(1, empty);
	ASSERT_EQ(0, xlb_op_parse_line("", &op, &empty, &e));
	EXPECT_EQ(1, empty);
	ASSERT_EQ(0, xlb_op_parse_line("vip del 10.0.0.1/udp\n", &op, &empty, &e));
	EXPECT_EQ(0, empty);
	EXPECT_EQ(XLB_OBJ_VIP, op.object);
	EXPECT_EQ(XLB_VERB_DEL, op.verb);
	EXPECT_EQ(IPPROTO_UDP, op.vip.key.proto);
	EXPECT_EQ(0, op.vip.key.port);
	EXPECT_NE(0, xlb_op_parse_line("vip add 10.0.0.1:80/tcp panic 101", &op,
				       &empty, &e));
	EXPECT_STREQ("column 31: panic 101 is out of range; use 0..100", e.msg);
	EXPECT_NE(0, xlb_op_parse_line("vip add 10.0.0.1:80/tcp\nvip", &op,
				       &empty, &e));
	EXPECT_NE(NULL, strstr(e.msg, "column 24: control character 0x0a"))
		TH_LOG("%s", e.msg);
}

/* --- bad input ------------------------------------------------------------ */

struct bad_case {
	const char *line;
	const char *msg;
};

static const struct bad_case bad_lines[] = {
	/* objects, verbs, options */
	{ "frob add x", "unknown object \"frob\"; use set, link, vip or backend" },
	{ "vip make 10.0.0.2:80/tcp", "unknown verb \"make\" for vip; use add, set or del" },
	{ "backend up 10.0.0.1:80/tcp 10.1.0.2", "unknown verb \"up\" for backend" },
	{ "link up eth0", "unknown verb \"up\" for link; use attach or detach" },
	{ "vip", "vip needs a verb: add, set or del" },
	{ "set", "set needs a setting: key, src4, src6, gue-port, mtu, ttl, udp-idle, new-flow-rate" },
	{ "set colour red", "unknown setting \"colour\"" },
	{ "set announce", "set announce needs a value: table 1..4294967295" },
	{ "set announce table", "set announce table needs a routing table number" },
	{ "set announce table 0", "announce table 0 is no routing table" },
	{ "set announce table 253", "announce table 253 is the kernel's default table" },
	{ "set announce table 254", "announce table 254 is the kernel's main table" },
	{ "set announce table 255", "announce table 255 is the kernel's local table" },
	{ "set announce table 4294967296", "announce table 4294967296 is out of range; use 1..4294967295" },
	{ "set announce table 0x10", "announce table \"0x10\" is not a number" },
	{ "set announce table -3", "announce table \"-3\" is not a number" },
	{ "set announce on", "unknown announce value \"on\"; use \"table N\" or \"off\"" },
	{ "set announce table 7 8", "unexpected \"8\"" },
	{ "set announce off now", "unexpected \"now\"" },
	{ "vip add 10.0.0.2:80/tcp colour red", "unknown option \"colour\" for vip add; use algo, table-size" },
	{ "vip add 10.0.0.2:80/tcp weight 3", "unknown option \"weight\" for vip add" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 algo ring", "unknown option \"algo\" for backend add; use name, weight, state, quic-id, health" },
	{ "vip set 10.0.0.1:80/tcp panic 1 panic 2", "option panic is given twice" },
	{ "vip set 10.0.0.1:80/tcp src 192.0.2.1 src 192.0.2.2", "src is given twice for IPv4" },
	{ "vip set 10.0.0.1:80/tcp stateless stateful", "stateless or stateful is given twice" },
	{ "vip set 10.0.0.1:80/tcp health-consensus maybe", "unknown health-consensus \"maybe\"; use on or off" },
	{ "vip set 10.0.0.1:80/tcp health-consensus", "health-consensus needs a value: on or off" },
	{ "vip del 10.0.0.1:80/tcp now", "unexpected \"now\"; the command is: vip del VIP" },
	{ "backend del 10.0.0.1:80/tcp 10.1.0.1 now", "unexpected \"now\"; the command is: backend del VIP ADDR" },
	{ "set mtu 1500 now", "unexpected \"now\"; the command is: set mtu VALUE" },
	{ "link attach eth0 generic now", "unexpected \"now\"" },
	{ "link attach eth0 turbo", "unknown attach mode \"turbo\"; use native or generic" },
	/* missing values */
	{ "vip add", "vip add needs a VIP such as 10.0.0.1:80/tcp" },
	{ "backend add 10.0.0.1:80/tcp", "backend add needs a backend address" },
	{ "link attach", "link attach needs an interface name" },
	{ "set mtu", "set mtu needs a value: 576..9216" },
	{ "set key", "set key needs a value: 32 hex digits" },
	{ "vip add 10.0.0.2:80/tcp panic", "panic needs a value: 0..100" },
	{ "vip add 10.0.0.2:80/tcp algo", "algo needs a value: maglev or ring" },
	{ "vip add 10.0.0.2:80/tcp table-size", "table-size needs a value: 251, 509," },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name", "name needs a value: 1..63 bytes" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 health", "health needs a value: tcp, http, udp, none or inherit" },
	/* keywords */
	{ "vip add 10.0.0.2:80/tcp algo fifo", "unknown algo \"fifo\"; use maglev or ring" },
	{ "vip add 10.0.0.2:80/tcp hash 4tuple", "unknown hash \"4tuple\"; use 5tuple, 3tuple or src" },
	{ "vip add 10.0.0.2:80/tcp encap gre", "unknown encap \"gre\"; use ipip or gue" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 state sleeping", "unknown state \"sleeping\"; use active, drain or down" },
	{ "vip add 10.0.0.2:80/tcp health icmp", "unknown health \"icmp\"" },
	{ "vip add 10.0.0.2:80/tcp health inherit", "health inherit is for backends" },
	/* numbers that are not */
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight abc", "weight \"abc\" is not a number; use 0..65535" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight -1", "weight \"-1\" is not a number" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight 1e3", "weight \"1e3\" is not a number" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight 99999999999999999999", "weight 99999999999999999999 is out of range" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight \"\"", "weight \"\" is not a number" },
	{ "set new-flow-rate -1", "new-flow-rate \"-1\" is not a number" },
	{ "set new-flow-rate fast", "new-flow-rate \"fast\" is not a number; use 0..100000000" },
	{ "set new-flow-rate 2.5", "new-flow-rate \"2.5\" is not a number" },
	{ "set new-flow-rate 99999999999999999999", "new-flow-rate 99999999999999999999 is out of range" },
	{ "set new-flow-rate 100000001", "new-flow-rate 100000001 is out of range; use 0..100000000" },
	{ "set new-flow-rate", "set new-flow-rate needs a value: 0..100000000" },
	/* addresses */
	{ "backend add 10.0.0.1:80/tcp 10.1.0.300", "backend address \"10.1.0.300\" is not an IPv4 or IPv6 address" },
	{ "backend add 10.0.0.1:80/tcp 2001:db8::zz", "backend address \"2001:db8::zz\" is not an IPv4 or IPv6 address" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2/24", "is not an IPv4 or IPv6 address" },
	{ "backend add 10.0.0.1:80/tcp [10.1.0.2]", "is not an IPv4 or IPv6 address" },
	{ "backend add 10.0.0.1:80/tcp 127.0.0.1", "backend address 127.0.0.1 is a loopback address; use a unicast address" },
	{ "backend add 10.0.0.1:80/tcp 0.0.0.0", "is the unspecified address" },
	{ "backend add 10.0.0.1:80/tcp ff02::1", "is a multicast address" },
	{ "backend add 10.0.0.1:80/tcp 255.255.255.255", "is a reserved or broadcast address" },
	{ "set src4 2001:db8::1", "src4 needs an IPv4 address" },
	{ "set src6 192.0.2.1", "src6 needs an IPv6 address" },
	{ "set src4 192.0.2", "src4 \"192.0.2\" is not an IPv4 or IPv6 address" },
	{ "vip set 10.0.0.1:80/tcp src nowhere", "src \"nowhere\" is not an IPv4 or IPv6 address" },
	{ "vip set 10.0.0.1:80/tcp src 224.0.0.1", "src 224.0.0.1 is a multicast address" },
	/* VIPs */
	{ "vip add 10.0.0.2:80", "VIP \"10.0.0.2:80\" is not ADDR:PORT/PROTO or ADDR/PROTO" },
	{ "vip add [2001:db8::1:80/tcp", "is not ADDR:PORT/PROTO or ADDR/PROTO" },
	{ "vip add [2001:db8::1]80/tcp", "is not ADDR:PORT/PROTO or ADDR/PROTO" },
	{ "vip add 2001:db8::1/tcp", "an IPv6 address goes in brackets" },
	{ "vip add 10.0.0.2x:80/tcp", "\"10.0.0.2x\" is not an IPv4 address" },
	{ "vip add :80/tcp", "\"\" is not an IPv4 address" },
	{ "vip add [10.0.0.2]:80/tcp", "\"10.0.0.2\" is not an IPv6 address" },
	{ "vip add 224.0.0.1:80/tcp", "the address is a multicast address" },
	{ "vip add 10.0.0.2:80/sctp", "unknown protocol \"sctp\"; use tcp or udp" },
	{ "vip add 10.0.0.2:80/TCP", "unknown protocol \"TCP\"" },
	{ "vip add 10.0.0.2:65536/tcp", "port \"65536\" is not a number 0..65535" },
	{ "vip add 10.0.0.2:/tcp", "port \"\" is not a number 0..65535" },
	{ "vip add 10.0.0.2:http/tcp", "port \"http\" is not a number" },
	{ "vip add [2001:db8::1]:-1/tcp", "port \"-1\" is not a number" },
	/* table sizes, names, paths, interfaces, key */
	{ "vip add 10.0.0.2:80/tcp table-size 1000", "table-size 1000 is not allowed; use one of: 251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65537, 131071, 262139, 524287, 1048573" },
	{ "vip add 10.0.0.2:80/tcp table-size big", "table-size big is not allowed" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name web/1", "name \"web/1\" has a character other than A-Z a-z 0-9 . _ : -" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name \"web 1\"", "name \"web 1\" has a character other than" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name "
	  "a123456789b123456789c123456789d123456789e123456789f123456789xyzw",
	  "is 64 bytes; the limit is 63" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name \"\"", "name is empty" },
	{ "vip set 10.0.0.1:80/tcp health http http-path health", "http-path \"health\" must start with '/'" },
	{ "vip set 10.0.0.1:80/tcp http-path \"/a b\"", "http-path \"/a b\" must start with '/'" },
	{ "link attach abcdefghijklmnop", "interface name \"abcdefghijklmnop\" must be 1..15 bytes" },
	{ "link attach eth/0", "interface name \"eth/0\" may not have blanks, '/', ':'" },
	{ "link attach ..", "interface name \"..\" is not allowed" },
	{ "set key 0011", "key must be 32 hex digits (the 128-bit cluster key), not 4 characters" },
	{ "set key " KEY_HEX "00", "not 34 characters" },
	{ "set key 000102030405060708090a0b0c0d0e0g", "not a hex digit at position 32" },
	/* lexing */
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name \"web", "the quote is not closed on this line" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name \"a\\n\"", "unknown escape in a quoted token" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name we\"b\"", "a quote in the middle of a token" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name \"web\"x", "a closing quote must end the token" },
	{ "vip add 10.0.0.2:80/tcp\x01", "control character 0x01" },
	{ "vip add 10.0.0.2:80/tcp\x7f", "control character 0x7f" },
	/* the state: existence, names, health cross-checks */
	{ "vip add 10.0.0.1:80/tcp", "VIP 10.0.0.1:80/tcp already exists; change it with \"vip set\"" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.1", "backend 10.1.0.1 of VIP 10.0.0.1:80/tcp already exists" },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 name 10.1.0.1", "backend name \"10.1.0.1\" is already used by 10.1.0.1 in VIP 10.0.0.1:80/tcp" },
	{ "vip del 10.0.0.9:80/tcp", "VIP 10.0.0.9:80/tcp does not exist" },
	{ "vip set 10.0.0.1:81/tcp panic 1", "VIP 10.0.0.1:81/tcp does not exist" },
	{ "vip del 10.0.0.1:80/udp", "VIP 10.0.0.1:80/udp does not exist" },
	{ "backend del 10.0.0.1:80/tcp 10.1.0.9", "backend 10.1.0.9 of VIP 10.0.0.1:80/tcp does not exist" },
	{ "backend set 10.0.0.1:80/tcp 10.1.0.9 weight 2", "backend 10.1.0.9 of VIP 10.0.0.1:80/tcp does not exist" },
	{ "backend add 10.0.0.9:80/tcp 10.1.0.2", "VIP 10.0.0.9:80/tcp does not exist; add it first with \"vip add\"" },
	{ "link detach eth9", "link eth9 is not attached" },
	{ "vip add 10.0.0.2:80/tcp health tcp interval 1000", "VIP 10.0.0.2:80/tcp: health timeout 1000 ms must be less than the interval 1000 ms" },
	{ "vip set 10.0.0.1:80/tcp timeout 2000", "health timeout 2000 ms must be less than the interval 2000 ms" },
	{ "backend set 10.0.0.1:80/tcp 10.1.0.1 timeout 5000", "backend 10.1.0.1 of VIP 10.0.0.1:80/tcp: health timeout 5000 ms must be less" },
	{ "vip add 10.0.0.2/tcp health tcp", "VIP 10.0.0.2/tcp: the VIP serves every port, so health tcp needs a health-port" },
};

TEST(bad_lines_are_refused_with_reason_and_line)
{
	struct xlb_state s, sentinel;
	struct xlb_err e;
	char text[8192];
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(bad_lines); i++) {
		snprintf(text, sizeof(text), BASE "%s\n", bad_lines[i].line);
		memset(&s, 0xa5, sizeof(s));
		sentinel = s;
		strcpy(e.msg, "");
		ret = parse(text, &s, &e);
		EXPECT_LT(ret, 0) TH_LOG("accepted: %s", bad_lines[i].line);
		if (!ret) {
			xlb_state_free(&s);
			continue;
		}
		EXPECT_NE(NULL, strstr(e.msg, bad_lines[i].msg))
			TH_LOG("%s\n   got: %s\n  want: %s", bad_lines[i].line,
			       e.msg, bad_lines[i].msg);
		EXPECT_EQ(0, strncmp(e.msg, "t.conf:4:", 9))
			TH_LOG("%s: %s", bad_lines[i].line, e.msg);
		EXPECT_EQ(0, memcmp(&s, &sentinel, sizeof(s)));
	}
}

struct range_case {
	const char *prefix;	/* up to and including the option name */
	uint32_t lo, hi;
};

static const struct range_case ranges[] = {
	{ "set gue-port", 1, 65535 },
	{ "set mtu", 576, 9216 },
	{ "set ttl", 1, 255 },
	{ "set udp-idle", 1, 86400 },
	{ "set new-flow-rate", 0, 100000000 },
	{ "vip add 10.0.0.2:80/tcp vnodes", 1, 10000 },
	{ "vip add 10.0.0.2:80/tcp panic", 0, 100 },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight", 0, 65535 },
	{ "vip add 10.0.0.2:80/tcp health-port", 0, 65535 },
	{ "vip add 10.0.0.2:80/tcp interval", 10, 3600000 },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 timeout", 1, 3600000 },
	{ "vip add 10.0.0.2:80/tcp rise", 1, 100 },
	{ "backend add 10.0.0.1:80/tcp 10.1.0.2 fall", 1, 100 },
	{ "vip add 10.0.0.2:80/tcp http-status", 100, 599 },
};

static void expect_range_error(struct __test_metadata *_metadata,
			       const struct range_case *r, uint64_t v)
{
	const char *name = strrchr(r->prefix, ' ') + 1;
	char text[512], want[128], col[32];
	struct xlb_err e = { "" };
	struct xlb_state s;

	snprintf(text, sizeof(text), BASE "%s %llu\n", r->prefix,
		 (unsigned long long)v);
	snprintf(want, sizeof(want), "%s %llu is out of range; use %u..%u",
		 name, (unsigned long long)v, r->lo, r->hi);
	snprintf(col, sizeof(col), "t.conf:4:%zu: ", strlen(r->prefix) + 2);
	ASSERT_EQ(-ERANGE, parse(text, &s, &e)) TH_LOG("%s %llu", r->prefix,
						     (unsigned long long)v);
	EXPECT_NE(NULL, strstr(e.msg, want)) TH_LOG("got %s; want %s", e.msg, want);
	EXPECT_EQ(0, strncmp(e.msg, col, strlen(col))) TH_LOG("%s", e.msg);
}

static void expect_accepted(struct __test_metadata *_metadata,
			    const struct range_case *r, uint32_t v)
{
	struct xlb_err e = { "" };
	struct xlb_state s;
	char text[512];
	int ret;

	snprintf(text, sizeof(text), BASE "%s %u\n", r->prefix, v);
	ret = parse(text, &s, &e);
	EXPECT_EQ(0, ret) TH_LOG("%s %u: %s", r->prefix, v, e.msg);
	if (!ret)
		xlb_state_free(&s);
}

TEST(every_number_is_range_checked)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ranges); i++) {
		if (ranges[i].lo)
			expect_range_error(_metadata, &ranges[i], ranges[i].lo - 1);
		expect_range_error(_metadata, &ranges[i], ranges[i].hi + 1ull);
		expect_range_error(_metadata, &ranges[i], 1ull << 32);
		/* both ends are accepted (timeout only below the interval) */
		if (!strstr(ranges[i].prefix, "interval"))
			expect_accepted(_metadata, &ranges[i], ranges[i].lo);
		if (!strstr(ranges[i].prefix, "timeout"))
			expect_accepted(_metadata, &ranges[i], ranges[i].hi);
	}
}

TEST(locations_point_at_the_offending_token)
{
	/* the line, and where in it the offending token starts */
	static const struct {
		const char *line;
		const char *token;
	} cases[] = {
		{ "vip add 10.0.0.1:80/tcp", "10.0.0.1" },
		{ "  vip   add 10.0.0.2:80/tcp health tcp interval 800 timeout 900",
		  "timeout" },
		{ "vip add 10.0.0.2:80/tcp health tcp interval 800", "interval" },
		{ "backend add 10.0.0.9:80/tcp 10.1.0.2", "10.0.0.9" },
		{ "backend add 10.0.0.1:80/tcp 10.1.0.1", "10.1.0.1" },
		{ "backend add 10.0.0.1:80/tcp 10.1.0.2 weight 5 name 10.1.0.1",
		  "name" },
		{ "vip add 10.0.0.1:80/tcp\tpanic \"200\"", "\"200\"" },
		{ "vip add 10.0.0.2/tcp stateless health tcp", "health" },
		{ "set ttl 0", "0" },
		{ "frob", "frob" },
		{ "vip add 10.0.0.2:80/tcp panic", "panic" },
		{ "link detach eth0", "eth0" },
		{ "vip add 10.0.0.2:80/tcp \"unclosed", "\"unclosed" },
	};
	struct xlb_err e = { "" };
	struct xlb_state s;
	char text[512], want[32];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(text, sizeof(text), BASE "%s\n", cases[i].line);
		snprintf(want, sizeof(want), "t.conf:4:%zu: ",
			 (size_t)(strstr(cases[i].line, cases[i].token) -
				  cases[i].line) + 1);
		ASSERT_NE(0, parse(text, &s, &e)) TH_LOG("%s", cases[i].line);
		EXPECT_EQ(0, strncmp(e.msg, want, strlen(want)))
			TH_LOG("%s\n   got: %s\n  want: %s", cases[i].line,
			       e.msg, want);
	}
}

TEST(third_line_bad_returns_nothing)
{
	static const char text[] = KEY_LINE
		"vip add 10.0.0.1:80/tcp\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.1 weight 70000\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n";
	struct xlb_state s, sentinel;
	struct xlb_err e = { "" };

	memset(&s, 0x5a, sizeof(s));
	sentinel = s;
	ASSERT_EQ(-ERANGE, xlb_config_parse(text, strlen(text), "xlb.conf", &s, &e));
	EXPECT_STREQ("xlb.conf:3:45: weight 70000 is out of range; use 0..65535",
		     e.msg);
	EXPECT_EQ(0, memcmp(&s, &sentinel, sizeof(s)));
}

TEST(nul_byte_is_refused)
{
	static const char text[] = KEY_LINE "vip add 10.0.0.1:80/tcp\0 x\n";
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(-EINVAL, xlb_config_parse(text, sizeof(text) - 1, "n.conf",
					    &s, &e));
	EXPECT_STREQ("n.conf:2:24: NUL byte; a config is text", e.msg);
}

/*
 * The text check reads eight bytes at a time: every byte below 0x20 but
 * tab, CR and newline, and 0x7f, is refused at its own column wherever it sits in
 * a line (in a word, at a word's edge, in the tail), and tab, CR and
 * bytes from 0x80 on pass everywhere.
 */
TEST(control_bytes_are_refused_at_every_column)
{
	static const char base[] = "vip add 10.0.0.1:80/tcp name abcdefghijklmnopq";
	size_t len = sizeof(base) - 1, col;
	char line[sizeof(base) + 16], want[64];
	struct xlb_err e = { "" };
	struct xlb_state st;
	int ch;

	for (col = 0; col < len; col++) {
		for (ch = 0; ch < 0x100; ch++) {
			bool bad = (ch < 0x20 && ch != '\t' && ch != '\r') ||
				   ch == 0x7f;

			if ((!bad && ch != '\t' && ch != 0x80 && ch != 0xff) ||
			    ch == '\n')	/* in a file: the next line */
				continue;
			memcpy(line, base, len + 1);
			line[col] = (char)ch;
			e.msg[0] = 0;
			if (!xlb_config_parse(line, len, "c.conf", &st, &e))
				xlb_state_free(&st);
			if (bad) {
				snprintf(want, sizeof(want),
					 ch ? "c.conf:1:%zu: control character 0x%02x" :
					      "c.conf:1:%zu: NUL byte",
					 col + 1, ch);
				EXPECT_NE(NULL, strstr(e.msg, want))
					TH_LOG("0x%02x at %zu: %s", ch, col + 1,
					       e.msg);
			} else {
				EXPECT_EQ(NULL, strstr(e.msg, "control character"))
					TH_LOG("0x%02x at %zu: %s", ch, col + 1,
					       e.msg);
			}
		}
	}
}

/* IPv4 addresses are named by hand: as inet_ntop names them, every one. */
TEST(ipv4_names_are_inet_ntops)
{
	char got[XLB_ADDR_STR_MAX], want[INET_ADDRSTRLEN];
	static const __u8 edge[] = { 0, 1, 9, 10, 11, 99, 100, 101, 199,
				     200, 249, 250, 255 };
	__be32 a[4] = { 0 };
	size_t i, j, k, l, bad = 0, n = sizeof(edge);
	uint32_t x = 2463534242u;	/* xorshift32 */

	for (i = 0; i < n * n * n * n + 100000; i++) {
		__u8 *b = (__u8 *)a;

		if (i < n * n * n * n) {
			j = i, k = j / n, l = k / n;
			b[0] = edge[j % n], b[1] = edge[k % n];
			b[2] = edge[l % n], b[3] = edge[l / n % n];
		} else {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			a[0] = x;
		}
		inet_ntop(AF_INET, a, want, sizeof(want));
		xlb_addr_str(XLB_FAMILY_INET, a, got);
		if (strcmp(got, want) && bad++ < 5)
			TH_LOG("%s named %s", want, got);
	}
	EXPECT_EQ(0, bad);
}

/* IPv4 addresses are read by hand: as inet_pton reads them, or refused. */
TEST(ipv4_reading_is_inet_ptons)
{
	static const char *const edge[] = {
		"0.0.0.0", "255.255.255.255", "256.0.0.1", "1.2.3", "1.2.3.4.",
		".1.2.3.4", "1..2.3", "01.2.3.4", "1.2.3.04", "1.2.3.00",
		"1.2.3.0", "10.0.100.9", "1.2.3.4.5", "1.2.3.999", "1.2.3.-1",
		"1.2.3.4 ", " 1.2.3.4", "1.2.3.4a", "0x1.2.3.4", "1.2.3.1000",
		"", ".", "1", "1.", "999.1.1.1", "25.255.2550.1",
	};
	static const char alpha[] = "0123456789.";
	char s[24];
	__be32 a[4], want;
	uint8_t fam;
	size_t i, j, n, bad = 0;
	uint32_t x = 88172645u;	/* xorshift32 */
	int ok, pton;

	for (i = 0; i < sizeof(edge) / sizeof(edge[0]) + 300000; i++) {
		if (i < sizeof(edge) / sizeof(edge[0])) {
			snprintf(s, sizeof(s), "%s", edge[i]);
		} else {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			n = 1 + x % 16;
			for (j = 0; j < n; j++) {
				x ^= x << 13, x ^= x >> 17, x ^= x << 5;
				/* mostly digits and dots; a fifth well formed */
				s[j] = alpha[x % 11];
			}
			s[n] = 0;
			if (!(i % 5))
				snprintf(s, sizeof(s), "%u.%u.%u.%u",
					 x >> 24, x >> 16 & 255, x >> 8 & 255,
					 x & 255);
		}
		pton = inet_pton(AF_INET, s, &want) == 1;
		ok = !xlb_addr_parse(s, &fam, a);
		if (ok != pton || (ok && (fam != XLB_FAMILY_INET ||
					  a[0] != want))) {
			if (bad++ < 5)
				TH_LOG("\"%s\": inet_pton %d, read %d", s, pton,
				       ok);
		}
	}
	EXPECT_EQ(0, bad);
}

TEST(overlong_line_and_file_are_refused)
{
	size_t len = strlen(BASE) + XLB_LINE_MAX + 1, big = XLB_FILE_MAX + 1;
	struct xlb_err e = { "" };
	char want[128];
	struct xlb_state s;
	char *text;

	text = malloc(big + 1);
	ASSERT_NE(NULL, text);
	/* a comment of 4097 bytes: too long even though it says nothing */
	strcpy(text, BASE);
	memset(text + strlen(BASE), '#', XLB_LINE_MAX + 1);
	EXPECT_EQ(-E2BIG, xlb_config_parse(text, len, "l.conf", &s, &e));
	EXPECT_STREQ("l.conf:4:4097: the line is longer than 4096 bytes", e.msg);
	/* 4096 bytes is fine */
	EXPECT_EQ(0, xlb_config_parse(text, len - 1, "l.conf", &s, &e))
		TH_LOG("%s", e.msg);
	xlb_state_free(&s);

	memset(text, '\n', big);
	EXPECT_EQ(-EFBIG, xlb_config_parse(text, big, "b.conf", &s, &e));
	snprintf(want, sizeof(want),
		 "b.conf:%zu:1: the file is %zu bytes; the limit is %u (%u MiB)",
		 big, big, XLB_FILE_MAX, XLB_FILE_MAX >> 20);
	EXPECT_STREQ(want, e.msg);
	free(text);
}

TEST(too_many_tokens_are_refused)
{
	char text[1024] = BASE "vip set 10.0.0.1:80/tcp";
	struct xlb_err e = { "" };
	struct xlb_state s;
	int i;

	for (i = 3; i < XLB_TOKENS_MAX; i++)
		strcat(text, " stateless");
	strcat(text, "\n");
	/* 64 tokens lex; the repeats are a parse error */
	EXPECT_NE(0, parse(text, &s, &e));
	EXPECT_NE(NULL, strstr(e.msg, "stateless or stateful is given twice"));
	text[strlen(text) - 1] = 0;
	strcat(text, " stateless\n");
	EXPECT_EQ(-E2BIG, parse(text, &s, &e));
	EXPECT_NE(NULL, strstr(e.msg, "more than 64 tokens on one line"))
		TH_LOG("%s", e.msg);
}

TEST(missing_key_points_at_first_vip)
{
	static const char text[] = "# no key\nvip add 10.0.0.1:80/tcp\n"
				   "vip add 10.0.0.2:80/tcp\n";
	struct xlb_err e = { "" };
	struct xlb_state s;

	EXPECT_EQ(-EINVAL, parse(text, &s, &e));
	EXPECT_STREQ("t.conf:2:9: VIP 10.0.0.1:80/tcp needs the cluster key, which the file never sets; add \"set key\" with 32 hex digits",
		     e.msg);
	/* without VIPs a key is not needed */
	EXPECT_EQ(0, parse("link attach eth0\n", &s, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&s);
}

/* --- limits --------------------------------------------------------------- */

static char *lines(const char *head, const char *fmt, int n)
{
	size_t cap = strlen(head) + (size_t)n * 96 + 1, off;
	char *t = malloc(cap);
	int i;

	if (!t)
		return NULL;
	off = (size_t)snprintf(t, cap, "%s", head);
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(t + off, cap - off, fmt, i / 256 / 256,
					i / 256 % 256, i % 256);
	return t;
}

static void expect_limit(struct __test_metadata *_metadata, const char *head,
			 const char *fmt, int ok, const char *msg)
{
	struct xlb_err e = { "" };
	struct xlb_state s;
	char *t = lines(head, fmt, ok);

	ASSERT_NE(NULL, t);
	EXPECT_EQ(0, parse(t, &s, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&s);
	free(t);
	t = lines(head, fmt, ok + 1);
	ASSERT_NE(NULL, t);
	EXPECT_NE(0, parse(t, &s, &e));
	EXPECT_NE(NULL, strstr(e.msg, msg)) TH_LOG("got %s; want %s", e.msg, msg);
	free(t);
}

TEST(limits_are_enforced_with_errors)
{
	expect_limit(_metadata, KEY_LINE, "vip add 10.%d.%d.%d:80/tcp\n",
		     XLB_VIPS_MAX, "there are 1024 VIPs, the limit");
	expect_limit(_metadata, "", "link attach e%d.%d.%d\n", XLB_LINKS_MAX,
		     "16 links are attached, the limit");
	expect_limit(_metadata, KEY_LINE "vip add 10.0.0.1:80/tcp\n",
		     "backend add 10.0.0.1:80/tcp 10.%d.%d.%d\n",
		     XLB_BACKENDS_PER_VIP, "the limit is 4096 per VIP");
	expect_limit(_metadata, KEY_LINE "vip add 10.0.0.1:80/tcp table-size 251\n",
		     "backend add 10.0.0.1:80/tcp 10.%d.%d.%d\n", 251,
		     "VIP 10.0.0.1:80/tcp would have 252 backends but its table has 251 slots; choose a larger table-size");
}

TEST(ring_tokens_and_table_size_are_checked_on_every_change)
{
	static const char ring[] = BASE
		"vip set 10.0.0.1:80/tcp algo ring vnodes 10000\n"
		"backend set 10.0.0.1:80/tcp 10.1.0.1 weight 420\n";
	static const char shrink[] = BASE
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n"
		"vip set 10.0.0.1:80/tcp table-size 251\n";
	struct xlb_err e = { "" };
	struct xlb_state s;

	EXPECT_EQ(-E2BIG, parse(ring, &s, &e));
	EXPECT_STREQ("t.conf:5:38: VIP 10.0.0.1:80/tcp: vnodes 10000 x total weight 420 = 4200000 ring tokens; the limit is 4194304",
		     e.msg);
	/* draining takes a backend off the ring */
	EXPECT_EQ(0, parse(BASE "vip set 10.0.0.1:80/tcp algo ring vnodes 10000\n"
			   "backend set 10.0.0.1:80/tcp 10.1.0.1 state drain weight 420\n",
			   &s, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&s);
	EXPECT_EQ(0, parse(shrink, &s, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&s);
}

/* --- save, round trip, transactions --------------------------------------- */

static const char rich[] =
	"# a rich config\n"
	"set key 0123456789abcdef0123456789ABCDEF\n"
	"set src4 192.0.2.1\nset src6 2001:db8:ffff::1\nset gue-port 7777\n"
	"set mtu 9000\nset ttl 16\nset udp-idle 300\nset new-flow-rate 0\n"
	"link attach eth1 generic\nlink attach eth0\n"
	"vip add [2001:db8::1]:443/tcp health-consensus on algo ring vnodes 50 encap gue\n"
	"vip add 10.0.0.2/udp hash src stateless panic 75 health udp health-port 53 health-consensus off\n"
	"vip add 10.0.0.1:80/tcp table-size 251 hash 3tuple src 192.0.2.7 "
	"health http http-path \"/he#alth\" http-status 204 interval 5000 timeout 1500 rise 3 fall 4\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.2 weight 2\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.1 name zeta\n"
	"backend add 10.0.0.1:80/tcp 2001:db8:1::1 state drain health tcp health-port 8080\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.3 name 10.1.0.3 weight 0 state down\n"
	"backend add [2001:db8::1]:443/tcp 2001:db8:2::1\n"
	"backend add [2001:db8::1]:443/tcp 10.2.0.1 health none interval 1900\n"
	"backend add 10.0.0.2/udp 10.3.0.1\n"
	"vip add 10.9.9.9:9/tcp\nvip del 10.9.9.9:9/tcp\n";

static const char rich_saved[] =
	"set key 0123456789abcdef0123456789abcdef\n"
	"set src4 192.0.2.1\n"
	"set src6 2001:db8:ffff::1\n"
	"set gue-port 7777\n"
	"set mtu 9000\n"
	"set ttl 16\n"
	"set udp-idle 300\n"
	"set new-flow-rate 0\n"
	"link attach eth0\n"
	"link attach eth1 generic\n"
	"\n"
	"vip add 10.0.0.1:80/tcp table-size 251 hash 3tuple src 192.0.2.7 health http interval 5000 timeout 1500 rise 3 fall 4 http-path \"/he#alth\" http-status 204\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.2 weight 2\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.3 weight 0 state down\n"
	"backend add 10.0.0.1:80/tcp 2001:db8:1::1 state drain health tcp health-port 8080\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.1 name zeta\n"
	"\n"
	"vip add 10.0.0.2/udp hash src stateless panic 75 health udp health-port 53\n"
	"backend add 10.0.0.2/udp 10.3.0.1\n"
	"\n"
	"vip add [2001:db8::1]:443/tcp algo ring vnodes 50 encap gue health-consensus on\n"
	"backend add [2001:db8::1]:443/tcp 10.2.0.1 health none interval 1900\n"
	"backend add [2001:db8::1]:443/tcp 2001:db8:2::1\n";

TEST(save_is_canonical_and_round_trips)
{
	struct xlb_err e = { "" };
	struct xlb_state a, b;
	char *t1, *t2;

	ASSERT_EQ(0, parse(rich, &a, &e)) TH_LOG("%s", e.msg);
	t1 = save(&a);
	ASSERT_NE(NULL, t1);
	EXPECT_STREQ(rich_saved, t1);
	ASSERT_EQ(0, parse(t1, &b, &e)) TH_LOG("%s", e.msg);
	t2 = save(&b);
	ASSERT_NE(NULL, t2);
	EXPECT_STREQ(t1, t2);
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	EXPECT_EQ(0, xlb_state_validate(&b, &e)) TH_LOG("%s", e.msg);
	free(t1);
	free(t2);
	xlb_state_free(&a);
	xlb_state_free(&b);
}

TEST(order_of_lines_does_not_change_the_state)
{
	static const char one[] = KEY_LINE "link attach b\nlink attach a\n"
		"vip add 10.0.0.2:80/tcp\nvip add 10.0.0.1:80/tcp\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.1\n"
		"backend add 10.0.0.2:80/tcp 10.1.0.1\n";
	static const char two[] = "vip add 10.0.0.1:80/tcp\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.1\n"
		"vip add 10.0.0.2:80/tcp\n"
		"backend add 10.0.0.2:80/tcp 10.1.0.1\n"
		"backend add 10.0.0.1:80/tcp 10.1.0.2\n"
		"link attach a\nlink attach b\n" KEY_LINE;
	struct xlb_err e = { "" };
	struct xlb_state a, b;
	char *t1, *t2;

	ASSERT_EQ(0, parse(one, &a, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, parse(two, &b, &e)) TH_LOG("%s", e.msg);
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	t1 = save(&a);
	t2 = save(&b);
	ASSERT_NE(NULL, t1);
	ASSERT_NE(NULL, t2);
	EXPECT_STREQ(t1, t2);
	free(t1);
	free(t2);
	xlb_state_free(&a);
	xlb_state_free(&b);
}

/*
 * Backends live in one array sorted by VIP and name; a VIP's are found by
 * searching it (from the end for the last VIP, as a file in canonical
 * order adds them).  Random adds and deletes over five VIPs, the last one
 * most often, against a plain table of what should be there.
 */
TEST(backend_ranges_hold_under_random_adds_and_dels)
{
	enum { NV = 5, NA = 40, OPS = 4000 };
	bool want[NV][NA] = { { false } };
	struct xlb_err e = { "" };
	unsigned int x = 12345, col;
	struct xlb_state s;
	char line[128];
	int i, v, a, empty;

	ASSERT_EQ(0, parse(KEY_LINE, &s, &e)) TH_LOG("%s", e.msg);
	for (v = 0; v < NV; v++) {
		snprintf(line, sizeof(line), "vip add 10.0.0.%d:80/tcp", v + 1);
		ASSERT_EQ(0, xlb_config_apply_line(&s, line, strlen(line), NULL,
						   NULL, &empty, &col, &e))
			TH_LOG("%s", e.msg);
	}
	for (i = 0; i < OPS; i++) {
		struct xlb_vip_key k;
		char addr[32];

		x = x * 1103515245u + 12345u;
		v = (int)((x >> 16) % (NV + 3));
		v = v >= NV ? NV - 1 : v;	/* the last VIP: 4 in 8 */
		x = x * 1103515245u + 12345u;
		a = (int)((x >> 16) % NA);
		snprintf(addr, sizeof(addr), "10.1.%d.%d", a % 3, a + 1);
		snprintf(line, sizeof(line), "backend %s 10.0.0.%d:80/tcp %s",
			 want[v][a] ? "del" : "add", v + 1, addr);
		ASSERT_EQ(0, xlb_config_apply_line(&s, line, strlen(line), NULL,
						   NULL, &empty, &col, &e))
			TH_LOG("op %d, %s: %s", i, line, e.msg);
		want[v][a] = !want[v][a];
		ASSERT_EQ(0, xlb_state_validate(&s, &e))
			TH_LOG("op %d, %s: %s", i, line, e.msg);
		snprintf(line, sizeof(line), "10.0.0.%d", v + 1);
		k = vip4(line, 80, IPPROTO_TCP);
		ASSERT_EQ(want[v][a], backend(&s, &k, addr) != NULL)
			TH_LOG("op %d: %s of VIP %d", i, addr, v + 1);
	}
	for (v = 0; v < NV; v++) {
		struct xlb_vip_key k;
		char addr[32];

		snprintf(line, sizeof(line), "10.0.0.%d", v + 1);
		k = vip4(line, 80, IPPROTO_TCP);
		for (a = 0; a < NA; a++) {
			snprintf(addr, sizeof(addr), "10.1.%d.%d", a % 3, a + 1);
			EXPECT_EQ(want[v][a], backend(&s, &k, addr) != NULL)
				TH_LOG("%s of VIP %d", addr, v + 1);
		}
	}
	xlb_state_free(&s);
}

TEST(copy_is_deep_and_equal)
{
	struct xlb_err e = { "" };
	struct xlb_state a, b;

	ASSERT_EQ(0, parse(rich, &a, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_copy(&b, &a));
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	EXPECT_NE(a.backends, b.backends);
	b.backends[0].weight = 77;
	EXPECT_FALSE(xlb_state_equal(&a, &b));
	xlb_state_free(&a);
	xlb_state_free(&b);
	EXPECT_EQ(0, a.n_vips);
	EXPECT_EQ(NULL, a.vips);
}

static void apply2(struct __test_metadata *_metadata, struct xlb_state *a,
		   struct xlb_state *b, const char *line)
{
	struct xlb_err e = { "" };
	unsigned int col;
	int empty;

	ASSERT_EQ(0, xlb_config_apply_line(a, line, strlen(line), NULL, NULL,
					   &empty, &col, &e))
		TH_LOG("%s: %s", line, e.msg);
	if (b)
		ASSERT_EQ(0, xlb_config_apply_line(b, line, strlen(line), NULL,
						   NULL, &empty, &col, &e))
			TH_LOG("%s: %s", line, e.msg);
}

/*
 * "backend VERB" of backend J of VIP V: names out of order, so adds land
 * inside the VIP's backends too
 */
static void backend_line(char *line, size_t len, const char *verb, int v,
			 int j)
{
	int a = (j * 37) % 300;

	snprintf(line, len, "backend %s 10.0.0.%d:80/tcp 10.1.%d.%d", verb, v,
		 a / 250, a % 250 + 1);
}

/*
 * Room reserved ahead: adds up to it move no array, and the state is the
 * one built without; a join leaves room for the adds after it.
 */
TEST(reserved_room_moves_nothing_and_changes_nothing)
{
	struct xlb_err e = { "" };
	struct xlb_state a, b, t;
	const void *at;
	char line[128];
	int i;

	ASSERT_EQ(0, parse(KEY_LINE "vip add 10.0.0.1:80/tcp\n"
			   "vip add 10.0.0.2:80/tcp\n", &a, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_copy(&b, &a));
	ASSERT_EQ(0, xlb_state_reserve(&a, 600));
	at = a.backends;
	for (i = 0; i < 600; i++) {
		backend_line(line, sizeof(line), "add", i % 2 + 1, i / 2);
		apply2(_metadata, &a, &b, line);
	}
	EXPECT_EQ(at, a.backends);
	EXPECT_NE(b.backends, a.backends);
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	ASSERT_EQ(0, xlb_state_validate(&a, &e)) TH_LOG("%s", e.msg);
	/* less than it has: nothing changes */
	ASSERT_EQ(0, xlb_state_reserve(&a, 10));
	EXPECT_EQ(at, a.backends);
	EXPECT_TRUE(xlb_state_equal(&a, &b));

	/* a join: the state built in one */
	xlb_state_init(&t);
	apply2(_metadata, &t, &b, "vip add 10.0.0.3:80/tcp");
	for (i = 0; i < 100; i++) {
		backend_line(line, sizeof(line), "add", 3, i);
		apply2(_metadata, &t, &b, line);
	}
	ASSERT_EQ(0, xlb_state_join(&a, &t));
	EXPECT_EQ(700u, a.n_backends);
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	/* and room for what comes after it */
	at = a.backends;
	for (i = 100; i < 120; i++) {
		backend_line(line, sizeof(line), "add", 3, i);
		apply2(_metadata, &a, &b, line);
	}
	EXPECT_EQ(at, a.backends);
	EXPECT_TRUE(xlb_state_equal(&a, &b));
	ASSERT_EQ(0, xlb_state_validate(&a, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&a);
	xlb_state_free(&b);
}

/*
 * Adds to one VIP that alternate between two states, where its backends
 * start at different places, and with removals before them in one: each
 * state ends as if built alone (the range of the VIP found last is only a
 * hint, checked against the state at hand).
 */
TEST(adds_alternating_between_states_find_their_own_ranges)
{
	struct xlb_err e = { "" };
	struct xlb_state a, b, a1, b1;
	char line[128];
	int i;

	ASSERT_EQ(0, parse(KEY_LINE "vip add 10.0.0.1:80/tcp\n"
			   "vip add 10.0.0.2:80/tcp\n", &a, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, parse(KEY_LINE "vip add 10.0.0.2:80/tcp\n", &b, &e))
		TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_copy(&a1, &a));
	ASSERT_EQ(0, xlb_state_copy(&b1, &b));
	for (i = 0; i < 10; i++) {
		backend_line(line, sizeof(line), "add", 1, i);
		apply2(_metadata, &a, &a1, line);
	}
	for (i = 0; i < 200; i++) {
		backend_line(line, sizeof(line), "add", 2, i);
		apply2(_metadata, &a, NULL, line);
		apply2(_metadata, &b, NULL, line);
		if (i % 50 == 49) {	/* the VIP before it loses one */
			backend_line(line, sizeof(line), "del", 1, i / 50);
			apply2(_metadata, &a, NULL, line);
		}
	}
	/* the same, one state at a time */
	for (i = 0; i < 200; i++) {
		backend_line(line, sizeof(line), "add", 2, i);
		apply2(_metadata, &a1, &b1, line);
	}
	for (i = 0; i < 4; i++) {
		backend_line(line, sizeof(line), "del", 1, i);
		apply2(_metadata, &a1, NULL, line);
	}
	EXPECT_EQ(206u, a.n_backends);
	EXPECT_EQ(200u, b.n_backends);
	EXPECT_TRUE(xlb_state_equal(&a, &a1));
	EXPECT_TRUE(xlb_state_equal(&b, &b1));
	ASSERT_EQ(0, xlb_state_validate(&a, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_validate(&b, &e)) TH_LOG("%s", e.msg);
	xlb_state_free(&a);
	xlb_state_free(&b);
	xlb_state_free(&a1);
	xlb_state_free(&b1);
}

static void op(struct __test_metadata *_metadata, const char *line,
	       struct xlb_op *o)
{
	struct xlb_err e = { "" };
	int empty;

	ASSERT_EQ(0, xlb_op_parse_line(line, o, &empty, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, empty);
}

TEST(transaction_with_a_bad_op_changes_nothing)
{
	struct xlb_err e = { "" };
	struct xlb_op ops[4];
	struct xlb_state s;
	char *before, *after;

	ASSERT_EQ(0, parse(rich, &s, &e)) TH_LOG("%s", e.msg);
	before = save(&s);
	ASSERT_NE(NULL, before);
	op(_metadata, "vip add 10.5.0.1:80/tcp", &ops[0]);
	op(_metadata, "backend add 10.5.0.1:80/tcp 10.6.0.1", &ops[1]);
	op(_metadata, "vip del 10.0.0.1:80/tcp", &ops[2]);
	op(_metadata, "backend set 10.0.0.1:80/tcp 10.1.0.2 weight 3", &ops[3]);
	EXPECT_EQ(-ENOENT, xlb_state_apply_all(&s, ops, 4, &e));
	EXPECT_STREQ("command 4: VIP 10.0.0.1:80/tcp does not exist; add it first with \"vip add\"",
		     e.msg);
	after = save(&s);
	ASSERT_NE(NULL, after);
	EXPECT_STREQ(before, after);
	free(after);

	/* the same without the bad one goes through whole */
	EXPECT_EQ(0, xlb_state_apply_all(&s, ops, 3, &e)) TH_LOG("%s", e.msg);
	after = save(&s);
	ASSERT_NE(NULL, after);
	EXPECT_NE(NULL, strstr(after, "backend add 10.5.0.1:80/tcp 10.6.0.1\n"));
	EXPECT_EQ(NULL, strstr(after, "vip add 10.0.0.1:80/tcp"));
	free(after);
	free(before);
	xlb_state_free(&s);
}

TEST(transaction_is_validated_before_commit)
{
	struct xlb_err e = { "" };
	struct xlb_op ops[2];
	struct xlb_state s;

	xlb_state_init(&s);
	op(_metadata, "vip add 10.0.0.1:80/tcp", &ops[0]);
	EXPECT_EQ(-EINVAL, xlb_state_apply_all(&s, ops, 1, &e));
	EXPECT_STREQ("there are VIPs but no cluster key; set one with \"set key\" and 32 hex digits",
		     e.msg);
	EXPECT_EQ(0, s.n_vips);
	op(_metadata, "set key " KEY_HEX, &ops[1]);
	EXPECT_EQ(0, xlb_state_apply_all(&s, ops, 2, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(1, s.n_vips);
	xlb_state_free(&s);
}

TEST(single_apply_error_leaves_state_as_it_was)
{
	static const char *const bad[] = {
		"backend set 10.0.0.1:80/tcp 10.1.0.2 name zeta",
		"backend set 10.0.0.1:80/tcp 10.1.0.2 timeout 9000",
		"vip set 10.0.0.1:80/tcp table-size 251 interval 100",
		"vip set 10.0.0.2/udp health-port 0",
		"backend add 10.0.0.1:80/tcp 10.1.0.9 health tcp interval 10",
		"link attach eth0",
	};
	struct xlb_err e = { "" };
	struct xlb_op o;
	struct xlb_state s;
	char *before, *after;
	size_t i;
	int empty;

	ASSERT_EQ(0, parse(rich, &s, &e)) TH_LOG("%s", e.msg);
	before = save(&s);
	ASSERT_NE(NULL, before);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (xlb_op_parse_line(bad[i], &o, &empty, &e))
			continue;	/* refused by the parser already */
		EXPECT_NE(0, xlb_state_apply(&s, &o, &e)) TH_LOG("%s", bad[i]);
		after = save(&s);
		ASSERT_NE(NULL, after);
		EXPECT_STREQ(before, after) TH_LOG("%s", bad[i]);
		free(after);
	}
	free(before);
	xlb_state_free(&s);
}

TEST(validate_catches_hand_made_states)
{
	struct xlb_err e = { "" };
	struct xlb_state s;

	ASSERT_EQ(0, parse(rich, &s, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_validate(&s, &e)) TH_LOG("%s", e.msg);
	/* 10.0.0.1:80/tcp's first two backends by name */
	strcpy(s.backends[1].name, s.backends[0].name);
	EXPECT_EQ(-EEXIST, xlb_state_validate(&s, &e));
	EXPECT_STREQ("backend name \"10.1.0.2\" is used twice in VIP 10.0.0.1:80/tcp",
		     e.msg);
	strcpy(s.backends[1].name, "10.1.0.3");
	s.vips[0].health.timeout_ms = s.vips[0].health.interval_ms;
	EXPECT_EQ(-EINVAL, xlb_state_validate(&s, &e));
	EXPECT_NE(NULL, strstr(e.msg, "must be less than the interval"));
	s.vips[0].health.timeout_ms = 1;
	s.vips[0].table_size = 3;
	EXPECT_EQ(-E2BIG, xlb_state_validate(&s, &e));
	EXPECT_NE(NULL, strstr(e.msg, "would have 4 backends but its table has 3 slots"));
	s.vips[0].table_size = 251;
	s.global.key_set = false;
	EXPECT_EQ(-EINVAL, xlb_state_validate(&s, &e));
	EXPECT_NE(NULL, strstr(e.msg, "no cluster key"));
	xlb_state_free(&s);
}

/*
 * An IPv6 VIP's clients are told mtu minus the tunnel's overhead; below
 * 1280 (RFC 8200) the mtu, or a VIP or backend that would need it, is
 * refused with the figures, and the state stays as it was.  The
 * overheads: IP in IP 20 (IPv4) / 40 (IPv6); GUE 44 / 88.
 */
TEST(mtu_below_ipv6_minimum_refused)
{
	static const struct {
		const char *vip, *backend;
		unsigned int lowest;	/* mtu: 1280 + overhead */
	} cases[] = {
		{ "vip add [2001:db8::1]:80/tcp", "10.1.0.1", 1300 },
		{ "vip add [2001:db8::1]:80/tcp", "fd00::1", 1320 },
		{ "vip add [2001:db8::1]:80/tcp encap gue", "10.1.0.1", 1324 },
		{ "vip add [2001:db8::1]:80/tcp encap gue", "fd00::1", 1368 },
	};
	struct xlb_err e = { "" };
	struct xlb_op ops[4];
	struct xlb_state s;
	char line[128], *before, *after;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		xlb_state_init(&s);
		op(_metadata, "set key " KEY_HEX, &ops[0]);
		op(_metadata, cases[i].vip, &ops[1]);
		snprintf(line, sizeof(line), "backend add [2001:db8::1]:80/tcp %s",
			 cases[i].backend);
		op(_metadata, line, &ops[2]);
		snprintf(line, sizeof(line), "set mtu %u", cases[i].lowest);
		op(_metadata, line, &ops[3]);
		ASSERT_EQ(0, xlb_state_apply_all(&s, ops, 4, &e))
			TH_LOG("%s: %s", line, e.msg);
		EXPECT_EQ(cases[i].lowest, s.global.mtu);
		before = save(&s);
		ASSERT_NE(NULL, before);

		/* one byte less: refused, nothing changed */
		snprintf(line, sizeof(line), "set mtu %u", cases[i].lowest - 1);
		op(_metadata, line, &ops[0]);
		EXPECT_EQ(-EINVAL, xlb_state_apply_all(&s, ops, 1, &e)) TH_LOG("%s", line);
		EXPECT_NE(NULL, strstr(e.msg, "so its clients would be told an MTU of 1279; IPv6 needs at least 1280"))
			TH_LOG("%s", e.msg);
		snprintf(line, sizeof(line), "set mtu %u or more", cases[i].lowest);
		EXPECT_NE(NULL, strstr(e.msg, line)) TH_LOG("%s", e.msg);
		after = save(&s);
		ASSERT_NE(NULL, after);
		EXPECT_STREQ(before, after);
		free(after);
		free(before);
		xlb_state_free(&s);
	}

	/* the other way round: a backend that needs more than the mtu */
	xlb_state_init(&s);
	op(_metadata, "set key " KEY_HEX, &ops[0]);
	op(_metadata, "set mtu 1330", &ops[1]);
	op(_metadata, "vip add [2001:db8::1]:80/tcp encap gue", &ops[2]);
	op(_metadata, "backend add [2001:db8::1]:80/tcp 10.1.0.1", &ops[3]);
	ASSERT_EQ(0, xlb_state_apply_all(&s, ops, 4, &e)) TH_LOG("%s", e.msg);
	op(_metadata, "backend add [2001:db8::1]:80/tcp fd00::1", &ops[0]);
	EXPECT_EQ(-EINVAL, xlb_state_apply_all(&s, ops, 1, &e));
	EXPECT_NE(NULL, strstr(e.msg, "mtu 1330: IPv6 VIP [2001:db8::1]:80/tcp reaches backend fd00::1 through 88 bytes of GUE over IPv6"))
		TH_LOG("%s", e.msg);
	EXPECT_EQ(1, s.n_backends);
	/* IPv4 VIPs are not bound by it */
	op(_metadata, "set mtu 576", &ops[0]);
	op(_metadata, "vip del [2001:db8::1]:80/tcp", &ops[1]);
	op(_metadata, "vip add 10.0.0.1:80/tcp encap gue", &ops[2]);
	op(_metadata, "backend add 10.0.0.1:80/tcp fd00::1", &ops[3]);
	EXPECT_EQ(0, xlb_state_apply_all(&s, ops, 4, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(576, s.global.mtu);
	xlb_state_free(&s);
}

/* --- a large file, read as two halves at once (config.c) ----------------- */

struct text {
	char *p;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->cap - t->len < 512) {
		t->cap = t->cap ? 2 * t->cap : 1 << 20;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	va_start(ap, fmt);
	n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/*
 * VIPs [from, to) of a file in the order xlbd saves it, each followed by
 * its backends; of 300, the first 250 are IPv4 and the rest IPv6, every
 * fifth is a ring, and the backends' names, weights and states vary.
 * All 300 of 60 backends make about 700 KiB, above the size read in two
 * halves.
 */
#define BIG_VIPS	300
#define BIG_BACKENDS	60

static void big_vip(struct text *t, int v, char *vs, size_t len)
{
	if (v < 250)
		snprintf(vs, len, "10.0.%d.%d:80/tcp", v / 200, v % 200 + 1);
	else
		snprintf(vs, len, "[2001:db8::%x]:443/udp", v);
}

static void put_vips(struct text *t, int from, int to)
{
	static const char *const state[] = { "", " state drain",
					     " state down" };
	char vs[64];
	int v, b;

	for (v = from; v < to; v++) {
		big_vip(t, v, vs, sizeof(vs));
		put(t, "vip add %s table-size 4093%s\n", vs,
		    v % 5 ? "" : " algo ring vnodes 20");
		for (b = 0; b < BIG_BACKENDS; b++)
			put(t, "backend add %s 10.1.%d.%d name b%02d weight %d%s\n",
			    vs, b / 200, b % 200 + 1, b, 1 + (v + b) % 4,
			    state[(v * 7 + b) % 9 < 7 ? 0 : 1 + (v + b) % 2]);
	}
}

/* The text applied line by line, as one pass reads it, and validated. */
static int one_pass(const struct text *t, struct xlb_state *s,
		    unsigned int *line, struct xlb_err *e)
{
	size_t off, llen;
	const char *nl;
	unsigned int col;
	int empty, ret = 0;

	xlb_state_init(s);
	*line = 1;
	for (off = 0; off < t->len; off += llen + 1, ++*line) {
		nl = memchr(t->p + off, '\n', t->len - off);
		llen = nl ? (size_t)(nl - (t->p + off)) : t->len - off;
		ret = xlb_config_apply_line(s, t->p + off, llen, NULL, NULL,
					    &empty, &col, e);
		if (ret)
			return ret;
	}
	*line = 0;
	return xlb_state_validate(s, e);
}

/* Parsed, the text is the state one pass builds; joined: by two halves. */
static void same_as_one_pass(struct __test_metadata *_metadata,
			     const struct text *t, bool joined)
{
	unsigned long before = xlb_config_halves_joined;
	struct xlb_state s, want;
	struct xlb_err e = { "" };
	unsigned int line;

	ASSERT_EQ(0, one_pass(t, &want, &line, &e)) TH_LOG("line %u: %s",
							     line, e.msg);
	ASSERT_EQ(0, xlb_config_parse(t->p, t->len, "big.conf", &s, &e))
		TH_LOG("%s", e.msg);
	EXPECT_EQ(joined, xlb_config_halves_joined == before + 1);
	EXPECT_EQ(want.n_vips, s.n_vips);
	EXPECT_EQ(want.n_backends, s.n_backends);
	EXPECT_TRUE(xlb_state_equal(&want, &s));
	xlb_state_free(&s);
	xlb_state_free(&want);
}

TEST(a_large_file_in_order_reads_in_two_halves_as_in_one)
{
	struct text t = { 0 };
	struct xlb_state s;
	struct xlb_err e = { "" };
	char *saved;

	put(&t, KEY_LINE "set mtu 1600\nlink attach eth0\n");
	put_vips(&t, 0, BIG_VIPS);
	ASSERT_GT(t.len, 512u << 10);
	same_as_one_pass(_metadata, &t, true);
	/* what xlbd saves of it reads the same way */
	ASSERT_EQ(0, xlb_config_parse(t.p, t.len, "big.conf", &s, &e));
	ASSERT_EQ(0, xlb_config_save(&s, &saved));
	xlb_state_free(&s);
	free(t.p);
	t = (struct text){ saved, strlen(saved), strlen(saved) + 1 };
	same_as_one_pass(_metadata, &t, true);
	free(saved);
}

/*
 * Files whose second half is not only adds of VIPs after the first half's:
 * each reads in one pass, to the same state.  The extra lines go last, in
 * the second half.
 */
TEST(a_large_file_out_of_order_reads_in_one_pass)
{
	static const char *const tail[] = {
		/* a global setting */
		"set mtu 1600\n",
		/* a link */
		"link attach eth1\n",
		/* a backend of a VIP of the first half */
		"backend add 10.0.0.1:80/tcp 10.9.0.1\n",
		/* a VIP that sorts before the first half's last */
		"vip add 10.0.0.1:81/tcp\nbackend add 10.0.0.1:81/tcp 10.9.0.1\n",
		/* a change and a removal in the second half's own VIPs */
		"backend set [2001:db8::12b]:443/udp 10.1.0.1 weight 9\n",
		"backend del [2001:db8::12b]:443/udp 10.1.0.2\n",
		"vip del [2001:db8::12a]:443/udp\n",
		/* a VIP of the first half removed, and one added again */
		"vip del 10.0.0.1:80/tcp\nvip add 10.0.0.1:80/tcp\n",
	};
	size_t i;

	for (i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
		struct text t = { 0 };

		put(&t, KEY_LINE);
		put_vips(&t, 0, BIG_VIPS);
		put(&t, "%s", tail[i]);
		same_as_one_pass(_metadata, &t, false);
		free(t.p);
	}
}

/* An error anywhere in a large file names its line, as one pass does. */
TEST(errors_in_a_large_file_name_their_line)
{
	static const struct {
		const char *line, *msg;
		int ret;
	} bad[] = {
		/* the second half would take it alone: the join refuses */
		{ "vip add 10.0.0.1:80/tcp", "big.conf:%u:9: VIP 10.0.0.1:80/tcp already exists; change it with \"vip set\"", -EEXIST },
		{ "backend add 10.0.0.1:80/tcp 10.1.0.1", "big.conf:%u:29: backend 10.1.0.1 of VIP 10.0.0.1:80/tcp already exists; change it with \"backend set\"", -EEXIST },
		{ "vip frob", "big.conf:%u:5: unknown", -EINVAL },
		/* the second half alone would end without it */
		{ "vip add 10.0.0.1:80/tcp\nvip del 10.0.0.1:80/tcp", "big.conf:%u:9: VIP 10.0.0.1:80/tcp already exists; change it with \"vip set\"", -EEXIST },
		{ "backend add [2001:db8::12b]:443/udp 10.1.0.1", "big.conf:%u:37: backend 10.1.0.1 of VIP [2001:db8::12b]:443/udp already exists; change it with \"backend set\"", -EEXIST },
	};
	size_t i, first;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the last VIP's backend exists only in the last half */
		for (first = 0; first < (i == 4 ? 1u : 2u); first++) {
			unsigned long before = xlb_config_halves_joined;
			struct xlb_err e = { "" };
			struct text t = { 0 };
			unsigned int line = 1, at;
			struct xlb_state s;
			char want[512];
			size_t k;

			/* in the first half (line 2), or the last line */
			put(&t, KEY_LINE);
			if (first)
				put(&t, "vip add 10.0.0.1:80/tcp\nbackend add 10.0.0.1:80/tcp 10.1.0.1\n%s\n",
				    bad[i].line);
			put_vips(&t, first ? 1 : 0, BIG_VIPS);
			if (!first)
				put(&t, "%s\n", bad[i].line);
			for (k = 0; k < t.len; k++)
				line += t.p[k] == '\n';
			for (k = 0; bad[i].line[k]; k++)
				line -= bad[i].line[k] == '\n';
			at = first ? 4 : line - 1;
			EXPECT_EQ(bad[i].ret, xlb_config_parse(t.p, t.len,
							       "big.conf",
							       &s, &e));
			snprintf(want, sizeof(want), bad[i].msg, at);
			EXPECT_EQ(0, strncmp(want, e.msg, strlen(want)))
				TH_LOG("want \"%s\", got \"%s\"", want, e.msg);
			EXPECT_EQ(before, xlb_config_halves_joined);
			free(t.p);
		}
	}
}

TEST_HARNESS_MAIN
