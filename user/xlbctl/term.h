/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The terminal of top: keys without echo or line buffering, cursor hidden,
 * and everything restored on exit, 'q', Ctrl-C, SIGTERM and SIGHUP.
 */
#ifndef XLBCTL_TERM_H
#define XLBCTL_TERM_H

#include <stdbool.h>

/* Take over the terminal (stdout is one); restored at exit. */
void term_start(void);
void term_restore(void);
/*
 * Wait until the monotonic time t (seconds), reading keys on the way.
 * Returns true when the user asked to quit ('q', Ctrl-C, a signal).
 */
bool term_wait(double t);
bool term_quit_requested(void);
void term_size(int *rows, int *cols);

#endif /* XLBCTL_TERM_H */
