// SPDX-License-Identifier: GPL-2.0
/*
 * xlbctl top: a live per-backend view of every VIP.  Each frame is one
 * sample, taken over one connection and closed again: "status" (the
 * generation), "stats" (the VIPs, their counters, the time) and
 * "backend.show" per VIP (state, health, share of slots, packet and byte
 * counters); rates come from the previous sample.  A VIP that disappears
 * between requests is skipped.
 *
 * On a terminal the frame is redrawn in place (cut to the window) until
 * 'q', Ctrl-C or --count frames; otherwise frames follow one another,
 * separated by a blank line, and with -j each frame is one JSON line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "columns.h"
#include "result.h"
#include "term.h"
#include "units.h"
#include "watch.h"

#define ERASE_LINE	"\033[K"
#define ERASE_BELOW	"\033[J"
#define CURSOR_HOME	"\033[H"

struct sample {
	json_object *status;
	json_object *stats;
	json_object **bes;	/* backend.show of stats.vips[i], or NULL */
	size_t n;
	double mono;
};

static void sample_free(struct sample *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		json_object_put(s->bes[i]);
	free(s->bes);
	json_object_put(s->status);
	json_object_put(s->stats);
	memset(s, 0, sizeof(*s));
}

static int sample_take(struct ctl *c, struct sample *s)
{
	struct xlb_err err = { "" };
	json_object *vips, *req;
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = ctl_connect(c);
	if (!ret)
		ret = ctl_call(c, ctl_req("status"), &s->status, 0);
	if (!ret)
		ret = ctl_call(c, ctl_req("stats"), &s->stats, 0);
	vips = r_arr(s->stats, "vips");
	if (!ret && r_len(vips)) {
		s->bes = calloc(r_len(vips), sizeof(*s->bes));
		if (!s->bes)
			ret = ctl_fail("out of memory");
		else
			s->n = r_len(vips);
	}
	for (i = 0; !ret && i < s->n; i++) {
		req = ctl_req("backend.show");
		json_object_object_add(req, "vip", json_object_new_string(
			r_str(r_at(vips, i), "vip", "")));
		ret = ctl_exchange(c, req, &s->bes[i], 0, &err);
		if (ret == -EREMOTEIO)	/* deleted meanwhile */
			ret = 0;
		else if (ret)
			ret = ctl_fail("%s", err.msg);
	}
	ctl_disconnect(c);
	s->mono = xlb_mono_s();
	if (ret)
		sample_free(s);
	return ret;
}

/* The backend.show answer of vip in sample s, or NULL. */
static json_object *backends_of(const struct sample *s, const char *vip)
{
	json_object *vips = r_arr(s->stats, "vips");
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(r_str(r_at(vips, i), "vip", ""), vip))
			return s->bes[i];
	return NULL;
}

struct be_rate {
	json_object *be;
	double pps, bps;	/* -1: not known */
	bool shared;		/* counted with other VIPs' packets */
};

/* Per backend rates of VIP i; returns how many, total pps in *sum. */
static size_t backend_rates(const struct sample *p, const struct sample *s,
			    size_t i, double dt, struct be_rate *out,
			    size_t max, double *sum)
{
	json_object *vip = r_at(r_arr(s->stats, "vips"), i);
	json_object *bes = r_arr(s->bes[i], "backends");
	json_object *pbes, *pb, *b;
	size_t j, n = 0;

	pbes = r_arr(backends_of(p, r_str(vip, "vip", "")), "backends");
	*sum = 0;
	for (j = 0; j < r_len(bes) && n < max; j++) {
		b = r_at(bes, j);
		pb = find_by(pbes, "name", r_str(b, "name", ""));
		out[n].be = b;
		/* no counters of its own: its address serves other VIPs */
		out[n].shared = !r_get(b, "packets");
		if (out[n].shared || (pb && !r_get(pb, "packets")))
			pb = NULL;
		out[n].pps = pb ? rate(r_u64(pb, "packets", 0),
				       r_u64(b, "packets", 0), dt) : -1;
		out[n].bps = pb ? 8 * rate(r_u64(pb, "bytes", 0),
					   r_u64(b, "bytes", 0), dt) : -1;
		if (out[n].pps > 0)
			*sum += out[n].pps;
		n++;
	}
	return n;
}

struct vip_rate {
	double pps, bps, nfps;
	bool known;
};

static struct vip_rate vip_rate(const struct sample *p, json_object *v,
				double dt)
{
	json_object *pv = find_by(r_arr(p->stats, "vips"), "vip",
				  r_str(v, "vip", ""));
	struct vip_rate r = { -1, -1, -1, false };

	if (!pv)
		return r;
	r.pps = rate(r_u64(pv, "packets", 0), r_u64(v, "packets", 0), dt);
	r.bps = 8 * rate(r_u64(pv, "bytes", 0), r_u64(v, "bytes", 0), dt);
	r.nfps = rate(r_u64(pv, "new_flows", 0), r_u64(v, "new_flows", 0), dt);
	r.known = true;
	return r;
}

/* --- human frames ----------------------------------------------------------- */

static void frame_vip(FILE *f, const struct sample *p, const struct sample *s,
		      size_t i, double dt)
{
	json_object *v = r_at(r_arr(s->stats, "vips"), i), *b;
	struct be_rate br[XLB_BACKENDS_PER_VIP];
	struct vip_rate vr = vip_rate(p, v, dt);
	char u[5][UNIT_BUF];
	struct cols *t;
	double sum;
	size_t n, j;

	fprintf(f, "\n%s  %s pps  %s bit/s  %s new flows/s\n",
		r_str(v, "vip", "-"), fmt_si(vr.pps, u[0]), fmt_si(vr.bps, u[1]),
		fmt_si(vr.nfps, u[2]));
	if (!s->bes[i])
		return;
	n = backend_rates(p, s, i, dt, br, XLB_BACKENDS_PER_VIP, &sum);
	if (!n) {
		fputs("  no backends\n", f);
		return;
	}
	t = cols_new("NAME|ADDR|STATE|HEALTH|SLOTS|PPS|PACKETS|BIT/S",
		     "llllrrrr");
	for (j = 0; j < n; j++) {
		b = br[j].be;
		cols_row(t);
		cols_cell(t, "%s", r_str(b, "name", "-"));
		cols_cell(t, "%s", r_str(b, "addr", "-"));
		cols_cell(t, "%s", r_str(b, "state", "-"));
		cols_cell(t, "%s", r_str(b, "health", "-"));
		cols_cell(t, "%s", fmt_share(r_dbl(b, "share", -1), u[0]));
		if (br[j].shared) {
			cols_cell(t, "shared");
			cols_cell(t, "-");
			cols_cell(t, "shared");
			continue;
		}
		cols_cell(t, "%s", fmt_si(br[j].pps, u[1]));
		cols_cell(t, "%s", sum > 0 && br[j].pps >= 0 ?
			  fmt_share(br[j].pps / sum, u[2]) : "-");
		cols_cell(t, "%s", fmt_si(br[j].bps, u[3]));
	}
	cols_print(t, f, "  ");
	cols_free(t);
}

static void frame_human(FILE *f, const struct watch_opts *o,
			const struct sample *p, const struct sample *s,
			double dt, bool tty)
{
	json_object *vips = r_arr(s->stats, "vips");
	struct vip_rate tot = { 0, 0, 0, true }, vr;
	char u[3][UNIT_BUF], hms[16];
	time_t now = time(NULL);
	size_t i;

	strftime(hms, sizeof(hms), "%H:%M:%S", localtime(&now));
	fprintf(f, "xlbctl top  %s  every %gs  generation %llu  conntrack %llu entries%s\n",
		hms, o->interval,
		(unsigned long long)r_u64(s->status, "generation", 0),
		(unsigned long long)r_u64(s->stats, "conntrack_entries", 0),
		tty ? "  (q quits)" : "");
	for (i = 0; i < r_len(vips); i++) {
		vr = vip_rate(p, r_at(vips, i), dt);
		if (!vr.known)
			continue;
		tot.pps += vr.pps;
		tot.bps += vr.bps;
		tot.nfps += vr.nfps;
	}
	fprintf(f, "total  %s pps  %s bit/s  %s new flows/s  %zu VIP%s\n",
		fmt_si(tot.pps, u[0]), fmt_si(tot.bps, u[1]),
		fmt_si(tot.nfps, u[2]), r_len(vips), r_len(vips) == 1 ? "" : "s");
	for (i = 0; i < r_len(vips); i++)
		frame_vip(f, p, s, i, dt);
}

/* --- JSON frames ------------------------------------------------------------ */

static json_object *jdbl(double v)
{
	return v < 0 ? NULL : json_object_new_double(v);
}

static json_object *json_vip(const struct sample *p, const struct sample *s,
			     size_t i, double dt)
{
	json_object *v = r_at(r_arr(s->stats, "vips"), i), *o, *list, *be, *b;
	struct be_rate br[XLB_BACKENDS_PER_VIP];
	struct vip_rate vr = vip_rate(p, v, dt);
	double sum = 0;
	size_t n = 0, j;

	o = json_object_new_object();
	json_object_object_add(o, "vip", json_object_new_string(r_str(v, "vip", "")));
	json_object_object_add(o, "pps", jdbl(vr.pps));
	json_object_object_add(o, "bps", jdbl(vr.bps));
	json_object_object_add(o, "new_flows_ps", jdbl(vr.nfps));
	list = json_object_new_array();
	if (s->bes[i])
		n = backend_rates(p, s, i, dt, br, XLB_BACKENDS_PER_VIP, &sum);
	for (j = 0; j < n; j++) {
		b = br[j].be;
		be = json_object_new_object();
		json_object_object_add(be, "name", json_object_new_string(r_str(b, "name", "")));
		json_object_object_add(be, "addr", json_object_new_string(r_str(b, "addr", "")));
		json_object_object_add(be, "state", json_object_new_string(r_str(b, "state", "")));
		json_object_object_add(be, "health", json_object_new_string(r_str(b, "health", "")));
		json_object_object_add(be, "slot_share", jdbl(r_dbl(b, "share", -1)));
		json_object_object_add(be, "pps", jdbl(br[j].pps));
		json_object_object_add(be, "packet_share",
				       sum > 0 && br[j].pps >= 0 ?
				       json_object_new_double(br[j].pps / sum) : NULL);
		json_object_object_add(be, "bps", jdbl(br[j].bps));
		json_object_object_add(be, "shared",
				       json_object_new_boolean(br[j].shared));
		json_object_array_add(list, be);
	}
	json_object_object_add(o, "backends", list);
	return o;
}

static void frame_json(FILE *f, const struct sample *p, const struct sample *s,
		       double dt)
{
	json_object *o = json_object_new_object(), *list;
	size_t i;

	json_object_object_add(o, "time", json_object_new_double(r_dbl(s->stats, "time", 0)));
	json_object_object_add(o, "interval_s", json_object_new_double(dt));
	json_object_object_add(o, "generation",
			       json_object_new_uint64(r_u64(s->status, "generation", 0)));
	json_object_object_add(o, "conntrack_entries",
			       json_object_new_uint64(r_u64(s->stats, "conntrack_entries", 0)));
	list = json_object_new_array();
	for (i = 0; i < s->n; i++)
		json_object_array_add(list, json_vip(p, s, i, dt));
	json_object_object_add(o, "vips", list);
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					 JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* --- output ----------------------------------------------------------------- */

/* Redraw in place, cut to the window. */
static void draw(const char *text)
{
	int rows, cols, row, total = 0;
	const char *line, *nl;
	size_t len;

	term_size(&rows, &cols);
	for (line = text; (nl = strchr(line, '\n')); line = nl + 1)
		total++;
	fputs(CURSOR_HOME, stdout);
	for (line = text, row = 0; row < rows - 1; row++) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		if (row == rows - 2 && total > rows - 1) {
			printf("... %d more lines; enlarge the window" ERASE_LINE
			       "\n", total - row);
			break;
		}
		len = (size_t)(nl - line);
		if (len > (size_t)cols)
			len = (size_t)cols;
		printf("%.*s" ERASE_LINE "\n", (int)len, line);
		line = nl + 1;
	}
	fputs(ERASE_BELOW, stdout);
	fflush(stdout);
}

static void show_frame(struct ctl *c, const struct watch_opts *o,
		       const struct sample *p, const struct sample *s,
		       bool tty, uint64_t n)
{
	double dt = sample_dt(p->stats, s->stats, s->mono - p->mono);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (c->json) {
		frame_json(stdout, p, s, dt);
		fflush(stdout);
		return;
	}
	f = open_memstream(&text, &len);
	if (!f)
		return;
	frame_human(f, o, p, s, dt, tty);
	fclose(f);
	if (tty) {
		draw(text);
	} else {
		printf("%s%s", n ? "\n" : "", text);
		fflush(stdout);
	}
	free(text);
}

int cmd_top(struct ctl *c, int argc, char **argv)
{
	bool tty = isatty(STDOUT_FILENO) && !c->json;
	struct sample prev, cur;
	struct watch_opts o;
	uint64_t n;
	double t0;
	int ret;

	ret = watch_parse("top", argc, argv, false, &o);
	if (ret)
		return ret;
	ret = sample_take(c, &prev);
	if (ret)
		return ret;
	t0 = prev.mono;
	if (tty) {
		term_start();
		printf("xlbctl top: measuring for %gs ...\n", o.interval);
		fflush(stdout);
	}
	for (n = 0; !o.count || n < o.count; n++) {
		if (tty) {
			if (term_wait(t0 + (double)(n + 1) * o.interval))
				break;
		} else {
			sleep_until(t0 + (double)(n + 1) * o.interval);
		}
		ret = sample_take(c, &cur);
		if (ret)
			break;
		show_frame(c, &o, &prev, &cur, tty, n);
		sample_free(&prev);
		prev = cur;
		if (tty && term_quit_requested())
			break;
	}
	sample_free(&prev);
	if (tty)
		term_restore();
	return ret;
}
