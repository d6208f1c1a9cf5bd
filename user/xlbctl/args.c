// SPDX-License-Identifier: GPL-2.0
/*
 * Local checks of the arguments that are not commands of the grammar (those
 * go through xlb_op_parse_argv): VIPs of read commands, flows of explain,
 * --interval and --count.  Positions are counted from the object, as the
 * grammar's errors count them ("xlbctl vip show X": X is argument 3).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"
#include "xlbctl.h"

#define FLOW_WORDS	4	/* PROTO SRC -> DST */
#define FLOW_WORDS_MAX	(FLOW_WORDS + 2)	/* ... dcid HEX */
#define FLOW_EXAMPLE	"tcp 198.51.100.7:40000 -> 192.0.2.10:80"
#define INTERVAL_MIN	0.1
#define INTERVAL_MAX	3600.0
#define COUNT_MAX	1000000000ull

int arg_vip(const char *topic, int pos, const char *tok,
	    char out[XLB_VIP_STR_MAX])
{
	char *argv[] = { "vip", "del", (char *)tok };
	struct xlb_err err = { "" };
	struct xlb_op op;
	const char *msg;

	if (!xlb_op_parse_argv(3, argv, &op, &err)) {
		xlb_vip_str(&op.vip.key, out);
		return 0;
	}
	/* The grammar said "argument 3: ..."; say where it is here. */
	msg = strchr(err.msg, ':');
	msg = msg ? msg + 2 : err.msg;
	return ctl_usage_error(topic, "argument %d: %s", pos, msg);
}

int arg_interval(const char *topic, int pos, const char *tok, double *out)
{
	if (xlb_parse_real(tok, INTERVAL_MIN, INTERVAL_MAX, out))
		return ctl_usage_error(topic,
				       "argument %d: interval \"%.20s\" is not a number of seconds %.1f..%.0f",
				       pos, tok, INTERVAL_MIN, INTERVAL_MAX);
	return 0;
}

int arg_count(const char *topic, int pos, const char *tok, uint64_t *out)
{
	if (xlb_parse_u64(tok, 1, COUNT_MAX, out))
		return ctl_usage_error(topic,
				       "argument %d: count \"%.20s\" is not a number 1..%llu",
				       pos, tok, COUNT_MAX);
	return 0;
}

/* -j, --json, --socket=PATH, ...: what goes before the command. */
static bool is_global_option(const char *s)
{
	static const char *const opts[] = {
		"-j", "--json", "-s", "--socket", "-i", "--instance",
		"-V", "--version", NULL,
	};
	const char *eq = s[0] == '-' && s[1] == '-' ? strchr(s, '=') : NULL;
	size_t len = eq ? (size_t)(eq - s) : strlen(s);
	int i;

	for (i = 0; opts[i]; i++)
		if (strlen(opts[i]) == len && !strncmp(s, opts[i], len))
			return true;
	return false;
}

int arg_misplaced(const char *topic, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (is_global_option(argv[i]))
			return ctl_usage_error(topic,
					       "argument %d: %s is a global option; put it before the command, e.g. xlbctl %s %s ...",
					       i + 1, argv[i], argv[i],
					       argv[0]);
	return 0;
}

/* --- flows ------------------------------------------------------------------ */

struct flow_err {
	int pos;		/* argument position */
	const char *flow;	/* the whole flow, when given as one word */
};

static int flow_error(const char *topic, const struct flow_err *fe,
		      const char *fmt, const char *tok)
{
	char what[160];

	snprintf(what, sizeof(what), fmt, tok);
	if (fe->flow)
		return ctl_usage_error(topic,
				       "argument %d: flow \"%.60s\": %s; a flow is e.g. \"" FLOW_EXAMPLE "\"",
				       fe->pos, fe->flow, what);
	return ctl_usage_error(topic, "argument %d: %s; a flow is e.g. " FLOW_EXAMPLE,
			       fe->pos, what);
}

/*
 * "ADDR:PORT" or "[ADDR6]:PORT" into canonical text; family 4 or 6.
 * Returns the message format of what is wrong, or NULL.
 */
static const char *parse_endpoint(const char *s, int *family, char *out,
				  size_t len)
{
	char addr[INET6_ADDRSTRLEN + 2], canon[INET6_ADDRSTRLEN];
	const char *colon, *port;
	unsigned char bin[16];
	size_t alen;
	uint32_t p;

	if (s[0] == '[') {
		colon = strchr(s, ']');
		if (!colon || colon[1] != ':')
			return "\"%.50s\" is not [IPV6]:PORT";
		port = colon + 2;
		s++;
		alen = (size_t)(colon - s);
		*family = 6;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return "\"%.50s\" has no :PORT";
		if (memchr(s, ':', (size_t)(colon - s)))
			return "\"%.50s\": an IPv6 address goes in brackets, e.g. [2001:db8::7]:40000";
		port = colon + 1;
		alen = (size_t)(colon - s);
		*family = 4;
	}
	if (!alen || alen >= sizeof(addr))
		return "\"%.50s\" has no address";
	memcpy(addr, s, alen);
	addr[alen] = 0;
	if (inet_pton(*family == 6 ? AF_INET6 : AF_INET, addr, bin) != 1)
		return *family == 6 ? "\"%.50s\" is not an IPv6 address" :
				      "\"%.50s\" is not an IPv4 address";
	if (xlb_parse_u32(port, 0, 65535, &p))
		return "the port of \"%.50s\" is not a number 0..65535";
	inet_ntop(*family == 6 ? AF_INET6 : AF_INET, bin, canon, sizeof(canon));
	snprintf(out, len, *family == 6 ? "[%s]:%u" : "%s:%u", canon, p);
	return NULL;
}

/* Split one quoted flow into words (at most FLOW_WORDS + 1). */
static int split_words(char *s, char **w, int max)
{
	char *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(s, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = tok;
	}
	return n;
}

static int flow_words(int argc, char **argv, int pos0, const char *topic,
		      char *one, size_t onelen, char **w, int *n,
		      const char **dcid, struct flow_err *fe)
{
	*dcid = NULL;
	fe->pos = pos0;
	fe->flow = NULL;
	if (argc == 1) {
		snprintf(one, onelen, "%s", argv[0]);
		fe->flow = argv[0];
		*n = split_words(one, w, FLOW_WORDS_MAX);
	} else {
		*n = argc;
		if (argc <= FLOW_WORDS_MAX)
			memcpy(w, argv, (size_t)argc * sizeof(*w));
	}
	/* a QUIC short header's destination connection ID at the end */
	if (*n > FLOW_WORDS && *n <= FLOW_WORDS_MAX &&
	    !strcmp(w[*n - 2], "dcid")) {
		*dcid = w[*n - 1];
		*n -= 2;
	}
	if (*n > FLOW_WORDS) {
		fe->pos = fe->flow ? pos0 : pos0 + FLOW_WORDS;
		return flow_error(topic, fe, "%s", "too many words");
	}
	if (*n < 3)
		return flow_error(topic, fe, "%s",
				  "a flow needs a protocol, a source and a destination");
	return 0;
}

int arg_flow(int argc, char **argv, int pos0, char *out, size_t len)
{
	char one[256], src[64], dst[64], proto[4], *w[FLOW_WORDS_MAX + 1];
	const char *dcid = NULL;
	int n, i, sf, df, ret;
	struct flow_err fe;
	const char *why;

	if (argc < 1)
		return ctl_usage_error("explain", "explain needs a flow, e.g. "
				       FLOW_EXAMPLE);
	ret = flow_words(argc, argv, pos0, "explain", one, sizeof(one), w, &n,
			 &dcid, &fe);
	if (ret)
		return ret;
	if (dcid) {
		for (i = 0; dcid[i] && isxdigit((unsigned char)dcid[i]); i++)
			;
		if (dcid[i] || !i || i % 2 || i > 40) {
			if (!fe.flow)
				fe.pos = pos0 + n + 1;
			return flow_error("explain", &fe,
					  "dcid \"%.44s\" is not a QUIC connection ID: 1..20 octets in hex",
					  dcid);
		}
	}
	for (i = 0; i < 3 && w[0][i]; i++)
		proto[i] = (char)tolower((unsigned char)w[0][i]);
	proto[i] = 0;
	if (w[0][i] || (strcmp(proto, "tcp") && strcmp(proto, "udp")))
		return flow_error("explain", &fe,
				  "unknown protocol \"%.20s\"; use tcp or udp",
				  w[0]);
	if (!strcmp(w[n - 1], "-") || !strcmp(w[n - 1], "to"))
		return ctl_usage_error("explain",
				       "the flow ends in \"%s\": the shell took an unquoted -> as - and a redirection (> FILE); quote the arrow ('->'), write \"to\" or leave it out, e.g. "
				       FLOW_EXAMPLE, w[n - 1]);
	if (n == FLOW_WORDS && strcmp(w[2], "->") && strcmp(w[2], "to")) {
		fe.pos += fe.flow ? 0 : 2;
		return flow_error("explain", &fe,
				  "\"%.20s\" where the arrow belongs (-> quoted, or \"to\", or nothing: in a shell an unquoted > redirects)",
				  w[2]);
	}
	if (!fe.flow)
		fe.pos = pos0 + 1;
	why = parse_endpoint(w[1], &sf, src, sizeof(src));
	if (why)
		return flow_error("explain", &fe, why, w[1]);
	if (!fe.flow)
		fe.pos = pos0 + n - 1;
	why = parse_endpoint(w[n - 1], &df, dst, sizeof(dst));
	if (why)
		return flow_error("explain", &fe, why, w[n - 1]);
	if (sf != df)
		return flow_error("explain", &fe,
				  "source and destination are of different families (%s)",
				  "IPv4 and IPv6");
	if (dcid && strcmp(proto, "udp"))
		return flow_error("explain", &fe, "%s",
				  "dcid is for QUIC, over udp");
	if (dcid)
		snprintf(out, len, "%s %s -> %s dcid %s", proto, src, dst,
			 dcid);
	else
		snprintf(out, len, "%s %s -> %s", proto, src, dst);
	return 0;
}
