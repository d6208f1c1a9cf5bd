/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What stats --watch and top share: their options, the clock, and rates
 * from two answers.  Counters are totals since the maps were made (see
 * user/lib/proto.h); a counter that went backwards was reset (new maps) and
 * counts from zero.
 */
#ifndef XLBCTL_WATCH_H
#define XLBCTL_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "mono.h"
#include "xlbctl.h"

#define WATCH_INTERVAL_DEFAULT	1.0	/* seconds */

struct watch_opts {
	char vip[XLB_VIP_STR_MAX];	/* "": every VIP */
	bool watch;
	double interval;		/* seconds */
	uint64_t count;			/* lines or frames; 0: no end */
};

/*
 * [VIP] (if vip_ok) [-w|--watch] (if vip_ok) [-n|--interval S]
 * [-c|--count N]; argv[0] is the object.  EXIT_USAGE with the error
 * printed, or 0.
 */
int watch_parse(const char *topic, int argc, char **argv, bool vip_ok,
		struct watch_opts *o);

/* Sleep until the monotonic time t (xlb_mono_s). */
void sleep_until(double t);

/* (b - a) / dt, or b / dt when the counter was reset. */
double rate(uint64_t a, uint64_t b, double dt);
/* Seconds between two stats answers: their "time", else the fallback. */
double sample_dt(json_object *prev, json_object *cur, double fallback);
/* The element of array arr whose string field key equals val. */
json_object *find_by(json_object *arr, const char *key, const char *val);

#endif /* XLBCTL_WATCH_H */
