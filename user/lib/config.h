/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The xlb command grammar, shared by xlbctl's arguments, the config file and
 * `xlbctl save` (so a saved file loads back into the same state):
 *
 *   set key HEX32 | set src4 IPV4 | set src6 IPV6 | set gue-port 1..65535
 *   set mtu 576..9216 | set ttl 1..255 | set udp-idle 1..86400
 *   set new-flow-rate 0..100000000
 *   set announce table 1..4294967295 | set announce off
 *   link attach IFNAME [native|generic] | link detach IFNAME
 *   vip add|set VIP [algo maglev|ring] [table-size M] [vnodes 1..10000]
 *       [hash 5tuple|3tuple|src] [encap ipip|gue] [stateless|stateful]
 *       [panic 0..100] [src ADDR] [health-consensus on|off]
 *       [quic on|off] [quic-cr 0..6] [quic-sid-len 1..15]
 *       [quic-nonce-len 4..18] [bound off|1..100] [HEALTH...]
 *   vip del VIP
 *   backend add|set VIP ADDR [name NAME] [weight 0..65535]
 *       [state active|drain|down] [quic-id HEX|none] [HEALTH...]
 *   backend del VIP ADDR
 *   HEALTH := health tcp|http|udp|none|inherit [health-port 0..65535]
 *       [interval 10..3600000] [timeout 1..3600000] [rise 1..100]
 *       [fall 1..100] [http-path PATH] [http-status 100..599]
 *   VIP := ADDR:PORT/PROTO | ADDR/PROTO, IPv6 in brackets, PROTO tcp|udp
 *
 * One command per line; `#` where a token would start comments out the rest
 * of the line; tokens are split on blanks and may be double-quoted (with \"
 * and \\ as the only escapes).  Beyond the basics: `stateful`
 * undoes `stateless`; `src 0.0.0.0` / `src ::` (and the same for set
 * src4/src6) clear an outer source; `health-port 0` means the service port.
 * Options may come in any order, each at most once (src once per family).
 */
#ifndef XLB_CONFIG_H
#define XLB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "state.h"

#define XLB_LINE_MAX		4096		/* bytes per line, no newline */
#define XLB_TOKENS_MAX		64		/* tokens per command */
#define XLB_FILE_MAX		(16u << 20)	/* bytes per config file */

/* Text forms: "[2001:db8::1]:443/tcp" plus NUL, an address plus NUL. */
#define XLB_VIP_STR_MAX		64
#define XLB_ADDR_STR_MAX	46

enum xlb_object {
	XLB_OBJ_GLOBAL = 0,	/* "set ..." */
	XLB_OBJ_LINK,
	XLB_OBJ_VIP,
	XLB_OBJ_BACKEND,
};

enum xlb_verb {
	XLB_VERB_SET = 0,
	XLB_VERB_ADD,
	XLB_VERB_DEL,
	XLB_VERB_ATTACH,
	XLB_VERB_DETACH,
};

/* What a command gives; bit XLB_OPT(o) of xlb_op.given. */
enum xlb_opt {
	/* set SETTING VALUE: values in xlb_op.global */
	XLB_OPT_KEY = 0,
	XLB_OPT_SRC4,
	XLB_OPT_SRC6,
	XLB_OPT_GUE_PORT,
	XLB_OPT_MTU,
	XLB_OPT_TTL,
	XLB_OPT_UDP_IDLE,
	XLB_OPT_NEW_FLOW_RATE,
	XLB_OPT_ANNOUNCE,
	/* link attach IFNAME MODE: xlb_op.link */
	XLB_OPT_MODE,
	/* vip add/set: xlb_op.vip */
	XLB_OPT_ALGO,
	XLB_OPT_TABLE_SIZE,
	XLB_OPT_VNODES,
	XLB_OPT_HASH,
	XLB_OPT_ENCAP,
	XLB_OPT_STATELESS,
	XLB_OPT_PANIC,
	XLB_OPT_VIP_SRC4,
	XLB_OPT_VIP_SRC6,
	XLB_OPT_HEALTH_CONSENSUS,
	XLB_OPT_QUIC,
	XLB_OPT_QUIC_CR,
	XLB_OPT_QUIC_SID_LEN,
	XLB_OPT_QUIC_NONCE_LEN,
	XLB_OPT_BOUND,
	/* backend add/set: xlb_op.backend */
	XLB_OPT_NAME,
	XLB_OPT_WEIGHT,
	XLB_OPT_STATE,
	XLB_OPT_QUIC_ID,
	/* health of a VIP (xlb_op.vip.health) or backend (.backend.health) */
	XLB_OPT_HEALTH,
	XLB_OPT_HEALTH_PORT,
	XLB_OPT_INTERVAL,
	XLB_OPT_TIMEOUT,
	XLB_OPT_RISE,
	XLB_OPT_FALL,
	XLB_OPT_HTTP_PATH,
	XLB_OPT_HTTP_STATUS,
	XLB_OPT_COUNT,
};

#define XLB_OPT(o)		(1ull << (o))

/*
 * One parsed command.  The object's identity is always filled (vip.key for
 * vip commands; backend.vip, .family, .addr for backend commands;
 * link.ifname for link commands); every other value only where its bit is
 * in `given`.  tok[] and obj_tok are token indices (0-based) for messages.
 */
struct xlb_op {
	uint8_t object;		/* enum xlb_object */
	uint8_t verb;		/* enum xlb_verb */
	uint64_t given;		/* XLB_OPT() bits */
	struct xlb_global_conf global;
	struct xlb_link_conf link;
	struct xlb_vip_conf vip;
	struct xlb_backend_conf backend;
	uint8_t obj_tok;	/* the VIP, backend ADDR, IFNAME or set value */
	uint8_t vip_tok;	/* the VIP (of vip and backend commands) */
	uint8_t tok[XLB_OPT_COUNT];
};

/*
 * xlbctl: argv without the program name.  Errors say "argument N: ..."
 * (N counted from 1) and name the token.
 */
int xlb_op_parse_argv(int argc, char **argv, struct xlb_op *op,
		      struct xlb_err *err);

/*
 * One line (a trailing newline is allowed).  A blank or comment-only line
 * sets *is_empty and returns 0 with op untouched.  Errors say "column C: ...".
 */
int xlb_op_parse_line(const char *line, struct xlb_op *op, int *is_empty,
		      struct xlb_err *err);

/*
 * A whole config file: every line applied in order to a fresh state
 * (xlb_state_init), then xlb_state_validate.  On success *out holds the
 * state (free with xlb_state_free).  On error *out is untouched and err says
 * "FILE:LINE:COLUMN: reason" (column 1-based, of the offending token).
 * filename is only used in messages (NULL: "<config>").
 */
int xlb_config_parse(const char *text, size_t len, const char *filename,
		     struct xlb_state *out, struct xlb_err *err);
/* Parses that read their file as two halves at once (config.c): for tests. */
extern unsigned long xlb_config_halves_joined;

/*
 * A check of a parsed command before it is applied (e.g. what may appear
 * in a cluster's shared configuration): 0, or -errno with err saying why
 * and *tok the index (0-based) of the token at fault.
 */
typedef int (*xlb_line_check_fn)(const struct xlb_op *op, int *tok,
				 void *ctx, struct xlb_err *err);

/*
 * One line of a config applied to s as xlb_config_parse applies each: a
 * blank or comment-only line sets *is_empty; on error s is unchanged
 * (xlb_state_apply), err says why without a position and *col is the
 * 1-based column of the token at fault.  The line has no newline.
 */
int xlb_config_apply_line(struct xlb_state *s, const char *line, size_t len,
			  xlb_line_check_fn check, void *ctx, int *is_empty,
			  unsigned int *col, struct xlb_err *err);

/*
 * Canonical text of s in malloc'd *text: `set` lines (key and non-default
 * settings), `link attach` lines, then per VIP (by key) its `vip add` line
 * with the non-default options and its `backend add` lines (by name).
 * Equal states give equal text.  Returns 0 or -ENOMEM.
 */
int xlb_config_save(const struct xlb_state *s, char **text);

/* A VIP as in the grammar; err says what is wrong with it. */
int xlb_vip_parse(const char *s, struct xlb_vip_key *k, struct xlb_err *err);
/* An address (IPv6 optionally in brackets); -EINVAL if it is none. */
int xlb_addr_parse(const char *s, uint8_t *family, __be32 addr[4]);

/* Canonical text forms, as in the grammar and in messages. */
const char *xlb_addr_str(uint8_t family, const __be32 addr[4],
			 char buf[XLB_ADDR_STR_MAX]);
const char *xlb_vip_str(const struct xlb_vip_key *key,
			char buf[XLB_VIP_STR_MAX]);

#endif /* XLB_CONFIG_H */
