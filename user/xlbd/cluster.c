// SPDX-License-Identifier: GPL-2.0
/*
 * Cluster mode (xlbd --etcd URL --cluster NAME): the shared configuration
 * lives in etcd (keys in user/lib/cluster.h), every host follows it, and
 * each host publishes what it runs under a lease.
 *
 * Two threads do the network I/O, never holding d->lock:
 *
 *   watcher  reads the whole /xlb/NAME/ prefix once (and again after a
 *            compaction), then watches it from the next revision, and
 *            hands every message, whole, to the event loop; reconnects
 *            with backoff and resumes from the last revision it passed on.
 *   writer   runs the compare-and-swap transactions of cluster writes,
 *            grants and keeps alive the host's lease, and puts the host's
 *            record (hosts/HOST) whenever it changes.
 *
 * They talk to the loop through a queue and an eventfd.  The loop keeps a
 * mirror of the config keys (value and mod_revision) and the last good
 * shared state.  Each batch of changes is applied as one transaction, as
 * `restore` does: the keys changed since the last good state are read
 * into a copy of it, the result is validated whole, merged with this
 * host's own settings (links, outer sources) and committed; any fault
 * leaves the host on its last good state and is reported (status,
 * metrics, the host record) with key, revision, line and column.
 *
 * The configuration's revision is the highest mod_revision among the
 * config keys, the same on every host whether it watched each change or
 * read everything at once; a VIP deletion written by xlbd therefore also
 * rewrites config/global, so that it raises the revision too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cluster.h"
#include "config.h"
#include "etcd.h"
#include "xlbd.h"

#define LEASE_TTL_S		5
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		3000
#define WRITE_WAIT_S		10.0	/* a write's answer waits this long
					 * for this host to apply it */
#define HEADER			"# xlb cluster "

enum msg_type {
	M_SNAPSHOT,	/* everything under the prefix at a revision */
	M_EVENTS,	/* changes, whole revisions */
	M_UP,		/* etcd answers */
	M_DOWN,		/* etcd does not answer */
	M_WRITTEN,	/* a write's transaction ended */
};

struct msg {
	struct msg *next;
	int type;
	int64_t revision;
	struct xlb_etcd_event *ev;
	size_t n;
	/* M_DOWN, M_WRITTEN */
	char error[256];
	uint64_t ticket;
	int ret;
	bool succeeded;
	double at;
};

/* A config key as etcd has it. */
struct ckey {
	char *key;
	char *value;		/* NULL: deleted */
	size_t len;
	int64_t mod_rev;
	bool dirty;		/* changed since the last good state */
};

/* Another host (or this one), from hosts/HOST. */
struct peer {
	char name[XLB_CLUSTER_NAME_MAX + 1];
	json_object *info;	/* its record, NULL while silent */
	bool alive;		/* its key exists (its lease holds) */
	double seen_at;		/* last change of its record */
	double silent_at;	/* its key went away */
};

/* A cluster write waiting for its transaction, then for this host. */
struct pending {
	uint64_t ticket;
	double request_at;
	int64_t revision;	/* written at; 0 while the transaction runs */
	double written_at;
	double deadline;
};

struct job {
	struct job *next;
	uint64_t ticket;
	struct xlb_etcd_cmp *cmps;
	size_t n_cmps;
	struct xlb_etcd_op *ops;
	size_t n_ops;
};

struct xlbd_cluster {
	char name[XLB_CLUSTER_NAME_MAX + 1];
	char host[XLB_CLUSTER_NAME_MAX + 1];
	char prefix[96];		/* /xlb/NAME/ */
	char config_prefix[96];
	char hosts_prefix[96];
	char host_key[XLB_CLUSTER_KEY_MAX];
	char global_key[XLB_CLUSTER_KEY_MAX];
	const char *urls;

	/* threads */
	pthread_t watcher, writer;
	bool threads;
	atomic_bool stop;
	int efd;
	pthread_mutex_t qlock;
	pthread_cond_t wcond;		/* the writer's work arrived */
	struct msg *q_head, *q_tail;	/* to the loop */
	struct job *j_head, *j_tail;	/* to the writer */
	char *publish;			/* the record to put, to the writer */
	bool publish_new;

	/* the loop's, under d->lock */
	struct ckey *keys;
	size_t n_keys;
	struct xlb_state shared;	/* last good */
	int64_t revision;		/* of the last good configuration */
	double applied_at;
	int64_t seen_revision;		/* of the newest message */
	bool etcd_up;
	bool ever_up;
	char etcd_error[256];
	double etcd_since;		/* up or down since */
	bool refused;
	char refusal[256];
	double refused_at;
	uint64_t refusals;
	struct peer *peers;
	size_t n_peers;
	struct pending *pend;
	size_t n_pend;
	char *published;		/* the record last handed to the writer */
	uint64_t writes_ok, writes_conflict, writes_failed;
	bool peers_changed;		/* tables to recompute */
};

/* --- queue between the threads and the loop ------------------------------ */

static void post(struct xlbd_cluster *cl, struct msg *m)
{
	uint64_t one = 1;

	pthread_mutex_lock(&cl->qlock);
	if (cl->q_tail)
		cl->q_tail->next = m;
	else
		cl->q_head = m;
	cl->q_tail = m;
	pthread_mutex_unlock(&cl->qlock);
	if (write(cl->efd, &one, sizeof(one)) < 0)
		log_debug("cluster: eventfd: %s", strerror(errno));
}

static struct msg *msg_new(int type)
{
	struct msg *m = calloc(1, sizeof(*m));

	if (m)
		m->type = type;
	return m;
}

static void events_free(struct xlb_etcd_event *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(ev[i].kv.key);
		free(ev[i].kv.value);
	}
	free(ev);
}

static void msg_free(struct msg *m)
{
	events_free(m->ev, m->n);
	free(m);
}

/* Sleep ms unless told to stop; false when stopping. */
static bool nap(struct xlbd_cluster *cl, unsigned int ms)
{
	while (ms && !atomic_load(&cl->stop)) {
		unsigned int step = ms > 50 ? 50 : ms;

		usleep(step * 1000);
		ms -= step;
	}
	return !atomic_load(&cl->stop);
}

/* --- the watcher ---------------------------------------------------------- */

struct watch_ctx {
	struct xlbd_cluster *cl;
	int64_t *rev;
	bool *full;
	bool *up;
};

/* Move a message's events into a loop message (they are freed with it). */
static int on_watch(void *arg, const struct xlb_etcd_watch_msg *wm)
{
	struct watch_ctx *w = arg;
	struct xlb_etcd_watch_msg *m = (struct xlb_etcd_watch_msg *)wm;
	struct msg *out;

	if (m->created && !*w->up) {
		*w->up = true;
		out = msg_new(M_UP);
		if (out)
			post(w->cl, out);
	}
	if (m->canceled) {
		if (m->compact_revision > 0) {
			log_notice("cluster: revision %" PRId64 " was compacted; reading everything again",
				   *w->rev + 1);
			*w->full = true;
			return -ERANGE;
		}
		log_warn("cluster: etcd canceled the watch: %s",
			 m->cancel_reason[0] ? m->cancel_reason : "no reason given");
		return -ECONNRESET;
	}
	if (!m->n)
		return 0;
	out = msg_new(M_EVENTS);
	if (!out)
		return -ENOMEM;
	out->ev = m->events;
	out->n = m->n;
	out->revision = m->events[m->n - 1].kv.mod_revision;
	m->events = NULL;
	m->n = 0;
	*w->rev = out->revision;
	post(w->cl, out);
	return 0;
}

/* Everything under the prefix, as one snapshot message. */
static int read_all(struct xlbd_cluster *cl, struct xlb_etcd *e,
		    int64_t *rev, struct xlb_err *err)
{
	struct xlb_etcd_range r;
	struct msg *m;
	size_t i;
	int ret;

	ret = xlb_etcd_range_prefix(e, cl->prefix, 0, &r, err);
	if (ret)
		return ret;
	m = msg_new(M_SNAPSHOT);
	if (!m || (r.n && !(m->ev = calloc(r.n, sizeof(*m->ev))))) {
		free(m);
		xlb_etcd_range_free(&r);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	for (i = 0; i < r.n; i++) {
		m->ev[i].type = XLB_ETCD_PUT;
		m->ev[i].kv = r.kvs[i];
		memset(&r.kvs[i], 0, sizeof(r.kvs[i]));
	}
	m->n = r.n;
	m->revision = r.revision;
	*rev = r.revision;
	xlb_etcd_range_free(&r);
	post(cl, m);
	return 0;
}

static void post_down(struct xlbd_cluster *cl, const char *why)
{
	struct msg *m = msg_new(M_DOWN);

	if (!m)
		return;
	snprintf(m->error, sizeof(m->error), "%s", why);
	post(cl, m);
}

static void *watcher_main(void *arg)
{
	struct xlbd_cluster *cl = arg;
	struct xlb_err err = { "" };
	unsigned int backoff = BACKOFF_MIN_MS;
	struct watch_ctx w;
	struct xlb_etcd *e;
	int64_t rev = 0;
	bool full = true, up = false;
	int ret;

	xlbd_privs_none("xlbd-etcd-watch");	/* HTTP to etcd only */
	e = xlb_etcd_open(cl->urls, &err);
	if (!e)
		return NULL;
	xlb_etcd_set_stop(e, &cl->stop);
	w = (struct watch_ctx){ cl, &rev, &full, &up };
	while (!atomic_load(&cl->stop)) {
		if (full) {
			ret = read_all(cl, e, &rev, &err);
			if (!ret) {
				full = false;
				if (!up) {
					struct msg *m = msg_new(M_UP);

					up = true;
					if (m)
						post(cl, m);
				}
			}
		} else {
			ret = xlb_etcd_watch(e, cl->prefix, rev + 1, on_watch,
					     &w, &err);
			if (ret == -ERANGE && full)
				continue;	/* compacted: read it all */
		}
		if (atomic_load(&cl->stop))
			break;
		if (!ret)
			continue;
		if (up || backoff == BACKOFF_MIN_MS)
			post_down(cl, err.msg);
		if (up)
			backoff = BACKOFF_MIN_MS;
		up = false;
		if (!nap(cl, backoff))
			break;
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
							 backoff * 2;
	}
	xlb_etcd_close(e);
	return NULL;
}

/* --- the writer ----------------------------------------------------------- */

static void job_free(struct job *j)
{
	size_t i;

	for (i = 0; i < j->n_ops; i++) {
		free((char *)j->ops[i].key);
		free((char *)j->ops[i].value);
	}
	for (i = 0; i < j->n_cmps; i++)
		free((char *)j->cmps[i].key);
	free(j->ops);
	free(j->cmps);
	free(j);
}

static void run_job(struct xlbd_cluster *cl, struct xlb_etcd *e,
		    struct job *j)
{
	struct msg *m = msg_new(M_WRITTEN);
	struct xlb_err err = { "" };
	int64_t rev = 0;
	bool ok = false;
	int ret;

	ret = xlb_etcd_txn(e, j->cmps, j->n_cmps, j->ops, j->n_ops, &ok,
			   &rev, &err);
	if (m) {
		m->ticket = j->ticket;
		m->ret = ret;
		m->succeeded = ok;
		m->revision = rev;
		m->at = xlbd_now();
		snprintf(m->error, sizeof(m->error), "%s", err.msg);
		post(cl, m);
	}
	job_free(j);
}

/* Keep the lease and the host's record; returns ms until it is due again. */
static unsigned int tend_lease(struct xlbd_cluster *cl, struct xlb_etcd *e,
			       int64_t *lease, double *renew_at, char **record,
			       bool *record_new)
{
	struct xlb_err err = { "" };
	double now = xlbd_now();
	int64_t ttl, rev;
	int ret;

	if (*lease && now >= *renew_at) {
		ret = xlb_etcd_lease_keepalive(e, *lease, &ttl, &err);
		if (!ret && !ttl) {
			log_warn("cluster: the lease of host %s expired; publishing again",
				 cl->host);
			*lease = 0;
		} else if (!ret) {
			*renew_at = now + LEASE_TTL_S / 3.0;
		} else {
			log_debug("cluster: lease keepalive: %s", err.msg);
			return 500;
		}
	}
	if (!*lease) {
		ret = xlb_etcd_lease_grant(e, LEASE_TTL_S, lease, &err);
		if (ret) {
			*lease = 0;
			return 500;
		}
		*renew_at = now + LEASE_TTL_S / 3.0;
		*record_new = true;
	}
	if (*record_new && *record) {
		ret = xlb_etcd_put(e, cl->host_key, *record, strlen(*record),
				   *lease, &rev, &err);
		if (ret) {
			log_debug("cluster: publishing host %s: %s", cl->host,
				  err.msg);
			return 500;
		}
		*record_new = false;
	}
	now = xlbd_now();
	return *renew_at > now ? (unsigned int)((*renew_at - now) * 1000) + 1 :
				 1;
}

static void *writer_main(void *arg)
{
	struct xlbd_cluster *cl = arg;
	struct xlb_err err = { "" };
	struct xlb_etcd *e;
	int64_t lease = 0;
	double renew_at = 0;
	char *record = NULL;
	bool record_new = false;
	unsigned int wait_ms = 0;

	xlbd_privs_none("xlbd-etcd-write");	/* HTTP to etcd only */
	e = xlb_etcd_open(cl->urls, &err);
	if (!e)
		return NULL;
	xlb_etcd_set_stop(e, &cl->stop);
	for (;;) {
		struct timespec ts;
		struct job *j;

		pthread_mutex_lock(&cl->qlock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += wait_ms / 1000;
		ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!atomic_load(&cl->stop) && !cl->j_head &&
		       !cl->publish_new && wait_ms &&
		       !pthread_cond_timedwait(&cl->wcond, &cl->qlock, &ts))
			;
		j = cl->j_head;
		if (j) {
			cl->j_head = j->next;
			if (!cl->j_head)
				cl->j_tail = NULL;
		}
		if (cl->publish_new) {
			free(record);
			record = cl->publish;
			cl->publish = NULL;
			cl->publish_new = false;
			record_new = true;
		}
		pthread_mutex_unlock(&cl->qlock);
		if (atomic_load(&cl->stop)) {
			if (j)
				job_free(j);
			break;
		}
		if (j) {
			run_job(cl, e, j);
			wait_ms = 0;
			continue;
		}
		wait_ms = tend_lease(cl, e, &lease, &renew_at, &record,
				     &record_new);
	}
	/* leaving: the record goes now, not when the lease runs out */
	if (lease) {
		/* this last request runs although the stop flag is set */
		xlb_etcd_set_timeouts(e, 500, 1000);
		xlb_etcd_set_stop(e, NULL);
		xlb_etcd_lease_revoke(e, lease, &err);
	}
	free(record);
	xlb_etcd_close(e);
	return NULL;
}

/* --- mirror of the config keys -------------------------------------------- */

static bool is_config(const struct xlbd_cluster *cl, const char *key)
{
	return !strncmp(key, cl->config_prefix, strlen(cl->config_prefix));
}

static struct ckey *key_find(struct xlbd_cluster *cl, const char *key)
{
	size_t i;

	for (i = 0; i < cl->n_keys; i++)
		if (!strcmp(cl->keys[i].key, key))
			return &cl->keys[i];
	return NULL;
}

static struct ckey *key_get(struct xlbd_cluster *cl, const char *key)
{
	struct ckey *k = key_find(cl, key), *a;

	if (k)
		return k;
	a = realloc(cl->keys, (cl->n_keys + 1) * sizeof(*a));
	if (!a)
		return NULL;
	cl->keys = a;
	k = &a[cl->n_keys];
	memset(k, 0, sizeof(*k));
	k->key = strdup(key);
	if (!k->key)
		return NULL;
	cl->n_keys++;
	return k;
}

/* Take ownership of value (NULL: deleted). */
static void key_set(struct xlbd_cluster *cl, const char *key, char *value,
		    size_t len, int64_t mod_rev)
{
	struct ckey *k = key_get(cl, key);

	if (!k) {
		free(value);
		log_err("cluster: out of memory");
		return;
	}
	if ((!k->value && !value) ||
	    (k->value && value && k->len == len &&
	     !memcmp(k->value, value, len))) {
		k->mod_rev = mod_rev;
		free(value);
		return;
	}
	free(k->value);
	k->value = value;
	k->len = len;
	k->mod_rev = mod_rev;
	k->dirty = true;
}

/* The configuration's revision: the newest mod_revision of a present key. */
static int64_t config_revision(const struct xlbd_cluster *cl)
{
	int64_t r = 0;
	size_t i;

	for (i = 0; i < cl->n_keys; i++)
		if (cl->keys[i].value && cl->keys[i].mod_rev > r)
			r = cl->keys[i].mod_rev;
	return r;
}

/* --- other hosts ---------------------------------------------------------- */

static struct peer *peer_get(struct xlbd_cluster *cl, const char *name)
{
	struct peer *p;
	size_t i;

	for (i = 0; i < cl->n_peers; i++)
		if (!strcmp(cl->peers[i].name, name))
			return &cl->peers[i];
	if (strlen(name) > XLB_CLUSTER_NAME_MAX)
		return NULL;
	p = realloc(cl->peers, (cl->n_peers + 1) * sizeof(*p));
	if (!p)
		return NULL;
	cl->peers = p;
	p = &p[cl->n_peers++];
	memset(p, 0, sizeof(*p));
	strcpy(p->name, name);
	return p;
}

static void peer_update(struct xlbd_cluster *cl, const struct xlb_etcd_event *ev)
{
	const char *name = ev->kv.key + strlen(cl->hosts_prefix);
	struct peer *p = peer_get(cl, name);
	json_object *o = NULL;

	if (!p)
		return;
	if (ev->type == XLB_ETCD_PUT) {
		o = json_tokener_parse(ev->kv.value);
		if (!o || !json_object_is_type(o, json_type_object)) {
			log_warn("cluster: the record of host %s is not a JSON object; ignored",
				 p->name);
			json_object_put(o);
			return;
		}
	}
	json_object_put(p->info);
	p->info = o;
	/* other hosts' verdicts count for health-consensus VIPs */
	if (strcmp(p->name, cl->host))
		cl->peers_changed = true;
	if (o) {
		p->alive = true;
		p->seen_at = xlbd_now();
	} else if (p->alive) {
		p->alive = false;
		p->silent_at = xlbd_now();
	}
}

/* --- health consensus ----------------------------------------------------- */

static bool record_says_down(json_object *rec, const char *key)
{
	json_object *a = json_object_object_get(rec, "down");
	size_t i, n;

	if (!a || !json_object_is_type(a, json_type_array))
		return false;
	n = json_object_array_length(a);
	for (i = 0; i < n; i++) {
		const char *s = json_object_get_string(
			json_object_array_get_idx(a, i));

		if (s && !strcmp(s, key))
			return true;
	}
	return false;
}

bool xlbd_health_local(const struct xlbd *d, size_t vi)
{
	const struct xlbd_cluster *cl = d->cl;

	return !cl || !cl->etcd_up || !d->state.vips[vi].health_consensus;
}

bool xlbd_backend_down(const struct xlbd *d, size_t vi, size_t bi)
{
	const struct xlbd_cluster *cl = d->cl;
	const struct xlb_backend_conf *b = &d->state.backends[bi];
	bool local = d->rt_bes[bi].health == XLB_HC_DOWN;
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX], key[160];
	unsigned int hosts = 1, votes = local;
	size_t i;

	if (xlbd_health_local(d, vi))
		return local;
	snprintf(key, sizeof(key), "%s %s", xlb_vip_str(&b->vip, vs),
		 xlb_addr_str(b->family, b->addr, as));
	for (i = 0; i < cl->n_peers; i++) {
		const struct peer *p = &cl->peers[i];

		if (!p->alive || !strcmp(p->name, cl->host))
			continue;
		hosts++;
		votes += record_says_down(p->info, key);
	}
	return votes * 2 > hosts;
}

/* --- applying the configuration ------------------------------------------ */

static void pending_answer(struct xlbd *d, struct pending *p, int ret,
			   const char *msg)
{
	json_object *r = NULL;

	if (!ret) {
		r = json_object_new_object();
		json_object_object_add(r, "changed", json_object_new_boolean(1));
		json_object_object_add(r, "revision",
				       json_object_new_int64(p->revision));
		json_object_object_add(r, "generation", json_object_new_int64(
			(int64_t)d->generation));
		json_object_object_add(r, "written_at",
				       json_object_new_double(p->written_at));
		json_object_object_add(r, "written_ms", json_object_new_double(
			(p->written_at - p->request_at) * 1e3));
		if (d->cl->revision >= p->revision)
			json_object_object_add(r, "live_ms",
				json_object_new_double((d->cl->applied_at -
							p->request_at) * 1e3));
		else
			json_object_object_add(r, "warning", json_object_new_string(
				"written to etcd; this host has not applied it yet"));
	}
	xlbd_control_answer(d, p->ticket, ret, msg, r);
}

static void pending_drop(struct xlbd_cluster *cl, size_t i)
{
	cl->pend[i] = cl->pend[--cl->n_pend];
}

/* Answer the writes this host has now applied (or refused). */
static void pending_sweep(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	double now = xlbd_now();
	size_t i = 0;

	while (i < cl->n_pend) {
		struct pending *p = &cl->pend[i];
		char m[400];

		if (!p->revision) {
			i++;
			continue;
		}
		if (cl->revision >= p->revision) {
			pending_answer(d, p, 0, NULL);
		} else if (cl->refused) {
			snprintf(m, sizeof(m),
				 "written to etcd at revision %" PRId64 ", but this host refuses the cluster's configuration: %s",
				 p->revision, cl->refusal);
			pending_answer(d, p, -EINVAL, m);
		} else if (now >= p->deadline) {
			pending_answer(d, p, 0, NULL);
		} else {
			i++;
			continue;
		}
		pending_drop(cl, i);
	}
}

static void refuse(struct xlbd *d, const char *msg)
{
	struct xlbd_cluster *cl = d->cl;

	if (!cl->refused || strcmp(cl->refusal, msg)) {
		log_err("cluster %s: configuration refused, keeping revision %" PRId64 ": %s",
			cl->name, cl->revision, msg);
		cl->refusals++;
	}
	cl->refused = true;
	snprintf(cl->refusal, sizeof(cl->refusal), "%s", msg);
	cl->refused_at = xlbd_now();
}

/* The state with this host's own settings, from s and the running state. */
static int effective(struct xlbd *d, const struct xlb_state *shared,
		     struct xlb_state *out)
{
	return xlb_cluster_merge(shared, &d->state, out);
}

/* Apply every key changed since the last good state, as one transaction. */
static void try_apply(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	struct xlb_err err = { "" };
	struct xlb_state t, eff;
	int64_t rev = config_revision(cl);
	bool any = false;
	size_t i;
	int ret;

	for (i = 0; i < cl->n_keys; i++)
		any |= cl->keys[i].dirty;
	if (!any) {
		if (cl->refused && rev >= cl->revision) {
			log_notice("cluster %s: the refused keys are back to what revision %" PRId64 " had",
				   cl->name, cl->revision);
			cl->refused = false;
		}
		return;
	}
	if (xlb_state_copy(&t, &cl->shared)) {
		refuse(d, "out of memory");
		return;
	}
	ret = 0;
	for (i = 0; !ret && i < cl->n_keys; i++) {
		struct ckey *k = &cl->keys[i];

		if (k->dirty)
			ret = xlb_cluster_apply_key(&t, cl->name, k->key,
						    k->value, k->len,
						    k->mod_rev, &err);
	}
	if (!ret && t.n_vips && !t.global.key_set)
		ret = xlb_errf(&err, EINVAL,
			       "revision %" PRId64 ": there are VIPs but %s sets no cluster key",
			       rev, cl->global_key);
	if (!ret) {
		struct xlb_err e = { "" };

		ret = xlb_state_validate(&t, &e);
		if (ret)
			xlb_errf(&err, -ret, "revision %" PRId64 ": %s", rev,
				 e.msg);
	}
	if (!ret) {
		ret = effective(d, &t, &eff);
		if (ret) {
			xlb_errf(&err, ENOMEM, "out of memory");
		} else {
			struct xlb_err e = { "" };

			if (!xlb_state_equal(&eff, &d->state))
				ret = xlbd_commit(d, &eff, &e);
			if (ret)
				xlb_errf(&err, -ret, "revision %" PRId64 ": %s",
					 rev, e.msg);
			xlb_state_free(&eff);
		}
	}
	if (ret) {
		xlb_state_free(&t);
		refuse(d, err.msg);
		return;
	}
	xlb_state_free(&cl->shared);
	cl->shared = t;
	for (i = 0; i < cl->n_keys; i++)
		cl->keys[i].dirty = false;
	if (cl->refused)
		log_notice("cluster %s: revision %" PRId64 " accepted; the refusal is over",
			   cl->name, rev);
	cl->refused = false;
	cl->revision = rev;
	cl->applied_at = xlbd_now();
	xlbd_save_state(d);
	log_info("cluster %s: revision %" PRId64 " applied (%zu VIPs, %zu backends)",
		 cl->name, rev, d->state.n_vips, d->state.n_backends);
}

static void on_events(struct xlbd *d, struct msg *m, bool snapshot)
{
	struct xlbd_cluster *cl = d->cl;
	bool config = false;
	size_t i;

	if (snapshot) {
		/* what the snapshot lacks was deleted meanwhile */
		for (i = 0; i < cl->n_keys; i++) {
			size_t k;

			for (k = 0; k < m->n; k++)
				if (!strcmp(m->ev[k].kv.key, cl->keys[i].key))
					break;
			if (k == m->n && cl->keys[i].value) {
				free(cl->keys[i].value);
				cl->keys[i].value = NULL;
				cl->keys[i].len = 0;
				cl->keys[i].dirty = true;
				config = true;
			}
		}
		for (i = 0; i < cl->n_peers; i++) {
			size_t k;
			char key[XLB_CLUSTER_KEY_MAX];

			snprintf(key, sizeof(key), "%s%s", cl->hosts_prefix,
				 cl->peers[i].name);
			for (k = 0; k < m->n; k++)
				if (!strcmp(m->ev[k].kv.key, key))
					break;
			if (k == m->n && cl->peers[i].alive) {
				struct xlb_etcd_event gone = { 0 };

				gone.type = XLB_ETCD_DELETE;
				gone.kv.key = key;
				peer_update(cl, &gone);
			}
		}
	}
	for (i = 0; i < m->n; i++) {
		struct xlb_etcd_event *ev = &m->ev[i];

		if (is_config(cl, ev->kv.key)) {
			key_set(cl, ev->kv.key, ev->kv.value, ev->kv.value_len,
				ev->kv.mod_revision);
			ev->kv.value = NULL;	/* the mirror's now */
			config = true;
		} else if (!strncmp(ev->kv.key, cl->hosts_prefix,
				    strlen(cl->hosts_prefix))) {
			peer_update(cl, ev);
		}
	}
	if (m->revision > cl->seen_revision)
		cl->seen_revision = m->revision;
	if (config || snapshot)
		try_apply(d);
}

static void on_written(struct xlbd *d, struct msg *m)
{
	struct xlbd_cluster *cl = d->cl;
	struct pending *p = NULL;
	char s[512];
	size_t i;

	for (i = 0; i < cl->n_pend; i++)
		if (cl->pend[i].ticket == m->ticket)
			p = &cl->pend[i];
	if (!p)
		return;
	if (m->ret) {
		bool unknown = m->ret == -ETIMEDOUT || m->ret == -ECONNRESET ||
			       m->ret == -EPROTO;

		cl->writes_failed++;
		snprintf(s, sizeof(s), "%s; %s", m->error, unknown ?
			 "the change may or may not have been written: look with `xlbctl cluster status` or `xlbctl save` before retrying" :
			 "nothing was written");
		pending_answer(d, p, m->ret, s);
		pending_drop(cl, (size_t)(p - cl->pend));
		return;
	}
	if (!m->succeeded) {
		cl->writes_conflict++;
		pending_answer(d, p, -EAGAIN,
			       "the cluster's configuration changed meanwhile (another writer changed a key this command changes); nothing was written; retry the command");
		pending_drop(cl, (size_t)(p - cl->pend));
		return;
	}
	cl->writes_ok++;
	p->revision = m->revision;
	p->written_at = m->at;
	p->deadline = m->at + WRITE_WAIT_S;
	pending_sweep(d);
}

void xlbd_cluster_event(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	struct msg *m, *next;
	uint64_t x;

	if (read(cl->efd, &x, sizeof(x)) < 0 && errno != EAGAIN)
		log_debug("cluster: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&cl->qlock);
	m = cl->q_head;
	cl->q_head = cl->q_tail = NULL;
	pthread_mutex_unlock(&cl->qlock);
	pthread_mutex_lock(&d->lock);
	for (; m; m = next) {
		next = m->next;
		switch (m->type) {
		case M_UP:
			if (!cl->etcd_up)
				log_notice("cluster %s: etcd answers (%s)",
					   cl->name, cl->urls);
			cl->etcd_up = cl->ever_up = true;
			d->dirty = true;	/* consensus verdicts count again */
			cl->etcd_error[0] = 0;
			cl->etcd_since = xlbd_now();
			break;
		case M_DOWN:
			if (cl->etcd_up || !cl->etcd_error[0])
				log_warn("cluster %s: etcd unreachable, forwarding goes on with revision %" PRId64 ": %s",
					 cl->name, cl->revision, m->error);
			if (cl->etcd_up || !cl->etcd_since)
				cl->etcd_since = xlbd_now();
			if (cl->etcd_up)
				d->dirty = true;	/* local verdicts now */
			cl->etcd_up = false;
			snprintf(cl->etcd_error, sizeof(cl->etcd_error), "%s",
				 m->error);
			break;
		case M_SNAPSHOT:
		case M_EVENTS:
			on_events(d, m, m->type == M_SNAPSHOT);
			break;
		case M_WRITTEN:
			on_written(d, m);
			break;
		}
		msg_free(m);
	}
	pending_sweep(d);
	if (cl->peers_changed) {
		cl->peers_changed = false;
		d->dirty = true;
	}
	xlbd_cluster_publish(d);
	pthread_mutex_unlock(&d->lock);
}

void xlbd_cluster_tick(struct xlbd *d)
{
	if (d->cl)
		pending_sweep(d);
}

/* --- the host's record ---------------------------------------------------- */

static json_object *record(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	json_object *r = json_object_new_object(), *vips, *down;
	size_t i;

	json_object_object_add(r, "format", json_object_new_int(1));
	json_object_object_add(r, "host", json_object_new_string(cl->host));
	json_object_object_add(r, "version", json_object_new_string(XLBD_VERSION));
	json_object_object_add(r, "pid", json_object_new_int(getpid()));
	json_object_object_add(r, "revision", json_object_new_int64(cl->revision));
	json_object_object_add(r, "applied_at",
			       json_object_new_double(cl->applied_at));
	vips = json_object_new_object();
	for (i = 0; i < d->state.n_vips; i++) {
		char vs[XLB_VIP_STR_MAX], fp[24];

		snprintf(fp, sizeof(fp), "0x%016llx",
			 (unsigned long long)d->rt_vips[i].fingerprint);
		json_object_object_add(vips, xlb_vip_str(&d->state.vips[i].key, vs),
				       json_object_new_string(fp));
	}
	json_object_object_add(r, "vips", vips);
	down = json_object_new_array();
	for (i = 0; i < d->state.n_backends; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[i];
		char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX], k[160];

		if (d->rt_bes[i].health != XLB_HC_DOWN)
			continue;
		snprintf(k, sizeof(k), "%s %s", xlb_vip_str(&b->vip, vs),
			 xlb_addr_str(b->family, b->addr, as));
		json_object_array_add(down, json_object_new_string(k));
	}
	json_object_object_add(r, "down", down);
	json_object_object_add(r, "announce", xlbd_announce_brief(d));
	if (cl->refused)
		json_object_object_add(r, "refused",
				       json_object_new_string(cl->refusal));
	return r;
}

void xlbd_cluster_publish(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	json_object *r;
	const char *s;

	if (!cl || !d->ready)
		return;
	r = record(d);
	s = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
	if (!cl->published || strcmp(cl->published, s)) {
		char *copy = strdup(s), *mine = strdup(s);

		if (copy && mine) {
			free(cl->published);
			cl->published = mine;
			pthread_mutex_lock(&cl->qlock);
			free(cl->publish);
			cl->publish = copy;
			cl->publish_new = true;
			pthread_cond_signal(&cl->wcond);
			pthread_mutex_unlock(&cl->qlock);
		} else {
			free(copy);
			free(mine);
		}
	}
	json_object_put(r);
}

/* --- writes --------------------------------------------------------------- */

/* A key the write touches; compare with what this host read. */
struct touch {
	char key[XLB_CLUSTER_KEY_MAX];
};

static int touch_add(struct touch **t, size_t *n, const char *key)
{
	struct touch *a;
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*t)[i].key, key))
			return 0;
	a = realloc(*t, (*n + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	*t = a;
	snprintf(a[*n].key, sizeof(a[*n].key), "%s", key);
	(*n)++;
	return 0;
}

static bool ckey_has(const struct ckey *k, const char *value)
{
	if (!k || !k->value)
		return !value;
	return value && strlen(value) == k->len &&
	       !memcmp(value, k->value, k->len);
}

/*
 * The transaction that makes the touched keys hold t: a put or delete per
 * key whose value changes, each compared with the mod_revision this host
 * read.  A deletion rewrites config/global too (see the top of the file).
 */
static int build_job(struct xlbd *d, const struct xlb_state *t,
		     struct touch *touched, size_t n_touched,
		     struct job **out, struct xlb_err *err)
{
	struct xlbd_cluster *cl = d->cl;
	struct job *j = calloc(1, sizeof(*j));
	bool deleted = false, global = false;
	size_t i, cap = n_touched + 1;
	int ret = 0;

	if (!j || !(j->ops = calloc(cap, sizeof(*j->ops))) ||
	    !(j->cmps = calloc(cap, sizeof(*j->cmps)))) {
		if (j)
			job_free(j);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	for (i = 0; i <= n_touched && !ret; i++) {
		const char *key = i < n_touched ? touched[i].key : cl->global_key;
		struct ckey *k = key_find(cl, key);
		char *value = NULL;

		if (i == n_touched && (!deleted || global))
			break;
		if (k && k->dirty) {
			ret = xlb_errf(err, EINVAL,
				       "key %s holds a value this host refuses (%s); fix or delete it by hand first",
				       key, cl->refusal);
			break;
		}
		ret = xlb_cluster_encode_key(t, cl->name, key, &value, err);
		if (ret)
			break;
		if (i == n_touched && !value)
			value = strdup("format 1\n");
		if (i < n_touched && ckey_has(k, value)) {
			free(value);
			continue;
		}
		global |= !strcmp(key, cl->global_key);
		deleted |= !value;
		j->cmps[j->n_cmps].key = strdup(key);
		j->cmps[j->n_cmps++].mod_revision = k && k->value ? k->mod_rev : 0;
		j->ops[j->n_ops].key = strdup(key);
		j->ops[j->n_ops].value = value;
		j->ops[j->n_ops].value_len = value ? strlen(value) : 0;
		j->ops[j->n_ops++].del = !value;
	}
	if (ret) {
		job_free(j);
		return ret;
	}
	*out = j;
	return 0;
}

static int start_write(struct xlbd *d, const struct xlb_state *t,
		       struct touch *touched, size_t n, json_object **res,
		       struct xlb_err *err)
{
	struct xlbd_cluster *cl = d->cl;
	struct pending *p;
	struct job *j = NULL;
	int ret;

	if (!cl->etcd_up)
		return xlb_errf(err, EHOSTUNREACH,
				"etcd is unreachable (%s), so cluster changes are refused; forwarding and health checks go on with revision %" PRId64,
				cl->etcd_error[0] ? cl->etcd_error : "not reached yet",
				cl->revision);
	ret = build_job(d, t, touched, n, &j, err);
	if (ret)
		return ret;
	if (!j->n_ops) {
		job_free(j);
		*res = json_object_new_object();
		json_object_object_add(*res, "changed", json_object_new_boolean(0));
		json_object_object_add(*res, "revision",
				       json_object_new_int64(cl->revision));
		json_object_object_add(*res, "generation",
				       json_object_new_int64((int64_t)d->generation));
		return 0;
	}
	p = realloc(cl->pend, (cl->n_pend + 1) * sizeof(*p));
	if (!p) {
		job_free(j);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	cl->pend = p;
	p = &p[cl->n_pend++];
	memset(p, 0, sizeof(*p));
	p->ticket = xlbd_control_defer(d);
	p->request_at = xlbd_control_request_at(d);
	j->ticket = p->ticket;
	pthread_mutex_lock(&cl->qlock);
	if (cl->j_tail)
		cl->j_tail->next = j;
	else
		cl->j_head = j;
	cl->j_tail = j;
	pthread_cond_signal(&cl->wcond);
	pthread_mutex_unlock(&cl->qlock);
	return 1;
}

int xlbd_cluster_exec(struct xlbd *d, const struct xlb_op *ops, size_t n,
		      json_object **res, struct xlb_err *err)
{
	struct xlbd_cluster *cl = d->cl;
	struct touch *touched = NULL;
	size_t n_touched = 0, i;
	struct xlb_state t;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		char key[XLB_CLUSTER_KEY_MAX];

		if (ops[i].object == XLB_OBJ_GLOBAL) {
			ret = touch_add(&touched, &n_touched, cl->global_key);
			continue;
		}
		xlb_cluster_vip_key(cl->name, ops[i].object == XLB_OBJ_VIP ?
				    &ops[i].vip.key : &ops[i].backend.vip,
				    key, sizeof(key));
		ret = touch_add(&touched, &n_touched, key);
	}
	if (ret) {
		free(touched);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	if (xlb_state_copy(&t, &cl->shared)) {
		free(touched);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	ret = xlb_state_apply_all(&t, ops, n, err);
	if (!ret)
		ret = start_write(d, &t, touched, n_touched, res, err);
	xlb_state_free(&t);
	free(touched);
	return ret;
}

int xlbd_cluster_restore(struct xlbd *d, const char *text, size_t len,
			 const char *name, json_object **res,
			 struct xlb_err *err)
{
	struct xlbd_cluster *cl = d->cl;
	struct xlb_cluster_kv *kvs = NULL;
	struct touch *touched = NULL;
	size_t n_touched = 0, n = 0, i;
	struct xlb_state s;
	int ret;

	ret = xlb_config_parse(text, len, name, &s, err);
	if (ret)
		return ret;
	for (i = 0; i < s.n_vips; i++)
		if (s.vips[i].src4 || s.vips[i].src6[0] || s.vips[i].src6[1] ||
		    s.vips[i].src6[2] || s.vips[i].src6[3])
			break;
	if (s.n_links || s.global.src4 || s.global.src6[0] ||
	    s.global.src6[1] || s.global.src6[2] || s.global.src6[3] ||
	    s.global.announce_table || i < s.n_vips) {
		xlb_state_free(&s);
		return xlb_errf(err, EINVAL,
				"%s: in cluster mode restore replaces the cluster's configuration, which holds no per-host settings (link, set src4, set src6, set announce, a VIP's src); give those with xlbctl on each host",
				name);
	}
	ret = xlb_cluster_encode(&s, cl->name, &kvs, &n);
	for (i = 0; !ret && i < n; i++)
		ret = touch_add(&touched, &n_touched, kvs[i].key);
	for (i = 0; !ret && i < cl->n_keys; i++)
		if (cl->keys[i].value)
			ret = touch_add(&touched, &n_touched, cl->keys[i].key);
	if (ret)
		ret = xlb_errf(err, ENOMEM, "out of memory");
	else
		ret = start_write(d, &s, touched, n_touched, res, err);
	xlb_cluster_kvs_free(kvs, n);
	free(touched);
	xlb_state_free(&s);
	return ret;
}

int xlbd_cluster_local(struct xlbd *d, const struct xlb_state *file,
		       const char *name, struct xlb_state *out,
		       struct xlb_err *err)
{
	struct xlb_cluster_kv *kvs;
	size_t n;
	int ret;

	ret = xlb_cluster_encode(file, d->cl->name, &kvs, &n);
	if (ret)
		return xlb_errf(err, ENOMEM, "out of memory");
	xlb_cluster_kvs_free(kvs, n);
	if (n)
		return xlb_errf(err, EINVAL,
				"%s: in cluster mode this file holds only per-host settings (link, set src4, set src6, set announce); VIPs and cluster-wide settings come from etcd",
				name);
	return xlb_cluster_merge(&d->cl->shared, file, out) ?
	       xlb_errf(err, ENOMEM, "out of memory") : 0;
}

/* --- views ---------------------------------------------------------------- */

static json_object *jnum(int64_t v)
{
	return json_object_new_int64(v);
}

json_object *xlbd_cluster_status(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	json_object *o = json_object_new_object(), *e;

	json_object_object_add(o, "name", json_object_new_string(cl->name));
	json_object_object_add(o, "host", json_object_new_string(cl->host));
	json_object_object_add(o, "revision", jnum(cl->revision));
	json_object_object_add(o, "applied_at",
			       json_object_new_double(cl->applied_at));
	e = json_object_new_object();
	json_object_object_add(e, "endpoints", json_object_new_string(cl->urls));
	json_object_object_add(e, "up", json_object_new_boolean(cl->etcd_up));
	json_object_object_add(e, "since", json_object_new_double(cl->etcd_since));
	if (cl->etcd_error[0])
		json_object_object_add(e, "error",
				       json_object_new_string(cl->etcd_error));
	json_object_object_add(o, "etcd", e);
	if (cl->refused) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "error",
				       json_object_new_string(cl->refusal));
		json_object_object_add(r, "at", json_object_new_double(cl->refused_at));
		json_object_object_add(o, "refused", r);
	}
	return o;
}

/* Do two records name the same VIPs with the same fingerprints? */
static bool same_tables(json_object *a, json_object *b)
{
	json_object *va = json_object_object_get(a, "vips");
	json_object *vb = json_object_object_get(b, "vips");

	if (!va || !vb || !json_object_is_type(va, json_type_object) ||
	    !json_object_is_type(vb, json_type_object) ||
	    json_object_object_length(va) != json_object_object_length(vb))
		return false;
	json_object_object_foreach(va, k, v) {
		json_object *w = json_object_object_get(vb, k);

		if (!w || strcmp(json_object_get_string(v),
				 json_object_get_string(w)))
			return false;
	}
	return true;
}

static int64_t rec_rev(json_object *r)
{
	return json_object_get_int64(json_object_object_get(r, "revision"));
}

json_object *xlbd_cluster_show(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	json_object *o = xlbd_cluster_status(d), *hosts = json_object_new_array();
	json_object *ref = NULL;
	int64_t newest = cl->revision;
	size_t i, alive = 0, agree = 0;

	for (i = 0; i < cl->n_peers; i++)
		if (cl->peers[i].alive && rec_rev(cl->peers[i].info) > newest)
			newest = rec_rev(cl->peers[i].info);
	/* the reference: this host's record when it is at the newest */
	for (i = 0; i < cl->n_peers; i++)
		if (cl->peers[i].alive && rec_rev(cl->peers[i].info) == newest &&
		    (!ref || !strcmp(cl->peers[i].name, cl->host)))
			ref = cl->peers[i].info;
	for (i = 0; i < cl->n_peers; i++) {
		const struct peer *p = &cl->peers[i];
		json_object *h = json_object_new_object();
		const char *st;

		json_object_object_add(h, "host", json_object_new_string(p->name));
		if (!p->alive) {
			st = "silent";
			json_object_object_add(h, "silent_since",
					       json_object_new_double(p->silent_at));
		} else {
			alive++;
			if (rec_rev(p->info) < newest)
				st = "behind";
			else if (!same_tables(p->info, ref))
				st = "disagrees";
			else
				st = "ok", agree++;
			json_object_object_foreach(p->info, k, v)
				if (strcmp(k, "host") && strcmp(k, "format"))
					json_object_object_add(h, k,
							       json_object_get(v));
		}
		json_object_object_add(h, "state", json_object_new_string(st));
		json_object_array_add(hosts, h);
	}
	json_object_object_add(o, "newest_revision", jnum(newest));
	json_object_object_add(o, "hosts_alive", jnum((int64_t)alive));
	json_object_object_add(o, "agree", json_object_new_boolean(
		alive && agree == alive));
	json_object_object_add(o, "hosts", hosts);
	return o;
}

char *xlbd_cluster_metrics(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	size_t alive = 0, silent = 0, i;
	char *s = NULL;

	for (i = 0; i < cl->n_peers; i++)
		cl->peers[i].alive ? alive++ : silent++;
	if (asprintf(&s,
		     "# HELP xlb_cluster_revision revision of the cluster configuration this host runs\n"
		     "# TYPE xlb_cluster_revision gauge\n"
		     "xlb_cluster_revision{cluster=\"%s\"} %" PRId64 "\n"
		     "# HELP xlb_cluster_etcd_up 1 while etcd answers\n"
		     "# TYPE xlb_cluster_etcd_up gauge\n"
		     "xlb_cluster_etcd_up{cluster=\"%s\"} %d\n"
		     "# HELP xlb_cluster_refused 1 while this host refuses the cluster configuration in etcd\n"
		     "# TYPE xlb_cluster_refused gauge\n"
		     "xlb_cluster_refused{cluster=\"%s\"} %d\n"
		     "# HELP xlb_cluster_refusals_total cluster configurations this host refused\n"
		     "# TYPE xlb_cluster_refusals_total counter\n"
		     "xlb_cluster_refusals_total{cluster=\"%s\"} %" PRIu64 "\n"
		     "# HELP xlb_cluster_writes_total cluster writes through this host, by result\n"
		     "# TYPE xlb_cluster_writes_total counter\n"
		     "xlb_cluster_writes_total{cluster=\"%s\",result=\"written\"} %" PRIu64 "\n"
		     "xlb_cluster_writes_total{cluster=\"%s\",result=\"conflict\"} %" PRIu64 "\n"
		     "xlb_cluster_writes_total{cluster=\"%s\",result=\"failed\"} %" PRIu64 "\n"
		     "# HELP xlb_cluster_hosts hosts this host knows of, by state\n"
		     "# TYPE xlb_cluster_hosts gauge\n"
		     "xlb_cluster_hosts{cluster=\"%s\",state=\"alive\"} %zu\n"
		     "xlb_cluster_hosts{cluster=\"%s\",state=\"silent\"} %zu\n",
		     cl->name, cl->revision, cl->name, cl->etcd_up, cl->name,
		     cl->refused, cl->name, cl->refusals, cl->name,
		     cl->writes_ok, cl->name, cl->writes_conflict, cl->name,
		     cl->writes_failed, cl->name, alive, cl->name, silent) < 0)
		return NULL;
	return s;
}

/* --- saved revision ------------------------------------------------------- */

const char *xlbd_cluster_state_header(struct xlbd *d, char *buf, size_t len)
{
	if (!d->cl)
		return "";
	snprintf(buf, len, HEADER "%s revision %" PRId64 "\n", d->cl->name,
		 d->cl->revision);
	return buf;
}

/* The revision state.conf was saved at, if it is this cluster's. */
static int64_t saved_revision(struct xlbd *d, bool *mine)
{
	char line[256], name[XLB_CLUSTER_NAME_MAX + 1];
	long long rev;
	FILE *f;

	*mine = false;
	f = fopen(d->state_file, "re");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, HEADER "%63s revision %lld", name, &rev) != 2) {
		fclose(f);
		return 0;
	}
	fclose(f);
	*mine = !strcmp(name, d->cl->name);
	return *mine ? rev : 0;
}

/* --- life ----------------------------------------------------------------- */

int xlbd_cluster_open(struct xlbd *d, struct xlb_err *err)
{
	struct xlbd_cluster *cl;
	struct xlb_etcd *probe;
	char host[256];
	int ret;

	if (!d->o.etcd && !d->o.cluster)
		return 0;
	if (!d->o.etcd || !d->o.cluster)
		return xlb_errf(err, EINVAL,
				"--etcd and --cluster go together: the etcd endpoints and the cluster's name");
	ret = xlb_cluster_name_check(d->o.cluster, err);
	if (ret)
		return ret;
	if (!d->o.host_name) {
		if (gethostname(host, sizeof(host)))
			return xlb_errf(err, errno, "gethostname: %s",
					strerror(errno));
		host[sizeof(host) - 1] = 0;
	} else {
		snprintf(host, sizeof(host), "%s", d->o.host_name);
	}
	if (xlb_cluster_name_check(host, err))
		return xlb_errf(err, EINVAL,
				"host name \"%.64s\" cannot name this host in the cluster (1..63 bytes of A-Z a-z 0-9 . _ -); give --host-name",
				host);
	probe = xlb_etcd_open(d->o.etcd, err);	/* checks the endpoints */
	if (!probe)
		return -EINVAL;
	xlb_etcd_close(probe);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return xlb_errf(err, ENOMEM, "out of memory");
	snprintf(cl->name, sizeof(cl->name), "%s", d->o.cluster);
	snprintf(cl->host, sizeof(cl->host), "%.63s", host);
	snprintf(cl->prefix, sizeof(cl->prefix), "/xlb/%s/", cl->name);
	xlb_cluster_config_prefix(cl->name, cl->config_prefix,
				  sizeof(cl->config_prefix));
	xlb_cluster_hosts_prefix(cl->name, cl->hosts_prefix,
				 sizeof(cl->hosts_prefix));
	snprintf(cl->host_key, sizeof(cl->host_key), "%s%s", cl->hosts_prefix,
		 cl->host);
	xlb_cluster_global_key(cl->name, cl->global_key, sizeof(cl->global_key));
	cl->urls = d->o.etcd;
	cl->efd = -1;
	xlb_state_init(&cl->shared);
	pthread_mutex_init(&cl->qlock, NULL);
	pthread_cond_init(&cl->wcond, NULL);
	d->cl = cl;
	return 0;
}

/*
 * After the start's commit: the shared part of what runs is the last good
 * state (the saved state's, at its saved revision), then the threads.
 */
int xlbd_cluster_start(struct xlbd *d, int epfd)
{
	struct xlbd_cluster *cl = d->cl;
	struct epoll_event ev = { .events = EPOLLIN };
	bool mine;

	cl->revision = saved_revision(d, &mine);
	if (mine) {
		xlb_cluster_shared_of(&d->state, &cl->shared);
		log_notice("cluster %s: host %s starts with the saved revision %" PRId64 " (%zu VIPs)",
			   cl->name, cl->host, cl->revision, cl->shared.n_vips);
	} else {
		log_notice("cluster %s: host %s has no saved revision of this cluster; the configuration comes from etcd",
			   cl->name, cl->host);
	}
	cl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cl->efd < 0)
		return -errno;
	ev.data.fd = cl->efd;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, cl->efd, &ev))
		return -errno;
	if (pthread_create(&cl->watcher, NULL, watcher_main, cl))
		return -EAGAIN;
	if (pthread_create(&cl->writer, NULL, writer_main, cl)) {
		atomic_store(&cl->stop, true);
		pthread_join(cl->watcher, NULL);
		return -EAGAIN;
	}
	cl->threads = true;
	log_info("cluster %s: host %s follows %s", cl->name, cl->host, cl->urls);
	return 0;
}

int xlbd_cluster_fd(const struct xlbd *d)
{
	return d->cl ? d->cl->efd : -1;
}

void xlbd_cluster_stop(struct xlbd *d)
{
	struct xlbd_cluster *cl = d->cl;
	struct msg *m, *next;
	size_t i;

	if (!cl)
		return;
	if (cl->threads) {
		atomic_store(&cl->stop, true);
		pthread_mutex_lock(&cl->qlock);
		pthread_cond_broadcast(&cl->wcond);
		pthread_mutex_unlock(&cl->qlock);
		pthread_join(cl->watcher, NULL);
		pthread_join(cl->writer, NULL);
	}
	for (m = cl->q_head; m; m = next) {
		next = m->next;
		msg_free(m);
	}
	while (cl->j_head) {
		struct job *j = cl->j_head;

		cl->j_head = j->next;
		job_free(j);
	}
	for (i = 0; i < cl->n_keys; i++) {
		free(cl->keys[i].key);
		free(cl->keys[i].value);
	}
	for (i = 0; i < cl->n_peers; i++)
		json_object_put(cl->peers[i].info);
	free(cl->keys);
	free(cl->peers);
	free(cl->pend);
	free(cl->publish);
	free(cl->published);
	xlb_state_free(&cl->shared);
	if (cl->efd >= 0)
		close(cl->efd);
	pthread_mutex_destroy(&cl->qlock);
	pthread_cond_destroy(&cl->wcond);
	free(cl);
	d->cl = NULL;
}
