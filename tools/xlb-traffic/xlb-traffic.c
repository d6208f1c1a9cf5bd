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
 * Every loop is bounded in count and time.  See tools/xlb-traffic/xlb-traffic.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mono.h"
#include "number.h"

#define REQ_MAGIC	0x584c4251u	/* "XLBQ" */
#define RSP_MAGIC	0x584c4252u	/* "XLBR" */
#define UREQ_MAGIC	0x584c4255u	/* "XLBU" */
#define URSP_MAGIC	0x584c4256u	/* "XLBV" */
#define ID_LEN		20
#define REQ_HLEN	12
#define RSP_HLEN	(12 + ID_LEN)
#define TCP_LEN_MAX	(64u << 20)
#define UDP_LEN_MAX	(65507u - RSP_HLEN)

#define MAX_IDS		64	/* distinct backend ids one run tells apart */
#define MAX_PHASES	32
#define CHUNK		16384
#define SRV_OUT		16384	/* a server connection's output buffer */
#define MAX_EVENTS	256

static const char *prog = "xlb-traffic";
static volatile sig_atomic_t stop_sig;

/* --- small helpers ------------------------------------------------------ */

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* n bytes of the payload pattern of stream `seed`, from offset off. */
static void pattern(uint64_t seed, uint64_t off, uint8_t *buf, size_t n)
{
	uint64_t w = 0, blk = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++, off++) {
		if (off >> 3 != blk) {
			blk = off >> 3;
			w = mix64(seed ^ mix64(blk));
		}
		buf[i] = w >> ((off & 7) * 8);
	}
}

static uint64_t parse_num(const char *s, const char *what, uint64_t min,
			  uint64_t max)
{
	uint64_t v;

	if (xlb_parse_u64(s, min, max, &v))
		die("%s: '%s' is not a number from %llu to %llu", what, s,
		    (unsigned long long)min, (unsigned long long)max);
	return v;
}

static double parse_real(const char *s, const char *what, double min,
			 double max)
{
	double v;

	if (xlb_parse_real(s, min, max, &v))
		die("%s: '%s' is not a number from %g to %g", what, s, min,
		    max);
	return v;
}

static bool parse_ip(const char *s, struct sockaddr_storage *ss,
		     socklen_t *len, uint16_t port)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return true;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return true;
	}
	return false;
}

/* "A.B.C.D:PORT" or "[V6]:PORT" */
static void parse_hostport(const char *s, struct sockaddr_storage *ss,
			   socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hl;

	colon = strrchr(s, ':');
	if (!colon)
		die("--to: '%s' is not ADDR:PORT ([ADDR]:PORT for IPv6)", s);
	hl = colon - s;
	if (*s == '[') {
		if (hl < 2 || s[hl - 1] != ']')
			die("--to: '%s' is not [IPV6]:PORT", s);
		h = s + 1;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		die("--to: '%s': address too long", s);
	memcpy(host, h, hl);
	host[hl] = 0;
	if (!parse_ip(host, ss, len,
		      parse_num(colon + 1, "--to port", 1, 65535)))
		die("--to: '%s' is not an IPv4 or IPv6 address", host);
	if (ss->ss_family == AF_INET6 && *s != '[')
		die("--to: write IPv6 as [ADDR]:PORT");
}

static const char *sa_str(const struct sockaddr_storage *ss, char *buf,
			  size_t n)
{
	const struct sockaddr_in6 *s6 = (const void *)ss;
	const struct sockaddr_in *s4 = (const void *)ss;
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, n, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, n, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return buf;
}

static bool id_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
	       c == ':';
}

static bool id_ok(const char *id, size_t n)
{
	size_t i;

	for (i = 0; i < n && id[i]; i++)
		if (!id_char_ok(id[i]))
			return false;
	for (; i < n; i++)	/* NUL padding only */
		if (id[i])
			return false;
	return id[0] != 0;
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

static void write_ready(const char *path)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, path,
			strerror(errno));
}

static int epoll_set(int ep, int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(ep, op, fd, &ev);
}

/* --- backend ids and their counts --------------------------------------- */

static char ids[MAX_IDS][ID_LEN + 1];
static int nids;

/* The index of id (ID_LEN bytes, NUL-padded), added if new; -1 if full. */
static int id_index(const char *id)
{
	int i;

	for (i = 0; i < nids; i++)
		if (!strncmp(ids[i], id, ID_LEN))
			return i;
	if (nids == MAX_IDS)
		return -1;
	memcpy(ids[nids], id, ID_LEN);
	ids[nids][ID_LEN] = 0;
	return nids++;
}

/* Regularized upper incomplete gamma Q(a, x) (series / continued fraction). */
static double gamma_q(double a, double x)
{
	double gln = lgamma(a), sum, del, ap, b, c, d, h, an;
	int i;

	if (x <= 0)
		return 1;
	if (x < a + 1) {
		ap = a;
		sum = del = 1 / a;
		for (i = 0; i < 10000; i++) {
			ap += 1;
			del *= x / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * 1e-15)
				break;
		}
		return 1 - sum * exp(-x + a * log(x) - gln);
	}
	b = x + 1 - a;
	c = 1e300;
	d = 1 / b;
	h = d;
	for (i = 1; i < 10000; i++) {
		an = -i * (i - a);
		b += 2;
		d = an * d + b;
		if (fabs(d) < 1e-300)
			d = 1e-300;
		c = b + an / c;
		if (fabs(c) < 1e-300)
			c = 1e-300;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return exp(-x + a * log(x) - gln) * h;
}

struct spread {
	double expect[MAX_IDS];	/* share, 0..1 */
	double chi2, p;
	int df;
	bool given;		/* --expect, else equal over observed ids */
};

/* "id=share,..." (shares are weights, normalized); ids are registered. */
static void parse_expect(const char *s, struct spread *sp)
{
	char *copy = strdup(s), *tok, *save = NULL, *eq;
	char id[ID_LEN] = { 0 };
	double sum = 0;
	int i;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq || eq == tok || (size_t)(eq - tok) > ID_LEN)
			die("--expect: '%s' is not ID=SHARE", tok);
		memset(id, 0, sizeof(id));
		memcpy(id, tok, eq - tok);
		if (!id_ok(id, ID_LEN))
			die("--expect: bad id '%.*s'", (int)(eq - tok), tok);
		i = id_index(id);
		if (i < 0)
			die("--expect: more than %d ids", MAX_IDS);
		sp->expect[i] = parse_real(eq + 1, "--expect share", 0, 1e9);
		sum += sp->expect[i];
	}
	free(copy);
	if (!(sum > 0))
		die("--expect: the shares add up to 0");
	for (i = 0; i < nids; i++)
		sp->expect[i] /= sum;
	sp->given = true;
}

/* Pearson's chi-square of counts against the expected shares. */
static void spread_test(struct spread *sp, const uint64_t *count)
{
	uint64_t total = 0;
	double e;
	int i, cats = 0;

	for (i = 0; i < nids; i++)
		total += count[i];
	if (!sp->given) {
		for (i = 0; i < nids; i++)
			cats += count[i] > 0;
		for (i = 0; i < nids; i++)
			sp->expect[i] = count[i] ? 1.0 / cats : 0;
		cats = 0;
	}
	sp->chi2 = 0;
	for (i = 0; i < nids; i++) {
		e = total * sp->expect[i];
		if (e > 0) {
			sp->chi2 += (count[i] - e) * (count[i] - e) / e;
			cats++;
		} else if (count[i]) {
			sp->chi2 = INFINITY;
		}
	}
	sp->df = cats > 0 ? cats - 1 : 0;
	if (isinf(sp->chi2))
		sp->p = 0;
	else if (sp->df < 1 || !total)
		sp->p = 1;
	else
		sp->p = gamma_q(sp->df / 2.0, sp->chi2 / 2);
}

static void json_num(const char *key, double v, bool comma)
{
	if (isfinite(v))
		printf("\"%s\":%.6g%s", key, v, comma ? "," : "");
	else
		printf("\"%s\":null%s", key, comma ? "," : "");
}

/* --- failure reasons ---------------------------------------------------- */

enum reason {
	R_REFUSED,
	R_RESET,
	R_UNREACH,
	R_CONNECT_TIMEOUT,
	R_TIMEOUT,
	R_EOF,
	R_BAD_HEADER,
	R_BAD_DATA,
	R_ID_CHANGED,
	R_ERROR,
	R_COUNT,
};

static const char *const reason_name[R_COUNT] = {
	[R_REFUSED] = "refused",
	[R_RESET] = "reset",
	[R_UNREACH] = "unreachable",
	[R_CONNECT_TIMEOUT] = "connect_timeout",
	[R_TIMEOUT] = "timeout",
	[R_EOF] = "eof",
	[R_BAD_HEADER] = "bad_header",
	[R_BAD_DATA] = "bad_data",
	[R_ID_CHANGED] = "id_changed",
	[R_ERROR] = "error",
};

static enum reason errno_reason(int e)
{
	switch (e) {
	case ECONNREFUSED:
		return R_REFUSED;
	case ECONNRESET:
	case EPIPE:
		return R_RESET;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return R_UNREACH;
	case ETIMEDOUT:
		return R_TIMEOUT;
	default:
		return R_ERROR;
	}
}

static void print_reasons_text(const uint64_t *r)
{
	bool any = false;
	int i;

	for (i = 0; i < R_COUNT; i++) {
		if (!r[i])
			continue;
		printf("%s %s %llu", any ? "," : "failures:", reason_name[i],
		       (unsigned long long)r[i]);
		any = true;
	}
	if (any)
		printf("\n");
}

static void print_reasons_json(const char *key, const uint64_t *r)
{
	int i;

	printf("\"%s\":{", key);
	for (i = 0; i < R_COUNT; i++)
		printf("%s\"%s\":%llu", i ? "," : "", reason_name[i],
		       (unsigned long long)r[i]);
	printf("}");
}

/* --- client options ----------------------------------------------------- */

struct copts {
	struct sockaddr_storage to;
	socklen_t tolen;
	char to_str[64];
	uint64_t n;
	uint32_t conc;
	uint32_t bytes;
	double timeout;		/* s: connect, one reply */
	double max_seconds;
	double duration;	/* hold */
	double interval;	/* hold, s */
	double report_every;	/* hold, s; 0: none */
	const char *control;	/* hold */
	const char *ready;	/* hold */
	uint32_t retries;	/* udp */
	double alpha;		/* < 0: p not judged */
	uint64_t seed;
	int verbose;
	bool json;
	struct spread sp;
};

enum {
	OPT_TO = 256, OPT_CONC, OPT_BYTES, OPT_TIMEOUT, OPT_MAX, OPT_DURATION,
	OPT_INTERVAL, OPT_REPORT, OPT_CONTROL, OPT_READY, OPT_RETRIES,
	OPT_EXPECT, OPT_ALPHA, OPT_SEED, OPT_TCP, OPT_UDP, OPT_ID, OPT_BIND,
};

static const struct option client_longopts[] = {
	{ "to", required_argument, NULL, OPT_TO },
	{ "concurrency", required_argument, NULL, OPT_CONC },
	{ "bytes", required_argument, NULL, OPT_BYTES },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "max-seconds", required_argument, NULL, OPT_MAX },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "report-every", required_argument, NULL, OPT_REPORT },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "ready", required_argument, NULL, OPT_READY },
	{ "retries", required_argument, NULL, OPT_RETRIES },
	{ "expect", required_argument, NULL, OPT_EXPECT },
	{ "alpha", required_argument, NULL, OPT_ALPHA },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "json", no_argument, NULL, 'j' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
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

/* mode: 'c' conns, 'h' hold, 'u' udp */
static void parse_client(int argc, char **argv, int mode, struct copts *o)
{
	bool have_to = false, have_duration = false;
	const char *expect = NULL;
	int c;

	memset(o, 0, sizeof(*o));
	o->n = mode == 'h' ? 100 : 1000;
	o->conc = mode == 'h' ? 64 : 32;
	o->bytes = mode == 'c' ? 1000 : mode == 'h' ? 32 : 100;
	o->timeout = mode == 'u' ? 1 : 5;
	o->max_seconds = mode == 'h' ? 0 : 120;
	o->interval = 0.2;
	o->retries = 2;
	o->alpha = -1;
	o->seed = mix64((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL));
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:jvh", client_longopts,
				NULL)) != -1) {
		switch (c) {
		case OPT_TO:
			parse_hostport(optarg, &o->to, &o->tolen);
			sa_str(&o->to, o->to_str, sizeof(o->to_str));
			have_to = true;
			break;
		case 'n':
			o->n = parse_num(optarg, "-n", 1, 10000000);
			break;
		case OPT_CONC:
			o->conc = parse_num(optarg, "--concurrency", 1, 65536);
			break;
		case OPT_BYTES:
			o->bytes = parse_num(optarg, "--bytes", 0,
					     mode == 'u' ? UDP_LEN_MAX :
					     TCP_LEN_MAX);
			break;
		case OPT_TIMEOUT:
			o->timeout = parse_num(optarg, "--timeout", 1,
					       3600000) / 1000.0;
			break;
		case OPT_MAX:
			o->max_seconds = parse_real(optarg, "--max-seconds",
						    0.001, 86400);
			break;
		case OPT_DURATION:
			o->duration = parse_real(optarg, "--duration", 0.001,
						 86400);
			have_duration = true;
			break;
		case OPT_INTERVAL:
			o->interval = parse_num(optarg, "--interval", 1,
						3600000) / 1000.0;
			break;
		case OPT_REPORT:
			o->report_every = parse_real(optarg, "--report-every",
						     0.01, 86400);
			break;
		case OPT_CONTROL:
			o->control = optarg;
			break;
		case OPT_READY:
			o->ready = optarg;
			break;
		case OPT_RETRIES:
			o->retries = parse_num(optarg, "--retries", 0, 100);
			break;
		case OPT_EXPECT:
			expect = optarg;
			break;
		case OPT_ALPHA:
			o->alpha = parse_real(optarg, "--alpha", 0, 1);
			break;
		case OPT_SEED:
			o->seed = parse_num(optarg, "--seed", 0, UINT64_MAX);
			break;
		case 'j':
			o->json = true;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!have_to)
		die("--to ADDR:PORT is required");
	if (mode == 'h' && !have_duration)
		die("hold: --duration S is required");
	if (mode == 'h' && (expect || o->alpha >= 0))
		die("hold: --expect and --alpha are for conns and udp");
	if (mode != 'h' && (have_duration || o->control || o->ready ||
			    o->report_every))
		die("--duration, --control, --ready and --report-every are "
		    "for hold");
	if (expect)
		parse_expect(expect, &o->sp);
}

/* --- TCP client connections (conns, hold) ------------------------------- */

enum cstate { C_IDLE, C_CONNECTING, C_OPEN, C_DONE, C_BROKEN };

struct cconn {
	int fd;
	enum cstate state;
	uint64_t idx;
	double deadline;	/* of the connect or the reply in flight */
	double next_send;	/* hold: when the next request goes */
	uint64_t seed;		/* of the request in flight */
	uint32_t seq, len;
	uint32_t sent, rcvd;	/* request and reply bytes so far */
	bool busy;		/* a request in flight */
	uint32_t events;	/* registered with epoll */
	int backend;		/* id index, -1 before the first reply */
	enum reason why;	/* when C_BROKEN */
	int err;		/* errno behind why, or 0 */
	uint8_t rhdr[RSP_HLEN];
};

static int failure_lines;

static void cconn_note(const struct copts *o, const struct cconn *c)
{
	if (!o->verbose || failure_lines >= 20)
		return;
	failure_lines++;
	fprintf(stderr, "%s: connection %llu: %s%s%s\n", prog,
		(unsigned long long)c->idx, reason_name[c->why],
		c->err ? ": " : "", c->err ? strerror(c->err) : "");
}

static void cconn_close(struct cconn *c, int ep)
{
	if (c->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
}

/* Mark broken; returns -1 for the callers' convenience. */
static int cconn_fail(struct cconn *c, enum reason why, int err)
{
	c->state = C_BROKEN;
	c->why = why;
	c->err = err;
	return -1;
}

static void cconn_interest(struct cconn *c, int ep)
{
	uint32_t ev = EPOLLIN;

	if (c->state == C_CONNECTING || (c->busy &&
					 c->sent < REQ_HLEN + c->len))
		ev = EPOLLOUT | (c->state == C_CONNECTING ? 0 : EPOLLIN);
	if (ev != c->events && !epoll_set(ep, EPOLL_CTL_MOD, c->fd, ev, c))
		c->events = ev;
}

/* Start a nonblocking connect; -1 if it failed at once (c broken). */
static int cconn_open(struct cconn *c, const struct copts *o, int ep,
		      uint64_t idx)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->idx = idx;
	c->backend = -1;
	c->fd = socket(o->to.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return cconn_fail(c, R_ERROR, errno);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->state = C_CONNECTING;
	c->deadline = xlb_mono_s() + o->timeout;
	if (connect(c->fd, (const struct sockaddr *)&o->to, o->tolen) &&
	    errno != EINPROGRESS) {
		cconn_fail(c, errno_reason(errno), errno);
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	c->events = EPOLLOUT;
	if (epoll_set(ep, EPOLL_CTL_ADD, c->fd, c->events, c)) {
		cconn_fail(c, R_ERROR, errno);
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static int cconn_send(struct cconn *c)
{
	uint32_t total = REQ_HLEN + c->len, k, off;
	uint8_t buf[CHUNK];
	ssize_t n;
	int i;

	/* bounded: each round sends bytes or returns */
	for (i = 0; c->sent < total && i < 64; i++) {
		off = c->sent;
		k = 0;
		if (off < REQ_HLEN) {
			uint8_t h[REQ_HLEN];

			put32(h, REQ_MAGIC);
			put32(h + 4, c->seq);
			put32(h + 8, c->len);
			k = REQ_HLEN - off;
			memcpy(buf, h + off, k);
			off = REQ_HLEN;
		}
		if (total - off > sizeof(buf) - k) {
			pattern(c->seed, off - REQ_HLEN, buf + k,
				sizeof(buf) - k);
			k = sizeof(buf);
		} else {
			pattern(c->seed, off - REQ_HLEN, buf + k, total - off);
			k += total - off;
		}
		n = send(c->fd, buf, k, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return cconn_fail(c, errno_reason(errno), errno);
		}
		c->sent += n;
	}
	return 0;
}

/* Check a reply header; records the backend. */
static int cconn_header(struct cconn *c)
{
	int b;

	if (get32(c->rhdr) != RSP_MAGIC || get32(c->rhdr + 4) != c->seq ||
	    get32(c->rhdr + 8) != c->len ||
	    !id_ok((const char *)c->rhdr + 12, ID_LEN))
		return cconn_fail(c, R_BAD_HEADER, 0);
	b = id_index((const char *)c->rhdr + 12);
	if (b < 0)
		return cconn_fail(c, R_BAD_HEADER, 0);
	if (c->backend >= 0 && c->backend != b)
		return cconn_fail(c, R_ID_CHANGED, 0);
	c->backend = b;
	return 0;
}

/* Read what is there; 1 when the reply is complete, 0 for more, -1 broken. */
static int cconn_recv(struct cconn *c)
{
	uint8_t buf[CHUNK], want[CHUNK];
	uint32_t total = RSP_HLEN + c->len, room, h;
	ssize_t n;
	int i;

	for (i = 0; i < 64; i++) {
		room = c->busy ? total - c->rcvd : sizeof(buf);
		n = recv(c->fd, buf, room < sizeof(buf) ? room : sizeof(buf),
			 MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return cconn_fail(c, errno_reason(errno), errno);
		}
		if (n == 0)
			return cconn_fail(c, R_EOF, 0);
		if (!c->busy)	/* nothing was asked */
			return cconn_fail(c, R_BAD_HEADER, 0);
		h = 0;
		if (c->rcvd < RSP_HLEN) {
			h = RSP_HLEN - c->rcvd;
			if (h > n)
				h = n;
			memcpy(c->rhdr + c->rcvd, buf, h);
			c->rcvd += h;
			if (c->rcvd == RSP_HLEN && cconn_header(c))
				return -1;
		}
		if (n > h) {
			pattern(c->seed, c->rcvd - RSP_HLEN, want, n - h);
			if (memcmp(buf + h, want, n - h))
				return cconn_fail(c, R_BAD_DATA, 0);
			c->rcvd += n - h;
		}
		if (c->rcvd == total) {
			c->busy = false;
			return 1;
		}
	}
	return 0;
}

static void cconn_request(struct cconn *c, const struct copts *o, int ep)
{
	c->seq++;
	c->len = o->bytes;
	c->seed = mix64(o->seed ^ mix64(c->idx << 24 ^ c->seq));
	c->sent = c->rcvd = 0;
	c->busy = true;
	c->deadline = xlb_mono_s() + o->timeout;
	if (!cconn_send(c))
		cconn_interest(c, ep);
}

/* Handle an event; 1: a reply completed, 0: nothing yet, -1: broken. */
static int cconn_event(struct cconn *c, const struct copts *o, int ep,
		       uint32_t ev)
{
	socklen_t sl = sizeof(int);
	int err = 0, r;

	if (c->state == C_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl))
			err = errno;
		if (err)
			return cconn_fail(c, errno_reason(err), err);
		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return 0;
		c->state = C_OPEN;
		cconn_request(c, o, ep);
		return c->state == C_BROKEN ? -1 : 0;
	}
	if (ev & EPOLLOUT && c->busy && cconn_send(c))
		return -1;
	r = 0;
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
		r = cconn_recv(c);
	if (r >= 0 && c->state != C_BROKEN)
		cconn_interest(c, ep);
	return c->state == C_BROKEN ? -1 : r;
}

/* --- conns -------------------------------------------------------------- */

static int print_spread(const struct copts *o, const uint64_t *count,
			uint64_t total)
{
	int i;

	printf("%-20s %8s %8s %8s\n", "backend", "count", "share",
	       "expected");
	for (i = 0; i < nids; i++)
		printf("%-20s %8llu %8.4f %8.4f\n", ids[i],
		       (unsigned long long)count[i],
		       total ? (double)count[i] / total : 0.0,
		       o->sp.expect[i]);
	printf("chi2 %.3f df %d p %.4g", o->sp.chi2, o->sp.df, o->sp.p);
	if (o->alpha >= 0)
		printf(" (alpha %g: %s)", o->alpha,
		       o->sp.p >= o->alpha ? "consistent" : "REJECTED");
	printf("\n");
	return 0;
}

static void json_spread(const struct copts *o, const uint64_t *count,
			uint64_t total)
{
	int i;

	printf("\"backends\":{");
	for (i = 0; i < nids; i++) {
		printf("%s\"%s\":{\"count\":%llu,", i ? "," : "", ids[i],
		       (unsigned long long)count[i]);
		json_num("share", total ? (double)count[i] / total : 0, true);
		json_num("expected", o->sp.expect[i], false);
		printf("}");
	}
	printf("},");
	json_num("chi2", o->sp.chi2, true);
	printf("\"df\":%d,", o->sp.df);
	json_num("p", o->sp.p, false);
}

/* The report of conns and udp; returns the exit status. */
static int report_counts(const char *mode, struct copts *o,
			 const uint64_t *count, const uint64_t *reasons,
			 uint64_t done, uint64_t failed, double secs)
{
	bool ok;

	spread_test(&o->sp, count);
	ok = !failed && done == o->n && (o->alpha < 0 || o->sp.p >= o->alpha);
	if (o->json) {
		printf("{\"mode\":\"%s\",\"to\":\"%s\",\"requested\":%llu,"
		       "\"completed\":%llu,\"failed\":%llu,"
		       "\"not_run\":%llu,", mode, o->to_str,
		       (unsigned long long)o->n, (unsigned long long)done,
		       (unsigned long long)failed,
		       (unsigned long long)(o->n - done - failed));
		print_reasons_json("failures", reasons);
		printf(",");
		json_num("seconds", secs, true);
		json_spread(o, count, done);
		printf(",\"ok\":%s}\n", ok ? "true" : "false");
		return ok ? 0 : 1;
	}
	printf("%s to %s: %llu completed, %llu failed", mode, o->to_str,
	       (unsigned long long)done, (unsigned long long)failed);
	if (done + failed < o->n)
		printf(", %llu not run",
		       (unsigned long long)(o->n - done - failed));
	printf(" of %llu in %.2f s (%.0f/s)\n", (unsigned long long)o->n,
	       secs, secs > 0 ? done / secs : 0);
	print_reasons_text(reasons);
	print_spread(o, count, done);
	return ok ? 0 : 1;
}

static int cmd_conns(int argc, char **argv)
{
	uint64_t count[MAX_IDS] = { 0 }, reasons[R_COUNT] = { 0 };
	uint64_t launched = 0, done = 0, failed = 0;
	struct epoll_event evs[MAX_EVENTS];
	struct cconn *slots, *c;
	double t0, end, now;
	struct copts o;
	uint32_t i;
	int ep, n, k, r;

	parse_client(argc, argv, 'c', &o);
	if (o.conc > o.n)
		o.conc = o.n;
	slots = calloc(o.conc, sizeof(*slots));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!slots || ep < 0)
		die("setup: %s", strerror(errno));
	for (i = 0; i < o.conc; i++)
		slots[i].fd = -1;
	t0 = now = xlb_mono_s();
	end = t0 + o.max_seconds;
	while (done + failed < o.n && !stop_sig && now < end) {
		for (i = 0; i < o.conc && launched < o.n; i++) {
			c = &slots[i];
			if (c->state != C_IDLE)
				continue;
			if (cconn_open(c, &o, ep, launched++)) {
				reasons[c->why]++;
				failed++;
				cconn_note(&o, c);
				c->state = C_IDLE;
			}
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 10);
		for (k = 0; k < n; k++) {
			c = evs[k].data.ptr;
			r = cconn_event(c, &o, ep, evs[k].events);
			if (r > 0) {
				count[c->backend]++;
				done++;
			} else if (r < 0) {
				reasons[c->why]++;
				failed++;
				cconn_note(&o, c);
			}
			if (r) {
				cconn_close(c, ep);
				c->state = C_IDLE;
			}
		}
		now = xlb_mono_s();
		for (i = 0; i < o.conc; i++) {
			c = &slots[i];
			if (c->state == C_IDLE || now < c->deadline)
				continue;
			cconn_fail(c, c->state == C_CONNECTING ?
				   R_CONNECT_TIMEOUT : R_TIMEOUT, 0);
			reasons[c->why]++;
			failed++;
			cconn_note(&o, c);
			cconn_close(c, ep);
			c->state = C_IDLE;
		}
	}
	/* stopped or out of time: what is in flight failed */
	for (i = 0; i < o.conc; i++) {
		c = &slots[i];
		if (c->state == C_IDLE)
			continue;
		reasons[R_TIMEOUT]++;
		failed++;
		cconn_close(c, ep);
	}
	close(ep);
	free(slots);
	if (stop_sig)
		fprintf(stderr, "%s: stopped by signal %d\n", prog,
			(int)stop_sig);
	else if (now >= end)
		fprintf(stderr, "%s: --max-seconds %g reached\n", prog,
			o.max_seconds);
	return report_counts("conns", &o, count, reasons, done, failed,
			     xlb_mono_s() - t0);
}

/* --- hold --------------------------------------------------------------- */

struct phase {
	char name[32];
	double t;		/* start, s since the run started */
	uint64_t sends, replies, broken;
	uint64_t reasons[R_COUNT];
};

struct hold {
	struct copts *o;
	struct cconn *conns;
	struct phase phases[MAX_PHASES];
	int nphases;
	uint64_t launched, connecting, established, broken;
	uint64_t sends, replies;
	size_t control_done;	/* bytes of the control file processed */
	bool stop;
	double t0;
};

static struct phase *cur_phase(struct hold *h)
{
	return &h->phases[h->nphases - 1];
}

static void hold_phase(struct hold *h, const char *name, size_t len)
{
	struct phase *p;
	size_t i;

	if (h->nphases == MAX_PHASES) {
		fprintf(stderr, "%s: more than %d phases; '%.*s' ignored\n",
			prog, MAX_PHASES, (int)len, name);
		return;
	}
	p = &h->phases[h->nphases++];
	memset(p, 0, sizeof(*p));
	if (len >= sizeof(p->name))
		len = sizeof(p->name) - 1;
	for (i = 0; i < len; i++)
		p->name[i] = id_char_ok(name[i]) ? name[i] : '_';
	p->t = xlb_mono_s() - h->t0;
	fprintf(stderr, "hold: t=%.2f phase %s\n", p->t, p->name);
}

/* New lines of the control file: "phase NAME" or "stop". */
static void hold_control(struct hold *h)
{
	char buf[4096], *line, *nl;
	size_t n;
	FILE *f;

	f = fopen(h->o->control, "r");
	if (!f)
		return;
	if (fseek(f, h->control_done, SEEK_SET)) {
		fclose(f);
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		h->control_done += nl - line + 1;
		if (!strncmp(line, "phase ", 6) && line[6])
			hold_phase(h, line + 6, strlen(line + 6));
		else if (!strcmp(line, "stop"))
			h->stop = true;
		else if (*line)
			fprintf(stderr, "%s: control: '%s' is not 'phase NAME' "
				"or 'stop'\n", prog, line);
	}
}

static void hold_broken(struct hold *h, struct cconn *c, int ep)
{
	struct phase *p = cur_phase(h);

	if (c->fd >= 0)
		cconn_close(c, ep);
	if (c->state != C_BROKEN)
		cconn_fail(c, R_ERROR, 0);
	p->broken++;
	p->reasons[c->why]++;
	h->broken++;
	cconn_note(h->o, c);
}

static void hold_progress(struct hold *h, double now)
{
	uint64_t per[MAX_IDS] = { 0 };
	uint64_t i;
	int b;

	for (i = 0; i < h->launched; i++)
		if (h->conns[i].state == C_OPEN && h->conns[i].backend >= 0)
			per[h->conns[i].backend]++;
	fprintf(stderr, "hold: t=%.1f phase %s open %llu broken %llu "
		"sends %llu replies %llu |", now - h->t0, cur_phase(h)->name,
		(unsigned long long)(h->launched - h->broken - h->connecting),
		(unsigned long long)h->broken, (unsigned long long)h->sends,
		(unsigned long long)h->replies);
	for (b = 0; b < nids; b++)
		fprintf(stderr, " %s=%llu", ids[b], (unsigned long long)per[b]);
	fprintf(stderr, "\n");
}

static int hold_report(struct hold *h, double secs)
{
	uint64_t conns[MAX_IDS] = { 0 }, brk[MAX_IDS] = { 0 };
	uint64_t reasons[R_COUNT] = { 0 }, unknown = 0, i;
	struct copts *o = h->o;
	struct phase *p;
	bool ok;
	int b, k;

	for (i = 0; i < h->launched; i++) {
		b = h->conns[i].backend;
		if (b < 0) {
			unknown++;
			continue;
		}
		conns[b]++;
		brk[b] += h->conns[i].state == C_BROKEN;
	}
	for (k = 0; k < h->nphases; k++)
		for (b = 0; b < R_COUNT; b++)
			reasons[b] += h->phases[k].reasons[b];
	ok = !h->broken && h->established == o->n;
	if (o->json) {
		printf("{\"mode\":\"hold\",\"to\":\"%s\",\"connections\":%llu,"
		       "\"established\":%llu,\"broken\":%llu,",
		       o->to_str, (unsigned long long)o->n,
		       (unsigned long long)h->established,
		       (unsigned long long)h->broken);
		print_reasons_json("reasons", reasons);
		printf(",\"sends\":%llu,\"replies\":%llu,",
		       (unsigned long long)h->sends,
		       (unsigned long long)h->replies);
		json_num("seconds", secs, true);
		/* what ended the run: the control file, a signal or the time */
		printf("\"ended_by\":\"%s\",",
		       h->stop ? "control" : stop_sig ? "signal" : "duration");
		printf("\"backends\":{");
		for (b = 0; b < nids; b++)
			printf("%s\"%s\":{\"connections\":%llu,\"broken\":%llu}",
			       b ? "," : "", ids[b],
			       (unsigned long long)conns[b],
			       (unsigned long long)brk[b]);
		printf("},\"no_reply\":%llu,\"phases\":[",
		       (unsigned long long)unknown);
		for (k = 0; k < h->nphases; k++) {
			p = &h->phases[k];
			printf("%s{\"name\":\"%s\",", k ? "," : "", p->name);
			json_num("t", p->t, true);
			printf("\"sends\":%llu,\"replies\":%llu,"
			       "\"broken\":%llu,",
			       (unsigned long long)p->sends,
			       (unsigned long long)p->replies,
			       (unsigned long long)p->broken);
			print_reasons_json("reasons", p->reasons);
			printf("}");
		}
		printf("],\"ok\":%s}\n", ok ? "true" : "false");
		return ok ? 0 : 1;
	}
	printf("hold to %s: %llu connections, %llu established, %llu broken, "
	       "%llu sends, %llu replies in %.2f s\n", o->to_str,
	       (unsigned long long)o->n, (unsigned long long)h->established,
	       (unsigned long long)h->broken, (unsigned long long)h->sends,
	       (unsigned long long)h->replies, secs);
	print_reasons_text(reasons);
	printf("%-20s %11s %8s\n", "backend", "connections", "broken");
	for (b = 0; b < nids; b++)
		printf("%-20s %11llu %8llu\n", ids[b],
		       (unsigned long long)conns[b],
		       (unsigned long long)brk[b]);
	if (unknown)
		printf("%-20s %11llu\n", "(no reply)",
		       (unsigned long long)unknown);
	for (k = 0; k < h->nphases; k++) {
		p = &h->phases[k];
		printf("phase %-14s t=%-8.2f sends %llu replies %llu "
		       "broken %llu\n", p->name, p->t,
		       (unsigned long long)p->sends,
		       (unsigned long long)p->replies,
		       (unsigned long long)p->broken);
	}
	return ok ? 0 : 1;
}

/* One pass over the connections: due sends, timeouts. */
static void hold_scan(struct hold *h, int ep, double now)
{
	struct copts *o = h->o;
	struct cconn *c;
	uint64_t i;

	for (i = 0; i < h->launched; i++) {
		c = &h->conns[i];
		if (c->state == C_CONNECTING && now >= c->deadline) {
			h->connecting--;
			cconn_fail(c, R_CONNECT_TIMEOUT, 0);
			hold_broken(h, c, ep);
		} else if (c->state == C_OPEN && c->busy &&
			   now >= c->deadline) {
			cconn_fail(c, R_TIMEOUT, 0);
			hold_broken(h, c, ep);
		} else if (c->state == C_OPEN && !c->busy &&
			   now >= c->next_send) {
			/* keep the schedule; never bunch up after a delay */
			c->next_send += o->interval;
			if (c->next_send < now)
				c->next_send = now + o->interval;
			cconn_request(c, o, ep);
			h->sends++;
			cur_phase(h)->sends++;
			if (c->state == C_BROKEN)
				hold_broken(h, c, ep);
		}
	}
}

static void hold_event(struct hold *h, struct cconn *c, int ep, uint32_t ev,
		       double now)
{
	bool was_connecting = c->state == C_CONNECTING;
	int r;

	if (c->state != C_CONNECTING && c->state != C_OPEN)
		return;
	r = cconn_event(c, h->o, ep, ev);
	if (was_connecting && c->state != C_CONNECTING) {
		h->connecting--;
		if (c->state == C_OPEN) {
			h->established++;
			/* the first request went out with the connect */
			h->sends++;
			cur_phase(h)->sends++;
			/* spread the connections over the interval */
			c->next_send = now + h->o->interval *
				       (1 + (double)(c->idx % 97) / 97);
		}
	}
	if (r > 0) {
		h->replies++;
		cur_phase(h)->replies++;
	} else if (r < 0) {
		hold_broken(h, c, ep);
	}
}

static int cmd_hold(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS];
	double now, end, next_report, next_control;
	bool ready = false;
	struct hold h = { 0 };
	struct copts o;
	struct cconn *c;
	uint64_t i, answered;
	int ep, n, k;

	parse_client(argc, argv, 'h', &o);
	h.o = &o;
	h.conns = calloc(o.n, sizeof(*h.conns));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!h.conns || ep < 0)
		die("setup: %s", strerror(errno));
	h.t0 = now = xlb_mono_s();
	h.nphases = 1;
	strcpy(h.phases[0].name, "start");
	end = h.t0 + o.duration;
	next_report = h.t0 + o.report_every;
	next_control = h.t0;
	/* ends early when every connection has broken: nothing to hold */
	while (!stop_sig && !h.stop && now < end && h.broken < o.n) {
		while (h.launched < o.n && h.connecting < o.conc) {
			c = &h.conns[h.launched++];
			if (cconn_open(c, &o, ep, h.launched - 1))
				hold_broken(&h, c, ep);
			else
				h.connecting++;
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 5);
		now = xlb_mono_s();
		for (k = 0; k < n; k++)
			hold_event(&h, evs[k].data.ptr, ep, evs[k].events,
				   now);
		hold_scan(&h, ep, now);
		if (!ready && h.launched == o.n && !h.connecting) {
			answered = 0;
			for (i = 0; i < o.n; i++)
				answered += h.conns[i].backend >= 0 ||
					    h.conns[i].state == C_BROKEN;
			if (answered == o.n) {
				ready = true;
				fprintf(stderr, "hold: t=%.2f ready: %llu "
					"established, %llu broken\n",
					now - h.t0,
					(unsigned long long)h.established,
					(unsigned long long)h.broken);
				write_ready(o.ready);
			}
		}
		if (o.report_every && now >= next_report) {
			hold_progress(&h, now);
			next_report += o.report_every;
		}
		if (o.control && now >= next_control) {
			hold_control(&h);
			next_control = now + 0.05;
		}
	}
	if (stop_sig)
		fprintf(stderr, "%s: stopped by signal %d\n", prog,
			(int)stop_sig);
	for (i = 0; i < h.launched; i++)
		cconn_close(&h.conns[i], ep);
	close(ep);
	k = hold_report(&h, xlb_mono_s() - h.t0);
	free(h.conns);
	return k;
}

/* --- udp ---------------------------------------------------------------- */

struct uslot {
	int fd;			/* -1: idle */
	uint64_t idx;
	uint32_t tries;
	double deadline;
};

static int udp_send(struct uslot *s, const struct copts *o, uint8_t *buf)
{
	put32(buf, UREQ_MAGIC);
	put32(buf + 4, (uint32_t)s->idx);
	put32(buf + 8, o->bytes);
	pattern(mix64(o->seed ^ s->idx), 0, buf + REQ_HLEN, o->bytes);
	s->tries++;
	s->deadline = xlb_mono_s() + o->timeout;
	if (send(s->fd, buf, REQ_HLEN + o->bytes, 0) < 0 &&
	    errno != ECONNREFUSED)
		return -errno;
	return 0;
}

/* Source ports this run has used: a new request is a new flow. */
static uint8_t udp_ports_used[65536 / 8];

/* The local port of fd, or 0. */
static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
		     ((struct sockaddr_in *)&ss)->sin_port :
		     ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int udp_open(struct uslot *s, const struct copts *o, int ep,
		    uint8_t *buf)
{
	uint16_t port;
	int err, i;

	/*
	 * The kernel picks source ports at random, so a few hundred requests
	 * in, some would repeat an earlier flow (same backend, same
	 * connection entry) and the per-backend counts would no longer be
	 * independent samples.  A few more tries find a fresh port.
	 */
	for (i = 0; i < 16; i++) {
		s->fd = socket(o->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
		if (s->fd < 0)
			return -errno;
		if (connect(s->fd, (const struct sockaddr *)&o->to,
			    o->tolen)) {
			err = -errno;
			close(s->fd);
			s->fd = -1;
			return err;
		}
		port = local_port(s->fd);
		if (!(udp_ports_used[port / 8] & 1 << port % 8))
			break;
		close(s->fd);
	}
	if (i == 16) {	/* all taken: take one more at random */
		s->fd = socket(o->to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, 0);
		if (s->fd < 0 || connect(s->fd, (const struct sockaddr *)&o->to,
					 o->tolen))
			goto fail;
		port = local_port(s->fd);
	}
	udp_ports_used[port / 8] |= 1 << port % 8;
	if (epoll_set(ep, EPOLL_CTL_ADD, s->fd, EPOLLIN, s))
		goto fail;
	s->tries = 0;
	return udp_send(s, o, buf);
fail:
	err = -errno;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return err;
}

/* 1: a good reply (backend in *b), 0: nothing yet, -reason-1: failed. */
static int udp_recv(struct uslot *s, const struct copts *o, uint8_t *buf,
		    uint8_t *want, int *b)
{
	ssize_t n;

	n = recv(s->fd, buf, 65536, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return -(int)errno_reason(errno) - 1;
	}
	/* each request has its own socket; retries repeat its seq */
	if (n < RSP_HLEN || get32(buf) != URSP_MAGIC ||
	    get32(buf + 4) != (uint32_t)s->idx || get32(buf + 8) != o->bytes ||
	    (size_t)n != RSP_HLEN + o->bytes ||
	    !id_ok((char *)buf + 12, ID_LEN))
		return -R_BAD_HEADER - 1;
	pattern(mix64(o->seed ^ s->idx), 0, want, o->bytes);
	if (memcmp(buf + RSP_HLEN, want, o->bytes))
		return -R_BAD_DATA - 1;
	*b = id_index((char *)buf + 12);
	return *b < 0 ? -R_BAD_HEADER - 1 : 1;
}

static void udp_done(struct uslot *s, int ep)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

static int cmd_udp(int argc, char **argv)
{
	uint64_t count[MAX_IDS] = { 0 }, reasons[R_COUNT] = { 0 };
	uint64_t launched = 0, done = 0, failed = 0;
	struct epoll_event evs[MAX_EVENTS];
	uint8_t *buf, *want;
	struct uslot *slots, *s;
	double t0, end, now;
	struct copts o;
	int ep, n, k, r, b;
	uint32_t i;

	parse_client(argc, argv, 'u', &o);
	if (o.conc > o.n)
		o.conc = o.n;
	slots = calloc(o.conc, sizeof(*slots));
	buf = malloc(65536);
	want = malloc(65536);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!slots || !buf || !want || ep < 0)
		die("setup: %s", strerror(errno));
	for (i = 0; i < o.conc; i++)
		slots[i].fd = -1;
	t0 = now = xlb_mono_s();
	end = t0 + o.max_seconds;
	while (done + failed < o.n && !stop_sig && now < end) {
		for (i = 0; i < o.conc && launched < o.n; i++) {
			s = &slots[i];
			if (s->fd >= 0)
				continue;
			s->idx = launched++;
			r = udp_open(s, &o, ep, buf);
			if (r) {
				reasons[errno_reason(-r)]++;
				failed++;
				if (s->fd >= 0)
					udp_done(s, ep);
			}
		}
		n = epoll_wait(ep, evs, MAX_EVENTS, 10);
		for (k = 0; k < n; k++) {
			s = evs[k].data.ptr;
			r = udp_recv(s, &o, buf, want, &b);
			if (!r)
				continue;
			if (r > 0) {
				count[b]++;
				done++;
			} else {
				reasons[-r - 1]++;
				failed++;
				if (o.verbose && failure_lines++ < 20)
					fprintf(stderr, "%s: request %llu: %s\n",
						prog, (unsigned long long)s->idx,
						reason_name[-r - 1]);
			}
			udp_done(s, ep);
		}
		now = xlb_mono_s();
		for (i = 0; i < o.conc; i++) {
			s = &slots[i];
			if (s->fd < 0 || now < s->deadline)
				continue;
			if (s->tries <= o.retries && !udp_send(s, &o, buf))
				continue;
			reasons[R_TIMEOUT]++;
			failed++;
			udp_done(s, ep);
		}
	}
	for (i = 0; i < o.conc; i++) {
		if (slots[i].fd < 0)
			continue;
		reasons[R_TIMEOUT]++;
		failed++;
		udp_done(&slots[i], ep);
	}
	close(ep);
	free(slots);
	free(buf);
	free(want);
	return report_counts("udp", &o, count, reasons, done, failed,
			     xlb_mono_s() - t0);
}

/* --- serve -------------------------------------------------------------- */

enum skind { K_LISTEN, K_CONN, K_UDP };

struct sobj {
	enum skind kind;
	int fd;
	/* K_CONN */
	uint8_t hdr[REQ_HLEN];
	uint32_t hlen;		/* header bytes so far */
	uint32_t body;		/* payload bytes still to echo */
	bool in_body;
	bool rd_closed;
	uint32_t events;
	uint32_t head, tail;	/* pending output in out[head, tail) */
	uint8_t *out;
};

struct server {
	int ep;
	char id[ID_LEN];
	struct sobj *listeners[2];
	int nlisten;
	bool accept_paused;
	uint64_t accepted, open, requests, udp_requests, bad;
};

static struct sobj *sobj_new(enum skind kind, int fd)
{
	struct sobj *s = calloc(1, sizeof(*s));

	if (!s)
		die("out of memory");
	s->kind = kind;
	s->fd = fd;
	return s;
}

static int bind_socket(int family, int type, const struct sockaddr *sa,
		       socklen_t len)
{
	int fd, one = 1;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		/*
		 * Reply from the address asked (the VIP), not the route's;
		 * freebind lets that be any address of a local route (a VIP
		 * range on lo), which IPv6 otherwise refuses as a source.
		 */
		setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
		if (family == AF_INET)
			setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one,
				   sizeof(one));
		else
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
				   sizeof(one));
	}
	if (bind(fd, sa, len)) {
		char b[80];

		die("bind %s %s: %s", type == SOCK_DGRAM ? "udp" : "tcp",
		    sa_str((const struct sockaddr_storage *)sa, b, sizeof(b)),
		    strerror(errno));
	}
	if (type == SOCK_STREAM && listen(fd, 4096))
		die("listen: %s", strerror(errno));
	return fd;
}

static void serve_close(struct server *sv, struct sobj *s)
{
	int i;

	epoll_ctl(sv->ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	free(s->out);
	free(s);
	sv->open--;
	if (sv->accept_paused) {
		for (i = 0; i < sv->nlisten; i++)
			epoll_set(sv->ep, EPOLL_CTL_MOD, sv->listeners[i]->fd,
				  EPOLLIN, sv->listeners[i]);
		sv->accept_paused = false;
	}
}

static void serve_accept(struct server *sv, struct sobj *l)
{
	struct sobj *s;
	int fd, i, one = 1;

	for (i = 0; i < 256; i++) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* out of descriptors: wait for a close */
				for (i = 0; i < sv->nlisten; i++)
					epoll_set(sv->ep, EPOLL_CTL_MOD,
						  sv->listeners[i]->fd, 0,
						  sv->listeners[i]);
				sv->accept_paused = true;
			}
			return;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		s = sobj_new(K_CONN, fd);
		s->out = malloc(SRV_OUT);
		s->events = EPOLLIN;
		if (!s->out || epoll_set(sv->ep, EPOLL_CTL_ADD, fd, EPOLLIN, s)) {
			close(fd);
			free(s->out);
			free(s);
			continue;
		}
		sv->accepted++;
		sv->open++;
	}
}

/* Turn request bytes into reply bytes in s->out; -1 on a bad request. */
static int serve_consume(struct server *sv, struct sobj *s, const uint8_t *p,
			 uint32_t n)
{
	uint32_t k, i = 0;

	while (i < n) {
		if (!s->in_body) {
			k = REQ_HLEN - s->hlen;
			if (k > n - i)
				k = n - i;
			memcpy(s->hdr + s->hlen, p + i, k);
			s->hlen += k;
			i += k;
			if (s->hlen < REQ_HLEN)
				break;
			if (get32(s->hdr) != REQ_MAGIC ||
			    get32(s->hdr + 8) > TCP_LEN_MAX)
				return -1;
			memcpy(s->out + s->tail, s->hdr, 4);
			put32(s->out + s->tail, RSP_MAGIC);
			memcpy(s->out + s->tail + 4, s->hdr + 4, 8);
			memcpy(s->out + s->tail + 12, sv->id, ID_LEN);
			s->tail += RSP_HLEN;
			s->body = get32(s->hdr + 8);
			s->hlen = 0;
			s->in_body = s->body > 0;
			sv->requests++;
			continue;
		}
		k = s->body < n - i ? s->body : n - i;
		memcpy(s->out + s->tail, p + i, k);
		s->tail += k;
		s->body -= k;
		i += k;
		s->in_body = s->body > 0;
	}
	return 0;
}

static void serve_conn(struct server *sv, struct sobj *s, uint32_t ev)
{
	uint8_t buf[SRV_OUT];
	uint32_t room, want;
	ssize_t n;
	int i;

	if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN)) {
		serve_close(sv, s);
		return;
	}
	for (i = 0; i < 16; i++) {
		if (s->head == s->tail)
			s->head = s->tail = 0;
		if (s->head) {
			memmove(s->out, s->out + s->head, s->tail - s->head);
			s->tail -= s->head;
			s->head = 0;
		}
		/* flush what is pending */
		if (s->tail) {
			n = send(s->fd, s->out, s->tail,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				serve_close(sv, s);
				return;
			}
			if (n > 0)
				s->head = n;
			if (n > 0 && s->head == s->tail)
				continue;	/* compact, then read more */
			if (n <= 0 || s->head < s->tail)
				break;
		}
		if (s->rd_closed)
			break;
		/* a 12-byte header turns into 32 bytes of reply */
		room = SRV_OUT - s->tail;
		if (room < 64)
			break;
		want = (room - RSP_HLEN) * REQ_HLEN / RSP_HLEN;
		n = recv(s->fd, buf, want, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			serve_close(sv, s);
			return;
		}
		if (n == 0) {
			s->rd_closed = true;
			continue;
		}
		if (serve_consume(sv, s, buf, n)) {
			sv->bad++;
			serve_close(sv, s);
			return;
		}
	}
	if (s->rd_closed && s->head == s->tail) {
		serve_close(sv, s);
		return;
	}
	want = (s->rd_closed || SRV_OUT - s->tail + s->head < 64 ? 0 : EPOLLIN) |
	       (s->head < s->tail ? EPOLLOUT : 0);
	if (want != s->events &&
	    !epoll_set(sv->ep, EPOLL_CTL_MOD, s->fd, want, s))
		s->events = want;
}

static void serve_udp(struct server *sv, struct sobj *s)
{
	static uint8_t buf[65536], out[65536];
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} cb;
	struct sockaddr_storage peer;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	uint32_t len;
	ssize_t n;
	int i;

	for (i = 0; i < 256; i++) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		memset(&mh, 0, sizeof(mh));
		mh.msg_name = &peer;
		mh.msg_namelen = sizeof(peer);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.buf;
		mh.msg_controllen = sizeof(cb.buf);
		n = recvmsg(s->fd, &mh, MSG_DONTWAIT);
		if (n < 0)
			return;
		len = n >= REQ_HLEN ? get32(buf + 8) : 0;
		if (n < REQ_HLEN || get32(buf) != UREQ_MAGIC ||
		    len != (uint32_t)n - REQ_HLEN || len > UDP_LEN_MAX) {
			sv->bad++;
			continue;
		}
		put32(out, URSP_MAGIC);
		memcpy(out + 4, buf + 4, 8);
		memcpy(out + 12, sv->id, ID_LEN);
		memcpy(out + RSP_HLEN, buf + REQ_HLEN, len);
		/* answer from the address the request went to */
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == IPPROTO_IP &&
			    cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo *pi = (void *)CMSG_DATA(cm);

				pi->ipi_spec_dst = pi->ipi_addr;
				pi->ipi_ifindex = 0;
			} else if (cm->cmsg_level == IPPROTO_IPV6 &&
				   cm->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo *pi = (void *)CMSG_DATA(cm);

				pi->ipi6_ifindex = 0;
			}
		}
		iov.iov_base = out;
		iov.iov_len = RSP_HLEN + len;
		mh.msg_flags = 0;
		if (sendmsg(s->fd, &mh, MSG_DONTWAIT) >= 0)
			sv->udp_requests++;
	}
}

static const struct option serve_longopts[] = {
	{ "tcp", required_argument, NULL, OPT_TCP },
	{ "udp", required_argument, NULL, OPT_UDP },
	{ "id", required_argument, NULL, OPT_ID },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "max-seconds", required_argument, NULL, OPT_MAX },
	{ "ready", required_argument, NULL, OPT_READY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void serve_open(struct server *sv, const char *bind_addr, int type,
		       uint16_t port, struct sobj **udp_out)
{
	static const char *const any[] = { "0.0.0.0", "::" };
	struct sockaddr_storage ss;
	struct sobj *s;
	socklen_t len;
	int i, fd;

	for (i = 0; i < 2; i++) {
		if (bind_addr && i)
			break;
		if (!parse_ip(bind_addr ? bind_addr : any[i], &ss, &len, port))
			die("--bind: '%s' is not an IPv4 or IPv6 address",
			    bind_addr);
		fd = bind_socket(ss.ss_family, type,
				 (struct sockaddr *)&ss, len);
		s = sobj_new(type == SOCK_STREAM ? K_LISTEN : K_UDP, fd);
		if (epoll_set(sv->ep, EPOLL_CTL_ADD, fd, EPOLLIN, s))
			die("epoll: %s", strerror(errno));
		if (type == SOCK_STREAM)
			sv->listeners[sv->nlisten++] = s;
		else
			udp_out[i] = s;
	}
}

static int cmd_serve(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS];
	const char *bind_addr = NULL, *ready = NULL;
	struct sobj *udp[2] = { NULL, NULL }, *s;
	uint16_t tcp_port = 0, udp_port = 0;
	struct server sv = { 0 };
	double end, max = 3600;
	char host[64] = "";
	int c, n, k;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", serve_longopts,
				NULL)) != -1) {
		switch (c) {
		case OPT_TCP:
			tcp_port = parse_num(optarg, "--tcp", 1, 65535);
			break;
		case OPT_UDP:
			udp_port = parse_num(optarg, "--udp", 1, 65535);
			break;
		case OPT_ID:
			if (strlen(optarg) > ID_LEN ||
			    !id_ok(optarg, strlen(optarg)))
				die("--id: '%s': 1 to %d of A-Z a-z 0-9 . _ - :",
				    optarg, ID_LEN);
			strncpy(host, optarg, sizeof(host) - 1);
			break;
		case OPT_BIND:
			bind_addr = optarg;
			break;
		case OPT_MAX:
			max = parse_real(optarg, "--max-seconds", 0.001, 1e7);
			break;
		case OPT_READY:
			ready = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!tcp_port && !udp_port)
		tcp_port = udp_port = 80;
	if (!*host) {
		gethostname(host, sizeof(host) - 1);
		for (k = 0; host[k]; k++)
			if (!id_char_ok(host[k]))
				host[k] = '_';
		host[ID_LEN] = 0;
	}
	memset(sv.id, 0, ID_LEN);
	memcpy(sv.id, host, strlen(host) < ID_LEN ? strlen(host) : ID_LEN);
	sv.ep = epoll_create1(EPOLL_CLOEXEC);
	if (sv.ep < 0)
		die("epoll: %s", strerror(errno));
	if (tcp_port)
		serve_open(&sv, bind_addr, SOCK_STREAM, tcp_port, NULL);
	if (udp_port)
		serve_open(&sv, bind_addr, SOCK_DGRAM, udp_port, udp);
	write_ready(ready);
	fprintf(stderr, "serve: id %.*s, tcp %u, udp %u, %s\n", ID_LEN, sv.id,
		tcp_port, udp_port, bind_addr ? bind_addr : "any address");
	end = xlb_mono_s() + max;
	while (!stop_sig && xlb_mono_s() < end) {
		n = epoll_wait(sv.ep, evs, MAX_EVENTS, 200);
		for (k = 0; k < n; k++) {
			s = evs[k].data.ptr;
			if (s->kind == K_LISTEN)
				serve_accept(&sv, s);
			else if (s->kind == K_UDP)
				serve_udp(&sv, s);
			else
				serve_conn(&sv, s, evs[k].events);
		}
	}
	fprintf(stderr, "serve: %s; %llu connections, %llu requests, "
		"%llu udp requests, %llu bad\n",
		stop_sig ? "stopped" : "--max-seconds reached",
		(unsigned long long)sv.accepted,
		(unsigned long long)sv.requests,
		(unsigned long long)sv.udp_requests,
		(unsigned long long)sv.bad);
	return 0;
}

/* --- ping --------------------------------------------------------------- */

static uint16_t csum16(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Is buf (n bytes from the raw socket) our echo reply? */
static bool ping_match(int family, const uint8_t *buf, ssize_t n,
		       uint16_t id, uint16_t seq)
{
	size_t hl = 0;

	if (family == AF_INET) {
		if (n < 20)
			return false;
		hl = (buf[0] & 0xf) * 4;
		if ((size_t)n < hl + 8 || buf[hl] != ICMP_ECHOREPLY)
			return false;
	} else if (n < 8 || buf[0] != ICMP6_ECHO_REPLY) {
		return false;
	}
	return (buf[hl + 4] << 8 | buf[hl + 5]) == id &&
	       (buf[hl + 6] << 8 | buf[hl + 7]) == seq;
}

static int cmd_ping(int argc, char **argv)
{
	struct sockaddr_storage to;
	uint8_t pkt[64], buf[1500];
	uint16_t id = getpid() & 0xffff;
	double wait = 1, t0, end;
	uint64_t count = 3, i;
	socklen_t len;
	ssize_t n;
	int fd, c;

	optind = 1;
	while ((c = getopt(argc, argv, "c:W:h")) != -1) {
		switch (c) {
		case 'c':
			count = parse_num(optarg, "-c", 1, 100);
			break;
		case 'W':
			wait = parse_num(optarg, "-W", 1, 60000) / 1000.0;
			break;
		default:
			usage(c == 'h' ? stdout : stderr);
			exit(c == 'h' ? 0 : 2);
		}
	}
	if (optind != argc - 1)
		die("ping: one address expected");
	if (!parse_ip(argv[optind], &to, &len, 0))
		die("ping: '%s' is not an IPv4 or IPv6 address", argv[optind]);
	fd = socket(to.ss_family, SOCK_RAW | SOCK_CLOEXEC,
		    to.ss_family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
	if (fd < 0)
		die("ping: raw socket: %s", strerror(errno));
	for (i = 0; i < count && !stop_sig; i++) {
		memset(pkt, 0, sizeof(pkt));
		pkt[0] = to.ss_family == AF_INET ? ICMP_ECHO : ICMP6_ECHO_REQUEST;
		pkt[4] = id >> 8;
		pkt[5] = id;
		pkt[6] = i >> 8;
		pkt[7] = i;
		if (to.ss_family == AF_INET) {
			uint16_t cs = csum16(pkt, sizeof(pkt));

			pkt[2] = cs >> 8;
			pkt[3] = cs;
		}	/* the kernel fills ICMPv6 checksums */
		t0 = xlb_mono_s();
		end = t0 + wait;
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&to,
			   len) < 0) {
			fprintf(stderr, "ping: %s\n", strerror(errno));
			usleep(wait * 1e6);
			continue;
		}
		/* bounded: by time, and by 1000 foreign packets */
		for (c = 0; c < 1000 && xlb_mono_s() < end; c++) {
			struct timeval tv;
			double left = end - xlb_mono_s();

			tv.tv_sec = left;
			tv.tv_usec = (left - tv.tv_sec) * 1e6 + 1;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				   sizeof(tv));
			n = recv(fd, buf, sizeof(buf), 0);
			if (n < 0)
				break;
			if (ping_match(to.ss_family, buf, n, id, i)) {
				printf("reply from %s in %.3f ms\n",
				       argv[optind], (xlb_mono_s() - t0) * 1e3);
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	printf("no reply from %s\n", argv[optind]);
	return 1;
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
