/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A control request (user/lib/proto.h) from its bytes: the checks every
 * request goes through before a daemon looks at what it asks, apart from
 * who sent it.  Shared by xlbd and the control protocol's fuzzer.
 */
#ifndef XLB_REQUEST_H
#define XLB_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct json_object;

struct xlb_command {
	const char *name;
	bool mutating;		/* changes state */
	bool privileged;	/* root or the daemon's group only */
	const char *args[3];	/* the arguments it takes, NULL-ended */
};

struct xlb_request {
	struct json_object *obj;	/* the request, owned */
	const struct xlb_command *cmd;
};

/*
 * Parse msg (len bytes, no newline): its shape first (XLB_MSG_CONTAINERS_MAX,
 * XLB_MSG_LINES_MAX, XLB_MSG_DEPTH), then JSON, version, command and the
 * names of its arguments.  0 with *r to xlb_request_free, or -errno with
 * err saying why.
 */
int xlb_request_parse(const char *msg, size_t len, struct xlb_request *r,
		      struct xlb_err *err);
void xlb_request_free(struct xlb_request *r);

#endif /* XLB_REQUEST_H */
