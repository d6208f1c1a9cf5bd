/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map layouts shared by the data path (bpf/xlb.bpf.c) and userspace
 * (libxlb, xlbd, xlbctl, tests).  Defined once; sizes checked at compile
 * time so both sides agree byte for byte.
 *
 * Maps (names as in the BPF object; see bpf/maps.h):
 *   xlb_config        ARRAY[1]            -> struct xlb_config
 *   xlb_vips          HASH[XLB_VIP_ENTRIES] xlb_vip_key -> struct xlb_vip:
 *                     the VIPs as libxlb keeps them; the data path reads
 *                     the copy in xlb_vip_index
 *   xlb_vip_index     ARRAY_OF_MAPS[1]; inner map: ARRAY of
 *                     XLB_VIP_INDEX_MAP_SLOTS struct xlb_vip_slot: an
 *                     open-addressing copy of xlb_vips, then the
 *                     address filter (see below), rebuilt and switched
 *                     whole by libxlb
 *   xlb_tab_<M>       ARRAY_OF_MAPS[XLB_MAX_VIPS], index vip.id, one per
 *                     table size M (bpf/table.h); inner map: ARRAY of ONE
 *                     value, the table: XLB_TABLE_BYTES(M) bytes, word 0
 *                     the header (M, see xlb_table_hdr_*), word i + 1
 *                     slot i (4 bytes a slot, where an ARRAY of slots
 *                     would store each in 8).  The VIP's index entry
 *                     names the size in use (xlb_vip.table).  Publishing
 *                     a table of the same size rewrites the slots that
 *                     differ in place, one 32-bit store each: a packet
 *                     reads one slot, so it sees the old table's or the
 *                     new table's, whole (user/lib/dp_table.c); of
 *                     another size: a new inner map in the outer entry
 *                     of that size, then a new VIP index.
 *                     Why a map per size: an inner map of fixed size is
 *                     looked up inline (its bounds known to the verifier)
 *                     and hash % M divides by a constant; with one outer
 *                     map for all sizes (BPF_F_INNER_MAP) each lookup is a
 *                     helper call, and a call costs as much as the rest of
 *                     a stateless packet (pkt benchmark).
 *   xlb_backends      ARRAY[XLB_MAX_BACKENDS], index backend id
 *   xlb_members       ARRAY[XLB_MEMBER_BUCKETS] of struct
 *                     xlb_member_bucket: each (VIP, backend)'s state
 *                     ("Members" below)
 *   xlb_conntrack     ARRAY of struct xlb_ct_entry, XLB_CT_WAYS per bucket
 *                     (see "Connection table" below and bpf/ct_hash.h)
 *   xlb_vip_stats     PERCPU_ARRAY[XLB_MAX_VIPS]     -> struct xlb_vip_stats
 *   xlb_backend_stats PERCPU_ARRAY[XLB_MAX_BACKENDS] -> struct xlb_counter
 *   xlb_events        PERCPU_ARRAY[XLB_EV_IN_MAP]    -> __u64
 *   xlb_actions       PERCPU_ARRAY[XLB_ACTIONS * XLB_LINK_SLOTS] -> __u64:
 *                     packets by ingress link and XDP action, entry
 *                     XLB_LINK_SLOT(ifindex) * XLB_ACTIONS + action
 *   xlb_tx_ports      DEVMAP_HASH ifindex -> ifindex (egress for redirect)
 *   xlb_bpf.bss       ARRAY[1] -> __u32 xlb_gen, mmapable: the program's
 *                     global data (maps.h), which is the state
 *                     generation, incremented by libxlb after every
 *                     change the flow cache depends on ("Flow cache")
 *   xlb_flow_cache    PERCPU_ARRAY[XLB_FC_SLOTS] -> struct xlb_fc_entry
 *   xlb_ct_guard      PERCPU_ARRAY[1] -> struct xlb_ct_guard (new-flow
 *                     guard, see "What makes a connection entry")
 *   xlb_icmp_bucket   PERCPU_ARRAY[1] -> struct xlb_icmp_bucket: the rate
 *                     limit of too-big answers ("Too big")
 *   xlb_quic_sids     HASH[XLB_QUIC_SIDS] struct xlb_quic_sid_key -> __u32
 *                     backend id: the server IDs of QUIC VIPs (quic.h)
 *   xlb_quic_stats    PERCPU_ARRAY[XLB_MAX_VIPS] -> struct xlb_quic_stats
 *   xlb_be_conns      PERCPU_ARRAY[XLB_MAX_BACKENDS] -> __s64: each
 *                     backend's connection entries, one CPU's share
 *                     each ("Active connections" below)
 */
#ifndef XLB_STRUCTS_H
#define XLB_STRUCTS_H

#include <linux/types.h>

#include "flow_hash.h"
#include "table.h"
#include "ct_hash.h"
#include "quic.h"

#define XLB_MAX_VIPS		1024
/* xlb_vips entries: every VIP, plus an address marker and up to two
 * fragment entries per VIP address (see below) */
#define XLB_VIP_ENTRIES		(4 * XLB_MAX_VIPS)
#define XLB_MAX_BACKENDS	(XLB_BACKEND_ID_MAX + 1)
#define XLB_CONNTRACK_DEFAULT	(1u << 20)
#define XLB_CONNTRACK_MIN	256		/* xlbd --conntrack-entries */
#define XLB_CONNTRACK_MAX	(1u << 26)
#define XLB_ACTIONS		5	/* XDP_ABORTED .. XDP_REDIRECT */
/*
 * Per-link counters: the actions of each ingress interface, by its
 * ifindex modulo XLB_LINK_SLOTS (libxlb says when two attached links
 * share a slot).  The key is one more mask of a value the program has at
 * hand, so the counters cost the packets nothing the totals did not.
 */
#define XLB_LINK_SLOTS		256
#define XLB_LINK_SLOT(ifindex)	((ifindex) & (XLB_LINK_SLOTS - 1))

/*
 * Data path ABI: what the program and libxlb agree on beyond the layouts
 * the map checks see (hashes, index placement, the entry protocols, flag
 * meanings).  Bump it with any change to those: an xlbd adopts only a
 * pinned data path of its own ABI, so that an upgraded daemon never
 * drives a running program of another build.  The map xlb_abi carries it
 * as its size (maps.h): fixed by the object at load, pinned with the
 * other maps, read back without anybody writing it.
 */
#define XLB_DP_ABI		11

#define XLB_GUE_PORT_DEFAULT	6080
#define XLB_MTU_DEFAULT		1500	/* IP MTU toward backends */
#define XLB_MTU_MIN		576	/* set mtu: the range libxlb accepts */
#define XLB_MTU_MAX		9216
#define XLB_TTL_DEFAULT		64
#define XLB_UDP_IDLE_DEFAULT	30	/* seconds */

/* Global settings of one LB host.  Same key on every host of a cluster. */
struct xlb_config {
	struct xlb_hash_key key;
	__be32 src4;		/* outer source, IPv4 tunnels */
	__be32 src6[4];		/* outer source, IPv6 tunnels */
	__u16 gue_port;		/* host order */
	__u16 mtu;		/* largest outer IP packet, bytes */
	__u8 ttl;		/* outer TTL / hop limit */
	__u8 pad[3];
	__u32 udp_idle_s;	/* UDP connection entries expire after this */
	/*
	 * Derived by libxlb when it writes the config (xlb_dp_config_set),
	 * never set by hand: the connection table's bucket count and index
	 * key (bpf/ct_hash.h), and the kernel's ticks per second (the
	 * clock of connection entries, user/lib/clock.h).  xlb_dp_config_get
	 * returns them as zero.
	 */
	__u32 ct_buckets;
	__u32 hz;
	struct xlb_ct_key ct_key;
};

_Static_assert(sizeof(struct xlb_config) == 96, "xlb_config layout");

/* A VIP is matched on destination address, port (0: every port), protocol. */
struct xlb_vip_key {
	__be32 addr[4];		/* IPv4 in addr[0], rest zero */
	__be16 port;
	__u8 proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family;		/* XLB_FAMILY_INET or XLB_FAMILY_INET6 */
};

_Static_assert(sizeof(struct xlb_vip_key) == 20, "xlb_vip_key layout");

#define XLB_VIP_F_STATELESS	(1u << 0)	/* no connection table */
/*
 * Derived entries the control plane keeps in xlb_vips beside the VIPs:
 *  - address marker, key (addr, port 0, proto 0, family), flags
 *    XLB_VIP_F_ADDR_ONLY: the address has some VIP.  A packet to it that
 *    cannot be parsed is dropped and counted instead of passed on.
 *  - fragment entry, key (addr, port 0, proto, family | XLB_FAMILY_FRAG):
 *    present while the address has a VIP of that protocol.  When exactly
 *    one of them hashes without ports (3-tuple or source), its value is a
 *    copy of that VIP's, and non-first fragments (no ports to match) are
 *    steered by it; otherwise it says XLB_VIP_F_ADDR_ONLY and they are
 *    dropped and counted.  No entry: not ours, passed on.
 */
#define XLB_FAMILY_FRAG		0x80
#define XLB_VIP_F_ADDR_ONLY	(1u << 1)	/* address marker */
/* XLB_VIP_F_QUIC (1u << 2): route QUIC short headers by CID (quic.h) */

struct xlb_vip {
	__u32 id;		/* index in xlb_tab_<M> and xlb_vip_stats */
	__u32 flags;		/* XLB_VIP_F_* */
	__u8 hash_mode;		/* enum xlb_hash_mode */
	/*
	 * Table class (bpf/table.h) of the VIP's published table: set by
	 * libxlb in the VIP index from what it published, 0 in xlb_vips.
	 */
	__u8 table;
	/*
	 * XLB_VIP_F_QUIC: the QUIC-LB configuration (quic.h), rotation
	 * bits and server ID length (XLB_QUIC_CR_SID), nonce length; 0
	 * otherwise.
	 */
	__u8 quic_cr_sid;
	__u8 quic_nonce;
	__be32 src4;		/* outer source override, 0: the global one */
	__be32 src6[4];
};

_Static_assert(sizeof(struct xlb_vip) == 32, "xlb_vip layout");

/*
 * The VIP index the data path searches: every entry of xlb_vips, placed by
 * linear probing from slot xlb_vip_index_hash(key) % XLB_VIP_INDEX_SLOTS,
 * at most XLB_VIP_PROBES slots from there.  A free slot has family 0 and
 * ends a search.  At most XLB_VIP_ENTRIES entries fill an eighth of it,
 * which keeps every entry well within the probes (libxlb refuses an index
 * that would not).  Why not the hash map itself: its lookup is a helper
 * call with a jhash and a memcmp; a probe here is an array load and three
 * compares in the program.  Of fixed size, so the program knows the size
 * and the kernel inlines the lookup in the index.  Switching the whole
 * index (one update of the outer map) keeps a VIP change atomic for
 * packets, like a table.
 */
#define XLB_VIP_INDEX_SLOTS	(8 * XLB_VIP_ENTRIES)
#define XLB_VIP_PROBES		8

struct xlb_vip_slot {
	struct xlb_vip_key key;
	__u32 pad0;
	struct xlb_vip vip;
	__u64 pad;		/* one cache line */
};

_Static_assert(sizeof(struct xlb_vip_slot) == 64, "xlb_vip_slot layout");
_Static_assert((XLB_VIP_INDEX_SLOTS & (XLB_VIP_INDEX_SLOTS - 1)) == 0,
	       "index size a power of two");

/*
 * After the index's slots, in the same map, the address filter: one bit
 * per value of xlb_vip_filter_hash over a destination address and its
 * family, set for every address some entry of the index has.  A packet
 * whose destination's bit is clear cannot be for a VIP: the program
 * passes it after one lookup in this map, without the flow cache, the
 * config or the index's probes.  In the index's own map, so that it
 * switches with the index, whole.  512 bits a slot.
 */
#define XLB_VIP_FILTER_BITS	(1u << 16)
#define XLB_VIP_FILTER_SLOTS	(XLB_VIP_FILTER_BITS / 512)
#define XLB_VIP_INDEX_MAP_SLOTS	(XLB_VIP_INDEX_SLOTS + XLB_VIP_FILTER_SLOTS)

_Static_assert(sizeof(struct xlb_vip_slot) * 8 == 512, "512 filter bits a slot");

/*
 * d0, d1: the address as two 64-bit words (IPv4 in the low half of d0),
 * as a flow holds it.  The top 16 bits of a multiplicative hash.
 */
static __always_inline __u32 xlb_vip_filter_hash(__u64 d0, __u64 d1,
						 __u8 family)
{
	__u64 h = d0 * 0x9e3779b97f4a7c15ULL ^ d1 * 0xc2b2ae3d27d4eb4fULL ^
		  (__u64)family * 0x165667b19e3779f9ULL;

	return (__u32)(h >> 48);
}

static __always_inline __u32 xlb_vip_index_hash(const struct xlb_vip_key *k)
{
	__u64 h = (__u64)k->addr[0] * 0x9e3779b97f4a7c15ULL ^
		  (__u64)k->addr[1] * 0xc2b2ae3d27d4eb4fULL ^
		  (__u64)k->addr[2] * 0x165667b19e3779f9ULL ^
		  (__u64)k->addr[3] * 0x27d4eb2f165667c5ULL ^
		  ((__u64)k->port | (__u64)k->proto << 16 |
		   (__u64)k->family << 24) * 0xff51afd7ed558ccdULL;

	h ^= h >> 32;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return (__u32)(h >> 32);
}

/* How a backend is reached: IP-in-IP by the outer family, or GUE. */
enum xlb_encap {
	XLB_ENCAP_IPIP = 0,	/* IPIP, 6in4, 4in6, ip6ip6 */
	XLB_ENCAP_GUE = 1,	/* IP-in-UDP with the xlb hop list */
};

#define XLB_BE_F_VALID		(1u << 0)	/* member of some VIP */
#define XLB_BE_F_NEXTHOP	(1u << 1)	/* mac/ifindex set: no FIB lookup */

/*
 * A backend.  The program uses an entry only while its flags say
 * XLB_BE_F_VALID.  A new target (address, family or encapsulation) gets
 * a new epoch, so connection entries of the old backend (old epoch) never
 * match the new one.  The program reads an entry field by field while
 * user space may be writing it (a copy in the kernel, in no set order),
 * so libxlb never changes an entry's target under a reader: flags 0, a
 * wait until every program run that could have seen it valid has ended
 * (an RCU grace period), the new content with flags 0, then the flags
 * (on CPUs that reorder loads, after another wait).  Two plain writes
 * (flags 0, then the new entry) were not enough on any CPU: a run that
 * read the flags before the first write and the address after the second
 * sends an old-epoch flow to the new target; and on a weakly ordered CPU
 * (arm64) a run may load the address before the flags and take a stale
 * one as valid.  user/lib/dp_backend.c has the steps and what each buys.
 */
struct xlb_backend {
	__be32 addr[4];
	__u8 family;
	__u8 encap;		/* enum xlb_encap */
	__u8 flags;		/* XLB_BE_F_* */
	__u8 pad;
	__u32 epoch;
	__u8 dmac[6];		/* next hop, if XLB_BE_F_NEXTHOP */
	__u8 smac[6];		/* egress interface's address, likewise */
	__u32 ifindex;		/* egress, if XLB_BE_F_NEXTHOP; 0: ingress */
};

_Static_assert(sizeof(struct xlb_backend) == 40, "xlb_backend layout");
_Static_assert(__builtin_offsetof(struct xlb_backend, dmac) % 8 == 0 &&
	       __builtin_offsetof(struct xlb_backend, smac) == 30,
	       "next hop addresses: 12 bytes from an 8-byte boundary");

/*
 * Members: the state of backend b as a member of VIP v, one record per
 * (v, b), which the program reads per packet (docs/datapath.md,
 * "Members"):
 *   ACTIVE  takes new flows, keeps established ones
 *   DRAIN   keeps established flows, takes no new ones
 *   DOWN    neither: established flows move (re-picked from the table),
 *           new flows whose slot names it take the slot's secondary
 *   GONE    removed from the VIP: keeps nothing, a tombstone (the same
 *           (v, b) gets its place back when it returns)
 *   FREE    (0) a place never used: ends a search
 * A connection entry holds only while its (vip, backend) is ACTIVE or
 * DRAIN; a backend alive under another VIP does not keep it.  Marking a
 * member down is one store (xlb_dp_member_set), which the next packet
 * reads; the rebuilt table follows.
 *
 * Flags beside the state: XLB_MEMBER_F_FULL, an ACTIVE member over its
 * VIP's bound (its `bound`, "Bounded loads" in docs/datapath.md):
 * a new flow (XLB_CT_CREATE_NEW) whose slot names it as primary takes
 * the slot's secondary if that is ACTIVE and not full, and the record's
 * budget is above 0, else stays.  Each flow so given takes one from the
 * budget (an atomic add to the record's word, which changes no other
 * field): the budget is the number of new flows that bring the member
 * back within its bound if none of them came to it, so that a mark
 * stops steering once it has done its work, not only at xlbd's next
 * round.  Two CPUs may both take the last one (the budget then goes
 * below 0, by fewer than the CPUs).  Established flows, pickups and
 * ICMP errors do not look at the flag.  xlbd sets and clears it, and
 * sets the budget, from the active connection counts.
 *
 * xlb_members is an ARRAY of XLB_MEMBER_BUCKETS buckets of
 * XLB_MEMBER_WAYS records (one cache line), mmapable: libxlb writes a
 * record as one 8-byte store, the program reads it as one load.  (v, b)
 * lives in bucket xlb_member_bucket(v, b, i) for the first probe i of
 * XLB_MEMBER_PROBES whose bucket had a way FREE or GONE when it came, in
 * the first such way.  The probes' buckets are independent of each
 * other: buckets next to each other, as a linear probe takes them, fill
 * together (1000 VIPs of 100 backends each found both of some pairs full
 * in 16 384 buckets); 32 768 buckets leave most of them half empty,
 * so a member is nearly always in its first probe's.  Test:
 * members_of_1000_vips_of_100_find_a_place (tests/bpf/datapath.c).
 * Its place (bucket * XLB_MEMBER_WAYS + way) never changes
 * while the record is there.
 */
#define XLB_MEMBER_FREE		0
#define XLB_MEMBER_ACTIVE	1
#define XLB_MEMBER_DRAIN	2
#define XLB_MEMBER_DOWN		3
#define XLB_MEMBER_GONE		4

#define XLB_MEMBER_WAYS		8
#define XLB_MEMBER_BUCKET_BITS	15
#define XLB_MEMBER_BUCKETS	(1u << XLB_MEMBER_BUCKET_BITS)
#define XLB_MEMBER_SLOTS	(XLB_MEMBER_BUCKETS * XLB_MEMBER_WAYS)
#define XLB_MEMBER_PROBES	4

struct xlb_member {
	__u16 vip;		/* VIP id */
	__u16 backend;		/* backend id */
	__u8 state;		/* XLB_MEMBER_* */
	__u8 flags;		/* XLB_MEMBER_F_* */
	__s16 budget;		/* XLB_MEMBER_F_FULL: new flows to give away */
};

#define XLB_MEMBER_F_FULL	0x01
#define XLB_MEMBER_BUDGET_MAX	0x7fff
/* What taking one from the budget adds to the record's word. */
#define XLB_MEMBER_BUDGET_ONE	(1ull << 48)

/* A record's state and flags as the program reads them: state | flags << 8. */
#define XLB_MEMBER_STATE(sf)	((sf) & 0xff)

struct xlb_member_bucket {
	struct xlb_member m[XLB_MEMBER_WAYS];
};

_Static_assert(sizeof(struct xlb_member) == 8, "one 8-byte store");
_Static_assert(__builtin_offsetof(struct xlb_member, budget) == 6,
	       "the budget is the word's top 16 bits");
_Static_assert(sizeof(struct xlb_member_bucket) == 64, "one cache line");

/* The record's key as its first 32 bits read it (little endian). */
static __always_inline __u32 xlb_member_key(__u32 vip, __u32 backend)
{
	return (vip & 0xffff) | backend << 16;
}

/*
 * Bucket of probe i of (vip, backend): the key moved by i golden-ratio
 * steps, mixed (a 32-bit finalizer: every key bit moves every bucket
 * bit, so neither consecutive ids nor one backend's VIPs crowd).
 */
static __always_inline __u32 xlb_member_bucket(__u32 vip, __u32 backend,
					       __u32 i)
{
	__u32 x = xlb_member_key(vip, backend) + i * 0x9e3779b9u;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x >> (32 - XLB_MEMBER_BUCKET_BITS);
}

/*
 * Connection table.  An array of buckets of XLB_CT_WAYS entries, shared by
 * all CPUs (a flow's packets may arrive on any CPU, and xlbctl explain
 * reads it); bucket = xlb_ct_bucket(index hash of the flow as received).
 * A lookup compares the flow with the entries of its bucket in the
 * program itself, where the kernel's hash maps would cost a call, a
 * jhash and a memcmp each (docs/datapath.md).  An insert
 * takes a free way, else the way seen longest ago: a bucket-local LRU.
 *
 * Entries are written without a lock, by several CPUs at once at worst.
 * `check` makes that safe: it is the index hash of the flow mixed with
 * the entry's value words (xlb_ct_check), always odd, and it is written
 * last, after XLB_CT_CHECK_BUSY (even, never a check) written first.  A
 * reader that sees a flow match recomputes it from what it read; a torn
 * entry (half of one writer, half of another, or a value from before the
 * key) does not check and counts as a miss: the flow is picked from the
 * table again and re-inserted.  One entry is one cache line.
 *
 * check == 0: a free way.  An insert takes the first free way of its
 * bucket and a write never frees one (busy is not free), so the ways in
 * use come first: a lookup stops at the first free way, and a new flow
 * in a bucket with room reads that way's line alone.  Only a flush
 * (xlb_dp_ct_flush) frees ways, leaving holes while it runs: a flow
 * behind one is picked again, as after the flush.
 */
#define XLB_CT_CHECK_BUSY	2

struct xlb_ct_entry {
	struct xlb_flow flow;	/* as received */
	__u32 epoch;		/* backend epoch when the entry was made */
	__u32 hash;		/* flow hash: GUE source port, flow label */
	__u16 backend;
	__u16 vip;		/* VIP id (for listing entries per VIP),
				 * | XLB_CT_VIP_CLOSED */
	__u32 check;		/* see above; 0: free, XLB_CT_CHECK_BUSY */
	__u64 last_seen;	/* bpf_jiffies64(): kernel ticks */
};

_Static_assert(sizeof(struct xlb_ct_entry) == 64, "one cache line");

/*
 * Active connections.  xlb_be_conns counts, per backend, the connection
 * entries that name it and are not closed; each CPU adds its own +1 and
 * -1, so one CPU's value may be below 0 and the sum is the count:
 *   insert     +1 for the new entry's backend, -1 for the backend of the
 *              valid entry it overwrote (eviction, or a re-pick of the
 *              flow's own way), unless that one was closed
 *   close      a TCP FIN or RST on an entry sets XLB_CT_VIP_CLOSED in
 *              its vip field (a new check with it) and takes 1; a SYN on
 *              a closed entry clears it and gives 1 back.  A closed entry
 *              still holds: the last ACKs go where the connection was.
 *   expiry     none: an idle entry (UDP past udp-idle, a TCP connection
 *              that ended without a FIN or RST through this host) counts
 *              until its way is taken
 * Not exact: two CPUs evicting one entry at once both take 1, and a torn
 * entry's backend is taken as it reads.  The slack is a handful in a
 * table of millions; xlbd reads the sums (bounded loads).
 */
#define XLB_CT_VIP_CLOSED	0x8000
#define XLB_CT_VIP_MASK		0x7fff

_Static_assert(XLB_MAX_VIPS <= XLB_CT_VIP_MASK + 1, "VIP ids under the flag");

/*
 * What makes a connection entry.  A miss in the connection table picks
 * from the table and forwards; whether it also remembers the flow depends
 * on the packet (as conntrack decides what is a new connection):
 *   TCP SYN (no RST, no FIN)      creates
 *   TCP ACK without SYN/RST/FIN   creates (mid-stream pickup: a flow an
 *                                 LB host that went away was carrying,
 *                                 now arriving here, must be remembered
 *                                 here to survive the next table change)
 *   TCP RST, FIN, or no ACK       never creates
 *   UDP                           creates
 * An existing entry of the flow (its own way) is rewritten in place by
 * any packet, as before: that makes no new state.
 *
 * New-flow guard: creating is limited per CPU to `rate` entries a second
 * (a token bucket of one second's worth), so that a flood of spoofed
 * packets cannot evict the established flows of a full table.  Above the
 * rate, new flows are still picked from the table and forwarded, but not
 * remembered, and counted (XLB_EV_CT_GUARD).  Mid-stream pickups are
 * refused first: they may take tokens only while more than half of the
 * bucket is left, SYNs and UDP down to the last token.  Credits count
 * in 1/hz of an entry, so the refill (ticks * rate) needs no division.
 * xlb_ct_guard is PERCPU_ARRAY[1]; libxlb writes `rate` to every CPU
 * (credits and stamp 0: a full bucket; refused kept); rate 0: no limit.
 */
#define XLB_CT_CREATE_NONE	0
#define XLB_CT_CREATE_PICKUP	1
#define XLB_CT_CREATE_NEW	2
#define XLB_CT_RATE_DEFAULT	20000	/* new entries a second, per CPU */
#define XLB_CT_RATE_MAX		100000000

struct xlb_ct_guard {
	__u64 credits;		/* 1/hz of an entry each */
	__u64 stamp;		/* bpf_jiffies64() of the last refill */
	__u32 rate;		/* entries a second on this CPU; 0: no limit */
	__u32 pad;
	__u64 refused;		/* new flows not remembered (XLB_EV_CT_GUARD) */
};

_Static_assert(sizeof(struct xlb_ct_guard) == 32, "xlb_ct_guard layout");

/*
 * Flow cache.  Per CPU, direct-mapped by an unkeyed fold of the flow
 * (xlb_fc_slot): the outcome of a packet that left by the fast path (IP
 * in IP, or GUE over IPv4), ready to be written again, so that the next
 * packets of the flow on this CPU skip the VIP index, the connection
 * table or table lookup, and the backend entry.  It only remembers what
 * those said: an entry is valid while
 *  - its gen equals xlb_gen, which libxlb increments after every write
 *    to the config, VIPs, tables, backends or connection table (the
 *    program reads xlb_gen before anything it caches, so a packet that
 *    sees the new generation also sees the new state), and
 *  - memory order: that last promise is a release/acquire pair.  libxlb's
 *    increment is an atomic read-modify-write with (at least) release
 *    order, after its writes; the program's read of xlb_gen is followed
 *    by an acquire fence (acquire_fence in xlb.bpf.c) before it reads any
 *    state it fills an entry from.  Without the fence a CPU that reorders
 *    loads (arm64; not x86) could read the VIP, table or backend before
 *    xlb_gen, see the new generation with the old state, and fill an
 *    entry that sends a flow by the old state (to a backend removed, say)
 *    until the entry expires (1/XLB_FC_LIFE s) or the next change; and
 *  - it was filled less than 1/XLB_FC_LIFE of a second ago
 *    (xlb_config.hz ticks): then the packet takes the whole path again,
 *    which refreshes the connection entry's last_seen (UDP idle expiry,
 *    bucket LRU) and the cache entry.
 * It changes no answer: a stateless VIP's flow still goes where
 * table[hash % M] says, a stateful VIP's where its connection entry says.
 * What goes in: a stateless VIP's flows from their first packet, a
 * stateful VIP's from their first connection-table hit, not from the
 * packet that made the entry (a flood of new flows does not push out
 * established ones); and a live entry gives way only to the
 * XLB_FC_STAY-th other flow that misses on its slot (counted in
 * `misses`, cleared by each of its hits).  Unkeyed, because it decides
 * nothing: flows aimed at one slot only take the whole path.  512 slots
 * of 128 bytes (64 KiB a CPU): with 4096 (512 KiB) every miss cost more,
 * a stateless VIP's new flow most (docs/datapath.md).
 */
#define XLB_FC_SLOTS		512
#define XLB_FC_LIFE		2	/* an entry lives 1/XLB_FC_LIFE s */
#define XLB_FC_STAY		4
#define XLB_FC_F_STATEFUL	1	/* count connection-table hits */
#define XLB_FC_F_GUE		2	/* GUE over IPv4 (UDP checksum 0) */

/* GUE over IPv4: UDP, GUE header and the hop list of two addresses. */
#define XLB_FC_GUE4_LEN		(8 + 16)

struct xlb_fc_entry {
	struct xlb_flow flow;	/* as received */
	__u32 gen;		/* xlb_gen when filled */
	__u32 ifindex;		/* egress = ingress required; 0: any */
	__u64 expires;		/* bpf_jiffies64() at which it is stale */
	__u16 vip;		/* VIP id (counters) */
	__u16 backend;		/* backend id (counters) */
	__u16 max_len;		/* largest inner IP packet that fits the MTU */
	__u8 family;		/* outer: XLB_FAMILY_INET(6) */
	__u8 flags;		/* XLB_FC_F_* */
	__u8 mac[12];		/* Ethernet destination, source */
	__u32 sum;		/* IPv4 outer: frag + ttl/proto + addresses */
	union {
		struct {
			__be32 src, dst;
			__be32 ports;	/* GUE: UDP source, destination */
			__u8 gue[16];	/* GUE: header, hop list */
		} v4;
		struct {
			__be32 src[4], dst[4];
			__u32 label;	/* flow label (hash & 0xfffff) */
		} v6;
	} o;			/* outer headers by family */
	__u8 ttl;		/* outer TTL / hop limit */
	__u8 proto;		/* outer next protocol: IPIP, IPV6 or UDP */
	__u8 misses;		/* other flows' misses since its last hit */
	__u8 pad[9];
};

_Static_assert(sizeof(struct xlb_fc_entry) == 128, "two cache lines");
_Static_assert((XLB_FC_SLOTS & (XLB_FC_SLOTS - 1)) == 0,
	       "flow cache size a power of two");

/* Slot of a flow in the flow cache: a fold of its five words. */
static __always_inline __u32 xlb_fc_slot(const struct xlb_flow *f)
{
	const __u64 *w = (const __u64 *)f;
	__u64 h = (w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4]) * 0x9e3779b97f4a7c15ULL;

	return (__u32)(h >> 32) & (XLB_FC_SLOTS - 1);
}

/* A connection entry as libxlb's API shows it (xlb_dp_ct_lookup). */
struct xlb_ct {
	__u64 last_seen;	/* bpf_jiffies64(): kernel ticks (user/lib/clock.h) */
	__u32 epoch;		/* backend epoch when the entry was made */
	__u32 hash;		/* flow hash: GUE source port, flow label */
	__u16 backend;
	__u16 vip;		/* VIP id */
	__u8 closed;		/* a FIN or RST was seen (XLB_CT_VIP_CLOSED) */
	__u8 pad[3];
};

_Static_assert(sizeof(struct xlb_ct) == 24, "xlb_ct layout");

struct xlb_counter {
	__u64 packets;
	__u64 bytes;
};

struct xlb_vip_stats {
	__u64 packets;
	__u64 bytes;
	__u64 new_flows;
	__u64 ct_hits;
	__u64 ct_misses;
	__u64 cache_hits;	/* sent from the flow cache (also ct_hits if stateful) */
};

/* What happened to packets besides being forwarded: drops by reason, etc. */
enum xlb_event {
	XLB_EV_MALFORMED = 0,	/* drop: headers cut short or inconsistent */
	XLB_EV_FRAGMENT,	/* drop: non-first fragment of a 5-tuple VIP */
	XLB_EV_NO_BACKEND,	/* drop: empty table or unusable backend */
	XLB_EV_TOO_BIG,		/* answered with ICMP frag-needed/too-big */
	XLB_EV_NO_ROUTE,	/* drop: FIB lookup found no route */
	XLB_EV_NO_NEIGH,	/* drop: next hop has no neighbour entry */
	XLB_EV_UNSUPPORTED,	/* drop: e.g. ICMP error we cannot steer */
	XLB_EV_NO_TABLE,	/* drop: VIP without a published table */
	XLB_EV_ICMP_STEERED,	/* ICMP error sent to the flow's backend */
	XLB_EV_ICMP_ECHO,	/* echo request to a VIP address answered */
	/* too big for the tunnel, and not answered (see "Too big" below): */
	XLB_EV_TOO_BIG_STACK,	/* IPv4 without DF or a fragment: tunnelled
				 * with DF clear, to the kernel to fragment */
	XLB_EV_TOO_BIG_SILENT,	/* drop: no answer allowed (ICMP error,
				 * not unicast, IPv4 over an IPv6 tunnel) */
	XLB_EV_TOO_BIG_LIMITED,	/* drop: answer over the rate limit */
	XLB_EV_BOUNDED,		/* new flow sent to the slot's secondary:
				 * its primary was full (bounded loads) */
	XLB_EV_IN_MAP,		/* the events above are xlb_events' entries */
	/*
	 * Forwarded, but no connection entry made: over the new-flow rate.
	 * Counted in xlb_ct_guard (refused), where the program has the
	 * counter at hand; libxlb reports it with the others.
	 */
	XLB_EV_CT_GUARD = XLB_EV_IN_MAP,
	XLB_EV_MAX,
};

/*
 * Too big.  A packet that does not fit the tunnel (IP length + overhead >
 * xlb_config.mtu) cannot be fragmented in XDP (one frame in, one out):
 *  - IPv4 without DF, or any IPv4 fragment (a sender that allows
 *    fragmentation, or has already used it), over an IPv4 tunnel: the
 *    packet is tunnelled with the outer DF clear and passed to the
 *    kernel (XDP_PASS), which forwards it toward the backend and
 *    fragments the outer packet; the backend reassembles it before it
 *    decapsulates.  This needs IPv4 forwarding on the LB and, since the
 *    outer source is the LB's own address, accept_local on the
 *    interface the packet came in on (docs/pmtu.md).  Over an IPv6
 *    tunnel it is dropped: IPv6 is never fragmented on the way, and the
 *    LB's kernel would only answer itself.
 *  - everything else (IPv4 with DF, IPv6, fragments included, whose
 *    source alone may fragment, RFC 8200 section 5) is answered with ICMP
 *    fragmentation needed / ICMPv6 packet too big, with the MTU the
 *    client must use, except: ICMP errors (RFC 1122 3.2.2, RFC 4443
 *    2.4 e), packets whose source is not one host or that came as
 *    link-layer broadcast or multicast (ibid.); and at most
 *    XLB_ICMP_RATE answers a second per CPU, in bursts of up to
 *    XLB_ICMP_BURST (the kernel's icmp_msgs_per_sec and
 *    icmp_msgs_burst).  The bucket is per CPU and holds time, not
 *    tokens: credit grows with the clock (bpf_ktime_get_ns) since
 *    `stamp`, up to XLB_ICMP_BURST answers' worth, and each answer
 *    spends XLB_ICMP_COST; a stamp ahead of the clock adds nothing.
 * A frame whose IP length is above the MTU of the link it came in on is
 * no packet from the wire but a GRO aggregate (generic XDP is given them
 * whole): dropped, neither answered nor tunnelled (too_big_silent).
 * IPv6 clients must be told at least 1280 (RFC 8200): libxlb refuses an
 * mtu that would tell them less.
 */
#define XLB_ICMP_RATE		1000	/* answers a second, per CPU */
#define XLB_ICMP_BURST		50
#define XLB_ICMP_COST		(1000000000ULL / XLB_ICMP_RATE)	/* ns */
#define XLB_IPV6_MIN_MTU	1280

struct xlb_icmp_bucket {
	__u64 stamp;		/* bpf_ktime_get_ns() of the last refill */
	__u64 credit;		/* ns, at most XLB_ICMP_BURST * XLB_ICMP_COST */
};

_Static_assert(sizeof(struct xlb_icmp_bucket) == 16, "xlb_icmp_bucket layout");

/* Table header (bpf/table.h): word 0 of every table carries M. */
static inline __u32 xlb_table_hdr_size(__u32 hdr)
{
	return hdr & XLB_TABLE_HDR_SIZE;
}

static inline __u32 xlb_table_hdr(__u32 m)
{
	return m & XLB_TABLE_HDR_SIZE;
}

_Static_assert(XLB_TABLE_SIZE_MAX <= XLB_TABLE_HDR_SIZE, "M fits the header");

/*
 * GUE (draft-ietf-intarea-gue) variant 0 as xlb sends it:
 *   UDP (sport from the flow hash, dport xlb_config.gue_port)
 *   struct xlb_gue_hdr, hlen = 1 + XLB_HOPS * words per address
 *   struct xlb_gue_hops + XLB_HOPS addresses of the outer family
 *   the original IP packet
 * The GUE flags are 0: every optional byte that hlen covers is then
 * private data, which is where the hop list lives; Linux's fou skips such
 * bytes, so kernel decapsulation accepts xlb's GUE as it is (the GUE
 * "private" flag would make fou parse the hop list as private flags and
 * drop the packet).  Room for XLB_HOPS addresses is always there; `count`
 * says how many are valid ([primary] or [primary, secondary]; a secondary
 * of another family than the outer one is left out).  `index` names the
 * hop the packet is addressed to now (0 when it leaves the LB);
 * xlb_redirect advances it when it forwards.
 */
#define XLB_HOPS		2
#define XLB_GUE_FLAGS		0x0000
#define XLB_GUE_HOPS_MAGIC	0x78	/* 'x' */

struct xlb_gue_hdr {
	__u8 hlen_cver;		/* version 0 (top 2 bits), C 0, hlen (5 bits) */
	__u8 proto;		/* inner: IPPROTO_IPIP or IPPROTO_IPV6 */
	__be16 flags;		/* XLB_GUE_FLAGS */
};

/*
 * The parts of hlen_cver, for every reader of xlb's GUE (the decap
 * program, xlb_redirect): the version, C (a control message, not data)
 * and hlen, the 4-byte words of optional fields after the header.
 */
#define XLB_GUE_VERSION(b)	((b) >> 6)
#define XLB_GUE_C(b)		((b) & 0x20)
#define XLB_GUE_HLEN(b)		((b) & 0x1f)

struct xlb_gue_hops {
	__u8 magic;		/* XLB_GUE_HOPS_MAGIC */
	__u8 count;		/* addresses that follow */
	__u8 index;		/* current hop */
	__u8 family;		/* of the addresses: XLB_FAMILY_INET(6) */
};

/* Indices of the decap program's decap_stats (struct xlb_counter each). */
enum xlb_decap_stat {
	XLB_DECAP_DONE = 0,	/* decapsulated, inner packet passed */
	XLB_DECAP_MALFORMED,	/* tunnel packet cut short or inconsistent */
	XLB_DECAP_PASSED,	/* not a tunnel packet, passed unchanged */
	XLB_DECAP_NOT_LOCAL,	/* tunnel packet not addressed to this host:
				 * passed unchanged */
	XLB_DECAP_STATS,
};

_Static_assert(sizeof(struct xlb_gue_hdr) == 4, "GUE header is 4 bytes");
_Static_assert(sizeof(struct xlb_gue_hops) == 4, "hop list header");

#endif /* XLB_STRUCTS_H */
