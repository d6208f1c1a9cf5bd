// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: the options of the clients (conns, hold, udp).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "mono.h"
#include "number.h"
#include "traffic.h"

uint64_t parse_num(const char *s, const char *what, uint64_t min,
		   uint64_t max)
{
	uint64_t v;

	if (xlb_parse_u64(s, min, max, &v))
		die("%s: '%s' is not a number from %llu to %llu", what, s,
		    (unsigned long long)min, (unsigned long long)max);
	return v;
}

double parse_real(const char *s, const char *what, double min,
		  double max)
{
	double v;

	if (xlb_parse_real(s, min, max, &v))
		die("%s: '%s' is not a number from %g to %g", what, s, min,
		    max);
	return v;
}

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

/* mode: 'c' conns, 'h' hold, 'u' udp */
void parse_client(int argc, char **argv, int mode, struct copts *o)
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
	o->seed = xlb_mix64((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL));
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
		default:
			usage_exit(c);
		}
	}
	no_operands(argc, argv);
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
