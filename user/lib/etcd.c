// SPDX-License-Identifier: GPL-2.0
/*
 * etcd's v3 JSON gateway (user/lib/etcd.h): requests built with json-c,
 * carried by libcurl, answers checked field by field before use.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "etcd.h"

struct xlb_etcd {
	CURL *curl;
	char urls[XLB_ETCD_URLS_MAX][XLB_ETCD_URL_MAX];
	size_t n_urls;
	size_t cur;			/* the endpoint tried first */
	long connect_ms, total_ms;
	const atomic_bool *stop;
};

/* --- base64 --------------------------------------------------------------- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *xlb_base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
			     p[i + 2];

		*o++ = b64[v >> 18];
		*o++ = b64[v >> 12 & 63];
		*o++ = b64[v >> 6 & 63];
		*o++ = b64[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		*o++ = b64[v >> 18];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
		*o++ = '=';
	}
	*o = 0;
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

int xlb_base64_decode(const char *s, size_t len, char **out, size_t *out_len)
{
	size_t i, pad = 0, n;
	unsigned char *o, *p;

	if (len % 4)
		return -EINVAL;
	if (len && s[len - 1] == '=')
		pad++;
	if (len > 1 && s[len - 2] == '=')
		pad++;
	n = len / 4 * 3 - pad;
	o = malloc(n + 1);
	if (!o)
		return -ENOMEM;
	p = o;
	for (i = 0; i < len; i += 4) {
		int v[4], k;
		bool last = i + 4 == len;

		for (k = 0; k < 4; k++) {
			v[k] = b64_val(s[i + k]);
			if (v[k] < 0 && !(last && s[i + k] == '=' &&
					  k >= 4 - (int)pad))
				goto bad;
			if (v[k] < 0)
				v[k] = 0;
		}
		*p++ = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (!last || pad < 2)
			*p++ = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (!last || pad < 1)
			*p++ = (unsigned char)(v[2] << 6 | v[3]);
	}
	o[n] = 0;
	*out = (char *)o;
	*out_len = n;
	return 0;
bad:
	free(o);
	return -EINVAL;
}

/* --- answers -------------------------------------------------------------- */

/* Parse text as exactly one JSON object. */
static json_object *parse_object(const char *text, size_t len,
				 const char *what, struct xlb_err *err)
{
	struct json_tokener *tok;
	json_object *o;

	if (len > XLB_ETCD_ANSWER_MAX) {
		xlb_errf(err, EFBIG, "%s answer of %zu bytes; the limit is %u",
			 what, len, XLB_ETCD_ANSWER_MAX);
		return NULL;
	}
	tok = json_tokener_new_ex(64);
	if (!tok) {
		xlb_errf(err, ENOMEM, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		xlb_errf(err, EPROTO, "%s answer is not JSON: %s", what,
			 je == json_tokener_continue ? "it ends too early" :
			 !o ? json_tokener_error_desc(je) :
			 "text after the object");
		json_object_put(o);
		o = NULL;
	} else if (!json_object_is_type(o, json_type_object)) {
		xlb_errf(err, EPROTO, "%s answer is not a JSON object", what);
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/*
 * A 64-bit number as the gateway writes it: a string of digits (or, from
 * other encoders, a JSON integer).  Absent: *v = 0, unless required.
 */
static int get_i64(json_object *o, const char *name, bool required,
		   int64_t *v, const char *what, struct xlb_err *err)
{
	json_object *f;
	const char *s;
	char *end;
	long long x;

	*v = 0;
	if (!json_object_object_get_ex(o, name, &f) ||
	    json_object_is_type(f, json_type_null)) {
		if (!required)
			return 0;
		return xlb_errf(err, EPROTO, "%s answer has no \"%s\"", what,
				name);
	}
	if (json_object_is_type(f, json_type_int)) {
		*v = json_object_get_int64(f);
		return 0;
	}
	if (!json_object_is_type(f, json_type_string))
		return xlb_errf(err, EPROTO,
				"%s answer: \"%s\" is not a number", what, name);
	s = json_object_get_string(f);
	errno = 0;
	x = strtoll(s, &end, 10);
	if (!*s || *end || errno || (*s < '0' && *s != '-') || *s > '9')
		return xlb_errf(err, EPROTO,
				"%s answer: \"%s\" is \"%.24s\", not a number",
				what, name, s);
	*v = x;
	return 0;
}

static int get_bool(json_object *o, const char *name, bool *v,
		    const char *what, struct xlb_err *err)
{
	json_object *f;

	*v = false;
	if (!json_object_object_get_ex(o, name, &f) ||
	    json_object_is_type(f, json_type_null))
		return 0;
	if (!json_object_is_type(f, json_type_boolean))
		return xlb_errf(err, EPROTO,
				"%s answer: \"%s\" is not true or false", what,
				name);
	*v = json_object_get_boolean(f);
	return 0;
}

/* An optional member that must be an object (or array) when present. */
static int get_typed(json_object *o, const char *name, json_type type,
		     json_object **v, const char *what, struct xlb_err *err)
{
	*v = NULL;
	if (!json_object_object_get_ex(o, name, v) ||
	    json_object_is_type(*v, json_type_null)) {
		*v = NULL;
		return 0;
	}
	if (!json_object_is_type(*v, type))
		return xlb_errf(err, EPROTO, "%s answer: \"%s\" is not %s",
				what, name, type == json_type_array ?
				"an array" : "an object");
	return 0;
}

/* The header's revision, which every answer of the store carries. */
static int header_revision(json_object *o, int64_t *rev, const char *what,
			   struct xlb_err *err)
{
	json_object *h;
	int ret;

	ret = get_typed(o, "header", json_type_object, &h, what, err);
	if (ret)
		return ret;
	if (!h)
		return xlb_errf(err, EPROTO, "%s answer has no \"header\"",
				what);
	ret = get_i64(h, "revision", false, rev, what, err);
	if (!ret && *rev < 0)
		ret = xlb_errf(err, EPROTO, "%s answer: revision %" PRId64
			       " is negative", what, *rev);
	return ret;
}

/* A base64 field into malloc'd bytes; absent is empty. */
static int get_b64(json_object *o, const char *name, size_t max, char **out,
		   size_t *len, const char *what, struct xlb_err *err)
{
	json_object *f;
	size_t slen;
	int ret;

	*out = NULL;
	*len = 0;
	if (!json_object_object_get_ex(o, name, &f) ||
	    json_object_is_type(f, json_type_null)) {
		*out = strdup("");
		return *out ? 0 : xlb_errf(err, ENOMEM, "out of memory");
	}
	if (!json_object_is_type(f, json_type_string))
		return xlb_errf(err, EPROTO, "%s answer: \"%s\" is not a string",
				what, name);
	slen = (size_t)json_object_get_string_len(f);
	if (slen / 4 * 3 > max + 2)
		return xlb_errf(err, EFBIG,
				"%s answer: a %s of about %zu bytes; the limit is %zu",
				what, name, slen / 4 * 3, max);
	ret = xlb_base64_decode(json_object_get_string(f), slen, out, len);
	if (ret == -ENOMEM)
		return xlb_errf(err, ENOMEM, "out of memory");
	if (ret)
		return xlb_errf(err, EPROTO, "%s answer: \"%s\" is not base64",
				what, name);
	if (*len > max) {
		free(*out);
		*out = NULL;
		return xlb_errf(err, EFBIG,
				"%s answer: a %s of %zu bytes; the limit is %zu",
				what, name, *len, max);
	}
	return 0;
}

static void kv_free(struct xlb_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

static int parse_kv(json_object *o, bool with_value, struct xlb_etcd_kv *kv,
		    const char *what, struct xlb_err *err)
{
	size_t klen;
	int ret;

	memset(kv, 0, sizeof(*kv));
	if (!json_object_is_type(o, json_type_object))
		return xlb_errf(err, EPROTO, "%s answer: a key-value is not an object",
				what);
	if (!json_object_object_get_ex(o, "key", NULL))
		return xlb_errf(err, EPROTO, "%s answer: a key-value has no \"key\"",
				what);
	ret = get_b64(o, "key", XLB_ETCD_KEY_MAX, &kv->key, &klen, what, err);
	if (!ret && (!klen || strlen(kv->key) != klen))
		ret = xlb_errf(err, EPROTO,
			       "%s answer: a key is empty or holds a NUL byte",
			       what);
	if (!ret && with_value)
		ret = get_b64(o, "value", XLB_ETCD_VALUE_MAX, &kv->value,
			      &kv->value_len, what, err);
	if (!ret)
		ret = get_i64(o, "create_revision", false, &kv->create_revision,
			      what, err);
	if (!ret)
		ret = get_i64(o, "mod_revision", true, &kv->mod_revision, what,
			      err);
	if (!ret)
		ret = get_i64(o, "version", false, &kv->version, what, err);
	if (!ret)
		ret = get_i64(o, "lease", false, &kv->lease, what, err);
	if (!ret && kv->mod_revision <= 0)
		ret = xlb_errf(err, EPROTO,
			       "%s answer: key %.80s has mod_revision %" PRId64,
			       what, kv->key, kv->mod_revision);
	if (ret)
		kv_free(kv);
	return ret;
}

/* An error answer inside o, if it is one: -errno, else 0. */
static int error_of(json_object *o, struct xlb_err *err)
{
	json_object *m, *c;
	const char *msg = "no message";
	int64_t code = 2;

	if (!json_object_object_get_ex(o, "error", &m))
		return 0;
	if (json_object_is_type(m, json_type_object)) {	/* in a stream */
		o = m;
		json_object_object_get_ex(o, "message", &m);
	} else if (json_object_object_get_ex(o, "message", &c)) {
		m = c;
	}
	if (m && json_object_is_type(m, json_type_string))
		msg = json_object_get_string(m);
	/* "code" in answers, "grpc_code" in streams */
	if ((json_object_object_get_ex(o, "code", &c) ||
	     json_object_object_get_ex(o, "grpc_code", &c)) &&
	    json_object_is_type(c, json_type_int))
		code = json_object_get_int64(c);
	switch (code) {
	case 3:		/* InvalidArgument */
		return xlb_errf(err, EINVAL, "etcd refused: %.200s", msg);
	case 4:		/* DeadlineExceeded */
		return xlb_errf(err, ETIMEDOUT, "etcd timed out: %.200s", msg);
	case 5:		/* NotFound */
		return xlb_errf(err, ENOENT, "etcd: %.200s", msg);
	case 8:		/* ResourceExhausted */
		return xlb_errf(err, EMSGSIZE, "etcd refused: %.200s", msg);
	case 11:	/* OutOfRange */
		return xlb_errf(err, ERANGE, "etcd: %.200s", msg);
	case 14:	/* Unavailable */
		return xlb_errf(err, EAGAIN, "etcd is unavailable: %.200s",
				msg);
	}
	return xlb_errf(err, EIO, "etcd error (code %" PRId64 "): %.200s",
			code, msg);
}

int xlb_etcd_parse_error(const char *text, size_t len, struct xlb_err *err)
{
	json_object *o = parse_object(text, len, "etcd", err);
	int ret;

	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	json_object_put(o);
	return ret ? ret : xlb_errf(err, EPROTO, "etcd answer is not an error");
}

void xlb_etcd_range_free(struct xlb_etcd_range *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		kv_free(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

int xlb_etcd_parse_range(const char *text, size_t len,
			 struct xlb_etcd_range *out, struct xlb_err *err)
{
	json_object *o = parse_object(text, len, "range", err), *a;
	struct xlb_etcd_range r = { 0 };
	int64_t count;
	size_t i, n;
	int ret;

	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	if (!ret)
		ret = header_revision(o, &r.revision, "range", err);
	if (!ret)
		ret = get_typed(o, "kvs", json_type_array, &a, "range", err);
	if (!ret)
		ret = get_bool(o, "more", &r.more, "range", err);
	if (!ret)
		ret = get_i64(o, "count", false, &count, "range", err);
	if (ret)
		goto out;
	n = a ? json_object_array_length(a) : 0;
	r.kvs = calloc(n ? n : 1, sizeof(*r.kvs));
	if (!r.kvs) {
		ret = xlb_errf(err, ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		ret = parse_kv(json_object_array_get_idx(a, i), true,
			       &r.kvs[i], "range", err);
		if (ret)
			goto out;
		r.n++;
		if (r.kvs[i].mod_revision > r.revision) {
			ret = xlb_errf(err, EPROTO,
				       "range answer: key %.80s at revision %" PRId64 " after the store's %" PRId64,
				       r.kvs[i].key, r.kvs[i].mod_revision,
				       r.revision);
			goto out;
		}
	}
	if (json_object_object_get_ex(o, "count", NULL) && (int64_t)n > count) {
		ret = xlb_errf(err, EPROTO,
			       "range answer: %zu keys but a count of %" PRId64,
			       n, count);
		goto out;
	}
	*out = r;
	memset(&r, 0, sizeof(r));
out:
	xlb_etcd_range_free(&r);
	json_object_put(o);
	return ret;
}

int xlb_etcd_parse_txn(const char *text, size_t len, bool *succeeded,
		       int64_t *revision, struct xlb_err *err)
{
	json_object *o = parse_object(text, len, "txn", err), *a;
	int ret;

	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	if (!ret)
		ret = header_revision(o, revision, "txn", err);
	if (!ret)
		ret = get_bool(o, "succeeded", succeeded, "txn", err);
	if (!ret)
		ret = get_typed(o, "responses", json_type_array, &a, "txn",
				err);
	if (!ret && !*revision)
		ret = xlb_errf(err, EPROTO, "txn answer has no revision");
	json_object_put(o);
	return ret;
}

void xlb_etcd_watch_msg_free(struct xlb_etcd_watch_msg *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		kv_free(&m->events[i].kv);
	free(m->events);
	memset(m, 0, sizeof(*m));
}

static int parse_event(json_object *ev, struct xlb_etcd_event *out,
		       struct xlb_err *err)
{
	json_object *t, *kv;
	const char *type = "PUT";
	int ret;

	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(ev, json_type_object))
		return xlb_errf(err, EPROTO, "watch answer: an event is not an object");
	if (json_object_object_get_ex(ev, "type", &t)) {
		if (!json_object_is_type(t, json_type_string))
			return xlb_errf(err, EPROTO,
					"watch answer: an event's \"type\" is not a string");
		type = json_object_get_string(t);
	}
	if (!strcmp(type, "PUT"))
		out->type = XLB_ETCD_PUT;
	else if (!strcmp(type, "DELETE"))
		out->type = XLB_ETCD_DELETE;
	else
		return xlb_errf(err, EPROTO,
				"watch answer: unknown event type \"%.20s\"",
				type);
	ret = get_typed(ev, "kv", json_type_object, &kv, "watch", err);
	if (ret)
		return ret;
	if (!kv)
		return xlb_errf(err, EPROTO, "watch answer: an event has no \"kv\"");
	return parse_kv(kv, out->type == XLB_ETCD_PUT, &out->kv, "watch", err);
}

static int parse_watch_result(json_object *r, struct xlb_etcd_watch_msg *m,
			      struct xlb_err *err)
{
	json_object *a, *reason;
	int64_t last = 0;
	size_t i, n;
	int ret;

	ret = get_typed(r, "header", json_type_object, &a, "watch", err);
	if (!ret && !a)
		ret = xlb_errf(err, EPROTO, "watch answer has no \"header\"");
	if (!ret)
		ret = get_i64(a, "revision", false, &m->revision, "watch", err);
	if (!ret)
		ret = get_bool(r, "created", &m->created, "watch", err);
	if (!ret)
		ret = get_bool(r, "canceled", &m->canceled, "watch", err);
	if (!ret)
		ret = get_i64(r, "compact_revision", false,
			      &m->compact_revision, "watch", err);
	if (!ret)
		ret = get_typed(r, "events", json_type_array, &a, "watch", err);
	if (ret)
		return ret;
	if (json_object_object_get_ex(r, "cancel_reason", &reason) &&
	    json_object_is_type(reason, json_type_string))
		snprintf(m->cancel_reason, sizeof(m->cancel_reason), "%s",
			 json_object_get_string(reason));
	n = a ? json_object_array_length(a) : 0;
	m->events = calloc(n ? n : 1, sizeof(*m->events));
	if (!m->events)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		ret = parse_event(json_object_array_get_idx(a, i),
				  &m->events[i], err);
		if (ret)
			return ret;
		m->n++;
		if (m->events[i].kv.mod_revision < last)
			return xlb_errf(err, EPROTO,
					"watch answer: events out of revision order");
		last = m->events[i].kv.mod_revision;
	}
	if (n && last > m->revision && m->revision)
		return xlb_errf(err, EPROTO,
				"watch answer: an event at revision %" PRId64 " after the header's %" PRId64,
				last, m->revision);
	return 0;
}

int xlb_etcd_parse_watch(const char *text, size_t len,
			 struct xlb_etcd_watch_msg *out, struct xlb_err *err)
{
	json_object *o = parse_object(text, len, "watch", err), *r;
	struct xlb_etcd_watch_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	if (!ret)
		ret = get_typed(o, "result", json_type_object, &r, "watch", err);
	if (!ret && !r)
		ret = xlb_errf(err, EPROTO, "watch answer has no \"result\"");
	if (!ret)
		ret = parse_watch_result(r, &m, err);
	json_object_put(o);
	if (ret) {
		xlb_etcd_watch_msg_free(&m);
		return ret;
	}
	*out = m;
	return 0;
}

int xlb_etcd_parse_lease(const char *text, size_t len, int64_t *id,
			 int64_t *ttl, struct xlb_err *err)
{
	json_object *o = parse_object(text, len, "lease", err), *r;
	int ret;

	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	/* keepalive answers come inside "result", grant answers do not */
	if (!ret)
		ret = get_typed(o, "result", json_type_object, &r, "lease",
				err);
	if (!ret && !r)
		r = o;
	if (!ret)
		ret = get_i64(r, "ID", true, id, "lease", err);
	if (!ret)
		ret = get_i64(r, "TTL", false, ttl, "lease", err);
	if (!ret && (*ttl < 0 || *id == 0))
		ret = xlb_errf(err, EPROTO,
			       "lease answer: ID %" PRId64 " with TTL %" PRId64,
			       *id, *ttl);
	json_object_put(o);
	return ret;
}

/* --- transport ------------------------------------------------------------ */

/*
 * libcurl is loaded when the first etcd handle opens, not linked: only a
 * daemon in a cluster talks to etcd, and the library with what it brings
 * (TLS, Kerberos, LDAP, SSH: half the libraries xlbd would load)
 * cost every start of xlbd the time to load them.
 */
#define CURL_SONAME "libcurl.so.4"

static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *cu);
	void (*easy_reset)(CURL *cu);
	CURLcode (*easy_setopt)(CURL *cu, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *cu);
	CURLcode (*easy_getinfo)(CURL *cu, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode c);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} cu;
static char cu_failed[256];	/* why it could not be loaded, or "" */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static int cu_sym(void *lib, const char *name, void *fn)
{
	void *p = dlsym(lib, name);

	if (!p) {
		snprintf(cu_failed, sizeof(cu_failed),
			 "cannot use %s: no %s", CURL_SONAME, name);
		return -1;
	}
	memcpy(fn, &p, sizeof(p));	/* a function pointer from void * */
	return 0;
}

static void curl_init(void)
{
	void *lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(cu_failed, sizeof(cu_failed),
			 "cannot load libcurl, which etcd needs: %s",
			 dlerror());
		return;
	}
	if (cu_sym(lib, "curl_global_init", &cu.global_init) ||
	    cu_sym(lib, "curl_easy_init", &cu.easy_init) ||
	    cu_sym(lib, "curl_easy_cleanup", &cu.easy_cleanup) ||
	    cu_sym(lib, "curl_easy_reset", &cu.easy_reset) ||
	    cu_sym(lib, "curl_easy_setopt", &cu.easy_setopt) ||
	    cu_sym(lib, "curl_easy_perform", &cu.easy_perform) ||
	    cu_sym(lib, "curl_easy_getinfo", &cu.easy_getinfo) ||
	    cu_sym(lib, "curl_easy_strerror", &cu.easy_strerror) ||
	    cu_sym(lib, "curl_slist_append", &cu.slist_append) ||
	    cu_sym(lib, "curl_slist_free_all", &cu.slist_free_all))
		return;		/* the library stays: cu_failed says why */
	if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		snprintf(cu_failed, sizeof(cu_failed),
			 "libcurl did not start");
}

struct xlb_etcd *xlb_etcd_open(const char *urls, struct xlb_err *err)
{
	struct xlb_etcd *e;
	const char *p = urls, *comma;
	size_t len;

	pthread_once(&curl_once, curl_init);
	if (cu_failed[0]) {
		xlb_errf(err, ELIBACC, "%s", cu_failed);
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		xlb_errf(err, ENOMEM, "out of memory");
		return NULL;
	}
	e->connect_ms = 1000;
	e->total_ms = 5000;
	while (p && *p) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (e->n_urls == XLB_ETCD_URLS_MAX) {
			xlb_errf(err, E2BIG, "more than %d etcd endpoints",
				 XLB_ETCD_URLS_MAX);
			goto fail;
		}
		if (len < 8 || len >= XLB_ETCD_URL_MAX ||
		    strncmp(p, "http://", 7) || memchr(p, ' ', len) ||
		    memchr(p + 7, '/', len - 7)) {
			xlb_errf(err, EINVAL,
				 "etcd endpoint \"%.*s\" is not http://HOST:PORT",
				 (int)(len > 80 ? 80 : len), p);
			goto fail;
		}
		memcpy(e->urls[e->n_urls++], p, len);
		p = comma ? comma + 1 : NULL;
	}
	if (!e->n_urls) {
		xlb_errf(err, EINVAL,
			 "no etcd endpoint; give http://HOST:PORT[,http://HOST:PORT...]");
		goto fail;
	}
	e->curl = cu.easy_init();
	if (!e->curl) {
		xlb_errf(err, ENOMEM, "cannot start libcurl");
		goto fail;
	}
	return e;
fail:
	free(e);
	return NULL;
}

void xlb_etcd_close(struct xlb_etcd *e)
{
	if (!e)
		return;
	cu.easy_cleanup(e->curl);
	free(e);
}

const char *xlb_etcd_url(const struct xlb_etcd *e)
{
	return e->urls[e->cur];
}

void xlb_etcd_set_timeouts(struct xlb_etcd *e, long connect_ms,
			   long total_ms)
{
	e->connect_ms = connect_ms;
	e->total_ms = total_ms;
}

void xlb_etcd_set_stop(struct xlb_etcd *e, const atomic_bool *stop)
{
	e->stop = stop;
}

int xlb_etcd_prefix_end(const char *prefix, char *out, size_t len)
{
	size_t n = strlen(prefix);

	if (!n || n >= len || (unsigned char)prefix[n - 1] == 0xff)
		return -EINVAL;
	memcpy(out, prefix, n + 1);
	out[n - 1]++;
	return 0;
}

/* What a transfer gathers: the answer, or the lines of a stream. */
struct xfer {
	struct xlb_etcd *e;
	char *buf;
	size_t len, cap;
	bool too_big;
	/* streams */
	xlb_etcd_watch_fn fn;
	void *ctx;
	int cb_ret;		/* the callback's or a bad message's */
	struct xlb_err *err;
};

static bool xfer_append(struct xfer *x, const char *p, size_t n)
{
	size_t cap = x->cap ? x->cap : 4096;
	char *b;

	if (x->len + n + 1 > XLB_ETCD_ANSWER_MAX) {
		x->too_big = true;
		return false;
	}
	while (cap < x->len + n + 1)
		cap *= 2;
	if (cap != x->cap) {
		b = realloc(x->buf, cap);
		if (!b)
			return false;
		x->buf = b;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, p, n);
	x->len += n;
	x->buf[x->len] = 0;
	return true;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;

	return xfer_append(x, p, size * nmemb) ? size * nmemb : 0;
}

/* Hand every complete line of a stream to its callback. */
static size_t on_stream(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t start = 0;
	char *nl;

	if (!xfer_append(x, p, size * nmemb))
		return 0;
	while ((nl = memchr(x->buf + start, '\n', x->len - start))) {
		size_t len = (size_t)(nl - (x->buf + start));
		struct xlb_etcd_watch_msg m;

		if (len) {
			x->cb_ret = xlb_etcd_parse_watch(x->buf + start, len,
							 &m, x->err);
			if (!x->cb_ret) {
				x->cb_ret = x->fn(x->ctx, &m);
				xlb_etcd_watch_msg_free(&m);
			}
			if (x->cb_ret)
				return 0;
		}
		start += len + 1;
	}
	memmove(x->buf, x->buf + start, x->len - start);
	x->len -= start;
	return size * nmemb;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct xfer *x = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return x->e->stop && atomic_load(x->e->stop);
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return EHOSTUNREACH;
	case CURLE_ABORTED_BY_CALLBACK:
		return ECANCELED;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return ECONNRESET;
	default:
		return EIO;
	}
}

/* Did the request possibly reach etcd before it failed? */
static bool maybe_sent(CURLcode c)
{
	return c != CURLE_COULDNT_CONNECT && c != CURLE_COULDNT_RESOLVE_HOST;
}

/*
 * POST body to path on one endpoint after another until one answers.  On
 * 0, x->buf holds the answer (which may be an etcd error: the caller's
 * parser turns it into one).  A stream (x->fn) is not retried elsewhere
 * once it started: its caller reconnects.
 */
static int post(struct xlb_etcd *e, const char *path, const char *body,
		struct xfer *x, bool stream, struct xlb_err *err)
{
	char url[XLB_ETCD_URL_MAX + 64];
	struct curl_slist *h = NULL;
	CURLcode c = CURLE_OK;
	size_t tries;
	long status = 0;

	x->e = e;
	h = cu.slist_append(h, "Content-Type: application/json");
	for (tries = 0; tries < e->n_urls; tries++) {
		CURL *ch = e->curl;

		cu.easy_reset(ch);
		snprintf(url, sizeof(url), "%s%s", e->urls[e->cur], path);
		cu.easy_setopt(ch, CURLOPT_URL, url);
		cu.easy_setopt(ch, CURLOPT_HTTPHEADER, h);
		cu.easy_setopt(ch, CURLOPT_POSTFIELDS, body);
		cu.easy_setopt(ch, CURLOPT_NOSIGNAL, 1L);
		cu.easy_setopt(ch, CURLOPT_PROTOCOLS_STR, "http");
		cu.easy_setopt(ch, CURLOPT_CONNECTTIMEOUT_MS, e->connect_ms);
		cu.easy_setopt(ch, CURLOPT_TCP_KEEPALIVE, 1L);
		cu.easy_setopt(ch, CURLOPT_TCP_KEEPIDLE, 2L);
		cu.easy_setopt(ch, CURLOPT_TCP_KEEPINTVL, 1L);
		if (!stream)
			cu.easy_setopt(ch, CURLOPT_TIMEOUT_MS, e->total_ms);
		cu.easy_setopt(ch, CURLOPT_WRITEFUNCTION,
				 stream ? on_stream : on_data);
		cu.easy_setopt(ch, CURLOPT_WRITEDATA, x);
		cu.easy_setopt(ch, CURLOPT_NOPROGRESS, 0L);
		cu.easy_setopt(ch, CURLOPT_XFERINFOFUNCTION, on_progress);
		cu.easy_setopt(ch, CURLOPT_XFERINFODATA, x);
		x->len = 0;
		x->too_big = false;
		c = cu.easy_perform(ch);
		if (c == CURLE_OK || maybe_sent(c) || (stream && x->cb_ret))
			break;
		e->cur = (e->cur + 1) % e->n_urls;
	}
	cu.slist_free_all(h);
	cu.easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	if (x->too_big)
		return xlb_errf(err, EFBIG,
				"etcd at %s: an answer larger than %u bytes",
				e->urls[e->cur], XLB_ETCD_ANSWER_MAX);
	if (stream && x->cb_ret)
		return x->cb_ret;
	if (c != CURLE_OK && stream && curl_errno(c) == ECONNRESET)
		return xlb_errf(err, ECONNRESET,
				"etcd at %s: the watch stream broke off (%s)",
				e->urls[e->cur], cu.easy_strerror(c));
	if (c != CURLE_OK)
		return xlb_errf(err, curl_errno(c), "etcd at %s: %s%s",
				e->urls[e->cur], cu.easy_strerror(c),
				e->n_urls > 1 && !maybe_sent(c) ?
				" (and every other endpoint)" : "");
	if (stream)
		return xlb_errf(err, ECONNRESET,
				"etcd at %s ended the watch stream",
				e->urls[e->cur]);
	if (status != 200 && (!x->len || x->buf[0] != '{'))
		return xlb_errf(err, EPROTO, "etcd at %s: HTTP status %ld on %s",
				e->urls[e->cur], status, path);
	if (!x->buf && !xfer_append(x, "", 0))
		return xlb_errf(err, ENOMEM, "out of memory");
	return 0;
}

/* Run one request; parse(answer) fills the caller's result. */
static int call(struct xlb_etcd *e, const char *path, json_object *req,
		int (*parse)(const char *, size_t, void *, struct xlb_err *),
		void *out, struct xlb_err *err)
{
	struct xlb_err e2 = { "" };
	struct xfer x = { 0 };
	int ret;

	ret = post(e, path,
		   json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
		   &x, false, err);
	if (!ret) {
		ret = parse(x.buf, x.len, out, &e2);
		if (ret)
			xlb_errf(err, -ret, "etcd at %s: %s", e->urls[e->cur],
				 e2.msg);
	}
	free(x.buf);
	return ret;
}

static json_object *b64_string(const void *p, size_t len)
{
	char *s = xlb_base64_encode(p, len);
	json_object *o;

	if (!s)
		return NULL;
	o = json_object_new_string(s);
	free(s);
	return o;
}

static json_object *i64_string(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_new_string(s);
}

static int parse_range_cb(const char *t, size_t l, void *out,
			  struct xlb_err *err)
{
	return xlb_etcd_parse_range(t, l, out, err);
}

int xlb_etcd_range_prefix(struct xlb_etcd *e, const char *prefix,
			  int64_t rev, struct xlb_etcd_range *out,
			  struct xlb_err *err)
{
	char end[XLB_ETCD_KEY_MAX + 1];
	json_object *req;
	int ret;

	if (xlb_etcd_prefix_end(prefix, end, sizeof(end)))
		return xlb_errf(err, EINVAL, "bad etcd prefix \"%.80s\"", prefix);
	req = json_object_new_object();
	json_object_object_add(req, "key", b64_string(prefix, strlen(prefix)));
	json_object_object_add(req, "range_end", b64_string(end, strlen(end)));
	if (rev)
		json_object_object_add(req, "revision", i64_string(rev));
	ret = call(e, "/v3/kv/range", req, parse_range_cb, out, err);
	json_object_put(req);
	return ret;
}

struct txn_out {
	bool *succeeded;
	int64_t *revision;
};

static int parse_txn_cb(const char *t, size_t l, void *out,
			struct xlb_err *err)
{
	struct txn_out *o = out;

	return xlb_etcd_parse_txn(t, l, o->succeeded, o->revision, err);
}

static json_object *txn_op(const struct xlb_etcd_op *op)
{
	json_object *r = json_object_new_object(), *w = json_object_new_object();

	json_object_object_add(r, "key", b64_string(op->key, strlen(op->key)));
	if (op->del) {
		json_object_object_add(w, "request_delete_range", r);
		return w;
	}
	json_object_object_add(r, "value", b64_string(op->value,
						      op->value_len));
	if (op->lease)
		json_object_object_add(r, "lease", i64_string(op->lease));
	json_object_object_add(w, "request_put", r);
	return w;
}

int xlb_etcd_txn(struct xlb_etcd *e, const struct xlb_etcd_cmp *cmps,
		 size_t n_cmps, const struct xlb_etcd_op *ops, size_t n_ops,
		 bool *succeeded, int64_t *revision, struct xlb_err *err)
{
	json_object *req = json_object_new_object();
	json_object *ca = json_object_new_array();
	json_object *sa = json_object_new_array();
	struct txn_out o = { succeeded, revision };
	size_t i;
	int ret;

	for (i = 0; i < n_cmps; i++) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "key", b64_string(cmps[i].key,
							    strlen(cmps[i].key)));
		json_object_object_add(c, "target", json_object_new_string("MOD"));
		json_object_object_add(c, "result",
				       json_object_new_string("EQUAL"));
		json_object_object_add(c, "mod_revision",
				       i64_string(cmps[i].mod_revision));
		json_object_array_add(ca, c);
	}
	for (i = 0; i < n_ops; i++) {
		if (ops[i].value_len > XLB_ETCD_VALUE_MAX) {
			json_object_put(req);
			json_object_put(ca);
			json_object_put(sa);
			return xlb_errf(err, EMSGSIZE,
					"etcd key %.80s: a value of %zu bytes; the limit is %u",
					ops[i].key, ops[i].value_len,
					XLB_ETCD_VALUE_MAX);
		}
		json_object_array_add(sa, txn_op(&ops[i]));
	}
	json_object_object_add(req, "compare", ca);
	json_object_object_add(req, "success", sa);
	*succeeded = false;
	ret = call(e, "/v3/kv/txn", req, parse_txn_cb, &o, err);
	json_object_put(req);
	return ret;
}

int xlb_etcd_put(struct xlb_etcd *e, const char *key, const char *value,
		 size_t value_len, int64_t lease, int64_t *revision,
		 struct xlb_err *err)
{
	struct xlb_etcd_op op = { key, value, value_len, lease, false };
	bool ok;

	return xlb_etcd_txn(e, NULL, 0, &op, 1, &ok, revision, err);
}

struct lease_out {
	int64_t *id, *ttl;
};

static int parse_lease_cb(const char *t, size_t l, void *out,
			  struct xlb_err *err)
{
	struct lease_out *o = out;

	return xlb_etcd_parse_lease(t, l, o->id, o->ttl, err);
}

int xlb_etcd_lease_grant(struct xlb_etcd *e, int64_t ttl_s, int64_t *id,
			 struct xlb_err *err)
{
	json_object *req = json_object_new_object();
	int64_t ttl = 0;
	struct lease_out o = { id, &ttl };
	int ret;

	json_object_object_add(req, "TTL", i64_string(ttl_s));
	ret = call(e, "/v3/lease/grant", req, parse_lease_cb, &o, err);
	json_object_put(req);
	if (!ret && !ttl)
		ret = xlb_errf(err, EPROTO, "etcd at %s granted a lease of 0 s",
			       e->urls[e->cur]);
	return ret;
}

int xlb_etcd_lease_keepalive(struct xlb_etcd *e, int64_t id, int64_t *ttl_s,
			     struct xlb_err *err)
{
	json_object *req = json_object_new_object();
	int64_t got = 0;
	struct lease_out o = { &got, ttl_s };
	int ret;

	json_object_object_add(req, "ID", i64_string(id));
	ret = call(e, "/v3/lease/keepalive", req, parse_lease_cb, &o, err);
	json_object_put(req);
	if (!ret && got != id)
		ret = xlb_errf(err, EPROTO,
			       "etcd at %s kept lease %" PRId64 " alive, not %" PRId64,
			       e->urls[e->cur], got, id);
	return ret;
}

/* An answer that carries only a header (lease revoke). */
static int parse_header_cb(const char *t, size_t l, void *out,
			   struct xlb_err *err)
{
	json_object *o = parse_object(t, l, "etcd", err);
	int ret;

	if (!o)
		return -EPROTO;
	ret = error_of(o, err);
	if (!ret)
		ret = header_revision(o, out, "etcd", err);
	json_object_put(o);
	return ret;
}

int xlb_etcd_lease_revoke(struct xlb_etcd *e, int64_t id, struct xlb_err *err)
{
	json_object *req = json_object_new_object();
	int64_t rev;
	int ret;

	json_object_object_add(req, "ID", i64_string(id));
	ret = call(e, "/v3/kv/lease/revoke", req, parse_header_cb, &rev, err);
	json_object_put(req);
	return ret;
}

int xlb_etcd_watch(struct xlb_etcd *e, const char *prefix, int64_t start_rev,
		   xlb_etcd_watch_fn fn, void *ctx, struct xlb_err *err)
{
	char end[XLB_ETCD_KEY_MAX + 1];
	json_object *req, *cr;
	struct xfer x = { 0 };
	int ret;

	if (xlb_etcd_prefix_end(prefix, end, sizeof(end)))
		return xlb_errf(err, EINVAL, "bad etcd prefix \"%.80s\"", prefix);
	req = json_object_new_object();
	cr = json_object_new_object();
	json_object_object_add(cr, "key", b64_string(prefix, strlen(prefix)));
	json_object_object_add(cr, "range_end", b64_string(end, strlen(end)));
	if (start_rev)
		json_object_object_add(cr, "start_revision",
				       i64_string(start_rev));
	json_object_object_add(req, "create_request", cr);
	x.fn = fn;
	x.ctx = ctx;
	x.err = err;
	ret = post(e, "/v3/watch",
		   json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
		   &x, true, err);
	json_object_put(req);
	free(x.buf);
	return ret;
}
