// SPDX-License-Identifier: GPL-2.0
/*
 * Parsing a control request: see request.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "proto.h"
#include "request.h"

#define XLB_STR_(x)	#x
#define XLB_STR(x)	XLB_STR_(x)

/*
 * explain is privileged: it computes the keyed hash of any flow it is
 * asked, which tells whoever asks where the flows of their choice go, and
 * how the secret key spreads them.
 */
static const struct xlb_command commands[] = {
	{ "exec", true, true, { "args", "lines" } },
	{ "restore", true, true, { "text", "name" } },
	{ "reload", true, true, { NULL } },
	{ "shutdown", true, true, { NULL } },
	{ "save", false, false, { NULL } },
	{ "status", false, false, { NULL } },
	{ "link.show", false, false, { NULL } },
	{ "vip.show", false, false, { "vip" } },
	{ "backend.show", false, false, { "vip" } },
	{ "table.show", false, false, { "vip" } },
	{ "stats", false, false, { "vip" } },
	{ "explain", false, true, { "flow" } },
	{ "cluster.status", false, false, { NULL } },
	{ "host.show", false, false, { NULL } },
	{ "host.drain", true, true, { NULL } },
	{ "host.undrain", true, true, { NULL } },
};

/*
 * Does msg have a shape no request has: more objects and arrays than
 * XLB_MSG_CONTAINERS_MAX, or more elements than XLB_MSG_LINES_MAX and a
 * few?  Checked before parsing: json-c spends hundreds of bytes on each
 * value, so "[{},{},...]" would cost a hundred times its size.
 */
static const char *bad_shape(const char *msg, size_t len)
{
	size_t i, containers = 0, items = 0;
	bool in_string = false;

	for (i = 0; i < len; i++) {
		if (in_string) {
			if (msg[i] == '\\')
				i++;
			else if (msg[i] == '"')
				in_string = false;
			continue;
		}
		if (msg[i] == '"')
			in_string = true;
		else if ((msg[i] == '{' || msg[i] == '[') &&
			 ++containers > XLB_MSG_CONTAINERS_MAX)
			return "a request holds at most " XLB_STR(XLB_MSG_CONTAINERS_MAX) " objects and arrays";
		else if (msg[i] == ',' && ++items > XLB_MSG_LINES_MAX + 16)
			return "a request holds at most " XLB_STR(XLB_MSG_LINES_MAX) " lines";
	}
	return NULL;
}

int xlb_request_parse(const char *msg, size_t len, struct xlb_request *r,
		      struct xlb_err *err)
{
	struct json_tokener *tok;
	const char *cmd, *why;
	json_object *req, *v;
	size_t k, a;

	r->obj = NULL;
	r->cmd = NULL;
	why = bad_shape(msg, len);
	if (why)
		return xlb_errf(err, E2BIG, "%s", why);
	if (len > (size_t)INT32_MAX)
		return xlb_errf(err, E2BIG, "a request larger than 2 GiB");
	tok = json_tokener_new_ex(XLB_MSG_DEPTH);
	if (!tok)
		return xlb_errf(err, ENOMEM, "out of memory");
	req = json_tokener_parse_ex(tok, msg, (int)len);
	if (!req || json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		xlb_errf(err, EINVAL, "not a JSON message: %s",
			 je == json_tokener_continue ? "it ends too early" :
			 !req ? json_tokener_error_desc(je) :
			 "text after the object");
		json_object_put(req);
		json_tokener_free(tok);
		return -EINVAL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(req, json_type_object)) {
		xlb_errf(err, EINVAL, "a request must be a JSON object");
		goto bad;
	}
	if (!json_object_object_get_ex(req, "version", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		xlb_errf(err, EINVAL, "a request needs \"version\": 1");
		goto bad;
	}
	if (json_object_get_int64(v) != XLB_PROTO_VERSION) {
		xlb_errf(err, EPROTONOSUPPORT,
			 "unsupported protocol version %lld; this xlbd speaks %d",
			 (long long)json_object_get_int64(v), XLB_PROTO_VERSION);
		goto bad;
	}
	if (!json_object_object_get_ex(req, "cmd", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		xlb_errf(err, EINVAL, "a request needs \"cmd\": a command name");
		goto bad;
	}
	cmd = json_object_get_string(v);
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(commands[k].name, cmd))
			break;
	if (k == sizeof(commands) / sizeof(commands[0])) {
		xlb_errf(err, EINVAL,
			 "unknown command \"%.40s\" (known: exec, restore, reload, save, shutdown, status, link.show, vip.show, backend.show, table.show, stats, explain, cluster.status, host.show, host.drain, host.undrain)",
			 cmd);
		goto bad;
	}
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!strcmp(key, "version") || !strcmp(key, "cmd"))
			continue;
		for (a = 0; a < 3 && commands[k].args[a]; a++)
			if (!strcmp(commands[k].args[a], key))
				break;
		if (a == 3 || !commands[k].args[a]) {
			xlb_errf(err, EINVAL, "%s takes no argument \"%.40s\"",
				 cmd, key);
			goto bad;
		}
	}
	r->obj = req;
	r->cmd = &commands[k];
	return 0;
bad:
	json_object_put(req);
	return -EINVAL;
}

void xlb_request_free(struct xlb_request *r)
{
	json_object_put(r->obj);
	r->obj = NULL;
	r->cmd = NULL;
}
