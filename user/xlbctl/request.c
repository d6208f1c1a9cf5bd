// SPDX-License-Identifier: GPL-2.0
/*
 * One exchange with xlbd (user/lib/client.h) and what its failure means for the
 * exit status: any failure, refused or unreachable, is EXIT_FAIL with the
 * sentence after "xlbctl: ".
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "xlbctl.h"

int ctl_fail(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_FAIL;
}

json_object *ctl_req(const char *cmd)
{
	json_object *req = json_object_new_object();

	if (!req) {
		fputs(PROG ": out of memory\n", stderr);
		exit(EXIT_FAIL);
	}
	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	return req;
}

int ctl_connect(struct ctl *c)
{
	struct xlb_err err = { "" };
	int fd;

	if (c->fd >= 0)
		return 0;
	fd = xlb_client_connect(c->socket, &err);
	if (fd < 0)
		return ctl_fail("%s", err.msg);
	c->fd = fd;
	return 0;
}

void ctl_disconnect(struct ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int ctl_exchange(struct ctl *c, json_object *req, json_object **result,
		 int timeout_ms, struct xlb_err *err)
{
	bool keep = c->fd >= 0;
	int ret = 0, fd;

	*result = NULL;
	if (c->fd < 0) {
		fd = xlb_client_connect(c->socket, err);
		ret = fd < 0 ? fd : 0;
		c->fd = fd < 0 ? -1 : fd;
	}
	if (!ret)
		ret = xlb_client_call(c->fd, req, result, timeout_ms, err);
	/* After a failed exchange the connection's framing is unknown. */
	if (!keep || (ret && ret != -EREMOTEIO))
		ctl_disconnect(c);
	json_object_put(req);
	return ret;
}

int ctl_call(struct ctl *c, json_object *req, json_object **result,
	     int timeout_ms)
{
	struct xlb_err err = { "" };

	if (ctl_exchange(c, req, result, timeout_ms, &err)) {
		ctl_fail("%s", err.msg);
		/* xlbd's words for a compare-and-swap that lost (proto.h) */
		return strstr(err.msg, "changed meanwhile") ? EXIT_RETRY :
							      EXIT_FAIL;
	}
	return 0;
}

void ctl_print_json(const json_object *o)
{
	const char *s = json_object_to_json_string_ext(
		(json_object *)o, JSON_C_TO_STRING_PRETTY |
		JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

	puts(s ? s : "null");
}
