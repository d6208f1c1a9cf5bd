// SPDX-License-Identifier: GPL-2.0
/*
 * Commands that change the state.  Commands of the grammar (set, link,
 * vip, backend) are parsed here first with xlb_op_parse_argv, so a bad
 * argument is named before anything is sent; then they go to xlbd as
 * {"cmd": "exec", "args": [the tokens]}.  Convenience verbs become the
 * grammar's tokens:
 *
 *   backend drain VIP ADDR|NAME   backend set VIP ADDR state drain
 *   backend undrain VIP ADDR|NAME backend set VIP ADDR state active
 *   backend activate VIP ADDR  backend set VIP ADDR state active
 *
 * Also save, restore, reload and shutdown.  On success a change prints
 * nothing, or with -j its result ({"changed": .., "generation": ..}).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "xlbctl.h"

/* "vip add" when the verb is known, else "vip": where --help applies. */
static const char *topic_of(int argc, char **argv, char *buf, size_t len)
{
	if (argc >= 2 && usage_known(argv[0], argv[1]))
		snprintf(buf, len, "%s %s", argv[0], argv[1]);
	else
		snprintf(buf, len, "%s", argv[0]);
	return buf;
}

static void print_change(struct ctl *c, json_object *res)
{
	if (c->json)
		ctl_print_json(res);
}

/* Send one command of the grammar, checked, as exec. */
static int exec_tokens(struct ctl *c, int argc, char **argv)
{
	struct xlb_err err = { "" };
	json_object *req, *args, *res;
	struct xlb_op op;
	char topic[64], verbs[96];
	int i, ret;

	topic_of(argc, argv, topic, sizeof(topic));
	usage_verbs(argv[0], verbs, sizeof(verbs));
	if (verbs[0] && argc < 2)
		return ctl_usage_error(topic, "%s needs a verb: %s", argv[0],
				       verbs);
	if (verbs[0] && !usage_known(argv[0], argv[1]))
		return ctl_usage_error(topic,
				       "argument 2: unknown verb \"%.40s\" for %s; use %s",
				       argv[1], argv[0], verbs);
	if (xlb_op_parse_argv(argc, argv, &op, &err)) {
		ret = arg_misplaced(topic, argc, argv);
		return ret ? ret : ctl_usage_error(topic, "%s", err.msg);
	}
	req = ctl_req("exec");
	args = json_object_new_array();
	for (i = 0; i < argc; i++)
		json_object_array_add(args, json_object_new_string(argv[i]));
	json_object_object_add(req, "args", args);
	ret = ctl_call(c, req, &res, CTL_CHANGE_TIMEOUT_MS);
	if (ret)
		return ret;
	print_change(c, res);
	json_object_put(res);
	return EXIT_OK;
}

int cmd_set(struct ctl *c, int argc, char **argv)
{
	return exec_tokens(c, argc, argv);
}

int cmd_link(struct ctl *c, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return show_links(c, argc, argv);
	return exec_tokens(c, argc, argv);
}

int cmd_vip(struct ctl *c, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return show_vips(c, argc, argv);
	return exec_tokens(c, argc, argv);
}

/*
 * The address of the backend of vip named name (from backend.show), in
 * buf; 0, 1 when the VIP has no backend of that name, or EXIT_FAIL
 * (printed).  Names are the handles operators give; the grammar takes
 * the address.
 */
static int backend_addr_of(struct ctl *c, const char *vip, const char *name,
			   char *buf, size_t len)
{
	json_object *req = ctl_req("backend.show"), *res = NULL, *bs, *v;
	size_t i, n;
	int ret;

	json_object_object_add(req, "vip", json_object_new_string(vip));
	ret = ctl_call(c, req, &res, 0);
	if (ret)
		return ret;
	ret = 1;
	if (json_object_object_get_ex(res, "backends", &bs)) {
		n = json_object_array_length(bs);
		for (i = 0; i < n && ret; i++) {
			json_object *b = json_object_array_get_idx(bs, i);

			if (json_object_object_get_ex(b, "name", &v) &&
			    !strcmp(json_object_get_string(v), name) &&
			    json_object_object_get_ex(b, "addr", &v)) {
				snprintf(buf, len, "%s",
					 json_object_get_string(v));
				ret = 0;
			}
		}
	}
	json_object_put(res);
	return ret;
}

static bool is_addr(const char *s)
{
	unsigned char a[16];
	char b[64];
	size_t n = strlen(s);

	if (inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1)
		return true;
	if (n > 2 && n < sizeof(b) && s[0] == '[' && s[n - 1] == ']') {
		memcpy(b, s + 1, n - 2);
		b[n - 2] = 0;
		return inet_pton(AF_INET6, b, a) == 1;
	}
	return false;
}

/* backend drain|undrain|activate VIP ADDR|NAME */
static int backend_state(struct ctl *c, int argc, char **argv,
			 const char *state)
{
	char *tokens[6], topic[64], addr[64];
	int ret;

	snprintf(topic, sizeof(topic), "backend %s", argv[1]);
	ret = arg_misplaced(topic, argc, argv);
	if (ret)
		return ret;
	if (argc < 4)
		return ctl_usage_error(topic,
				       "backend %s needs a VIP and a backend's address or name",
				       argv[1]);
	if (argc > 4)
		return ctl_usage_error(topic,
				       "argument 5: unexpected \"%.40s\"; the command is: backend %s VIP ADDR|NAME",
				       argv[4], argv[1]);
	tokens[3] = argv[3];
	if (!is_addr(argv[3])) {
		ret = backend_addr_of(c, argv[2], argv[3], addr, sizeof(addr));
		if (ret == 1)
			return ctl_fail("VIP %s has no backend named \"%.60s\" (xlbctl backend show %s lists them)",
					argv[2], argv[3], argv[2]);
		if (ret)
			return ret;
		tokens[3] = addr;
	}
	tokens[0] = "backend";
	tokens[1] = "set";
	tokens[2] = argv[2];
	tokens[4] = "state";
	tokens[5] = (char *)state;
	return exec_tokens(c, 6, tokens);
}

int cmd_backend(struct ctl *c, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return show_backends(c, argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "drain"))
		return backend_state(c, argc, argv, "drain");
	if (argc >= 2 && (!strcmp(argv[1], "undrain") ||
			  !strcmp(argv[1], "activate")))
		return backend_state(c, argc, argv, "active");
	return exec_tokens(c, argc, argv);
}

/* Commands without arguments. */
static int no_arguments(int argc, char **argv)
{
	int ret = arg_misplaced(argv[0], argc, argv);

	if (ret)
		return ret;
	if (argc > 1)
		return ctl_usage_error(argv[0],
				       "argument 2: unexpected \"%.40s\"; %s takes no arguments",
				       argv[1], argv[0]);
	return 0;
}

int cmd_save(struct ctl *c, int argc, char **argv)
{
	json_object *res;
	const char *text;
	size_t len;
	int ret;

	ret = no_arguments(argc, argv);
	if (!ret)
		ret = ctl_call(c, ctl_req("save"), &res, 0);
	if (ret)
		return ret;
	if (c->json) {
		ctl_print_json(res);
	} else {
		text = json_object_get_string(json_object_object_get(res,
								     "text"));
		len = text ? strlen(text) : 0;
		fputs(text ? text : "", stdout);
		if (len && text[len - 1] != '\n')
			putchar('\n');
	}
	json_object_put(res);
	return EXIT_OK;
}

/* The whole of FILE ('-': stdin), at most XLB_FILE_MAX bytes. */
static int read_config(const char *path, char **text, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t n = 0, got;
	char *buf;

	if (!f)
		return ctl_fail("cannot open %s: %s", path, strerror(errno));
	buf = malloc(XLB_FILE_MAX + 1);
	if (!buf) {
		if (f != stdin)
			fclose(f);
		return ctl_fail("out of memory");
	}
	while ((got = fread(buf + n, 1, XLB_FILE_MAX + 1 - n, f)) > 0)
		n += got;
	if (ferror(f) || n > XLB_FILE_MAX) {
		free(buf);
		if (f != stdin)
			fclose(f);
		if (n > XLB_FILE_MAX)
			return ctl_fail("%s is larger than %u bytes, the limit of a config",
					path, XLB_FILE_MAX);
		return ctl_fail("cannot read %s", path);
	}
	if (f != stdin)
		fclose(f);
	buf[n] = 0;
	*text = buf;
	*len = n;
	return 0;
}

int cmd_restore(struct ctl *c, int argc, char **argv)
{
	const char *name;
	struct xlb_err err = { "" };
	struct xlb_state s;
	json_object *req, *res;
	char *text = NULL;
	size_t len = 0;
	int ret;

	ret = arg_misplaced("restore", argc, argv);
	if (ret)
		return ret;
	if (argc != 2)
		return ctl_usage_error("restore", argc < 2 ?
				       "restore needs a FILE ('-': standard input)" :
				       "restore takes one FILE");
	ret = read_config(argv[1], &text, &len);
	if (ret)
		return ret;
	name = strcmp(argv[1], "-") ? argv[1] : "<stdin>";
	/* The same check xlbd makes first; it needs no daemon. */
	if (xlb_config_parse(text, len, name, &s, &err)) {
		free(text);
		return ctl_fail("%s", err.msg);
	}
	xlb_state_free(&s);
	req = ctl_req("restore");
	json_object_object_add(req, "text",
			       json_object_new_string_len(text, (int)len));
	json_object_object_add(req, "name", json_object_new_string(name));
	free(text);
	ret = ctl_call(c, req, &res, CTL_CHANGE_TIMEOUT_MS);
	if (ret)
		return ret;
	print_change(c, res);
	json_object_put(res);
	return EXIT_OK;
}

static int simple_change(struct ctl *c, int argc, char **argv)
{
	json_object *res;
	int ret;

	ret = no_arguments(argc, argv);
	if (!ret)
		ret = ctl_call(c, ctl_req(argv[0]), &res,
			       CTL_CHANGE_TIMEOUT_MS);
	if (ret)
		return ret;
	print_change(c, res);
	json_object_put(res);
	return EXIT_OK;
}

int cmd_reload(struct ctl *c, int argc, char **argv)
{
	return simple_change(c, argc, argv);
}

int cmd_shutdown(struct ctl *c, int argc, char **argv)
{
	return simple_change(c, argc, argv);
}
