/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libxlb: the one userspace interface to the data path's maps (layouts in
 * bpf/structs.h).  xlbd, xlbctl explain, the BPF tests and the benchmarks all
 * populate and read the maps through these functions.
 *
 * Everything works on map file descriptors, so the same code serves a freshly
 * loaded object (xlb_dp_from_obj) and maps adopted from bpffs pins after a
 * daemon restart (xlb_dp_from_pins, docs/design.md contract 5).
 *
 * Functions return 0 or a negative errno; those that take a struct xlb_err
 * also leave a sentence there on failure.  Validation happens before any
 * write, so a rejected change leaves the maps as they were.
 */
#ifndef XLB_DATAPATH_H
#define XLB_DATAPATH_H

#include <stdbool.h>

#include <linux/types.h>

#include "structs.h"
#include "error.h"
#include "lookup_table.h"

struct bpf_object;

/* File descriptors of the data path's maps (-1: not open). */
struct xlb_dp {
	int config;		/* xlb_config */
	int vips;		/* xlb_vips */
	int vip_index;		/* xlb_vip_index (outer) */
	int tables[XLB_TABLE_CLASSES];	/* xlb_tab_<M> (outer), by class - 1 */
	int backends;		/* xlb_backends */
	int conntrack;		/* xlb_conntrack */
	int vip_stats;		/* xlb_vip_stats */
	int backend_stats;	/* xlb_backend_stats */
	int events;		/* xlb_events */
	int actions;		/* xlb_actions */
	int tx_ports;		/* xlb_tx_ports */
	int abi;		/* xlb_abi: XLB_DP_ABI entries */
	int gen;		/* xlb_bpf.bss: xlb_gen */
	int flow_cache;		/* xlb_flow_cache */
	int ct_guard;		/* xlb_ct_guard */
	int members;		/* xlb_members */
	int quic_sids;		/* xlb_quic_sids */
	int quic_stats;		/* xlb_quic_stats */
	int be_conns;		/* xlb_be_conns */
	__u32 *gen_map;		/* xlb_gen, mapped (xlb_dp_changed) */
	struct xlb_member_bucket *member_map;	/* xlb_members, mapped */
	const struct xlb_backend *backend_map;	/* xlb_backends, read-only */
	int ncpus;		/* possible CPUs: per-CPU value count */
	/* xlb_dp_vip_hold: VIP changes wait for xlb_dp_vip_release */
	int vip_holds;
	bool vip_dirty;		/* the index is behind xlb_vips */
	/*
	 * While held: xlb_vips as read once and kept by this handle's own
	 * writes since (dp_vip.c), NULL when not read yet.
	 */
	struct vip_table *vip_cache;
	/*
	 * Per VIP id: the table class (bpf/table.h) its index entries name,
	 * and classes whose outer entry it left, removed once the index no
	 * longer names them.  Learnt from the index when adopting.
	 */
	__u8 vip_class[XLB_MAX_VIPS];
	__u16 vip_stale[XLB_MAX_VIPS];
	/*
	 * Per VIP id: its table map is known to be its alone, so that it
	 * may be rewritten in place.  False for a map shared with other
	 * VIPs (xlb_dp_table_share), and for every map found when adopting
	 * (who else points at it is not known): those get a fresh map at
	 * their next publication.
	 */
	bool vip_excl[XLB_MAX_VIPS];
	/*
	 * Per VIP id: its own table map (vip_excl), kept mapped between
	 * rewrites in place, and that map's id (dp_table.c); p is NULL when
	 * none is.  A mapping holds its map: it is dropped when the VIP's
	 * table goes or is replaced, and by xlb_dp_close.
	 */
	struct dp_tmap {
		void *p;
		__u32 map_id;
		__u32 size;
	} vip_tmap[XLB_MAX_VIPS];
	/*
	 * Per VIP id: every backend that may have a live member record of
	 * it (dp_member.c), so that a VIP's leavers are found without a scan
	 * of all records.  Learnt by one scan at the first need.
	 */
	/*
	 * How long the last switch of an outer table entry took, ns (0:
	 * none yet): long where the kernel waits a grace period in it.
	 */
	__u64 switch_ns;
	bool mids_known;
	struct dp_mids {
		__u32 n, cap;
		__u16 *ids;
	} vip_mids[XLB_MAX_VIPS];
};

/* The map names, as in the BPF object and under the bpffs pin folder. */
#define XLB_MAP_CONFIG		"xlb_config"
#define XLB_MAP_VIPS		"xlb_vips"
#define XLB_MAP_VIP_INDEX	"xlb_vip_index"
/* the outer table maps: XLB_MAP_TABLES "<M>" for every size M */
#define XLB_MAP_TABLES		"xlb_tab_"
#define XLB_MAP_BACKENDS	"xlb_backends"
#define XLB_MAP_CONNTRACK	"xlb_conntrack"
#define XLB_MAP_VIP_STATS	"xlb_vip_stats"
#define XLB_MAP_BACKEND_STATS	"xlb_backend_stats"
#define XLB_MAP_BE_CONNS	"xlb_be_conns"
#define XLB_MAP_EVENTS		"xlb_events"
#define XLB_MAP_ACTIONS		"xlb_actions"
#define XLB_MAP_TX_PORTS	"xlb_tx_ports"
#define XLB_MAP_ABI		"xlb_abi"
/*
 * The program's global data (bpf/maps.h: xlb_gen): libbpf names the .bss
 * map of an object after the object, and the skeleton's object is xlb_bpf.
 * bpffs takes no dots in names: libbpf pins it (as any map, '.' -> '_')
 * under XLB_PIN_GEN, and xlb_dp_from_pins opens it there.
 */
#define XLB_MAP_GEN		"xlb_bpf.bss"
#define XLB_PIN_GEN		"xlb_bpf_bss"
#define XLB_MAP_FLOW_CACHE	"xlb_flow_cache"
#define XLB_MAP_CT_GUARD	"xlb_ct_guard"
#define XLB_MAP_MEMBERS		"xlb_members"
#define XLB_MAP_QUIC_SIDS	"xlb_quic_sids"
#define XLB_MAP_QUIC_STATS	"xlb_quic_stats"

/* Name of the inner table maps publish creates (bpftool map list). */
#define XLB_TABLE_MAP_NAME	"xlb_tbl"

/*
 * Open the maps of a loaded object, or the maps pinned as DIR/<map name>.
 * Each map's type, key and value size are checked against structs.h, so maps
 * of another xlb version are refused rather than misread.  Both fill dp with
 * descriptors of its own (the object may be closed independently); release
 * them with xlb_dp_close.  On error nothing stays open.
 */
int xlb_dp_from_obj(struct xlb_dp *dp, struct bpf_object *obj,
		    struct xlb_err *err);
int xlb_dp_from_pins(struct xlb_dp *dp, const char *dir, struct xlb_err *err);
void xlb_dp_close(struct xlb_dp *dp);

/*
 * A new state generation: every flow cache entry of the data path is
 * stale from now on (bpf/structs.h, "Flow cache").  The functions below
 * that write the data path's state call it after each write; whoever
 * writes its maps by other means must call it too.
 */
void xlb_dp_changed(const struct xlb_dp *dp);

/* --- global settings ------------------------------------------------------ */

/* Zero key and sources; GUE port, MTU, TTL and UDP idle from structs.h. */
void xlb_config_defaults(struct xlb_config *c);

int xlb_dp_config_get(const struct xlb_dp *dp, struct xlb_config *c);
int xlb_dp_config_set(const struct xlb_dp *dp, const struct xlb_config *c);

/*
 * The new-flow guard (structs.h): at most `rate` new connection entries a
 * second on each CPU, 0 for no limit (the map as loaded).  Setting it
 * fills every CPU's bucket.  -EINVAL above XLB_CT_RATE_MAX.  get: the
 * rate of CPU 0 (all CPUs have the same).
 */
int xlb_dp_ct_guard_set(const struct xlb_dp *dp, __u32 rate);
int xlb_dp_ct_guard_get(const struct xlb_dp *dp, __u32 *rate);

/* --- members (bpf/structs.h, "Members") ---------------------------------- */

/*
 * Backend `backend` as a member of VIP `vip`: state XLB_MEMBER_ACTIVE,
 * _DRAIN, _DOWN or _GONE, one store the next packet reads.  Publishing a
 * table sets the members its list names (xlb_table.members); this is the
 * quick way between two publications, e.g. a health verdict "down" before
 * the rebuilt table: new flows whose slot names the backend take the
 * slot's secondary, its connection entries are re-picked.  -EINVAL for
 * a bad id or state, -ENOSPC when its buckets are full.
 */
int xlb_dp_member_set(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		      __u8 state, struct xlb_err *err);
/* Its state and place (counters' index); -ENOENT when it has no record. */
int xlb_dp_member_get(const struct xlb_dp *dp, __u32 vip, __u16 backend,
		      __u8 *state, __u32 *place);
/* "active", "drain", "down", "gone" or "free". */
const char *xlb_member_state_name(__u8 state);
/*
 * What the data path does with a slot (primary, secondary) of VIP vip for
 * a flow with no connection entry: the primary if it is an active member
 * (and, for a new flow, not full), else the secondary if it is active,
 * else -ENOENT (no backend: dropped).  A full primary keeps everything
 * but a new flow with an active secondary that is not full, while its
 * budget lasts (*bounded); the budget is read, not taken.
 */
int xlb_dp_member_pick(const struct xlb_dp *dp, __u32 vip, __u16 primary,
		       __u16 secondary, bool new_flow, bool *bounded);
/*
 * A member's flags (XLB_MEMBER_F_*) and, with XLB_MEMBER_F_FULL, its
 * budget: the new flows it still gives to secondaries (bpf/structs.h,
 * "Members"; below 0 by what CPUs racing on the last one took).
 * Setting: one store, no new generation; budget 0..XLB_MEMBER_BUDGET_MAX,
 * and 0 without the flag (-EINVAL otherwise); only an active member
 * takes XLB_MEMBER_F_FULL (-ENOENT for another, or none; its flags are
 * cleared).  1 when the flags changed, 0 when only the budget was
 * written or nothing.  A state written by xlb_dp_member_set clears both.
 * budget may be NULL when getting.
 */
int xlb_dp_member_flags_get(const struct xlb_dp *dp, __u32 vip,
			    __u16 backend, __u8 *flags, __s16 *budget);
int xlb_dp_member_flags_set(const struct xlb_dp *dp, __u32 vip,
			    __u16 backend, __u8 flags, int budget);
/* Does a connection entry of (vip, backend) hold: active or draining? */
bool xlb_dp_member_keeps(const struct xlb_dp *dp, __u32 vip, __u16 backend);

/* --- VIPs ----------------------------------------------------------------- */

/*
 * Add or replace a VIP.  -EINVAL for a bad key (family 4 or 6, protocol TCP
 * or UDP, IPv4 with addr[1..3] zero) or value (id < XLB_MAX_VIPS, flags only
 * XLB_VIP_F_STATELESS, known hash mode); -EEXIST when another VIP already
 * has the id; -E2BIG when the map is full.
 *
 * The address marker of structs.h (port 0, protocol 0) is kept here: set and
 * del rewrite it from the VIPs of the address, callers never write one.
 * It takes a map entry too, so the map holds fewer VIPs than XLB_MAX_VIPS
 * when they have different addresses.
 */
int xlb_dp_vip_set(struct xlb_dp *dp, const struct xlb_vip_key *key,
		   const struct xlb_vip *vip, struct xlb_err *err);
/* -ENOENT when there is no such VIP.  Unpublish its table afterwards. */
int xlb_dp_vip_del(struct xlb_dp *dp, const struct xlb_vip_key *key);
/*
 * The data path sees VIPs through the VIP index (structs.h), rebuilt and
 * switched whole after each set or del; a switch waits for an RCU grace
 * period (milliseconds).  Between xlb_dp_vip_hold and the matching
 * xlb_dp_vip_release, sets and dels only change xlb_vips, and the release
 * switches the index once for all of them (it returns what the rebuild
 * returned; on failure the index stays behind and a later release or
 * change tries again).  xlb_dp_vip_sync rebuilds it now.
 */
void xlb_dp_vip_hold(struct xlb_dp *dp);
int xlb_dp_vip_release(struct xlb_dp *dp, struct xlb_err *err);
int xlb_dp_vip_sync(struct xlb_dp *dp, struct xlb_err *err);
int xlb_dp_vip_get(const struct xlb_dp *dp, const struct xlb_vip_key *key,
		   struct xlb_vip *vip);

/* --- backends ------------------------------------------------------------- */

/*
 * Write backend id.  The epoch is the library's, b->epoch is ignored: it
 * stays when the address, family and encapsulation stay, and becomes the
 * stored epoch + 1 when they change (also after xlb_dp_backend_clear), so
 * connection entries of a former backend of this id never match.  Replacing
 * a valid entry by a different one takes the two writes of structs.h: first
 * the old entry with flags = 0, then the new one.
 */
int xlb_dp_backend_set(const struct xlb_dp *dp, __u16 id,
		       const struct xlb_backend *b, struct xlb_err *err);
/* flags = 0: no longer usable; the rest (epoch) stays for the next set. */
int xlb_dp_backend_clear(const struct xlb_dp *dp, __u16 id);
int xlb_dp_backend_get(const struct xlb_dp *dp, __u16 id,
		       struct xlb_backend *b);

/* --- lookup tables (docs/design.md contracts 2 and 4) --------------------- */

/*
 * Publish t as the table of VIP vip_id.  A table map that is the VIP's
 * alone and of t's size is rewritten in place (the slots that differ, one
 * word store each, no grace period waited for); otherwise a new inner map
 * is filled while the old one keeps serving, then one update of the outer
 * entry switches every CPU over.  Either way a packet sees each slot of
 * the old table or of the new one, whole (docs/design.md contract 4).
 *
 * M may change.  The outer map of t's size gets the table, and the VIP
 * index its new size class, in the index switch that follows (now, or at
 * xlb_dp_vip_release when held): until then packets keep the old table,
 * then they all see the new one; the old size's entry is removed after
 * that switch.  Publishes of different VIPs may run on several threads at
 * once while VIP changes are held (xlb_dp_vip_hold).
 */
int xlb_dp_table_publish(struct xlb_dp *dp, __u32 vip_id,
			 const struct xlb_table *t, struct xlb_err *err);
/* As xlb_dp_table_publish; *map_id is the table map's id. */
int xlb_dp_table_publish_id(struct xlb_dp *dp, __u32 vip_id,
			    const struct xlb_table *t, __u32 *map_id,
			    struct xlb_err *err);
/*
 * Publish for vip_id the very table map from_vip publishes, which must
 * hold t (a table built from the same inputs): no map is made or filled,
 * one outer entry is written, and the two VIPs' packets read the same
 * memory.  Neither map is rewritten in place from then on; each VIP gets
 * a fresh map at its next publication.  -ENOENT when from_vip publishes no
 * table of t's size.  from_vip must not be published meanwhile; other
 * VIPs may share it on several threads at once.
 */
int xlb_dp_table_share(struct xlb_dp *dp, __u32 vip_id, __u32 from_vip,
		       const struct xlb_table *t, __u32 *map_id,
		       struct xlb_err *err);
/*
 * How long the last switch of a table map took in the kernel (ns; 0 when
 * none was made yet).  Some kernels wait an RCU grace period there, and
 * then many publications at once share one wait: callers pick how many
 * threads to publish on by it.
 */
__u64 xlb_dp_switch_ns(const struct xlb_dp *dp);
/*
 * Remove the table of vip_id (-ENOENT if none); its member records become
 * GONE either way (the id may name another VIP next).  Delete the VIP
 * first.
 * Removals of different VIPs may run on several threads at once.
 */
int xlb_dp_table_unpublish(struct xlb_dp *dp, __u32 vip_id);
/*
 * Read the published table of vip_id into out (slots allocated here; free
 * with xlb_table_free).  -ENOENT when vip_id has no table.
 */
int xlb_dp_table_read(const struct xlb_dp *dp, __u32 vip_id,
		      struct xlb_table *out, struct xlb_err *err);
/*
 * The id of the table map published for vip_id (one lookup in the outer
 * map of its size, no copy of the table); -ENOENT when there is none.
 */
int xlb_dp_table_map_id(const struct xlb_dp *dp, __u32 vip_id,
			__u32 *map_id);
/*
 * Read a table map by its id, as xlb_dp_table_publish_id gave it.  Reading
 * the outer map waits for an RCU grace period in the kernel (it does for
 * every lookup of a map of maps); this does not.  -ENOENT once the table
 * was replaced and freed; -EIO if the id is not an xlb table any more.
 */
int xlb_dp_table_read_map(__u32 map_id, struct xlb_table *out,
			  struct xlb_err *err);

/* --- counters: sums over all CPUs ----------------------------------------- */

int xlb_dp_vip_stats(const struct xlb_dp *dp, __u32 vip_id,
		     struct xlb_vip_stats *sum);
int xlb_dp_backend_stats(const struct xlb_dp *dp, __u16 id,
			 struct xlb_counter *sum);
/*
 * Set backend id's counters to zero on every CPU (a packet counted on
 * another CPU meanwhile may survive or be lost: they are not atomic).
 */
/* Backend id's active connections (bpf/structs.h), summed over CPUs. */
int xlb_dp_backend_conns(const struct xlb_dp *dp, __u16 id, __s64 *sum);
/* The same of ids 0..n-1 into out[id], in one batch lookup. */
int xlb_dp_backend_conns_first(const struct xlb_dp *dp, __u32 n, __s64 *out);
int xlb_dp_backend_stats_clear(const struct xlb_dp *dp, __u16 id);
int xlb_dp_events(const struct xlb_dp *dp, __u64 out[XLB_EV_MAX]);
/* Indexed by XDP action: XDP_ABORTED, DROP, PASS, TX, REDIRECT. */
int xlb_dp_actions(const struct xlb_dp *dp, __u64 out[XLB_ACTIONS]);
/*
 * The same for the packets that came in on interface ifindex (and on any
 * other whose ifindex is the same modulo XLB_LINK_SLOTS, bpf/structs.h).
 */
int xlb_dp_link_actions(const struct xlb_dp *dp, __u32 ifindex,
			__u64 out[XLB_ACTIONS]);

/* Stable snake_case name of an enum xlb_event ("no_backend"); NULL if none. */
const char *xlb_event_name(int ev);

/* --- connection table ----------------------------------------------------- */

/* The entry of a flow as received; -ENOENT when there is none. */
int xlb_dp_ct_lookup(const struct xlb_dp *dp, const struct xlb_flow *flow,
		     struct xlb_ct *ct);
/* Delete every entry (entries the data path adds meanwhile may stay). */
int xlb_dp_ct_flush(const struct xlb_dp *dp);
/*
 * Write n entries into the connection table as the data path would (the
 * flow's own way, else a free one, else its bucket's oldest): for tests,
 * benchmarks and tools that set up flows.
 */
int xlb_dp_ct_insert(const struct xlb_dp *dp, const struct xlb_flow *flows,
		     const struct xlb_ct *cts, size_t n);
/* The index key of the connection table, derived from the cluster key. */
void xlb_ct_key_derive(const struct xlb_hash_key *key,
		       struct xlb_ct_key *out);
int xlb_dp_ct_count(const struct xlb_dp *dp, __u32 *count);
/* How many flows the connection table holds at most (its max_entries). */
int xlb_dp_ct_capacity(const struct xlb_dp *dp, __u32 *capacity);

/* --- QUIC connection-ID routing (bpf/quic.h) ------------------------------ */

/* One server ID of a VIP and the backend it routes to. */
struct xlb_quic_sid {
	struct xlb_quic_sid_key key;	/* VIP id, server ID zero-padded */
	__u32 backend;
};

/*
 * Make xlb_quic_sids hold exactly sids[0..n): entries not in it are
 * deleted after the new ones are written.  -EINVAL (nothing written) for
 * a VIP id >= XLB_MAX_VIPS, a backend id >= XLB_MAX_BACKENDS, a key given
 * twice or more than XLB_QUIC_SIDS entries.
 */
int xlb_dp_quic_sids_sync(const struct xlb_dp *dp,
			  const struct xlb_quic_sid *sids, size_t n,
			  struct xlb_err *err);
/* The backend id of (VIP id, server ID); -ENOENT when there is none. */
int xlb_dp_quic_sid_get(const struct xlb_dp *dp,
			const struct xlb_quic_sid_key *key, __u32 *backend);
/* The VIP's QUIC counters summed over all CPUs. */
int xlb_dp_quic_stats(const struct xlb_dp *dp, __u32 vip_id,
		      struct xlb_quic_stats *sum);
/* Stable snake_case names of the counters, in struct order. */
extern const char *const xlb_quic_stat_names[XLB_QUIC_STATS_N];

/* --- redirect egress ------------------------------------------------------ */

int xlb_dp_tx_port_add(const struct xlb_dp *dp, __u32 ifindex);
int xlb_dp_tx_port_del(const struct xlb_dp *dp, __u32 ifindex);

#endif /* XLB_DATAPATH_H */
