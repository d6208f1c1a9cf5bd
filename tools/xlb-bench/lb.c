// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: the data path under BPF_PROG_TEST_RUN, as the pkt, pkt-scale,
 * publish and memory subcommands load, populate and run it.
 */
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "clock.h"
#include "pkt.h"
#include "rand.h"


/*
 * The FIB path needs a real interface with a route and a neighbour: the
 * benchmark moves itself into a private network namespace (gone when it
 * exits) and makes a veth pair there.
 */
#define FIB_DEV		"xlbb0"
#define FIB_NET		"10.99.0"

static int fib_ifindex;

int fib_setup(void)
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

void lb_addr(int family, const char *s, __be32 a[4])
{
	memset(a, 0, 16);
	inet_pton(family == 4 ? AF_INET : AF_INET6, s, a);
}

/* The names of VIP v's backends: 10.1.v.i or 2001:db8:2::v:i. */
static void vip_backend_name(char *buf, size_t cap, int v, int family, int i)
{
	if (v == VIP_FIB)
		snprintf(buf, cap, FIB_NET ".%d", 10 + i);
	else if (family == 4)
		snprintf(buf, cap, "10.1.%d.%d", v, i + 1);
	else
		snprintf(buf, cap, "2001:db8:2::%d:%d", v, i + 1);
}

/* A Maglev table of m slots over the backends of base VIP v. */
int vip_table(struct pkt_bench *b, int v, int family, int n,
	      uint32_t m, struct xlb_table *t, struct xlb_err *err)
{
	struct xlb_table_params tp = { .algo = XLB_ALGO_MAGLEV, .size = m,
				       .key = b->cfg.key };
	struct xlb_backend_spec spec[BACKENDS];
	char names[BACKENDS][48];
	int i;

	for (i = 0; i < n; i++) {
		vip_backend_name(names[i], sizeof(names[i]), v, family, i);
		spec[i] = (struct xlb_backend_spec){
			.name = names[i], .weight = 1,
			.id = (__u16)(v * BACKENDS + i) };
	}
	return xlb_table_build(t, &tp, spec, (uint32_t)n, err);
}

/* Backends 4v..4v+3 of VIP v, next hop set (but for the FIB VIP). */
static int setup_vip(struct pkt_bench *b, int v, int family, __u16 port,
		     __u32 flags, int encap, struct xlb_err *err)
{
	struct xlb_vip_key k = { .port = htons(port), .proto = IPPROTO_TCP,
				 .family = (__u8)family };
	struct xlb_vip vip = { .id = v, .flags = flags };
	char name[48];
	struct xlb_table t;
	int i, ret;

	lb_addr(family, family == 4 ? VIP4 : VIP6, k.addr);
	for (i = 0; i < BACKENDS; i++) {
		struct xlb_backend be = {
			.family = (__u8)family, .encap = (__u8)encap,
			.flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP,
			.epoch = 1, .dmac = { 2, 0, 0, 0, v, i },
			.smac = { 2, 0, 0, 0, 0, 1 },
		};

		if (v == VIP_FIB)
			be.flags = XLB_BE_F_VALID;
		vip_backend_name(name, sizeof(name), v, family, i);
		lb_addr(family, name, be.addr);
		ret = xlb_dp_backend_set(&b->dp, (__u16)(v * BACKENDS + i), &be,
					 err);
		if (ret)
			return ret;
	}
	ret = vip_table(b, v, family, BACKENDS, 65537, &t, err);
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

/*
 * Load the data path, its connection table of o->ct_entries flows (0: the
 * default); with `all`, the six VIPs of the paths, else VIP_IPIP.
 */
int pkt_setup(struct pkt_bench *b, const struct opts *o, int all,
	      struct xlb_err *err)
{
	int ret;

	b->skel = xlb_bpf__open();
	b->reflect = xlb_reflect_bpf__open_and_load();
	if (!b->skel || !b->reflect)
		return xlb_errf(err, errno, "cannot open the BPF objects: %s",
				strerror(errno));
	if (o->ct_entries &&
	    bpf_map__set_max_entries(b->skel->maps.xlb_conntrack,
				     o->ct_entries))
		return xlb_errf(err, EINVAL, "cannot size the connection table");
	bpf_program__set_log_buf(b->skel->progs.xlb_main, verifier_log,
				 sizeof(verifier_log));
	bpf_program__set_log_level(b->skel->progs.xlb_main, 4);
	if (xlb_bpf__load(b->skel))
		return xlb_errf(err, errno, "cannot load xlb.bpf.o (root needed): %s",
				strerror(errno));
	ret = xlb_dp_from_obj(&b->dp, b->skel->obj, err);
	if (ret)
		return ret;
	b->dp_open = 1;
	xlb_config_defaults(&b->cfg);
	b->cfg.key = (struct xlb_hash_key){ 0x62656e63686b6579ULL, 42 };
	inet_pton(AF_INET, "10.0.0.1", &b->cfg.src4);
	lb_addr(6, "2001:db8:ff::1", b->cfg.src6);
	ret = xlb_dp_config_set(&b->dp, &b->cfg);
	if (ret)
		return xlb_errf(err, -ret, "cannot write the config map");
	/*
	 * The new-flow guard on, at a rate no run reaches: every new flow
	 * pays for the guard's bucket and is remembered, as below the rate
	 * in service.
	 */
	ret = xlb_dp_ct_guard_set(&b->dp, XLB_CT_RATE_MAX);
	if (ret)
		return xlb_errf(err, -ret, "cannot write the new-flow rate");
	ret = setup_vip(b, VIP_IPIP, 4, 80, 0, XLB_ENCAP_IPIP, err);
	if (ret || !all)
		return ret;
	ret = setup_vip(b, VIP_GUE, 4, 443, 0, XLB_ENCAP_GUE, err);
	ret = ret ? ret : setup_vip(b, VIP_V6, 6, 80, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_STATELESS, 4, 8080,
				    XLB_VIP_F_STATELESS, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_FIB, 4, 81, 0, XLB_ENCAP_IPIP, err);
	ret = ret ? ret : setup_vip(b, VIP_GUE6, 6, 443, 0, XLB_ENCAP_GUE, err);
	return ret;
}

void pkt_teardown(struct pkt_bench *b)
{
	if (b->dp_open)
		xlb_dp_close(&b->dp);
	xlb_bpf__destroy(b->skel);
	xlb_reflect_bpf__destroy(b->reflect);
}

/* VIP v of pkt-scale: 10.128.x.y, VIP4 for v = 0. */
void extra_vip_addr(long v, __be32 a[4])
{
	memset(a, 0, 16);
	a[0] = v ? htonl(0x0a800000u | (__u32)v) : 0;	/* 10.128.x.y */
	if (!v)
		lb_addr(4, VIP4, a);
}

/* A TCP ACK with 64 bytes of payload; addresses as 16-byte arrays. */
size_t make_packet_a(__u8 *buf, int family, const __be32 src[4],
		     const __be32 dst[4], __u16 dport, __u16 sport)
{
	static const char payload[64];
	struct pkt_spec s;

	pkt_spec_init(&s, family, IPPROTO_TCP);
	memcpy(s.src, src, 16);
	memcpy(s.dst, dst, 16);
	s.sport = sport;
	s.dport = dport;
	s.tcp_flags = PKT_TCP_ACK;
	s.payload = payload;
	s.payload_len = sizeof(payload);
	return pkt_build(&s, buf, PKT_BUF);
}

size_t make_packet(__u8 *buf, int family, const char *dst, __u16 dport,
		   __u16 sport, __u32 client)
{
	__be32 s[4], d[4];

	lb_addr(family, family == 4 ? CLIENT4 : CLIENT6, s);
	if (family == 4)
		s[0] ^= htonl(client);
	else
		s[3] ^= htonl(client);
	lb_addr(family, dst, d);
	return make_packet_a(buf, family, s, d, dport, sport);
}

/*
 * The goals (target): issue 21's ratios to the XDP_TX-only program, 0.6
 * times what Katran measured in the same method on this machine kind
 * (BENCHMARKS.md), and 1.2 for a packet that is not ours.  cold: the
 * paths whose every packet makes a connection entry in a bucket of 64 MiB
 * that no cache holds, so that one miss to memory is their floor (pkt.c).
 */
const struct path paths[] = {
	{ "non_vip_pass", 4, OTHER4, 80, 0, XDP_PASS, 0, 0, 0, 0, 1.2, 0 },
	{ "ct_hit", 4, VIP4, 80, 0, XDP_TX, 0, 0, 0, 0, 1.72, 0 },
	{ "new_flow", 4, VIP4, 80, 1, XDP_TX, 0, 0, 0, 0, 4.75, 1 },
	{ "stateless", 4, VIP4, 8080, 0, XDP_TX, 0, 0, 0, 0, 0, 0 },
	{ "stateless_new", 4, VIP4, 8080, 1, XDP_TX, 0, 0, 0, 0, 0, 0 },
	{ "ipv6_ct_hit", 6, VIP6, 80, 0, XDP_TX, 0, 0, 0, 0, 0, 0 },
	{ "gue_ct_hit", 4, VIP4, 443, 0, XDP_TX, 0, 0, 0, 0, 0, 0 },
	{ "gue6_ct_hit", 6, VIP6, 443, 0, XDP_TX, 0, 0, 0, 0, 0, 0 },
	{ "fib_ct_hit", 4, VIP4, 81, 0, XDP_TX, 1, 0, 0, 0, 0, 0 },
	{ "ct_hit_rotate", 4, VIP4, 80, 0, XDP_TX, 0, ROTATE_FLOWS, 0, 0, 2.78, 0 },
	{ "stateless_rotate", 4, VIP4, 8080, 0, XDP_TX, 0, ROTATE_FLOWS, 0, 0, 0, 0 },
	{ "ct_hit_zipf", 4, VIP4, 80, 0, XDP_TX, 0, 0, ZIPF_FLOWS, 0, 2.87, 0 },
	{ "new_flow_full", 4, VIP4, 80, 1, XDP_TX, 0, 0, 0, 1, 8.0, 1 },
};

_Static_assert(ROTATE_FLOWS >= 8 * XLB_FC_SLOTS,
	       "rotating flows: every one misses the flow cache");

int path_vip(const struct path *pa)
{
	if (pa->fib)
		return VIP_FIB;
	if (pa->dport == 8080)
		return VIP_STATELESS;
	if (pa->dport == 443)
		return pa->family == 4 ? VIP_GUE : VIP_GUE6;
	return pa->family == 4 ? VIP_IPIP : VIP_V6;
}

const struct path *path_find(const char *name)
{
	size_t i;

	for (i = 0; i < NPATHS; i++)
		if (!strcmp(paths[i].name, name))
			return &paths[i];
	return NULL;
}

const struct path baseline_path = { "baseline", 4, VIP4, 80, 0, XDP_TX, 0, 0, 0, 0, 0, 0 };

size_t gen_new_flow(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;
	long k = g->base + i;

	return make_packet(buf, g->pa->family, g->pa->dst, g->pa->dport,
			   (__u16)(1024 + k % 60000), (__u32)(k / 60000 + 1));
}

/* Established flows, in turn (struct path.rotate): the same for any build. */
size_t gen_rotate(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;
	long k = (g->base + i) % g->pa->rotate;

	return make_packet(buf, g->pa->family, g->pa->dst, g->pa->dport,
			   (__u16)(1024 + k), 7);
}

/*
 * Zipf(s) over n ranks: the cumulative weights, searched with a uniform
 * draw (inverse transform).  Rank r is flow r: source CLIENT4 ^ (0x100 +
 * r / 60000) << 16, port 1024 + r % 60000 (apart from the other paths').
 */
static double *zipf_cdf;
static long zipf_n;

int zipf_init(long n, double s)
{
	double sum = 0;
	long r;

	if (zipf_n == n)
		return 0;
	free(zipf_cdf);
	zipf_cdf = malloc((size_t)n * sizeof(*zipf_cdf));
	if (!zipf_cdf)
		return -ENOMEM;
	for (r = 0; r < n; r++) {
		sum += pow((double)(r + 1), -s);
		zipf_cdf[r] = sum;
	}
	for (r = 0; r < n; r++)
		zipf_cdf[r] /= sum;
	zipf_n = n;
	return 0;
}

static size_t rank_packet(const struct path *pa, long r, __u8 *buf)
{
	return make_packet(buf, pa->family, pa->dst, pa->dport,
			   (__u16)(1024 + r % 60000),
			   (__u32)(0x100 + r / 60000) << 16);
}

size_t gen_rank(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;

	return rank_packet(g->pa, g->base + i, buf);
}

size_t gen_zipf(void *ctx, long i, __u8 *buf)
{
	const struct new_flow_gen *g = ctx;
	double u = (double)(xlb_mix64(ZIPF_SEED ^ (__u64)(g->base + i)) >> 11) /
		   (double)(1ULL << 53);
	long lo = 0, hi = zipf_n - 1, mid;

	while (lo < hi) {	/* the first rank whose cumulative weight > u */
		mid = lo + (hi - lo) / 2;
		if (zipf_cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return rank_packet(g->pa, lo, buf);
}

int establish(int prog_fd, const struct path *pa)
{
	struct new_flow_gen g = { pa, 0 };
	double ns;

	if (pa->rotate)
		return run_case(prog_fd, pa, 0, pa->rotate, gen_rotate, &g, &ns);
	if (pa->zipf)
		return run_case(prog_fd, pa, 0, pa->zipf, gen_rank, &g, &ns);
	return 0;
}

/*
 * Fill flow j: 100.64.0.0 + j -> VIP4:80 from port 40002, TCP (apart from
 * every flow a path sends), inserted as libxlb inserts (datapath.h), in
 * chunks of a quarter of the capacity, until the table counts its
 * capacity or FILL_ROUNDS times its capacity went in (a bucket that
 * random flows leave short of full after that many is rarer than one in
 * a million).
 */
#define FILL_ROUNDS	6

int ct_fill_full(struct pkt_bench *b, __u32 *entries, __u32 *capacity)
{
	struct xlb_flow *keys = NULL;
	struct xlb_ct *vals = NULL;
	struct xlb_backend be[BACKENDS];
	size_t chunk;
	__be32 dst;
	__u64 now, j = 0, k;
	int i, ret;

	*entries = 0;
	ret = xlb_dp_ct_capacity(&b->dp, capacity);
	chunk = *capacity / 4 + 1;
	if (!ret) {
		keys = calloc(chunk, sizeof(*keys));
		vals = calloc(chunk, sizeof(*vals));
		ret = keys && vals ? 0 : -ENOMEM;
	}
	for (i = 0; !ret && i < BACKENDS; i++)
		ret = xlb_dp_backend_get(&b->dp, (__u16)i, &be[i]) ? -ENOENT : 0;
	ret = ret ? ret : xlb_clock_now(&now);
	inet_pton(AF_INET, VIP4, &dst);
	while (!ret && j < (__u64)FILL_ROUNDS * *capacity) {
		for (k = 0; k < chunk; k++, j++) {
			memset(&keys[k], 0, sizeof(keys[k]));
			keys[k].src.v4 = htonl(0x64400000u + (__u32)j);
			keys[k].dst.v4 = dst;
			keys[k].sport = htons(40002);
			keys[k].dport = htons(80);
			keys[k].proto = IPPROTO_TCP;
			keys[k].family = XLB_FAMILY_INET;
			vals[k] = (struct xlb_ct){
				.last_seen = now, .hash = (__u32)j,
				.epoch = be[j % BACKENDS].epoch,
				.backend = (__u16)(j % BACKENDS),
				.vip = VIP_IPIP,
			};
		}
		ret = xlb_dp_ct_insert(&b->dp, keys, vals, chunk);
		if (!ret && j >= 2 * (__u64)*capacity) {
			ret = xlb_dp_ct_count(&b->dp, entries);
			if (*entries >= *capacity)
				break;
		}
	}
	if (!ret)
		ret = xlb_dp_ct_count(&b->dp, entries);
	free(keys);
	free(vals);
	return ret;
}

/* Calls first .. first + calls - 1 of gen (or the path's one packet). */
int run_case(int prog_fd, const struct path *pa, long first,
	     long calls, pkt_gen gen, void *ctx, double *ns)
{
	__u8 in[PKT_BUF], out[512];
	unsigned long long total = 0;
	size_t len = make_packet(in, pa->family, pa->dst, pa->dport, 40000, 0);
	struct xdp_md xctx = { .ingress_ifindex = pa->fib ? fib_ifindex : 0 };
	long i;

	for (i = 0; i < calls; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in,
			    .data_out = out, .data_size_out = sizeof(out),
			    .repeat = 1, .ctx_in = pa->fib ? &xctx : NULL,
			    .ctx_size_in = pa->fib ? sizeof(xctx) : 0);

		if (gen)
			len = gen(ctx, first + i, in);
		xctx.data_end = (__u32)len;	/* the kernel wants the frame size */
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

/*
 * pkt --against FILE: another build of xlb.bpf.o, loaded on the maps of
 * this one (same names, same layout), runs each path in place of the
 * XDP_TX program.  The ratio then compares two builds of the data path at
 * the same moment of the machine, which two runs one after the other do
 * not (their ratios drift by more than most changes are worth).
 */
int against_load(struct pkt_bench *b, const char *against,
		 struct xlb_err *err)
{
	struct bpf_program *prog;
	struct bpf_map *m;
	char msg[128];
	int ret;

	b->against = bpf_object__open_file(against, NULL);
	if (!b->against) {
		ret = -errno;
		libbpf_strerror(ret, msg, sizeof(msg));
		return xlb_errf(err, -ret, "--against %s: cannot open: %s",
				against, msg);
	}
	prog = bpf_object__find_program_by_name(b->against, "xlb_main");
	if (!prog)
		return xlb_errf(err, EINVAL, "--against %s: no program xlb_main (not a build of xlb.bpf.o)",
				against);
	bpf_object__for_each_map(m, b->against) {
		struct bpf_map *own = bpf_object__find_map_by_name(
			b->skel->obj, bpf_map__name(m));

		if (!own || bpf_map__fd(own) < 0)
			continue;	/* .rodata and the like: its own */
		if (!strcmp(bpf_map__name(m), XLB_MAP_ABI))
			continue;	/* never read: a build of another ABI
					 * may run on these maps too */
		if (bpf_map__reuse_fd(m, bpf_map__fd(own)))
			return xlb_errf(err, errno, "--against %s: cannot share map %s",
					against, bpf_map__name(m));
	}
	if (bpf_object__load(b->against))
		return xlb_errf(err, errno, "--against %s: cannot load it on this build's maps (another map layout?): %s",
				against, strerror(errno));
	return bpf_program__fd(prog);
}

/*
 * The case and the baseline program in alternating blocks of calls, so
 * that both see the same machine: on a shared host the speed of a CPU
 * changes from one second to the next, and a baseline measured before
 * the case would not be the case's baseline.
 */
#define PAIR_BLOCK	256


/* Add what the VIP's counters and the guard say now (sign: +1 or -1). */
static void mix_read(const struct pkt_bench *b, const struct path *pa,
		     struct flow_mix *m, int sign)
{
	__u64 ev[XLB_EV_MAX] = { 0 };
	struct xlb_vip_stats s = { 0 };

	xlb_dp_vip_stats(&b->dp, (__u32)path_vip(pa), &s);
	xlb_dp_events(&b->dp, ev);
	m->ct_hits += (__u64)sign * s.ct_hits;
	m->cache_hits += (__u64)sign * s.cache_hits;
	m->new_flows += (__u64)sign * s.new_flows;
	m->refused += (__u64)sign * ev[XLB_EV_CT_GUARD];
}

int run_pair(const struct pkt_bench *bench, int base_fd, int prog_fd,
	     const struct path *pa, long calls, pkt_gen gen, void *ctx,
	     double *base_ns, double *ns, struct flow_mix *mix)
{
	double b = 0, p = 0, x;
	long done, n;
	int ret;

	for (done = 0; done < calls; done += n) {
		n = calls - done < PAIR_BLOCK ? calls - done : PAIR_BLOCK;
		if (bench->against) {
			/* the same path; new flows of its own, never this one's */
			struct new_flow_gen g = { pa, FLOWS_APART };

			if (gen)
				g.base += ((struct new_flow_gen *)ctx)->base;
			/*
			 * the same established flows, half a turn away: not
			 * the ones this build's calls just brought to cache;
			 * the Zipf mix: draws of its own
			 */
			if (gen == gen_rotate)
				g.base = pa->rotate / 2;
			if (gen == gen_zipf)
				g.base = FLOWS_APART;
			ret = run_case(base_fd, pa, done, n, gen, &g, &x);
		} else {
			ret = run_case(base_fd, &baseline_path, 0, n, NULL,
				       NULL, &x);
		}
		if (ret)
			return ret;
		b += x * n;
		if (mix)
			mix_read(bench, pa, mix, -1);
		ret = run_case(prog_fd, pa, done, n, gen, ctx, &x);
		if (ret)
			return ret;
		if (mix) {
			mix_read(bench, pa, mix, 1);
			mix->calls += (__u64)n;
		}
		p += x * n;
	}
	*base_ns = b / calls;
	*ns = p / calls;
	return 0;
}

long verifier_insns(void)
{
	const char *p = strstr(verifier_log, "processed ");

	return p ? strtol(p + 10, NULL, 10) : -1;
}

/* Keep this thread on one CPU: test runs execute where the caller runs. */
int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

void bench_fail(struct pkt_bench *b, const char *what, int ret)
{
	__u64 ev[XLB_EV_MAX];
	int i;

	fprintf(stderr, "xlb-bench: %s: %s\n", what,
		ret == -EPROTO ? "the data path is not set up as the benchmark expects" :
				 strerror(-ret));
	if (ret == -EPROTO && b->dp_open && !xlb_dp_events(&b->dp, ev))
		for (i = 0; i < XLB_EV_MAX; i++)
			if (ev[i])
				fprintf(stderr, "  event %s: %llu\n",
					xlb_event_name(i),
					(unsigned long long)ev[i]);
}
