/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xlb-backend: prepares a backend host for xlb's VIPs (decapsulation, the
 * VIPs on lo, the ARP and reverse-path settings direct server return
 * needs), checks it, and undoes exactly what it did.  man
 * tools/xlb-backend/xlb-backend.8.
 */
#ifndef XLB_BACKEND_H
#define XLB_BACKEND_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define XB_MAX_VIPS	64
#define XB_MAX_DEVS	8
#define XB_MAX_ALLOW	64
#define XB_MAX_CHANGES	(XB_MAX_VIPS * 2 + XB_MAX_DEVS * 8 + XB_MAX_ALLOW + 16)
#define XB_LINE		512

#define XB_CONF_DEFAULT		"/etc/xlb/backend.conf"
#define XB_STATE_DEFAULT	"/run/xlb/backend.state"
#define XB_UNIT			"xlb-backend.service"
#define XB_REDIRECT_PROC	"/proc/net/xlb_redirect"

enum xb_mode {
	XB_MODE_XDP,		/* bpf/xlb_decap.bpf.c on every --dev */
	XB_MODE_REDIRECT,	/* the xlb_redirect module (kmod/) */
	XB_MODE_NONE,		/* the host's own tunnel devices */
};

enum xb_xdp_mode {
	XB_XDP_AUTO,		/* native, else generic */
	XB_XDP_NATIVE,
	XB_XDP_GENERIC,
};

/* An address or prefix: a VIP, or an allowlist entry. */
struct xb_prefix {
	int family;		/* AF_INET or AF_INET6 */
	__u8 addr[16];		/* network order */
	int len;		/* prefix length */
	char text[64];		/* canonical: ADDR or ADDR/LEN */
};

/* What the operator asked for (command line, or the saved configuration). */
struct xb_conf {
	enum xb_mode mode;
	enum xb_xdp_mode xdp_mode;
	char devs[XB_MAX_DEVS][16];
	int n_devs;
	struct xb_prefix vips[XB_MAX_VIPS];
	int n_vips;
	struct xb_prefix allow[XB_MAX_ALLOW];
	int n_allow;
	int gue_port;
};

/* One change setup made, as the state file records it. */
enum xb_change_kind {
	XB_CH_SYSCTL,		/* path old new */
	XB_CH_ADDR,		/* VIP address added on lo */
	XB_CH_ROUTE,		/* local route for a VIP prefix */
	XB_CH_XDP,		/* xlb_decap attached: dev ifindex prog-id mode */
	XB_CH_REDIRECT_ALLOW,	/* prefix added to the module's allowlist */
	XB_CH_REDIRECT_ENABLE,	/* the module switched on in this namespace */
};

struct xb_change {
	enum xb_change_kind kind;
	char path[128];		/* sysctl path; XDP: the device */
	char old[32];		/* sysctl: the value before */
	char new[32];		/* sysctl: the value set */
	struct xb_prefix pfx;	/* ADDR, ROUTE, REDIRECT_ALLOW */
	int ifindex;		/* XDP */
	__u32 prog_id;		/* XDP */
	int generic;		/* XDP: attached in generic (skb) mode */
};

struct xb_state {
	struct xb_change ch[XB_MAX_CHANGES];
	int n;
};

/* main.c: a diagnostic on stderr, "xlb-backend: ..." */
void xb_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* conf.c */
int xb_parse_prefix(const char *s, bool vip, struct xb_prefix *p,
		    char *why, size_t n);
int xb_parse_port(const char *s, int *port);
int xb_conf_read(const char *path, struct xb_conf *c);
int xb_conf_write(const char *path, const struct xb_conf *c);
int xb_state_read(const char *path, struct xb_state *s);
int xb_state_write(const char *path, const struct xb_state *s);
const char *xb_mode_name(enum xb_mode m);
const char *xb_xdp_mode_name(enum xb_xdp_mode m);
bool xb_prefix_covers(const struct xb_prefix *p, int family,
		      const __u8 *addr);
/* An address inside p to test with: p itself, or its first host. */
void xb_prefix_probe_addr(const struct xb_prefix *p, __u8 *addr);

/* net.c: rtnetlink, sysctls, interfaces, in this network namespace */
int xb_nl_open(void);
void xb_nl_close(void);
int xb_addr(bool add, const struct xb_prefix *p, int ifindex);
int xb_local_route(bool add, const struct xb_prefix *p, int ifindex);
/* 1: the address is local (a local route answers for it), 0: not, -1 */
int xb_is_local(int family, const __u8 *addr);
/* The first device other than lo that holds addr (to warn of ARP) */
int xb_addr_on_dev(int family, const __u8 *addr, char *dev, size_t n);
/* The first global address of family on dev, with its prefix length */
int xb_dev_addr(const char *dev, int family, __u8 *addr, int *len);
int xb_sysctl_read(const char *path, char *val, size_t n);
int xb_sysctl_write(const char *path, const char *val);
int xb_sysctl_int(const char *path, int *v);

/* setup.c */
int xb_setup(const struct xb_conf *c, const char *conf_path,
	     const char *state_path, bool save_conf);
int xb_teardown(const char *conf_path, const char *state_path, bool forget);
int xb_undo(struct xb_state *s, bool quiet);
int xb_validate(const struct xb_conf *c);

/* check.c */
int xb_check(const struct xb_conf *c, const char *conf_path,
	     const char *state_path, bool probe, bool default_conf,
	     bool from_conf);

#endif /* XLB_BACKEND_H */
