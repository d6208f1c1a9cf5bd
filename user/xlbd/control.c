// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket (protocol in user/lib/proto.h): a Unix stream socket,
 * newline-delimited JSON messages, one answer per request.  Every
 * mutating request is validated whole against a copy of the desired state
 * and committed whole (realize.c) or not at all.
 *
 * Answers are written with a send timeout (XLB_MSG_TIMEOUT_MS), so a
 * client that never reads cannot hold the daemon longer than that; one
 * that connects and never sends is closed after the same time.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cluster.h"
#include "config.h"
#include "mono.h"
#include "proto.h"
#include "xlbd.h"

struct xlbd_client {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char *buf;
	size_t len, cap;
	uint64_t last_ms;	/* last byte received (or accepted) */
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
	d->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   0);
	if (d->ctl_fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->o.socket);
	if (bind(d->ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(d->o.socket, 0660) ||
	    chown(d->o.socket, 0, d->group_set ? d->group_gid : 0) ||
	    listen(d->ctl_fd, 64)) {
		int e = errno;

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

static void client_close(struct xlbd *d, int epfd, struct xlbd_client *c)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->buf);
	*c = d->clients[--d->n_clients];
}

static void send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t w = send(fd, s, len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;		/* timeout or gone: the client's loss */
		}
		s += w;
		len -= (size_t)w;
	}
}

static void answer(int fd, json_object *ans)
{
	const char *s = json_object_to_json_string_ext(ans,
						       JSON_C_TO_STRING_PLAIN);

	send_all(fd, s, strlen(s));
	send_all(fd, "\n", 1);
}

static void answer_error(int fd, const char *msg)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "version",
			       json_object_new_int(XLB_PROTO_VERSION));
	json_object_object_add(a, "ok", json_object_new_boolean(0));
	json_object_object_add(a, "error", json_object_new_string(msg));
	answer(fd, a);
	json_object_put(a);
}

static void answer_ok(int fd, json_object *result)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "version",
			       json_object_new_int(XLB_PROTO_VERSION));
	json_object_object_add(a, "ok", json_object_new_boolean(1));
	json_object_object_add(a, "result",
			       result ? result : json_object_new_object());
	answer(fd, a);
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
	return r;
}

/* Replace the desired state by s (consumed on success). */
static int commit_state(struct xlbd *d, struct xlb_state *s, bool *changed,
			struct xlb_err *err)
{
	int ret;

	*changed = !xlb_state_equal(&d->state, s);
	if (!*changed)
		return 0;
	ret = xlbd_commit(d, s, err);
	if (ret)
		return ret;
	xlbd_save_state(d);
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
		ret = string_array(lines, "lines", 100000, XLB_LINE_MAX, &v,
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

/* The arguments each command accepts besides version and cmd. */
static const struct {
	const char *cmd;
	bool mutating;
	const char *args[3];
} commands[] = {
	{ "exec", true, { "args", "lines" } },
	{ "restore", true, { "text", "name" } },
	{ "reload", true, { NULL } },
	{ "shutdown", true, { NULL } },
	{ "save", false, { NULL } },
	{ "status", false, { NULL } },
	{ "link.show", false, { NULL } },
	{ "vip.show", false, { "vip" } },
	{ "backend.show", false, { "vip" } },
	{ "table.show", false, { "vip" } },
	{ "stats", false, { "vip" } },
	{ "explain", false, { "flow" } },
	{ "cluster.status", false, { NULL } },
	{ "host.show", false, { NULL } },
	{ "host.drain", true, { NULL } },
	{ "host.undrain", true, { NULL } },
};

static bool may_change(const struct xlbd *d, const struct xlbd_client *c)
{
	return c->uid == 0 || (d->group_set && c->gid == d->group_gid);
}

static void handle(struct xlbd *d, struct xlbd_client *c, const char *msg,
		   size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	json_object *req, *v, *res = NULL;
	struct xlb_err err = { "" };
	const char *cmd, *arg;
	size_t k, a;
	bool bad = false;
	int ret = 0;

	d->ctl_request_at = xlbd_now();
	if (!tok) {
		answer_error(c->fd, "out of memory");
		return;
	}
	req = json_tokener_parse_ex(tok, msg, (int)len);
	if (!req || json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		snprintf(err.msg, sizeof(err.msg),
			 "not a JSON message: %s",
			 je == json_tokener_continue ? "it ends too early" :
			 !req ? json_tokener_error_desc(je) :
			 "text after the object");
		json_object_put(req);
		json_tokener_free(tok);
		answer_error(c->fd, err.msg);
		return;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(req, json_type_object)) {
		answer_error(c->fd, "a request must be a JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(req, "version", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		answer_error(c->fd, "a request needs \"version\": 1");
		goto out;
	}
	if (json_object_get_int64(v) != XLB_PROTO_VERSION) {
		snprintf(err.msg, sizeof(err.msg),
			 "unsupported protocol version %lld; this xlbd speaks %d",
			 (long long)json_object_get_int64(v), XLB_PROTO_VERSION);
		answer_error(c->fd, err.msg);
		goto out;
	}
	if (!json_object_object_get_ex(req, "cmd", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		answer_error(c->fd, "a request needs \"cmd\": a command name");
		goto out;
	}
	cmd = json_object_get_string(v);
	for (k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(commands[k].cmd, cmd))
			break;
	if (k == sizeof(commands) / sizeof(commands[0])) {
		snprintf(err.msg, sizeof(err.msg),
			 "unknown command \"%.40s\" (known: exec, restore, reload, save, shutdown, status, link.show, vip.show, backend.show, table.show, stats, explain, cluster.status, host.show, host.drain, host.undrain)",
			 cmd);
		answer_error(c->fd, err.msg);
		goto out;
	}
	json_object_object_foreach(req, key, val) {
		(void)val;
		if (!strcmp(key, "version") || !strcmp(key, "cmd"))
			continue;
		for (a = 0; a < 3 && commands[k].args[a]; a++)
			if (!strcmp(commands[k].args[a], key))
				break;
		if (a == 3 || !commands[k].args[a]) {
			snprintf(err.msg, sizeof(err.msg),
				 "%s takes no argument \"%.40s\"", cmd, key);
			answer_error(c->fd, err.msg);
			goto out;
		}
	}
	if (commands[k].mutating && !may_change(d, c)) {
		snprintf(err.msg, sizeof(err.msg),
			 "permission denied: %s changes state, which needs root%s (you are uid %u)",
			 cmd, d->group_set ? " or the daemon's group" : "",
			 (unsigned int)c->uid);
		answer_error(c->fd, err.msg);
		log_warn("refused %s from uid %u pid %d", cmd,
			 (unsigned int)c->uid, (int)c->pid);
		goto out;
	}

	arg = opt_string(req, commands[k].args[0] ? commands[k].args[0] : "",
			 &bad);
	if (bad && strcmp(cmd, "exec") && strcmp(cmd, "restore")) {
		snprintf(err.msg, sizeof(err.msg), "\"%s\" must be a string",
			 commands[k].args[0]);
		answer_error(c->fd, err.msg);
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
		answer_error(c->fd, err.msg[0] ? err.msg : strerror(-ret));
		if (commands[k].mutating)
			log_info("refused %s: %s", cmd, err.msg);
	} else {
		answer_ok(c->fd, res);
	}
out:
	json_object_put(req);
}

static void accept_clients(struct xlbd *d, int epfd)
{
	struct timeval tv = { XLB_MSG_TIMEOUT_MS / 1000,
			      (XLB_MSG_TIMEOUT_MS % 1000) * 1000 };

	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct xlbd_client *c;
		int fd;

		fd = accept4(d->ctl_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (d->n_clients == XLBD_CLIENTS_MAX ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
			answer_error(fd, "too many clients; try again");
			close(fd);
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		c = &d->clients[d->n_clients];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = cr.pid;
		c->last_ms = xlb_mono_ms();
		c->serial = ++d->ctl_next_serial;
		ev.data.fd = fd;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			continue;
		}
		d->n_clients++;
	}
}

/* Answer every complete line of c's buffer; false when c must be closed. */
static bool drain_lines(struct xlbd *d, struct xlbd_client *c)
{
	size_t start = 0;
	char *nl;

	while (!c->parked &&
	       (nl = memchr(c->buf + start, '\n', c->len - start))) {
		size_t len = (size_t)(nl - (c->buf + start));

		if (len)
			handle(d, c, c->buf + start, len);
		start += len + 1;
		if (d->stop)
			break;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	return !d->stop;
}

void xlbd_control_event(struct xlbd *d, int epfd, int fd, uint32_t events)
{
	struct xlbd_client *c;

	if (fd == d->ctl_fd) {
		accept_clients(d, epfd);
		return;
	}
	c = client_of(d, fd);
	if (!c)
		return;
	for (;;) {
		ssize_t r;

		if (c->cap - c->len < 4096) {
			size_t cap = c->cap ? c->cap * 2 : 8192;
			char *b;

			if (cap > XLB_MSG_MAX + 4096)
				cap = XLB_MSG_MAX + 4096;
			if (cap - c->len < 1) {
				char m[96];

				snprintf(m, sizeof(m),
					 "message larger than %u bytes",
					 XLB_MSG_MAX);
				answer_error(c->fd, m);
				client_close(d, epfd, c);
				return;
			}
			b = realloc(c->buf, cap);
			if (!b) {
				client_close(d, epfd, c);
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
			if (c->len) {
				handle(d, c, c->buf, c->len);
				c->len = 0;
			}
			client_close(d, epfd, c);
			return;
		}
		c->len += (size_t)r;
		c->last_ms = xlb_mono_ms();
		if (!drain_lines(d, c))
			return;
		if (c->len >= XLB_MSG_MAX) {
			char m[96];

			snprintf(m, sizeof(m), "message larger than %u bytes",
				 XLB_MSG_MAX);
			answer_error(c->fd, m);
			client_close(d, epfd, c);
			return;
		}
	}
	(void)events;
}

void xlbd_control_sweep(struct xlbd *d, int epfd)
{
	uint64_t now = xlb_mono_ms();
	size_t i = 0;

	while (i < d->n_clients) {
		struct xlbd_client *c = &d->clients[i];

		if (c->parked || now - c->last_ms < XLB_MSG_TIMEOUT_MS) {
			i++;
			continue;
		}
		if (c->len)
			answer_error(c->fd,
				     "message not finished in time (no newline)");
		client_close(d, epfd, c);
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
		if (ret) {
			answer_error(c->fd, msg ? msg : strerror(-ret));
			log_info("refused exec: %s", msg ? msg : strerror(-ret));
		} else {
			answer_ok(c->fd, result);
			result = NULL;
		}
		c->parked = false;
		c->resume = c->len > 0;
		c->last_ms = xlb_mono_ms();
		break;
	}
	json_object_put(result);	/* the client went away meanwhile */
}

void xlbd_control_resume(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_clients; i++)
		if (d->clients[i].resume) {
			d->clients[i].resume = false;
			drain_lines(d, &d->clients[i]);
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
