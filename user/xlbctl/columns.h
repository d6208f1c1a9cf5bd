/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Aligned tables: a header row, then rows of cells; columns are as wide as
 * their widest cell, two spaces apart, text left-aligned and numbers
 * right-aligned (align string: one 'l' or 'r' per column).
 *
 *	struct cols *t = cols_new("NAME|ADDR|SLOTS", "llr");
 *	cols_row(t);
 *	cols_cell(t, "%s", name); ...
 *	cols_print(t, stdout, "  ");
 *	cols_free(t);
 */
#ifndef XLBCTL_COLUMNS_H
#define XLBCTL_COLUMNS_H

#include <stdio.h>

struct cols;

/* headers: column names separated by "|". */
struct cols *cols_new(const char *headers, const char *align);
void cols_row(struct cols *t);
void cols_cell(struct cols *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Every line starts with indent. */
void cols_print(const struct cols *t, FILE *f, const char *indent);
void cols_free(struct cols *t);

#endif /* XLBCTL_COLUMNS_H */
