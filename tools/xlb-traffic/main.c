// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: traffic for xlb's end-to-end tests, the demo and the
 * benchmarks.  One binary, one subcommand per role:
 *
 *   serve  on a backend: a TCP echo server (epoll, many connections) and a
 *          UDP request/response server; every reply carries the server's id
 *   conns  many short TCP connections; every byte of the echo is verified
 *          and each connection is counted for the backend that answered,
 *          with a chi-square test of the spread against expected shares
 *   hold   long-lived TCP connections sending a verified message every
 *          interval; counts the connections that break, per phase
 *   udp    UDP requests and replies, verified, counted per backend
 *   ping   ICMP/ICMPv6 echo (test hosts need no ping binary)
 *
 * Wire format, integers big-endian:
 *   TCP request  "XLBQ" seq len, then len bytes of payload
 *   TCP reply    "XLBR" seq len id[20], then the payload echoed
 *   UDP request  "XLBU" seq len payload     (one datagram)
 *   UDP reply    "XLBV" seq len id[20] payload
 * id is the server's --id, NUL-padded.  Payloads are a pattern seeded per
 * connection and request, so every byte can be checked.
 *
 * Every loop is bounded in count and time.  See xlb-traffic(1)
 * (xlb-traffic.1 beside this file).
 *
 * Files: main.c (this), one per subcommand (serve.c, conns.c, hold.c,
 * udp.c, ping.c), the TCP client connections of conns and hold (tcp.c),
 * options.c, report.c, stats.c (the chi-square test), wire.c, net.c;
 * traffic.h is what they share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "traffic.h"

const char *prog = "xlb-traffic";
volatile sig_atomic_t stop_sig;

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void on_signal(int sig)
{
	stop_sig = sig;
}

static void setup_process(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct rlimit rl;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* hundreds of connections: as many descriptors as allowed */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void write_ready(const char *path)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, path,
			strerror(errno));
}

void usage(FILE *f)
{
	fprintf(f,
"usage: xlb-traffic serve [--tcp PORT] [--udp PORT] [--id NAME] [--bind ADDR]\n"
"                         [--max-seconds S] [--ready FILE]\n"
"       xlb-traffic conns --to ADDR:PORT [-n N] [--concurrency C] [--bytes B]\n"
"                         [--timeout MS] [--max-seconds S] [--expect ID=SHARE,...]\n"
"                         [--alpha A] [--seed X] [-j] [-v]\n"
"       xlb-traffic hold  --to ADDR:PORT [-n N] --duration S [--interval MS]\n"
"                         [--bytes B] [--timeout MS] [--concurrency C]\n"
"                         [--report-every S] [--control FILE] [--ready FILE] [-j] [-v]\n"
"       xlb-traffic udp   --to ADDR:PORT [-n N] [--concurrency C] [--bytes B]\n"
"                         [--timeout MS] [--retries R] [--max-seconds S]\n"
"                         [--expect ID=SHARE,...] [--alpha A] [-j] [-v]\n"
"       xlb-traffic ping  ADDR [-c COUNT] [-W MS]\n"
"IPv6 as [ADDR]:PORT.  See xlb-traffic(1).\n");
}

void usage_exit(int c)
{
	usage(c == 'h' ? stdout : stderr);
	exit(c == 'h' ? 0 : 2);
}

void no_operands(int argc, char **argv)
{
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setup_process();
	if (!strcmp(cmd, "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "conns"))
		return cmd_conns(argc - 1, argv + 1);
	if (!strcmp(cmd, "hold"))
		return cmd_hold(argc - 1, argv + 1);
	if (!strcmp(cmd, "udp"))
		return cmd_udp(argc - 1, argv + 1);
	if (!strcmp(cmd, "ping"))
		return cmd_ping(argc - 1, argv + 1);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
