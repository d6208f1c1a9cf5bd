// SPDX-License-Identifier: GPL-2.0
/* The terminal of top (term.h). */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"
#include "watch.h"

#define CURSOR_HIDE	"\033[?25l"
#define CURSOR_SHOW	"\033[?25h"
#define SCREEN_CLEAR	"\033[H\033[2J"

static struct termios saved;
static bool raw;		/* stdin is in key mode, to restore */
static bool keys;		/* keys can be read */
static bool started;
static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

void term_restore(void)
{
	if (!started)
		return;
	started = false;
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	raw = keys = false;
	fputs(CURSOR_SHOW, stdout);
	fflush(stdout);
}

void term_start(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct termios t;

	/* No SA_RESTART: a wait ends at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved)) {
		t = saved;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		raw = keys = !tcsetattr(STDIN_FILENO, TCSANOW, &t);
	}
	started = true;
	atexit(term_restore);
	fputs(CURSOR_HIDE SCREEN_CLEAR, stdout);
	fflush(stdout);
}

bool term_quit_requested(void)
{
	return quit;
}

/* Read the keys waiting; true on 'q'. */
static bool read_keys(void)
{
	char buf[32];
	ssize_t n, i;

	n = read(STDIN_FILENO, buf, sizeof(buf));
	for (i = 0; i < n; i++)
		if (buf[i] == 'q' || buf[i] == 'Q')
			return true;
	return false;
}

bool term_wait(double t)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	double left;
	int n;

	while (!quit) {
		left = t - xlb_mono_s();
		if (left <= 0)
			return false;
		n = poll(keys ? &p : NULL, keys ? 1 : 0, (int)(left * 1000) + 1);
		if (n > 0 && (p.revents & POLLIN) && read_keys())
			quit = 1;
		else if (n > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			keys = false;	/* no keyboard any more */
	}
	return true;
}

void term_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}
