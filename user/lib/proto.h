/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol between xlbctl (or any client) and xlbd.
 *
 * Transport: a Unix stream socket (default XLB_SOCKET_DEFAULT, mode 0660).
 * One request per connection is the common case, but a client may send
 * several in a row.  A message is one JSON object (json-c) followed by a
 * newline; at most XLB_MSG_MAX bytes including the newline from a peer
 * that may change state, XLB_MSG_READ_MAX from others.  The daemon
 * answers every request with exactly one message, in order; a request is
 * handled once the answer before it was read.  A message that is too
 * large, not finished within XLB_MSG_TIMEOUT_MS of its first byte, or has
 * more than XLB_MSG_CONTAINERS_MAX objects and arrays, more elements than
 * a request takes, or nesting deeper than XLB_MSG_DEPTH, gets an error
 * answer (when it can still be written) and the connection is closed, as
 * is a connection idle that long or whose answer is not read for that
 * long; the daemon state is unchanged.  Of the daemon's client slots, a
 * few are kept for peers that may change state.
 *
 * Request:   {"version": 1, "cmd": CMD, ...arguments}
 * Answer:    {"version": 1, "ok": true, "result": {...}}
 *         or {"version": 1, "ok": false, "error": "sentence"}
 *
 * A request with another version is refused ("unsupported protocol version
 * N; this xlbd speaks 1").  Unknown commands and unknown or mistyped
 * arguments are refused by name.
 *
 * Mutating commands (exec, restore, reload, shutdown) and explain need a
 * peer (SO_PEERCRED) with uid 0 or the gid xlbd was given with --group,
 * as its primary or a supplementary group (SO_PEERGROUPS); others get
 * "permission denied: ...".  The other reads are open to whoever can
 * connect; their "save" has the "set key" line replaced by a comment.
 *
 * Commands and their results:
 *
 *  "exec"     {"args": [TOKEN, ...]}  or  {"lines": ["cmd line", ...]}
 *             One command in the xlb grammar (user/lib/config.h) as argv
 *             tokens, or several command lines applied as one transaction.
 *             result: {"changed": bool, "generation": N, "live_ms"?: ms,
 *             "phases_ms"?: {...}}
 *             (generation: the daemon's global generation after the change;
 *             live_ms: from the request's arrival until the last table it
 *             changed was published, when it changed one.  The answer
 *             itself comes after the configuration is saved too.
 *             phases_ms, when it changed: where the time went, in ms:
 *             parse (request to a checked new state), commit (the commit
 *             without its tables), build and publish (the longest of
 *             each), pool (the builds and publications' wall time),
 *             reconcile (the rest of bringing tables up to date), save
 *             (the durable save), runtime_save (the last runtime file
 *             written), answer (request arrival to this answer).)
 *  "restore"  {"text": CONFIG, "name": "FILE"}: replace the whole desired
 *             state by the config text, as one transaction.  Errors name
 *             FILE:LINE:COLUMN.  result as exec.
 *  "reload"   {}: restore from the daemon's config file.  result as exec,
 *             plus "file".
 *  "save"     {}: result {"text": CANONICAL CONFIG} (to a reader,
 *             "# set key: shown to root and the daemon's group only"
 *             instead of the key)
 *  "shutdown" {}: detach every link, unpin, exit.  result {}.
 *  "status"   {}: result {"version": "x.y", "pid", "instance", "uptime_s",
 *             "generation", "config_file", "state_file", "pin_dir",
 *             "adopted": bool (this daemon adopted pinned state at start),
 *             "tables_unverified": n (adopted tables not yet read back
 *             and checked against the runtime file's fingerprint: until
 *             then vip.show gives that file's fingerprint and in_table;
 *             table.show and explain read and check a table first, and
 *             the daemon checks the rest in its spare turns, publishing
 *             again any that differ),
 *             "conntrack_capacity": n (flows the connection table holds),
 *             "vips": n, "backends": n,
 *             "failover": {"downs", "ups" (health verdicts written to
 *             the data path's member records at once), "last_ms",
 *             "max_ms" (down verdict -> member record stored, the last
 *             and the longest), "last_at" (unix seconds)},
 *             "bound_marks": n (member records marked full or cleared
 *             by bounded loads since start),
 *             "links": [LINK...], "start_ms": {...}}
 *             (start_ms: where this daemon's start went, in ms from
 *             main() on: init (options, lock, libraries), state (the
 *             saved state or config file read), metrics, data_path (loaded
 *             or opened from its pins), runtime (the runtime file read),
 *             adopt (ids and VIPs read from the pinned maps), commit (the
 *             first commit without its tables), tables (adopted or
 *             published), rest (announce, counters), listen (until the
 *             control socket listens), loop (threads started, privileges
 *             dropped), answer (main() -> the loop's first turn); 0 for
 *             a phase a fresh start skips)
 *  "link.show" {}: result {"links": [LINK...]}
 *             LINK = {"ifname", "ifindex", "mode": "native"|"generic",
 *                     "attached": bool, "prog_id": n, "error"?: "...",
 *                     "packets": n, "actions": {"aborted", "drop",
 *                     "pass", "tx", "redirect"} (packets that came in
 *                     on it, a bond's slaves' included), "lower"?:
 *                     [{"ifname", "ifindex", "packets", "actions"}] (a
 *                     bond's slaves), "counters_shared_with"?: [ifname]}
 *  "vip.show" {"vip": "VIP"} (optional): result {"vips": [VIP...]}
 *             VIP = {"vip": "10.0.0.1:80/tcp", "id", "algo": "maglev"|"ring",
 *                    "table_size", "vnodes", "hash": "5tuple"|"3tuple"|"src",
 *                    "encap": "ipip"|"gue", "stateless": bool, "panic": pct,
 *                    "src4"?: addr, "src6"?: addr, "health": HEALTH,
 *                    "backends": n, "healthy": n, "in_table": n,
 *                    "panic_active": bool, "generation", "fingerprint":
 *                    "0x%016llx", "changed_at": unix seconds (float),
 *                    "memory_bytes": bytes the VIP's table map costs,
 *                    "stats": {"packets", "bytes", "new_flows", "ct_hits",
 *                              "ct_misses", "cache_hits"},
 *                    "quic"?: {"cr", "sid_len", "nonce_len", "stats":
 *                              {"by_cid", "long_header", "unknown_id",
 *                               "other_config", "short_packet"}}
 *                              (VIPs marked quic, bpf/quic.h)}
 *             HEALTH = {"kind": "tcp"|"http"|"udp"|"none"|"inherit",
 *                       "port", "interval_ms", "timeout_ms", "rise", "fall",
 *                       "http_path", "http_status"}
 *  "backend.show" {"vip": "VIP"}: result {"vip": "VIP", "backends": [BE...]}
 *             BE = {"addr", "name", "id", "weight", "state":
 *                   "active"|"drain"|"down", "health": "up"|"down"|"unknown" (up: no check),
 *                   "check": HEALTH (effective), "last_check":
 *                   {"ok": bool, "detail": "...", "at": unix s} | null,
 *                   "in_table": bool, "slots", "share" (0..1),
 *                   "packets", "bytes", "quic_id"?: "hex"}
 *  "table.show" {"vip": "VIP"}: result {"vip", "algo", "table_size",
 *             "generation", "fingerprint", "changed_at", "backends_max_avg"
 *             (max slots / average slots over backends in the table),
 *             "backends": [{"name", "addr", "id", "slots", "share",
 *                           "ideal_share"}],
 *             "warning"?: "sentence" (e.g. M < 100 x backends)}
 *  "explain"  {"flow": "tcp 198.51.100.7:40000 -> 192.0.2.10:80"
 *             [" dcid HEX" for a QUIC short header]}
 *             result {"flow": canonical flow, "vip"?: "VIP", "verdict":
 *             "pass"|"drop"|"forward", "reason": "sentence",
 *             "hash", "slot", "table_size",
 *             "primary"?: {"id", "name", "addr"},
 *             "secondary"?: {"id", "name", "addr"},
 *             "conntrack"?: {"backend": {...}, "age_ms", "valid": bool},
 *             "quic"?: {"config", "dcid"?, "server_id"?, "outcome":
 *                       "by_cid" or why not (a sentence)},
 *             "backend"?: {...} (the one the packet goes to)}
 *  "stats"    {"vip": "VIP"} (optional): result {"time": unix s (float),
 *             "vips": [{"vip", "packets", "bytes", "new_flows", "ct_hits",
 *                       "ct_misses", "cache_hits" (packets sent from the
 *                       flow cache; for stateful VIPs also in ct_hits),
 *                       "backends": [{"name", "addr", "packets",
 *                       "bytes"}]}],
 *             "events": {"malformed": n, ...}, "actions": {"aborted",
 *             "drop", "pass", "tx", "redirect"},
 *             "conntrack_entries"?: n, "conntrack_age_s"?: s (the table
 *             is counted off the loop, every 10 s or more: n as of the
 *             count that ended s ago; neither before the first count),
 *             "conntrack_capacity": n}
 *             Counters are totals since the maps were created; clients
 *             compute rates from two answers.
 *  "cluster.status" {}: in cluster mode (xlbd --etcd --cluster), result
 *             CLUSTER plus {"newest_revision", "hosts_alive", "agree":
 *             bool, "hosts": [{"host", "state": "ok"|"disagrees"|
 *             "behind"|"silent", "silent_since"?, and the host's record:
 *             "revision", "applied_at", "vips": {"VIP": "0x%016llx"},
 *             "down": ["VIP ADDR"...], "refused"?: "sentence", "pid",
 *             "version"}]}; without cluster mode an error.
 *             CLUSTER = {"name", "host", "revision", "applied_at",
 *             "etcd": {"endpoints", "up": bool, "since", "error"?},
 *             "refused"?: {"error": "key K (revision R) line L column C:
 *             ...", "at"}}; "status" carries it as "cluster".
 *  "host.show" {}: result ANNOUNCE = {"table" (0: announce off),
 *             "protocol", "drained": bool, "state": "off"|"drained"|
 *             "withdrawn"|"announcing", "reason"?, "announced": n,
 *             "announcements", "withdrawals", "errors", "last_error"?,
 *             "addresses": [{"address", "announced": bool, "reason"?}]};
 *             "status" carries it as "announce".
 *  "host.drain" {} / "host.undrain" {}: withdraw every VIP route and keep
 *             forwarding / announce again (kept across restarts); result
 *             ANNOUNCE.
 *
 * Cluster mode changes "exec" and "restore" of the cluster's shared
 * configuration: they are written to etcd, and the answer (result
 * {"changed", "revision", "written_at", "written_ms", "live_ms"?,
 * "generation", "warning"?}) comes once this host runs the revision
 * written.  A write that lost its compare-and-swap is refused with an
 * error holding "changed meanwhile" (xlbctl exits 3 on it); nothing was
 * written.
 */
#ifndef XLB_PROTO_H
#define XLB_PROTO_H

#define XLB_PROTO_VERSION	1
#define XLB_SOCKET_DEFAULT	"/run/xlb/xlbd.sock"
#define XLB_MSG_MAX		(32u << 20)	/* bytes, newline included: a whole
					 * config file, JSON-escaped */
#define XLB_MSG_TIMEOUT_MS	5000
#define XLB_MSG_READ_MAX	(16u << 10)	/* bytes from a peer that may
					 * only read: what reads need */
#define XLB_MSG_CONTAINERS_MAX	8	/* objects and arrays in a request */
#define XLB_MSG_DEPTH		3	/* json-c's nesting bound: a request,
					 * an object of arrays of strings,
					 * nests two deep */
#define XLB_MSG_LINES_MAX	100000	/* elements of "lines" */

#endif /* XLB_PROTO_H */
