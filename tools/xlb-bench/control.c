// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench control: xlbd's change -> live latency, a large configuration
 * applied from scratch, and restart until the daemon answers again.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <libgen.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "bench.h"
#include "client.h"
#include "datapath.h"
#include "mono.h"


/*
 * A real xlbd in a private network namespace (the benchmark unshares one,
 * gone when it exits), with its own instance, socket and state folder,
 * driven through the control socket as xlbctl drives it.
 */
struct ctl_bench {
	char dir[64], sock[96], inst[32], xlbd[512];
	pid_t pid;
	bool cache_used;	/* the last start read the state cache */
};

/*
 * Where a start's time went: the daemon's phases (status "start_ms",
 * user/lib/proto.h), in this order.
 */
static const char *const ctl_start_phases[] = {
	"init", "state", "metrics", "data_path", "runtime", "adopt", "commit",
	"tables", "rest", "listen", "loop", "answer",
};
#define CTL_START_PHASES	ARRAY_SIZE(ctl_start_phases)

/*
 * Start xlbd and wait for its first answer (a status request answered);
 * ph (if given) gets its start phases, -1 for those it does not report.
 */
static int ctl_start_ph(struct ctl_bench *c, double *ph)
{
	json_object *req = json_object_new_object(), *res = NULL, *p, *v;
	char log[128];
	size_t k;
	int i, ret = -1;

	snprintf(log, sizeof(log), "%s/xlbd.log", c->dir);
	/*
	 * posix_spawn, not fork: a forked copy of this process's mappings
	 * (tens of MiB by now) is torn down again by the exec, and that
	 * cost several milliseconds of every start timed here, none of
	 * them xlbd's.
	 */
	{
		char *lvl = getenv("XLB_BENCH_LOG") ? getenv("XLB_BENCH_LOG") :
						      "warning";
		char *argv[] = {
			"xlbd", "--instance", c->inst, "--socket", c->sock,
			"--state-dir", c->dir, "--metrics", "none",
			"--log-level", lvl, NULL,
		};
		posix_spawn_file_actions_t fa;

		if (posix_spawn_file_actions_init(&fa))
			goto out;
		if (posix_spawn_file_actions_addopen(&fa, 2, log,
						     O_WRONLY | O_CREAT |
						     O_APPEND, 0600) ||
		    posix_spawn(&c->pid, c->xlbd, &fa, NULL, argv, environ)) {
			c->pid = -1;
			posix_spawn_file_actions_destroy(&fa);
			fprintf(stderr, "xlb-bench: cannot start %s\n", c->xlbd);
			goto out;
		}
		posix_spawn_file_actions_destroy(&fa);
	}
	json_object_object_add(req, "cmd", json_object_new_string("status"));
	for (i = 0; i < 300000; i++) {	/* 60 s */
		struct xlb_err err;
		int fd = xlb_client_connect(c->sock, &err);

		if (fd >= 0) {
			ret = xlb_client_call(fd, req, &res, 60000, &err);
			close(fd);
			if (ret)
				fprintf(stderr, "xlb-bench: xlbd: %s\n", err.msg);
			break;
		}
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid)
			break;
		usleep(200);
	}
out:
	c->cache_used = !ret && json_object_object_get_ex(res, "state_cache", &p) &&
			json_object_object_get_ex(p, "start", &v) &&
			!strcmp(json_object_get_string(v), "used");
	for (k = 0; ph && k < CTL_START_PHASES; k++)
		ph[k] = !ret && json_object_object_get_ex(res, "start_ms", &p) &&
			json_object_object_get_ex(p, ctl_start_phases[k], &v) ?
			json_object_get_double(v) : -1;
	json_object_put(req);
	json_object_put(res);
	return ret;
}

static int ctl_start(struct ctl_bench *c)
{
	return ctl_start_ph(c, NULL);
}

static int ctl_call(struct ctl_bench *c, json_object *req,
		    json_object **res)
{
	struct xlb_err err = { "" };
	int ret;

	int fd = xlb_client_connect(c->sock, &err);

	/* a large configuration takes its time */
	ret = fd < 0 ? fd : xlb_client_call(fd, req, res, 600000, &err);
	if (fd >= 0)
		close(fd);
	if (ret)
		fprintf(stderr, "xlb-bench: xlbd: %s\n", err.msg);
	return ret;
}

/*
 * Where a change's time goes: the daemon's phases (its answer's
 * "phases_ms", user/lib/proto.h), and what the client sees beyond them.
 */
static const char *const ctl_phases[] = {
	"parse", "commit", "build", "publish", "pool", "reconcile", "save",
	"runtime_save", "answer",
};
#define CTL_PHASES	(sizeof(ctl_phases) / sizeof(ctl_phases[0]))

/* The phases of an answer (ctl_phases order), -1 for those it lacks. */
static void ctl_phases_of(json_object *res, double *ph)
{
	json_object *p, *v;
	size_t k;

	for (k = 0; ph && k < CTL_PHASES; k++)
		ph[k] = json_object_object_get_ex(res, "phases_ms", &p) &&
			json_object_object_get_ex(p, ctl_phases[k], &v) ?
			json_object_get_double(v) : -1;
}

/*
 * One command; *live_ms (if given) the daemon's request -> live time,
 * ph (if given) its phases in the order of ctl_phases.
 */
static int ctl_exec_live(struct ctl_bench *c, const char *line,
			 double *live_ms, double *ph)
{
	json_object *req = json_object_new_object(), *res = NULL,
		    *lines = json_object_new_array(), *v;
	int ret;

	json_object_object_add(req, "cmd", json_object_new_string("exec"));
	json_object_array_add(lines, json_object_new_string(line));
	json_object_object_add(req, "lines", lines);
	ret = ctl_call(c, req, &res);
	if (!ret && live_ms)
		*live_ms = json_object_object_get_ex(res, "live_ms", &v) ?
			   json_object_get_double(v) : -1;
	if (!ret)
		ctl_phases_of(res, ph);
	json_object_put(req);
	json_object_put(res);
	return ret;
}

static int ctl_exec(struct ctl_bench *c, const char *line)
{
	return ctl_exec_live(c, line, NULL, NULL);
}

/* Replace the configuration by text; ph (if given) its phases. */
static int ctl_restore_ph(struct ctl_bench *c, const char *text, double *ph)
{
	json_object *req = json_object_new_object(), *res = NULL;
	int ret;

	json_object_object_add(req, "cmd", json_object_new_string("restore"));
	json_object_object_add(req, "text", json_object_new_string(text));
	json_object_object_add(req, "name", json_object_new_string("bench"));
	ret = ctl_call(c, req, &res);
	if (!ret)
		ctl_phases_of(res, ph);
	json_object_put(req);
	json_object_put(res);
	return ret;
}

static int ctl_restore(struct ctl_bench *c, const char *text)
{
	return ctl_restore_ph(c, text, NULL);
}

/*
 * 0 when every VIP's table is published: a figure of a configuration
 * whose tables failed (the data path had no room for them, say) measures
 * less work than it claims.
 */
static int ctl_tables_ok(struct ctl_bench *c, const char *what)
{
	json_object *req = json_object_new_object(), *res = NULL, *v;
	long long failing = -1;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	if (!ctl_call(c, req, &res) &&
	    json_object_object_get_ex(res, "tables_failing", &v))
		failing = json_object_get_int64(v);
	json_object_put(req);
	json_object_put(res);
	if (!failing)
		return 0;
	fprintf(stderr, "xlb-bench: %s: %lld VIPs' tables failed to publish (status tables_failing; XLB_BENCH_LOG=debug keeps xlbd's log)\n",
		what, failing);
	return -1;
}

/*
 * Until xlbd's state cache is made from its state.conf, as it is once
 * the state has rested (the bound only against a hang).
 */
static int ctl_cache_current(struct ctl_bench *c)
{
	json_object *req = json_object_new_object(), *res, *o, *v;
	char st[32] = "no answer", all[400] = "";
	int i;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	for (i = 0; i < 3000; i++) {	/* 30 s */
		res = NULL;
		if (!ctl_call(c, req, &res) &&
		    json_object_object_get_ex(res, "state_cache", &o) &&
		    json_object_object_get_ex(o, "state", &v)) {
			snprintf(st, sizeof(st), "%s", json_object_get_string(v));
			snprintf(all, sizeof(all), "%s",
				 json_object_to_json_string(o));
		}
		json_object_put(res);
		if (!strcmp(st, "current") || !strcmp(st, "failed"))
			break;
		usleep(10000);
	}
	json_object_put(req);
	if (!strcmp(st, "current"))
		return 0;
	fprintf(stderr, "xlb-bench: xlbd's state cache is %s: %s\n", st, all);
	return -1;
}

/*
 * Config text: n_vips VIPs of m slots with n_be backends each, the same
 * n_be for every VIP, or (distinct) a window of n_be of 1000 addresses
 * that starts at 7 v mod 1000 for VIP v: 1000 VIPs, 1000 other tables.
 */
static char *ctl_config_of(int n_vips, int n_be, unsigned int m, int distinct)
{
	size_t cap = (size_t)n_vips * (size_t)(n_be + 1) * 64 + 256, len = 0;
	char *t = malloc(cap);
	int v, b;

	if (!t)
		return NULL;
	len += (size_t)snprintf(t + len, cap - len,
				"set key 00112233445566778899aabbccddeeff\n");
	for (v = 0; v < n_vips; v++) {
		len += (size_t)snprintf(t + len, cap - len,
					"vip add 10.200.%d.%d:80/tcp table-size %u\n",
					v / 250, v % 250 + 1, m);
		for (b = 0; b < n_be; b++) {
			int a = distinct ? (7 * v + b) % 1000 : b;

			len += (size_t)snprintf(t + len, cap - len,
						"backend add 10.200.%d.%d:80/tcp 10.1.%d.%d\n",
						v / 250, v % 250 + 1, a / 250,
						a % 250 + 1);
		}
	}
	return t;
}

static char *ctl_config(int n_vips, int n_be, unsigned int m)
{
	return ctl_config_of(n_vips, n_be, m, 0);
}

static void ctl_print(const struct opts *o, const char *name, double *v,
		      int n, const char *params, double goal)
{
	char g[32];

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	/* a part of a figure has no goal of its own (goal < 0) */
	if (o->json) {
		snprintf(g, sizeof(g), goal < 0 ? "null" : "%.3f", goal);
		printf("{\"bench\":\"control\",\"name\":\"%s\",\"unit\":\"ms\",\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"runs\":%d,\"goal\":%s,\"goal_is\":%s,\"params\":\"%s\"}\n",
		       name, v[n / 2], v[0], v[n - 1], n, g,
		       goal < 0 ? "null" : "\"issue 17\"", params);
	} else {
		snprintf(g, sizeof(g), goal < 0 ? "-" : "%.1f", goal);
		printf("%-30s %10.3f %10.3f %10.3f %5d %8s  %s\n", name,
		       v[n / 2], v[0], v[n - 1], n, g, params);
	}
}

/*
 * The phases of runs answers (ph: CTL_PHASES + 1 per run, the last the
 * client's time beyond the answer) as figures PREFIX.PHASE; v: scratch.
 */
static void ctl_print_phases(const struct opts *o, const char *prefix,
			     const double *ph, double *v, int runs)
{
	static const char *const what[] = {
		"request read -> checked new state",
		"the commit without its tables",
		"table build (longest)",
		"table publication (longest)",
		"builds and publications, wall time",
		"reconcile around the builds",
		"configuration saved durably (what is left of it after the tables)",
		"runtime file written (after the answer)",
		"request read -> answer made",
		"client time beyond the answer: event loop and socket",
	};
	char name[64];
	size_t k;
	int i;

	for (k = 0; k <= CTL_PHASES; k++) {
		for (i = 0; i < runs; i++)
			v[i] = ph[i * (CTL_PHASES + 1) + k];
		snprintf(name, sizeof(name), "%s.%s", prefix,
			 k < CTL_PHASES ? ctl_phases[k] : "loop_and_socket");
		ctl_print(o, name, v, runs, what[k], -1);
	}
}

/*
 * The start phases of runs starts (ph: CTL_START_PHASES + 1 per run, the
 * last the client's time beyond the daemon's answer phase) as figures
 * PREFIX.PHASE; v: scratch.
 */
static void ctl_print_start(const struct opts *o, const char *prefix,
			    const double *ph, double *v, int runs)
{
	static const char *const what[] = {
		"main() -> options, lock, libraries ready",
		"state.conf read",
		"metrics server started",
		"data path opened from its pins",
		"runtime file read",
		"ids and VIPs read from the pinned maps",
		"first commit without its tables",
		"tables adopted or published",
		"announce, counters",
		"control socket listening",
		"threads started, privileges dropped",
		"main() -> the loop's first turn",
		"client time beyond it: exec, libraries, socket",
	};
	char name[64];
	size_t k;
	int i;

	for (k = 0; k <= CTL_START_PHASES; k++) {
		for (i = 0; i < runs; i++)
			v[i] = ph[i * (CTL_START_PHASES + 1) + k];
		snprintf(name, sizeof(name), "%s.%s", prefix,
			 k < CTL_START_PHASES ? ctl_start_phases[k] : "exec_and_socket");
		ctl_print(o, name, v, runs, what[k], -1);
	}
}

/* Part of control to run: all, or the one --only names. */
static bool ctl_part(const struct opts *o, const char *part)
{
	return !o->only || !strcmp(o->only, part);
}

static __u32 ctl_prog_on(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query((int)if_nametoindex(ifname), 0, &q))
		return 0;
	return q.prog_id;
}

/* A read command's result (cmd with "vip": vip if given); NULL on error. */
static json_object *ctl_read(struct ctl_bench *c, const char *cmd,
			     const char *vip)
{
	json_object *req = json_object_new_object(), *res = NULL;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	if (vip)
		json_object_object_add(req, "vip", json_object_new_string(vip));
	if (ctl_call(c, req, &res)) {
		json_object_put(res);
		res = NULL;
	}
	json_object_put(req);
	return res;
}

/* Element i of array a, NULL when a is not an array that long. */
static json_object *jidx(json_object *a, size_t i)
{
	return a && json_object_is_type(a, json_type_array) &&
	       i < json_object_array_length(a) ?
	       json_object_array_get_idx(a, i) : NULL;
}

static json_object *jpath(json_object *o, const char *a, const char *b)
{
	json_object *v = NULL;

	if (o && json_object_object_get_ex(o, a, &v) && b &&
	    !json_object_object_get_ex(v, b, &v))
		v = NULL;
	return v;
}

/* A TCP listener on addr:80 in the benchmark's namespace; its pid. */
static pid_t ctl_listener(const char *addr)
{
	pid_t pid = fork();

	if (!pid) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(80) };
		int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		inet_pton(AF_INET, addr, &sa.sin_addr);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 64))
			_exit(2);
		for (;;) {
			int f = accept(s, NULL, NULL);

			if (f >= 0)
				close(f);
		}
	}
	return pid;
}

/* Poll the member record until it is want: 0, or -1 after 10 s. */
static int ctl_member_wait(const struct xlb_dp *dp, __u32 vip, __u16 be,
			   __u8 want)
{
	uint64_t t0 = xlb_mono_ms();
	__u8 st;

	while (xlb_dp_member_get(dp, vip, be, &st, NULL) || st != want) {
		if (xlb_mono_ms() - t0 > 10000)
			return -1;
		usleep(200);
	}
	return 0;
}

/*
 * Failover: a backend's tcp check fails (its listener killed; fall 1)
 * and the daemon writes its member record down at the verdict.  The
 * figure is the daemon's own clock, verdict -> record stored ("status":
 * failover.last_ms); the benchmark reads the record DOWN through libxlb
 * itself, and brings the backend back (record ACTIVE) between runs.
 */
static int ctl_failover(struct ctl_bench *c, const struct opts *o,
			double *lat, int runs)
{
	static const char vipk[] = "10.201.0.1:80/tcp";
	struct xlb_err err = { "" };
	json_object *st, *vs, *bs, *a;
	struct xlb_dp dp;
	__u32 vip;
	__u16 be = 0;
	pid_t l[3];
	char params[200];
	long long downs;
	int i, k, ret = -1, seen = 0;

	if (system("ip addr add 10.9.0.2/32 dev xlbc1 && ip addr add 10.9.0.3/32 dev xlbc1 && ip addr add 10.9.0.4/32 dev xlbc1"))
		return -1;
	for (k = 0; k < 3; k++) {
		char a4[16];

		snprintf(a4, sizeof(a4), "10.9.0.%d", k + 2);
		l[k] = ctl_listener(a4);
	}
	if (ctl_exec(c, "vip add 10.201.0.1:80/tcp table-size 65537 health tcp interval 100 timeout 50 rise 1 fall 1") ||
	    ctl_exec(c, "backend add 10.201.0.1:80/tcp 10.9.0.2") ||
	    ctl_exec(c, "backend add 10.201.0.1:80/tcp 10.9.0.3") ||
	    ctl_exec(c, "backend add 10.201.0.1:80/tcp 10.9.0.4"))
		goto out;
	st = ctl_read(c, "status", NULL);
	vs = ctl_read(c, "vip.show", vipk);
	bs = ctl_read(c, "backend.show", vipk);
	a = jpath(bs, "backends", NULL);
	vip = (__u32)json_object_get_int(
		jpath(jidx(jpath(vs, "vips", NULL), 0), "id", NULL));
	be = (__u16)json_object_get_int(jpath(jidx(a, 1), "id", NULL));
	if (!st || !jidx(jpath(vs, "vips", NULL), 0) || !jidx(a, 2) ||
	    xlb_dp_from_pins(&dp, json_object_get_string(
				     jpath(st, "pin_dir", NULL)), &err)) {
		fprintf(stderr, "xlb-bench: failover: %s\n",
			err.msg[0] ? err.msg : "no answer from xlbd");
		json_object_put(st);
		json_object_put(vs);
		json_object_put(bs);
		goto out;
	}
	json_object_put(st);
	json_object_put(vs);
	json_object_put(bs);
	for (i = 0; i < runs; i++) {
		if (ctl_member_wait(&dp, vip, be, XLB_MEMBER_ACTIVE)) {
			fprintf(stderr, "xlb-bench: failover: 10.9.0.3 never active\n");
			goto close;
		}
		st = ctl_read(c, "status", NULL);
		downs = json_object_get_int64(jpath(st, "failover", "downs"));
		json_object_put(st);
		kill(l[1], SIGKILL);
		waitpid(l[1], NULL, 0);
		l[1] = 0;
		if (ctl_member_wait(&dp, vip, be, XLB_MEMBER_DOWN)) {
			fprintf(stderr, "xlb-bench: failover: 10.9.0.3's member record never read DOWN\n");
			goto close;
		}
		seen++;
		st = ctl_read(c, "status", NULL);
		if (json_object_get_int64(jpath(st, "failover", "downs")) !=
		    downs + 1) {
			fprintf(stderr, "xlb-bench: failover: the record is down, but not by the verdict's own store\n");
			json_object_put(st);
			goto close;
		}
		lat[i] = json_object_get_double(jpath(st, "failover",
						      "last_ms"));
		json_object_put(st);
		l[1] = ctl_listener("10.9.0.3");
	}
	snprintf(params, sizeof(params),
		 "health verdict down -> member record stored (daemon clock), tcp check, 3 backends, M=65537; record read DOWN by the benchmark %d of %d",
		 seen, runs);
	ctl_print(o, "failover", lat, runs, params, 0.1);
	ret = ctl_exec(c, "vip del 10.201.0.1:80/tcp");
close:
	xlb_dp_close(&dp);
out:
	for (k = 0; k < 3; k++) {
		if (l[k] <= 0)
			continue;
		kill(l[k], SIGKILL);
		waitpid(l[k], NULL, 0);
	}
	return ret;
}

int bench_control(const struct opts *o)
{
	struct ctl_bench c = { 0 };
	int runs = o->runs, n_vips = o->vips_given ? (int)o->vips[0] :
				     o->quick ? 20 : 1000;
	double *lat = calloc((size_t)(runs > 3 ? runs : 3), sizeof(double)), t0;
	double *live = calloc((size_t)runs, sizeof(double));
	/* phases of each run; config_apply makes 3 runs whatever runs is */
	double *ph = calloc((size_t)(runs > 3 ? runs : 3) *
			    (CTL_START_PHASES + 1 > CTL_PHASES + 1 ?
			     CTL_START_PHASES + 1 : CTL_PHASES + 1),
			    sizeof(double));
	char *cfg, params[240], self[512], cmd[1024], cache[96];
	int pass, used;
	__u32 prog_before, prog_after;
	int i, ret = 1;

	if (!lat || !live || !ph)
		return 1;
	if (o->only && !ctl_part(o, "change") && !ctl_part(o, "apply") &&
	    !ctl_part(o, "restart")) {
		fprintf(stderr, "xlb-bench: --only \"%s\": control has change, apply and restart\n",
			o->only);
		return 2;
	}
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
		return 1;
	self[sizeof(self) - 1] = 0;
	snprintf(c.xlbd, sizeof(c.xlbd), "%s/xlbd", dirname(self));
	snprintf(c.inst, sizeof(c.inst), "bench%d", getpid());
	snprintf(c.dir, sizeof(c.dir), "/tmp/xlb-bench-%d", getpid());
	snprintf(c.sock, sizeof(c.sock), "%s/s.sock", c.dir);
	mkdir(c.dir, 0700);
	if (unshare(CLONE_NEWNET) ||
	    system("ip link set lo up && ip link add xlbc0 type veth peer name xlbc1 && "
		   "ip link set xlbc0 up && ip link set xlbc1 up")) {
		fprintf(stderr, "xlb-bench: control needs root (a private network namespace)\n");
		return 1;
	}
	if (ctl_start(&c)) {
		fprintf(stderr, "xlb-bench: xlbd did not start (log in %s)\n",
			c.dir);
		goto out;
	}
	if (!o->json) {
		printf("xlbd control plane, wall time through the control socket\n");
		printf("%-30s %10s %10s %10s %5s %8s  %s\n", "figure", "median_ms",
		       "min_ms", "max_ms", "runs", "goal_ms", "parameters");
	}

	/* change -> live: the answer comes after the table is published */
	cfg = ctl_config(1, 100, 65537);
	if (!cfg || ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0"))
		goto out;
	free(cfg);
	for (i = 0; ctl_part(o, "change") && i < runs; i++) {
		char line[128];

		snprintf(line, sizeof(line),
			 "backend add 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		t0 = xlb_mono_us();
		if (ctl_exec_live(&c, line, &live[i], &ph[i * (CTL_PHASES + 1)]))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
		/* the loop's wait and the socket: client time beyond answer */
		ph[i * (CTL_PHASES + 1) + CTL_PHASES] =
			lat[i] - ph[i * (CTL_PHASES + 1) + CTL_PHASES - 1];
		snprintf(line, sizeof(line),
			 "backend del 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		if (ctl_exec(&c, line))
			goto out;
	}
	if (ctl_part(o, "change")) {
		ctl_print(o, "change_to_live", live, runs,
			  "one backend added, M=65537, 100 backends, Maglev: request received -> table live (daemon clock)",
			  2);
		ctl_print(o, "change_round_trip", lat, runs,
			  "the same, client send -> answer (includes saving the configuration)",
			  3);
		ctl_print_phases(o, "change", ph, lat, runs);
	}
	if (!ctl_part(o, "apply")) {
		cfg = ctl_config(n_vips, 100, 65537);
		if (!cfg)
			goto out;
		goto restart;
	}

	/* a backend's health check fails: down in the data path */
	if (ctl_failover(&c, o, lat, runs))
		goto out;

	/* a large config from scratch */
	cfg = ctl_config(n_vips, 100, 65537);
	if (!cfg || ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
		goto out;
	for (i = 0; i < (o->quick ? 1 : 3); i++) {
		double *p = &ph[i * (CTL_PHASES + 1)];

		t0 = xlb_mono_us();
		if (ctl_restore_ph(&c, cfg, p))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
		p[CTL_PHASES] = lat[i] - p[CTL_PHASES - 1];
		if (ctl_tables_ok(&c, "config_apply") ||
		    ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
			goto out;
	}
	snprintf(params, sizeof(params),
		 "%d VIPs x the same 100 backends, M=65537, Maglev, from empty",
		 n_vips);
	ctl_print(o, "config_apply", lat, o->quick ? 1 : 3, params, 1000);
	ctl_print_phases(o, "config_apply", ph, lat, o->quick ? 1 : 3);

	/* the same with a table of its own for every VIP: no build shared */
	free(cfg);
	cfg = ctl_config_of(n_vips, 100, 65537, 1);
	for (i = 0; cfg && i < (o->quick ? 1 : 3); i++) {
		double *p = &ph[i * (CTL_PHASES + 1)];

		t0 = xlb_mono_us();
		if (ctl_restore_ph(&c, cfg, p))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
		p[CTL_PHASES] = lat[i] - p[CTL_PHASES - 1];
		if (ctl_tables_ok(&c, "config_apply_distinct") ||
		    ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
			goto out;
	}
	free(cfg);
	cfg = ctl_config(n_vips, 100, 65537);
	if (!cfg)
		goto out;
	snprintf(params, sizeof(params),
		 "%d VIPs x 100 backends, each VIP its own set of 1000 addresses, M=65537, Maglev, from empty",
		 n_vips);
	ctl_print(o, "config_apply_distinct", lat, o->quick ? 1 : 3, params,
		  1000);
	ctl_print_phases(o, "config_apply_distinct", ph, lat,
			 o->quick ? 1 : 3);

restart:
	if (!ctl_part(o, "restart")) {
		ret = 0;
		free(cfg);
		goto out;
	}
	/* restart: kill -9, start again, first answer; forwarding stays */
	for (i = 0; i < runs; i++) {	/* first with one VIP of 100 */
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
		if (!i) {
			char *small = ctl_config(1, 100, 65537);

			if (!small || ctl_start(&c) || ctl_restore(&c, small) ||
			    ctl_exec(&c, "link attach xlbc0")) {
				free(small);
				goto out;
			}
			free(small);
			kill(c.pid, SIGKILL);
			waitpid(c.pid, NULL, 0);
		}
		t0 = xlb_mono_us();
		if (ctl_start(&c))
			goto out;
		lat[i] = (xlb_mono_us() - t0) / 1e3;
	}
	ctl_print(o, "restart_to_answer_small", lat, runs,
		  "kill -9 then start, 1 VIP x 100 backends adopted, until a status request is answered",
		  100);
	if (ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0") ||
	    ctl_tables_ok(&c, "restart") || ctl_cache_current(&c))
		goto out;
	free(cfg);
	prog_before = ctl_prog_on("xlbc0");
	/*
	 * A daemon whose state has rested (its state cache current), then
	 * one killed before that: its successor parses state.conf.
	 */
	snprintf(cache, sizeof(cache), "%s/state.cache", c.dir);
	for (pass = 0; pass < 2; pass++) {
		used = 0;
		for (i = 0; i < runs; i++) {
			double *p = &ph[i * (CTL_START_PHASES + 1)];

			kill(c.pid, SIGKILL);
			waitpid(c.pid, NULL, 0);
			if (pass)
				unlink(cache);
			t0 = xlb_mono_us();
			if (ctl_start_ph(&c, p))
				goto out;
			lat[i] = (xlb_mono_us() - t0) / 1e3;
			p[CTL_START_PHASES] = p[CTL_START_PHASES - 1] < 0 ? -1 :
					      lat[i] - p[CTL_START_PHASES - 1];
			used += c.cache_used;
		}
		if (ctl_tables_ok(&c, "restart"))
			goto out;
		prog_after = ctl_prog_on("xlbc0");
		snprintf(params, sizeof(params),
			 "kill -9 then start, %d VIPs adopted, until a status request is answered; state cache used in %d of %d starts; XDP program %s",
			 n_vips, used, runs,
			 prog_before && prog_before == prog_after ?
			 "stayed attached" : "CHANGED");
		ctl_print(o, pass ? "restart_to_answer_large_parsed" :
				    "restart_to_answer_large",
			  lat, runs, params, pass ? -1 : 100);
		ctl_print_start(o, pass ? "restart_parsed" : "restart", ph,
				lat, runs);
	}
	ret = 0;
out:
	if (c.pid > 0) {
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
	}
	/* XLB_BENCH_LOG=debug keeps the daemon's log in /tmp */
	snprintf(cmd, sizeof(cmd), "%s --instance %s --state-dir %s --cleanup 2>/dev/null; cp %s/xlbd.log /tmp/xlb-bench-xlbd.log; rm -rf %s",
		 c.xlbd, c.inst, c.dir, c.dir, c.dir);
	if (system(cmd))
		ret = 1;
	free(lat);
	free(live);
	free(ph);
	return ret;
}
