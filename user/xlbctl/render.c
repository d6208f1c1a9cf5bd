// SPDX-License-Identifier: GPL-2.0
/*
 * Human views of read results (fields as in user/lib/proto.h).  Tables have a
 * header and aligned columns; numbers carry units (shares in percent with
 * one decimal, memory and bytes in KiB/MiB, times as ages).  A field the
 * daemon did not send shows as "-".
 */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <string.h>

#include "columns.h"
#include "result.h"
#include "units.h"
#include "xlbctl.h"

#define SLOTS_PER_BACKEND_MIN	100	/* Maglev's rule of thumb: M >= 100 N */

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

/* --- links ---------------------------------------------------------------- */

/* PACKETS and its actions: the link's own where it has none of its own. */
static void link_packets(struct cols *t, json_object *l, uint64_t packets)
{
	json_object *a = r_get(l, "actions");

	if (!a) {
		cols_cell(t, "-");
		cols_cell(t, "-");
		cols_cell(t, "-");
		cols_cell(t, "-");
		cols_cell(t, "-");
		return;
	}
	cols_cell(t, "%" PRIu64, packets);
	cols_cell(t, "%" PRIu64, r_u64(a, "tx", 0));
	cols_cell(t, "%" PRIu64, r_u64(a, "redirect", 0));
	cols_cell(t, "%" PRIu64, r_u64(a, "pass", 0));
	cols_cell(t, "%" PRIu64, r_u64(a, "drop", 0) + r_u64(a, "aborted", 0));
}

void render_links(FILE *f, json_object *links)
{
	struct cols *t;
	json_object *l;
	size_t i;

	if (!r_len(links)) {
		fputs("no links; attach one with: xlbctl link attach IFNAME\n", f);
		return;
	}
	t = cols_new("IFNAME|IFINDEX|MODE|ATTACHED|PROG-ID|PACKETS|TX|REDIRECT|PASS|DROP",
		     "lrllrrrrrr");
	for (i = 0; i < r_len(links); i++) {
		json_object *lower;
		size_t k;

		l = r_at(links, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(l, "ifname", "-"));
		cols_cell(t, "%" PRId64, r_int(l, "ifindex", 0));
		cols_cell(t, "%s", r_str(l, "mode", "-"));
		cols_cell(t, "%s", yes_no(r_bool(l, "attached", false)));
		if (r_int(l, "prog_id", 0))
			cols_cell(t, "%" PRId64, r_int(l, "prog_id", 0));
		else
			cols_cell(t, "-");
		link_packets(t, l, r_u64(l, "packets", 0));
		/* a bond's slaves, where its packets come in */
		lower = r_arr(l, "lower");
		for (k = 0; k < r_len(lower); k++) {
			json_object *s = r_at(lower, k);

			cols_row(t);
			cols_cell(t, "  %s", r_str(s, "ifname", "-"));
			cols_cell(t, "%" PRId64, r_int(s, "ifindex", 0));
			cols_cell(t, "slave");
			cols_cell(t, "-");
			cols_cell(t, "-");
			link_packets(t, s, r_u64(s, "packets", 0));
		}
	}
	cols_print(t, f, "");
	cols_free(t);
	for (i = 0; i < r_len(links); i++) {
		json_object *sh = r_arr(r_at(links, i), "counters_shared_with");

		if (r_len(sh))
			fprintf(f, "note: %s counts together with %s (ifindex equal modulo %d)\n",
				r_str(r_at(links, i), "ifname", "-"),
				json_object_get_string(r_at(sh, 0)),
				XLB_LINK_SLOTS);
		if (r_has(r_at(links, i), "error"))
			fprintf(f, "%s: %s\n", r_str(r_at(links, i), "ifname", "-"),
				r_str(r_at(links, i), "error", ""));
	}
}

/* --- health --------------------------------------------------------------- */

/* "http GET /healthz 200, port 8080, every 2s, timeout 1s, rise 2, fall 3" */
static const char *health_str(json_object *h, char *buf, size_t len)
{
	const char *kind = r_str(h, "kind", "-");
	size_t off = 0;
	int64_t port;

	if (!h || !strcmp(kind, "none") || !strcmp(kind, "inherit")) {
		snprintf(buf, len, "%s", kind);
		return buf;
	}
	off += (size_t)snprintf(buf + off, len - off, "%s", kind);
	if (!strcmp(kind, "http"))
		off += (size_t)snprintf(buf + off, len - off, " GET %s expects %" PRId64,
					r_str(h, "http_path", "/"),
					r_int(h, "http_status", 200));
	port = r_int(h, "port", 0);
	if (port && off < len)
		off += (size_t)snprintf(buf + off, len - off, ", port %" PRId64,
					port);
	if (off < len)
		snprintf(buf + off, len - off,
			 ", every %g s, timeout %g s, rise %" PRId64 ", fall %" PRId64,
			 r_dbl(h, "interval_ms", 0) / 1000,
			 r_dbl(h, "timeout_ms", 0) / 1000, r_int(h, "rise", 0),
			 r_int(h, "fall", 0));
	return buf;
}

/* --- VIPs ----------------------------------------------------------------- */

static const char *vip_flags(json_object *v, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	if (r_bool(v, "stateless", false))
		off += (size_t)snprintf(buf + off, len - off, "stateless ");
	if (strcmp(r_str(v, "hash", "5tuple"), "5tuple") && off < len)
		off += (size_t)snprintf(buf + off, len - off, "hash-%s ",
					r_str(v, "hash", "-"));
	if (r_get(v, "quic") && off < len)
		off += (size_t)snprintf(buf + off, len - off, "quic ");
	if (r_bool(v, "panic_active", false) && off < len)
		off += (size_t)snprintf(buf + off, len - off, "PANIC ");
	if (off)
		buf[off - 1] = 0;
	else
		snprintf(buf, len, "-");
	return buf;
}

void render_vips(FILE *f, json_object *res)
{
	json_object *vips = r_arr(res, "vips"), *v;
	char u[3][UNIT_BUF], flags[64];
	double now = unix_now();
	struct cols *t;
	size_t i;

	if (!r_len(vips)) {
		fputs("no VIPs; add one with: xlbctl vip add VIP\n", f);
		return;
	}
	t = cols_new("VIP|ALGO|M|ENCAP|CHECK|BACKENDS|UP|IN-TABLE|GEN|FINGERPRINT|CHANGED|MEMORY|FLAGS",
		     "llrllrrrrllrl");
	for (i = 0; i < r_len(vips); i++) {
		v = r_at(vips, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(v, "vip", "-"));
		cols_cell(t, "%s", r_str(v, "algo", "-"));
		cols_cell(t, "%" PRId64, r_int(v, "table_size", 0));
		cols_cell(t, "%s", r_str(v, "encap", "-"));
		cols_cell(t, "%s", r_str(r_get(v, "health"), "kind", "-"));
		cols_cell(t, "%" PRId64, r_int(v, "backends", 0));
		cols_cell(t, "%" PRId64, r_int(v, "healthy", 0));
		cols_cell(t, "%" PRId64, r_int(v, "in_table", 0));
		cols_cell(t, "%" PRIu64, r_u64(v, "generation", 0));
		cols_cell(t, "%s", r_str(v, "fingerprint", "-"));
		cols_cell(t, "%s", fmt_age(r_dbl(v, "changed_at", 0), now, u[0]));
		cols_cell(t, "%s", fmt_bytes(r_u64(v, "memory_bytes", 0), u[1]));
		cols_cell(t, "%s", vip_flags(v, flags, sizeof(flags)));
	}
	cols_print(t, f, "");
	cols_free(t);
}

static void kv(FILE *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void kv(FILE *f, const char *key, const char *fmt, ...)
{
	va_list ap;

	fprintf(f, "%-12s ", key);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

static void vip_source(FILE *f, json_object *v)
{
	const char *s4 = r_str(v, "src4", NULL), *s6 = r_str(v, "src6", NULL);

	if (!s4 && !s6)
		kv(f, "source", "the global src4/src6");
	else
		kv(f, "source", "%s%s%s", s4 ? s4 : "", s4 && s6 ? ", " : "",
		   s6 ? s6 : "");
}

/* A quic VIP's configuration and what its packets did (bpf/quic.h). */
static void vip_quic(FILE *f, json_object *q)
{
	json_object *st;

	if (!q)
		return;
	kv(f, "quic", "QUIC-LB plaintext CIDs: rotation %" PRId64
	   ", server ID %" PRId64 " octets, nonce %" PRId64 " octets",
	   r_int(q, "cr", 0), r_int(q, "sid_len", 0), r_int(q, "nonce_len", 0));
	st = r_get(q, "stats");
	if (!st)
		return;
	kv(f, "quic routed", "%" PRIu64 " by connection ID; as any flow: %"
	   PRIu64 " long headers, %" PRIu64 " unknown IDs, %" PRIu64
	   " other configurations, %" PRIu64 " too short",
	   r_u64(st, "by_cid", 0), r_u64(st, "long_header", 0),
	   r_u64(st, "unknown_id", 0), r_u64(st, "other_config", 0),
	   r_u64(st, "short_packet", 0));
}

void render_vip_detail(FILE *f, json_object *v)
{
	json_object *st = r_get(v, "stats");
	char u[4][UNIT_BUF], h[192];
	double now = unix_now();

	kv(f, "vip", "%s (id %" PRId64 ")", r_str(v, "vip", "-"),
	   r_int(v, "id", 0));
	if (!strcmp(r_str(v, "algo", ""), "ring"))
		kv(f, "table", "ring, %" PRId64 " slots, %" PRId64 " vnodes",
		   r_int(v, "table_size", 0), r_int(v, "vnodes", 0));
	else
		kv(f, "table", "%s, %" PRId64 " slots", r_str(v, "algo", "-"),
		   r_int(v, "table_size", 0));
	kv(f, "hash", "%s", r_str(v, "hash", "-"));
	kv(f, "encap", "%s", r_str(v, "encap", "-"));
	kv(f, "connections", "%s", r_bool(v, "stateless", false) ?
	   "stateless (every packet takes the table)" :
	   "stateful (connection table)");
	if (r_get(v, "bound"))
		kv(f, "bound", "%.2f x the mean of active connections",
		   r_dbl(v, "bound", 0));
	kv(f, "panic", "above %" PRId64 "%% of backends down%s",
	   r_int(v, "panic", 0), r_bool(v, "panic_active", false) ?
	   ": ACTIVE, every backend stays in the table" : " (inactive)");
	vip_source(f, v);
	kv(f, "health", "%s", health_str(r_get(v, "health"), h, sizeof(h)));
	kv(f, "backends", "%" PRId64 ", %" PRId64 " healthy, %" PRId64
	   " in the table", r_int(v, "backends", 0), r_int(v, "healthy", 0),
	   r_int(v, "in_table", 0));
	kv(f, "generation", "%" PRIu64 ", changed %s", r_u64(v, "generation", 0),
	   fmt_age(r_dbl(v, "changed_at", 0), now, u[0]));
	kv(f, "fingerprint", "%s", r_str(v, "fingerprint", "-"));
	kv(f, "memory", "%s", fmt_bytes(r_u64(v, "memory_bytes", 0), u[1]));
	if (!st)
		return;
	kv(f, "traffic", "%" PRIu64 " packets, %s, %" PRIu64 " new flows",
	   r_u64(st, "packets", 0), fmt_bytes(r_u64(st, "bytes", 0), u[2]),
	   r_u64(st, "new_flows", 0));
	kv(f, "conntrack", "%" PRIu64 " hits, %" PRIu64 " misses",
	   r_u64(st, "ct_hits", 0), r_u64(st, "ct_misses", 0));
	kv(f, "flow cache", "%" PRIu64 " hits", r_u64(st, "cache_hits", 0));
	vip_quic(f, r_get(v, "quic"));
}

/* --- backends ------------------------------------------------------------- */

static const char *last_check(json_object *lc, double now, char *buf,
			      size_t len)
{
	char age[UNIT_BUF];

	if (!lc) {
		snprintf(buf, len, "-");
		return buf;
	}
	snprintf(buf, len, "%s %s, %s", r_bool(lc, "ok", false) ? "ok" : "failed",
		 r_str(lc, "detail", ""), fmt_age(r_dbl(lc, "at", 0), now, age));
	return buf;
}

/*
 * A backend's PACKETS and BYTES under a VIP: "shared" when its address
 * and encapsulation serve other VIPs too (the data path counts them
 * together: xlbctl stats lists them once).
 */
static void member_counters(struct cols *t, json_object *b,
			    char u[UNIT_BUF])
{
	if (!r_get(b, "packets")) {
		cols_cell(t, "shared");
		cols_cell(t, "shared");
		return;
	}
	cols_cell(t, "%" PRIu64, r_u64(b, "packets", 0));
	cols_cell(t, "%s", fmt_bytes(r_u64(b, "bytes", 0), u));
}

void render_backends(FILE *f, json_object *res)
{
	json_object *bes = r_arr(res, "backends"), *b;
	char u[2][UNIT_BUF], lc[160];
	double now = unix_now();
	struct cols *t;
	size_t i;

	fprintf(f, "VIP %s: %zu backend%s\n", r_str(res, "vip", "-"),
		r_len(bes), r_len(bes) == 1 ? "" : "s");
	if (!r_len(bes))
		return;
	t = cols_new("NAME|ADDR|ID|WEIGHT|STATE|HEALTH|CHECK|LAST CHECK|SLOTS|SHARE|CONNS|PACKETS|BYTES",
		     "llrrllllrrrrr");
	for (i = 0; i < r_len(bes); i++) {
		b = r_at(bes, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(b, "name", "-"));
		cols_cell(t, "%s", r_str(b, "addr", "-"));
		cols_cell(t, "%" PRId64, r_int(b, "id", 0));
		cols_cell(t, "%" PRId64, r_int(b, "weight", 0));
		cols_cell(t, "%s", r_str(b, "state", "-"));
		cols_cell(t, "%s", r_str(b, "health", "-"));
		cols_cell(t, "%s", r_str(r_get(b, "check"), "kind", "-"));
		cols_cell(t, "%s", last_check(r_get(b, "last_check"), now, lc,
					      sizeof(lc)));
		cols_cell(t, "%" PRId64, r_int(b, "slots", 0));
		cols_cell(t, "%s", r_bool(b, "in_table", false) ?
			  fmt_share(r_dbl(b, "share", NAN), u[0]) : "-");
		/* active connections; "full": over the VIP's bound */
		cols_cell(t, "%" PRId64 "%s", r_int(b, "connections", 0),
			  r_bool(b, "full", false) ? " full" : "");
		member_counters(t, b, u[1]);
	}
	cols_print(t, f, "");
	cols_free(t);
}

/* --- tables --------------------------------------------------------------- */

/* The smallest allowed table size with 100 slots per backend, or 0. */
static uint32_t size_for(size_t backends)
{
	uint64_t want = (uint64_t)backends * SLOTS_PER_BACKEND_MIN;
	size_t i;

	for (i = 0; i < xlb_table_sizes_count; i++)
		if (xlb_table_sizes[i] >= want)
			return xlb_table_sizes[i];
	return 0;
}

/* Backends that hold slots. */
static size_t in_table(json_object *bes)
{
	size_t i, n = 0;

	for (i = 0; i < r_len(bes); i++)
		n += r_int(r_at(bes, i), "slots", 0) > 0;
	return n;
}

static void table_note(FILE *f, json_object *res, size_t n)
{
	uint64_t m = r_u64(res, "table_size", 0);
	uint32_t better;

	if (!n || !m || m >= (uint64_t)n * SLOTS_PER_BACKEND_MIN)
		return;
	better = size_for(n);
	fprintf(f,
		"note: M = %" PRIu64 " is less than 100 x %zu backends in the table: balance is coarse%s",
		m, n, strcmp(r_str(res, "algo", ""), "maglev") ? "" :
		" and Maglev moves more flows than needed when a backend comes or goes");
	if (better)
		fprintf(f, "; consider table-size %u\n", better);
	else
		fputs("\n", f);
}

void render_table(FILE *f, json_object *res)
{
	json_object *bes = r_arr(res, "backends"), *b;
	char u[3][UNIT_BUF];
	double share, ideal;
	size_t i;
	struct cols *t;

	fprintf(f, "VIP %s: %s, %" PRId64 " slots\n", r_str(res, "vip", "-"),
		r_str(res, "algo", "-"), r_int(res, "table_size", 0));
	fprintf(f, "generation %" PRIu64 ", fingerprint %s, changed %s\n",
		r_u64(res, "generation", 0), r_str(res, "fingerprint", "-"),
		fmt_age(r_dbl(res, "changed_at", 0), unix_now(), u[0]));
	if (r_len(bes)) {
		t = cols_new("NAME|ADDR|ID|SLOTS|SHARE|IDEAL|DEVIATION",
			     "llrrrrr");
		for (i = 0; i < r_len(bes); i++) {
			b = r_at(bes, i);
			share = r_dbl(b, "share", NAN);
			ideal = r_dbl(b, "ideal_share", NAN);
			cols_row(t);
			cols_cell(t, "%s", r_str(b, "name", "-"));
			cols_cell(t, "%s", r_str(b, "addr", "-"));
			cols_cell(t, "%" PRId64, r_int(b, "id", 0));
			cols_cell(t, "%" PRId64, r_int(b, "slots", 0));
			cols_cell(t, "%s", fmt_share(share, u[1]));
			cols_cell(t, "%s", fmt_share(ideal, u[2]));
			if (ideal > 0 && !isnan(share))
				cols_cell(t, "%+.1f%%", (share / ideal - 1) * 100);
			else
				cols_cell(t, "-");
		}
		cols_print(t, f, "");
		cols_free(t);
		fprintf(f, "max/avg %.3f\n", r_dbl(res, "backends_max_avg", NAN));
	} else {
		fputs("the table is empty: no backend is usable\n", f);
	}
	if (r_has(res, "warning"))
		fprintf(f, "warning: %s\n", r_str(res, "warning", ""));
	else
		table_note(f, res, in_table(bes));
}

static void cluster_lines(FILE *f, json_object *cl);

/* --- host (announcements) ------------------------------------------------- */

static void announce_line(FILE *f, json_object *a)
{
	if (!r_int(a, "table", 0)) {
		kv(f, "announce", "off (set announce table N)");
		return;
	}
	kv(f, "announce", "%s: %" PRId64 " VIP addresses in table %" PRId64
	   " (protocol %" PRId64 ")%s%s", r_str(a, "state", "-"),
	   r_int(a, "announced", 0), r_int(a, "table", 0),
	   r_int(a, "protocol", 0), r_get(a, "reason") ? ", " : "",
	   r_str(a, "reason", ""));
	if (r_get(a, "last_error"))
		kv(f, "announce error", "%s (%" PRId64 " in all)",
		   r_str(a, "last_error", "-"), r_int(a, "errors", 0));
}

void render_host(FILE *f, json_object *res)
{
	json_object *addrs = r_arr(res, "addresses"), *o;
	struct cols *t;
	size_t i;

	announce_line(f, res);
	kv(f, "changes", "%" PRId64 " announced, %" PRId64 " withdrawn",
	   r_int(res, "announcements", 0), r_int(res, "withdrawals", 0));
	t = cols_new("ADDRESS|ANNOUNCED|NOTE", "lll");
	for (i = 0; i < r_len(addrs); i++) {
		o = r_at(addrs, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(o, "address", "-"));
		cols_cell(t, "%s", r_bool(o, "announced", false) ? "yes" : "no");
		cols_cell(t, "%s", r_str(o, "reason", ""));
	}
	cols_print(t, f, "");
	cols_free(t);
}

/* --- status --------------------------------------------------------------- */

void render_status(FILE *f, json_object *res)
{
	json_object *links = r_arr(res, "links");
	char u[UNIT_BUF];

	fprintf(f, "xlbd %s, pid %" PRId64 ", instance %s, up %s\n",
		r_str(res, "version", "-"), r_int(res, "pid", 0),
		r_str(res, "instance", "-"),
		fmt_duration(r_dbl(res, "uptime_s", 0), u));
	kv(f, "generation", "%" PRIu64, r_u64(res, "generation", 0));
	kv(f, "vips", "%" PRId64, r_int(res, "vips", 0));
	kv(f, "backends", "%" PRId64, r_int(res, "backends", 0));
	if (r_get(res, "conntrack_capacity"))
		kv(f, "conntrack", "%" PRIu64 " flows at most",
		   r_u64(res, "conntrack_capacity", 0));
	kv(f, "config", "%s", r_str(res, "config_file", "-"));
	kv(f, "state", "%s", r_str(res, "state_file", "-"));
	kv(f, "pins", "%s (%s)", r_str(res, "pin_dir", "-"),
	   r_bool(res, "adopted", false) ?
	   "adopted from the previous xlbd" : "created by this xlbd");
	if (r_get(res, "failover") &&
	    r_u64(r_get(res, "failover"), "downs", 0))
		kv(f, "failover", "%" PRIu64 " backends down in the data path at the verdict, last in %.3f ms, at most %.3f ms",
		   r_u64(r_get(res, "failover"), "downs", 0),
		   r_dbl(r_get(res, "failover"), "last_ms", 0),
		   r_dbl(r_get(res, "failover"), "max_ms", 0));
	if (r_u64(res, "bound_marks", 0))
		kv(f, "bound", "%" PRIu64 " members marked full or cleared",
		   r_u64(res, "bound_marks", 0));
	if (r_get(res, "cluster"))
		cluster_lines(f, r_get(res, "cluster"));
	if (r_get(res, "announce"))
		announce_line(f, r_get(res, "announce"));
	fputs("links:\n", f);
	render_links(f, links);
}

/* --- cluster -------------------------------------------------------------- */

static void cluster_lines(FILE *f, json_object *cl)
{
	json_object *e = r_get(cl, "etcd"), *r = r_get(cl, "refused");
	double now = unix_now();
	char u[UNIT_BUF];

	kv(f, "cluster", "%s, this host %s", r_str(cl, "name", "-"),
	   r_str(cl, "host", "-"));
	if (r_dbl(cl, "applied_at", 0) > 0)
		kv(f, "revision", "%" PRId64 ", applied %s", r_int(cl, "revision", 0),
		   fmt_age(r_dbl(cl, "applied_at", 0), now, u));
	else
		kv(f, "revision", "%" PRId64 " (as saved; none applied since the start)",
		   r_int(cl, "revision", 0));
	if (r_bool(e, "up", false))
		kv(f, "etcd", "%s: up", r_str(e, "endpoints", "-"));
	else
		kv(f, "etcd", "%s: UNREACHABLE for %s: %s; changes are refused, forwarding goes on",
		   r_str(e, "endpoints", "-"),
		   fmt_duration(r_dbl(e, "since", now) ? now - r_dbl(e, "since", now) : 0, u),
		   r_str(e, "error", "not reached yet"));
	if (r)
		kv(f, "REFUSED", "%s (since %s; running the last good revision)",
		   r_str(r, "error", "-"), fmt_age(r_dbl(r, "at", 0), now, u));
}

/* "announcing 2 in table 100", "DRAINED", "withdrawn", "off" */
static void announce_cell(struct cols *t, json_object *a)
{
	const char *st = r_str(a, "state", "-");

	if (!a)
		cols_cell(t, "-");
	else if (!strcmp(st, "announcing"))
		cols_cell(t, "announcing %" PRId64 " in table %" PRId64,
			  r_int(a, "announced", 0), r_int(a, "table", 0));
	else if (!strcmp(st, "drained"))
		cols_cell(t, "DRAINED (%" PRId64 " announced)",
			  r_int(a, "announced", 0));
	else
		cols_cell(t, "%s", st);
}

void render_cluster(FILE *f, json_object *res)
{
	json_object *hosts = r_arr(res, "hosts"), *h;
	double now = unix_now();
	char u[UNIT_BUF];
	struct cols *t;
	size_t i;

	cluster_lines(f, res);
	kv(f, "hosts", "%" PRId64 " alive, newest revision %" PRId64 ", %s",
	   r_int(res, "hosts_alive", 0), r_int(res, "newest_revision", 0),
	   r_bool(res, "agree", false) ? "all agree" :
	   "NOT all in agreement");
	t = cols_new("HOST|STATE|REVISION|APPLIED|VIPS|DOWN|ANNOUNCE|NOTE",
		     "llrlrrll");
	for (i = 0; i < r_len(hosts); i++) {
		h = r_at(hosts, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(h, "host", "-"));
		cols_cell(t, "%s", r_str(h, "state", "-"));
		if (!strcmp(r_str(h, "state", ""), "silent")) {
			cols_cell(t, "-");
			cols_cell(t, "-");
			cols_cell(t, "-");
			cols_cell(t, "-");
			cols_cell(t, "-");
			cols_cell(t, "silent for %s",
				  fmt_duration(now - r_dbl(h, "silent_since", now), u));
			continue;
		}
		cols_cell(t, "%" PRId64, r_int(h, "revision", 0));
		cols_cell(t, "%s", r_dbl(h, "applied_at", 0) > 0 ?
			  fmt_age(r_dbl(h, "applied_at", 0), now, u) : "-");
		cols_cell(t, "%d", r_get(h, "vips") ?
			  json_object_object_length(r_get(h, "vips")) : 0);
		cols_cell(t, "%zu", r_len(r_arr(h, "down")));
		announce_cell(t, r_get(h, "announce"));
		cols_cell(t, "%s", r_has(h, "refused") ?
			  r_str(h, "refused", "") : "");
	}
	cols_print(t, f, "  ");
	cols_free(t);
}

/* --- explain -------------------------------------------------------------- */

/* "web1 (10.0.0.11, id 3)" */
static const char *backend_str(json_object *b, char *buf, size_t len)
{
	const char *name = r_str(b, "name", "-"), *addr = r_str(b, "addr", "");

	if (!strcmp(name, addr) || !*addr)
		snprintf(buf, len, "%s (id %" PRId64 ")", name, r_int(b, "id", 0));
	else
		snprintf(buf, len, "%s (%s, id %" PRId64 ")", name, addr,
			 r_int(b, "id", 0));
	return buf;
}

void render_explain(FILE *f, json_object *res)
{
	json_object *ct = r_get(res, "conntrack"), *q = r_get(res, "quic");
	char b[160], age[UNIT_BUF];
	const char *verdict = r_str(res, "verdict", "-");

	kv(f, "flow", "%s", r_str(res, "flow", "-"));
	kv(f, "vip", "%s", r_str(res, "vip", "none"));
	if (r_has(res, "hash"))
		kv(f, "hash", "0x%08" PRIx64, r_u64(res, "hash", 0));
	if (r_has(res, "slot"))
		kv(f, "slot", "%" PRId64 " of %" PRId64, r_int(res, "slot", 0),
		   r_int(res, "table_size", 0));
	if (r_has(res, "primary"))
		kv(f, "primary", "%s", backend_str(r_get(res, "primary"), b,
						   sizeof(b)));
	if (r_has(res, "secondary"))
		kv(f, "secondary", "%s", backend_str(r_get(res, "secondary"), b,
						     sizeof(b)));
	if (q) {
		if (r_has(q, "dcid"))
			kv(f, "quic", "%s; dcid %s, server ID %s",
			   r_str(q, "config", "-"), r_str(q, "dcid", "-"),
			   r_str(q, "server_id", "-"));
		else
			kv(f, "quic", "%s", r_str(q, "config", "-"));
		kv(f, "quic outcome", "%s", r_str(q, "outcome", "-"));
	}
	if (q && !strcmp(r_str(q, "outcome", ""), "by_cid")) {
		/* the connection table is not asked */
	} else if (ct) {
		fmt_duration(r_dbl(ct, "age_ms", 0) / 1000, age);
		kv(f, "conntrack", "%s, age %s, %s",
		   backend_str(r_get(ct, "backend"), b, sizeof(b)), age,
		   r_bool(ct, "valid", false) ? "valid" :
		   "stale (the next packet takes the table)");
	} else if (r_has(res, "vip")) {
		kv(f, "conntrack", "no entry");
	}
	if (!strcmp(verdict, "forward") && r_has(res, "backend"))
		kv(f, "verdict", "forward to %s",
		   backend_str(r_get(res, "backend"), b, sizeof(b)));
	else
		kv(f, "verdict", "%s", verdict);
	if (r_has(res, "reason"))
		kv(f, "reason", "%s", r_str(res, "reason", ""));
}

/* --- stats ---------------------------------------------------------------- */

static void stats_line(FILE *f, const char *title, json_object *o)
{
	json_object_object_foreach(o, key, val) {
		(void)val;
		fprintf(f, "%s %s %" PRIu64, title, key, r_u64(o, key, 0));
		title = " ";
	}
	fputc('\n', f);
}

void render_stats(FILE *f, json_object *res)
{
	json_object *vips = r_arr(res, "vips"), *v, *bes, *b;
	struct cols *t;
	char u[UNIT_BUF];
	size_t i, j;

	t = cols_new("VIP/BACKEND|PACKETS|BYTES|NEW FLOWS|CT HITS|CT MISSES",
		     "lrrrrr");
	for (i = 0; i < r_len(vips); i++) {
		v = r_at(vips, i);
		cols_row(t);
		cols_cell(t, "%s", r_str(v, "vip", "-"));
		cols_cell(t, "%" PRIu64, r_u64(v, "packets", 0));
		cols_cell(t, "%s", fmt_bytes(r_u64(v, "bytes", 0), u));
		cols_cell(t, "%" PRIu64, r_u64(v, "new_flows", 0));
		cols_cell(t, "%" PRIu64, r_u64(v, "ct_hits", 0));
		cols_cell(t, "%" PRIu64, r_u64(v, "ct_misses", 0));
		bes = r_arr(v, "backends");
		for (j = 0; j < r_len(bes); j++) {
			b = r_at(bes, j);
			cols_row(t);
			if (strcmp(r_str(b, "name", ""), r_str(b, "addr", "")))
				cols_cell(t, "  %s (%s)", r_str(b, "name", "-"),
					  r_str(b, "addr", "-"));
			else
				cols_cell(t, "  %s", r_str(b, "name", "-"));
			member_counters(t, b, u);
		}
	}
	if (r_len(vips))
		cols_print(t, f, "");
	else
		fputs("no VIPs\n", f);
	cols_free(t);
	bes = r_arr(res, "backends");
	if (r_len(bes)) {
		t = cols_new("BACKEND ADDRESS|ENCAP|PACKETS|BYTES|VIPS", "llrrl");
		for (j = 0; j < r_len(bes); j++) {
			json_object *vl;
			char vs[256];
			size_t k, len = 0;

			b = r_at(bes, j);
			vl = r_arr(b, "vips");
			vs[0] = 0;
			for (k = 0; k < r_len(vl) && len < sizeof(vs); k++)
				len += (size_t)snprintf(vs + len, sizeof(vs) - len,
							"%s%s", k ? " " : "",
							json_object_get_string(r_at(vl, k)));
			cols_row(t);
			cols_cell(t, "%s", r_str(b, "addr", "-"));
			cols_cell(t, "%s", r_str(b, "encap", "-"));
			cols_cell(t, "%" PRIu64, r_u64(b, "packets", 0));
			cols_cell(t, "%s", fmt_bytes(r_u64(b, "bytes", 0), u));
			cols_cell(t, "%s", vs);
		}
		cols_print(t, f, "");
		cols_free(t);
	}
	if (r_get(res, "events"))
		stats_line(f, "events     ", r_get(res, "events"));
	if (r_get(res, "actions"))
		stats_line(f, "xdp actions", r_get(res, "actions"));
	fprintf(f, "conntrack   %" PRIu64 " entries", r_u64(res, "conntrack_entries", 0));
	if (r_get(res, "conntrack_capacity"))
		fprintf(f, " of %" PRIu64, r_u64(res, "conntrack_capacity", 0));
	if (r_get(res, "conntrack_age_s"))
		fprintf(f, " (counted %.0f s ago)",
			json_object_get_double(r_get(res, "conntrack_age_s")));
	fputc('\n', f);
}
