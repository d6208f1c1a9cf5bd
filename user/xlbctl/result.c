// SPDX-License-Identifier: GPL-2.0
/* Typed access to result fields (result.h). */
#include "result.h"

json_object *r_get(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) ||
	    json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

bool r_has(json_object *o, const char *key)
{
	return r_get(o, key) != NULL;
}

const char *r_str(json_object *o, const char *key, const char *dflt)
{
	json_object *v = r_get(o, key);

	return v && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : dflt;
}

static bool is_number(json_object *v)
{
	return v && (json_object_is_type(v, json_type_int) ||
		     json_object_is_type(v, json_type_double));
}

int64_t r_int(json_object *o, const char *key, int64_t dflt)
{
	json_object *v = r_get(o, key);

	return is_number(v) ? json_object_get_int64(v) : dflt;
}

uint64_t r_u64(json_object *o, const char *key, uint64_t dflt)
{
	json_object *v = r_get(o, key);

	if (!is_number(v))
		return dflt;
	if (json_object_is_type(v, json_type_double))
		return json_object_get_double(v) < 0 ? 0 :
		       (uint64_t)json_object_get_double(v);
	return json_object_get_uint64(v);
}

double r_dbl(json_object *o, const char *key, double dflt)
{
	json_object *v = r_get(o, key);

	return is_number(v) ? json_object_get_double(v) : dflt;
}

bool r_bool(json_object *o, const char *key, bool dflt)
{
	json_object *v = r_get(o, key);

	return v && json_object_is_type(v, json_type_boolean) ?
	       json_object_get_boolean(v) : dflt;
}

json_object *r_arr(json_object *o, const char *key)
{
	json_object *v = r_get(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

size_t r_len(json_object *arr)
{
	return arr ? json_object_array_length(arr) : 0;
}

json_object *r_at(json_object *arr, size_t i)
{
	return arr ? json_object_array_get_idx(arr, i) : NULL;
}
