/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The desired configuration of one xlb instance: what an operator asked
 * for, independent of the maps that realize it.  xlbd holds one, changes
 * it only through whole validated transactions, persists it, and derives
 * the data path's maps from it.  The config file, `xlbctl save` and the
 * commands xlbctl sends all speak the same grammar (user/lib/config.c).
 */
#ifndef XLB_STATE_H
#define XLB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "structs.h"
#include "error.h"
#include "lookup_table.h"

#define XLB_IFNAME_MAX		16	/* IFNAMSIZ */
#define XLB_LINKS_MAX		16
#define XLB_HTTP_PATH_MAX	128

enum xlb_attach_mode {
	XLB_ATTACH_NATIVE = 0,
	XLB_ATTACH_GENERIC = 1,
};

enum xlb_health_kind {
	XLB_HEALTH_NONE = 0,	/* always healthy */
	XLB_HEALTH_TCP,		/* connect() succeeds */
	XLB_HEALTH_HTTP,	/* GET path answers with the expected status */
	XLB_HEALTH_UDP,		/* a datagram gets any answer */
	XLB_HEALTH_INHERIT,	/* backend only: use the VIP's */
};

struct xlb_health {
	uint8_t kind;		/* enum xlb_health_kind */
	uint16_t port;		/* 0: the VIP's port (or backend's, if set) */
	uint32_t interval_ms;	/* default 2000 */
	uint32_t timeout_ms;	/* default 1000, < interval */
	uint8_t rise;		/* consecutive successes to come back, 1..100 */
	uint8_t fall;		/* consecutive failures to be ejected, 1..100 */
	uint16_t http_status;	/* expected, default 200 */
	char http_path[XLB_HTTP_PATH_MAX];	/* default "/" */
};

/* A VIP is named by its key: address, port (0: all) and protocol. */
struct xlb_vip_conf {
	struct xlb_vip_key key;
	uint32_t algo;		/* enum xlb_algo, default maglev */
	uint32_t table_size;	/* M, default XLB_TABLE_SIZE_DEFAULT */
	uint32_t vnodes;	/* ring, default XLB_RING_VNODES_DEFAULT */
	uint8_t hash_mode;	/* enum xlb_hash_mode, default 5-tuple */
	uint8_t encap;		/* enum xlb_encap, default ipip */
	bool stateless;
	uint8_t panic_pct;	/* default 50: above this share unhealthy,
				 * keep every backend in the table */
	__be32 src4;		/* outer source override, 0: global */
	__be32 src6[4];
	struct xlb_health health;
	bool health_consensus;	/* cluster mode: a backend is down when
				 * most live hosts' checks say so */
	/*
	 * QUIC connection-ID routing (bpf/quic.h), UDP VIPs only: the
	 * QUIC-LB plaintext configuration its servers use.
	 */
	bool quic;
	uint8_t quic_cr;	/* config rotation bits, 0..6, default 0 */
	uint8_t quic_sid_len;	/* server ID octets, 1..15, default 3 */
	uint8_t quic_nonce_len;	/* nonce octets, 4..18, default 4 */
	/*
	 * Bounded loads (docs/datapath.md): c x 100, XLB_BOUND_MIN..MAX;
	 * 0 (default): none.  Stateful VIPs only.
	 */
	uint16_t bound_pct;
};

#define XLB_BOUND_MIN		100	/* c = 1.00 */
#define XLB_BOUND_MAX		10000	/* c = 100 */

#define XLB_QUIC_SID_DEFAULT	3
#define XLB_QUIC_NONCE_DEFAULT	4

enum xlb_admin_state {
	XLB_ADMIN_ACTIVE = 0,
	XLB_ADMIN_DRAIN = 1,
	XLB_ADMIN_DOWN = 2,
};

/* A backend is named by (VIP, address); its stable name places it. */
struct xlb_backend_conf {
	struct xlb_vip_key vip;
	uint8_t family;
	__be32 addr[4];
	char name[XLB_NAME_MAX + 1];	/* default: canonical address */
	uint32_t weight;	/* default 1; 0 behaves as drain */
	uint8_t admin;		/* enum xlb_admin_state */
	struct xlb_health health;	/* kind XLB_HEALTH_INHERIT by default */
	/* its QUIC server ID (VIP marked quic), unique in the VIP; 0: none */
	uint8_t quic_id_len;
	uint8_t quic_id[XLB_QUIC_SID_MAX];
};

struct xlb_link_conf {
	char ifname[XLB_IFNAME_MAX];
	uint8_t mode;		/* enum xlb_attach_mode */
};

/* Global settings ("set ..." lines). */
struct xlb_global_conf {
	struct xlb_hash_key key;	/* cluster secret; must be set */
	bool key_set;
	__be32 src4;
	__be32 src6[4];
	uint16_t gue_port;
	uint16_t mtu;
	uint8_t ttl;
	uint32_t udp_idle_s;
	/* new connection entries a second per CPU; 0: no limit (structs.h) */
	uint32_t new_flow_rate;
	uint32_t announce_table;	/* per host: routing table of the VIP
					 * host routes (xlbd), 0: off */
};

struct xlb_state {
	struct xlb_global_conf global;
	struct xlb_link_conf *links;
	size_t n_links;
	struct xlb_vip_conf *vips;
	size_t n_vips;
	struct xlb_backend_conf *backends;
	size_t n_backends;
	/* room of each array, in elements (state.c's to keep) */
	size_t cap_links, cap_vips, cap_backends;
};

/* Limits enforced with clear errors. */
#define XLB_VIPS_MAX		XLB_MAX_VIPS
#define XLB_BACKENDS_PER_VIP	4096
/*
 * Backend entries (VIP, address) in all.  The data path's limit is on
 * distinct (address, encapsulation): XLB_MAX_BACKENDS, which xlbd enforces
 * when it commits a state, since a backend serving many VIPs takes one id.
 */
#define XLB_MEMBERS_MAX		(1 << 20)

/*
 * Arrays are kept in canonical order: links by ifname, VIPs by key
 * (xlb_vip_key_cmp), backends by VIP key then name, so a VIP's backends are
 * contiguous and equal states have equal arrays.
 */
void xlb_state_init(struct xlb_state *s);
/*
 * len bytes, freed with free(); from XLB_MEM_HUGE_MIN on, on a huge
 * page's boundary with the huge-page advice on all of it, so that every
 * page of it can be huge (a state of 100 000 backends is 27 MiB: a page
 * fault per 4 KiB of it costs more than the work done in it).  zero:
 * cleared (calloc).
 */
#define XLB_MEM_HUGE_MIN	(2u << 20)
void *xlb_mem_alloc(size_t len, bool zero);
void xlb_state_free(struct xlb_state *s);
int xlb_state_copy(struct xlb_state *dst, const struct xlb_state *src);
/*
 * Room for at least backends backends in all, so that adds up to there
 * move nothing (a reader of a large file knows about how many come): 0 or
 * -ENOMEM, s unchanged either way.
 */
int xlb_state_reserve(struct xlb_state *s, size_t backends);
/*
 * tail's VIPs and backends appended to s, as if s had added them in turn,
 * when tail holds nothing else and each of its VIPs sorts after every VIP
 * of s: 0 and tail freed; else -EINVAL (-ENOMEM), both unchanged.  Limits
 * and cross-checks are the caller's (xlb_state_validate).
 */
int xlb_state_join(struct xlb_state *s, struct xlb_state *tail);
bool xlb_state_equal(const struct xlb_state *a, const struct xlb_state *b);

/*
 * The state parsed from a text, kept in a file of its own (state_cache.c):
 * xlb_state_cache_write stores s, which the caller parsed from text;
 * xlb_state_cache_read replaces s by the stored state when the file was
 * made from this very text and is whole, else returns a negative errno
 * with err saying why (-ESTALE: made from another text) and leaves s as
 * it was.  xlb_state_cache_fresh: the file was made from text.
 */
/*
 * Replace path by the parts, through PATH.tmp and a rename: a crash
 * leaves the old file or the new one.  durable: synced, the file before
 * the rename and its folder after it, also against a crash of the
 * machine.  0 or a negative errno.
 */
struct iovec;
int xlb_file_replace(const char *path, const struct iovec *part, size_t n,
		     bool durable);
int xlb_state_cache_write(const char *path, const struct xlb_state *s,
			  const char *text, size_t len, struct xlb_err *err);
int xlb_state_cache_read(const char *path, const char *text, size_t len,
			 struct xlb_state *s, struct xlb_err *err);
bool xlb_state_cache_fresh(const char *path, const char *text, size_t len);

/* Defaults of a new VIP / backend / health check (kind as given). */
void xlb_vip_conf_init(struct xlb_vip_conf *v, const struct xlb_vip_key *key);
void xlb_backend_conf_init(struct xlb_backend_conf *b,
			   const struct xlb_vip_key *vip, uint8_t family,
			   const __be32 addr[4]);
void xlb_health_init(struct xlb_health *h, uint8_t kind);

/* Family, then address, port and protocol: the order of VIPs. */
int xlb_vip_key_cmp(const struct xlb_vip_key *a, const struct xlb_vip_key *b);

struct xlb_op;

/* What xlb_state_apply_at's *where names besides an enum xlb_opt. */
#define XLB_WHERE_OBJECT	(-1)	/* the VIP, backend ADDR or IFNAME */
#define XLB_WHERE_VIP		(-2)	/* the VIP of a backend command */

/*
 * Apply one command (user/lib/config.h).  Returns 0 or a negative errno with
 * err saying why; on error s is unchanged.  add of an existing VIP, backend
 * or link, and set/del of a missing one, are errors; del of a VIP removes
 * its backends.  Limits: XLB_VIPS_MAX, XLB_BACKENDS_PER_VIP, XLB_LINKS_MAX,
 * XLB_MEMBERS_MAX in all, and the table limits of libxlb.
 */
int xlb_state_apply(struct xlb_state *s, const struct xlb_op *op,
		    struct xlb_err *err);

/*
 * As xlb_state_apply; on error *where (if where is not NULL) names the
 * option the error is about (enum xlb_opt) or is one of XLB_WHERE_*.  For
 * messages that point at a token.
 */
int xlb_state_apply_at(struct xlb_state *s, const struct xlb_op *op,
		       int *where, struct xlb_err *err);

/*
 * A transaction: apply n commands in order to a copy of s, validate the
 * result, and only then replace s.  On error s is unchanged and err says
 * which command (counted from 1, when n > 1) failed and why.
 */
int xlb_state_apply_all(struct xlb_state *s, const struct xlb_op *ops,
			size_t n, struct xlb_err *err);

/*
 * Cross-checks of a whole state: the key is set if any VIP exists; every
 * backend belongs to a VIP; per VIP the backends fit the table and the
 * limits, names are unique, ring tokens stay within libxlb's limit; every
 * health check has timeout < interval and a port to probe.
 */
int xlb_state_validate(const struct xlb_state *s, struct xlb_err *err);

/* Lookups; NULL when absent. */
const struct xlb_vip_conf *xlb_state_find_vip(const struct xlb_state *s,
					      const struct xlb_vip_key *key);
const struct xlb_backend_conf *
xlb_state_find_backend(const struct xlb_state *s, const struct xlb_vip_key *vip,
		       uint8_t family, const __be32 addr[4]);
const struct xlb_link_conf *xlb_state_find_link(const struct xlb_state *s,
						const char *ifname);

/*
 * The backends of a VIP (by name): stores up to max pointers in out and
 * returns how many there are in all.
 */
size_t xlb_state_vip_backends(const struct xlb_state *s,
			      const struct xlb_vip_key *vip,
			      const struct xlb_backend_conf **out, size_t max);

#endif /* XLB_STATE_H */
