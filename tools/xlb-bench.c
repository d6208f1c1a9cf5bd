// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: performance figures of xlb.  Benchmarks print numbers; they
 * never pass or fail.  Subcommands:
 *   tables   build time of Maglev and ring tables, bytes per table
 *   pkt      ns per packet of the data path under BPF_PROG_TEST_RUN, as a
 *            ratio to a trivial XDP_TX program measured in the same run
 *   control  xlbd: change -> live latency, a large config applied from
 *            scratch, restart until the daemon answers again
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "datapath.h"
#include "lookup_table.h"
#include "pkt.h"
#include "rand.h"
#include "xlb.skel.h"
#include "xlb_reflect.skel.h"

struct opts {
	int json;
	int runs;
	int quick;	/* smoke mode for make test: fewer runs, smaller cases */
	long calls;	/* pkt: test runs per path */
	const char *path;	/* pkt: only this path */
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct tables_case {
	uint32_t algo;
	uint32_t m;
	uint32_t n;
};

static const struct tables_case tables_cases[] = {
	{ XLB_ALGO_MAGLEV, 65537, 10 },
	{ XLB_ALGO_MAGLEV, 65537, 100 },
	{ XLB_ALGO_MAGLEV, 65537, 1000 },
	{ XLB_ALGO_MAGLEV, 1048573, 1000 },
	{ XLB_ALGO_RING, 65537, 10 },
	{ XLB_ALGO_RING, 65537, 100 },
	{ XLB_ALGO_RING, 65537, 1000 },
	{ XLB_ALGO_RING, 1048573, 1000 },
};

static int bench_table_case(const struct tables_case *tc, const struct opts *o)
{
	struct xlb_table_params p = {
		.algo = tc->algo, .size = tc->m, .vnodes = XLB_RING_VNODES_DEFAULT,
		.key = { 0x6b65792d6b657931ULL, 0x6b65792d6b657932ULL },
	};
	struct xlb_backend_spec *b = calloc(tc->n, sizeof(*b));
	char (*names)[24] = calloc(tc->n, sizeof(*names));
	double *t = calloc(o->runs, sizeof(*t));
	struct xlb_err err;
	struct xlb_table tab;
	uint32_t i;
	int r, ret = 0;

	if (!b || !names || !t) {
		fprintf(stderr, "xlb-bench: out of memory\n");
		ret = 1;
		goto out;
	}
	for (i = 0; i < tc->n; i++) {
		snprintf(names[i], sizeof(names[i]), "10.1.%u.%u", i / 256, i % 256);
		b[i] = (struct xlb_backend_spec){ .name = names[i], .weight = 1,
						  .id = (uint16_t)i };
	}
	for (r = 0; r < o->runs; r++) {
		double t0 = now_us();

		if (xlb_table_build(&tab, &p, b, tc->n, &err)) {
			fprintf(stderr, "xlb-bench: %s\n", err.msg);
			ret = 1;
			goto out;
		}
		t[r] = now_us() - t0;
		xlb_table_free(&tab);
	}
	qsort(t, o->runs, sizeof(*t), cmp_double);
	if (o->json)
		printf("{\"bench\":\"tables\",\"algo\":\"%s\",\"table_size\":%u,\"backends\":%u,\"vnodes\":%u,\"runs\":%d,\"median_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f,\"table_bytes\":%zu}\n",
		       xlb_algo_name(tc->algo), tc->m, tc->n,
		       tc->algo == XLB_ALGO_RING ? p.vnodes : 0, o->runs,
		       t[o->runs / 2], t[0], t[o->runs - 1],
		       (size_t)tc->m * sizeof(struct xlb_slot));
	else
		printf("%-7s %9u %6u %7s %10.1f %10.1f %10.1f %12zu\n",
		       xlb_algo_name(tc->algo), tc->m, tc->n,
		       tc->algo == XLB_ALGO_RING ? "100" : "-",
		       t[o->runs / 2], t[0], t[o->runs - 1],
		       (size_t)tc->m * sizeof(struct xlb_slot));
out:
	free(b);
	free(names);
	free(t);
	return ret;
}

static int bench_tables(const struct opts *o)
{
	size_t i;
	int ret = 0;

	if (!o->json) {
		printf("table build time, median of %d runs (one core)\n", o->runs);
		printf("%-7s %9s %6s %7s %10s %10s %10s %12s\n", "algo", "M",
		       "N", "vnodes", "median_us", "min_us", "max_us",
		       "table_bytes");
	}
	for (i = 0; i < sizeof(tables_cases) / sizeof(tables_cases[0]); i++) {
		if (o->quick && tables_cases[i].m > 65537)
			continue;
		ret |= bench_table_case(&tables_cases[i], o);
	}
	return ret;
}

/* --- pkt ------------------------------------------------------------------ */

#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8::10"
#define CLIENT4		"198.51.100.7"
#define CLIENT6		"2001:db8:1::7"
#define OTHER4		"203.0.113.99"
#define BACKENDS	4

enum { VIP_IPIP, VIP_GUE, VIP_V6, VIP_STATELESS, VIP_FIB, VIP_GUE6, VIPS };

/*
 * The FIB path needs a real interface with a route and a neighbour: the
 * benchmark moves itself into a private network namespace (gone when it
 * exits) and makes a veth pair there.
 */
#define FIB_DEV		"xlbb0"
#define FIB_NET		"10.99.0"

static int fib_ifindex;

static int fib_setup(void)
{
	char cmd[512];
	int i;

	if (unshare(CLONE_NEWNET))
		return -errno;
	snprintf(cmd, sizeof(cmd),
		 "sysctl -qw net.ipv4.conf.all.forwarding=1 && "
		 "ip link set lo up && ip link add " FIB_DEV " type veth peer name xlbb1 && "
		 "ip link set " FIB_DEV " up && ip link set xlbb1 up && "
		 "ip addr add " FIB_NET ".1/24 dev " FIB_DEV);
	if (system(cmd))
		return -EIO;
	for (i = 0; i < BACKENDS; i++) {
		snprintf(cmd, sizeof(cmd),
			 "ip neigh replace " FIB_NET ".%d lladdr 02:00:00:00:99:%02d dev " FIB_DEV " nud permanent",
			 10 + i, i);
		if (system(cmd))
			return -EIO;
	}
	fib_ifindex = (int)if_nametoindex(FIB_DEV);
	return fib_ifindex ? 0 : -ENODEV;
}

struct pkt_bench {
	struct xlb_bpf *skel;
	struct xlb_reflect_bpf *reflect;
	struct xlb_dp dp;
	struct xlb_config cfg;
};

static void addr(int family, const char *s, __be32 a[4])
{
	memset(a, 0, 16);
	inet_pton(family == 4 ? AF_INET : AF_INET6, s, a);
}

/* Backends 4v..4v+3 of VIP v: 10.1.v.i or 2001:db8:2::v:i, next hop set. */
static int setup_vip(struct pkt_bench *b, int v, int family, __u16 port,
		     __u32 flags, int encap, struct xlb_err *err)
{
	struct xlb_table_params tp = { .algo = XLB_ALGO_MAGLEV, .size = 65537,
				       .key = b->cfg.key };
	struct xlb_backend_spec spec[BACKENDS];
	char names[BACKENDS][48];
	struct xlb_vip_key k = { .port = htons(port), .proto = IPPROTO_TCP,
				 .family = (__u8)family };
	struct xlb_vip vip = { .id = v, .flags = flags };
	struct xlb_table t;
	int i, ret;

	addr(family, family == 4 ? VIP4 : VIP6, k.addr);
	for (i = 0; i < BACKENDS; i++) {
		struct xlb_backend be = {
			.family = (__u8)family, .encap = (__u8)encap,
			.flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP,
			.epoch = 1, .dmac = { 2, 0, 0, 0, v, i },
			.smac = { 2, 0, 0, 0, 0, 1 },
		};
		__u16 id = (__u16)(v * BACKENDS + i);

		if (v == VIP_FIB) {
			snprintf(names[i], sizeof(names[i]), FIB_NET ".%d", 10 + i);
			be.flags = XLB_BE_F_VALID;
		} else if (family == 4)
			snprintf(names[i], sizeof(names[i]), "10.1.%d.%d", v, i + 1);
		else
			snprintf(names[i], sizeof(names[i]), "2001:db8:2::%d:%d",
				 v, i + 1);
		addr(family, names[i], be.addr);
		ret = xlb_dp_backend_set(&b->dp, id, &be, err);
		if (ret)
			return ret;
		spec[i] = (struct xlb_backend_spec){ .name = names[i],
						     .weight = 1, .id = id };
	}
	ret = xlb_table_build(&t, &tp, spec, BACKENDS, err);
	if (ret)
		return ret;
	ret = xlb_dp_table_publish(&b->dp, v, &t, err);
	xlb_table_free(&t);
	if (ret)
		return ret;
	return xlb_dp_vip_set(&b->dp, &k, &vip, err);
}

/* Verifier figures: "processed N insns" from a stats-level load log. */
static char verifier_log[1 << 16];

static int pkt_setup(struct pkt_bench *b, struct xlb_err *err)
{
	int ret;

	b->skel = xlb_bpf__open();
	b->reflect = xlb_reflect_bpf__open_and_load();
	if (!b->skel || !b->reflect)
		return xlb_errf(err, errno, "cannot open the BPF objects: %s",
				strerror(errno));
	bpf_program__set_log_buf(b->skel->progs.xlb_main, verifier_log,
				 sizeof(verifier_log));
	bpf_program__set_log_level(b->skel->progs.xlb_main, 4);
	if (xlb_bpf__load(b->skel))
		return xlb_errf(err, errno, "cannot load xlb.bpf.o (root needed): %s",
				strerror(errno));
	ret = xlb_dp_from_obj(&b->dp, b->skel->obj, err);
	if (ret)
		return ret;
	xlb_config_defaults(&b->cfg);
	b->cfg.key = (struct xlb_hash_key){ 0x62656e63686b6579ULL, 42 };
	inet_pton(AF_INET, "10.0.0.1", &b->cfg.src4);
	addr(6, "2001:db8:ff::1", b->cfg.src6);
	ret = xlb_dp_config_set(&b->dp, &b->cfg);
	if (ret)
		return xlb_errf(err, -ret, "cannot write the config map");
	ret = setup_vip(b, VIP_IPIP, 4, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE, 4, 443, 0, XLB_ENCAP_GUE, err);
	ret = ret ? ret : setup_vip(b, VIP_V6, 6, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_STATELESS, 4, 8080,
				    XLB_VIP_F_STATELESS, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_FIB, 4, 81, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE6, 6, 443, 0, XLB_ENCAP_GUE, err);
	return ret;
}

static size_t make_packet(__u8 *buf, int family, const char *dst, __u16 dport,
			  __u16 sport, __u32 client)
{
	static const char payload[64];
	struct pkt_spec s;

	pkt_spec_init(&s, family, IPPROTO_TCP);
	addr(family, family == 4 ? CLIENT4 : CLIENT6, s.src);
	if (family == 4)
		s.src[0] ^= htonl(client);
	else
		s.src[3] ^= htonl(client);
	addr(family, dst, s.dst);
	s.sport = sport;
	s.dport = dport;
	s.tcp_flags = PKT_TCP_ACK;
	s.payload = payload;
	s.payload_len = sizeof(payload);
	return pkt_build(&s, buf, 256);
}

struct path {
	const char *name;
	int family;
	const char *dst;
	__u16 dport;
	int new_flow;		/* a different flow every call */
	int expect;		/* XDP action the path must end in */
	int fib;		/* arrives on the veth: next hop by FIB lookup */
};

static const struct path paths[] = {
	{ "non_vip_pass", 4, OTHER4, 80, 0, XDP_PASS, 0 },
	{ "ct_hit", 4, VIP4, 80, 0, XDP_TX, 0 },
	{ "new_flow", 4, VIP4, 80, 1, XDP_TX, 0 },
	{ "stateless", 4, VIP4, 8080, 0, XDP_TX, 0 },
	{ "stateless_new", 4, VIP4, 8080, 1, XDP_TX, 0 },
	{ "ipv6_ct_hit", 6, VIP6, 80, 0, XDP_TX, 0 },
	{ "gue_ct_hit", 4, VIP4, 443, 0, XDP_TX, 0 },
	{ "gue6_ct_hit", 6, VIP6, 443, 0, XDP_TX, 0 },
	{ "fib_ct_hit", 4, VIP4, 81, 0, XDP_TX, 1 },
};

/* Mean kernel-measured ns per run over `calls` runs with repeat = 1. */
static int run_path(int prog_fd, const struct path *pa, long calls,
		    double *ns)
{
	__u8 in[256], out[512];
	unsigned long long total = 0;
	size_t len = make_packet(in, pa->family, pa->dst, pa->dport, 40000, 0);
	long i;

	struct xdp_md ctx = { .ingress_ifindex = pa->fib ? fib_ifindex : 0 };

	for (i = 0; i < calls; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_size_in = (__u32)len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1,
			    .ctx_in = pa->fib ? &ctx : NULL,
			    .ctx_size_in = pa->fib ? sizeof(ctx) : 0);

		if (pa->new_flow)
			len = make_packet(in, pa->family, pa->dst, pa->dport,
					  (__u16)(1024 + i % 60000),
					  (__u32)(i / 60000 + 1));
		ctx.data_end = (__u32)len;	/* the kernel wants the frame size */
		o.data_size_in = (__u32)len;
		if (bpf_prog_test_run_opts(prog_fd, &o))
			return -errno;
		if (pa->expect >= 0 && (int)o.retval != pa->expect) {
			fprintf(stderr, "xlb-bench: path %s: XDP action %u, expected %d\n",
				pa->name, o.retval, pa->expect);
			return -EPROTO;
		}
		total += o.duration;
	}
	*ns = (double)total / calls;
	return 0;
}

static long verifier_insns(void)
{
	const char *p = strstr(verifier_log, "processed ");

	return p ? strtol(p + 10, NULL, 10) : -1;
}

static int bench_pkt(const struct opts *o)
{
	struct pkt_bench b = {};
	struct xlb_err err = { "" };
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	struct path base = { "baseline", 4, VIP4, 80, 0, XDP_TX, 0 };
	__u64 ev[XLB_EV_MAX];
	double base_ns, ns;
	size_t i;
	int ret;

	if (fib_setup()) {
		fprintf(stderr, "xlb-bench: cannot make a network namespace for the FIB path (root needed)\n");
		return 1;
	}
	if (pkt_setup(&b, &err)) {
		fprintf(stderr, "xlb-bench: %s\n", err.msg);
		ret = 1;
		goto out;
	}
	bpf_obj_get_info_by_fd(bpf_program__fd(b.skel->progs.xlb_main), &info,
			       &info_len);
	ret = run_path(bpf_program__fd(b.reflect->progs.xlb_reflect), &base,
		       o->calls, &base_ns);
	if (ret)
		goto fail;
	if (!o->json) {
		printf("ns per packet, BPF_PROG_TEST_RUN, repeat=1, mean of %ld calls\n",
		       o->calls);
		printf("verifier: %ld instructions processed; program %u bytes xlated, %u jited\n",
		       verifier_insns(), info.xlated_prog_len,
		       info.jited_prog_len);
		printf("%-14s %8s %12s %7s\n", "path", "ns", "baseline_ns", "ratio");
	} else {
		printf("{\"bench\":\"pkt\",\"path\":\"verifier\",\"processed_insns\":%ld,\"xlated_bytes\":%u,\"jited_bytes\":%u}\n",
		       verifier_insns(), info.xlated_prog_len,
		       info.jited_prog_len);
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (o->path && strcmp(o->path, paths[i].name))
			continue;
		ret = run_path(bpf_program__fd(b.skel->progs.xlb_main),
			       &paths[i], o->calls, &ns);
		if (ret)
			goto fail;
		if (o->json)
			printf("{\"bench\":\"pkt\",\"path\":\"%s\",\"ns\":%.1f,\"baseline_ns\":%.1f,\"ratio\":%.2f,\"calls\":%ld}\n",
			       paths[i].name, ns, base_ns, ns / base_ns,
			       o->calls);
		else
			printf("%-14s %8.1f %12.1f %7.2f\n", paths[i].name, ns,
			       base_ns, ns / base_ns);
	}
	ret = 0;
	goto out;
fail:
	fprintf(stderr, "xlb-bench: pkt: %s\n",
		ret == -EPROTO ? "the data path is not set up as the benchmark expects" :
				 strerror(-ret));
	if (ret == -EPROTO && !xlb_dp_events(&b.dp, ev))
		for (i = 0; i < XLB_EV_MAX; i++)
			if (ev[i])
				fprintf(stderr, "  event %s: %llu\n",
					xlb_event_name((int)i),
					(unsigned long long)ev[i]);
	ret = 1;
out:
	xlb_bpf__destroy(b.skel);
	xlb_reflect_bpf__destroy(b.reflect);
	return ret;
}

/* --- control ---------------------------------------------------------------- */

/*
 * A real xlbd in a private network namespace (the benchmark unshares one,
 * gone when it exits), with its own instance, socket and state folder,
 * driven through the control socket as xlbctl drives it.
 */
struct ctl_bench {
	char dir[64], sock[96], inst[32], xlbd[512];
	pid_t pid;
};

static int ctl_start(struct ctl_bench *c)
{
	char log[128];
	int i;

	snprintf(log, sizeof(log), "%s/xlbd.log", c->dir);
	c->pid = fork();
	if (!c->pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(c->xlbd, "xlbd", "--instance", c->inst, "--socket",
		      c->sock, "--state-dir", c->dir, "--metrics", "none",
		      "--log-level", getenv("XLB_BENCH_LOG") ? getenv("XLB_BENCH_LOG") : "warning", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 20000; i++) {
		struct xlb_err err;
		int fd = xlb_client_connect(c->sock, &err);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid)
			return -1;
		usleep(200);
	}
	return -1;
}

static int ctl_call(struct ctl_bench *c, json_object *req,
		    json_object **res)
{
	struct xlb_err err = { "" };
	int ret;

	ret = xlb_client_request(c->sock, req, res, &err);
	if (ret)
		fprintf(stderr, "xlb-bench: xlbd: %s\n", err.msg);
	return ret;
}

/* One command; *live_ms (if given) the daemon's request -> live time. */
static int ctl_exec_live(struct ctl_bench *c, const char *line,
			 double *live_ms)
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
	json_object_put(req);
	json_object_put(res);
	return ret;
}

static int ctl_exec(struct ctl_bench *c, const char *line)
{
	return ctl_exec_live(c, line, NULL);
}

static int ctl_restore(struct ctl_bench *c, const char *text)
{
	json_object *req = json_object_new_object(), *res = NULL;
	int ret;

	json_object_object_add(req, "cmd", json_object_new_string("restore"));
	json_object_object_add(req, "text", json_object_new_string(text));
	json_object_object_add(req, "name", json_object_new_string("bench"));
	ret = ctl_call(c, req, &res);
	json_object_put(req);
	json_object_put(res);
	return ret;
}

/* Config text: n_vips VIPs of m slots with n_be backends each. */
static char *ctl_config(int n_vips, int n_be, unsigned int m)
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
		for (b = 0; b < n_be; b++)
			len += (size_t)snprintf(t + len, cap - len,
						"backend add 10.200.%d.%d:80/tcp 10.1.%d.%d\n",
						v / 250, v % 250 + 1, b / 250,
						b % 250 + 1);
	}
	return t;
}

static void ctl_print(const struct opts *o, const char *name, double *v,
		      int n, const char *params, double goal)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	if (o->json)
		printf("{\"bench\":\"control\",\"name\":\"%s\",\"unit\":\"ms\",\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"runs\":%d,\"goal\":%.3f,\"params\":\"%s\"}\n",
		       name, v[n / 2], v[0], v[n - 1], n, goal, params);
	else
		printf("%-26s %10.3f %10.3f %10.3f %5d %8.1f  %s\n", name,
		       v[n / 2], v[0], v[n - 1], n, goal, params);
}

static __u32 ctl_prog_on(const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query((int)if_nametoindex(ifname), 0, &q))
		return 0;
	return q.prog_id;
}

static int bench_control(const struct opts *o)
{
	struct ctl_bench c = { 0 };
	int runs = o->quick ? 3 : o->runs, n_vips = o->quick ? 20 : 1000;
	double *lat = calloc((size_t)runs, sizeof(double)), t0;
	double *live = calloc((size_t)runs, sizeof(double));
	char *cfg, params[160], self[512], cmd[1024];
	__u32 prog_before, prog_after;
	int i, ret = 1;

	if (!lat || !live)
		return 1;
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
		printf("%-26s %10s %10s %10s %5s %8s  %s\n", "figure", "median_ms",
		       "min_ms", "max_ms", "runs", "goal_ms", "parameters");
	}

	/* change -> live: the answer comes after the table is published */
	cfg = ctl_config(1, 100, 65537);
	if (!cfg || ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0"))
		goto out;
	free(cfg);
	for (i = 0; i < runs; i++) {
		char line[128];

		snprintf(line, sizeof(line),
			 "backend add 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		t0 = now_us();
		if (ctl_exec_live(&c, line, &live[i]))
			goto out;
		lat[i] = (now_us() - t0) / 1e3;
		snprintf(line, sizeof(line),
			 "backend del 10.200.0.1:80/tcp 10.3.0.%d", i % 250 + 1);
		if (ctl_exec(&c, line))
			goto out;
	}
	ctl_print(o, "change_to_live", live, runs,
		  "one backend added, M=65537, 100 backends, Maglev: request received -> table live (daemon clock)",
		  2);
	ctl_print(o, "change_round_trip", lat, runs,
		  "the same, client send -> answer (includes saving the configuration)",
		  2);

	/* a large config from scratch */
	cfg = ctl_config(n_vips, 100, 65537);
	if (!cfg || ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
		goto out;
	for (i = 0; i < (o->quick ? 1 : 3); i++) {
		t0 = now_us();
		if (ctl_restore(&c, cfg))
			goto out;
		lat[i] = (now_us() - t0) / 1e3;
		if (ctl_restore(&c, "set key 00112233445566778899aabbccddeeff\n"))
			goto out;
	}
	snprintf(params, sizeof(params),
		 "%d VIPs x 100 backends, M=65537, Maglev, from empty", n_vips);
	ctl_print(o, "config_apply", lat, o->quick ? 1 : 3, params, 1000);

	/* restart: kill -9, start again, first answer; forwarding stays */
	if (ctl_restore(&c, cfg) || ctl_exec(&c, "link attach xlbc0"))
		goto out;
	free(cfg);
	prog_before = ctl_prog_on("xlbc0");
	for (i = 0; i < runs; i++) {
		kill(c.pid, SIGKILL);
		waitpid(c.pid, NULL, 0);
		t0 = now_us();
		if (ctl_start(&c))
			goto out;
		lat[i] = (now_us() - t0) / 1e3;
	}
	prog_after = ctl_prog_on("xlbc0");
	snprintf(params, sizeof(params),
		 "kill -9 then start, %d VIPs adopted; XDP program %s", n_vips,
		 prog_before && prog_before == prog_after ?
		 "stayed attached" : "CHANGED");
	ctl_print(o, "restart_to_answer", lat, runs, params, 100);
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
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xlb-bench [-j] [--runs N] [--quick] SUBCOMMAND\n"
		"\n"
		"Prints performance figures; never a pass/fail verdict.\n"
		"\n"
		"subcommands:\n"
		"  tables   Maglev and ring build time (median, min, max) and bytes\n"
		"           per table for M=65537 with N=10,100,1000 and M=1048573\n"
		"           with N=1000\n"
		"  pkt      data path ns per packet (BPF_PROG_TEST_RUN, repeat=1) on\n"
		"           each path, and the ratio to a trivial XDP_TX program in\n"
		"           the same run; verifier instruction count (needs root)\n"
		"  control  xlbd (needs root): change -> live latency for one\n"
		"           backend added to a VIP of M=65537 with 100 backends;\n"
		"           1000 VIPs x 100 backends applied from scratch; restart\n"
		"           (kill -9) until the daemon answers, forwarding on\n"
		"\n"
		"options:\n"
		"  -j, --json     one JSON object per figure\n"
		"  --runs N       tables: repetitions per figure (default 21)\n"
		"  --calls N      pkt: test runs per path (default 1000000)\n"
		"  --path NAME    pkt: only this path\n"
		"  --quick        smoke mode: 3 runs, small cases, 2000 calls\n"
		"  -h, --help     this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "calls", required_argument, NULL, 'c' },
		{ "path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .runs = 21, .calls = 1000000 };
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = 1;
			break;
		case 'r':
			o.runs = (int)strtol(optarg, &end, 10);
			if (*end || o.runs < 1 || o.runs > 100000) {
				fprintf(stderr, "xlb-bench: --runs wants a number from 1 to 100000, not \"%s\"\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			o.quick = 1;
			o.runs = 3;
			o.calls = 2000;
			break;
		case 'p':
			o.path = optarg;
			break;
		case 'c':
			o.calls = strtol(optarg, &end, 10);
			if (*end || o.calls < 1 || o.calls > 100000000) {
				fprintf(stderr, "xlb-bench: --calls wants a number from 1 to 100000000, not \"%s\"\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "tables"))
		return bench_tables(&o);
	if (!strcmp(argv[optind], "pkt"))
		return bench_pkt(&o);
	if (!strcmp(argv[optind], "control"))
		return bench_control(&o);
	fprintf(stderr, "xlb-bench: unknown subcommand \"%s\"; known: tables, pkt, control\n",
		argv[optind]);
	return 2;
}
