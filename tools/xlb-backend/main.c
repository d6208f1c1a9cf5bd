// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-backend: the backend host, in one command.  The command line; the
 * work is in setup.c (setup, teardown), check.c (check, the probe),
 * conf.c (the files) and net.c (the kernel).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "backend.h"

void xb_err(const char *fmt, ...)
{
	va_list ap;

	fputs("xlb-backend: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: xlb-backend setup --dev IF[,IF...] [--mode xdp|redirect|none]\n"
"                         [--allow PREFIX[,PREFIX...]] [--xdp-mode auto|native|generic]\n"
"                         [--gue-port N] [FILES] VIP...\n"
"       xlb-backend check [--no-probe] [FILES] [--dev IF... [--mode ...] VIP...]\n"
"       xlb-backend teardown [FILES]\n"
"       xlb-backend start [FILES]        (the unit: setup from the saved configuration)\n"
"       xlb-backend show [FILES]         (the saved configuration and the state)\n"
"FILES: [--config FILE (%s)] [--state FILE (%s)]\n"
"       (or the environment's XLB_BACKEND_CONFIG, XLB_BACKEND_STATE)\n"
"\n"
"Prepares this host (this network namespace) to be a backend of xlb with\n"
"direct server return: decapsulation (the decap program on each IF, or the\n"
"xlb_redirect module with the LB source allowlist; none: the host's own\n"
"tunnel devices), the VIPs local on lo,\n"
"arp_ignore 1, arp_announce 2, no strict rp_filter.  setup records every\n"
"change in the state file and saves what it was asked for the unit (%s);\n"
"teardown undoes exactly the recorded changes.  check prints one line per\n"
"requirement (ok, FAIL with the fix, skip with why) and proves\n"
"decapsulation with a tunnel packet through the real receive path.\n"
"\n"
"VIP: ADDR, ADDR/LEN (a local route for the prefix), or xlbctl's\n"
"ADDR:PORT/PROTO and [ADDR6]:PORT/PROTO.  Exit status: 0 done (check: every\n"
"requirement holds), 1 failed (nothing changed when setup fails), 2 usage.\n"
"man xlb-backend(8).\n", XB_CONF_DEFAULT, XB_STATE_DEFAULT, XB_UNIT);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_WARN && getenv("XLB_BACKEND_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Each comma-separated word of arg, through add; -1 on the first bad one. */
static int each_word(const char *arg, const char *opt, struct xb_conf *c,
		     int (*add)(struct xb_conf *, const char *, const char *))
{
	char buf[1024], *save, *w;

	if (strlen(arg) >= sizeof(buf) || !*arg) {
		xb_err("%s: bad argument", opt);
		return -1;
	}
	strcpy(buf, arg);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (add(c, w, opt))
			return -1;
	return 0;
}

static int add_dev(struct xb_conf *c, const char *w, const char *opt)
{
	if (c->n_devs == XB_MAX_DEVS) {
		xb_err("%s: at most %d interfaces", opt, XB_MAX_DEVS);
		return -1;
	}
	if (strlen(w) >= sizeof(c->devs[0]) || strchr(w, '/')) {
		xb_err("%s: '%s' is not an interface name", opt, w);
		return -1;
	}
	strcpy(c->devs[c->n_devs++], w);
	return 0;
}

static int add_allow(struct xb_conf *c, const char *w, const char *opt)
{
	char why[160];

	if (c->n_allow == XB_MAX_ALLOW) {
		xb_err("%s: at most %d prefixes", opt, XB_MAX_ALLOW);
		return -1;
	}
	if (xb_parse_prefix(w, false, &c->allow[c->n_allow], why, sizeof(why))) {
		xb_err("%s '%s': %s", opt, w, why);
		return -1;
	}
	c->n_allow++;
	return 0;
}

static int add_vip(struct xb_conf *c, const char *w)
{
	char why[160];

	if (c->n_vips == XB_MAX_VIPS) {
		xb_err("at most %d VIPs", XB_MAX_VIPS);
		return -1;
	}
	if (xb_parse_prefix(w, true, &c->vips[c->n_vips], why, sizeof(why))) {
		xb_err("VIP '%s': %s (VIP forms: ADDR, ADDR/LEN, ADDR:PORT/PROTO, [ADDR6]:PORT/PROTO)",
		       w, why);
		return -1;
	}
	c->n_vips++;
	return 0;
}

static void show(const char *conf_path, const char *state_path)
{
	char line[XB_LINE];
	FILE *f;

	printf("# %s\n", conf_path);
	f = fopen(conf_path, "re");
	if (!f) {
		printf("(none)\n");
	} else {
		while (fgets(line, sizeof(line), f))
			if (line[0] != '#')
				fputs(line, stdout);
		fclose(f);
	}
	printf("# %s\n", state_path);
	f = fopen(state_path, "re");
	if (!f) {
		printf("(none)\n");
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#')
			fputs(line, stdout);
	fclose(f);
}

enum { OPT_CONFIG = 256, OPT_STATE, OPT_MODE, OPT_XDP_MODE, OPT_ALLOW,
       OPT_GUE_PORT, OPT_NO_PROBE, OPT_DEV };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "dev", required_argument, NULL, OPT_DEV },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "xdp-mode", required_argument, NULL, OPT_XDP_MODE },
		{ "allow", required_argument, NULL, OPT_ALLOW },
		{ "gue-port", required_argument, NULL, OPT_GUE_PORT },
		{ "no-probe", no_argument, NULL, OPT_NO_PROBE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_path = XB_CONF_DEFAULT, *state_path = XB_STATE_DEFAULT;
	static struct xb_conf c, saved;
	bool probe = true, given = false, default_conf;
	const char *cmd;
	int o, r;

	memset(&c, 0, sizeof(c));
	c.gue_port = 6080;
	if (getenv("XLB_BACKEND_CONFIG") && *getenv("XLB_BACKEND_CONFIG"))
		conf_path = getenv("XLB_BACKEND_CONFIG");
	if (getenv("XLB_BACKEND_STATE") && *getenv("XLB_BACKEND_STATE"))
		state_path = getenv("XLB_BACKEND_STATE");
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "setup") && strcmp(cmd, "check") && strcmp(cmd, "teardown") &&
	    strcmp(cmd, "start") && strcmp(cmd, "show")) {
		xb_err("unknown command '%s'", cmd);
		usage(stderr);
		return 2;
	}
	optind = 2;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case OPT_CONFIG:
			conf_path = optarg;
			break;
		case OPT_STATE:
			state_path = optarg;
			break;
		case OPT_DEV:
			if (each_word(optarg, "--dev", &c, add_dev))
				return 2;
			given = true;
			break;
		case OPT_ALLOW:
			if (each_word(optarg, "--allow", &c, add_allow))
				return 2;
			given = true;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "xdp"))
				c.mode = XB_MODE_XDP;
			else if (!strcmp(optarg, "redirect"))
				c.mode = XB_MODE_REDIRECT;
			else if (!strcmp(optarg, "none"))
				c.mode = XB_MODE_NONE;
			else {
				xb_err("--mode: '%s' is not xdp, redirect or none", optarg);
				return 2;
			}
			given = true;
			break;
		case OPT_XDP_MODE:
			if (!strcmp(optarg, "auto"))
				c.xdp_mode = XB_XDP_AUTO;
			else if (!strcmp(optarg, "native"))
				c.xdp_mode = XB_XDP_NATIVE;
			else if (!strcmp(optarg, "generic"))
				c.xdp_mode = XB_XDP_GENERIC;
			else {
				xb_err("--xdp-mode: '%s' is not auto, native or generic", optarg);
				return 2;
			}
			given = true;
			break;
		case OPT_GUE_PORT:
			if (xb_parse_port(optarg, &c.gue_port)) {
				xb_err("--gue-port: '%s' is not a port 1..65535", optarg);
				return 2;
			}
			given = true;
			break;
		case OPT_NO_PROBE:
			probe = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (; optind < argc; optind++) {
		if (add_vip(&c, argv[optind]))
			return 2;
		given = true;
	}
	if (c.n_allow && c.mode != XB_MODE_REDIRECT) {
		xb_err("--allow is for --mode redirect");
		return 2;
	}
	if (c.xdp_mode != XB_XDP_AUTO && c.mode != XB_MODE_XDP) {
		xb_err("--xdp-mode is for --mode xdp");
		return 2;
	}
	default_conf = !strcmp(conf_path, XB_CONF_DEFAULT);
	libbpf_set_print(libbpf_quiet);

	if (!strcmp(cmd, "setup")) {
		if (!c.n_vips || !c.n_devs) {
			xb_err("setup needs --dev IF and at least one VIP");
			usage(stderr);
			return 2;
		}
		r = xb_setup(&c, conf_path, state_path, true);
	} else if (!strcmp(cmd, "check")) {
		if (given) {
			if (!c.n_vips || !c.n_devs) {
				xb_err("check with arguments needs --dev IF and at least one VIP");
				return 2;
			}
			r = xb_check(&c, conf_path, state_path, probe, default_conf, false);
		} else {
			r = xb_conf_read(conf_path, &saved);
			if (r > 0) {
				xb_err("nothing to check: no %s (run setup, or give --dev IF and VIPs)",
				       conf_path);
				return 1;
			}
			if (r < 0)
				return 1;
			r = xb_check(&saved, conf_path, state_path, probe,
				     default_conf, true);
		}
	} else if (given) {
		xb_err("%s takes no VIPs or setup options", cmd);
		return 2;
	} else if (!strcmp(cmd, "teardown")) {
		r = xb_teardown(conf_path, state_path, true);
	} else if (!strcmp(cmd, "start")) {
		r = xb_conf_read(conf_path, &saved);
		if (r > 0) {
			printf("no %s: nothing to set up\n", conf_path);
			return 0;
		}
		if (r < 0)
			return 1;
		if (!access(state_path, F_OK)) {
			printf("set up already (%s); nothing to do\n", state_path);
			return 0;
		}
		r = xb_setup(&saved, conf_path, state_path, false);
	} else {
		show(conf_path, state_path);
		r = 0;
	}
	xb_nl_close();
	return r;
}
