/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the daemon tier's programs share: a shell runner, the test
 * daemon's names, xlbctl calls and JSON lookups.  Included by one .c
 * each (every test program is one file).
 */
#ifndef XLB_TESTS_DAEMON_LIB_H
#define XLB_TESTS_DAEMON_LIB_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <json-c/json.h>

#define KEY_HEX		"000102030405060708090a0b0c0d0e0f"
#define VIP		"10.100.0.1:80/tcp"
#define LB_ADDR		"10.77.0.1"
#define BE_NET		"10.77.0."

static char out[1 << 20];

/* Run a shell command; its stdout in out[], its exit status returned. */
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *p;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

struct env {
	char ns[32];
	char inst[32];
	char dir[64];
	char sock[96];
	char pins[128];
	pid_t pid;
};

static int ctl(struct env *e, const char *fmt, ...)
{
	char args[3000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return sh("build/xlbctl -s %s %s 2>&1", e->sock, args);
}

/* xlbctl -j ... parsed; NULL on failure.  Caller puts it. */
static json_object *ctl_json(struct env *e, const char *fmt, ...)
{
	char args[3000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	if (sh("build/xlbctl -s %s -j %s", e->sock, args))
		return NULL;
	return json_tokener_parse(out);
}

static const char *jget_str(json_object *o, const char *path)
{
	json_object *v = o;
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && v;
	     tok = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(v, json_type_array))
			v = json_object_array_get_idx(v, atoi(tok));
		else if (!json_object_object_get_ex(v, tok, &v))
			v = NULL;
	}
	return v ? json_object_get_string(v) : NULL;
}

#endif
