// SPDX-License-Identifier: GPL-2.0
/*
 * QUIC connection-ID routing (bpf/quic.h) outside the data path: the
 * grammar of a VIP's quic configuration and a backend's quic-id (values,
 * save round trip, every bad form refused with its reason and place and
 * the state unchanged), and the reading of a short header's server ID
 * that explain shares with the program, on the QUIC-LB draft's vectors.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "config.h"

#define KEY_LINE	"set key 000102030405060708090a0b0c0d0e0f\n"
#define QVIP		"192.0.2.10:443/udp"
/* Four lines; a bad line appended to it is line 5. */
#define BASE		KEY_LINE "vip add " QVIP " quic on\n"		\
			"backend add " QVIP " 10.1.0.1 quic-id 0a0b0c\n"	\
			"vip add 192.0.2.10:53/udp\n"

static int parse(const char *text, struct xlb_state *s, struct xlb_err *e)
{
	return xlb_config_parse(text, strlen(text), "t.conf", s, e);
}

static struct xlb_vip_key qkey(uint16_t port, uint8_t proto)
{
	struct xlb_vip_key k;

	memset(&k, 0, sizeof(k));
	inet_pton(AF_INET, "192.0.2.10", k.addr);
	k.family = XLB_FAMILY_INET;
	k.port = htons(port);
	k.proto = proto;
	return k;
}

static const struct xlb_backend_conf *be(const struct xlb_state *s,
					 uint16_t port, const char *addr)
{
	struct xlb_vip_key k = qkey(port, IPPROTO_UDP);
	__be32 a[4] = { 0 };

	inet_pton(AF_INET, addr, a);
	return xlb_state_find_backend(s, &k, XLB_FAMILY_INET, a);
}

TEST(quic_defaults_values_and_save_round_trip)
{
	struct xlb_vip_key k = qkey(443, IPPROTO_UDP);
	const struct xlb_backend_conf *b;
	const struct xlb_vip_conf *v;
	struct xlb_err e = { "" };
	struct xlb_state s, again;
	char *t = NULL, *t2 = NULL;

	ASSERT_EQ(0, parse(BASE, &s, &e)) TH_LOG("%s", e.msg);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_TRUE(v->quic);
	EXPECT_EQ(0, v->quic_cr);
	EXPECT_EQ(3, v->quic_sid_len);
	EXPECT_EQ(4, v->quic_nonce_len);
	b = be(&s, 443, "10.1.0.1");
	ASSERT_NE(NULL, b);
	ASSERT_EQ(3, b->quic_id_len);
	EXPECT_EQ(0x0a, b->quic_id[0]);
	EXPECT_EQ(0x0c, b->quic_id[2]);
	xlb_state_free(&s);

	ASSERT_EQ(0, parse(KEY_LINE
			   "vip add " QVIP " quic on quic-cr 6 quic-sid-len 15 quic-nonce-len 4\n"
			   "backend add " QVIP " 10.1.0.1 quic-id 00112233445566778899AABBCCDDEE\n"
			   "backend add " QVIP " 10.1.0.2 quic-id 00112233445566778899aabbccddef\n",
			   &s, &e)) TH_LOG("%s", e.msg);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_EQ(6, v->quic_cr);
	EXPECT_EQ(15, v->quic_sid_len);
	ASSERT_EQ(0, xlb_config_save(&s, &t));
	EXPECT_NE(NULL, strstr(t, "quic on quic-cr 6 quic-sid-len 15 quic-nonce-len 4"))
		TH_LOG("%s", t);
	EXPECT_NE(NULL, strstr(t, "quic-id 00112233445566778899aabbccddee\n"))
		TH_LOG("%s", t);
	ASSERT_EQ(0, parse(t, &again, &e)) TH_LOG("%s", e.msg);
	EXPECT_TRUE(xlb_state_equal(&s, &again));
	ASSERT_EQ(0, xlb_config_save(&again, &t2));
	EXPECT_STREQ(t, t2);
	free(t);
	free(t2);
	xlb_state_free(&again);
	xlb_state_free(&s);

	/* quic off takes the configuration along; quic-id none clears */
	ASSERT_EQ(0, parse(KEY_LINE "vip add " QVIP " quic on quic-cr 2 quic-sid-len 1\n"
			   "backend add " QVIP " 10.1.0.1 quic-id 07\n"
			   "backend set " QVIP " 10.1.0.1 quic-id none\n"
			   "vip set " QVIP " quic off\n", &s, &e)) TH_LOG("%s", e.msg);
	v = xlb_state_find_vip(&s, &k);
	ASSERT_NE(NULL, v);
	EXPECT_FALSE(v->quic);
	EXPECT_EQ(0, v->quic_cr);
	EXPECT_EQ(XLB_QUIC_SID_DEFAULT, v->quic_sid_len);
	EXPECT_EQ(0, be(&s, 443, "10.1.0.1")->quic_id_len);
	ASSERT_EQ(0, xlb_config_save(&s, &t));
	EXPECT_EQ(NULL, strstr(t, "quic")) TH_LOG("%s", t);
	free(t);
	xlb_state_free(&s);
}

static const struct {
	const char *line;
	const char *msg;	/* part of the error */
	int col;		/* 1-based column of the token at fault */
} bad_lines[] = {
	{ "vip add 192.0.2.10:80/tcp quic on", "is not UDP: quic is for UDP VIPs", 27 },
	{ "vip add 192.0.2.11:443/udp quic yes", "unknown quic \"yes\"", 33 },
	{ "vip add 192.0.2.11:443/udp quic on quic-cr 7", "quic-cr 7 is out of range; use 0..6", 44 },
	{ "vip add 192.0.2.11:443/udp quic on quic-sid-len 0", "quic-sid-len 0 is out of range; use 1..15", 49 },
	{ "vip add 192.0.2.11:443/udp quic on quic-sid-len 16", "quic-sid-len 16 is out of range", 49 },
	{ "vip add 192.0.2.11:443/udp quic on quic-nonce-len 3", "quic-nonce-len 3 is out of range; use 4..18", 51 },
	{ "vip add 192.0.2.11:443/udp quic on quic-nonce-len 19", "quic-nonce-len 19 is out of range", 51 },
	{ "vip add 192.0.2.11:443/udp quic on quic-sid-len 15 quic-nonce-len 5", "a connection ID has at most 20 in all", 52 },
	{ "vip add 192.0.2.11:443/udp quic-sid-len 4", "is not marked quic: quic-cr, quic-sid-len and quic-nonce-len need quic on", 28 },
	{ "vip add 192.0.2.11:443/udp quic on quic-cr", "quic-cr needs a value: 0..6", 36 },
	{ "backend add " QVIP " 10.1.0.2 quic-id 0a0b0c", "is already backend 10.1.0.1's in VIP 192.0.2.10:443/udp", 41 },
	{ "backend add " QVIP " 10.1.0.2 quic-id 0a0b", "is 2 octets, VIP 192.0.2.10:443/udp's server IDs are 3", 41 },
	{ "backend add " QVIP " 10.1.0.2 quic-id 0a0b0", "not a server ID: 1..15 octets as an even number of hex digits", 49 },
	{ "backend add " QVIP " 10.1.0.2 quic-id 0x0b0c", "not a server ID", 49 },
	{ "backend add " QVIP " 10.1.0.2 quic-id 00112233445566778899aabbccddeeff", "not a server ID", 49 },
	{ "backend add " QVIP " 10.1.0.2 quic-id", "quic-id needs a value: a server ID", 41 },
	{ "backend add 192.0.2.10:53/udp 10.1.0.2 quic-id 0a0b0c", "but VIP 192.0.2.10:53/udp is not marked quic", 40 },
	{ "vip set " QVIP " quic off", "backend 10.1.0.1 has quic-id 0a0b0c but VIP 192.0.2.10:443/udp is not marked quic", 28 },
	{ "vip set " QVIP " quic-sid-len 4", "quic-id 0a0b0c is 3 octets", 28 },
	{ "vip add 192.0.2.11:443/udp quic-id 01", "unknown option \"quic-id\" for vip add", 28 },
	{ "backend add " QVIP " 10.1.0.2 quic on", "unknown option \"quic\" for backend add", 41 },
};

TEST(quic_bad_lines_are_refused_with_reason_and_place)
{
	struct xlb_state s, sentinel;
	struct xlb_err e;
	char text[2048], where[32];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
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
		snprintf(where, sizeof(where), "t.conf:5:%d: ", bad_lines[i].col);
		EXPECT_EQ(0, strncmp(e.msg, where, strlen(where)))
			TH_LOG("%s: %s, want %s", bad_lines[i].line, e.msg,
			       where);
		EXPECT_EQ(0, memcmp(&s, &sentinel, sizeof(s)));
	}
}

/* A refused command leaves a running state as it was. */
TEST(quic_rejected_commands_change_nothing)
{
	struct xlb_state s, before;
	struct xlb_err e = { "" };
	struct xlb_op op;
	size_t i;
	int empty;

	ASSERT_EQ(0, parse(BASE, &s, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(0, xlb_state_copy(&before, &s));
	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		if (xlb_op_parse_line(bad_lines[i].line, &op, &empty, &e))
			continue;	/* refused by the grammar */
		EXPECT_NE(0, xlb_state_apply(&s, &op, &e))
			TH_LOG("applied: %s", bad_lines[i].line);
		EXPECT_TRUE(xlb_state_equal(&s, &before))
			TH_LOG("changed by: %s", bad_lines[i].line);
	}
	xlb_state_free(&before);
	xlb_state_free(&s);
}

static size_t unhex(const char *h, __u8 *out)
{
	size_t n = strlen(h) / 2, i;
	unsigned int x;

	for (i = 0; i < n; i++) {
		sscanf(h + 2 * i, "%2x", &x);
		out[i] = (__u8)x;
	}
	return n;
}

/*
 * The draft's plaintext test vectors (draft-ietf-quic-load-balancers,
 * Appendix B "Test Vectors", "Unencrypted CIDs"):
 *   cr_bits 0, sid c4605e, nonce 4504cc4f, cid 07c4605e4504cc4f
 *   cr_bits 1, sid 350d28b420, nonce 3487d970b (as printed: 9 hex
 *     digits), cid printed with a first octet that contradicts
 *     cr_bits 1; here 2a350d28b4203487d9700b, what the draft's first
 *     octet (rotation 1, length 10) and plaintext sections make of it.
 * Read from a short header (first octet 0x41, then the CID) as the data
 * path reads it: the server ID comes out, the rotation is checked.
 */
TEST(quic_short_header_server_id_of_the_draft_vectors)
{
	static const struct {
		__u8 cr, sid_len, nonce_len;
		const char *sid, *cid;
	} vec[] = {
		{ 0, 3, 4, "c4605e", "07c4605e4504cc4f" },
		{ 1, 5, 5, "350d28b420", "2a350d28b4203487d9700b" },
	};
	__u8 pkt[64], sid[16], want[16];
	size_t i, n, len;

	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		pkt[0] = 0x41;
		n = unhex(vec[i].cid, pkt + 1);
		unhex(vec[i].sid, want);
		ASSERT_EQ(1u + vec[i].sid_len + vec[i].nonce_len, n);
		/* the first octet: rotation bits, then the length that follows */
		EXPECT_EQ(vec[i].cr, pkt[1] >> 5);
		EXPECT_EQ(n - 1, pkt[1] & 0x1f);
		len = 1 + n;
		memset(sid, 0, sizeof(sid));
		ASSERT_EQ(0, xlb_quic_short_sid(pkt, (__u32)len, vec[i].cr,
						vec[i].sid_len,
						vec[i].nonce_len, sid));
		EXPECT_EQ(0, memcmp(sid, want, vec[i].sid_len));
		/* one octet short, another rotation, a long header */
		EXPECT_EQ(-2, xlb_quic_short_sid(pkt, (__u32)len - 1, vec[i].cr,
						 vec[i].sid_len,
						 vec[i].nonce_len, sid));
		EXPECT_EQ(-3, xlb_quic_short_sid(pkt, (__u32)len,
						 (__u8)(vec[i].cr + 1),
						 vec[i].sid_len,
						 vec[i].nonce_len, sid));
		pkt[0] = 0xc1;
		EXPECT_EQ(-1, xlb_quic_short_sid(pkt, (__u32)len, vec[i].cr,
						 vec[i].sid_len,
						 vec[i].nonce_len, sid));
	}
	EXPECT_EQ(-2, xlb_quic_short_sid(pkt, 0, 0, 3, 4, sid));
}

TEST_HARNESS_MAIN
