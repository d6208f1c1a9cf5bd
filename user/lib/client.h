/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client side of the control protocol (user/lib/proto.h): connect to
 * xlbd's socket, send one request, read its answer.  Used by xlbctl, the
 * benchmarks and the tests.
 */
#ifndef XLB_CLIENT_H
#define XLB_CLIENT_H

#include <json-c/json.h>

#include "error.h"
#include "proto.h"

/* A connected socket, or a negative errno with err saying which path. */
int xlb_client_connect(const char *path, struct xlb_err *err);

/*
 * Send req (its "version" is set here) on fd and read the answer.  On 0,
 * *result is the "result" object (the caller puts it).  When the daemon
 * refuses the request ("ok": false) returns -EREMOTEIO with the daemon's
 * sentence in err; transport failures return their errno and a sentence;
 * an answer that breaks the protocol returns -EPROTO.  timeout_ms bounds
 * the whole exchange (0: XLB_MSG_TIMEOUT_MS).
 */
int xlb_client_call(int fd, json_object *req, json_object **result,
		    int timeout_ms, struct xlb_err *err);

/* Connect, call, close. */
int xlb_client_request(const char *path, json_object *req,
		       json_object **result, struct xlb_err *err);

#endif /* XLB_CLIENT_H */
