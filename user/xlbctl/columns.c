// SPDX-License-Identifier: GPL-2.0
/* Aligned tables (columns.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "columns.h"

#define COLS_MAX	16

struct cols {
	int n;				/* columns */
	char align[COLS_MAX];
	char **cells;			/* rows * n; row 0 is the header */
	size_t rows, cap;
	int cur;			/* cells filled in the last row */
};

static void die_oom(void)
{
	fputs("xlbctl: out of memory\n", stderr);
	exit(1);
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		die_oom();
	return d;
}

struct cols *cols_new(const char *headers, const char *align)
{
	struct cols *t = calloc(1, sizeof(*t));
	char *h = xstrdup(headers), *tok, *save = NULL;
	int i;

	if (!t)
		die_oom();
	t->n = (int)strlen(align);
	if (t->n > COLS_MAX)
		t->n = COLS_MAX;
	memcpy(t->align, align, (size_t)t->n);
	cols_row(t);
	for (tok = strtok_r(h, "|", &save), i = 0; tok && i < t->n;
	     tok = strtok_r(NULL, "|", &save), i++)
		cols_cell(t, "%s", tok);
	free(h);
	return t;
}

void cols_row(struct cols *t)
{
	char **c;

	if (t->rows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		c = realloc(t->cells, t->cap * (size_t)t->n * sizeof(*c));
		if (!c)
			die_oom();
		t->cells = c;
	}
	memset(&t->cells[t->rows * (size_t)t->n], 0,
	       (size_t)t->n * sizeof(*t->cells));
	t->rows++;
	t->cur = 0;
}

void cols_cell(struct cols *t, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int ret;

	if (t->cur >= t->n)
		return;
	va_start(ap, fmt);
	ret = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (ret < 0)
		die_oom();
	t->cells[(t->rows - 1) * (size_t)t->n + (size_t)t->cur++] = s;
}

/* Display width: UTF-8 continuation bytes take no column. */
static int width(const char *s)
{
	int w = 0;

	for (; s && *s; s++)
		if ((*s & 0xc0) != 0x80)
			w++;
	return w;
}

void cols_print(const struct cols *t, FILE *f, const char *indent)
{
	int w[COLS_MAX] = { 0 }, i, pad, last;
	const char *s;
	size_t r;

	for (r = 0; r < t->rows; r++)
		for (i = 0; i < t->n; i++)
			if (width(t->cells[r * (size_t)t->n + (size_t)i]) > w[i])
				w[i] = width(t->cells[r * (size_t)t->n + (size_t)i]);
	for (r = 0; r < t->rows; r++) {
		fputs(indent, f);
		for (last = t->n - 1; last > 0; last--)
			if (t->cells[r * (size_t)t->n + (size_t)last])
				break;
		for (i = 0; i <= last; i++) {
			s = t->cells[r * (size_t)t->n + (size_t)i];
			s = s ? s : "";
			pad = w[i] - width(s);
			if (t->align[i] == 'r')
				fprintf(f, "%*s%s", pad, "", s);
			else if (i < last)
				fprintf(f, "%s%*s", s, pad, "");
			else
				fputs(s, f);
			if (i < last)
				fputs("  ", f);
		}
		fputc('\n', f);
	}
}

void cols_free(struct cols *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->rows * (size_t)t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
