// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's log (xlbd.h): stderr, with <N> priority prefixes when
 * journald reads it (or no terminal does), "xlbd: LEVEL: " on a terminal.
 * libbpf and libxdp print through it.  Its state is the process's, as the
 * libraries' print callbacks are, which take no context.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xlbd.h"

static int log_level = XLBD_LOG_INFO;
static bool log_prefix;		/* <N> for journald */
static bool libbpf_quiet;

static const char *const level_names[] = {
	[XLBD_LOG_ERR] = "error", [XLBD_LOG_WARNING] = "warning",
	[XLBD_LOG_NOTICE] = "notice", [XLBD_LOG_INFO] = "info",
	[XLBD_LOG_DEBUG] = "debug",
};

void xlbd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* journald reads <N> as the priority; a terminal gets words */
	if (log_prefix)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "xlbd: %s: %s\n", level_names[level], msg);
}

/* A library's line at level, without its newline (it names itself). */
static void lib_log(int level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = 0;
	xlbd_log(level, "%s", msg);
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	if (level == LIBBPF_DEBUG && log_level < XLBD_LOG_DEBUG)
		return 0;
	lib_log(level == LIBBPF_WARN && !libbpf_quiet ?
		XLBD_LOG_WARNING : XLBD_LOG_DEBUG, fmt, ap);
	return 0;
}

static int libxdp_log(enum libxdp_print_level level, const char *fmt,
		      va_list ap)
{
	if (level == LIBXDP_DEBUG && log_level < XLBD_LOG_DEBUG)
		return 0;
	lib_log(level == LIBXDP_WARN ? XLBD_LOG_WARNING : XLBD_LOG_DEBUG,
		fmt, ap);
	return 0;
}

void xlbd_log_init(void)
{
	log_prefix = getenv("JOURNAL_STREAM") || !isatty(STDERR_FILENO);
	libbpf_set_print(libbpf_log);
	libxdp_set_print(libxdp_log);
}

void xlbd_log_set_level(int level)
{
	log_level = level;
}

int xlbd_log_level_parse(const char *name)
{
	int i;

	for (i = XLBD_LOG_ERR; i <= XLBD_LOG_DEBUG; i++)
		if (!strcmp(name, level_names[i]))
			return i;
	return -1;
}

void xlbd_log_libbpf_quiet(bool quiet)
{
	libbpf_quiet = quiet;
}
