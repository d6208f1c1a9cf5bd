/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A client of etcd's v3 API through the JSON gateway every etcd member
 * serves on its client port (etcd 3.4: POST /v3/kv/range, /v3/kv/txn,
 * /v3/watch, /v3/lease/...; keys and values in base64, 64-bit numbers as
 * strings).  libcurl carries the requests, json-c reads the answers.
 *
 * One struct xlb_etcd is one connection's worth of state: use one per
 * thread.  Requests try the endpoints in turn, starting with the last one
 * that answered, and give up after each was tried once.  Every answer is
 * parsed in full before anything of it is returned; an answer that breaks
 * the gateway's format (truncated, wrong types, missing fields, values
 * larger than the limits) is refused with -EPROTO and a sentence, never
 * half used.  The parsers are exported so tests feed them bad answers
 * without a server.
 *
 * Errors: -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH (no endpoint answered);
 * -EPROTO (a bad answer); -EFBIG (an answer above XLB_ETCD_ANSWER_MAX);
 * etcd's own refusals by their gRPC code: -EINVAL (invalid argument, e.g.
 * more operations in a transaction than --max-txn-ops), -EMSGSIZE (a
 * request above --max-request-bytes), -ERANGE (a compacted revision),
 * -ENOENT (not found, e.g. an expired lease), -EAGAIN (unavailable, no
 * leader), -EIO (anything else).  err says which endpoint and what etcd
 * said.
 */
#ifndef XLB_ETCD_H
#define XLB_ETCD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define XLB_ETCD_URLS_MAX	8
#define XLB_ETCD_URL_MAX	256
#define XLB_ETCD_KEY_MAX	1024		/* bytes of a key */
#define XLB_ETCD_VALUE_MAX	(16u << 20)	/* bytes of a value */
#define XLB_ETCD_ANSWER_MAX	(96u << 20)	/* bytes of one answer or
						 * watch message */

struct xlb_etcd_kv {
	char *key;		/* NUL-terminated; a key holding NUL is refused */
	char *value;		/* NUL-terminated too; NULL for a deletion */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

struct xlb_etcd_range {
	int64_t revision;	/* of the store when it answered */
	struct xlb_etcd_kv *kvs;
	size_t n;
	bool more;		/* a limit cut the answer short */
};

enum xlb_etcd_event_type {
	XLB_ETCD_PUT = 0,
	XLB_ETCD_DELETE = 1,
};

struct xlb_etcd_event {
	uint8_t type;		/* enum xlb_etcd_event_type */
	struct xlb_etcd_kv kv;	/* a deletion has key and mod_revision */
};

/* One message of a watch stream. */
struct xlb_etcd_watch_msg {
	int64_t revision;		/* the store's, from the header */
	bool created;			/* the watch is set up */
	bool canceled;			/* ... and is over */
	int64_t compact_revision;	/* > 0: the start revision was
					 * compacted; read everything again */
	char cancel_reason[128];
	struct xlb_etcd_event *events;	/* by revision, as etcd sent them */
	size_t n;
};

/* --- answers (no server needed) ------------------------------------------- */

int xlb_etcd_parse_range(const char *text, size_t len,
			 struct xlb_etcd_range *out, struct xlb_err *err);
/* A transaction's answer: whether its compares held, the store revision. */
int xlb_etcd_parse_txn(const char *text, size_t len, bool *succeeded,
		       int64_t *revision, struct xlb_err *err);
int xlb_etcd_parse_watch(const char *text, size_t len,
			 struct xlb_etcd_watch_msg *out, struct xlb_err *err);
/* lease/grant and lease/keepalive answers: id and TTL (0: expired). */
int xlb_etcd_parse_lease(const char *text, size_t len, int64_t *id,
			 int64_t *ttl, struct xlb_err *err);
/* An error answer ({"error", "message", "code"}) as -errno and sentence. */
int xlb_etcd_parse_error(const char *text, size_t len, struct xlb_err *err);

void xlb_etcd_range_free(struct xlb_etcd_range *r);
void xlb_etcd_watch_msg_free(struct xlb_etcd_watch_msg *m);

/* Base64 as the gateway speaks it (RFC 4648, padded). */
char *xlb_base64_encode(const void *data, size_t len);
/* Decoded bytes in malloc'd *out plus a NUL; -EINVAL if not base64. */
int xlb_base64_decode(const char *s, size_t len, char **out, size_t *out_len);

/* --- requests ------------------------------------------------------------- */

struct xlb_etcd;

/*
 * Endpoints as "http://HOST:PORT[,http://HOST:PORT...]" (at most
 * XLB_ETCD_URLS_MAX).  Nothing is contacted yet.
 */
struct xlb_etcd *xlb_etcd_open(const char *urls, struct xlb_err *err);
void xlb_etcd_close(struct xlb_etcd *e);
/* The endpoint that answered last (or will be tried first). */
const char *xlb_etcd_url(const struct xlb_etcd *e);
/* Bounds of one request (not of a watch); default 1000 and 5000 ms. */
void xlb_etcd_set_timeouts(struct xlb_etcd *e, long connect_ms,
			   long total_ms);
/*
 * While *stop is set, requests and watches in progress end with
 * -ECANCELED (libcurl checks it about once a second).
 */
void xlb_etcd_set_stop(struct xlb_etcd *e, const atomic_bool *stop);

/* Every key under prefix, at the newest revision (rev 0) or at rev. */
int xlb_etcd_range_prefix(struct xlb_etcd *e, const char *prefix,
			  int64_t rev, struct xlb_etcd_range *out,
			  struct xlb_err *err);

/* A compare of a transaction: the key's mod_revision is this (0: absent). */
struct xlb_etcd_cmp {
	const char *key;
	int64_t mod_revision;
};

/* An operation of a transaction: put value (lease 0: none), or delete. */
struct xlb_etcd_op {
	const char *key;
	const char *value;
	size_t value_len;
	int64_t lease;
	bool del;
};

/*
 * If every compare holds, do every op, all at one revision; *succeeded
 * says whether they held, *revision is the store's revision after.
 */
int xlb_etcd_txn(struct xlb_etcd *e, const struct xlb_etcd_cmp *cmps,
		 size_t n_cmps, const struct xlb_etcd_op *ops, size_t n_ops,
		 bool *succeeded, int64_t *revision, struct xlb_err *err);
int xlb_etcd_put(struct xlb_etcd *e, const char *key, const char *value,
		 size_t value_len, int64_t lease, int64_t *revision,
		 struct xlb_err *err);

int xlb_etcd_lease_grant(struct xlb_etcd *e, int64_t ttl_s, int64_t *id,
			 struct xlb_err *err);
/* *ttl_s 0: the lease is gone (expired or revoked). */
int xlb_etcd_lease_keepalive(struct xlb_etcd *e, int64_t id, int64_t *ttl_s,
			     struct xlb_err *err);
int xlb_etcd_lease_revoke(struct xlb_etcd *e, int64_t id, struct xlb_err *err);

/*
 * Called with each message of a watch stream; a non-zero return ends the
 * watch (xlb_etcd_watch returns it).  The message is freed after the call.
 */
typedef int (*xlb_etcd_watch_fn)(void *ctx,
				 const struct xlb_etcd_watch_msg *m);

/*
 * Watch every key under prefix from start_rev on (0: from now), calling fn
 * per message, until the stream ends (-ECONNRESET), fn says stop, the stop
 * flag is set (-ECANCELED), or a message is bad (-EPROTO).  The TCP
 * connection is probed by keepalives, so a vanished server ends the
 * stream within a few seconds.  A compacted start arrives as a canceled
 * message with compact_revision > 0, handed to fn like any other.
 */
int xlb_etcd_watch(struct xlb_etcd *e, const char *prefix, int64_t start_rev,
		   xlb_etcd_watch_fn fn, void *ctx, struct xlb_err *err);

/* The end of a prefix's range: prefix with its last byte incremented. */
int xlb_etcd_prefix_end(const char *prefix, char *out, size_t len);

#endif /* XLB_ETCD_H */
