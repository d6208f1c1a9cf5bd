// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the config grammar (user/lib/config.c, user/lib/state.c).
 * Any input either fails to parse with a message, or parses into a state
 * whose saved text parses back into an equal state that saves to the same
 * text (`xlbctl save > xlb.conf` round-trips).  Anything else aborts.
 * Built and run by `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static void fail(const char *why, const char *a, const char *b)
{
	fprintf(stderr, "config fuzz: %s\n--- first\n%s\n--- second\n%s\n",
		why, a ? a : "", b ? b : "");
	abort();
}

/* The same bytes as one command line (a C string: up to the first NUL). */
static void parse_as_line(const uint8_t *data, size_t size)
{
	struct xlb_err err;
	struct xlb_op op;
	char *line;
	int empty;

	line = malloc(size + 1);
	if (!line)
		return;
	memcpy(line, data, size);
	line[size] = 0;
	if (xlb_op_parse_line(line, &op, &empty, &err) && !err.msg[0])
		fail("parse_line failed without a message", line, NULL);
	free(line);
}

static void round_trip(const struct xlb_state *a)
{
	char *t1 = NULL, *t2 = NULL;
	struct xlb_err err = { "" };
	struct xlb_state b;

	if (xlb_config_save(a, &t1))
		abort();
	if (xlb_config_parse(t1, strlen(t1), "saved", &b, &err))
		fail(err.msg, t1, NULL);
	if (xlb_config_save(&b, &t2))
		abort();
	if (strcmp(t1, t2))
		fail("saving the saved text changes it", t1, t2);
	if (!xlb_state_equal(a, &b))
		fail("the saved text loads into another state", t1, t2);
	free(t1);
	free(t2);
	xlb_state_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xlb_err err = { "" };
	struct xlb_state a;

	parse_as_line(data, size);
	if (xlb_config_parse((const char *)data, size, "fuzz", &a, &err)) {
		if (strncmp(err.msg, "fuzz:", 5))
			fail("error without its location", err.msg, NULL);
		return 0;
	}
	if (xlb_state_validate(&a, &err))
		fail("a parsed state does not validate", err.msg, NULL);
	round_trip(&a);
	xlb_state_free(&a);
	return 0;
}
