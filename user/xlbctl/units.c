// SPDX-License-Identifier: GPL-2.0
/* Numbers for humans (units.h). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "units.h"

const char *fmt_bytes(uint64_t bytes, char buf[UNIT_BUF])
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB",
					     "EiB" };
	double v = (double)bytes;
	int i = -1;

	if (bytes < 1024) {
		snprintf(buf, UNIT_BUF, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, UNIT_BUF, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" :
		 "%.0f %s", v, unit[i]);
	return buf;
}

const char *fmt_si(double v, char buf[UNIT_BUF])
{
	static const char suffix[] = "kMGTPE";
	int i = -1;

	if (isnan(v) || v < 0) {
		snprintf(buf, UNIT_BUF, "-");
		return buf;
	}
	if (v < 999.5) {
		snprintf(buf, UNIT_BUF, v < 10 && v != floor(v) ? "%.1f" : "%.0f",
			 v);
		return buf;
	}
	while (v >= 999.5 && i < 5) {
		v /= 1000;
		i++;
	}
	snprintf(buf, UNIT_BUF, v < 9.995 ? "%.2f%c" : v < 99.95 ? "%.1f%c" :
		 "%.0f%c", v, suffix[i]);
	return buf;
}

const char *fmt_share(double share, char buf[UNIT_BUF])
{
	if (isnan(share) || share < 0)
		snprintf(buf, UNIT_BUF, "-");
	else
		snprintf(buf, UNIT_BUF, "%.1f%%", share * 100);
	return buf;
}

const char *fmt_duration(double secs, char buf[UNIT_BUF])
{
	unsigned long long s = secs > 0 ? (unsigned long long)secs : 0;

	if (s < 60)
		snprintf(buf, UNIT_BUF, "%llus", s);
	else if (s < 3600)
		snprintf(buf, UNIT_BUF, "%llum %llus", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, UNIT_BUF, "%lluh %llum", s / 3600, s / 60 % 60);
	else
		snprintf(buf, UNIT_BUF, "%llud %lluh", s / 86400,
			 s / 3600 % 24);
	return buf;
}

const char *fmt_age(double t, double now, char buf[UNIT_BUF])
{
	char d[UNIT_BUF];

	if (t <= 0 || isnan(t))
		snprintf(buf, UNIT_BUF, "never");
	else if (now - t < -1)
		snprintf(buf, UNIT_BUF, "in %s", fmt_duration(t - now, d));
	else
		snprintf(buf, UNIT_BUF, "%s ago", fmt_duration(now - t, d));
	return buf;
}

double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
