/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Numbers for humans.  Every function writes into the caller's buffer and
 * returns it, so several can appear in one printf.
 *
 *   bytes    IEC: "512 B", "1.5 KiB", "12.0 MiB", "3.25 GiB"
 *   si       decimal suffixes for rates and counts: "950", "12.3k", "1.20M"
 *   share    a fraction 0..1 as a percentage with one decimal: "33.3%"
 *   age      time since a unix timestamp: "12s ago", "5m 3s ago", "never"
 *   duration "45s", "5m 3s", "3h 12m", "2d 4h"
 */
#ifndef XLBCTL_UNITS_H
#define XLBCTL_UNITS_H

#include <stdint.h>

#define UNIT_BUF	32

const char *fmt_bytes(uint64_t bytes, char buf[UNIT_BUF]);
const char *fmt_si(double v, char buf[UNIT_BUF]);
const char *fmt_share(double share, char buf[UNIT_BUF]);
const char *fmt_duration(double secs, char buf[UNIT_BUF]);
/* t: unix seconds (0 or less: "never"); now: unix seconds. */
const char *fmt_age(double t, double now, char buf[UNIT_BUF]);
/* Unix seconds now, with fractions. */
double unix_now(void);

#endif /* XLBCTL_UNITS_H */
