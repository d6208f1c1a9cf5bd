/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xlb-bench: what its subcommands share.  main.c parses the options and
 * calls one subcommand (tables.c, pkt.c, pkt_scale.c, publish.c, memory.c,
 * control.c, path.c, script.c); each prints figures (fig.c); pkt, pkt-scale,
 * publish and memory run the data path under BPF_PROG_TEST_RUN (lb.c).
 */
#ifndef XLB_BENCH_H
#define XLB_BENCH_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "datapath.h"
#include "xlb.skel.h"
#include "xlb_reflect.skel.h"

#define MAX_LEVELS	16
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct opts {
	int json;
	int runs;
	int quick;	/* smoke mode for make test: fewer runs, smaller cases */
	long calls;	/* pkt, pkt-scale: test runs per path and round */
	int rounds;	/* pkt, pkt-scale: rounds, each with its own baseline */
	const char *path;	/* pkt: only this path */
	const char *only;	/* control: only this part (NULL: all) */
	int n_vips;			/* pkt-scale: VIP counts */
	long vips[MAX_LEVELS];
	int vips_given;			/* control: VIPs of the large cases */
	int n_fill;			/* pkt-scale: connection table fill */
	double fill[MAX_LEVELS];
	__u32 ct_entries;	/* pkt: connection table size (0: default) */
	const char *against;	/* pkt: another build of xlb.bpf.o */
};

/* The subcommands; each returns the exit status. */
int bench_tables(const struct opts *o);
int bench_pkt(const struct opts *o);
int bench_pkt_scale(const struct opts *o);
int bench_pkt_mq(const struct opts *o);
int bench_publish(const struct opts *o);
int bench_memory(const struct opts *o);
int bench_control(const struct opts *o);
int bench_path(const struct opts *o, int argc, char **argv);
/* script.c: exec tools/xlb-bench/NAME.sh (path, cluster) */
int bench_script(const struct opts *o, const char *name, int argc, char **argv);

/* The table sizes the subcommands measure (tables.c). */
extern const uint32_t table_ms[3];

int cmp_double(const void *a, const void *b);
/* A number in [lo, hi] for option opt, or -1 with the error printed. */
long parse_num(const char *opt, const char *s, long lo, long hi);

/* --- figures (fig.c) ------------------------------------------------------ */

/*
 * One figure: the common record of results.json.  value is the statistic
 * `stat` over `runs` measurements, min and max their range; baseline, when
 * the figure has a natural one, is measured in the same run, in the same
 * unit.
 */
struct fig {
	const char *bench;
	char name[96];
	const char *unit;
	const char *stat;	/* median, mean, exact */
	double value, min, max;
	double baseline;	/* 0: none */
	const char *baseline_what;
	int runs;
	/*
	 * The goal an issue set for value (in its unit), 0 for none; printed
	 * beside the figure and gathered by make bench's report ("Goals").
	 */
	double goal;
	const char *goal_what;
	char params[768];	/* JSON members: "k":v,... */
	char extra[384];	/* the subcommand's own keys, JSON members */
};

/* Append to a figure's params or extra (JSON members, "k":v,...). */
void fig_add(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define PARAM(f, ...)	fig_add((f)->params, sizeof((f)->params), __VA_ARGS__)
#define EXTRA(f, ...)	fig_add((f)->extra, sizeof((f)->extra), __VA_ARGS__)

void fig_json(const struct fig *f);
/* fig_json with -j, else the generic human line. */
void fig_emit(const struct opts *o, const struct fig *f);
/* Sort v and set value (median), min and max of f from it. */
void fig_median(struct fig *f, double *v, int n);
double median_of(double *v, int n);
void fig_exact(struct fig *f, double v);

/* --- the data path under BPF_PROG_TEST_RUN (lb.c) ------------------------ */

#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8::10"
#define CLIENT4		"198.51.100.7"
#define CLIENT6		"2001:db8:1::7"
#define OTHER4		"203.0.113.99"
#define BACKENDS	4
#define PKT_BUF		256

enum { VIP_IPIP, VIP_GUE, VIP_V6, VIP_STATELESS, VIP_FIB, VIP_GUE6, VIPS };

struct pkt_bench {
	struct xlb_bpf *skel;
	struct xlb_reflect_bpf *reflect;
	struct xlb_dp dp;
	struct xlb_config cfg;
	int dp_open;
	struct bpf_object *against;	/* pkt --against: the other build */
};

struct path {
	const char *name;
	int family;
	const char *dst;
	__u16 dport;
	int new_flow;		/* a different flow every call */
	int expect;		/* XDP action the path must end in */
	int fib;		/* arrives on the veth: next hop by FIB lookup */
	int rotate;		/* call i: flow i % rotate, all established */
	long zipf;		/* call i: a flow of `zipf` established ones,
				 * drawn by Zipf(ZIPF_S) (gen_zipf) */
	int full;		/* new flows on a full connection table */
	double target;		/* goal: ratio to the XDP_TX-only program
				 * (issue 21's 0.6 x Katran); 0: none */
	int cold;		/* every call reads a line no cache holds: a
				 * new flow's bucket in the default table */
};

/*
 * Flows the *_rotate paths cycle through: 4096, as in the figures the
 * goals come from; 8 times the flow cache's slots (structs.h), so that a
 * flow's slot holds another flow when its turn comes again: a connection
 * (or table) hit that misses the cache.
 */
#define ROTATE_FLOWS	4096
/* The Zipf path: 100 000 established flows, exponent 1.1, fixed seed. */
#define ZIPF_FLOWS	100000
#define ZIPF_S		1.1
#define ZIPF_SEED	0x7a697066ULL

/* The paths pkt measures, in its order. */
extern const struct path paths[13];
#define NPATHS	ARRAY_SIZE(paths)
/* The path of pkt called name, or NULL. */
const struct path *path_find(const char *name);
/*
 * Where flows far from any other's start: new flows and Zipf draws of
 * another build (--against) or of another CPU (pkt-mq).
 */
#define FLOWS_APART	(1L << 32)

/*
 * What the data path did with a path's measured calls (its VIP's
 * counters and the new-flow guard, read around each block of calls of
 * this build only): connection-table hits, flow-cache hits, new flows
 * (picked from the table) and of those the ones not remembered.
 */
struct flow_mix {
	__u64 calls, ct_hits, cache_hits, new_flows, refused;
};

/*
 * Where the packets of a measured case come from: the path's one packet,
 * or gen(ctx, i) for call i (userspace work between calls, not timed: the
 * figure is the kernel's own per-run time).
 */
typedef size_t (*pkt_gen)(void *ctx, long i, __u8 *buf);

/* New flows, numbered from base: no flow repeats within a process. */
struct new_flow_gen {
	const struct path *pa;
	long base;
};

size_t gen_new_flow(void *ctx, long i, __u8 *buf);
/* Established flows, in turn (struct path.rotate): the same for any build. */
size_t gen_rotate(void *ctx, long i, __u8 *buf);
/*
 * Call i of the Zipf path: the flow of rank r (0: the most frequent) with
 * probability proportional to 1 / (r + 1)^ZIPF_S, a function of ZIPF_SEED
 * and base + i only; gen_rank: the flow of rank base + i (to establish).
 */
size_t gen_zipf(void *ctx, long i, __u8 *buf);
size_t gen_rank(void *ctx, long i, __u8 *buf);
/* The Zipf sampler's table; 0 or -ENOMEM. */
int zipf_init(long n, double s);
/*
 * Bring a path's flows into the connection table through prog_fd (each
 * sent once, untimed): its rotate or zipf set; nothing for other paths.
 */
int establish(int prog_fd, const struct path *pa);
/*
 * Fill the connection table until every bucket is full (flows apart from
 * every path's, as fresh as the data path's clock): *entries counted.
 */
int ct_fill_full(struct pkt_bench *b, __u32 *entries, __u32 *capacity);
/* The VIP a path's packets are for. */
int path_vip(const struct path *pa);

/*
 * The FIB path's interface, in a private network namespace the benchmark
 * moves into (gone when it exits).
 */
int fib_setup(void);
int pkt_setup(struct pkt_bench *b, const struct opts *o, int all,
	      struct xlb_err *err);
void pkt_teardown(struct pkt_bench *b);
/* inet_pton of family 4 or 6 into the xlb layout. */
void lb_addr(int family, const char *s, __be32 a[4]);
/* A Maglev table of m slots over n backends of base VIP v. */
int vip_table(struct pkt_bench *b, int v, int family, int n, uint32_t m,
	      struct xlb_table *t, struct xlb_err *err);
/* VIP v of pkt-scale, and of memory's VIP at an address of its own. */
void extra_vip_addr(long v, __be32 a[4]);
/* A TCP ACK with 64 bytes of payload; addresses as 16-byte arrays. */
size_t make_packet_a(__u8 *buf, int family, const __be32 src[4],
		     const __be32 dst[4], __u16 dport, __u16 sport);
size_t make_packet(__u8 *buf, int family, const char *dst, __u16 dport,
		   __u16 sport, __u32 client);
/* One TCP packet to VIP 0, whose program must answer XDP_TX. */
extern const struct path baseline_path;
/* Mean kernel-measured ns per run over `calls` runs with repeat = 1. */
int run_case(int prog_fd, const struct path *pa, long first, long calls,
	     pkt_gen gen, void *ctx, double *ns);
/* Load file on b's maps for pkt --against: its program's fd, or -errno. */
int against_load(struct pkt_bench *b, const char *file, struct xlb_err *err);
/* Baseline (or --against build) and case, in alternating blocks. */
int run_pair(const struct pkt_bench *bench, int base_fd, int prog_fd,
	     const struct path *pa, long calls, pkt_gen gen, void *ctx,
	     double *base_ns, double *ns, struct flow_mix *mix);
/* "processed N insns" of the verifier's log of the last pkt_setup. */
long verifier_insns(void);
/* Keep this thread on one CPU: test runs execute where the caller runs. */
int pin_cpu(int cpu);
void bench_fail(struct pkt_bench *b, const char *what, int ret);

/* --- the machine's memory (memlat.c) -------------------------------------- */

/*
 * ns of one dependent load: near (second-level cache), tlb (one TLB miss
 * more than near), mem (one miss to memory, huge pages asked for), and
 * how much of the memory region the kernel gave as huge pages; what the
 * first write to fresh memory costs.
 */
struct mem_lat {
	double near_ns, tlb_ns, mem_ns;
	/* first write to a fresh 4 KiB: 4 KiB pages, 2 MiB pages asked for */
	double fault_ns, fault_huge_ns;
	long mem_huge;		/* bytes; -1: unknown */
	double mem_huge_share;
};

int mem_latency(struct mem_lat *m);

/*
 * The same asked of a program in a test run (bpf/xlb_memlat.bpf.c): ns a
 * call pays for the one line it reads, over the same program reading
 * none, as median, min and max over the rounds: page, one line, the same
 * every call; near, 16384 lines packed in 1 MiB; tlb, 16384 lines, one
 * per 4 KiB page of 64 MiB.  call_ns: the program reading none, median
 * ns per call.
 */
struct run_lat {
	double page[3], near[3], tlb[3];
	double call_ns;
	int rounds;
};

int run_latency(const struct opts *o, struct run_lat *r);

#endif /* XLB_BENCH_H */
