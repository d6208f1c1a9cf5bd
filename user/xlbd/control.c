// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket (protocol in user/lib/proto.h): a Unix stream socket,
 * newline-delimited JSON messages, one answer per request.  Every
 * mutating request is validated whole against a copy of the desired state
 * and committed whole (realize.c) or not at all.
 *
 * Hostile or slow peers cannot hold the loop or its memory: a peer's
 * credentials are known from accept on, and one that may only read may
 * send XLB_MSG_READ_MAX bytes at most (XLB_MSG_MAX if it may change
 * state); a message's shape is checked before json-c parses it (a few
 * bytes a JSON object cost far more parsed); answers are queued and sent
 * as the peer reads them, while its further requests wait; a message not
 * finished, or an answer not read, within XLB_MSG_TIMEOUT_MS ends the
 * connection; and readers get at most XLBD_CLIENTS_MAX -
 * XLBD_CLIENTS_RESERVED of the client slots.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cluster.h"
#include "config.h"
#include "mono.h"
#include "proto.h"
#include "request.h"
#include "xlbd.h"

/* Client slots only peers that may change state may take. */
#define XLBD_CLIENTS_RESERVED	8

struct xlbd_client {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool priv;		/* may change state */
	size_t max;		/* bytes a message of it may have */
	char *buf;		/* what it sent, not handled yet */
	size_t len, cap;
	uint64_t since_ms;	/* its unfinished message began (or it is
				 * idle since) */
	char *out;		/* answers not sent yet, or NULL */
	size_t out_len, out_off;
	uint64_t out_ms;	/* last progress sending them */
	uint32_t events;	/* what epoll waits for on it */
	bool eof;		/* it sent all: close once out is sent */
	uint64_t serial;	/* names it for a deferred answer */
	bool parked;		/* its request is answered later */
	bool resume;		/* answered: go on with its buffer */
};

/* Is another daemon answering on path?  A stale socket file is not one. */
static bool socket_alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	alive = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return alive;
}

int xlbd_control_open(struct xlbd *d, int epfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	char dir[sizeof(sa.sun_path)], *slash;
	int ret, e;
	gid_t gid;

	if (strlen(d->o.socket) >= sizeof(sa.sun_path)) {
		log_err("socket path %s is longer than %zu bytes", d->o.socket,
			sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", d->o.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			log_err("cannot create %s: %s", dir, strerror(errno));
			return -errno;
		}
	}
	if (socket_alive(d->o.socket)) {
		log_err("another xlbd answers on %s; stop it first (or choose --instance/--socket)",
			d->o.socket);
		return -EADDRINUSE;
	}
	unlink(d->o.socket);
	d->clients = calloc(XLBD_CLIENTS_MAX, sizeof(*d->clients));
	if (!d->clients)
		return -ENOMEM;
	d->ctl_epfd = epfd;
	d->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   0);
	if (d->ctl_fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->o.socket);
	/*
	 * The socket is made with the group as this thread's file system
	 * group (CAP_SETGID, which xlbd holds until it gives its rights up),
	 * so the chown below changes nothing and needs no CAP_CHOWN, which
	 * dist/xlbd.service does not grant.
	 */
	gid = (gid_t)setfsgid(d->group_set ? d->group_gid : 0);
	ret = bind(d->ctl_fd, (struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	setfsgid(gid);
	errno = e;
	if (ret || chmod(d->o.socket, 0660) ||
	    chown(d->o.socket, 0, d->group_set ? d->group_gid : 0) ||
	    listen(d->ctl_fd, 64)) {
		e = errno;
		log_err("cannot listen on %s: %s", d->o.socket, strerror(e));
		close(d->ctl_fd);
		d->ctl_fd = -1;
		return -e;
	}
	ev.data.fd = d->ctl_fd;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, d->ctl_fd, &ev))
		return -errno;
	log_info("control socket %s", d->o.socket);
	return 0;
}

static struct xlbd_client *client_of(struct xlbd *d, int fd)
{
	size_t i;

	for (i = 0; i < d->n_clients; i++)
		if (d->clients[i].fd == fd)
			return &d->clients[i];
	return NULL;
}

static void client_close(struct xlbd *d, struct xlbd_client *c)
{
	epoll_ctl(d->ctl_epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->buf);
	free(c->out);
	*c = d->clients[--d->n_clients];
}

/* What epoll waits for on c: its answer to go out, else its next request. */
static void client_watch(struct xlbd *d, struct xlbd_client *c)
{
	struct epoll_event ev = { .data.fd = c->fd };

	if (c->out)
		ev.events = EPOLLOUT;
	else if (c->parked || c->eof)
		ev.events = 0;		/* a hangup is still reported */
	else
		ev.events = EPOLLIN | EPOLLRDHUP;
	if (ev.events != c->events &&
	    !epoll_ctl(d->ctl_epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->events = ev.events;
}

/* Send what c reads now of its answers; -errno when it is gone. */
static int client_flush(struct xlbd_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w < 0) {
			free(c->out);
			c->out = NULL;
			return -errno;
		}
		c->out_off += (size_t)w;
		c->out_ms = xlb_mono_ms();
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	c->since_ms = xlb_mono_ms();	/* idle from now */
	return 0;
}

static json_object *answer_new(bool ok)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "version",
			       json_object_new_int(XLB_PROTO_VERSION));
	json_object_object_add(a, "ok", json_object_new_boolean(ok));
	return a;
}

/* Queue answer a (consumed) for c and send what it takes now. */
static void answer(struct xlbd *d, struct xlbd_client *c, json_object *a)
{
	size_t len;
	const char *s = json_object_to_json_string_ext(a,
						       JSON_C_TO_STRING_PLAIN);
	char *o;

	len = strlen(s);
	o = realloc(c->out, c->out_len + len + 1);
	if (o) {
		memcpy(o + c->out_len, s, len);
		o[c->out_len + len] = '\n';
		c->out = o;
		c->out_len += len + 1;
		if (c->out_off == 0)
			c->out_ms = xlb_mono_ms();
		client_flush(c);
	}
	json_object_put(a);
	client_watch(d, c);
}

static void answer_error(struct xlbd *d, struct xlbd_client *c,
			 const char *msg)
{
	json_object *a = answer_new(false);

	json_object_object_add(a, "error", json_object_new_string(msg));
	answer(d, c, a);
}

static void answer_ok(struct xlbd *d, struct xlbd_client *c,
		      json_object *result)
{
	json_object *a = answer_new(true);

	json_object_object_add(a, "result",
			       result ? result : json_object_new_object());
	answer(d, c, a);
}

/* An error to a connection about to be closed: what the socket takes. */
static void refuse(int fd, const char *msg)
{
	json_object *a = answer_new(false);
	const char *s;

	json_object_object_add(a, "error", json_object_new_string(msg));
	s = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN);
	if (send(fd, s, strlen(s), MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
		send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	json_object_put(a);
}

/* --- mutating requests ---------------------------------------------------- */


static json_object *change_result(struct xlbd *d, bool changed)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "changed", json_object_new_boolean(changed));
	/* request received -> last of its tables live in the data path */
	if (changed && d->last_publish_at >= d->ctl_request_at)
		json_object_object_add(r, "live_ms", json_object_new_double(
			(d->last_publish_at - d->ctl_request_at) * 1e3));
	json_object_object_add(r, "generation",
			       json_object_new_int64((int64_t)d->generation));
	if (changed) {
		json_object *p = json_object_new_object();

#define PH(name)	json_object_object_add(p, #name, \
				json_object_new_double(d->ph.name))
		PH(parse);
		PH(commit);
		PH(build);
		PH(publish);
		PH(pool);
		PH(reconcile);
		PH(save);
		PH(runtime_save);
#undef PH
		/* request received -> this answer made */
		json_object_object_add(p, "answer", json_object_new_double(
			(xlbd_now() - d->ctl_request_at) * 1e3));
		json_object_object_add(r, "phases_ms", p);
	}
	return r;
}

/* Replace the desired state by s (consumed on success). */
static int commit_state(struct xlbd *d, struct xlb_state *s, bool *changed,
			struct xlb_err *err)
{
	double t0, t1;
	int ret;

	*changed = !xlb_state_equal(&d->state, s);
	if (!*changed)
		return 0;
	t0 = xlbd_now();
	d->ph.parse = (t0 - d->ctl_request_at) * 1e3;
	d->ph.pool = d->ph.build = d->ph.publish = d->ph.reconcile = 0;
	d->save_on_accept = true;
	ret = xlbd_commit(d, s, err);
	d->save_on_accept = false;
	if (ret)
		return ret;
	t1 = xlbd_now();
	d->ph.commit = (t1 - t0) * 1e3 - d->ph.pool - d->ph.reconcile;
	/* begun when the commit was accepted; the answer waits for it */
	xlbd_save_wait(d);
	d->ph.save = (xlbd_now() - t1) * 1e3;
	return 0;
}

static int string_array(json_object *a, const char *what, size_t max,
			size_t maxlen, char ***out, size_t *n,
			struct xlb_err *err)
{
	size_t i, len;
	char **v;

	if (!json_object_is_type(a, json_type_array))
		return xlb_errf(err, EINVAL, "\"%s\" must be an array of strings",
				what);
	len = json_object_array_length(a);
	if (!len)
		return xlb_errf(err, EINVAL, "\"%s\" is empty", what);
	if (len > max)
		return xlb_errf(err, E2BIG, "\"%s\" has %zu elements; at most %zu",
				what, len, max);
	v = calloc(len + 1, sizeof(*v));
	if (!v)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < len; i++) {
		json_object *e = json_object_array_get_idx(a, i);

		if (!json_object_is_type(e, json_type_string) ||
		    (size_t)json_object_get_string_len(e) > maxlen ||
		    strlen(json_object_get_string(e)) !=
		    (size_t)json_object_get_string_len(e)) {
			free(v);
			return xlb_errf(err, EINVAL,
					"\"%s\" element %zu must be a string of at most %zu bytes without NUL",
					what, i + 1, maxlen);
		}
		v[i] = (char *)json_object_get_string(e);
	}
	*out = v;
	*n = len;
	return 0;
}

/*
 * In cluster mode, where the commands go: 0 (this host's settings),
 * XLB_SCOPE_CLUSTER + 1 (the shared configuration, in etcd), or -errno
 * when they mix the two or cannot be in either.
 */
static int cluster_scope(const struct xlb_op *ops, size_t n,
			 struct xlb_err *err)
{
	int first = -1, sc;
	size_t i;

	for (i = 0; i < n; i++) {
		struct xlb_err e = { "" };

		sc = xlb_cluster_op_scope(&ops[i], &e);
		if (sc < 0)
			return n > 1 ? xlb_errf(err, -sc, "line %zu: %s", i + 1,
						e.msg) :
				       xlb_errf(err, -sc, "%s", e.msg);
		if (first >= 0 && sc != first)
			return xlb_errf(err, EINVAL,
					"line %zu: these commands mix this host's settings (link, set src4, set src6, set announce) with the cluster's configuration; send them apart",
					i + 1);
		first = sc;
	}
	return first == XLB_SCOPE_CLUSTER ? XLB_SCOPE_CLUSTER + 1 : 0;
}

static int do_exec(struct xlbd *d, json_object *req, json_object **res,
		   struct xlb_err *err)
{
	json_object *args, *lines;
	struct xlb_op *ops = NULL;
	struct xlb_state s;
	char **v = NULL;
	size_t n = 0, i;
	bool has_args, has_lines, changed;
	int ret;

	has_args = json_object_object_get_ex(req, "args", &args);
	has_lines = json_object_object_get_ex(req, "lines", &lines);
	if (has_args == has_lines)
		return xlb_errf(err, EINVAL,
				"exec takes exactly one of \"args\" (one command's words) or \"lines\" (command lines)");
	if (has_args) {
		ret = string_array(args, "args", XLB_TOKENS_MAX, XLB_LINE_MAX,
				   &v, &n, err);
		if (ret)
			return ret;
		ops = calloc(1, sizeof(*ops));
		if (!ops) {
			free(v);
			return xlb_errf(err, ENOMEM, "out of memory");
		}
		ret = xlb_op_parse_argv((int)n, v, ops, err);
		n = 1;
	} else {
		ret = string_array(lines, "lines", XLB_MSG_LINES_MAX, XLB_LINE_MAX, &v,
				   &n, err);
		if (ret)
			return ret;
		ops = calloc(n, sizeof(*ops));
		if (!ops) {
			free(v);
			return xlb_errf(err, ENOMEM, "out of memory");
		}
		for (i = 0, ret = 0; i < n && !ret; i++) {
			struct xlb_err e = { "" };
			int empty = 0;

			ret = xlb_op_parse_line(v[i], &ops[i], &empty, &e);
			if (ret)
				xlb_errf(err, -ret, "line %zu: %s", i + 1, e.msg);
			else if (empty)
				ret = xlb_errf(err, EINVAL,
					       "line %zu: no command", i + 1);
		}
	}
	free(v);
	if (!ret && d->cl)
		ret = cluster_scope(ops, n, err);
	if (ret == XLB_SCOPE_CLUSTER + 1) {
		ret = xlbd_cluster_exec(d, ops, n, res, err);
		free(ops);
		return ret;
	}
	if (ret) {
		free(ops);
		return ret;
	}
	xlb_state_init(&s);
	ret = xlb_state_copy(&s, &d->state);
	if (!ret)
		ret = xlb_state_apply_all(&s, ops, n, err);
	else
		xlb_errf(err, -ret, "out of memory");
	free(ops);
	if (!ret)
		ret = commit_state(d, &s, &changed, err);
	xlb_state_free(&s);
	if (!ret)
		*res = change_result(d, changed);
	return ret;
}

int xlbd_restore_text(struct xlbd *d, const char *text, size_t len,
		      const char *name, struct xlb_err *err)
{
	struct xlb_state s;
	bool changed;
	int ret;

	ret = xlb_config_parse(text, len, name, &s, err);
	if (ret)
		return ret;
	ret = commit_state(d, &s, &changed, err);
	xlb_state_free(&s);
	if (!ret)
		log_notice("configuration %s applied (%s)", name,
			   changed ? "changed" : "no change");
	return ret;
}

static int do_restore(struct xlbd *d, json_object *req, json_object **res,
		      struct xlb_err *err)
{
	json_object *t, *nm;
	const char *name = "<restore>";
	uint64_t g = d->generation;
	int ret;

	if (!json_object_object_get_ex(req, "text", &t) ||
	    !json_object_is_type(t, json_type_string))
		return xlb_errf(err, EINVAL,
				"restore needs \"text\": the configuration as a string");
	if (json_object_object_get_ex(req, "name", &nm)) {
		if (!json_object_is_type(nm, json_type_string))
			return xlb_errf(err, EINVAL, "\"name\" must be a string");
		name = json_object_get_string(nm);
	}
	if ((size_t)json_object_get_string_len(t) > XLB_FILE_MAX)
		return xlb_errf(err, EFBIG, "%s: larger than %u bytes", name,
				XLB_FILE_MAX);
	if (d->cl)
		return xlbd_cluster_restore(d, json_object_get_string(t),
					    (size_t)json_object_get_string_len(t),
					    name, res, err);
	ret = xlbd_restore_text(d, json_object_get_string(t),
				(size_t)json_object_get_string_len(t), name,
				err);
	if (!ret)
		*res = change_result(d, d->generation != g);
	return ret;
}

static int do_reload(struct xlbd *d, json_object **res, struct xlb_err *err)
{
	struct xlb_state s;
	uint64_t g = d->generation;
	bool found, changed;
	int ret;

	ret = xlbd_load_file(d->o.config, &s, &found, err);
	if (ret)
		return ret;
	if (!found)
		return xlb_errf(err, ENOENT, "no config file %s", d->o.config);
	if (d->cl) {
		struct xlb_state eff;

		ret = xlbd_cluster_local(d, &s, d->o.config, &eff, err);
		xlb_state_free(&s);
		if (ret)
			return ret;
		s = eff;
	}
	ret = commit_state(d, &s, &changed, err);
	xlb_state_free(&s);
	if (ret)
		return ret;
	log_notice("configuration %s reloaded (%s)", d->o.config,
		   changed ? "changed" : "no change");
	*res = change_result(d, d->generation != g);
	json_object_object_add(*res, "file",
			       json_object_new_string(d->o.config));
	return 0;
}

/* --- dispatch ------------------------------------------------------------- */

static const char *opt_string(json_object *req, const char *key, bool *bad)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*bad = true;
		return NULL;
	}
	return json_object_get_string(v);
}

/*
 * The configuration text as a reader may see it: its "set key" line (the
 * cluster secret, which tells where any flow goes) replaced by a note.
 * NULL when out of memory.
 */
static char *without_key(const char *text)
{
	static const char note[] =
		"# set key: shown to root and the daemon's group only";
	const char *p = text, *eol;
	size_t pre;
	char *o;

	while (p && strncmp(p, "set key ", 8)) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return strdup(text);
	eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);
	pre = (size_t)(p - text);
	o = malloc(pre + sizeof(note) + strlen(eol));
	if (!o)
		return NULL;
	memcpy(o, text, pre);
	memcpy(o + pre, note, sizeof(note) - 1);
	strcpy(o + pre + sizeof(note) - 1, eol);
	return o;
}

static void handle(struct xlbd *d, struct xlbd_client *c, const char *msg,
		   size_t len)
{
	json_object *req, *res = NULL;
	struct xlb_err err = { "" };
	struct xlb_request rq;
	const char *cmd, *arg;
	bool bad = false;
	int ret = 0;

	d->ctl_request_at = xlbd_now();
	if (xlb_request_parse(msg, len, &rq, &err)) {
		answer_error(d, c, err.msg);
		return;
	}
	req = rq.obj;
	cmd = rq.cmd->name;
	if (rq.cmd->privileged && !c->priv) {
		snprintf(err.msg, sizeof(err.msg),
			 "permission denied: %s %s, which needs root%s (you are uid %u)",
			 cmd, rq.cmd->mutating ? "changes state" :
			 "computes the keyed hash of any flow",
			 d->group_set ? " or the daemon's group" : "",
			 (unsigned int)c->uid);
		answer_error(d, c, err.msg);
		log_warn("refused %s from uid %u pid %d", cmd,
			 (unsigned int)c->uid, (int)c->pid);
		goto out;
	}

	arg = opt_string(req, rq.cmd->args[0] ? rq.cmd->args[0] : "",
			 &bad);
	if (bad && strcmp(cmd, "exec") && strcmp(cmd, "restore")) {
		snprintf(err.msg, sizeof(err.msg), "\"%s\" must be a string",
			 rq.cmd->args[0]);
		answer_error(d, c, err.msg);
		goto out;
	}

	pthread_mutex_lock(&d->lock);
	d->ctl_current = c;
	if (!strcmp(cmd, "exec")) {
		ret = do_exec(d, req, &res, &err);
	} else if (!strcmp(cmd, "restore")) {
		ret = do_restore(d, req, &res, &err);
	} else if (!strcmp(cmd, "reload")) {
		ret = do_reload(d, &res, &err);
	} else if (!strcmp(cmd, "shutdown")) {
		d->stop = d->shutdown = true;
		log_notice("shutdown requested by uid %u pid %d",
			   (unsigned int)c->uid, (int)c->pid);
	} else if (!strcmp(cmd, "save")) {
		char *text = NULL;

		ret = xlb_config_save(&d->state, &text);
		if (!ret && !c->priv) {
			char *t = without_key(text);

			free(text);
			text = t;
			ret = t ? 0 : -ENOMEM;
		}
		if (ret) {
			xlb_errf(&err, -ret, "out of memory");
		} else {
			res = json_object_new_object();
			json_object_object_add(res, "text",
					       json_object_new_string(text));
			free(text);
		}
	} else if (!strcmp(cmd, "status")) {
		res = xlbd_show_status(d);
	} else if (!strcmp(cmd, "link.show")) {
		res = xlbd_show_links(d);
	} else if (!strcmp(cmd, "vip.show")) {
		ret = xlbd_show_vips(d, arg, &res, &err);
	} else if (!strcmp(cmd, "backend.show")) {
		ret = arg ? xlbd_show_backends(d, arg, &res, &err) :
			xlb_errf(&err, EINVAL, "backend.show needs \"vip\"");
	} else if (!strcmp(cmd, "table.show")) {
		ret = arg ? xlbd_show_table(d, arg, &res, &err) :
			xlb_errf(&err, EINVAL, "table.show needs \"vip\"");
	} else if (!strcmp(cmd, "stats")) {
		ret = xlbd_show_stats(d, arg, &res, &err);
	} else if (!strcmp(cmd, "explain")) {
		ret = arg ? xlbd_explain(d, arg, &res, &err) :
			xlb_errf(&err, EINVAL, "explain needs \"flow\"");
	} else if (!strcmp(cmd, "host.show")) {
		res = xlbd_announce_show(d);
	} else if (!strcmp(cmd, "host.drain") ||
		   !strcmp(cmd, "host.undrain")) {
		ret = xlbd_announce_drain(d, !strcmp(cmd, "host.drain"), &err);
		if (!ret)
			res = xlbd_announce_show(d);
	} else if (!strcmp(cmd, "cluster.status")) {
		if (d->cl)
			res = xlbd_cluster_show(d);
		else
			ret = xlb_errf(&err, ENOTCONN,
				       "this xlbd runs alone, not in a cluster (xlbd --etcd URL --cluster NAME)");
	}
	d->ctl_current = NULL;
	pthread_mutex_unlock(&d->lock);

	if (ret > 0) {
		/* parked: answered when the cluster write is done */
	} else if (ret) {
		json_object_put(res);
		answer_error(d, c, err.msg[0] ? err.msg : strerror(-ret));
		if (rq.cmd->mutating)
			log_info("refused %s: %s", cmd, err.msg);
	} else {
		answer_ok(d, c, res);
	}
out:
	xlb_request_free(&rq);
}

/*
 * May the peer on fd change state: root, or a member of --group, as its
 * primary group or a supplementary one (SO_PEERGROUPS: the groups it had
 * when it connected; else the group database's list for its user).
 */
static bool may_change(const struct xlbd *d, int fd, const struct ucred *cr)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool member = false;
	size_t i, n;
	int ret;

	if (cr->uid == 0)
		return true;
	if (!d->group_set)
		return false;
	if (cr->gid == d->group_gid)
		return true;
	ret = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (ret && errno == ERANGE) {
		groups = malloc(len);
		if (!groups ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
			free(groups);
			return false;
		}
	} else if (ret && errno == ENOPROTOOPT) {
		/* a kernel before 4.13: what the group database says */
		struct passwd pw, *pp = NULL;
		char buf[4096];
		int ng = 64;

		if (getpwuid_r(cr->uid, &pw, buf, sizeof(buf), &pp) || !pp ||
		    getgrouplist(pp->pw_name, cr->gid, small, &ng) < 0)
			return false;
		len = (socklen_t)((size_t)ng * sizeof(gid_t));
	} else if (ret) {
		return false;
	}
	n = len / sizeof(gid_t);
	for (i = 0; i < n && !member; i++)
		member = groups[i] == d->group_gid;
	if (groups != small)
		free(groups);
	return member;
}

static void accept_clients(struct xlbd *d)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct xlbd_client *c;
		size_t i, readers = 0;
		bool priv;
		int fd;

		fd = accept4(d->ctl_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
			close(fd);
			continue;
		}
		priv = may_change(d, fd, &cr);
		for (i = 0; i < d->n_clients; i++)
			readers += !d->clients[i].priv;
		if (d->n_clients == XLBD_CLIENTS_MAX ||
		    (!priv && readers >=
		     XLBD_CLIENTS_MAX - XLBD_CLIENTS_RESERVED)) {
			refuse(fd, "too many clients; try again");
			close(fd);
			continue;
		}
		c = &d->clients[d->n_clients];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = cr.pid;
		c->priv = priv;
		c->max = priv ? XLB_MSG_MAX : XLB_MSG_READ_MAX;
		c->since_ms = xlb_mono_ms();
		c->serial = ++d->ctl_next_serial;
		c->events = ev.events;
		ev.data.fd = fd;
		if (epoll_ctl(d->ctl_epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			continue;
		}
		d->n_clients++;
		/*
		 * A client that connected while the daemon was busy (its
		 * start, a large change) has usually sent its request too:
		 * read it now, not after the rest of this turn's work.
		 */
		xlbd_control_event(d, d->ctl_epfd, fd, EPOLLIN);
	}
}

/*
 * Answer the complete lines of c's buffer, one at a time while its
 * answers go out; false when the daemon stops.
 */
static bool drain_lines(struct xlbd *d, struct xlbd_client *c)
{
	size_t start = 0;
	char *nl;

	while (!c->parked && !c->out &&
	       (nl = memchr(c->buf + start, '\n', c->len - start))) {
		size_t len = (size_t)(nl - (c->buf + start));

		if (len)
			handle(d, c, c->buf + start, len);
		start += len + 1;
		if (d->stop)
			break;
	}
	if (start) {
		memmove(c->buf, c->buf + start, c->len - start);
		c->len -= start;
		c->since_ms = xlb_mono_ms();
	}
	return !d->stop;
}

static void too_large(struct xlbd *d, struct xlbd_client *c)
{
	char m[160];

	snprintf(m, sizeof(m), "message larger than %zu bytes%s", c->max,
		 c->priv ? "" :
		 " (a request that changes state may be larger; it needs root or the daemon's group)");
	refuse(c->fd, m);
	log_info("closed the connection of uid %u pid %d: %s",
		 (unsigned int)c->uid, (int)c->pid, m);
	client_close(d, c);
}

void xlbd_control_event(struct xlbd *d, int epfd, int fd, uint32_t events)
{
	struct xlbd_client *c;

	(void)epfd;
	if (fd == d->ctl_fd) {
		accept_clients(d);
		return;
	}
	c = client_of(d, fd);
	if (!c)
		return;
	if (c->out) {
		if (client_flush(c) || (!c->out && c->eof)) {
			client_close(d, c);
			return;
		}
		client_watch(d, c);
		if (c->out || !drain_lines(d, c))
			return;
		client_watch(d, c);
		return;		/* more input comes as an event of its own */
	}
	if (c->parked || c->eof) {
		if (events & (EPOLLHUP | EPOLLERR))
			client_close(d, c);
		return;
	}
	for (;;) {
		ssize_t r;

		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 8192;
			char *b;

			if (c->cap >= c->max) {
				too_large(d, c);
				return;
			}
			if (cap > c->max)
				cap = c->max;
			b = realloc(c->buf, cap);
			if (!b) {
				client_close(d, c);
				return;
			}
			c->buf = b;
			c->cap = cap;
		}
		r = recv(fd, c->buf + c->len, c->cap - c->len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0) {
			/* end of input: a last message without newline */
			c->eof = true;
			if (c->len && !c->out) {
				handle(d, c, c->buf, c->len);
				c->len = 0;
			}
			if (!c->out && !c->parked)
				client_close(d, c);
			else
				client_watch(d, c);
			return;
		}
		if (!c->len)
			c->since_ms = xlb_mono_ms();
		c->len += (size_t)r;
		if (!drain_lines(d, c))
			return;
		if (c->out || c->parked) {
			/* the rest waits until its answer is out */
			client_watch(d, c);
			return;
		}
		if (c->len == c->max) {
			too_large(d, c);
			return;
		}
	}
}

void xlbd_control_sweep(struct xlbd *d, int epfd)
{
	uint64_t now = xlb_mono_ms();
	size_t i = 0;

	(void)epfd;
	while (i < d->n_clients) {
		struct xlbd_client *c = &d->clients[i];

		if (c->out) {
			if (now - c->out_ms < XLB_MSG_TIMEOUT_MS) {
				i++;
				continue;
			}
			log_info("closed the connection of uid %u pid %d: it did not read its answer",
				 (unsigned int)c->uid, (int)c->pid);
		} else if (c->parked || now - c->since_ms < XLB_MSG_TIMEOUT_MS) {
			i++;
			continue;
		} else if (c->len) {
			refuse(c->fd, "message not finished in time (no newline)");
		}
		client_close(d, c);
	}
}

uint64_t xlbd_control_defer(struct xlbd *d)
{
	if (!d->ctl_current)
		return 0;
	d->ctl_current->parked = true;
	return d->ctl_current->serial;
}

double xlbd_control_request_at(const struct xlbd *d)
{
	return d->ctl_request_at;
}

void xlbd_control_answer(struct xlbd *d, uint64_t ticket, int ret,
			 const char *msg, json_object *result)
{
	size_t i;

	for (i = 0; i < d->n_clients; i++) {
		struct xlbd_client *c = &d->clients[i];

		if (c->serial != ticket || !c->parked)
			continue;
		c->parked = false;
		if (ret) {
			answer_error(d, c, msg ? msg : strerror(-ret));
			log_info("refused exec: %s", msg ? msg : strerror(-ret));
		} else {
			answer_ok(d, c, result);
			result = NULL;
		}
		c->resume = c->len > 0;
		c->since_ms = xlb_mono_ms();
		if (c->eof && !c->out)
			client_close(d, c);
		break;
	}
	json_object_put(result);	/* the client went away meanwhile */
}

void xlbd_control_resume(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_clients; i++)
		if (d->clients[i].resume && !d->clients[i].out) {
			d->clients[i].resume = false;
			drain_lines(d, &d->clients[i]);
			client_watch(d, &d->clients[i]);
		}
}

void xlbd_control_close(struct xlbd *d)
{
	while (d->n_clients) {
		close(d->clients[d->n_clients - 1].fd);
		free(d->clients[d->n_clients - 1].buf);
		d->n_clients--;
	}
	free(d->clients);
	d->clients = NULL;
	if (d->ctl_fd >= 0) {
		close(d->ctl_fd);
		d->ctl_fd = -1;
		unlink(d->o.socket);
	}
}
