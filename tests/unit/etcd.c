// SPDX-License-Identifier: GPL-2.0
/*
 * The etcd gateway client's reading of answers, without a server: good
 * answers give their keys, values and revisions; truncated JSON, wrong
 * types, missing fields, bad base64, keys with NUL, values above the limit,
 * events out of order and etcd's error answers are refused with -errno and
 * a sentence that says what was wrong, and nothing half-parsed comes back.
 * Requests against a real etcd are the daemon tier's (tests/daemon/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "etcd.h"

#define HDR	"\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"7\",\"raft_term\":\"2\"}"
/* "/xlb/c/a" and "hello", "/xlb/c/b" */
#define KA	"L3hsYi9jL2E="
#define VA	"aGVsbG8="
#define KB	"L3hsYi9jL2I="
#define KV_A	"{\"key\":\"" KA "\",\"create_revision\":\"3\",\"mod_revision\":\"5\"," \
		"\"version\":\"2\",\"value\":\"" VA "\"}"

static int range(const char *t, struct xlb_etcd_range *r, struct xlb_err *e)
{
	memset(r, 0, sizeof(*r));
	return xlb_etcd_parse_range(t, strlen(t), r, e);
}

static int watch(const char *t, struct xlb_etcd_watch_msg *m,
		 struct xlb_err *e)
{
	memset(m, 0, sizeof(*m));
	return xlb_etcd_parse_watch(t, strlen(t), m, e);
}

TEST(base64_round_trip)
{
	static const char in[] = "\x00\x01\xfe\xffxlb etcd";
	size_t len, n;

	for (len = 0; len < sizeof(in); len++) {
		char *enc = xlb_base64_encode(in, len), *dec;

		ASSERT_NE(NULL, enc);
		ASSERT_EQ((len + 2) / 3 * 4, strlen(enc));
		ASSERT_EQ(0, xlb_base64_decode(enc, strlen(enc), &dec, &n));
		ASSERT_EQ(len, n);
		ASSERT_EQ(0, memcmp(in, dec, len));
		ASSERT_EQ(0, dec[n]);
		free(enc);
		free(dec);
	}
}

TEST(base64_bad_forms_refused)
{
	static const char *const bad[] = {
		"a", "abc", "ab=c", "a===", "=abc", "ab c", "ab\"c", "abcd=",
		"ab==abcd", "abc-", "====",
	};
	size_t i, n;
	char *out;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, xlb_base64_decode(bad[i], strlen(bad[i]),
						     &out, &n)) {
			TH_LOG("bad form %zu was accepted", i);
		}
}

TEST(range_gives_keys_values_revisions)
{
	struct xlb_etcd_range r;
	struct xlb_err e = { "" };

	ASSERT_EQ(0, range("{" HDR ",\"kvs\":[" KV_A ",{\"key\":\"" KB
			   "\",\"mod_revision\":\"7\",\"lease\":\"99\"}],\"count\":\"2\"}",
			   &r, &e));
	ASSERT_EQ(7, r.revision);
	ASSERT_EQ(2, r.n);
	EXPECT_FALSE(r.more);
	EXPECT_STREQ("/xlb/c/a", r.kvs[0].key);
	EXPECT_STREQ("hello", r.kvs[0].value);
	EXPECT_EQ(5, r.kvs[0].value_len);
	EXPECT_EQ(3, r.kvs[0].create_revision);
	EXPECT_EQ(5, r.kvs[0].mod_revision);
	EXPECT_EQ(2, r.kvs[0].version);
	/* an empty value is left out by the gateway */
	EXPECT_STREQ("/xlb/c/b", r.kvs[1].key);
	EXPECT_STREQ("", r.kvs[1].value);
	EXPECT_EQ(0, r.kvs[1].value_len);
	EXPECT_EQ(99, r.kvs[1].lease);
	xlb_etcd_range_free(&r);

	/* nothing under the prefix: no "kvs" at all */
	ASSERT_EQ(0, range("{" HDR "}", &r, &e));
	EXPECT_EQ(0, r.n);
	EXPECT_EQ(7, r.revision);
	xlb_etcd_range_free(&r);
}

/* Bad range answers: each refused with its errno and words in the sentence. */
static const struct {
	const char *text;
	int ret;
	const char *says;
} bad_ranges[] = {
	{ "{" HDR ",\"kvs\":[" KV_A, -EPROTO, "ends too early" },
	{ "", -EPROTO, "not JSON" },
	{ "[]", -EPROTO, "not a JSON object" },
	{ "{" HDR "} x", -EPROTO, "not JSON" },
	{ "{\"kvs\":[]}", -EPROTO, "no \"header\"" },
	{ "{\"header\":[]}", -EPROTO, "\"header\" is not an object" },
	{ "{\"header\":{\"revision\":{}}}", -EPROTO, "\"revision\" is not a number" },
	{ "{\"header\":{\"revision\":\"7x\"}}", -EPROTO, "not a number" },
	{ "{\"header\":{\"revision\":\"-3\"}}", -EPROTO, "negative" },
	{ "{\"header\":{\"revision\":\"99999999999999999999\"}}", -EPROTO, "not a number" },
	{ "{" HDR ",\"kvs\":{}}", -EPROTO, "\"kvs\" is not an array" },
	{ "{" HDR ",\"kvs\":[7]}", -EPROTO, "not an object" },
	{ "{" HDR ",\"kvs\":[{\"mod_revision\":\"5\"}]}", -EPROTO, "no \"key\"" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"" KA "\"}]}", -EPROTO, "no \"mod_revision\"" },
	{ "{" HDR ",\"kvs\":[{\"key\":5,\"mod_revision\":\"5\"}]}", -EPROTO, "\"key\" is not a string" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"L3g*\",\"mod_revision\":\"5\"}]}", -EPROTO, "not base64" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"\",\"mod_revision\":\"5\"}]}", -EPROTO, "empty" },
	/* "/\0x" */
	{ "{" HDR ",\"kvs\":[{\"key\":\"LwB4\",\"mod_revision\":\"5\"}]}", -EPROTO, "NUL" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"" KA "\",\"mod_revision\":\"0\"}]}", -EPROTO, "mod_revision 0" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"" KA "\",\"mod_revision\":\"8\"}]}", -EPROTO, "after the store's" },
	{ "{" HDR ",\"kvs\":[{\"key\":\"" KA "\",\"mod_revision\":\"5\",\"value\":true}]}", -EPROTO, "\"value\" is not a string" },
	{ "{" HDR ",\"more\":\"yes\"}", -EPROTO, "not true or false" },
	{ "{" HDR ",\"kvs\":[" KV_A "],\"count\":\"0\"}", -EPROTO, "count" },
	{ "{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}", -ERANGE, "compacted" },
	{ "{\"error\":\"grpc: received message larger than max\",\"code\":8}", -EMSGSIZE, "larger than max" },
	{ "{\"error\":\"etcdserver: too many operations in txn request\",\"code\":3}", -EINVAL, "too many operations" },
	{ "{\"error\":\"etcdserver: no leader\",\"code\":14}", -EAGAIN, "unavailable" },
	{ "{\"error\":\"odd\",\"code\":13}", -EIO, "code 13" },
};

TEST(range_bad_answers_refused)
{
	struct xlb_etcd_range r;
	size_t i;

	for (i = 0; i < sizeof(bad_ranges) / sizeof(bad_ranges[0]); i++) {
		struct xlb_err e = { "" };

		EXPECT_EQ(bad_ranges[i].ret, range(bad_ranges[i].text, &r, &e)) {
			TH_LOG("answer %zu: %s", i, bad_ranges[i].text);
		}
		EXPECT_NE(NULL, strstr(e.msg, bad_ranges[i].says)) {
			TH_LOG("answer %zu: \"%s\" does not say \"%s\"", i,
			       e.msg, bad_ranges[i].says);
		}
		/* nothing comes back from a refused answer */
		EXPECT_EQ(NULL, r.kvs);
		EXPECT_EQ(0, r.n);
	}
}

/* A value of limit + extra bytes, as base64 in a range answer. */
static char *answer_with_value(size_t bytes)
{
	char *raw = malloc(bytes), *b, *t;

	if (!raw)
		return NULL;
	memset(raw, 'x', bytes);
	b = xlb_base64_encode(raw, bytes);
	free(raw);
	if (!b)
		return NULL;
	t = malloc(strlen(b) + 256);
	if (t)
		sprintf(t, "{" HDR ",\"kvs\":[{\"key\":\"" KA
			"\",\"mod_revision\":\"5\",\"value\":\"%s\"}]}", b);
	free(b);
	return t;
}

TEST(range_value_at_the_limit_kept_above_refused)
{
	struct xlb_etcd_range r;
	struct xlb_err e = { "" };
	char *t;

	t = answer_with_value(XLB_ETCD_VALUE_MAX);
	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, range(t, &r, &e)) TH_LOG("%s", e.msg);
	EXPECT_EQ(XLB_ETCD_VALUE_MAX, r.kvs[0].value_len);
	xlb_etcd_range_free(&r);
	free(t);

	t = answer_with_value(XLB_ETCD_VALUE_MAX + 1);
	ASSERT_NE(NULL, t);
	EXPECT_EQ(-EFBIG, range(t, &r, &e));
	EXPECT_NE(NULL, strstr(e.msg, "the limit is"));
	EXPECT_EQ(NULL, r.kvs);
	free(t);
}

TEST(txn_succeeded_or_not)
{
	struct xlb_err e = { "" };
	int64_t rev;
	bool ok;

#define TXN(t) xlb_etcd_parse_txn(t, strlen(t), &ok, &rev, &e)
	ASSERT_EQ(0, TXN("{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"7\"}}}]}"));
	EXPECT_TRUE(ok);
	EXPECT_EQ(7, rev);
	/* a failed compare: "succeeded" is left out */
	ASSERT_EQ(0, TXN("{" HDR "}"));
	EXPECT_FALSE(ok);
	EXPECT_EQ(-EPROTO, TXN("{" HDR ",\"succeeded\":1}"));
	EXPECT_EQ(-EPROTO, TXN("{\"succeeded\":true}"));
	EXPECT_EQ(-EPROTO, TXN("{\"header\":{},\"succeeded\":true}"));
	EXPECT_NE(NULL, strstr(e.msg, "no revision"));
	EXPECT_EQ(-EPROTO, TXN("{" HDR ",\"succeeded\":true,\"responses\":{}}"));
	EXPECT_EQ(-EMSGSIZE, TXN("{\"error\":\"etcdserver: request is too large\",\"message\":\"etcdserver: request is too large\",\"code\":8}"));
	EXPECT_NE(NULL, strstr(e.msg, "request is too large"));
#undef TXN
}

TEST(watch_events_in_order)
{
	struct xlb_etcd_watch_msg m;
	struct xlb_err e = { "" };

	ASSERT_EQ(0, watch("{\"result\":{" HDR ",\"created\":true}}", &m, &e));
	EXPECT_TRUE(m.created);
	EXPECT_EQ(0, m.n);
	EXPECT_EQ(7, m.revision);
	xlb_etcd_watch_msg_free(&m);

	ASSERT_EQ(0, watch("{\"result\":{" HDR ",\"events\":[{\"kv\":" KV_A "},"
			   "{\"type\":\"DELETE\",\"kv\":{\"key\":\"" KB "\",\"mod_revision\":\"6\"}}]}}",
			   &m, &e)) TH_LOG("%s", e.msg);
	ASSERT_EQ(2, m.n);
	EXPECT_EQ(XLB_ETCD_PUT, m.events[0].type);
	EXPECT_STREQ("hello", m.events[0].kv.value);
	EXPECT_EQ(XLB_ETCD_DELETE, m.events[1].type);
	EXPECT_STREQ("/xlb/c/b", m.events[1].kv.key);
	EXPECT_EQ(NULL, m.events[1].kv.value);
	EXPECT_EQ(6, m.events[1].kv.mod_revision);
	xlb_etcd_watch_msg_free(&m);

	ASSERT_EQ(0, watch("{\"result\":{\"header\":{\"raft_term\":\"2\"},\"canceled\":true,\"compact_revision\":\"4\"}}",
			   &m, &e));
	EXPECT_TRUE(m.canceled);
	EXPECT_EQ(4, m.compact_revision);
	xlb_etcd_watch_msg_free(&m);
}

static const struct {
	const char *text;
	int ret;
	const char *says;
} bad_watches[] = {
	{ "{\"result\":{" HDR ",\"events\":[{\"kv\":" KV_A "}", -EPROTO, "ends too early" },
	{ "{" HDR "}", -EPROTO, "no \"result\"" },
	{ "{\"result\":[]}", -EPROTO, "\"result\" is not an object" },
	{ "{\"result\":{\"events\":[]}}", -EPROTO, "no \"header\"" },
	{ "{\"result\":{" HDR ",\"events\":[{\"type\":\"TOUCH\",\"kv\":" KV_A "}]}}", -EPROTO, "unknown event type" },
	{ "{\"result\":{" HDR ",\"events\":[{\"type\":3,\"kv\":" KV_A "}]}}", -EPROTO, "not a string" },
	{ "{\"result\":{" HDR ",\"events\":[{}]}}", -EPROTO, "no \"kv\"" },
	{ "{\"result\":{" HDR ",\"events\":[{\"kv\":[]}]}}", -EPROTO, "not an object" },
	{ "{\"result\":{" HDR ",\"events\":[{\"kv\":{\"key\":\"" KB "\",\"mod_revision\":\"6\"}},{\"kv\":" KV_A "}]}}", -EPROTO, "out of revision order" },
	{ "{\"result\":{\"header\":{\"revision\":\"4\"},\"events\":[{\"kv\":" KV_A "}]}}", -EPROTO, "after the header" },
	{ "{\"result\":{" HDR ",\"created\":\"true\"}}", -EPROTO, "not true or false" },
	{ "{\"result\":{" HDR ",\"compact_revision\":[]}}", -EPROTO, "not a number" },
	{ "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\"}}", -EAGAIN, "no leader" },
};

TEST(watch_bad_answers_refused)
{
	struct xlb_etcd_watch_msg m;
	size_t i;

	for (i = 0; i < sizeof(bad_watches) / sizeof(bad_watches[0]); i++) {
		struct xlb_err e = { "" };

		EXPECT_EQ(bad_watches[i].ret, watch(bad_watches[i].text, &m, &e)) {
			TH_LOG("message %zu: %s", i, bad_watches[i].text);
		}
		EXPECT_NE(NULL, strstr(e.msg, bad_watches[i].says)) {
			TH_LOG("message %zu: \"%s\" does not say \"%s\"", i,
			       e.msg, bad_watches[i].says);
		}
		EXPECT_EQ(NULL, m.events);
	}
}

TEST(lease_answers)
{
	struct xlb_err e = { "" };
	int64_t id, ttl;

#define LEASE(t) xlb_etcd_parse_lease(t, strlen(t), &id, &ttl, &e)
	ASSERT_EQ(0, LEASE("{" HDR ",\"ID\":\"4111120416594861066\",\"TTL\":\"5\"}"));
	EXPECT_EQ(4111120416594861066ll, id);
	EXPECT_EQ(5, ttl);
	ASSERT_EQ(0, LEASE("{\"result\":{" HDR ",\"ID\":\"42\",\"TTL\":\"3\"}}"));
	EXPECT_EQ(42, id);
	EXPECT_EQ(3, ttl);
	/* an expired lease: keepalive answers without a TTL */
	ASSERT_EQ(0, LEASE("{\"result\":{" HDR ",\"ID\":\"42\"}}"));
	EXPECT_EQ(0, ttl);
	EXPECT_EQ(-EPROTO, LEASE("{\"result\":{" HDR ",\"TTL\":\"3\"}}"));
	EXPECT_NE(NULL, strstr(e.msg, "no \"ID\""));
	EXPECT_EQ(-EPROTO, LEASE("{\"result\":{" HDR ",\"ID\":\"42\",\"TTL\":\"-1\"}}"));
	EXPECT_EQ(-EPROTO, LEASE("{\"result\":\"x\"}"));
	EXPECT_EQ(-ENOENT, LEASE("{\"error\":\"etcdserver: requested lease not found\",\"code\":5}"));
	EXPECT_NE(NULL, strstr(e.msg, "lease not found"));
#undef LEASE
}

TEST(error_answers)
{
	struct xlb_err e = { "" };
	const char *t = "{\"error\":\"etcdserver: request timed out\",\"code\":4}";

	EXPECT_EQ(-ETIMEDOUT, xlb_etcd_parse_error(t, strlen(t), &e));
	EXPECT_NE(NULL, strstr(e.msg, "request timed out"));
	t = "{" HDR "}";
	EXPECT_EQ(-EPROTO, xlb_etcd_parse_error(t, strlen(t), &e));
	t = "Not Found";
	EXPECT_EQ(-EPROTO, xlb_etcd_parse_error(t, strlen(t), &e));
}

TEST(endpoints_checked)
{
	struct xlb_err e = { "" };
	struct xlb_etcd *c;
	char end[16];

	c = xlb_etcd_open("http://10.0.0.1:2379,http://[fd00::1]:2379", &e);
	ASSERT_NE(NULL, c) TH_LOG("%s", e.msg);
	EXPECT_STREQ("http://10.0.0.1:2379", xlb_etcd_url(c));
	xlb_etcd_close(c);
	EXPECT_EQ(NULL, xlb_etcd_open("", &e));
	EXPECT_NE(NULL, strstr(e.msg, "no etcd endpoint"));
	EXPECT_EQ(NULL, xlb_etcd_open("https://10.0.0.1:2379", &e));
	EXPECT_NE(NULL, strstr(e.msg, "not http://HOST:PORT"));
	EXPECT_EQ(NULL, xlb_etcd_open("http://10.0.0.1:2379/v3", &e));
	EXPECT_EQ(NULL, xlb_etcd_open("http://a:1,,http://b:2", &e));
	EXPECT_EQ(NULL, xlb_etcd_open("http://a:1,http://a:1,http://a:1,http://a:1,"
				      "http://a:1,http://a:1,http://a:1,http://a:1,http://a:1", &e));
	EXPECT_NE(NULL, strstr(e.msg, "more than 8"));

	ASSERT_EQ(0, xlb_etcd_prefix_end("/xlb/c/", end, sizeof(end)));
	EXPECT_STREQ("/xlb/c0", end);
	EXPECT_EQ(-EINVAL, xlb_etcd_prefix_end("", end, sizeof(end)));
}

TEST_HARNESS_MAIN
