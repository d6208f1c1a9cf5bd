// SPDX-License-Identifier: GPL-2.0
/*
 * The client side of the control protocol (user/lib/proto.h): one JSON object
 * and a newline out, exactly one line back.  Reads peek first and consume
 * only up to the newline, so several requests may share a connection and
 * nothing of a later answer is ever swallowed.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "mono.h"

#define READ_CHUNK	(64u << 10)

int xlb_client_connect(const char *path, struct xlb_err *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	int fd, e;

	if (!len || len >= sizeof(sun.sun_path))
		return xlb_errf(err, ENAMETOOLONG,
				"cannot connect to %.120s: a socket path has 1..%zu bytes",
				path, sizeof(sun.sun_path) - 1);
	memcpy(sun.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return xlb_errf(err, errno, "cannot create a socket: %s",
				strerror(errno));
	if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun)))
		return fd;
	e = errno;
	close(fd);
	return xlb_errf(err, e, "cannot connect to %.150s: %s%s", path,
			strerror(e),
			e == ENOENT || e == ECONNREFUSED ?
			" (is xlbd running?)" : "");
}

/* Wait until fd is ready for events or the deadline passes. */
static int wait_fd(int fd, short events, int64_t deadline,
		   struct xlb_err *err)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - (int64_t)xlb_mono_ms();
		if (left <= 0)
			return xlb_errf(err, ETIMEDOUT,
					"xlbd did not answer in time");
		n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return xlb_errf(err, errno, "poll: %s", strerror(errno));
	}
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline,
		    struct xlb_err *err)
{
	ssize_t n;
	int ret;

	while (len) {
		ret = wait_fd(fd, POLLOUT, deadline, err);
		if (ret)
			return ret;
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return xlb_errf(err, errno,
					"cannot send the request to xlbd: %s",
					strerror(errno));
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Read one line (newline consumed, not stored) into a malloc'd NUL-ended
 * *line: peek, then take bytes only up to the newline.
 */
static int read_line(int fd, char **line, int64_t deadline,
		     struct xlb_err *err)
{
	size_t len = 0, cap = 0, want;
	char *buf = NULL, *tmp, *nl;
	ssize_t n;
	int ret;

	for (;;) {
		if (len + READ_CHUNK + 1 > cap) {
			cap = cap ? cap * 2 : READ_CHUNK * 2;
			tmp = realloc(buf, cap);
			if (!tmp) {
				ret = xlb_errf(err, ENOMEM, "out of memory");
				goto fail;
			}
			buf = tmp;
		}
		ret = wait_fd(fd, POLLIN, deadline, err);
		if (ret)
			goto fail;
		want = READ_CHUNK;
		if (want > XLB_MSG_MAX - len)
			want = XLB_MSG_MAX - len;
		n = recv(fd, buf + len, want, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			ret = xlb_errf(err, errno,
				       "cannot read the answer of xlbd: %s",
				       strerror(errno));
			goto fail;
		}
		if (!n) {
			ret = xlb_errf(err, ECONNRESET,
				       "xlbd closed the connection without a complete answer");
			goto fail;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		if (nl)
			n = nl - (buf + len) + 1;
		n = recv(fd, buf + len, (size_t)n, MSG_DONTWAIT);
		if (n <= 0) {
			ret = xlb_errf(err, EIO, "cannot read the answer of xlbd");
			goto fail;
		}
		len += (size_t)n;
		if (nl) {
			buf[len - 1] = 0;
			*line = buf;
			return 0;
		}
		if (len >= XLB_MSG_MAX) {
			ret = xlb_errf(err, EPROTO,
				       "the answer of xlbd is longer than %u bytes",
				       XLB_MSG_MAX);
			goto fail;
		}
	}
fail:
	free(buf);
	return ret;
}

/* Check an answer's envelope; on success *result holds a reference. */
static int check_answer(json_object *ans, json_object **result,
			struct xlb_err *err)
{
	json_object *v, *ok, *res, *msg;

	if (!json_object_is_type(ans, json_type_object))
		return xlb_errf(err, EPROTO,
				"the answer of xlbd is not a JSON object");
	if (!json_object_object_get_ex(ans, "version", &v) ||
	    !json_object_is_type(v, json_type_int))
		return xlb_errf(err, EPROTO,
				"the answer of xlbd has no protocol version");
	if (json_object_get_int64(v) != XLB_PROTO_VERSION)
		return xlb_errf(err, EPROTO,
				"xlbd answered in protocol version %lld; this client speaks %d",
				(long long)json_object_get_int64(v),
				XLB_PROTO_VERSION);
	if (!json_object_object_get_ex(ans, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean))
		return xlb_errf(err, EPROTO,
				"the answer of xlbd has no \"ok\" field");
	if (!json_object_get_boolean(ok)) {
		if (!json_object_object_get_ex(ans, "error", &msg) ||
		    !json_object_is_type(msg, json_type_string))
			return xlb_errf(err, EREMOTEIO,
					"xlbd refused the request without a reason");
		return xlb_errf(err, EREMOTEIO, "%s",
				json_object_get_string(msg));
	}
	if (!json_object_object_get_ex(ans, "result", &res) ||
	    !json_object_is_type(res, json_type_object))
		return xlb_errf(err, EPROTO,
				"the answer of xlbd has no result object");
	*result = json_object_get(res);
	return 0;
}

static int parse_answer(const char *line, json_object **result,
			struct xlb_err *err)
{
	enum json_tokener_error jerr;
	json_object *ans;
	int ret;

	ans = json_tokener_parse_verbose(line, &jerr);
	if (!ans)
		return xlb_errf(err, EPROTO,
				"the answer of xlbd is not JSON: %s",
				json_tokener_error_desc(jerr));
	ret = check_answer(ans, result, err);
	json_object_put(ans);
	return ret;
}

int xlb_client_call(int fd, json_object *req, json_object **result,
		    int timeout_ms, struct xlb_err *err)
{
	int64_t deadline;
	const char *text;
	char *line = NULL;
	size_t len;
	int ret;

	if (timeout_ms <= 0)
		timeout_ms = XLB_MSG_TIMEOUT_MS;
	deadline = (int64_t)xlb_mono_ms() + timeout_ms;
	json_object_object_add(req, "version",
			       json_object_new_int(XLB_PROTO_VERSION));
	text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text)
		return xlb_errf(err, ENOMEM, "out of memory");
	len = strlen(text);
	if (len + 1 > XLB_MSG_MAX)
		return xlb_errf(err, EMSGSIZE,
				"the request is %zu bytes; a message has at most %u",
				len + 1, XLB_MSG_MAX);
	ret = send_all(fd, text, len, deadline, err);
	if (!ret)
		ret = send_all(fd, "\n", 1, deadline, err);
	if (!ret)
		ret = read_line(fd, &line, deadline, err);
	if (!ret)
		ret = parse_answer(line, result, err);
	free(line);
	return ret;
}

int xlb_client_request(const char *path, json_object *req,
		       json_object **result, struct xlb_err *err)
{
	int fd, ret;

	fd = xlb_client_connect(path, err);
	if (fd < 0)
		return fd;
	ret = xlb_client_call(fd, req, result, 0, err);
	close(fd);
	return ret;
}
