// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench: figures, the common record of results.json, as text or JSON.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "bench.h"

void fig_add(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len >= cap - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

void fig_json(const struct fig *f)
{
	printf("{\"bench\":\"%s\",\"name\":\"%s\",\"value\":%.10g,\"unit\":\"%s\",\"statistic\":\"%s\",\"min\":%.10g,\"max\":%.10g,\"runs\":%d,",
	       f->bench, f->name, f->value, f->unit, f->stat, f->min, f->max,
	       f->runs);
	if (f->baseline > 0) {
		/* a file name (pkt --against) may need escaping */
		struct json_object *what = json_object_new_string(
			f->baseline_what ? f->baseline_what : "");

		printf("\"baseline\":%.10g,\"ratio\":%.4f,\"baseline_is\":%s,",
		       f->baseline, f->value / f->baseline,
		       json_object_to_json_string_ext(what,
						      JSON_C_TO_STRING_PLAIN));
		json_object_put(what);
	} else
		printf("\"baseline\":null,\"ratio\":null,");
	if (f->goal > 0)
		printf("\"goal\":%.10g,\"goal_is\":\"%s\",", f->goal,
		       f->goal_what ? f->goal_what : "");
	printf("\"params\":{%s}%s%s}\n", f->params, f->extra[0] ? "," : "",
	       f->extra);
	fflush(stdout);
}

/* The generic human line of the newer subcommands. */
void fig_text(const struct fig *f)
{
	printf("%-32s %14.10g %-7s", f->name, f->value, f->unit);
	if (f->runs > 1)
		printf(" [%.6g .. %.6g]", f->min, f->max);
	if (f->baseline > 0)
		printf("  x%.2f of %.6g (%s)", f->value / f->baseline,
		       f->baseline, f->baseline_what);
	if (f->goal > 0)
		printf("  goal %.6g (%s)", f->goal, f->goal_what);
	printf("\n");
	fflush(stdout);
}

void fig_emit(const struct opts *o, const struct fig *f)
{
	if (o->json)
		fig_json(f);
	else
		fig_text(f);
}

/* Sort v and set value (median), min and max of f from it. */
void fig_median(struct fig *f, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	f->stat = "median";
	f->runs = n;
	f->value = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	f->min = v[0];
	f->max = v[n - 1];
}

double median_of(double *v, int n)
{
	struct fig f = { 0 };

	fig_median(&f, v, n);
	return f.value;
}

void fig_exact(struct fig *f, double v)
{
	f->stat = "exact";
	f->runs = 1;
	f->value = f->min = f->max = v;
}
