// SPDX-License-Identifier: GPL-2.0
/*
 * Help texts.  They say what user/xlbctl/xlbctl.8 says, shorter; change both
 * together.
 */
#include <string.h>

#include "xlbctl.h"

struct synopsis {
	const char *object;
	const char *verb;	/* NULL: the object takes no verb */
	const char *text;
};

static const struct synopsis synopses[] = {
	{ "set", NULL, "set SETTING VALUE" },
	{ "link", "attach", "link attach IFNAME [native|generic]" },
	{ "link", "detach", "link detach IFNAME" },
	{ "link", "show", "link show" },
	{ "vip", "add", "vip add VIP [VIP-OPTION...]" },
	{ "vip", "set", "vip set VIP [VIP-OPTION...]" },
	{ "vip", "del", "vip del VIP" },
	{ "vip", "show", "vip show [VIP]" },
	{ "backend", "add", "backend add VIP ADDR [BACKEND-OPTION...]" },
	{ "backend", "set", "backend set VIP ADDR [BACKEND-OPTION...]" },
	{ "backend", "del", "backend del VIP ADDR" },
	{ "backend", "drain", "backend drain VIP ADDR|NAME" },
	{ "backend", "undrain", "backend undrain VIP ADDR|NAME" },
	{ "backend", "activate", "backend activate VIP ADDR" },
	{ "backend", "show", "backend show VIP" },
	{ "table", "show", "table show VIP" },
	{ "explain", NULL, "explain PROTO SRC:SPORT [->] DST:DPORT [dcid HEX]" },
	{ "stats", NULL,
	  "stats [VIP] [--watch] [--interval SECONDS] [--count N]" },
	{ "top", NULL, "top [--interval SECONDS] [--count N]" },
	{ "status", NULL, "status" },
	{ "cluster", "status", "cluster status" },
	{ "host", "show", "host show" },
	{ "host", "drain", "host drain" },
	{ "host", "undrain", "host undrain" },
	{ "save", NULL, "save" },
	{ "restore", NULL, "restore FILE|-" },
	{ "reload", NULL, "reload" },
	{ "shutdown", NULL, "shutdown" },
	{ NULL, NULL, NULL },
};

#define HEALTH_OPTIONS							\
"Health options (defaults in parentheses):\n"				\
"  health KIND              tcp (connect), http (GET, check the status),\n" \
"                           udp (any answer), none (always healthy)%s\n"	\
"  health-port 0..65535     port to probe (0: the service port)\n"	\
"  interval 10..3600000     milliseconds between checks (2000)\n"	\
"  timeout 1..3600000       milliseconds a check may take, below interval\n" \
"                           (1000)\n"					\
"  rise 1..100              successes in a row to come back up (2)\n"	\
"  fall 1..100              failures in a row to be taken out (3)\n"	\
"  http-path PATH           path of an http check (/)\n"		\
"  http-status 100..599     status an http check expects (200)\n"

#define VIP_FORM							\
"VIP is ADDR:PORT/PROTO, or ADDR/PROTO for every port; PROTO is tcp or\n" \
"udp; an IPv6 address goes in brackets: 192.0.2.10:80/tcp,\n"		\
"[2001:db8::10]:443/tcp, 192.0.2.10/udp.\n"

struct details {
	const char *object;
	const char *text;
};

static const struct details details[] = {
	{ "set",
"Change a global setting.\n"
"\n"
"Settings (defaults in parentheses):\n"
"  key HEX32                the 128-bit cluster secret of the flow hash, 32\n"
"                           hex digits; the same on every LB host of a\n"
"                           cluster; needed before the first VIP\n"
"  src4 IPV4                outer source of IPv4 tunnels (0.0.0.0 clears)\n"
"  src6 IPV6                outer source of IPv6 tunnels (:: clears)\n"
"  gue-port 1..65535        UDP port of GUE tunnels (6080)\n"
"  mtu 576..9216            largest packet toward the backends, bytes (1500)\n"
"  ttl 1..255               outer TTL or hop limit (64)\n"
"  udp-idle 1..86400        seconds until an idle UDP flow's entry expires\n"
"                           (30)\n"
"  new-flow-rate 0..100000000\n"
"                           new connection entries a second per CPU; above\n"
"                           it new flows are forwarded but not remembered,\n"
"                           counted as ct_guard (20000; 0: no limit)\n"
"  announce table N|off     this host's routing table (1..4294967295, not\n"
"                           253-255) for a host route per VIP address it\n"
"                           serves, for bird2 or FRR to announce (off)\n" },
	{ "link",
"Attach the data path to an interface, or detach it.  native runs in the\n"
"driver (the default); generic is the kernel's generic XDP, slower, for any\n"
"interface.  'link show' lists the links: mode, attached, program id.\n" },
	{ "vip",
VIP_FORM
"'vip set' changes only the options it is given; 'vip del' removes the VIP\n"
"with its backends.  'vip show' lists the VIPs; with a VIP it shows that\n"
"one in detail, counters included.\n"
"\n"
"VIP options (defaults in parentheses), in any order, each at most once:\n"
"  algo maglev|ring         how the table is filled (maglev)\n"
"  table-size M             slots, one of 251, 509, 1021, 2039, 4093, 8191,\n"
"                           16381, 32749, 65537, 131071, 262139, 524287,\n"
"                           1048573 (65537); keep M >= 100 x backends\n"
"  vnodes 1..10000          ring tokens per unit of weight (100)\n"
"  hash 5tuple|3tuple|src   what a flow is hashed on (5tuple)\n"
"  encap ipip|gue           tunnel to the backends (ipip)\n"
"  stateless | stateful     without or with the connection table (stateful)\n"
"  panic 0..100             above this percentage of backends down, keep\n"
"                           every backend in the table (50; 100: never)\n"
"  src ADDR                 outer source for this VIP, either family\n"
"                           (0.0.0.0 or :: clears)\n"
"  health-consensus on|off  cluster mode: a backend is down only when most\n"
"                           hosts' checks see it down (off: this host's)\n"
"  quic on|off              UDP: QUIC short headers whose connection ID\n"
"                           carries a backend's quic-id go to it from any\n"
"                           address (off); QUIC-LB plaintext format:\n"
"  quic-cr 0..6             config rotation bits of the CIDs (0)\n"
"  quic-sid-len 1..15       server ID octets after the first (3)\n"
"  quic-nonce-len 4..18     nonce octets after it (4); sid + nonce <= 19\n"
"  bound off|C              bounded loads, stateful VIPs: a new flow whose\n"
"                           backend has over C times the mean of the VIP's\n"
"                           active connections takes the slot's secondary\n"
"                           (off); C 1..100, two decimals, e.g. 1.25\n"
"  HEALTH-OPTION...         the VIP's health check, below\n"
"\n" },
	{ "backend",
VIP_FORM
"ADDR is the backend's address, IPv4 or IPv6 (no brackets needed).\n"
"'backend set' changes only the options it is given.  drain takes the\n"
"backend out of the table for new flows while established ones stay;\n"
"undrain and activate put it back (state active).  'backend show' lists\n"
"the backends of a VIP: weight, state, health and the last check, slots\n"
"and share of the table, packets and bytes (\"shared\" when another VIP\n"
"has a backend of the same address: the data path counts per address).\n"
"\n"
"Backend options (defaults in parentheses):\n"
"  name NAME                the stable name that places the backend in the\n"
"                           table (its address); 1..63 of A-Z a-z 0-9 . _ : -\n"
"  weight 0..65535          share relative to the other backends (1); 0\n"
"                           drains\n"
"  state active|drain|down  active takes new flows; drain and down take\n"
"                           none (active)\n""  quic-id HEX|none         its server ID in the CIDs it issues, quic-sid-len\n"
"                           octets in hex, unique in the VIP (none)\n"
"  HEALTH-OPTION...         the backend's own check, below; 'health\n"
"                           inherit' (the default) uses the VIP's\n"
"\n" },
	{ "table",
VIP_FORM
"Show the VIP's published table: per backend its slots, its share of them\n"
"and its ideal share (weight over total weight); max/avg slots; the\n"
"fingerprint and generation, which are equal on LB hosts that place flows\n"
"identically; when it last changed.  Warns when M < 100 x the backends in\n"
"the table: Maglev then balances coarsely and moves more flows than needed\n"
"when a backend comes or goes.\n" },
	{ "explain",
"What the data path does with a packet of the flow: its hash, slot,\n"
"primary and secondary backend, connection table entry, and the verdict.\n"
"The flow may be one quoted word or separate words; IPv6 addresses go in\n"
"brackets.  In a shell, quote the arrow ('->') or leave it out.  For a\n"
"quic VIP, 'dcid HEX' explains a short header with that destination\n"
"connection ID:\n"
"  xlbctl explain 'tcp 198.51.100.7:40000 -> 192.0.2.10:80'\n"
"  xlbctl explain udp [2001:db8::7]:5353 [2001:db8::10]:53\n"
"  xlbctl explain udp 198.51.100.7:5000 192.0.2.10:443 dcid 07c4605e4504cc4f\n" },
	{ "stats",
"Counters of every VIP, or of one, since the data path's maps were made:\n"
"packets, bytes, new flows, connection table hits and misses, per backend\n"
"packets and bytes (\"shared\" when its address serves another VIP too);\n"
"then each backend address once, with its VIPs; events and XDP actions.\n"
"\n"
"  -w, --watch              print rates instead, one line per interval:\n"
"                           packets/s, bit/s, new flows/s, and XDP drops/s\n"
"                           when no VIP is given\n"
"  -n, --interval SECONDS   0.1..3600, default 1 (implies --watch)\n"
"  -c, --count N            stop after N lines (implies --watch; default:\n"
"                           until interrupted)\n"
"With -j: the result as JSON; with --watch one JSON object per line.\n" },
	{ "top",
"A live view of every VIP's backends: state, health, share of the table's\n"
"slots, packets/s, share of the VIP's packets, bit/s (\"shared\" when its\n"
"address serves another VIP too).  On a terminal it\n"
"redraws in place and q or Ctrl-C quits; otherwise it prints one frame\n"
"after another.\n"
"\n"
"  -n, --interval SECONDS   0.1..3600, default 1\n"
"  -c, --count N            stop after N frames (default: until quit)\n"
"With -j: one JSON object per frame, one per line.\n" },
	{ "status",
"xlbd's version, pid, instance and uptime, its generation (accepted\n"
"changes), config, state and pin paths, whether it adopted pinned state at\n"
"start, and the links.\n" },
	{ "cluster",
"In cluster mode (xlbd --etcd, --cluster): every host of the cluster as\n"
"this one sees it in etcd: the revision of the configuration it runs and\n"
"since when, whether its tables agree with the others' (same fingerprints\n"
"at the same revision), the backends its checks see down, and which host\n"
"is behind or silent (its lease ran out).  Also this host's view of etcd\n"
"and any configuration it refuses.\n" },
	{ "host",
"This host's VIP announcements (set announce table N): xlbd keeps a host\n"
"route per VIP address it can serve in routing table N, for a routing\n"
"daemon (bird2, FRR) to announce.  show lists every VIP address, announced\n"
"or why not; drain withdraws them all and keeps forwarding, so routers\n"
"move new flows away before maintenance (held connections finish); undrain\n"
"announces them again.  A drain is kept across restarts of xlbd.\n" },
	{ "save",
"Print the desired configuration as config text (xlb.conf(5)), canonical:\n"
"equal states give equal text.  'xlbctl save > FILE' and 'xlbctl restore\n"
"FILE' round-trip.\n" },
	{ "restore",
"Replace the whole configuration by FILE ('-': standard input) as one\n"
"transaction.  The file is checked here first, then by xlbd; an error\n"
"names FILE:LINE:COLUMN and nothing changes.\n" },
	{ "reload",
"Apply xlbd's config file again, as SIGHUP does, as one transaction.\n" },
	{ "shutdown",
"Detach the data path from every link, remove the pinned programs and\n"
"maps, and stop xlbd: forwarding stops.  Stopping xlbd any other way\n"
"leaves forwarding running.\n" },
	{ NULL, NULL },
};

static const char global_help[] =
"Options, before the command:\n"
"  -s, --socket PATH        xlbd's socket (default $XLB_SOCKET, else\n"
"                           " XLB_RUN_DIR "/xlbd.sock)\n"
"  -i, --instance NAME      the socket of instance NAME, " XLB_RUN_DIR "/NAME.sock\n"
"                           (" XLB_RUN_DIR "/xlbd.sock for default)\n"
"  -j, --json               print results as JSON\n"
"  -h, --help               this help; 'xlbctl COMMAND --help' for one command\n"
"  -V, --version            print the version\n"
"\n"
"Exit status: 0 done, 1 xlbd refused the request or could not be reached,\n"
"2 usage error (nothing was sent), 3 the cluster's configuration changed\n"
"meanwhile (nothing was written: run the command again).  See xlbctl(8),\n"
"xlb.conf(5), xlbd(8).\n";

bool usage_known(const char *object, const char *verb)
{
	const struct synopsis *s;

	for (s = synopses; s->object; s++)
		if (!strcmp(s->object, object) &&
		    (!verb || (s->verb && !strcmp(s->verb, verb))))
			return true;
	return false;
}

const char *usage_verbs(const char *object, char *buf, size_t len)
{
	const struct synopsis *s;
	size_t off = 0, n = 0, i = 0;

	for (s = synopses; s->object; s++)
		if (!strcmp(s->object, object) && s->verb)
			n++;
	buf[0] = 0;
	for (s = synopses; s->object && off < len; s++)
		if (!strcmp(s->object, object) && s->verb) {
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						!i ? "" : i + 1 == n ? " or " :
						", ", s->verb);
			i++;
		}
	return buf;
}

static const char *details_of(const char *object)
{
	const struct details *d;

	for (d = details; d->object; d++)
		if (!strcmp(d->object, object))
			return d->text;
	return "";
}

void usage_print(FILE *f, const char *object, const char *verb)
{
	const struct synopsis *s;
	bool first = true;

	if (!object) {
		fputs("Usage: " PROG " [OPTIONS] COMMAND [ARGUMENTS...]\n\n"
		      "Control xlbd, the xlb load balancer daemon, over its Unix socket.\n\n"
		      "Commands:\n", f);
		for (s = synopses; s->object; s++)
			fprintf(f, "  %s\n", s->text);
		fputc('\n', f);
		fputs(global_help, f);
		return;
	}
	for (s = synopses; s->object; s++) {
		if (strcmp(s->object, object))
			continue;
		if (verb && (!s->verb || strcmp(s->verb, verb)))
			continue;
		fprintf(f, "%s " PROG " %s\n", first ? "Usage:" : "      ",
			s->text);
		first = false;
	}
	fputc('\n', f);
	fputs(details_of(object), f);
	if (!strcmp(object, "vip") || !strcmp(object, "backend"))
		fprintf(f, HEALTH_OPTIONS,
			strcmp(object, "backend") ? "" :
			",\n                           inherit (the VIP's)");
}
