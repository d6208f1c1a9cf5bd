// SPDX-License-Identifier: GPL-2.0
/*
 * The command grammar (user/lib/config.h): tokens, commands, config files, and
 * the canonical text `xlbctl save` prints.  Parsing checks every value
 * against its range and form; whether a command fits the state (exists,
 * limits, cross-checks) is user/lib/state.c's business.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "number.h"

#define INTERVAL_MIN	10
#define INTERVAL_MAX	3600000
#define NAME_CHARS	"A-Z a-z 0-9 . _ : -"
#define VIP_EXAMPLE	"10.0.0.1:80/tcp or [2001:db8::1]:443/tcp"

/* --- text forms ------------------------------------------------------------ */

const char *xlb_addr_str(uint8_t family, const __be32 addr[4],
			 char buf[XLB_ADDR_STR_MAX])
{
	const uint8_t *b = (const uint8_t *)addr;
	char *p = buf;
	int i;

	if (family == XLB_FAMILY_INET6) {
		if (!inet_ntop(AF_INET6, addr, buf, XLB_ADDR_STR_MAX))
			snprintf(buf, XLB_ADDR_STR_MAX, "?");
		return buf;
	}
	/* by hand: glibc's inet_ntop formats IPv4 with sprintf, and a saved
	 * state of 100 000 backends names each by its address at load */
	for (i = 0; i < 4; i++) {
		if (b[i] >= 100)
			*p++ = (char)('0' + b[i] / 100);
		if (b[i] >= 10)
			*p++ = (char)('0' + b[i] / 10 % 10);
		*p++ = (char)('0' + b[i] % 10);
		*p++ = i < 3 ? '.' : 0;
	}
	return buf;
}

static const char *proto_name(uint8_t proto)
{
	if (proto == IPPROTO_TCP)
		return "tcp";
	return proto == IPPROTO_UDP ? "udp" : "?";
}

const char *xlb_vip_str(const struct xlb_vip_key *key,
			char buf[XLB_VIP_STR_MAX])
{
	bool v6 = key->family == XLB_FAMILY_INET6;
	char a[XLB_ADDR_STR_MAX], port[8] = "";

	xlb_addr_str(key->family, key->addr, a);
	if (key->port)
		snprintf(port, sizeof(port), ":%u", ntohs(key->port));
	snprintf(buf, XLB_VIP_STR_MAX, "%s%s%s%s/%s", v6 ? "[" : "", a,
		 v6 ? "]" : "", port, proto_name(key->proto));
	return buf;
}

/* --- keywords -------------------------------------------------------------- */

struct kw {
	const char *name;
	uint32_t val;
};

static const struct kw kw_algo[] = {
	{ "maglev", XLB_ALGO_MAGLEV }, { "ring", XLB_ALGO_RING }, { NULL, 0 },
};

static const struct kw kw_hash[] = {
	{ "5tuple", XLB_HASH_5TUPLE }, { "3tuple", XLB_HASH_3TUPLE },
	{ "src", XLB_HASH_SRC }, { NULL, 0 },
};

static const struct kw kw_encap[] = {
	{ "ipip", XLB_ENCAP_IPIP }, { "gue", XLB_ENCAP_GUE }, { NULL, 0 },
};

static const struct kw kw_state[] = {
	{ "active", XLB_ADMIN_ACTIVE }, { "drain", XLB_ADMIN_DRAIN },
	{ "down", XLB_ADMIN_DOWN }, { NULL, 0 },
};

static const struct kw kw_health[] = {
	{ "tcp", XLB_HEALTH_TCP }, { "http", XLB_HEALTH_HTTP },
	{ "udp", XLB_HEALTH_UDP }, { "none", XLB_HEALTH_NONE },
	{ "inherit", XLB_HEALTH_INHERIT }, { NULL, 0 },
};

static const struct kw kw_onoff[] = {
	{ "on", 1 }, { "off", 0 }, { NULL, 0 },
};

static const struct kw kw_mode[] = {
	{ "native", XLB_ATTACH_NATIVE }, { "generic", XLB_ATTACH_GENERIC },
	{ NULL, 0 },
};

static const struct kw kw_link_verb[] = {
	{ "attach", XLB_VERB_ATTACH }, { "detach", XLB_VERB_DETACH },
	{ NULL, 0 },
};

static const struct kw kw_verb[] = {
	{ "add", XLB_VERB_ADD }, { "set", XLB_VERB_SET },
	{ "del", XLB_VERB_DEL }, { NULL, 0 },
};

static int kw_find(const struct kw *k, const char *s, uint32_t *val)
{
	for (; k->name; k++)
		if (!strcmp(k->name, s)) {
			*val = k->val;
			return 0;
		}
	return -EINVAL;
}

static const char *kw_name(const struct kw *k, uint32_t val)
{
	for (; k->name; k++)
		if (k->val == val)
			return k->name;
	return "?";
}

/* "a, b or c" */
static const char *kw_list(const struct kw *k, char *buf, size_t len)
{
	size_t off = 0, i, n = 0;

	while (k[n].name)
		n++;
	buf[0] = 0;
	for (i = 0; i < n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s",
				!i ? "" : i + 1 == n ? " or " : ", ",
				k[i].name);
	return buf;
}

/* --- values ---------------------------------------------------------------- */

static int num_error(const char *what, const char *tok, int ret,
		     uint32_t lo, uint32_t hi, struct xlb_err *err)
{
	if (ret == -ERANGE)
		return xlb_errf(err, ERANGE, "%s %.20s is out of range; use %u..%u",
				what, tok, lo, hi);
	return xlb_errf(err, EINVAL, "%s \"%.20s\" is not a number; use %u..%u",
			what, tok, lo, hi);
}

static const char *sizes_list(char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < xlb_table_sizes_count && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%u", i ? ", " : "",
				xlb_table_sizes[i]);
	return buf;
}

static int parse_table_size(const char *s, uint32_t *v, struct xlb_err *err)
{
	char sizes[160];

	if (!xlb_parse_u32(s, 0, UINT32_MAX, v) && xlb_table_size_valid(*v))
		return 0;
	return xlb_errf(err, EINVAL,
			"table-size %.20s is not allowed; use one of: %s", s,
			sizes_list(sizes, sizeof(sizes)));
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_key(const char *s, struct xlb_hash_key *k, struct xlb_err *err)
{
	size_t len = strlen(s), i;
	uint64_t w[2] = { 0, 0 };
	int d;

	if (len != 32)
		return xlb_errf(err, EINVAL,
				"key must be 32 hex digits (the 128-bit cluster key), not %zu characters",
				len);
	for (i = 0; i < 32; i++) {
		d = hex_digit(s[i]);
		if (d < 0)
			return xlb_errf(err, EINVAL,
					"key has a character that is not a hex digit at position %zu; use 32 digits 0-9 a-f",
					i + 1);
		w[i / 16] = w[i / 16] << 4 | (uint64_t)d;
	}
	k->k0 = w[0];
	k->k1 = w[1];
	return 0;
}

/*
 * Dotted-quad IPv4 as inet_pton(AF_INET) takes it (four decimal octets
 * of at most 255, no leading zero, nothing else): 1 and *out, or 0.  By
 * hand because every line of a saved state names one or two addresses.
 */
static int ipv4_parse(const char *s, __be32 *out)
{
	unsigned int octets = 0, v = 0;
	uint8_t b[4];
	bool digit = false;

	for (;; s++) {
		if (*s >= '0' && *s <= '9') {
			if (digit && !v)
				return 0;	/* a leading zero */
			v = v * 10 + (unsigned int)(*s - '0');
			if (v > 255)
				return 0;
			digit = true;
		} else if ((*s == '.' || !*s) && digit && octets < 4) {
			b[octets++] = (uint8_t)v;
			if (!*s)
				break;
			v = 0;
			digit = false;
		} else {
			return 0;
		}
	}
	if (octets != 4)
		return 0;
	memcpy(out, b, 4);
	return 1;
}

/* An address, IPv6 maybe in brackets; 0 or -EINVAL. */
int xlb_addr_parse(const char *s, uint8_t *family, __be32 addr[4])
{
	char buf[XLB_ADDR_STR_MAX];
	size_t len = strlen(s);
	bool bracket = len >= 2 && s[0] == '[' && s[len - 1] == ']';

	if (bracket) {
		s++;
		len -= 2;
	}
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	memset(addr, 0, 4 * sizeof(*addr));
	if (memchr(buf, ':', len)) {
		*family = XLB_FAMILY_INET6;
		return inet_pton(AF_INET6, buf, addr) == 1 ? 0 : -EINVAL;
	}
	*family = XLB_FAMILY_INET;
	if (bracket)
		return -EINVAL;
	return ipv4_parse(buf, addr) == 1 ? 0 : -EINVAL;
}

/* Why an address cannot be a VIP, backend or source; NULL if it can. */
static const char *addr_unfit(uint8_t family, const __be32 a[4],
			      bool zero_ok)
{
	static const __be32 zero[4];
	uint32_t h = ntohl(a[0]);

	if (!memcmp(a, zero, sizeof(zero)))
		return zero_ok ? NULL : "the unspecified address";
	if (family == XLB_FAMILY_INET) {
		if (h >> 24 == 0)
			return "in 0.0.0.0/8";
		if (h >> 24 == 127)
			return "a loopback address";
		if (h >> 28 == 14)
			return "a multicast address";
		return h >> 28 == 15 ? "a reserved or broadcast address" : NULL;
	}
	if (!a[0] && !a[1] && !a[2] && a[3] == htonl(1))
		return "the loopback address";
	return h >> 24 == 0xff ? "a multicast address" : NULL;
}

static int parse_unicast(const char *what, const char *s, uint8_t *family,
			 __be32 addr[4], bool zero_ok, struct xlb_err *err)
{
	const char *why;

	if (xlb_addr_parse(s, family, addr))
		return xlb_errf(err, EINVAL,
				"%s \"%.50s\" is not an IPv4 or IPv6 address",
				what, s);
	why = addr_unfit(*family, addr, zero_ok);
	if (why)
		return xlb_errf(err, EINVAL,
				"%s %.50s is %s; use a unicast address",
				what, s, why);
	return 0;
}

static int vip_syntax(const char *s, struct xlb_err *err)
{
	return xlb_errf(err, EINVAL,
			"VIP \"%.60s\" is not ADDR:PORT/PROTO or ADDR/PROTO, e.g. "
			VIP_EXAMPLE, s);
}

/*
 * Split s[0..len) ("ADDR", "ADDR:PORT", "[ADDR6]" or "[ADDR6]:PORT") into
 * address and port (*port NULL: none).  -EAFNOSUPPORT: IPv6 without
 * brackets.
 */
static int split_host_port(const char *s, size_t len, const char **addr,
			   size_t *alen, const char **port, size_t *plen)
{
	const char *close, *colon;

	*port = NULL;
	*plen = 0;
	if (len && s[0] == '[') {
		close = memchr(s, ']', len);
		if (!close)
			return -EINVAL;
		*addr = s + 1;
		*alen = (size_t)(close - s) - 1;
		if (close + 1 == s + len)
			return 0;
		if (close[1] != ':')
			return -EINVAL;
		*port = close + 2;
		*plen = (size_t)(s + len - *port);
		return 0;
	}
	*addr = s;
	colon = memchr(s, ':', len);
	*alen = colon ? (size_t)(colon - s) : len;
	if (!colon)
		return 0;
	if (memchr(colon + 1, ':', (size_t)(s + len - colon - 1)))
		return -EAFNOSUPPORT;
	*port = colon + 1;
	*plen = (size_t)(s + len - *port);
	return 0;
}

static int parse_vip_port(const char *vip, const char *p, size_t len,
			  struct xlb_vip_key *k, struct xlb_err *err)
{
	char buf[12] = "";
	uint32_t v;

	if (len < sizeof(buf))
		memcpy(buf, p, len);
	if (!len || len >= sizeof(buf) || xlb_parse_u32(buf, 0, 65535, &v))
		return xlb_errf(err, ERANGE,
				"VIP \"%.60s\": port \"%.*s\" is not a number 0..65535",
				vip, (int)(len > 12 ? 12 : len), p);
	k->port = htons((uint16_t)v);
	return 0;
}

static int parse_vip_addr(const char *vip, const char *a, size_t len,
			  bool bracket, struct xlb_vip_key *k,
			  struct xlb_err *err)
{
	char buf[XLB_ADDR_STR_MAX] = "";
	int af = bracket ? AF_INET6 : AF_INET;
	const char *why;

	if (len && len < sizeof(buf))
		memcpy(buf, a, len);
	if (!buf[0] || (bracket ? inet_pton(af, buf, k->addr) :
			ipv4_parse(buf, k->addr)) != 1)
		return xlb_errf(err, EINVAL,
				"VIP \"%.60s\": \"%.*s\" is not an %s address",
				vip, (int)(len > 46 ? 46 : len), a,
				bracket ? "IPv6" : "IPv4");
	k->family = bracket ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
	why = addr_unfit(k->family, k->addr, false);
	if (why)
		return xlb_errf(err, EINVAL,
				"VIP \"%.60s\": the address is %s; use a unicast address",
				vip, why);
	return 0;
}

int xlb_vip_parse(const char *s, struct xlb_vip_key *k, struct xlb_err *err)
{
	const char *slash = strrchr(s, '/'), *addr, *port;
	size_t alen, plen;
	uint32_t proto;
	int ret;

	memset(k, 0, sizeof(*k));
	if (!slash)
		return vip_syntax(s, err);
	if (!strcmp(slash + 1, "tcp"))
		proto = IPPROTO_TCP;
	else if (!strcmp(slash + 1, "udp"))
		proto = IPPROTO_UDP;
	else
		return xlb_errf(err, EINVAL,
				"VIP \"%.60s\": unknown protocol \"%.20s\"; use tcp or udp",
				s, slash + 1);
	k->proto = (uint8_t)proto;
	ret = split_host_port(s, (size_t)(slash - s), &addr, &alen, &port,
			      &plen);
	if (ret == -EAFNOSUPPORT)
		return xlb_errf(err, EINVAL,
				"VIP \"%.60s\": an IPv6 address goes in brackets, e.g. [2001:db8::1]:443/tcp",
				s);
	if (ret)
		return vip_syntax(s, err);
	ret = parse_vip_addr(s, addr, alen, s[0] == '[', k, err);
	if (!ret && port)
		ret = parse_vip_port(s, port, plen, k, err);
	return ret;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
	       c == '-';
}

static int parse_name(const char *s, char *out, struct xlb_err *err)
{
	size_t len = strlen(s), i;

	if (!len)
		return xlb_errf(err, EINVAL,
				"name is empty; use 1..%d bytes of " NAME_CHARS,
				XLB_NAME_MAX);
	if (len > XLB_NAME_MAX)
		return xlb_errf(err, ENAMETOOLONG,
				"name \"%.20s...\" is %zu bytes; the limit is %d",
				s, len, XLB_NAME_MAX);
	for (i = 0; i < len; i++)
		if (!name_char(s[i]))
			return xlb_errf(err, EINVAL,
					"name \"%.40s\" has a character other than "
					NAME_CHARS, s);
	memcpy(out, s, len + 1);
	return 0;
}

/* quic-id HEX (1..15 octets) or none (len 0). */
static int parse_quic_id(const char *s, struct xlb_backend_conf *b,
			 struct xlb_err *err)
{
	size_t len = strlen(s), i;
	unsigned int x;

	if (!strcmp(s, "none")) {
		b->quic_id_len = 0;
		memset(b->quic_id, 0, sizeof(b->quic_id));
		return 0;
	}
	for (i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			break;
	if (!len || len % 2 || len > 2 * XLB_QUIC_SID_MAX || i < len)
		return xlb_errf(err, EINVAL,
				"quic-id \"%.40s\" is not a server ID: 1..%d octets as an even number of hex digits (e.g. c4605e), or none",
				s, XLB_QUIC_SID_MAX);
	memset(b->quic_id, 0, sizeof(b->quic_id));
	for (i = 0; i < len / 2; i++) {
		sscanf(s + 2 * i, "%2x", &x);
		b->quic_id[i] = (uint8_t)x;
	}
	b->quic_id_len = (uint8_t)(len / 2);
	return 0;
}

static int parse_ifname(const char *s, char *out, struct xlb_err *err)
{
	size_t len = strlen(s), i;

	if (!len || len >= XLB_IFNAME_MAX)
		return xlb_errf(err, EINVAL,
				"interface name \"%.40s\" must be 1..%d bytes",
				s, XLB_IFNAME_MAX - 1);
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return xlb_errf(err, EINVAL,
				"interface name \"%s\" is not allowed", s);
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == '/' || s[i] == ':')
			return xlb_errf(err, EINVAL,
					"interface name \"%.40s\" may not have blanks, '/', ':' or non-ASCII bytes",
					s);
	memcpy(out, s, len + 1);
	return 0;
}

static int parse_path(const char *s, char *out, struct xlb_err *err)
{
	size_t len = strlen(s), i;

	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			break;
	if (s[0] != '/' || len >= XLB_HTTP_PATH_MAX || i < len)
		return xlb_errf(err, EINVAL,
				"http-path \"%.40s\" must start with '/' and have at most %d printable characters, no blanks",
				s, XLB_HTTP_PATH_MAX - 1);
	memcpy(out, s, len + 1);
	return 0;
}

/* --- options --------------------------------------------------------------- */

enum val_type {
	T_FLAG,		/* no value; lo is what it stores */
	T_NUM,		/* lo..hi */
	T_KW,		/* one of kws */
	T_SIZE,		/* a table size */
	T_KEY,		/* 32 hex digits */
	T_ADDR4,	/* set src4 */
	T_ADDR6,	/* set src6 */
	T_SRC,		/* a VIP's src: either family */
	T_NAME,
	T_PATH,
	T_ANNOUNCE,	/* set announce table N | off */
	T_QUIC_ID,	/* a server ID in hex, or none */
	T_BOUND,	/* off, or a factor lo/100..hi/100, two decimals */
};

#define ON_VIP		1
#define ON_BACKEND	2
#define ON_BOTH		3

struct opt_def {
	const char *name;
	uint8_t opt;		/* enum xlb_opt */
	uint8_t on;		/* ON_* */
	uint8_t type;		/* enum val_type */
	uint32_t lo, hi;
	const struct kw *kws;
};

static const struct opt_def settings[] = {
	{ "key", XLB_OPT_KEY, 0, T_KEY, 0, 0, NULL },
	{ "src4", XLB_OPT_SRC4, 0, T_ADDR4, 0, 0, NULL },
	{ "src6", XLB_OPT_SRC6, 0, T_ADDR6, 0, 0, NULL },
	{ "gue-port", XLB_OPT_GUE_PORT, 0, T_NUM, 1, 65535, NULL },
	{ "mtu", XLB_OPT_MTU, 0, T_NUM, XLB_MTU_MIN, XLB_MTU_MAX, NULL },
	{ "ttl", XLB_OPT_TTL, 0, T_NUM, 1, 255, NULL },
	{ "udp-idle", XLB_OPT_UDP_IDLE, 0, T_NUM, 1, 86400, NULL },
	{ "new-flow-rate", XLB_OPT_NEW_FLOW_RATE, 0, T_NUM, 0, XLB_CT_RATE_MAX,
	  NULL },
	{ "announce", XLB_OPT_ANNOUNCE, 0, T_ANNOUNCE, 0, 0, NULL },
	{ NULL, 0, 0, 0, 0, 0, NULL },
};

static const struct opt_def options[] = {
	{ "algo", XLB_OPT_ALGO, ON_VIP, T_KW, 0, 0, kw_algo },
	{ "table-size", XLB_OPT_TABLE_SIZE, ON_VIP, T_SIZE, 0, 0, NULL },
	{ "vnodes", XLB_OPT_VNODES, ON_VIP, T_NUM, 1, 10000, NULL },
	{ "hash", XLB_OPT_HASH, ON_VIP, T_KW, 0, 0, kw_hash },
	{ "encap", XLB_OPT_ENCAP, ON_VIP, T_KW, 0, 0, kw_encap },
	{ "stateless", XLB_OPT_STATELESS, ON_VIP, T_FLAG, 1, 0, NULL },
	{ "stateful", XLB_OPT_STATELESS, ON_VIP, T_FLAG, 0, 0, NULL },
	{ "panic", XLB_OPT_PANIC, ON_VIP, T_NUM, 0, 100, NULL },
	{ "src", XLB_OPT_VIP_SRC4, ON_VIP, T_SRC, 0, 0, NULL },
	{ "health-consensus", XLB_OPT_HEALTH_CONSENSUS, ON_VIP, T_KW, 0, 0,
	  kw_onoff },
	{ "quic", XLB_OPT_QUIC, ON_VIP, T_KW, 0, 0, kw_onoff },
	{ "quic-cr", XLB_OPT_QUIC_CR, ON_VIP, T_NUM, 0, XLB_QUIC_CR_MAX, NULL },
	{ "quic-sid-len", XLB_OPT_QUIC_SID_LEN, ON_VIP, T_NUM, XLB_QUIC_SID_MIN,
	  XLB_QUIC_SID_MAX, NULL },
	{ "quic-nonce-len", XLB_OPT_QUIC_NONCE_LEN, ON_VIP, T_NUM,
	  XLB_QUIC_NONCE_MIN, XLB_QUIC_NONCE_MAX, NULL },
	{ "bound", XLB_OPT_BOUND, ON_VIP, T_BOUND, XLB_BOUND_MIN, XLB_BOUND_MAX,
	  NULL },
	{ "name", XLB_OPT_NAME, ON_BACKEND, T_NAME, 0, 0, NULL },
	{ "weight", XLB_OPT_WEIGHT, ON_BACKEND, T_NUM, 0, 65535, NULL },
	{ "state", XLB_OPT_STATE, ON_BACKEND, T_KW, 0, 0, kw_state },
	{ "quic-id", XLB_OPT_QUIC_ID, ON_BACKEND, T_QUIC_ID, 0, 0, NULL },
	{ "health", XLB_OPT_HEALTH, ON_BOTH, T_KW, 0, 0, kw_health },
	{ "health-port", XLB_OPT_HEALTH_PORT, ON_BOTH, T_NUM, 0, 65535, NULL },
	{ "interval", XLB_OPT_INTERVAL, ON_BOTH, T_NUM, INTERVAL_MIN,
	  INTERVAL_MAX, NULL },
	{ "timeout", XLB_OPT_TIMEOUT, ON_BOTH, T_NUM, 1, INTERVAL_MAX, NULL },
	{ "rise", XLB_OPT_RISE, ON_BOTH, T_NUM, 1, 100, NULL },
	{ "fall", XLB_OPT_FALL, ON_BOTH, T_NUM, 1, 100, NULL },
	{ "http-path", XLB_OPT_HTTP_PATH, ON_BOTH, T_PATH, 0, 0, NULL },
	{ "http-status", XLB_OPT_HTTP_STATUS, ON_BOTH, T_NUM, 100, 599, NULL },
	{ NULL, 0, 0, 0, 0, 0, NULL },
};

static const struct opt_def *opt_find(const struct opt_def *d, const char *s,
				      uint8_t on)
{
	for (; d->name; d++)
		if ((!on || (d->on & on)) && !strcmp(d->name, s))
			return d;
	return NULL;
}

static const char *opt_list(const struct opt_def *d, uint8_t on, char *buf,
			    size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (; d->name && off < len; d++)
		if (!on || (d->on & on))
			off += snprintf(buf + off, len - off, "%s%s",
					off ? ", " : "", d->name);
	return buf;
}

/* What a value of d looks like, for "needs a value" messages. */
static const char *opt_hint(const struct opt_def *d, char *buf, size_t len)
{
	switch (d->type) {
	case T_NUM:
		snprintf(buf, len, "%u..%u", d->lo, d->hi);
		return buf;
	case T_KW:
		return kw_list(d->kws, buf, len);
	case T_SIZE:
		return sizes_list(buf, len);
	case T_KEY:
		return "32 hex digits";
	case T_ADDR4:
		return "an IPv4 address";
	case T_ADDR6:
		return "an IPv6 address";
	case T_SRC:
		return "an IPv4 or IPv6 address";
	case T_NAME:
		return "1..63 bytes of " NAME_CHARS;
	case T_PATH:
		return "a path such as /health";
	case T_ANNOUNCE:
		return "table 1..4294967295 (not 253, 254, 255) or off";
	case T_QUIC_ID:
		return "a server ID of 1..15 octets in hex (e.g. c4605e), or none";
	case T_BOUND:
		return "off, or a factor 1..100 with at most two decimals (e.g. 1.25)";
	}
	return "";
}

static struct xlb_health *op_health(struct xlb_op *op)
{
	return op->object == XLB_OBJ_VIP ? &op->vip.health :
					   &op->backend.health;
}

/* Store a numeric or keyword value of option opt. */
static void store(struct xlb_op *op, int opt, uint32_t v)
{
	struct xlb_health *h = op_health(op);

	switch (opt) {
	case XLB_OPT_GUE_PORT:
		op->global.gue_port = (uint16_t)v;
		break;
	case XLB_OPT_MTU:
		op->global.mtu = (uint16_t)v;
		break;
	case XLB_OPT_TTL:
		op->global.ttl = (uint8_t)v;
		break;
	case XLB_OPT_UDP_IDLE:
		op->global.udp_idle_s = v;
		break;
	case XLB_OPT_NEW_FLOW_RATE:
		op->global.new_flow_rate = v;
		break;
	case XLB_OPT_ALGO:
		op->vip.algo = v;
		break;
	case XLB_OPT_TABLE_SIZE:
		op->vip.table_size = v;
		break;
	case XLB_OPT_VNODES:
		op->vip.vnodes = v;
		break;
	case XLB_OPT_HASH:
		op->vip.hash_mode = (uint8_t)v;
		break;
	case XLB_OPT_ENCAP:
		op->vip.encap = (uint8_t)v;
		break;
	case XLB_OPT_STATELESS:
		op->vip.stateless = v;
		break;
	case XLB_OPT_PANIC:
		op->vip.panic_pct = (uint8_t)v;
		break;
	case XLB_OPT_HEALTH_CONSENSUS:
		op->vip.health_consensus = v;
		break;
	case XLB_OPT_QUIC:
		op->vip.quic = v;
		break;
	case XLB_OPT_QUIC_CR:
		op->vip.quic_cr = (uint8_t)v;
		break;
	case XLB_OPT_QUIC_SID_LEN:
		op->vip.quic_sid_len = (uint8_t)v;
		break;
	case XLB_OPT_QUIC_NONCE_LEN:
		op->vip.quic_nonce_len = (uint8_t)v;
		break;
	case XLB_OPT_BOUND:
		op->vip.bound_pct = (uint16_t)v;
		break;
	case XLB_OPT_WEIGHT:
		op->backend.weight = v;
		break;
	case XLB_OPT_STATE:
		op->backend.admin = (uint8_t)v;
		break;
	case XLB_OPT_HEALTH:
		h->kind = (uint8_t)v;
		break;
	case XLB_OPT_HEALTH_PORT:
		h->port = (uint16_t)v;
		break;
	case XLB_OPT_INTERVAL:
		h->interval_ms = v;
		break;
	case XLB_OPT_TIMEOUT:
		h->timeout_ms = v;
		break;
	case XLB_OPT_RISE:
		h->rise = (uint8_t)v;
		break;
	case XLB_OPT_FALL:
		h->fall = (uint8_t)v;
		break;
	case XLB_OPT_HTTP_STATUS:
		h->http_status = (uint16_t)v;
		break;
	}
}

static int parse_kw_value(const struct opt_def *d, const char *s,
			  const struct xlb_op *op, uint32_t *v,
			  struct xlb_err *err)
{
	char list[96];

	if (kw_find(d->kws, s, v))
		return xlb_errf(err, EINVAL, "unknown %s \"%.40s\"; use %s",
				d->name, s, kw_list(d->kws, list, sizeof(list)));
	if (d->opt == XLB_OPT_HEALTH && *v == XLB_HEALTH_INHERIT &&
	    op->object == XLB_OBJ_VIP)
		return xlb_errf(err, EINVAL,
				"health inherit is for backends; a VIP's health is tcp, http, udp or none");
	return 0;
}

/* set src4 / set src6: the unspecified address clears the source. */
static int parse_src_setting(const struct opt_def *d, const char *s,
			     struct xlb_op *op, struct xlb_err *err)
{
	uint8_t want = d->type == T_ADDR4 ? XLB_FAMILY_INET : XLB_FAMILY_INET6;
	uint8_t family;
	__be32 a[4];
	int ret;

	ret = parse_unicast(d->name, s, &family, a, true, err);
	if (ret)
		return ret;
	if (family != want)
		return xlb_errf(err, EINVAL, "%s needs an IPv%d address, not %.50s",
				d->name, want, s);
	if (want == XLB_FAMILY_INET)
		op->global.src4 = a[0];
	else
		memcpy(op->global.src6, a, sizeof(a));
	return d->opt;
}

/* A VIP's src: which of the two it sets depends on the family. */
static int parse_vip_src(const char *s, struct xlb_op *op, struct xlb_err *err)
{
	uint8_t family;
	__be32 a[4];
	int ret;

	ret = parse_unicast("src", s, &family, a, true, err);
	if (ret)
		return ret;
	if (family == XLB_FAMILY_INET) {
		op->vip.src4 = a[0];
		return XLB_OPT_VIP_SRC4;
	}
	memcpy(op->vip.src6, a, sizeof(a));
	return XLB_OPT_VIP_SRC6;
}

/*
 * A bound: "off" (0), or a factor such as 1.25 as c x 100, within
 * d->lo..d->hi; digits only, at most two after the point.
 */
static int parse_bound(const struct opt_def *d, const char *s, uint32_t *v,
		       struct xlb_err *err)
{
	uint32_t whole = 0, frac = 0, fd = 0;
	const char *p = s;
	int digits = 0;

	if (!strcmp(s, "off")) {
		*v = 0;
		return 0;
	}
	for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		whole = whole * 10 + (uint32_t)(*p - '0');
	if (*p == '.' && digits) {
		for (p++; *p >= '0' && *p <= '9' && fd < 2; p++, fd++)
			frac = frac * 10 + (uint32_t)(*p - '0');
		if (!fd)
			digits = 0;
	}
	if (!digits || *p)
		return xlb_errf(err, EINVAL,
				"bad %s \"%.40s\": off, or a factor %u..%u with at most two decimals (e.g. 1.25)",
				d->name, s, d->lo / 100, d->hi / 100);
	*v = whole * 100 + (fd == 1 ? frac * 10 : frac);
	if (*v < d->lo || *v > d->hi)
		return xlb_errf(err, ERANGE,
				"%s %.40s is out of range: off, or %u..%u (a backend takes at most that many times the mean of its VIP's connections)",
				d->name, s, d->lo / 100, d->hi / 100);
	return 0;
}

static int parse_num_value(const struct opt_def *d, const char *s,
			   uint32_t *v, struct xlb_err *err)
{
	int ret = xlb_parse_u32(s, d->lo, d->hi, v);

	return ret ? num_error(d->name, s, ret, d->lo, d->hi, err) : 0;
}

/* Parse and store the value of d; returns the option it set, or -errno. */
static int parse_value(const struct opt_def *d, const char *s,
		       struct xlb_op *op, struct xlb_err *err)
{
	uint32_t v = d->lo;
	int ret = 0;

	switch (d->type) {
	case T_NUM:
		ret = parse_num_value(d, s, &v, err);
		break;
	case T_KW:
		ret = parse_kw_value(d, s, op, &v, err);
		break;
	case T_SIZE:
		ret = parse_table_size(s, &v, err);
		break;
	case T_KEY:
		ret = parse_key(s, &op->global.key, err);
		return ret ? ret : d->opt;
	case T_ADDR4:
	case T_ADDR6:
		return parse_src_setting(d, s, op, err);
	case T_SRC:
		return parse_vip_src(s, op, err);
	case T_NAME:
		ret = parse_name(s, op->backend.name, err);
		return ret ? ret : d->opt;
	case T_PATH:
		ret = parse_path(s, op_health(op)->http_path, err);
		return ret ? ret : d->opt;
	case T_ANNOUNCE:
		break;		/* parse_announce: more than one token */
	case T_QUIC_ID:
		ret = parse_quic_id(s, &op->backend, err);
		return ret ? ret : d->opt;
	case T_BOUND:
		ret = parse_bound(d, s, &v, err);
		break;
	}
	if (ret)
		return ret;
	store(op, d->opt, v);
	return d->opt;
}

/* --- commands -------------------------------------------------------------- */

struct cursor {
	char *const *v;
	int n;
	int i;		/* next token */
	int bad;	/* the token an error is about */
};

static const char *next(struct cursor *c)
{
	if (c->i >= c->n)
		return NULL;
	c->bad = c->i;
	return c->v[c->i++];
}

static int expect_end(struct cursor *c, const char *usage,
		      struct xlb_err *err)
{
	const char *tok = next(c);

	if (!tok)
		return 0;
	return xlb_errf(err, EINVAL, "unexpected \"%.40s\"; the command is: %s",
			tok, usage);
}

static int parse_verb(struct cursor *c, const char *obj, const struct kw *k,
		      struct xlb_op *op, struct xlb_err *err)
{
	const char *tok = next(c);
	char list[64];
	uint32_t v;

	if (!tok)
		return xlb_errf(err, EINVAL, "%s needs a verb: %s", obj,
				kw_list(k, list, sizeof(list)));
	if (kw_find(k, tok, &v))
		return xlb_errf(err, EINVAL, "unknown verb \"%.40s\" for %s; use %s",
				tok, obj, kw_list(k, list, sizeof(list)));
	op->verb = (uint8_t)v;
	return 0;
}

/* Record option opt at token idx, refusing a second one. */
static int mark_given(struct cursor *c, struct xlb_op *op, int opt, int idx,
		      const char *name, struct xlb_err *err)
{
	if (op->given & XLB_OPT(opt)) {
		c->bad = idx;
		if (opt == XLB_OPT_VIP_SRC4 || opt == XLB_OPT_VIP_SRC6)
			return xlb_errf(err, EINVAL,
					"src is given twice for IPv%d",
					opt == XLB_OPT_VIP_SRC4 ? 4 : 6);
		if (opt == XLB_OPT_STATELESS)
			return xlb_errf(err, EINVAL,
					"stateless or stateful is given twice");
		return xlb_errf(err, EINVAL, "option %s is given twice", name);
	}
	op->given |= XLB_OPT(opt);
	op->tok[opt] = (uint8_t)idx;
	return 0;
}

static int unknown_option(const char *tok, const struct xlb_op *op,
			  uint8_t on, struct xlb_err *err)
{
	char list[200];

	return xlb_errf(err, EINVAL, "unknown option \"%.40s\" for %s %s; use %s",
			tok, on == ON_VIP ? "vip" : "backend",
			kw_name(kw_verb, op->verb),
			opt_list(options, on, list, sizeof(list)));
}

static int parse_options(struct cursor *c, struct xlb_op *op, uint8_t on,
			 struct xlb_err *err)
{
	const struct opt_def *d;
	const char *tok, *val;
	char hint[160];
	int idx, opt;

	while ((tok = next(c))) {
		idx = c->bad;
		val = NULL;
		d = opt_find(options, tok, on);
		if (!d)
			return unknown_option(tok, op, on, err);
		if (d->type != T_FLAG) {
			val = next(c);
			if (!val)
				return xlb_errf(err, EINVAL, "%s needs a value: %s",
						d->name,
						opt_hint(d, hint, sizeof(hint)));
		}
		opt = parse_value(d, val, op, err);
		if (opt < 0)
			return opt;
		opt = mark_given(c, op, opt, idx, d->name, err);
		if (opt)
			return opt;
	}
	return 0;
}

/*
 * set announce table N | set announce off: the routing table in which
 * xlbd keeps a host route per VIP address it serves (a routing daemon
 * announces them).  0 is no table; 253, 254 and 255 are the kernel's
 * default, main and local tables, which other routes share.
 */
static int parse_announce(struct cursor *c, struct xlb_op *op,
			  struct xlb_err *err)
{
	const char *tok = next(c);
	uint32_t v;
	int ret;

	if (!tok)
		return xlb_errf(err, EINVAL,
				"set announce needs a value: table 1..4294967295 (not 253, 254, 255) or off");
	if (!strcmp(tok, "off")) {
		op->global.announce_table = 0;
		return XLB_OPT_ANNOUNCE;
	}
	if (strcmp(tok, "table"))
		return xlb_errf(err, EINVAL,
				"unknown announce value \"%.40s\"; use \"table N\" or \"off\"",
				tok);
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL,
				"set announce table needs a routing table number, 1..4294967295 (not 253, 254, 255)");
	ret = xlb_parse_u32(tok, 0, UINT32_MAX, &v);
	if (ret)
		return num_error("announce table", tok, ret, 1, UINT32_MAX,
				 err);
	if (!v)
		return xlb_errf(err, ERANGE,
				"announce table 0 is no routing table; use 1..4294967295 (not 253, 254, 255), or \"set announce off\"");
	if (v >= 253 && v <= 255)
		return xlb_errf(err, ERANGE,
				"announce table %u is the kernel's %s table, shared with other routes; give the VIP routes a table of their own (1..252 or 256..4294967295)",
				v, v == 253 ? "default" : v == 254 ? "main" :
				"local");
	op->global.announce_table = v;
	return XLB_OPT_ANNOUNCE;
}

static int parse_set(struct cursor *c, struct xlb_op *op, struct xlb_err *err)
{
	const struct opt_def *d;
	const char *tok;
	char buf[160];
	int opt;

	op->object = XLB_OBJ_GLOBAL;
	op->verb = XLB_VERB_SET;
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL, "set needs a setting: %s",
				opt_list(settings, 0, buf, sizeof(buf)));
	d = opt_find(settings, tok, 0);
	if (!d)
		return xlb_errf(err, EINVAL, "unknown setting \"%.40s\"; use %s",
				tok, opt_list(settings, 0, buf, sizeof(buf)));
	if (d->type == T_ANNOUNCE) {
		opt = parse_announce(c, op, err);
		if (opt < 0)
			return opt;
		op->obj_tok = (uint8_t)c->bad;
		mark_given(c, op, opt, c->bad, d->name, err);
		return expect_end(c, "set announce table N | set announce off",
				  err);
	}
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL, "set %s needs a value: %s", d->name,
				opt_hint(d, buf, sizeof(buf)));
	opt = parse_value(d, tok, op, err);
	if (opt < 0)
		return opt;
	op->obj_tok = (uint8_t)c->bad;
	mark_given(c, op, opt, c->bad, d->name, err);
	snprintf(buf, sizeof(buf), "set %s VALUE", d->name);
	return expect_end(c, buf, err);
}

static int parse_link(struct cursor *c, struct xlb_op *op,
		      struct xlb_err *err)
{
	const char *tok;
	uint32_t v;
	int ret;

	op->object = XLB_OBJ_LINK;
	ret = parse_verb(c, "link", kw_link_verb, op, err);
	if (ret)
		return ret;
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL, "link %s needs an interface name",
				kw_name(kw_link_verb, op->verb));
	ret = parse_ifname(tok, op->link.ifname, err);
	if (ret)
		return ret;
	op->obj_tok = (uint8_t)c->bad;
	if (op->verb == XLB_VERB_DETACH)
		return expect_end(c, "link detach IFNAME", err);
	tok = next(c);
	if (!tok)
		return 0;
	if (kw_find(kw_mode, tok, &v))
		return xlb_errf(err, EINVAL,
				"unknown attach mode \"%.40s\"; use native or generic",
				tok);
	op->link.mode = (uint8_t)v;
	mark_given(c, op, XLB_OPT_MODE, c->bad, "mode", err);
	return expect_end(c, "link attach IFNAME [native|generic]", err);
}

/* "vip VERB VIP" or "backend VERB VIP": the verb and the VIP. */
static int parse_head(struct cursor *c, const char *obj, struct xlb_op *op,
		      struct xlb_vip_key *key, struct xlb_err *err)
{
	const char *tok;
	int ret;

	ret = parse_verb(c, obj, kw_verb, op, err);
	if (ret)
		return ret;
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL, "%s %s needs a VIP such as " VIP_EXAMPLE,
				obj, kw_name(kw_verb, op->verb));
	ret = xlb_vip_parse(tok, key, err);
	op->vip_tok = (uint8_t)c->bad;
	op->obj_tok = (uint8_t)c->bad;
	return ret;
}

static int parse_vip(struct cursor *c, struct xlb_op *op, struct xlb_err *err)
{
	int ret;

	op->object = XLB_OBJ_VIP;
	ret = parse_head(c, "vip", op, &op->vip.key, err);
	if (ret)
		return ret;
	if (op->verb == XLB_VERB_DEL)
		return expect_end(c, "vip del VIP", err);
	return parse_options(c, op, ON_VIP, err);
}

static int parse_backend(struct cursor *c, struct xlb_op *op,
			 struct xlb_err *err)
{
	struct xlb_backend_conf *b = &op->backend;
	const char *tok;
	int ret;

	op->object = XLB_OBJ_BACKEND;
	ret = parse_head(c, "backend", op, &b->vip, err);
	if (ret)
		return ret;
	tok = next(c);
	if (!tok)
		return xlb_errf(err, EINVAL,
				"backend %s needs a backend address after the VIP",
				kw_name(kw_verb, op->verb));
	ret = parse_unicast("backend address", tok, &b->family, b->addr,
			    false, err);
	if (ret)
		return ret;
	op->obj_tok = (uint8_t)c->bad;
	if (op->verb == XLB_VERB_DEL)
		return expect_end(c, "backend del VIP ADDR", err);
	return parse_options(c, op, ON_BACKEND, err);
}

static int parse_tokens(struct cursor *c, struct xlb_op *op,
			struct xlb_err *err)
{
	const char *obj;

	memset(op, 0, sizeof(*op));
	obj = next(c);
	if (!obj)
		return xlb_errf(err, EINVAL,
				"no command; use set, link, vip or backend");
	if (!strcmp(obj, "set"))
		return parse_set(c, op, err);
	if (!strcmp(obj, "link"))
		return parse_link(c, op, err);
	if (!strcmp(obj, "vip"))
		return parse_vip(c, op, err);
	if (!strcmp(obj, "backend"))
		return parse_backend(c, op, err);
	return xlb_errf(err, EINVAL,
			"unknown object \"%.40s\"; use set, link, vip or backend",
			obj);
}

/* --- tokens ---------------------------------------------------------------- */

struct toks {
	char *v[XLB_TOKENS_MAX];
	unsigned int col[XLB_TOKENS_MAX];	/* 1-based */
	int n;
	char buf[XLB_LINE_MAX + XLB_TOKENS_MAX];
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Only text: no NUL, no control characters but tab and CR. */
static int check_text(const char *line, size_t len, unsigned int *col,
		      struct xlb_err *err)
{
	const uint64_t ones = 0x0101010101010101ull, highs = ones * 0x80;
	unsigned char ch;
	uint64_t w, x;
	size_t i = 0;

	/*
	 * Eight bytes at a time while none is below 0x20 or 0x7f (the
	 * exact tests of "has a byte less than n" and "has a zero byte"):
	 * a large saved state is checked whole at every start.
	 */
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, line + i, 8);
		x = w ^ (ones * 0x7f);
		if (((w - ones * 0x20) & ~w & highs) ||
		    ((x - ones) & ~x & highs))
			break;
	}
	for (; i < len; i++) {
		ch = (unsigned char)line[i];
		if (ch >= 0x20 && ch != 0x7f)
			continue;
		*col = (unsigned int)i + 1;
		if (!ch)
			return xlb_errf(err, EINVAL, "NUL byte; a config is text");
		if (ch != '\t' && ch != '\r')
			return xlb_errf(err, EINVAL,
					"control character 0x%02x; a config is text",
					ch);
	}
	return 0;
}

/* A double-quoted token from line[*i] (the quote) to a blank or the end. */
static int lex_quoted(const char *line, size_t len, size_t *i, char **o,
		      struct xlb_err *err)
{
	char ch;

	for ((*i)++; *i < len; (*i)++) {
		ch = line[*i];
		if (ch == '"') {
			(*i)++;
			*(*o)++ = 0;
			if (*i < len && !is_blank(line[*i]))
				return xlb_errf(err, EINVAL,
						"a closing quote must end the token");
			return 0;
		}
		if (ch == '\\') {
			if (*i + 1 >= len ||
			    (line[*i + 1] != '"' && line[*i + 1] != '\\'))
				return xlb_errf(err, EINVAL,
						"unknown escape in a quoted token; only \\\" and \\\\ are accepted");
			ch = line[++(*i)];
		}
		*(*o)++ = ch;
	}
	return xlb_errf(err, EINVAL, "the quote is not closed on this line");
}

static int lex_plain(const char *line, size_t len, size_t *i, char **o,
		     struct xlb_err *err)
{
	size_t k = *i;
	char *out = *o;		/* in registers: stores through *o alias all */

	for (; k < len && !is_blank(line[k]); k++) {
		if (line[k] == '"') {
			*i = k;
			return xlb_errf(err, EINVAL,
					"a quote in the middle of a token; quote the whole token");
		}
		*out++ = line[k];
	}
	*out++ = 0;
	*i = k;
	*o = out;
	return 0;
}

/* Split a line (without its newline) into t; on error *col says where. */
static int lex(const char *line, size_t len, struct toks *t,
	       unsigned int *col, struct xlb_err *err)
{
	char *o = t->buf;
	size_t i = 0;
	int ret;

	t->n = 0;
	*col = 1;
	if (len > XLB_LINE_MAX) {
		*col = XLB_LINE_MAX + 1;
		return xlb_errf(err, E2BIG, "the line is longer than %d bytes",
				XLB_LINE_MAX);
	}
	ret = check_text(line, len, col, err);
	while (!ret) {
		while (i < len && is_blank(line[i]))
			i++;
		if (i == len || line[i] == '#')
			return 0;
		*col = (unsigned int)i + 1;
		if (t->n == XLB_TOKENS_MAX)
			return xlb_errf(err, E2BIG,
					"more than %d tokens on one line",
					XLB_TOKENS_MAX);
		t->v[t->n] = o;
		t->col[t->n++] = *col;
		if (line[i] == '"')
			ret = lex_quoted(line, len, &i, &o, err);
		else
			ret = lex_plain(line, len, &i, &o, err);
	}
	return ret;
}

/* --- entry points ---------------------------------------------------------- */

int xlb_op_parse_argv(int argc, char **argv, struct xlb_op *op,
		      struct xlb_err *err)
{
	struct cursor c = { argv, argc, 0, 0 };
	struct xlb_err e = { "" };
	int i, ret;

	if (argc <= 0)
		return xlb_errf(err, EINVAL,
				"no command; use set, link, vip or backend");
	if (argc > XLB_TOKENS_MAX)
		return xlb_errf(err, E2BIG, "argument %d: more than %d arguments",
				XLB_TOKENS_MAX + 1, XLB_TOKENS_MAX);
	for (i = 0; i < argc; i++)
		if (strlen(argv[i]) > XLB_LINE_MAX)
			return xlb_errf(err, E2BIG,
					"argument %d: longer than %d bytes",
					i + 1, XLB_LINE_MAX);
	ret = parse_tokens(&c, op, &e);
	if (ret)
		return xlb_errf(err, -ret, "argument %d: %s", c.bad + 1, e.msg);
	return 0;
}

int xlb_op_parse_line(const char *line, struct xlb_op *op, int *is_empty,
		      struct xlb_err *err)
{
	struct xlb_err e = { "" };
	size_t len = strlen(line);
	struct cursor c;
	struct toks t;
	unsigned int col;
	int ret;

	if (len && line[len - 1] == '\n')
		len--;
	*is_empty = 0;
	ret = lex(line, len, &t, &col, &e);
	if (ret)
		return xlb_errf(err, -ret, "column %u: %s", col, e.msg);
	if (!t.n) {
		*is_empty = 1;
		return 0;
	}
	c = (struct cursor){ t.v, t.n, 0, 0 };
	ret = parse_tokens(&c, op, &e);
	if (ret)
		return xlb_errf(err, -ret, "column %u: %s", t.col[c.bad], e.msg);
	return 0;
}

/* The token an apply error is about (see xlb_state_apply_at). */
static int where_token(const struct xlb_op *op, int where)
{
	if (where >= 0 && where < XLB_OPT_COUNT &&
	    (op->given & XLB_OPT(where)))
		return op->tok[where];
	return where == XLB_WHERE_VIP ? op->vip_tok : op->obj_tok;
}

/*
 * Lex, parse, check (when check is given) and apply one line; on error
 * *col says where.
 */
static int apply_line(struct xlb_state *s, const char *line, size_t len,
		      struct toks *t, struct xlb_op *op, unsigned int *col,
		      xlb_line_check_fn check, void *ctx, struct xlb_err *e)
{
	struct cursor c;
	int where, ret, tok = 0;

	ret = lex(line, len, t, col, e);
	if (ret || !t->n)
		return ret;
	c = (struct cursor){ t->v, t->n, 0, 0 };
	ret = parse_tokens(&c, op, e);
	if (ret) {
		*col = t->col[c.bad];
		return ret;
	}
	if (check) {
		ret = check(op, &tok, ctx, e);
		if (ret) {
			*col = t->col[tok >= 0 && tok < t->n ? tok : 0];
			return ret;
		}
	}
	ret = xlb_state_apply_at(s, op, &where, e);
	if (ret)
		*col = t->col[where_token(op, where)];
	return ret;
}

int xlb_config_apply_line(struct xlb_state *s, const char *line, size_t len,
			  xlb_line_check_fn check, void *ctx, int *is_empty,
			  unsigned int *col, struct xlb_err *err)
{
	struct xlb_op op;
	struct toks t;
	int ret;

	ret = apply_line(s, line, len, &t, &op, col, check, ctx, err);
	*is_empty = !ret && !t.n;
	return ret;
}

/* Where the byte past the size limit is. */
static int too_big(const char *text, size_t len, const char *name,
		   struct xlb_err *err)
{
	unsigned int line = 1;
	size_t i, start = 0;

	for (i = 0; i < XLB_FILE_MAX; i++)
		if (text[i] == '\n') {
			line++;
			start = i + 1;
		}
	return xlb_errf(err, EFBIG,
			"%s:%u:%zu: the file is %zu bytes; the limit is %u (%u MiB)",
			name, line, XLB_FILE_MAX - start + 1, len, XLB_FILE_MAX,
			XLB_FILE_MAX >> 20);
}

struct file_pos {
	const char *name;
	unsigned int line, col;
	unsigned int vip_line, vip_col;	/* the add of the first VIP */
	struct xlb_vip_key vip;
};

/* What only the whole file can tell: the key, then xlb_state_validate. */
static int check_file(const struct xlb_state *s, struct file_pos *p,
		      struct xlb_err *e)
{
	char vs[XLB_VIP_STR_MAX];

	p->line = p->vip_line ? p->vip_line : 1;
	p->col = p->vip_line ? p->vip_col : 1;
	if (s->n_vips && !s->global.key_set)
		return xlb_errf(e, EINVAL,
				"VIP %s needs the cluster key, which the file never sets; add \"set key\" with 32 hex digits",
				xlb_vip_str(&p->vip, vs));
	return xlb_state_validate(s, e);
}

/* Lines [text, text + len) applied to s; on error p says where. */
static int parse_lines(struct xlb_state *s, const char *text, size_t len,
		       struct file_pos *p, xlb_line_check_fn check,
		       struct xlb_err *e)
{
	const char *line, *nl;
	struct xlb_op op;
	struct toks t;
	size_t off, llen, had;
	int ret;

	for (off = 0; off < len; off += llen + 1, p->line++) {
		line = text + off;
		nl = memchr(line, '\n', len - off);
		llen = nl ? (size_t)(nl - line) : len - off;
		had = s->n_vips;
		ret = apply_line(s, line, llen, &t, &op, &p->col, check, NULL,
				 e);
		if (ret)
			return ret;
		if (!had && s->n_vips) {
			p->vip_line = p->line;
			p->vip_col = t.col[op.vip_tok];
			p->vip = op.vip.key;
		}
	}
	return 0;
}

/*
 * A large file is read as two halves at once, split before the first
 * "vip add" line past its middle.  The second half starts from an empty
 * state and may only add VIPs and backends; an add's checks and its place
 * depend only on its own VIP's entries, so when every VIP it added sorts
 * after the first half's last VIP, the first half's state with the second
 * half's appended (xlb_state_join) is what one pass would have built, and
 * the whole-file checks then run on it as they would.  Anything else (an
 * error in either half, another command in the second, VIPs out of order
 * across the split, no second CPU or thread) reads the file again in one
 * pass, which gives the error and its line as before.  So the text xlbd
 * saves, VIPs in order with their backends, reads in about half the time,
 * and every other text reads as it always did.
 */
#define SPLIT_MIN	(512u << 10)	/* bytes: below it one pass is quick */

unsigned long xlb_config_halves_joined;

struct half {
	const char *text;
	size_t len;
	struct xlb_state s;
	int ret;
};

static int adds_only(const struct xlb_op *op, int *tok, void *ctx,
		     struct xlb_err *err)
{
	(void)ctx;
	*tok = 0;
	if ((op->object == XLB_OBJ_VIP || op->object == XLB_OBJ_BACKEND) &&
	    op->verb == XLB_VERB_ADD)
		return 0;
	return xlb_errf(err, EAGAIN, "not an add");
}

/* Lines of the text: more than the backends it adds. */
static size_t count_lines(const char *t, size_t len)
{
	const char *end = t + len, *nl;
	size_t n = 1;

	for (; (nl = memchr(t, '\n', (size_t)(end - t))); t = nl + 1)
		n++;
	return n;
}

static void *parse_second_half(void *arg)
{
	struct half *h = arg;
	struct file_pos p = { .name = "", .line = 1, .col = 1 };
	struct xlb_err e = { "" };

	xlb_state_init(&h->s);
	/* room for every add: no array moves while it grows (out of memory: none) */
	xlb_state_reserve(&h->s, count_lines(h->text, h->len));
	h->ret = parse_lines(&h->s, h->text, h->len, &p, adds_only, &e);
	return NULL;
}

static bool two_cpus(void)
{
	cpu_set_t set;

	return !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 1;
}

/* 0: *out holds the file, checked; else nothing is held. */
static int parse_halves(const char *text, size_t len, struct xlb_state *out)
{
	static const char mark[] = "\nvip add ";
	struct file_pos p = { .name = "", .line = 1, .col = 1 };
	struct xlb_err e = { "" };
	struct half h = { 0 };
	const char *at;
	size_t first;
	pthread_t th;
	int ret;

	if (len < SPLIT_MIN || !two_cpus())
		return -EAGAIN;
	at = memmem(text + len / 2, len - len / 2, mark, sizeof(mark) - 1);
	if (!at)
		return -EAGAIN;
	h.text = at + 1;
	h.len = len - (size_t)(h.text - text);
	if (pthread_create(&th, NULL, parse_second_half, &h))
		return -EAGAIN;
	xlb_state_init(out);
	first = (size_t)(h.text - text);
	xlb_state_reserve(out, count_lines(text, first));
	ret = parse_lines(out, text, first, &p, NULL, &e);
	pthread_join(th, NULL);
	if (!ret)
		ret = h.ret;
	if (!ret)
		ret = xlb_state_join(out, &h.s);
	if (!ret)
		ret = check_file(out, &p, &e);
	if (ret) {
		xlb_state_free(&h.s);
		xlb_state_free(out);
		return ret;
	}
	__atomic_add_fetch(&xlb_config_halves_joined, 1, __ATOMIC_RELAXED);
	return 0;
}

int xlb_config_parse(const char *text, size_t len, const char *filename,
		     struct xlb_state *out, struct xlb_err *err)
{
	struct file_pos p = { .name = filename ? filename : "<config>",
			      .line = 1, .col = 1 };
	struct xlb_err e = { "" };
	struct xlb_state s;
	int ret;

	if (len > XLB_FILE_MAX)
		return too_big(text, len, p.name, err);
	if (!parse_halves(text, len, &s)) {
		*out = s;
		return 0;
	}
	xlb_state_init(&s);
	ret = parse_lines(&s, text, len, &p, NULL, &e);
	if (!ret)
		ret = check_file(&s, &p, &e);
	if (ret)
		goto fail;
	*out = s;
	return 0;
fail:
	xlb_state_free(&s);
	return xlb_errf(err, -ret, "%s:%u:%u: %s", p.name, p.line, p.col, e.msg);
}

/* --- save ------------------------------------------------------------------ */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static bool sb_reserve(struct sbuf *b, size_t more)
{
	size_t cap = b->cap;
	char *p;

	if (b->len + more < b->cap)
		return true;
	while (cap <= b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !sb_reserve(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static bool needs_quotes(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f || *s == '"' || *s == '\\' ||
		    *s == '#')
			return true;
	return false;
}

/* " TOKEN", quoted when the lexer would not read it back as it is. */
static void sb_token(struct sbuf *b, const char *s)
{
	if (!needs_quotes(s)) {
		sb_printf(b, " %s", s);
		return;
	}
	sb_printf(b, " \"");
	for (; *s; s++)
		sb_printf(b, "%s%c", *s == '"' || *s == '\\' ? "\\" : "", *s);
	sb_printf(b, "\"");
}

static bool is_zero6(const __be32 a[4])
{
	return !a[0] && !a[1] && !a[2] && !a[3];
}

static void save_global(struct sbuf *b, const struct xlb_global_conf *g)
{
	__be32 a4[4] = { g->src4, 0, 0, 0 };
	char as[XLB_ADDR_STR_MAX];

	if (g->key_set)
		sb_printf(b, "set key %016llx%016llx\n",
			  (unsigned long long)g->key.k0,
			  (unsigned long long)g->key.k1);
	if (g->src4)
		sb_printf(b, "set src4 %s\n",
			  xlb_addr_str(XLB_FAMILY_INET, a4, as));
	if (!is_zero6(g->src6))
		sb_printf(b, "set src6 %s\n",
			  xlb_addr_str(XLB_FAMILY_INET6, g->src6, as));
	if (g->gue_port != XLB_GUE_PORT_DEFAULT)
		sb_printf(b, "set gue-port %u\n", g->gue_port);
	if (g->mtu != XLB_MTU_DEFAULT)
		sb_printf(b, "set mtu %u\n", g->mtu);
	if (g->ttl != XLB_TTL_DEFAULT)
		sb_printf(b, "set ttl %u\n", g->ttl);
	if (g->udp_idle_s != XLB_UDP_IDLE_DEFAULT)
		sb_printf(b, "set udp-idle %u\n", g->udp_idle_s);
	if (g->new_flow_rate != XLB_CT_RATE_DEFAULT)
		sb_printf(b, "set new-flow-rate %u\n", g->new_flow_rate);
	if (g->announce_table)
		sb_printf(b, "set announce table %u\n", g->announce_table);
}

static void save_links(struct sbuf *b, const struct xlb_state *s)
{
	size_t i;

	for (i = 0; i < s->n_links; i++) {
		sb_printf(b, "link attach");
		sb_token(b, s->links[i].ifname);
		sb_printf(b, "%s\n", s->links[i].mode == XLB_ATTACH_GENERIC ?
			  " generic" : "");
	}
}

static bool health_default(const struct xlb_health *h, uint8_t kind)
{
	struct xlb_health d;

	xlb_health_init(&d, kind);
	return h->kind == d.kind && h->port == d.port &&
	       h->interval_ms == d.interval_ms &&
	       h->timeout_ms == d.timeout_ms && h->rise == d.rise &&
	       h->fall == d.fall && h->http_status == d.http_status &&
	       !strcmp(h->http_path, d.http_path);
}

/* " health KIND ..." when anything differs from the defaults. */
static void save_health(struct sbuf *b, const struct xlb_health *h,
			uint8_t kind)
{
	struct xlb_health d;

	if (health_default(h, kind))
		return;
	xlb_health_init(&d, kind);
	sb_printf(b, " health %s", kw_name(kw_health, h->kind));
	if (h->port)
		sb_printf(b, " health-port %u", h->port);
	if (h->interval_ms != d.interval_ms)
		sb_printf(b, " interval %u", h->interval_ms);
	if (h->timeout_ms != d.timeout_ms)
		sb_printf(b, " timeout %u", h->timeout_ms);
	if (h->rise != d.rise)
		sb_printf(b, " rise %u", h->rise);
	if (h->fall != d.fall)
		sb_printf(b, " fall %u", h->fall);
	if (strcmp(h->http_path, d.http_path)) {
		sb_printf(b, " http-path");
		sb_token(b, h->http_path);
	}
	if (h->http_status != d.http_status)
		sb_printf(b, " http-status %u", h->http_status);
}

static void save_vip(struct sbuf *b, const struct xlb_vip_conf *v)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	__be32 a4[4] = { v->src4, 0, 0, 0 };
	struct xlb_vip_conf d;

	xlb_vip_conf_init(&d, &v->key);
	sb_printf(b, "%svip add %s", b->len ? "\n" : "",
		  xlb_vip_str(&v->key, vs));
	if (v->algo != d.algo)
		sb_printf(b, " algo %s", kw_name(kw_algo, v->algo));
	if (v->table_size != d.table_size)
		sb_printf(b, " table-size %u", v->table_size);
	if (v->vnodes != d.vnodes)
		sb_printf(b, " vnodes %u", v->vnodes);
	if (v->hash_mode != d.hash_mode)
		sb_printf(b, " hash %s", kw_name(kw_hash, v->hash_mode));
	if (v->encap != d.encap)
		sb_printf(b, " encap %s", kw_name(kw_encap, v->encap));
	if (v->stateless)
		sb_printf(b, " stateless");
	if (v->panic_pct != d.panic_pct)
		sb_printf(b, " panic %u", v->panic_pct);
	if (v->bound_pct)
		sb_printf(b, " bound %u.%02u", v->bound_pct / 100,
			  v->bound_pct % 100);
	if (v->health_consensus)
		sb_printf(b, " health-consensus on");
	if (v->quic)
		sb_printf(b, " quic on quic-cr %u quic-sid-len %u quic-nonce-len %u",
			  v->quic_cr, v->quic_sid_len, v->quic_nonce_len);
	if (v->src4)
		sb_printf(b, " src %s", xlb_addr_str(XLB_FAMILY_INET, a4, as));
	if (!is_zero6(v->src6))
		sb_printf(b, " src %s",
			  xlb_addr_str(XLB_FAMILY_INET6, v->src6, as));
	save_health(b, &v->health, XLB_HEALTH_NONE);
	sb_printf(b, "\n");
}

static void save_backend(struct sbuf *b, const struct xlb_backend_conf *be)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];

	xlb_addr_str(be->family, be->addr, as);
	sb_printf(b, "backend add %s %s", xlb_vip_str(&be->vip, vs), as);
	if (strcmp(be->name, as)) {
		sb_printf(b, " name");
		sb_token(b, be->name);
	}
	if (be->weight != 1)
		sb_printf(b, " weight %u", be->weight);
	if (be->admin != XLB_ADMIN_ACTIVE)
		sb_printf(b, " state %s", kw_name(kw_state, be->admin));
	if (be->quic_id_len) {
		size_t i;

		sb_printf(b, " quic-id ");
		for (i = 0; i < be->quic_id_len; i++)
			sb_printf(b, "%02x", be->quic_id[i]);
	}
	save_health(b, &be->health, XLB_HEALTH_INHERIT);
	sb_printf(b, "\n");
}

int xlb_config_save(const struct xlb_state *s, char **text)
{
	struct sbuf b = { malloc(4096), 0, 4096, false };
	size_t i, j = 0;
	int c;

	if (!b.p)
		return -ENOMEM;
	b.p[0] = 0;
	save_global(&b, &s->global);
	save_links(&b, s);
	for (i = 0; i < s->n_vips; i++) {
		save_vip(&b, &s->vips[i]);
		for (; j < s->n_backends; j++) {
			c = xlb_vip_key_cmp(&s->backends[j].vip,
					    &s->vips[i].key);
			if (c > 0)
				break;
			if (!c)
				save_backend(&b, &s->backends[j]);
		}
	}
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*text = b.p;
	return 0;
}
