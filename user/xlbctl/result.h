/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Typed access to the fields of xlbd's results (user/lib/proto.h).  A missing
 * field, a JSON null or one of another type gives the default, so a newer
 * or older daemon never crashes the CLI; it shows "-" instead.
 */
#ifndef XLBCTL_RESULT_H
#define XLBCTL_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* The field, NULL if absent or null. */
json_object *r_get(json_object *o, const char *key);
bool r_has(json_object *o, const char *key);
const char *r_str(json_object *o, const char *key, const char *dflt);
int64_t r_int(json_object *o, const char *key, int64_t dflt);
uint64_t r_u64(json_object *o, const char *key, uint64_t dflt);
double r_dbl(json_object *o, const char *key, double dflt);
bool r_bool(json_object *o, const char *key, bool dflt);
/* An array field or NULL; r_len of NULL is 0. */
json_object *r_arr(json_object *o, const char *key);
size_t r_len(json_object *arr);
json_object *r_at(json_object *arr, size_t i);

#endif /* XLBCTL_RESULT_H */
