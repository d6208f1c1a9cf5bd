// SPDX-License-Identifier: GPL-2.0
/*
 * xlbctl stats: one snapshot of the counters ({"cmd": "stats", "vip"?}),
 * or with --watch one line of rates per interval, computed from two
 * consecutive answers: packets/s, bit/s, new flows/s, and XDP drops/s when
 * every VIP is watched.  With -j each line is one JSON object.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "result.h"
#include "units.h"
#include "watch.h"

/* --- shared with top ------------------------------------------------------ */

void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

double rate(uint64_t a, uint64_t b, double dt)
{
	if (dt <= 0)
		return 0;
	return (double)(b >= a ? b - a : b) / dt;
}

double sample_dt(json_object *prev, json_object *cur, double fallback)
{
	double dt = r_dbl(cur, "time", 0) - r_dbl(prev, "time", 0);

	return r_has(cur, "time") && r_has(prev, "time") && dt > 0 ? dt :
	       fallback;
}

json_object *find_by(json_object *arr, const char *key, const char *val)
{
	size_t i;

	for (i = 0; i < r_len(arr); i++)
		if (!strcmp(r_str(r_at(arr, i), key, ""), val))
			return r_at(arr, i);
	return NULL;
}

/* "--interval 2", "--interval=2", "-n 2"; *val NULL if it is not opt. */
static int opt_value(int argc, char **argv, int *i, const char *s,
		     const char *l, const char **val)
{
	size_t n = strlen(l);

	*val = NULL;
	if (!strncmp(argv[*i], l, n) && argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 0;
	}
	if (strcmp(argv[*i], s) && strcmp(argv[*i], l))
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 0;
}

int watch_parse(const char *topic, int argc, char **argv, bool vip_ok,
		struct watch_opts *o)
{
	const char *val;
	int i, ret;

	memset(o, 0, sizeof(*o));
	o->interval = WATCH_INTERVAL_DEFAULT;
	ret = arg_misplaced(topic, argc, argv);
	if (ret)
		return ret;
	for (i = 1; i < argc; i++) {
		if (vip_ok && (!strcmp(argv[i], "-w") ||
			       !strcmp(argv[i], "--watch"))) {
			o->watch = true;
			continue;
		}
		if (opt_value(argc, argv, &i, "-n", "--interval", &val))
			return ctl_usage_error(topic, "--interval needs SECONDS");
		if (val) {
			ret = arg_interval(topic, i + 1, val, &o->interval);
			if (ret)
				return ret;
			o->watch = true;
			continue;
		}
		if (opt_value(argc, argv, &i, "-c", "--count", &val))
			return ctl_usage_error(topic, "--count needs N");
		if (val) {
			ret = arg_count(topic, i + 1, val, &o->count);
			if (ret)
				return ret;
			o->watch = true;
			continue;
		}
		if (argv[i][0] == '-')
			return ctl_usage_error(topic,
					       "argument %d: unknown option \"%.40s\"",
					       i + 1, argv[i]);
		if (!vip_ok || o->vip[0])
			return ctl_usage_error(topic,
					       "argument %d: unexpected \"%.40s\"",
					       i + 1, argv[i]);
		ret = arg_vip(topic, i + 1, argv[i], o->vip);
		if (ret)
			return ret;
	}
	return 0;
}

/* --- stats ---------------------------------------------------------------- */

static int fetch(struct ctl *c, const char *vip, json_object **res)
{
	json_object *req = ctl_req("stats");

	if (vip[0])
		json_object_object_add(req, "vip", json_object_new_string(vip));
	return ctl_call(c, req, res, 0);
}

struct rates {
	double pps, bps, nfps, dps;
};

/* Rates of one VIP between two answers; false if it is new. */
static bool vip_rates(json_object *pv, json_object *cv, double dt,
		      struct rates *r)
{
	if (!pv)
		return false;
	r->pps = rate(r_u64(pv, "packets", 0), r_u64(cv, "packets", 0), dt);
	r->bps = 8 * rate(r_u64(pv, "bytes", 0), r_u64(cv, "bytes", 0), dt);
	r->nfps = rate(r_u64(pv, "new_flows", 0), r_u64(cv, "new_flows", 0),
		       dt);
	return true;
}

static json_object *rates_json(const char *vip, const struct rates *r)
{
	json_object *o = json_object_new_object();

	if (vip)
		json_object_object_add(o, "vip", json_object_new_string(vip));
	json_object_object_add(o, "pps", json_object_new_double(r->pps));
	json_object_object_add(o, "bps", json_object_new_double(r->bps));
	json_object_object_add(o, "new_flows_ps",
			       json_object_new_double(r->nfps));
	return o;
}

static void print_rates(struct ctl *c, const struct watch_opts *o,
			json_object *prev, json_object *cur, double dt)
{
	json_object *pvips = r_arr(prev, "vips"), *cvips = r_arr(cur, "vips");
	json_object *cv, *line = NULL, *list = NULL, *one;
	struct rates tot = { 0 }, r;
	char u[4][UNIT_BUF], hms[16];
	time_t now = time(NULL);
	size_t i;

	if (c->json) {
		line = json_object_new_object();
		list = json_object_new_array();
	}
	for (i = 0; i < r_len(cvips); i++) {
		cv = r_at(cvips, i);
		if (!vip_rates(find_by(pvips, "vip", r_str(cv, "vip", "")), cv,
			       dt, &r))
			continue;
		tot.pps += r.pps;
		tot.bps += r.bps;
		tot.nfps += r.nfps;
		if (list) {
			one = rates_json(r_str(cv, "vip", ""), &r);
			json_object_array_add(list, one);
		}
	}
	tot.dps = rate(r_u64(r_get(prev, "actions"), "drop", 0),
		       r_u64(r_get(cur, "actions"), "drop", 0), dt);
	if (c->json) {
		json_object_object_add(line, "time",
				       json_object_new_double(r_dbl(cur, "time", 0)));
		json_object_object_add(line, "interval_s",
				       json_object_new_double(dt));
		json_object_object_add(line, "pps", json_object_new_double(tot.pps));
		json_object_object_add(line, "bps", json_object_new_double(tot.bps));
		json_object_object_add(line, "new_flows_ps",
				       json_object_new_double(tot.nfps));
		if (!o->vip[0])
			json_object_object_add(line, "drops_ps",
					       json_object_new_double(tot.dps));
		json_object_object_add(line, "vips", list);
		puts(json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(line);
		return;
	}
	strftime(hms, sizeof(hms), "%H:%M:%S", localtime(&now));
	printf("%-8s %10s %10s %10s", hms, fmt_si(tot.pps, u[0]),
	       fmt_si(tot.bps, u[1]), fmt_si(tot.nfps, u[2]));
	if (!o->vip[0])
		printf(" %10s", fmt_si(tot.dps, u[3]));
	putchar('\n');
}

static int watch_stats(struct ctl *c, const struct watch_opts *o)
{
	json_object *prev, *cur;
	double t0, tp, tc;
	uint64_t n;
	int ret;

	ret = fetch(c, o->vip, &prev);
	if (ret)
		return ret;
	t0 = tp = xlb_mono_s();
	if (!c->json) {
		printf("%-8s %10s %10s %10s%s\n", "TIME", "PPS", "BIT/S",
		       "NEW/S", o->vip[0] ? "" : "     DROP/S");
		fflush(stdout);
	}
	for (n = 0; !o->count || n < o->count; n++) {
		sleep_until(t0 + (double)(n + 1) * o->interval);
		ret = fetch(c, o->vip, &cur);
		if (ret)
			break;
		tc = xlb_mono_s();
		print_rates(c, o, prev, cur, sample_dt(prev, cur, tc - tp));
		fflush(stdout);
		json_object_put(prev);
		prev = cur;
		tp = tc;
	}
	json_object_put(prev);
	return ret;
}

int cmd_stats(struct ctl *c, int argc, char **argv)
{
	struct watch_opts o;
	json_object *res;
	int ret;

	ret = watch_parse("stats", argc, argv, true, &o);
	if (ret)
		return ret;
	if (o.watch)
		return watch_stats(c, &o);
	ret = fetch(c, o.vip, &res);
	if (ret)
		return ret;
	if (c->json)
		ctl_print_json(res);
	else
		render_stats(stdout, res);
	json_object_put(res);
	return EXIT_OK;
}
