// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the control protocol's request parser
 * (user/lib/request.c), as xlbd uses it on every message a peer sends.
 * Any input either is refused with a message, or is a JSON object with
 * version 1, a known command and only that command's argument names,
 * which serialized and parsed again is the same request; the command
 * lines of an accepted exec go through the config grammar as xlbd
 * hands them on.  Anything else aborts.  Built and run by `make fuzz`
 * (and briefly by tests/unit/fuzz.sh).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config.h"
#include "proto.h"
#include "request.h"

static void fail(const char *why, const char *a)
{
	fprintf(stderr, "control fuzz: %s\n--- input\n%s\n", why, a ? a : "");
	abort();
}

/* The strings of an array, to the config grammar. */
static void exec_lines(json_object *a, bool as_argv)
{
	char *v[XLB_TOKENS_MAX + 1];
	size_t i, n;

	if (!json_object_is_type(a, json_type_array))
		return;
	n = json_object_array_length(a);
	for (i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		struct xlb_err err = { "" };
		struct xlb_op op;
		int empty;

		if (!json_object_is_type(e, json_type_string))
			return;
		if (as_argv) {
			if (i < XLB_TOKENS_MAX)
				v[i] = (char *)json_object_get_string(e);
			continue;
		}
		if (xlb_op_parse_line(json_object_get_string(e), &op, &empty,
				      &err) && !err.msg[0])
			fail("a line refused without a message",
			     json_object_get_string(e));
	}
	if (as_argv && n && n <= XLB_TOKENS_MAX) {
		struct xlb_err err = { "" };
		struct xlb_op op;

		v[n] = NULL;
		if (xlb_op_parse_argv((int)n, v, &op, &err) && !err.msg[0])
			fail("args refused without a message", v[0]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xlb_err err = { "" };
	struct xlb_request r, r2;
	const char *text;
	json_object *v;
	char *copy;

	if (xlb_request_parse((const char *)data, size, &r, &err)) {
		if (!err.msg[0])
			fail("refused without a message", NULL);
		return 0;
	}
	copy = strndup((const char *)data, size);
	if (!json_object_is_type(r.obj, json_type_object) ||
	    !json_object_object_get_ex(r.obj, "version", &v) ||
	    json_object_get_int64(v) != XLB_PROTO_VERSION ||
	    !json_object_object_get_ex(r.obj, "cmd", &v) ||
	    strcmp(json_object_get_string(v), r.cmd->name))
		fail("accepted without version 1 and its command", copy);
	json_object_object_foreach(r.obj, key, val) {
		size_t a;

		(void)val;
		if (!strcmp(key, "version") || !strcmp(key, "cmd"))
			continue;
		for (a = 0; a < 3 && r.cmd->args[a]; a++)
			if (!strcmp(key, r.cmd->args[a]))
				break;
		if (a == 3 || !r.cmd->args[a])
			fail("accepted an argument its command does not take",
			     copy);
	}
	text = json_object_to_json_string_ext(r.obj, JSON_C_TO_STRING_PLAIN);
	if (xlb_request_parse(text, strlen(text), &r2, &err))
		fail(err.msg, text);
	if (r2.cmd != r.cmd || !json_object_equal(r.obj, r2.obj))
		fail("serialized and parsed again it is another request", text);
	xlb_request_free(&r2);
	if (!strcmp(r.cmd->name, "exec")) {
		if (json_object_object_get_ex(r.obj, "args", &v))
			exec_lines(v, true);
		if (json_object_object_get_ex(r.obj, "lines", &v))
			exec_lines(v, false);
	}
	free(copy);
	xlb_request_free(&r);
	return 0;
}
