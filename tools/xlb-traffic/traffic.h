/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xlb-traffic: what its files share (main.c says which file holds what).
 */
#ifndef XLB_TRAFFIC_H
#define XLB_TRAFFIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/socket.h>

#include "rand.h"

/* The wire format: the top of main.c. */
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
#define MAX_EVENTS	256

/* --- main.c --------------------------------------------------------------- */

extern const char *prog;
extern volatile sig_atomic_t stop_sig;
/* "xlb-traffic: MESSAGE" on stderr, exit status 2. */
void die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void write_ready(const char *path);
/* The usage text of every subcommand. */
void usage(FILE *f);
/*
 * The end of every subcommand's option loop, for option c that no case
 * took: -h prints the usage and exits 0, anything else prints it on
 * stderr and exits 2.
 */
void usage_exit(int c) __attribute__((noreturn));
/* After a subcommand's options, when it takes no operand: none is left. */
void no_operands(int argc, char **argv);

/* --- wire.c --------------------------------------------------------------- */

void put32(uint8_t *p, uint32_t v);
uint32_t get32(const uint8_t *p);
/* n bytes of the payload pattern of stream `seed`, from offset off. */
void pattern(uint64_t seed, uint64_t off, uint8_t *buf, size_t n);
bool id_char_ok(char c);
bool id_ok(const char *id, size_t n);

/* --- net.c ---------------------------------------------------------------- */

bool parse_ip(const char *s, struct sockaddr_storage *ss,
	      socklen_t *len, uint16_t port);
/* "A.B.C.D:PORT" or "[V6]:PORT" */
void parse_hostport(const char *s, struct sockaddr_storage *ss,
		    socklen_t *len);
const char *sa_str(const struct sockaddr_storage *ss, char *buf,
		   size_t n);
int epoll_set(int ep, int op, int fd, uint32_t events, void *ptr);

/* --- stats.c -------------------------------------------------------------- */

struct spread {
	double expect[MAX_IDS];	/* share, 0..1 */
	double chi2, p;
	int df;
	bool given;		/* --expect, else equal over observed ids */
};

/* Pearson's chi-square of counts against the expected shares. */
void spread_test(struct spread *sp, const uint64_t *count);

/* --- options.c ------------------------------------------------------------ */

uint64_t parse_num(const char *s, const char *what, uint64_t min,
		   uint64_t max);
double parse_real(const char *s, const char *what, double min,
		  double max);
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

/* Long options of the clients and of serve (getopt_long values). */
enum {
	OPT_TO = 256, OPT_CONC, OPT_BYTES, OPT_TIMEOUT, OPT_MAX, OPT_DURATION,
	OPT_INTERVAL, OPT_REPORT, OPT_CONTROL, OPT_READY, OPT_RETRIES,
	OPT_EXPECT, OPT_ALPHA, OPT_SEED, OPT_TCP, OPT_UDP, OPT_ID, OPT_BIND,
};

/* mode: 'c' conns, 'h' hold, 'u' udp */
void parse_client(int argc, char **argv, int mode, struct copts *o);

/* --- report.c ------------------------------------------------------------- */

extern char ids[MAX_IDS][ID_LEN + 1];
extern int nids;
/* The index of id (ID_LEN bytes, NUL-padded), added if new; -1 if full. */
int id_index(const char *id);
void json_num(const char *key, double v, bool comma);
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

extern const char *const reason_name[R_COUNT];
enum reason errno_reason(int e);
void print_reasons_text(const uint64_t *r);
void print_reasons_json(const char *key, const uint64_t *r);
/* The report of conns and udp; returns the exit status. */
int report_counts(const char *mode, struct copts *o,
		  const uint64_t *count, const uint64_t *reasons,
		  uint64_t done, uint64_t failed, double secs);

/* --- tcp.c ---------------------------------------------------------------- */

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

extern int failure_lines;
void cconn_note(const struct copts *o, const struct cconn *c);
void cconn_close(struct cconn *c, int ep);
/* Mark broken; returns -1 for the callers' convenience. */
int cconn_fail(struct cconn *c, enum reason why, int err);
/* Start a nonblocking connect; -1 if it failed at once (c broken). */
int cconn_open(struct cconn *c, const struct copts *o, int ep,
	       uint64_t idx);
void cconn_request(struct cconn *c, const struct copts *o, int ep);
/* Handle an event; 1: a reply completed, 0: nothing yet, -1: broken. */
int cconn_event(struct cconn *c, const struct copts *o, int ep,
		uint32_t ev);

/* --- the subcommands ------------------------------------------------------ */

int cmd_conns(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_udp(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_ping(int argc, char **argv);

#endif /* XLB_TRAFFIC_H */
