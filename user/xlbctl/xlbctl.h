/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xlbctl: the operator's command line for xlbd.
 *
 *   main.c      global options, which socket, dispatch by object
 *   usage.c     help texts (they agree with user/xlbctl/xlbctl.8)
 *   request.c   one exchange with xlbd, exit statuses, JSON output
 *   args.c      local checks of arguments (VIPs, flows, numbers)
 *   commands.c  commands that change the state, save, restore, ...
 *   show.c      read commands: link/vip/backend/table show, status, explain
 *   render.c    human views of read results
 *   columns.c   aligned tables
 *   units.c     numbers for humans: bytes, rates, shares, ages
 *   result.c    typed access to result fields
 *   watch.c     stats (snapshot and --watch)
 *   top.c       the live per-backend view
 *   term.c      the terminal for top
 */
#ifndef XLBCTL_H
#define XLBCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "config.h"
#include "error.h"

#ifndef XLB_VERSION
#define XLB_VERSION		"0.2"
#endif

#define PROG			"xlbctl"
#define XLB_RUN_DIR		"/run/xlb"
#define XLB_INSTANCE_DEFAULT	"default"

/* Exit statuses. */
#define EXIT_OK			0
#define EXIT_FAIL		1	/* refused by xlbd, or unreachable */
#define EXIT_USAGE		2	/* bad arguments, nothing sent */
#define EXIT_RETRY		3	/* the cluster's configuration changed
					 * meanwhile: nothing was written */

/* Mutating requests may take a while (tables are built before answering). */
#define CTL_CHANGE_TIMEOUT_MS	60000

struct ctl {
	const char *socket;
	bool json;
	int fd;			/* a kept connection (top, watch); -1: none */
};

/* A command: argv[0] is the object ("vip"), argv[1] the verb if any. */
typedef int (*ctl_cmd_fn)(struct ctl *c, int argc, char **argv);

/* main.c */
int ctl_usage_error(const char *topic, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool ctl_is_help(const char *arg);

/* usage.c: help of topic ("vip", "vip add", NULL for the whole tool). */
void usage_print(FILE *f, const char *object, const char *verb);
bool usage_known(const char *object, const char *verb);
/* The verbs of object: "attach, detach or show"; "" if it takes none. */
const char *usage_verbs(const char *object, char *buf, size_t len);

/* request.c */
json_object *ctl_req(const char *cmd);
/*
 * Send req (consumed) and return 0 with *result, or print the error and
 * return EXIT_FAIL.  A connection kept with ctl_connect stays open (and is
 * reopened after a transport failure); otherwise each call has its own.
 */
int ctl_call(struct ctl *c, json_object *req, json_object **result,
	     int timeout_ms);
/* The same, quiet: a negative errno with err saying why. */
int ctl_exchange(struct ctl *c, json_object *req, json_object **result,
		 int timeout_ms, struct xlb_err *err);
int ctl_connect(struct ctl *c);		/* keep a connection for ctl_call */
void ctl_disconnect(struct ctl *c);
void ctl_print_json(const json_object *o);
int ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* args.c */
/*
 * A VIP argument at position pos (counted from the object, 1-based) in
 * canonical text; EXIT_USAGE with the error printed, or 0.
 */
int arg_vip(const char *topic, int pos, const char *tok,
	    char out[XLB_VIP_STR_MAX]);
/* A flow for explain from argv words; canonical "PROTO SRC -> DST". */
int arg_flow(int argc, char **argv, int pos0, char *out, size_t len);
/* Numbers of --interval (seconds) and --count. */
int arg_interval(const char *topic, int pos, const char *tok, double *out);
int arg_count(const char *topic, int pos, const char *tok, uint64_t *out);
/* Report a global option given after the object. */
int arg_misplaced(const char *topic, int argc, char **argv);

/* commands.c */
int cmd_set(struct ctl *c, int argc, char **argv);
int cmd_link(struct ctl *c, int argc, char **argv);
int cmd_vip(struct ctl *c, int argc, char **argv);
int cmd_backend(struct ctl *c, int argc, char **argv);
int cmd_save(struct ctl *c, int argc, char **argv);
int cmd_restore(struct ctl *c, int argc, char **argv);
int cmd_reload(struct ctl *c, int argc, char **argv);
int cmd_shutdown(struct ctl *c, int argc, char **argv);

/* show.c */
int show_links(struct ctl *c, int argc, char **argv);
int show_vips(struct ctl *c, int argc, char **argv);
int show_backends(struct ctl *c, int argc, char **argv);
int cmd_table(struct ctl *c, int argc, char **argv);
int cmd_status(struct ctl *c, int argc, char **argv);
int cmd_explain(struct ctl *c, int argc, char **argv);
int cmd_cluster(struct ctl *c, int argc, char **argv);
int cmd_host(struct ctl *c, int argc, char **argv);

/* watch.c, top.c */
int cmd_stats(struct ctl *c, int argc, char **argv);
int cmd_top(struct ctl *c, int argc, char **argv);

/* render.c */
void render_links(FILE *f, json_object *links);
void render_vips(FILE *f, json_object *res);
void render_vip_detail(FILE *f, json_object *vip);
void render_backends(FILE *f, json_object *res);
void render_table(FILE *f, json_object *res);
void render_status(FILE *f, json_object *res);
void render_explain(FILE *f, json_object *res);
void render_stats(FILE *f, json_object *res);
void render_cluster(FILE *f, json_object *res);
void render_host(FILE *f, json_object *res);

#endif /* XLBCTL_H */
