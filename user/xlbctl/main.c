// SPDX-License-Identifier: GPL-2.0
/*
 * xlbctl: global options, which socket, and dispatch by object.
 *
 *   xlbctl [-s PATH | -i NAME] [-j] OBJECT [VERB] [ARGUMENTS...]
 *
 * Exit status: 0 done, 1 xlbd refused or could not be reached, 2 usage
 * error (nothing was sent).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "xlbctl.h"

#define INSTANCE_MAX	32
#define SOCKET_PATH_MAX	108		/* sun_path */

struct command {
	const char *object;
	ctl_cmd_fn fn;
};

static const struct command commands[] = {
	{ "set", cmd_set },
	{ "link", cmd_link },
	{ "vip", cmd_vip },
	{ "backend", cmd_backend },
	{ "table", cmd_table },
	{ "explain", cmd_explain },
	{ "stats", cmd_stats },
	{ "top", cmd_top },
	{ "status", cmd_status },
	{ "cluster", cmd_cluster },
	{ "host", cmd_host },
	{ "save", cmd_save },
	{ "restore", cmd_restore },
	{ "reload", cmd_reload },
	{ "shutdown", cmd_shutdown },
	{ NULL, NULL },
};

int ctl_usage_error(const char *topic, const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " %s%s--help'.\n", topic ? topic : "",
		topic ? " " : "");
	return EXIT_USAGE;
}

bool ctl_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

/* As xlbd accepts them: 1..32 letters, digits, '-' or '_'. */
static bool instance_ok(const char *s)
{
	size_t i, len = strlen(s);

	if (!len || len > INSTANCE_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

static int socket_path(const char *sock, const char *instance, char *out,
		       size_t len)
{
	const char *env = getenv("XLB_SOCKET");

	if (sock && instance)
		return ctl_usage_error(NULL,
				       "--socket and --instance both name the socket; give one");
	if (instance && !instance_ok(instance))
		return ctl_usage_error(NULL,
				       "instance \"%.40s\" must be 1..%d letters, digits, '-' or '_'",
				       instance, INSTANCE_MAX);
	if (instance && strcmp(instance, XLB_INSTANCE_DEFAULT))
		snprintf(out, len, XLB_RUN_DIR "/%s.sock", instance);
	else if (sock)
		snprintf(out, len, "%s", sock);
	else if (!instance && env && *env)
		snprintf(out, len, "%s", env);
	else
		snprintf(out, len, "%s", XLB_SOCKET_DEFAULT);
	if (strlen(sock ? sock : out) >= SOCKET_PATH_MAX || !*out)
		return ctl_usage_error(NULL,
				       "socket path \"%.60s\" must be 1..%d bytes",
				       sock ? sock : out, SOCKET_PATH_MAX - 1);
	return 0;
}

/* -h/--help right after the object or the verb, or last. */
static int help_requested(int argc, char **argv)
{
	if (argc >= 2 && ctl_is_help(argv[1]))
		return 1;
	if (argc >= 3 && ctl_is_help(argv[2]))
		return 1;
	return argc >= 2 && ctl_is_help(argv[argc - 1]);
}

static int help(int argc, char **argv)
{
	const char *verb = argc >= 2 && !ctl_is_help(argv[1]) ? argv[1] : NULL;

	if (verb && !usage_known(argv[0], verb))
		verb = NULL;
	usage_print(stdout, argv[0], verb);
	return EXIT_OK;
}

static int dispatch(struct ctl *c, int argc, char **argv)
{
	const struct command *cmd;

	for (cmd = commands; cmd->object; cmd++)
		if (!strcmp(cmd->object, argv[0]))
			break;
	if (!cmd->object)
		return ctl_usage_error(NULL,
				       "unknown object \"%.40s\"; use set, link, vip, backend, table, explain, stats, top, status, cluster, host, save, restore, reload or shutdown",
				       argv[0]);
	if (help_requested(argc, argv))
		return help(argc, argv);
	return cmd->fn(c, argc, argv);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "instance", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *instance = NULL;
	char path[SOCKET_PATH_MAX + 64];
	struct ctl c = { .fd = -1 };
	int opt, ret;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:s:i:jhV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'i':
			instance = optarg;
			break;
		case 'j':
			c.json = true;
			break;
		case 'h':
			usage_print(stdout, NULL, NULL);
			return EXIT_OK;
		case 'V':
			printf(PROG " " XLB_VERSION " (control protocol %d)\n",
			       XLB_PROTO_VERSION);
			return EXIT_OK;
		case ':':
			return ctl_usage_error(NULL, "option %s needs a value",
					       argv[optind - 1]);
		default:
			if (optopt)
				return ctl_usage_error(NULL,
						       "unknown option -%c",
						       optopt);
			return ctl_usage_error(NULL, "unknown option %s",
					       argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		usage_print(stderr, NULL, NULL);
		return EXIT_USAGE;
	}
	ret = socket_path(sock, instance, path, sizeof(path));
	if (ret)
		return ret;
	c.socket = path;
	ret = dispatch(&c, argc - optind, argv + optind);
	ctl_disconnect(&c);
	return ret;
}
