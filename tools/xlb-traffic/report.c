// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: what the clients count and print: backends by id, failures
 * by reason, the spread of connections over backends.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "traffic.h"

char ids[MAX_IDS][ID_LEN + 1];

int nids;

/* The index of id (ID_LEN bytes, NUL-padded), added if new; -1 if full. */
int id_index(const char *id)
{
	int i;

	for (i = 0; i < nids; i++)
		if (!strncmp(ids[i], id, ID_LEN))
			return i;
	if (nids == MAX_IDS)
		return -1;
	memcpy(ids[nids], id, ID_LEN);
	ids[nids][ID_LEN] = 0;
	return nids++;
}

void json_num(const char *key, double v, bool comma)
{
	if (isfinite(v))
		printf("\"%s\":%.6g%s", key, v, comma ? "," : "");
	else
		printf("\"%s\":null%s", key, comma ? "," : "");
}

const char *const reason_name[R_COUNT] = {
	[R_REFUSED] = "refused",
	[R_RESET] = "reset",
	[R_UNREACH] = "unreachable",
	[R_CONNECT_TIMEOUT] = "connect_timeout",
	[R_TIMEOUT] = "timeout",
	[R_EOF] = "eof",
	[R_BAD_HEADER] = "bad_header",
	[R_BAD_DATA] = "bad_data",
	[R_ID_CHANGED] = "id_changed",
	[R_ERROR] = "error",
};

enum reason errno_reason(int e)
{
	switch (e) {
	case ECONNREFUSED:
		return R_REFUSED;
	case ECONNRESET:
	case EPIPE:
		return R_RESET;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return R_UNREACH;
	case ETIMEDOUT:
		return R_TIMEOUT;
	default:
		return R_ERROR;
	}
}

void print_reasons_text(const uint64_t *r)
{
	bool any = false;
	int i;

	for (i = 0; i < R_COUNT; i++) {
		if (!r[i])
			continue;
		printf("%s %s %llu", any ? "," : "failures:", reason_name[i],
		       (unsigned long long)r[i]);
		any = true;
	}
	if (any)
		printf("\n");
}

void print_reasons_json(const char *key, const uint64_t *r)
{
	int i;

	printf("\"%s\":{", key);
	for (i = 0; i < R_COUNT; i++)
		printf("%s\"%s\":%llu", i ? "," : "", reason_name[i],
		       (unsigned long long)r[i]);
	printf("}");
}

static int print_spread(const struct copts *o, const uint64_t *count,
			uint64_t total)
{
	int i;

	printf("%-20s %8s %8s %8s\n", "backend", "count", "share",
	       "expected");
	for (i = 0; i < nids; i++)
		printf("%-20s %8llu %8.4f %8.4f\n", ids[i],
		       (unsigned long long)count[i],
		       total ? (double)count[i] / total : 0.0,
		       o->sp.expect[i]);
	printf("chi2 %.3f df %d p %.4g", o->sp.chi2, o->sp.df, o->sp.p);
	if (o->alpha >= 0)
		printf(" (alpha %g: %s)", o->alpha,
		       o->sp.p >= o->alpha ? "consistent" : "REJECTED");
	printf("\n");
	return 0;
}

static void json_spread(const struct copts *o, const uint64_t *count,
			uint64_t total)
{
	int i;

	printf("\"backends\":{");
	for (i = 0; i < nids; i++) {
		printf("%s\"%s\":{\"count\":%llu,", i ? "," : "", ids[i],
		       (unsigned long long)count[i]);
		json_num("share", total ? (double)count[i] / total : 0, true);
		json_num("expected", o->sp.expect[i], false);
		printf("}");
	}
	printf("},");
	json_num("chi2", o->sp.chi2, true);
	printf("\"df\":%d,", o->sp.df);
	json_num("p", o->sp.p, false);
}

/* The report of conns and udp; returns the exit status. */
int report_counts(const char *mode, struct copts *o,
		  const uint64_t *count, const uint64_t *reasons,
		  uint64_t done, uint64_t failed, double secs)
{
	bool ok;

	spread_test(&o->sp, count);
	ok = !failed && done == o->n && (o->alpha < 0 || o->sp.p >= o->alpha);
	if (o->json) {
		printf("{\"mode\":\"%s\",\"to\":\"%s\",\"requested\":%llu,"
		       "\"completed\":%llu,\"failed\":%llu,"
		       "\"not_run\":%llu,", mode, o->to_str,
		       (unsigned long long)o->n, (unsigned long long)done,
		       (unsigned long long)failed,
		       (unsigned long long)(o->n - done - failed));
		print_reasons_json("failures", reasons);
		printf(",");
		json_num("seconds", secs, true);
		json_spread(o, count, done);
		printf(",\"ok\":%s}\n", ok ? "true" : "false");
		return ok ? 0 : 1;
	}
	printf("%s to %s: %llu completed, %llu failed", mode, o->to_str,
	       (unsigned long long)done, (unsigned long long)failed);
	if (done + failed < o->n)
		printf(", %llu not run",
		       (unsigned long long)(o->n - done - failed));
	printf(" of %llu in %.2f s (%.0f/s)\n", (unsigned long long)o->n,
	       secs, secs > 0 ? done / secs : 0);
	print_reasons_text(reasons);
	print_spread(o, count, done);
	return ok ? 0 : 1;
}
