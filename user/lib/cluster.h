/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A cluster's shared configuration as etcd keys (docs/cluster.md).
 *
 * Under /xlb/NAME/ (NAME: the cluster, xlbd --cluster):
 *
 *   config/global        the cluster-wide settings: set key, gue-port,
 *                        mtu, ttl, udp-idle
 *   config/vips/VIP      one VIP (its canonical text, e.g.
 *                        config/vips/10.0.0.1:80/tcp): its `vip add` line
 *                        and the `backend add` lines of its backends
 *   hosts/HOST           what each host publishes under its lease
 *                        (user/xlbd/cluster.c)
 *
 * Every config value is text in the config grammar (user/lib/config.h) whose
 * first line is `format 1` (XLB_CLUSTER_FORMAT); a value of a newer format
 * is refused, so hosts of an older xlbd keep their last good state instead
 * of misreading it.  One key per VIP keeps each value small (etcd refuses
 * requests above --max-request-bytes, 1.5 MiB by default) and lets
 * operators change different VIPs at once without conflict.
 *
 * Per-host settings (links, outer sources, the announce table: `link`,
 * `set src4`, `set src6`, `set announce`, a VIP's `src`) are never
 * shared: found in a value, they are refused.
 */
#ifndef XLB_CLUSTER_H
#define XLB_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "state.h"

#define XLB_CLUSTER_FORMAT	1
#define XLB_CLUSTER_NAME_MAX	63
#define XLB_CLUSTER_KEY_MAX	192	/* bytes of a key, NUL included */

/* 1..63 bytes of A-Z a-z 0-9 . _ - */
int xlb_cluster_name_check(const char *name, struct xlb_err *err);

/* "/xlb/NAME/config/", "/xlb/NAME/hosts/" and the keys below them. */
void xlb_cluster_config_prefix(const char *name, char *out, size_t len);
void xlb_cluster_hosts_prefix(const char *name, char *out, size_t len);
void xlb_cluster_global_key(const char *name, char *out, size_t len);
void xlb_cluster_vip_key(const char *name, const struct xlb_vip_key *vip,
			 char *out, size_t len);

/* Where a command belongs in cluster mode. */
enum xlb_scope {
	XLB_SCOPE_CLUSTER = 0,	/* the shared configuration, in etcd */
	XLB_SCOPE_HOST = 1,	/* this host only */
};

/*
 * The scope of op, or -EINVAL with err saying why it belongs to neither
 * (a VIP's src: the host's own address in a shared VIP).
 */
int xlb_cluster_op_scope(const struct xlb_op *op, struct xlb_err *err);

/*
 * The state a host runs: shared (VIPs, backends, cluster-wide settings)
 * with local's per-host settings (links, src4, src6).  *out is a new
 * state (free it).
 */
int xlb_cluster_merge(const struct xlb_state *shared,
		      const struct xlb_state *local, struct xlb_state *out);
/* The shared part of s (per-host settings cleared), as a new state. */
int xlb_cluster_shared_of(const struct xlb_state *s, struct xlb_state *out);

/*
 * The value key holds for the shared state s: NULL in *value when the key
 * would be absent (a VIP not in s; a global key with nothing to say).
 * -ENOENT when key is not one of the cluster's config keys.
 */
int xlb_cluster_encode_key(const struct xlb_state *s, const char *name,
			   const char *key, char **value,
			   struct xlb_err *err);

/* One config key and its value, as encoded or read. */
struct xlb_cluster_kv {
	char key[XLB_CLUSTER_KEY_MAX];
	char *value;
	size_t len;
};

/* Every key of the shared state s, global first, then VIPs by key. */
int xlb_cluster_encode(const struct xlb_state *s, const char *name,
		       struct xlb_cluster_kv **kvs, size_t *n);
void xlb_cluster_kvs_free(struct xlb_cluster_kv *kvs, size_t n);

/*
 * Make key's part of the shared state s what value says (value NULL: the
 * key was deleted).  The key's VIP (or the global settings) is replaced
 * whole.  Errors read "key KEY (revision REV) line L column C: reason";
 * after an error s is partly changed: apply to a copy and drop it.  The
 * whole state still needs xlb_state_validate afterwards.
 */
int xlb_cluster_apply_key(struct xlb_state *s, const char *name,
			  const char *key, const char *value, size_t len,
			  int64_t revision, struct xlb_err *err);

#endif /* XLB_CLUSTER_H */
