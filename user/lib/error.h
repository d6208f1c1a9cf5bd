/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Errors travel as negative errno values inside libxlb; the sentence that
 * goes with them (what was wrong, where, what is accepted) rides along in a
 * struct xlb_err so the edge (CLI, daemon log, config loader) can print it.
 */
#ifndef XLB_ERROR_H
#define XLB_ERROR_H

#include <errno.h>

struct xlb_err {
	char msg[256];
};

/* Fill err->msg (err may be NULL) and return -errnum. */
int xlb_errf(struct xlb_err *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* XLB_ERROR_H */
