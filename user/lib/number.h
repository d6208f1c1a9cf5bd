/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Numbers as people write them on command lines and in config files: the
 * one parser behind the config grammar, the daemon's and the CLI's options
 * and the tools' arguments.  Each caller turns the result into a sentence
 * of its own (what was wrong, where, what is accepted).
 */
#ifndef XLB_NUMBER_H
#define XLB_NUMBER_H

#include <stdint.h>

/*
 * An unsigned decimal integer, digits only (no sign, no blanks), in
 * [lo, hi]: 0, -EINVAL (not such a number) or -ERANGE (outside [lo, hi]).
 * *v is written only on success.
 */
int xlb_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v);
int xlb_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *v);

/*
 * A finite decimal real number ("0.5", "1e3", "-2"; no blanks) in [lo, hi]:
 * 0, -EINVAL or -ERANGE, as above.
 */
int xlb_parse_real(const char *s, double lo, double hi, double *v);

#endif /* XLB_NUMBER_H */
