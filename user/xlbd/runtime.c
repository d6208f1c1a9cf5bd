// SPDX-License-Identifier: GPL-2.0
/*
 * What xlbd keeps on disk.
 *
 *  - The desired configuration, STATE_DIR/state.conf, in the config grammar
 *    (xlb_config_save): rewritten after every accepted change with write,
 *    fsync, rename, fsync of the folder, so a crash leaves the old file or
 *    the new one.  Loaded at start, so runtime changes survive restarts and
 *    reboots.
 *  - The state cache, STATE_DIR/state.cache: state.conf as parsed, which
 *    a start reads instead of the text when it was made from the same
 *    bytes (below).
 *  - The runtime file, /run/xlb/INSTANCE.runtime.json: per VIP the table
 *    generation and when it last changed, per backend its health when
 *    known.  Replaced by a rename, not synced to disk: it lives
 *    as long as the pinned maps (both go with a reboot), and lets a
 *    restarted daemon continue generations and keep ejected backends out
 *    instead of putting them back until their checks fail again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"
#include "xlbd.h"

static int write_atomic(const char *path, const char *data, size_t len,
			bool durable)
{
	struct iovec v = { (void *)data, len };

	return xlb_file_replace(path, &v, 1, durable);
}

static void *save_thread(void *arg)
{
	struct xlbd *d = arg;

	xlbd_privs_saver();	/* a file of root's: no capability needed */
	d->saver.ret = write_atomic(d->state_file, d->saver.text,
				    strlen(d->saver.text), true);
	return NULL;
}

/*
 * The durable save of the state as it is now, on a thread of its own: the
 * disk's flushes overlap the work that follows (a change's tables).
 */
void xlbd_save_begin(struct xlbd *d)
{
	char head[160], *text = NULL;

	xlbd_save_wait(d);	/* one at a time, in order */
	d->saver.ret = xlb_config_save(&d->state, &text);
	if (d->saver.ret) {
		log_err("cannot save the configuration to %s: %s",
			d->state_file, strerror(-d->saver.ret));
		return;
	}
	/* cluster mode: the revision this state is of, on the first line */
	if (asprintf(&d->saver.text, "%s%s",
		     xlbd_cluster_state_header(d, head, sizeof(head)),
		     text) < 0) {
		d->saver.text = NULL;
		d->saver.ret = -ENOMEM;
		log_err("cannot save the configuration to %s: out of memory",
			d->state_file);
		free(text);
		return;
	}
	free(text);
	d->saver.running = !pthread_create(&d->saver.th, NULL, save_thread, d);
	if (!d->saver.running)
		save_thread(d);
}

int xlbd_save_wait(struct xlbd *d)
{
	int ret;

	if (d->saver.running)
		pthread_join(d->saver.th, NULL);
	d->saver.running = false;
	if (!d->saver.text)
		return 0;	/* nothing begun since the last wait */
	free(d->saver.text);
	d->saver.text = NULL;
	ret = d->saver.ret;
	if (ret)
		log_err("cannot save the configuration to %s: %s",
			d->state_file, strerror(-ret));
	else
		xlbd_cache_due(d);
	return ret;
}

int xlbd_save_state(struct xlbd *d)
{
	xlbd_save_begin(d);
	return d->saver.text ? xlbd_save_wait(d) : d->saver.ret;
}

/* path's text into *buf (freed by the caller), *found = false if none. */
static int read_text(const char *path, char **buf, size_t *len, bool *found,
		     struct xlb_err *err)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int ret;

	*buf = NULL;
	*found = f != NULL;
	if (!f) {
		if (errno == ENOENT)
			return 0;
		return xlb_errf(err, errno, "cannot open %s: %s", path,
				strerror(errno));
	}
	*buf = xlb_mem_alloc(XLB_FILE_MAX + 1, false);
	if (!*buf) {
		fclose(f);
		return xlb_errf(err, ENOMEM, "out of memory");
	}
	n = fread(*buf, 1, XLB_FILE_MAX + 1, f);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (ret) {
		free(*buf);
		*buf = NULL;
		return xlb_errf(err, EIO, "cannot read %s", path);
	}
	if (n > XLB_FILE_MAX) {
		free(*buf);
		*buf = NULL;
		return xlb_errf(err, EFBIG, "%s: larger than %u bytes", path,
				XLB_FILE_MAX);
	}
	*len = n;
	return 0;
}

int xlbd_load_file(const char *path, struct xlb_state *s, bool *found,
		   struct xlb_err *err)
{
	char *buf;
	size_t n;
	int ret = read_text(path, &buf, &n, found, err);

	if (ret || !*found)
		return ret;
	ret = xlb_config_parse(buf, n, path, s, err);
	free(buf);
	return ret;
}

/*
 * The state cache (STATE_DIR/state.cache, user/lib/state_cache.c): the
 * saved state as parsed.  A start reads it instead of parsing state.conf
 * when it was made from the same bytes.  It is written on a thread of
 * its own once the saved state has not changed for XLBD_CACHE_DELAY_MS
 * (a burst of changes writes it once, and a start's first answers come
 * first), from state.conf parsed again as it is on disk: the cache holds
 * exactly what a start would parse, whatever wrote the file.
 */
#define XLBD_CACHE_DELAY_MS	500

int xlbd_load_state(struct xlbd *d, struct xlb_state *s, bool *found,
		    struct xlb_err *err)
{
	struct xlb_err why = { "" };
	char *buf;
	size_t n;
	int ret = read_text(d->state_file, &buf, &n, found, err);

	if (ret || !*found)
		return ret;
	if (!xlb_state_cache_read(d->cache_file, buf, n, s, &why)) {
		snprintf(d->cacher.start, sizeof(d->cacher.start), "used");
		d->cacher.state = XLBD_CACHE_CURRENT;
		free(buf);
		return 0;
	}
	snprintf(d->cacher.start, sizeof(d->cacher.start), "not used: %s",
		 why.msg);
	log_info("state cache not used: %s", why.msg);
	ret = xlb_config_parse(buf, n, d->state_file, s, err);
	free(buf);
	if (!ret)
		xlbd_cache_due(d);
	return ret;
}

void xlbd_cache_due(struct xlbd *d)
{
	d->cacher.due = xlbd_now() + XLBD_CACHE_DELAY_MS / 1e3;
	if (d->cacher.state != XLBD_CACHE_WRITING)
		d->cacher.state = XLBD_CACHE_PENDING;
	d->cacher.want = true;
}

/* state.conf as it is parsed into the cache, unless it is current */
static void cache_work(struct xlbd *d)
{
	struct xlb_err err = { "" };
	struct xlb_state s;
	bool found;
	char *buf;
	size_t n;
	int ret;

	ret = read_text(d->state_file, &buf, &n, &found, &err);
	if (!ret && !found)
		ret = xlb_errf(&err, ENOENT, "no %s", d->state_file);
	if (!ret && !xlb_state_cache_fresh(d->cache_file, buf, n)) {
		xlb_state_init(&s);
		ret = xlb_config_parse(buf, n, d->state_file, &s, &err);
		if (!ret)
			ret = xlb_state_cache_write(d->cache_file, &s, buf, n,
						    &err);
		xlb_state_free(&s);
	}
	free(buf);
	snprintf(d->cacher.work_error, sizeof(d->cacher.work_error), "%s",
		 ret ? err.msg : "");
}

static void *cache_thread(void *arg)
{
	struct xlbd *d = arg;

	xlbd_privs_saver();	/* a file of root's: no capability needed */
	cache_work(d);
	atomic_store(&d->cacher.done, true);
	return NULL;
}

/* The work's outcome, once it is over. */
static void cache_account(struct xlbd *d)
{
	memcpy(d->cacher.error, d->cacher.work_error, sizeof(d->cacher.error));
	if (d->cacher.error[0])
		log_warn("cannot write the state cache: %s", d->cacher.error);
	if (d->cacher.want)
		d->cacher.state = XLBD_CACHE_PENDING;	/* saved again since */
	else
		d->cacher.state = d->cacher.error[0] ? XLBD_CACHE_FAILED :
						       XLBD_CACHE_CURRENT;
}

static void cache_join(struct xlbd *d)
{
	if (!d->cacher.running)
		return;
	pthread_join(d->cacher.th, NULL);
	d->cacher.running = false;
	cache_account(d);
}

int xlbd_cache_wait_ms(const struct xlbd *d)
{
	double left;

	if (d->cacher.running)
		return atomic_load(&d->cacher.done) ? 0 : 100;
	if (!d->cacher.want)
		return -1;
	left = (d->cacher.due - xlbd_now()) * 1e3;
	return left > 0 ? (int)left + 1 : 0;
}

void xlbd_cache_tick(struct xlbd *d)
{
	if (d->cacher.running && atomic_load(&d->cacher.done))
		cache_join(d);
	if (d->cacher.running || !d->cacher.want ||
	    xlbd_now() < d->cacher.due)
		return;
	d->cacher.want = false;
	atomic_store(&d->cacher.done, false);
	d->cacher.running = !pthread_create(&d->cacher.th, NULL, cache_thread,
					    d);
	if (!d->cacher.running) {
		log_warn("cannot write the state cache: no thread");
		d->cacher.state = XLBD_CACHE_FAILED;
		return;
	}
	d->cacher.state = XLBD_CACHE_WRITING;
}

/*
 * A stop writes what is due at once: the next start, most often a
 * restart, finds it current.
 */
void xlbd_cache_stop(struct xlbd *d)
{
	cache_join(d);
	if (!d->cacher.want)
		return;
	d->cacher.want = false;
	cache_work(d);
	cache_account(d);
}

const char *xlbd_cache_state(const struct xlbd *d)
{
	static const char *const names[] = {
		[XLBD_CACHE_NONE] = "none",
		[XLBD_CACHE_PENDING] = "pending",
		[XLBD_CACHE_WRITING] = "writing",
		[XLBD_CACHE_CURRENT] = "current",
		[XLBD_CACHE_FAILED] = "failed",
	};

	return names[d->cacher.state];
}

const char *xlbd_backend_key(const struct xlb_backend_conf *b, char *out,
			     size_t len)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];

	snprintf(out, len, "%s %s", xlb_vip_str(&b->vip, vs),
		 xlb_addr_str(b->family, b->addr, as));
	return out;
}

void xlbd_runtime_save(struct xlbd *d)
{
	json_object *root = json_object_new_object();
	json_object *vips = json_object_new_array();
	json_object *bes = json_object_new_array();
	double t0 = xlbd_now();
	const char *text;
	size_t i;
	int ret;

	for (i = 0; i < d->state.n_vips; i++) {
		json_object *o = json_object_new_object();
		char vs[XLB_VIP_STR_MAX];

		json_object_object_add(o, "vip", json_object_new_string(
			xlb_vip_str(&d->state.vips[i].key, vs)));
		json_object_object_add(o, "generation", json_object_new_int64(
			(int64_t)d->rt_vips[i].generation));
		json_object_object_add(o, "changed_at", json_object_new_double(
			d->rt_vips[i].changed_at));
		if (d->rt_vips[i].published && d->rt_vips[i].map_id) {
			char h[24];

			snprintf(h, sizeof(h), "%016llx",
				 (unsigned long long)d->rt_vips[i].inputs);
			json_object_object_add(o, "inputs",
					       json_object_new_string(h));
			snprintf(h, sizeof(h), "%016llx",
				 (unsigned long long)d->rt_vips[i].fingerprint);
			json_object_object_add(o, "fingerprint",
					       json_object_new_string(h));
			json_object_object_add(o, "map_id", json_object_new_int64(
				d->rt_vips[i].map_id));
			json_object_object_add(o, "in_table", json_object_new_int64(
				d->rt_vips[i].in_table));
		}
		json_object_array_add(vips, o);
	}
	for (i = 0; i < d->state.n_backends; i++) {
		const struct xlb_backend_conf *b = &d->state.backends[i];
		json_object *o;
		char k[XLBD_PREV_KEY_MAX];

		/* no record is an unknown health: a large file costs restarts */
		if (d->rt_bes[i].health == XLB_HC_UNKNOWN)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "backend", json_object_new_string(
			xlbd_backend_key(b, k, sizeof(k))));
		json_object_object_add(o, "health",
				       json_object_new_int(d->rt_bes[i].health));
		json_object_array_add(bes, o);
	}
	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_add(root, "generation",
			       json_object_new_int64((int64_t)d->generation));
	json_object_object_add(root, "vips", vips);
	json_object_object_add(root, "backends", bes);
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	/*
	 * Not durable: the file describes the pinned maps, which do not
	 * outlive the machine either; a crash of xlbd loses nothing.
	 */
	ret = write_atomic(d->runtime_file, text, strlen(text), false);
	if (ret)
		log_warn("cannot write %s: %s", d->runtime_file, strerror(-ret));
	json_object_put(root);
	d->runtime_dirty = false;
	d->ph.runtime_save = (xlbd_now() - t0) * 1e3;
}

static int prev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xlbd_prev *)a)->key,
		      ((const struct xlbd_prev *)b)->key);
}

static struct xlbd_prev *prev_add(struct xlbd *d, const char *key,
				  uint64_t gen, double at, int health)
{
	struct xlbd_prev *p;

	if (d->n_prev == d->cap_prev) {
		size_t cap = d->cap_prev ? 2 * d->cap_prev : 256;

		p = realloc(d->prev, cap * sizeof(*p));
		if (!p)
			return NULL;
		d->prev = p;
		d->cap_prev = cap;
	}
	p = &d->prev[d->n_prev++];
	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof(p->key), "%s", key);
	p->generation = gen;
	p->changed_at = at;
	p->health = health >= XLB_HC_UNKNOWN && health <= XLB_HC_DOWN ?
		    (uint8_t)health : XLB_HC_UNKNOWN;
	return p;
}

void xlbd_runtime_load(struct xlbd *d)
{
	json_object *root, *a, *o, *k, *v;
	size_t i, n;

	root = json_object_from_file(d->runtime_file);
	if (!root)
		return;
	if (json_object_object_get_ex(root, "generation", &v))
		d->generation = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(root, "vips", &a) &&
	    json_object_is_type(a, json_type_array)) {
		n = json_object_array_length(a);
		for (i = 0; i < n; i++) {
			json_object *g, *c, *in, *fp, *id, *it;
			struct xlbd_prev *p;

			o = json_object_array_get_idx(a, i);
			if (!json_object_object_get_ex(o, "vip", &k) ||
			    !json_object_object_get_ex(o, "generation", &g) ||
			    !json_object_object_get_ex(o, "changed_at", &c))
				continue;
			p = prev_add(d, json_object_get_string(k),
				     (uint64_t)json_object_get_int64(g),
				     json_object_get_double(c), XLB_HC_UNKNOWN);
			if (!p || !json_object_object_get_ex(o, "inputs", &in) ||
			    !json_object_object_get_ex(o, "fingerprint", &fp) ||
			    !json_object_object_get_ex(o, "map_id", &id) ||
			    !json_object_object_get_ex(o, "in_table", &it))
				continue;
			p->inputs = strtoull(json_object_get_string(in), NULL, 16);
			p->fingerprint = strtoull(json_object_get_string(fp),
						  NULL, 16);
			p->map_id = (uint32_t)json_object_get_int64(id);
			p->in_table = (uint32_t)json_object_get_int64(it);
			p->has_table = p->map_id != 0;
		}
	}
	if (json_object_object_get_ex(root, "backends", &a) &&
	    json_object_is_type(a, json_type_array)) {
		n = json_object_array_length(a);
		for (i = 0; i < n; i++) {
			o = json_object_array_get_idx(a, i);
			if (!json_object_object_get_ex(o, "backend", &k) ||
			    !json_object_object_get_ex(o, "health", &v))
				continue;
			if (prev_add(d, json_object_get_string(k), 0, 0,
				     json_object_get_int(v)))
				d->n_prev_backends++;
		}
	}
	json_object_put(root);
	qsort(d->prev, d->n_prev, sizeof(*d->prev), prev_cmp);
	log_info("runtime of the previous daemon: %zu entries from %s",
		 d->n_prev, d->runtime_file);
}

/* d->prev is sorted by key once it is loaded (xlbd_runtime_load). */
const struct xlbd_prev *xlbd_prev_find(const struct xlbd *d, const char *key)
{
	struct xlbd_prev k;

	if (!d->n_prev)
		return NULL;
	snprintf(k.key, sizeof(k.key), "%s", key);
	return bsearch(&k, d->prev, d->n_prev, sizeof(k), prev_cmp);
}
