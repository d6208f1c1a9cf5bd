// SPDX-License-Identifier: GPL-2.0
/*
 * The shared configuration's etcd keys (user/lib/cluster.h): which key a
 * part of the state lives in, its value in the config grammar, and the
 * reading of a value back into the state with the exact place of any
 * fault.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "number.h"

#define FORMAT_LINE	"format 1\n"

int xlb_cluster_name_check(const char *name, struct xlb_err *err)
{
	size_t len = strlen(name), i;

	if (!len || len > XLB_CLUSTER_NAME_MAX)
		return xlb_errf(err, EINVAL,
				"cluster name \"%.80s\" must be 1..%d bytes",
				name, XLB_CLUSTER_NAME_MAX);
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return xlb_errf(err, EINVAL,
					"cluster name \"%.80s\" may hold only A-Z a-z 0-9 . _ -",
					name);
	}
	return 0;
}

void xlb_cluster_config_prefix(const char *name, char *out, size_t len)
{
	snprintf(out, len, "/xlb/%s/config/", name);
}

void xlb_cluster_hosts_prefix(const char *name, char *out, size_t len)
{
	snprintf(out, len, "/xlb/%s/hosts/", name);
}

void xlb_cluster_global_key(const char *name, char *out, size_t len)
{
	snprintf(out, len, "/xlb/%s/config/global", name);
}

void xlb_cluster_vip_key(const char *name, const struct xlb_vip_key *vip,
			 char *out, size_t len)
{
	char vs[XLB_VIP_STR_MAX];

	snprintf(out, len, "/xlb/%s/config/vips/%s", name,
		 xlb_vip_str(vip, vs));
}

int xlb_cluster_op_scope(const struct xlb_op *op, struct xlb_err *err)
{
	const uint64_t host_settings = XLB_OPT(XLB_OPT_SRC4) |
				       XLB_OPT(XLB_OPT_SRC6) |
				       XLB_OPT(XLB_OPT_ANNOUNCE);
	const uint64_t vip_src = XLB_OPT(XLB_OPT_VIP_SRC4) |
				 XLB_OPT(XLB_OPT_VIP_SRC6);

	switch (op->object) {
	case XLB_OBJ_LINK:
		return XLB_SCOPE_HOST;
	case XLB_OBJ_GLOBAL:
		return op->given & host_settings ? XLB_SCOPE_HOST :
						   XLB_SCOPE_CLUSTER;
	case XLB_OBJ_VIP:
		if (op->given & vip_src)
			return xlb_errf(err, EINVAL,
					"a VIP's src is an address of one host; in a cluster every host uses its own \"set src4\"/\"set src6\"");
		return XLB_SCOPE_CLUSTER;
	}
	return XLB_SCOPE_CLUSTER;
}

/* --- merge and split ------------------------------------------------------ */

int xlb_cluster_merge(const struct xlb_state *shared,
		      const struct xlb_state *local, struct xlb_state *out)
{
	struct xlb_state v = *shared;	/* a view: copied below */

	v.links = local->links;
	v.n_links = local->n_links;
	v.global.src4 = local->global.src4;
	memcpy(v.global.src6, local->global.src6, sizeof(v.global.src6));
	v.global.announce_table = local->global.announce_table;
	return xlb_state_copy(out, &v);
}

int xlb_cluster_shared_of(const struct xlb_state *s, struct xlb_state *out)
{
	struct xlb_state v = *s;

	v.links = NULL;
	v.n_links = 0;
	v.global.src4 = 0;
	memset(v.global.src6, 0, sizeof(v.global.src6));
	v.global.announce_table = 0;
	return xlb_state_copy(out, &v);
}

/* --- keys ----------------------------------------------------------------- */

enum key_kind {
	KEY_GLOBAL,
	KEY_VIP,
};

/* What key names: the global settings or a VIP (in *vip). */
static int key_parse(const char *name, const char *key, int *kind,
		     struct xlb_vip_key *vip, struct xlb_err *err)
{
	char prefix[XLB_CLUSTER_KEY_MAX], vs[XLB_VIP_STR_MAX];
	struct xlb_err e = { "" };
	size_t plen;

	xlb_cluster_config_prefix(name, prefix, sizeof(prefix));
	plen = strlen(prefix);
	if (strncmp(key, prefix, plen))
		return xlb_errf(err, ENOENT,
				"key %.100s is not under %s", key, prefix);
	key += plen;
	if (!strcmp(key, "global")) {
		*kind = KEY_GLOBAL;
		return 0;
	}
	*kind = KEY_VIP;
	if (strncmp(key, "vips/", 5))
		return xlb_errf(err, ENOENT,
				"key %s%.100s is not one of the cluster's: %sglobal or %svips/VIP",
				prefix, key, prefix, prefix);
	key += 5;
	if (xlb_vip_parse(key, vip, &e))
		return xlb_errf(err, ENOENT, "key %svips/%.80s: %s", prefix,
				key, e.msg);
	if (strcmp(key, xlb_vip_str(vip, vs)))
		return xlb_errf(err, ENOENT,
				"key %svips/%.80s: the VIP is written %s in a key",
				prefix, key, vs);
	return 0;
}

/* "format 1\n" and text, or NULL for no text. */
static int with_format(char *text, char **value)
{
	size_t n = strlen(text);

	*value = NULL;
	if (!n) {
		free(text);
		return 0;
	}
	*value = malloc(sizeof(FORMAT_LINE) + n);
	if (!*value) {
		free(text);
		return -ENOMEM;
	}
	memcpy(*value, FORMAT_LINE, sizeof(FORMAT_LINE) - 1);
	memcpy(*value + sizeof(FORMAT_LINE) - 1, text, n + 1);
	free(text);
	return 0;
}

static int encode_global(const struct xlb_state *s, char **value)
{
	struct xlb_state v;
	char *text;
	int ret;

	xlb_state_init(&v);
	v.global = s->global;
	v.global.src4 = 0;
	memset(v.global.src6, 0, sizeof(v.global.src6));
	v.global.announce_table = 0;
	ret = xlb_config_save(&v, &text);
	return ret ? ret : with_format(text, value);
}

/* The VIP at index i of s with its backends, as one value. */
static int encode_vip(const struct xlb_state *s, size_t i, char **value)
{
	const struct xlb_backend_conf *first;
	struct xlb_state v;
	size_t lo = 0, n;
	char *text;
	int ret;

	n = xlb_state_vip_backends(s, &s->vips[i].key, &first, 1);
	if (n)
		lo = (size_t)(first - s->backends);
	xlb_state_init(&v);
	v.vips = (struct xlb_vip_conf *)&s->vips[i];
	v.n_vips = 1;
	v.backends = (struct xlb_backend_conf *)s->backends + lo;
	v.n_backends = n;
	ret = xlb_config_save(&v, &text);
	return ret ? ret : with_format(text, value);
}

int xlb_cluster_encode_key(const struct xlb_state *s, const char *name,
			   const char *key, char **value,
			   struct xlb_err *err)
{
	const struct xlb_vip_conf *v;
	struct xlb_vip_key vip;
	int kind, ret;

	*value = NULL;
	ret = key_parse(name, key, &kind, &vip, err);
	if (ret)
		return ret;
	if (kind == KEY_GLOBAL)
		ret = encode_global(s, value);
	else if ((v = xlb_state_find_vip(s, &vip)))
		ret = encode_vip(s, (size_t)(v - s->vips), value);
	return ret ? xlb_errf(err, -ret, "out of memory") : 0;
}

void xlb_cluster_kvs_free(struct xlb_cluster_kv *kvs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(kvs[i].value);
	free(kvs);
}

int xlb_cluster_encode(const struct xlb_state *s, const char *name,
		       struct xlb_cluster_kv **out, size_t *n_out)
{
	struct xlb_cluster_kv *kvs = calloc(s->n_vips + 1, sizeof(*kvs));
	size_t n = 0, i;
	int ret;

	if (!kvs)
		return -ENOMEM;
	ret = encode_global(s, &kvs[0].value);
	if (!ret && kvs[0].value) {
		xlb_cluster_global_key(name, kvs[0].key, sizeof(kvs[0].key));
		kvs[0].len = strlen(kvs[0].value);
		n++;
	}
	for (i = 0; !ret && i < s->n_vips; i++, n++) {
		ret = encode_vip(s, i, &kvs[n].value);
		xlb_cluster_vip_key(name, &s->vips[i].key, kvs[n].key,
				    sizeof(kvs[n].key));
		kvs[n].len = kvs[n].value ? strlen(kvs[n].value) : 0;
	}
	if (ret) {
		xlb_cluster_kvs_free(kvs, n + 1);
		return ret;
	}
	*out = kvs;
	*n_out = n;
	return 0;
}

/* --- reading a value ------------------------------------------------------ */

struct reader {
	int kind;
	struct xlb_vip_key vip;
	bool seen_vip;		/* the VIP key's `vip add` line */
};

static const char *const host_only =
	"is a per-host setting; give it to each host with xlbctl or in its config file, not in the cluster's configuration";

static int check_global(const struct xlb_op *op, int *tok,
			struct xlb_err *err)
{
	*tok = 0;
	if (op->object != XLB_OBJ_GLOBAL)
		return xlb_errf(err, EINVAL,
				"config/global holds only \"set\" lines (key, gue-port, mtu, ttl, udp-idle, new-flow-rate); a VIP goes in config/vips/VIP");
	if (op->given & (XLB_OPT(XLB_OPT_SRC4) | XLB_OPT(XLB_OPT_SRC6) |
			 XLB_OPT(XLB_OPT_ANNOUNCE))) {
		*tok = 1;
		return xlb_errf(err, EINVAL, "set %s %s",
				op->given & XLB_OPT(XLB_OPT_SRC4) ? "src4" :
				op->given & XLB_OPT(XLB_OPT_SRC6) ? "src6" :
				"announce", host_only);
	}
	return 0;
}

static int check_vip(const struct xlb_op *op, int *tok, struct reader *r,
		     struct xlb_err *err)
{
	const struct xlb_vip_key *k = op->object == XLB_OBJ_VIP ?
				      &op->vip.key : &op->backend.vip;
	char vs[XLB_VIP_STR_MAX];
	int ret;

	*tok = 0;
	if (op->object == XLB_OBJ_LINK)
		return xlb_errf(err, EINVAL, "link %s", host_only);
	if (op->object == XLB_OBJ_GLOBAL)
		return xlb_errf(err, EINVAL,
				"\"set\" lines go in config/global; config/vips/%s holds the VIP's vip add and backend add lines",
				xlb_vip_str(&r->vip, vs));
	if (op->verb != XLB_VERB_ADD) {
		*tok = 1;
		return xlb_errf(err, EINVAL,
				"a VIP's key holds the whole VIP: only \"vip add\" and \"backend add\" lines");
	}
	if (xlb_vip_key_cmp(k, &r->vip)) {
		*tok = op->vip_tok;
		return xlb_errf(err, EINVAL,
				"this is config/vips/%s; another VIP goes in a key of its own",
				xlb_vip_str(&r->vip, vs));
	}
	if (op->object == XLB_OBJ_VIP) {
		ret = xlb_cluster_op_scope(op, err);
		if (ret < 0) {
			*tok = op->tok[op->given & XLB_OPT(XLB_OPT_VIP_SRC4) ?
				       XLB_OPT_VIP_SRC4 : XLB_OPT_VIP_SRC6];
			return ret;
		}
		r->seen_vip = true;
		return 0;
	}
	if (!r->seen_vip)
		return xlb_errf(err, EINVAL,
				"the \"vip add %s\" line must come before its backends",
				xlb_vip_str(&r->vip, vs));
	return 0;
}

static int check_line(const struct xlb_op *op, int *tok, void *ctx,
		      struct xlb_err *err)
{
	struct reader *r = ctx;

	if (r->kind == KEY_GLOBAL)
		return check_global(op, tok, err);
	return check_vip(op, tok, r, err);
}

/* The first line: "format N" and nothing else. */
static int check_format(const char *line, size_t len, unsigned int *col,
			struct xlb_err *err)
{
	char buf[32];
	size_t i = 0, start;
	uint64_t n;

	*col = 1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (len - i < 7 || strncmp(line + i, "format", 6) ||
	    (line[i + 6] != ' ' && line[i + 6] != '\t'))
		return xlb_errf(err, EINVAL,
				"the value must start with the line \"format %d\" (the cluster format this xlbd reads)",
				XLB_CLUSTER_FORMAT);
	for (i += 6; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	start = i;
	*col = (unsigned int)i + 1;
	while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
		i++;
	snprintf(buf, sizeof(buf), "%.*s", (int)(i - start), line + start);
	if (xlb_parse_u64(buf, 1, UINT64_MAX, &n))
		return xlb_errf(err, EINVAL,
				"format \"%.20s\" is not a format number; this xlbd reads format %d",
				buf, XLB_CLUSTER_FORMAT);
	if (n > XLB_CLUSTER_FORMAT)
		return xlb_errf(err, EPROTONOSUPPORT,
				"format %llu is newer than this xlbd reads (format %d); upgrade xlbd on every host before writing it",
				(unsigned long long)n, XLB_CLUSTER_FORMAT);
	for (; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
			*col = (unsigned int)i + 1;
			return xlb_errf(err, EINVAL,
					"nothing may follow \"format %d\" on its line",
					XLB_CLUSTER_FORMAT);
		}
	return 0;
}

/* The shared global settings back to their defaults. */
static void global_reset(struct xlb_state *s)
{
	struct xlb_state d;

	xlb_state_init(&d);
	d.global.src4 = s->global.src4;
	memcpy(d.global.src6, s->global.src6, sizeof(d.global.src6));
	d.global.announce_table = s->global.announce_table;
	s->global = d.global;
}

static int vip_remove(struct xlb_state *s, const struct xlb_vip_key *vip)
{
	struct xlb_op op;

	if (!xlb_state_find_vip(s, vip))
		return 0;
	memset(&op, 0, sizeof(op));
	op.object = XLB_OBJ_VIP;
	op.verb = XLB_VERB_DEL;
	op.vip.key = *vip;
	return xlb_state_apply(s, &op, NULL);
}

static int read_value(struct xlb_state *s, struct reader *r,
		      const char *value, size_t len, unsigned int *line,
		      unsigned int *col, struct xlb_err *e)
{
	size_t off, llen;
	const char *nl;
	int empty, ret;

	*line = 1;
	*col = 1;
	if (len > XLB_FILE_MAX)
		return xlb_errf(e, EFBIG, "the value is %zu bytes; the limit is %u",
				len, XLB_FILE_MAX);
	if (memchr(value, 0, len)) {
		const char *z = memchr(value, 0, len);

		for (off = 0; value + off < z; off++)
			if (value[off] == '\n')
				(*line)++;
		return xlb_errf(e, EINVAL, "NUL byte; a value is text");
	}
	nl = memchr(value, '\n', len);
	llen = nl ? (size_t)(nl - value) : len;
	ret = check_format(value, llen, col, e);
	for (off = llen + 1; !ret && off < len; off += llen + 1) {
		(*line)++;
		nl = memchr(value + off, '\n', len - off);
		llen = nl ? (size_t)(nl - (value + off)) : len - off;
		ret = xlb_config_apply_line(s, value + off, llen, check_line,
					    r, &empty, col, e);
	}
	if (!ret && r->kind == KEY_VIP && !r->seen_vip) {
		char vs[XLB_VIP_STR_MAX];

		*col = 1;
		ret = xlb_errf(e, EINVAL,
			       "the value has no \"vip add %s\" line; delete the key to remove the VIP",
			       xlb_vip_str(&r->vip, vs));
	}
	return ret;
}

int xlb_cluster_apply_key(struct xlb_state *s, const char *name,
			  const char *key, const char *value, size_t len,
			  int64_t revision, struct xlb_err *err)
{
	struct xlb_err e = { "" };
	struct reader r = { 0 };
	unsigned int line, col;
	int ret;

	ret = key_parse(name, key, &r.kind, &r.vip, &e);
	if (ret)
		return xlb_errf(err, -ret, "%s (revision %" PRId64 ")", e.msg,
				revision);
	if (r.kind == KEY_GLOBAL)
		global_reset(s);
	else
		ret = vip_remove(s, &r.vip);
	if (ret)
		return xlb_errf(err, -ret, "key %s (revision %" PRId64 "): out of memory",
				key, revision);
	if (!value)
		return 0;
	ret = read_value(s, &r, value, len, &line, &col, &e);
	if (ret)
		return xlb_errf(err, -ret,
				"key %s (revision %" PRId64 ") line %u column %u: %s",
				key, revision, line, col, e.msg);
	return 0;
}
