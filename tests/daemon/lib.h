/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the daemon tier's programs share: a shell runner, the test
 * daemon's names, its namespace, start and teardown, xlbctl calls, raw
 * calls on the control socket and JSON lookups.  Included by one .c
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

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

/* names of the program's namespace, instance and folder (env_up) */
#ifndef ENV_TAG
#define ENV_TAG		"d"
#endif

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

/*
 * build/xlbd in e's namespace (stderr to its xlbd.log), run by prefix (a
 * command ending where xlbd's own begins: "setpriv ... sh") or directly
 * when prefix is ""; 0 once it answers.
 */
static int daemon_start_as(struct env *e, const char *prefix,
			   const char *extra)
{
	char nsp[96], log[128];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int i;

	snprintf(nsp, sizeof(nsp), "/var/run/netns/%s", e->ns);
	snprintf(log, sizeof(log), "%s/xlbd.log", e->dir);
	e->pid = fork();
	if (!e->pid) {
		int fd = open(nsp, O_RDONLY), lf;
		char cmd[4096];

		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(127);
		lf = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(lf, 2);
		snprintf(cmd, sizeof(cmd),
			 "%s%sexec build/xlbd --instance %s --socket %s --state-dir %s %s%s",
			 prefix, prefix[0] ? " -c '" : "", e->inst, e->sock,
			 e->dir, extra ? extra : "", prefix[0] ? "'" : "");
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->sock);
	for (i = 0; i < 100; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		int ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));

		close(fd);
		if (ok)
			return 0;
		if (waitpid(e->pid, NULL, WNOHANG) == e->pid) {
			e->pid = 0;
			return -1;
		}
		usleep(50000);
	}
	return -1;
}

static int daemon_start(struct env *e, const char *extra)
{
	return daemon_start_as(e, "", extra);
}

/* Stop the daemon with sig; its wait status, or -1 if none ran. */
static int daemon_stop(struct env *e, int sig)
{
	int st = -1;

	if (e->pid > 0) {
		kill(e->pid, sig);
		waitpid(e->pid, &st, 0);
	}
	e->pid = 0;
	return st;
}

/*
 * A namespace of the program's own (x ENV_TAG pid) with a veth pair: xdA
 * holds LB_ADDR, xdB the backends' addresses; instance ENV_TAG pid, state
 * and socket in /tmp/xlbd-ENV_TAG-pid.
 */
static void env_up(struct env *e)
{
	snprintf(e->ns, sizeof(e->ns), "x" ENV_TAG "%d", getpid());
	snprintf(e->inst, sizeof(e->inst), ENV_TAG "%d", getpid());
	snprintf(e->dir, sizeof(e->dir), "/tmp/xlbd-" ENV_TAG "-%d", getpid());
	snprintf(e->sock, sizeof(e->sock), "%s/s.sock", e->dir);
	snprintf(e->pins, sizeof(e->pins), "/sys/fs/bpf/xlb/%s", e->inst);
	sh("rm -rf %s; mkdir -p %s", e->dir, e->dir);
	sh("ip netns del %s 2>/dev/null; ip netns add %s && "
	   "ip -n %s link set lo up && "
	   "ip -n %s link add xdA type veth peer name xdB && "
	   "ip -n %s addr add " LB_ADDR "/24 dev xdA && "
	   "ip -n %s link set xdA up && ip -n %s link set xdB up && "
	   "for i in 2 3 4 5 6; do ip -n %s addr add " BE_NET "$i/32 dev xdB; done",
	   e->ns, e->ns, e->ns, e->ns, e->ns, e->ns, e->ns, e->ns);
}

/* Kill the daemon, remove its data path, the namespace and the folder. */
static void env_down(struct env *e)
{
	daemon_stop(e, SIGKILL);
	sh("nsenter --net=/var/run/netns/%s build/xlbd --instance %s --state-dir %s --cleanup 2>/dev/null; "
	   "ip netns del %s 2>/dev/null; rm -rf %s",
	   e->ns, e->inst, e->dir, e->ns, e->dir);
}

static int raw_connect(struct env *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send msg (len bytes), read one answer line into buf; -1 if none. */
static int raw_call(struct env *e, const char *msg, size_t len, char *buf,
		    size_t cap, int timeout_ms)
{
	int fd = raw_connect(e);
	size_t got = 0;
	ssize_t w;

	if (fd < 0)
		return -1;
	while (len) {
		w = send(fd, msg, len, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		msg += w;
		len -= (size_t)w;
	}
	while (got < cap - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		r = recv(fd, buf + got, cap - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (buf[got - 1] == '\n')
			break;
	}
	buf[got] = 0;
	close(fd);
	return got ? 0 : -1;
}

/*
 * A kselftest fixture NAME whose every case gets a fresh env_up(), a
 * daemon started with the test key (self->e), and env_down() after it,
 * also when the case fails.  Use after kselftest_harness.h.
 */
#define DAEMON_FIXTURE(name)						\
FIXTURE(name) {								\
	struct env e;							\
};									\
FIXTURE_SETUP(name)							\
{									\
	if (getuid())							\
		SKIP(return, "needs root");				\
	env_up(&self->e);						\
	ASSERT_EQ(0, daemon_start(&self->e, NULL)) {			\
		sh("cat %s/xlbd.log", self->e.dir);			\
		TH_LOG("xlbd did not start: %s", out);			\
	}								\
	ASSERT_EQ(0, ctl(&self->e, "set key " KEY_HEX)) TH_LOG("%s", out); \
}									\
FIXTURE_TEARDOWN(name)							\
{									\
	env_down(&self->e);						\
}

#endif
