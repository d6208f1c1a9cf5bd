/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xlbd: the control daemon.  One event loop (main.c) owns everything below;
 * the metrics thread (metrics.c) only reads, under `lock`, and the health
 * checks' thread (checker.c) records verdicts under it.
 *
 *   desired state (user/lib/state.h) --realize.c--> maps (user/lib/datapath.h)
 *        ^                                          ^
 *   control.c (socket, JSON)        health.c results, neighbours
 *
 * Runtime beside the desired state: per VIP its data-path id, published
 * table, generation and fingerprint; per backend its data-path id and
 * health.  Both survive a restart: ids and tables are read back from the
 * pinned maps, generations and health from the runtime file (runtime.c).
 */
#ifndef XLBD_H
#define XLBD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "datapath.h"
#include "health.h"
#include "lookup_table.h"
#include "neigh.h"
#include "state.h"

#define XLBD_VERSION		"0.2"

struct xdp_program;
struct json_object;

enum xlbd_log_level {
	XLBD_LOG_ERR = 3,
	XLBD_LOG_WARNING = 4,
	XLBD_LOG_NOTICE = 5,
	XLBD_LOG_INFO = 6,
	XLBD_LOG_DEBUG = 7,
};

/*
 * log.c: the daemon's log, on stderr with <N> priority prefixes for
 * journald, words on a terminal; libbpf's and libxdp's messages go there
 * too.  Process-wide, as the libraries' print callbacks are.
 */
void xlbd_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Where the log goes; the libraries' print callbacks installed. */
void xlbd_log_init(void);
/* Messages up to level (XLBD_LOG_INFO until then). */
void xlbd_log_set_level(int level);
/* The level of "error", "warning", "notice", "info" or "debug"; -1. */
int xlbd_log_level_parse(const char *name);
/*
 * While libxdp tries its dispatcher, which kernels without freplace for
 * XDP refuse before libxdp falls back to a plain attachment: libbpf's
 * warnings about that are debug messages, not alarms.
 */
void xlbd_log_libbpf_quiet(bool quiet);

#define log_err(...)	xlbd_log(XLBD_LOG_ERR, __VA_ARGS__)
#define log_warn(...)	xlbd_log(XLBD_LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	xlbd_log(XLBD_LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	xlbd_log(XLBD_LOG_INFO, __VA_ARGS__)
#define log_debug(...)	xlbd_log(XLBD_LOG_DEBUG, __VA_ARGS__)

/* A data-path backend id: one per (family, address, encapsulation). */
struct xlbd_beid {
	uint32_t refs;		/* runtime backends using it; 0: free */
	uint8_t family;
	uint8_t encap;
	__be32 addr[4];
	bool nh_ok;		/* next hop resolved and written */
	bool written;		/* the map's entry is this one's */
	struct xlb_nh nh;
	uint32_t vips;		/* VIPs using it (xlbd_beid_count_vips) */
	uint32_t vips_before, vips_run;	/* scratch of the count */
};

/* Runtime of one VIP; rt_vips[i] belongs to state.vips[i]. */
struct xlbd_vip {
	uint32_t id;			/* data-path VIP id */
	uint64_t generation;		/* tables published so far */
	uint64_t fingerprint;
	double changed_at;		/* unix seconds of the last publish */
	bool published;			/* table in the map matches `table` */
	bool panic;
	uint32_t in_table;		/* backends with slots */
	uint32_t eligible, down;	/* for panic */
	struct xlb_table table;		/* as published */
	uint32_t *table_refs;		/* VIPs sharing `table`'s memory, or
					 * NULL: its own (tables.c) */
	struct xlb_table_params params;	/* it was built with */
	struct xlb_backend_spec *specs;	/* it was built from (names owned) */
	size_t n_specs;
	uint32_t errors;		/* publish failures since last success */
	uint64_t inputs;		/* digest of params and specs */
	uint32_t map_id;		/* the published table map */
	bool lazy;			/* adopted: `table` not read yet */
	bool entry_ok;			/* the VIP map holds `entry` */
	struct xlb_vip entry;
	bool prev_valid;		/* the previous daemon's record: */
	uint64_t prev_inputs, prev_fp;
	uint32_t prev_map_id, prev_in_table;
	bool bounded;			/* bound.c marked its members */
};

/* Runtime of one backend; rt_bes[i] belongs to state.backends[i]. */
struct xlbd_be {
	uint16_t id;			/* data-path backend id */
	uint64_t hc_id;			/* health check (0: none) */
	struct xlb_hc_target target;	/* of the check, if any */
	uint8_t health;			/* enum xlb_hc_health */
	bool hc_pending;		/* target to hand to the engine */
	bool has_result;
	struct xlb_hc_result last;
	double last_at;			/* unix seconds of the last result */
};

struct xlbd_hc_ent {
	uint64_t hc_id;
	size_t idx;
};

struct xlbd_link {
	char ifname[XLB_IFNAME_MAX];
	int ifindex;
	uint8_t mode;
	bool attached;
	char error[256];
};

/* A VIP of the pinned maps at start, matched by the first commit. */
struct xlbd_adopted {
	struct xlb_vip_key key;
	struct xlb_vip val;
	bool used;
};

/* runtime.c: what the previous daemon's runtime file said */
#define XLBD_PREV_KEY_MAX	160
struct xlbd_prev {
	char key[XLBD_PREV_KEY_MAX];	/* "VIP" or "VIP ADDR" */
	uint64_t generation;
	double changed_at;
	uint8_t health;
	bool has_table;			/* the VIP's table record: */
	uint64_t inputs, fingerprint;
	uint32_t map_id, in_table;
};

/*
 * announce.c: host routes of the VIP addresses in the operator's table
 * (set announce table N), route protocol XLBD_RTPROT
 */
#define XLBD_RTPROT		250
struct mnl_socket;
struct xlbd_ann_addr;
struct xlbd_announce {
	struct mnl_socket *nl;
	unsigned int portid, seq;
	uint32_t table;			/* where our routes are (0: none) */
	bool drained;			/* xlbctl host drain */
	bool dirty;			/* sync at the end of this round */
	struct xlbd_ann_addr *routes;	/* announced, sorted */
	size_t n_routes;
	uint64_t announcements, withdrawals, errors;
	char error[256];		/* the last error */
};

/* control.c: a client of the control socket */
struct xlbd_client;
#define XLBD_CLIENTS_MAX	64

struct xlbd_opts {
	const char *instance;
	const char *config;		/* config file (reload, SIGHUP) */
	bool config_given;		/* -c: apply it at start */
	const char *socket;
	const char *state_dir;
	const char *metrics;		/* "ADDR:PORT" or "none" */
	const char *group;
	uint32_t ct_entries;		/* connection table capacity */
	bool ct_given;			/* --conntrack-entries */
	bool cleanup;
	const char *etcd;		/* --etcd URL[,URL...] */
	const char *cluster;		/* --cluster NAME */
	const char *host_name;		/* --host-name (default: hostname) */
};

struct xlbd {
	struct xlbd_opts o;
	char pin_dir[256];
	char state_file[512];
	char runtime_file[256];
	gid_t group_gid;		/* may change state besides root */
	bool group_set;

	pthread_mutex_t lock;		/* state below vs. the metrics thread */
	struct xlb_state state;
	struct xlbd_vip *rt_vips;
	struct xlbd_be *rt_bes;
	struct xlbd_beid *beids;	/* XLB_MAX_BACKENDS */
	uint32_t *beid_hash;		/* open addressing, id + 1, 0 empty */
	uint32_t beid_hash_size;
	uint32_t beid_hi;		/* ids from here on are all free */
	uint32_t beid_taken;		/* ids taken */
	uint64_t next_hc_id;
	struct xlbd_hc_ent *hc_index;	/* by hc_id: backend index */
	size_t n_hc_index;
	struct xlbd_link *links;
	size_t n_links;

	struct xlb_dp dp;
	int prog_fd;
	uint32_t prog_id;
	struct xdp_program *xprog;
	bool adopted;			/* the maps were pinned already */
	struct xlbd_adopted *adopted_vips;	/* their VIPs, by key */
	size_t n_adopted_vips, cap_adopted_vips;
	struct xlbd_prev *prev;		/* sorted by key */
	size_t n_prev, cap_prev;
	size_t n_prev_backends;		/* of them backends' records */
	bool state_loaded;		/* started from state.conf */
	bool ready;			/* started: maps and state usable */
	struct xlb_hc *hc;
	struct xlb_neigh *neigh;

	uint64_t generation;		/* accepted changes */
	double started_at;
	bool dirty;			/* tables to recompute */
	size_t verify_next;		/* xlbd_tables_verify's next VIP */
	bool runtime_dirty;		/* runtime file to rewrite */
	bool save_on_accept;		/* xlbd_commit begins the save */
	struct {			/* runtime.c: the save under way */
		pthread_t th;
		bool running;
		char *text;
		int ret;
	} saver;
	struct {			/* runtime.c: the state cache */
		pthread_t th;
		bool running;
		_Atomic bool done;	/* the thread's work is over */
		bool want;		/* to write once due */
		double due;		/* unix seconds */
		enum {
			XLBD_CACHE_NONE,	/* nothing saved yet */
			XLBD_CACHE_PENDING,
			XLBD_CACHE_WRITING,
			XLBD_CACHE_CURRENT,	/* made from state.conf */
			XLBD_CACHE_FAILED,
		} state;
		char error[256];	/* the last write's, "" if none */
		char work_error[256];	/* the thread's, until joined */
		char start[300];	/* "used", or why the start parsed */
	} cacher;
	char cache_file[512];
	bool lenient_links;		/* start: a link that cannot be
					 * attached is retried, not fatal */
	bool stop;			/* leave the loop */
	bool shutdown;			/* ... and detach, unpin */

	/* control-plane figures, for metrics */
	uint64_t updates;		/* reconciliations that published */
	double update_seconds_sum;
	double update_seconds_last;
	double last_publish_at;		/* unix seconds, last table published */
	uint64_t publish_errors;
	uint64_t hc_results[2];		/* failed, succeeded */
	struct {			/* verdicts written to members at once */
		uint64_t downs, ups;	/* member records written */
		double last_ms, max_ms;	/* verdict -> down record stored */
		double last_at;		/* unix seconds of the last down */
	} failover;

	void *metrics;			/* struct MHD_Daemon */
	struct xlbd_ctcount *ctcount;	/* ctcount.c, or NULL */
	struct xlbd_checker *checker;	/* checker.c, or NULL */
	uint64_t hc_flips;		/* verdicts that changed a health */
	struct xlbd_cluster *cl;	/* cluster mode (cluster.c), or NULL */
	bool bound_armed;		/* bound.c: its timer runs */
	uint64_t bound_marks;		/* full flags set or cleared */
	struct xlbd_announce ann;	/* announce.c */

	int ctl_fd;			/* the control socket, -1: none */
	int ctl_epfd;			/* the loop's epoll, for its clients */
	struct xlbd_client *clients;	/* XLBD_CLIENTS_MAX of them */
	size_t n_clients;
	uint64_t ctl_next_serial;	/* of the clients accepted */
	struct xlbd_client *ctl_current;	/* the client being handled */
	double ctl_request_at;		/* unix seconds: its request came */
	/*
	 * Where the last change's time went, in ms: its request read and
	 * applied to a copy of the state (parse), the commit without its
	 * tables (commit), the tables' builds and publications (longest of
	 * each, and the wall time of both on the pool), the reconcile's own
	 * work around them, the durable save.  xlb-bench control prints it.
	 */
	struct xlbd_phases {
		double parse, commit, build, publish, pool, reconcile, save;
		double runtime_save;	/* the last runtime file written */
	} ph;
	/*
	 * Where the start's time went, in ms (status "start_ms"): from
	 * main() on, the options, lock and libraries (init), the state read
	 * (state), the data path loaded or opened from its pins (data_path),
	 * the runtime file (runtime), the pinned maps' ids (adopt), the first
	 * commit without its tables (commit) and its tables (tables), the
	 * rest before the loop (rest: announce, counters), the loop's set up
	 * until the socket listens (listen) and every thread runs (loop);
	 * answer: main() -> the loop's first turn.
	 */
	struct xlbd_start_phases {
		double t0;		/* unix seconds: main() entered */
		double init, state, metrics, data_path, runtime, adopt;
		double commit, tables, rest, listen, loop, answer;
	} st;
};

double xlbd_now(void);			/* unix seconds, CLOCK_REALTIME */

/* realize.c: desired state + health -> runtime and maps (beid.c, tables.c,
 * link.c, pool.c do parts of it) */
int xlbd_realize_init(struct xlbd *d);
void xlbd_realize_free(struct xlbd *d);
/*
 * Make s the desired state: checks capacity, attaches new links (rolling
 * back on failure), rebuilds the runtime, publishes changed tables and
 * removes what went away.  On error (err says why) nothing changed.
 */
int xlbd_commit(struct xlbd *d, struct xlb_state *s, struct xlb_err *err);
/* Recompute and publish the tables whose inputs changed (tables.c). */
void xlbd_reconcile(struct xlbd *d);
/* Adopt ids from the pinned maps (after xlb_dp_from_pins). */
int xlbd_adopt_ids(struct xlbd *d);
/* Re-resolve next hops of every backend; retry links that failed. */
void xlbd_refresh(struct xlbd *d);
/* A health verdict. */
void xlbd_health_result(void *ctx, uint64_t id, const struct xlb_hc_result *r);
/* Detach every link (shutdown). */
void xlbd_detach_all(struct xlbd *d);
const struct xlbd_beid *xlbd_beid(const struct xlbd *d, uint16_t id);
/* Backends of VIP vi: how many, from state.backends[*first] on. */
size_t xlbd_vip_backends(const struct xlbd *d, size_t vi, size_t *first);
/* Index of the VIP in state.vips, -1 if none. */
long xlbd_vip_index(const struct xlbd *d, const struct xlb_vip_key *key);
/*
 * The published table of VIP vi, read from its map when the daemon adopted
 * it without reading (restart); NULL when it cannot be had.
 */
const struct xlb_table *xlbd_vip_table(struct xlbd *d, size_t vi);
/*
 * Adopted tables not read yet are read and checked against the runtime
 * file's fingerprint (xlbd_vip_table) until budget_ms has passed; true
 * while some are left.  The loop calls it in its spare turns.
 */
bool xlbd_tables_verify(struct xlbd *d, double budget_ms);
/* Adopted tables not checked yet. */
size_t xlbd_tables_unverified(const struct xlbd *d);
/* Effective health check of backend i. */
void xlbd_backend_health(const struct xlbd *d, size_t i, struct xlb_health *h);

/* runtime.c: persistence */

/* Save the state durably: now, or begun now and waited for later. */
int xlbd_save_state(struct xlbd *d);
void xlbd_save_begin(struct xlbd *d);
int xlbd_save_wait(struct xlbd *d);
int xlbd_load_file(const char *path, struct xlb_state *s, bool *found,
		   struct xlb_err *err);
/*
 * state.conf, from the state cache when it was made from the file as it
 * is (d->cacher.start says whether it was used, and why not).
 */
int xlbd_load_state(struct xlbd *d, struct xlb_state *s, bool *found,
		    struct xlb_err *err);
/* The state cache: write it once the saved state has rested. */
void xlbd_cache_due(struct xlbd *d);
/* ms until the loop should call xlbd_cache_tick, -1: nothing to do */
int xlbd_cache_wait_ms(const struct xlbd *d);
void xlbd_cache_tick(struct xlbd *d);
void xlbd_cache_stop(struct xlbd *d);
/* none, pending, writing, current or failed */
const char *xlbd_cache_state(const struct xlbd *d);
void xlbd_runtime_save(struct xlbd *d);
/* Generations, fingerprints and health of the previous daemon. */
void xlbd_runtime_load(struct xlbd *d);
/* Its record of key (a VIP string or xlbd_backend_key), or NULL. */
const struct xlbd_prev *xlbd_prev_find(const struct xlbd *d, const char *key);
/* "VIP ADDR", the key of a backend's runtime record; returns out. */
const char *xlbd_backend_key(const struct xlb_backend_conf *b, char *out,
			     size_t len);

/* beid.c: data-path backend ids */
int xlbd_beid_init(struct xlbd *d);
void xlbd_beid_free(struct xlbd *d);
/* The id of (family, encap, addr), allocating the lowest free one. */
long xlbd_beid_get(struct xlbd *d, uint8_t family, uint8_t encap,
		   const __be32 addr[4]);
/* How many ids s needs that are not allocated yet. */
int xlbd_beid_needed(const struct xlbd *d, const struct xlb_state *s,
		     size_t *n);
size_t xlbd_beid_free_count(const struct xlbd *d);
/* Write the entries of ids in use that are new or changed. */
void xlbd_beid_sync(struct xlbd *d);
/*
 * Count the VIPs using each id.  An id that served several VIPs and now
 * serves one has its counters set to zero, so that an id serving one VIP
 * counts only that VIP's packets (since then, or since it was taken).
 */
void xlbd_beid_count_vips(struct xlbd *d);
/* Clear the entries of ids nobody uses any more; they are free again. */
void xlbd_beid_release(struct xlbd *d);
/* Re-resolve the next hop of every id in use; write what changed. */
void xlbd_beid_refresh(struct xlbd *d);
/* The ids and next hops of the pinned backend map (restart). */
int xlbd_beid_adopt(struct xlbd *d);

/* tables.c */
void xlbd_vip_rt_free(struct xlbd_vip *rv);
/* Remove the tables of VIP ids (their entries gone), on the worker pool. */
void xlbd_tables_unpublish(struct xlbd *d, const uint32_t *ids, size_t n);

/* link.c */
/*
 * New link list for s: links kept as they are, new ones attached.  On a
 * failed attach the ones attached here are detached again and the error
 * returned; *out is then NULL.
 */
int xlbd_links_prepare(struct xlbd *d, const struct xlb_state *s,
		       struct xlbd_link **out, struct xlb_err *err);
/* After a commit: nl (n links) replaces d->links; links gone are detached. */
void xlbd_links_commit(struct xlbd *d, struct xlbd_link *nl, size_t n);
/* Attach the links that are not attached yet (periodic). */
void xlbd_links_retry(struct xlbd *d);
/* Interfaces enslaved to ifindex (bond slaves): count, or -1. */
int xlbd_link_lowers(int ifindex, int *out, size_t max);

/* pool.c: fn(ctx, k) for every k < n on up to threads threads (at most
 * XLBD_POOL_THREADS), the caller one of them; returns when all are done. */
#define XLBD_POOL_THREADS	64
/* a switch of a table map slower than this waited for a grace period */
#define XLBD_SWITCH_WAITS_NS	200000
void xlbd_pool_run(size_t threads, size_t n,
		   void (*fn)(void *ctx, size_t k), void *ctx);
/* The CPUs xlbd may run on: threads for work that computes. */
size_t xlbd_cores(void);

/* control.c */
int xlbd_control_open(struct xlbd *d, int epfd);
void xlbd_control_event(struct xlbd *d, int epfd, int fd, uint32_t events);
void xlbd_control_sweep(struct xlbd *d, int epfd);	/* timeouts */
void xlbd_control_close(struct xlbd *d);
/* Apply a whole new state from config text (restore, reload, SIGHUP). */
int xlbd_restore_text(struct xlbd *d, const char *text, size_t len,
		      const char *name, struct xlb_err *err);

/*
 * Answers that come after the request's handler returned (a cluster write
 * waits for etcd): xlbd_control_defer, called from the handler, parks the
 * client and returns a ticket; xlbd_control_answer answers it (ret 0:
 * result, consumed; else msg) under d->lock; xlbd_control_resume, without
 * the lock, goes on with what the client sent meanwhile.
 */
uint64_t xlbd_control_defer(struct xlbd *d);
double xlbd_control_request_at(const struct xlbd *d);
void xlbd_control_answer(struct xlbd *d, uint64_t ticket, int ret,
			 const char *msg, struct json_object *result);
void xlbd_control_resume(struct xlbd *d);

/* cluster.c: --etcd/--cluster (all but open/start/stop/fd under d->lock) */
int xlbd_cluster_open(struct xlbd *d, struct xlb_err *err);
int xlbd_cluster_start(struct xlbd *d, int epfd);
void xlbd_cluster_stop(struct xlbd *d);
int xlbd_cluster_fd(const struct xlbd *d);
void xlbd_cluster_event(struct xlbd *d);	/* takes d->lock */
void xlbd_cluster_tick(struct xlbd *d);
void xlbd_cluster_publish(struct xlbd *d);
/* Cluster writes: 0 with *res, 1 when answered later, or -errno. */
int xlbd_cluster_exec(struct xlbd *d, const struct xlb_op *ops, size_t n,
		      struct json_object **res, struct xlb_err *err);
int xlbd_cluster_restore(struct xlbd *d, const char *text, size_t len,
			 const char *name, struct json_object **res,
			 struct xlb_err *err);
/* A config file's per-host settings with the shared state, in *out. */
int xlbd_cluster_local(struct xlbd *d, const struct xlb_state *file,
		       const char *name, struct xlb_state *out,
		       struct xlb_err *err);
struct json_object *xlbd_cluster_status(struct xlbd *d);
/*
 * The health verdict the tables use for backend bi of VIP vi: this host's
 * own, or with health-consensus in cluster mode (etcd reachable), down
 * only when more than half of the live hosts' checks see it down.
 */
bool xlbd_backend_down(const struct xlbd *d, size_t vi, size_t bi);
/* Does this host's own verdict decide VIP vi's backends' health? */
bool xlbd_health_local(const struct xlbd *d, size_t vi);
struct json_object *xlbd_cluster_show(struct xlbd *d);
char *xlbd_cluster_metrics(struct xlbd *d);
/* The first line of state.conf in cluster mode ("" otherwise). */
const char *xlbd_cluster_state_header(struct xlbd *d, char *buf, size_t len);

/* show.c: results of read commands (json-c objects) */
struct json_object *xlbd_show_status(struct xlbd *d);
struct json_object *xlbd_show_links(struct xlbd *d);
int xlbd_show_vips(struct xlbd *d, const char *vip, struct json_object **out,
		   struct xlb_err *err);
int xlbd_show_backends(struct xlbd *d, const char *vip,
		       struct json_object **out, struct xlb_err *err);
int xlbd_show_table(struct xlbd *d, const char *vip, struct json_object **out,
		    struct xlb_err *err);
int xlbd_show_stats(struct xlbd *d, const char *vip, struct json_object **out,
		    struct xlb_err *err);
int xlbd_explain(struct xlbd *d, const char *flow, struct json_object **out,
		 struct xlb_err *err);

/* announce.c (under d->lock) */
int xlbd_announce_open(struct xlbd *d);
void xlbd_announce_close(struct xlbd *d);
/* Routes of the table made what the state and health say. */
void xlbd_announce_sync(struct xlbd *d);
void xlbd_announce_tick(struct xlbd *d);
/* Every route withdrawn (shutdown); -EIO when one could not be. */
int xlbd_announce_withdraw(struct xlbd *d);
/* host drain / undrain: recorded in the state directory, then synced. */
int xlbd_announce_drain(struct xlbd *d, bool drain, struct xlb_err *err);
/* xlbd --cleanup: withdraw the routes of table (0: nothing). */
int xlbd_announce_cleanup(struct xlbd *d, uint32_t table);
struct json_object *xlbd_announce_show(struct xlbd *d);
/* state, drained, table, announced: the host's record in the cluster */
struct json_object *xlbd_announce_brief(struct xlbd *d);
/* The announce metrics as text (malloc'd; NULL when out of memory). */
void xlbd_announce_metrics(struct xlbd *d, char **text);

/* ctcount.c: the connection table counted off the loop (no lock) */
#define XLBD_CT_COUNT_INTERVAL_S	10
#define XLBD_CT_COUNT_FIRST_MS		1000	/* after the start */
/* the main heap grows this much at a time, on huge pages (main.c) */
#define XLBD_HEAP_PAD			(64u << 20)
/* from main(): what can wait leaves the first answers alone (main.c) */
#define XLBD_START_QUIET_MS		250
struct xlbd_ct_figures {
	uint32_t count;		/* entries in use */
	double age_s;		/* seconds since the count ended */
	double seconds;		/* it took */
	uint64_t counts;	/* counts done since start */
	bool counting;		/* one runs now */
};
int xlbd_ctcount_start(struct xlbd *d);
void xlbd_ctcount_stop(struct xlbd *d);
/* The last count; false while the first one runs. */
bool xlbd_ctcount_get(struct xlbd *d, struct xlbd_ct_figures *f);

/*
 * checker.c: the health checks on a thread of their own.  The loop polls
 * xlbd_checker_fd (a verdict changed a backend's health: reconcile),
 * drains it with xlbd_checker_woken, and kicks the thread after each
 * round (checks may have changed).
 */
int xlbd_checker_start(struct xlbd *d);
int xlbd_checker_fd(const struct xlbd *d);
void xlbd_checker_woken(struct xlbd *d);
void xlbd_checker_kick(struct xlbd *d);
void xlbd_checker_stop(struct xlbd *d);

/* bound.c: bounded loads, a round every XLBD_BOUND_INTERVAL_MS */
#define XLBD_BOUND_INTERVAL_MS	100
void xlbd_bound_tick(struct xlbd *d);
void xlbd_bound_arm(struct xlbd *d, int tfd);

/* metrics.c */
int xlbd_metrics_start(struct xlbd *d, struct xlb_err *err);
void xlbd_metrics_stop(struct xlbd *d);

/*
 * privs.c: each thread gives up what it does not need.  The loop keeps
 * CAP_NET_ADMIN (XDP attachment, routes, neighbours) and CAP_SYS_ADMIN
 * (libxdp opens the programs attached to a link by id); the kernel's
 * checks for CAP_BPF and CAP_PERFMON (maps, libxdp's dispatcher and the
 * programs it loads as its extensions) accept CAP_SYS_ADMIN as well.
 */
#define XLBD_PRIVS_MAIN	CAP_NET_ADMIN, CAP_SYS_ADMIN
/* At start, before any thread: refused unless the needed caps are held. */
int xlbd_privs_init(struct xlb_err *err);
/* The calling thread, named name: no capability, user nobody, no groups. */
void xlbd_privs_none(const char *name);
/* The calling state saver: no capability, still root (the file's owner). */
void xlbd_privs_saver(void);
/* The calling table worker: CAP_BPF alone. */
void xlbd_privs_worker(void);
/* The main thread, once every unprivileged thread runs: XLBD_PRIVS_MAIN. */
int xlbd_privs_main(struct xlb_err *err);

#endif /* XLBD_H */
