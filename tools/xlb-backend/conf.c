// SPDX-License-Identifier: GPL-2.0
/*
 * The words xlb-backend reads: VIPs and prefixes, the saved configuration
 * (what setup was asked, applied again at boot) and the state file (what
 * setup changed, which teardown undoes).  Both files are lines of words;
 * they are written whole (temporary file, fsync, rename).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"

const char *xb_mode_name(enum xb_mode m)
{
	return m == XB_MODE_REDIRECT ? "redirect" :
	       m == XB_MODE_NONE ? "none" : "xdp";
}

const char *xb_xdp_mode_name(enum xb_xdp_mode m)
{
	return m == XB_XDP_NATIVE ? "native" :
	       m == XB_XDP_GENERIC ? "generic" : "auto";
}

int xb_parse_port(const char *s, int *port)
{
	char *end;
	long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

static void prefix_text(struct xb_prefix *p)
{
	char a[INET6_ADDRSTRLEN];
	int max = p->family == AF_INET ? 32 : 128;

	inet_ntop(p->family, p->addr, a, sizeof(a));
	if (p->len == max)
		snprintf(p->text, sizeof(p->text), "%s", a);
	else
		snprintf(p->text, sizeof(p->text), "%s/%d", a, p->len);
}

static bool host_bits_zero(const struct xb_prefix *p)
{
	int bytes = p->family == AF_INET ? 4 : 16, i;

	for (i = 0; i < bytes; i++) {
		int keep = p->len - i * 8;
		__u8 mask = keep >= 8 ? 0xff : keep <= 0 ? 0 :
			    (__u8)(0xff << (8 - keep));

		if (p->addr[i] & ~mask)
			return false;
	}
	return true;
}

bool xb_prefix_covers(const struct xb_prefix *p, int family,
		      const __u8 *addr)
{
	int i;

	if (family != p->family)
		return false;
	for (i = 0; i < p->len; i++) {
		__u8 bit = (__u8)(0x80 >> (i % 8));

		if ((p->addr[i / 8] & bit) != (addr[i / 8] & bit))
			return false;
	}
	return true;
}

void xb_prefix_probe_addr(const struct xb_prefix *p, __u8 *addr)
{
	int bytes = p->family == AF_INET ? 4 : 16;

	memcpy(addr, p->addr, 16);
	if (p->len < bytes * 8)
		addr[bytes - 1] |= 1;
}

/* Why an address cannot be a VIP, or NULL. */
static const char *vip_refused(const struct xb_prefix *p)
{
	const __u8 *a = p->addr;
	static const __u8 zero[16];

	if (p->family == AF_INET) {
		if (!memcmp(a, zero, 4))
			return "the unspecified address";
		if (a[0] == 127)
			return "a loopback address";
		if (a[0] >= 224)
			return "a multicast or reserved address";
		if (a[0] == 169 && a[1] == 254)
			return "a link-local address";
		if (p->len < 16)
			return "wider than /16: that much of the address space would become local";
		return NULL;
	}
	if (!memcmp(a, zero, 16))
		return "the unspecified address";
	if (!memcmp(a, zero, 15) && a[15] == 1)
		return "the loopback address";
	if (a[0] == 0xff)
		return "a multicast address";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "a link-local address";
	if (p->len < 48)
		return "wider than /48: that much of the address space would become local";
	return NULL;
}

/*
 * ADDR, ADDR/LEN, or (VIPs) xlbctl's forms ADDR:PORT/PROTO and
 * [ADDR6]:PORT/PROTO, whose port and protocol do not matter here.
 */
int xb_parse_prefix(const char *s, bool vip, struct xb_prefix *p,
		    char *why, size_t n)
{
	char buf[96], *addr = buf, *slash, *colon, *end;
	const char *bad;
	long len = -1;
	int port;

	memset(p, 0, sizeof(*p));
	if (strlen(s) >= sizeof(buf)) {
		snprintf(why, n, "too long");
		return -1;
	}
	strcpy(buf, s);
	slash = strrchr(buf, '/');
	if (vip && slash && (!strcmp(slash + 1, "tcp") ||
			     !strcmp(slash + 1, "udp"))) {
		/* ADDR:PORT/PROTO or [ADDR6]:PORT/PROTO */
		*slash = 0;
		colon = strrchr(buf, ':');
		if (!colon || (xb_parse_port(colon + 1, &port) &&
			       strcmp(colon + 1, "0"))) {
			snprintf(why, n, "expected ADDR:PORT/%s", slash + 1);
			return -1;
		}
		*colon = 0;
		if (buf[0] == '[') {
			if (colon == buf || colon[-1] != ']') {
				snprintf(why, n, "expected [IPv6]:PORT");
				return -1;
			}
			colon[-1] = 0;
			addr = buf + 1;
			if (!strchr(addr, ':')) {
				snprintf(why, n, "brackets hold an IPv6 address");
				return -1;
			}
		} else if (strchr(buf, ':')) {
			snprintf(why, n, "an IPv6 VIP with a port is written [ADDR]:PORT/PROTO");
			return -1;
		}
		slash = NULL;
	} else if (slash) {
		*slash = 0;
		if (!slash[1] || slash[1] == '+' || slash[1] == '-') {
			snprintf(why, n, "bad prefix length");
			return -1;
		}
		errno = 0;
		len = strtol(slash + 1, &end, 10);
		if (errno || *end) {
			snprintf(why, n, "bad prefix length '%s'", slash + 1);
			return -1;
		}
	}
	if (inet_pton(AF_INET, addr, p->addr) == 1)
		p->family = AF_INET;
	else if (inet_pton(AF_INET6, addr, p->addr) == 1)
		p->family = AF_INET6;
	else {
		snprintf(why, n, "'%s' is not an IPv4 or IPv6 address", addr);
		return -1;
	}
	p->len = p->family == AF_INET ? 32 : 128;
	if (len >= 0) {
		if (len > p->len || (len == 0)) {
			snprintf(why, n, "prefix length %ld out of range 1..%d",
				 len, p->len);
			return -1;
		}
		p->len = (int)len;
	}
	if (!host_bits_zero(p)) {
		snprintf(why, n, "address bits set beyond the prefix length");
		return -1;
	}
	if (vip) {
		bad = vip_refused(p);
		if (bad) {
			snprintf(why, n, "%s", bad);
			return -1;
		}
	}
	prefix_text(p);
	return 0;
}

/* Write text to path whole: temporary file, fsync, rename. */
static int write_whole(const char *path, const char *text)
{
	char tmp[600], dir[512], *d;
	size_t len = strlen(text);
	int fd, err;

	snprintf(dir, sizeof(dir), "%s", path);
	d = strrchr(dir, '/');
	if (d && d != dir) {
		*d = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			err = errno;
			xb_err("cannot create %s: %s", dir, strerror(err));
			return -1;
		}
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		xb_err("cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	if (write(fd, text, len) != (ssize_t)len || fsync(fd)) {
		xb_err("cannot write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path)) {
		xb_err("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

struct sbuf {
	char s[32768];
	size_t len;
};

static void sb_add(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(b->s + b->len, sizeof(b->s) - b->len, fmt, ap);
	va_end(ap);
	if (r > 0)
		b->len += (size_t)r;
	if (b->len >= sizeof(b->s))
		b->len = sizeof(b->s) - 1;
}

int xb_conf_write(const char *path, const struct xb_conf *c)
{
	static struct sbuf b;
	int i;

	b.len = 0;
	sb_add(&b, "# xlb-backend: what `xlb-backend setup` was asked;\n"
		   "# `xlb-backend start` (%s) applies it at boot.\n", XB_UNIT);
	sb_add(&b, "mode %s\n", xb_mode_name(c->mode));
	if (c->mode == XB_MODE_XDP)
		sb_add(&b, "xdp-mode %s\n", xb_xdp_mode_name(c->xdp_mode));
	sb_add(&b, "gue-port %d\n", c->gue_port);
	for (i = 0; i < c->n_devs; i++)
		sb_add(&b, "dev %s\n", c->devs[i]);
	for (i = 0; i < c->n_allow; i++)
		sb_add(&b, "allow %s\n", c->allow[i].text);
	for (i = 0; i < c->n_vips; i++)
		sb_add(&b, "vip %s\n", c->vips[i].text);
	return write_whole(path, b.s);
}

/* Split a line into at most max words; returns how many, -1: too many. */
static int words(char *line, char **w, int max)
{
	int n = 0;
	char *save, *t;

	for (t = strtok_r(line, " \t\r\n", &save); t;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

int xb_conf_read(const char *path, struct xb_conf *c)
{
	char line[XB_LINE], *w[3], why[160];
	int n, lno = 0, rc = 0;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->gue_port = 6080;
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			xb_err("cannot read %s: %s", path, strerror(errno));
		return errno == ENOENT ? 1 : -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		lno++;
		if (line[0] == '#')
			continue;
		n = words(line, w, 3);
		if (n == 0)
			continue;
		if (n != 2) {
			xb_err("%s:%d: expected KEY VALUE", path, lno);
			rc = -1;
		} else if (!strcmp(w[0], "mode")) {
			if (!strcmp(w[1], "xdp"))
				c->mode = XB_MODE_XDP;
			else if (!strcmp(w[1], "redirect"))
				c->mode = XB_MODE_REDIRECT;
			else if (!strcmp(w[1], "none"))
				c->mode = XB_MODE_NONE;
			else
				rc = -1;
		} else if (!strcmp(w[0], "xdp-mode")) {
			if (!strcmp(w[1], "auto"))
				c->xdp_mode = XB_XDP_AUTO;
			else if (!strcmp(w[1], "native"))
				c->xdp_mode = XB_XDP_NATIVE;
			else if (!strcmp(w[1], "generic"))
				c->xdp_mode = XB_XDP_GENERIC;
			else
				rc = -1;
		} else if (!strcmp(w[0], "gue-port")) {
			rc = xb_parse_port(w[1], &c->gue_port);
		} else if (!strcmp(w[0], "dev")) {
			if (c->n_devs == XB_MAX_DEVS ||
			    strlen(w[1]) >= sizeof(c->devs[0]))
				rc = -1;
			else
				strcpy(c->devs[c->n_devs++], w[1]);
		} else if (!strcmp(w[0], "allow")) {
			if (c->n_allow == XB_MAX_ALLOW ||
			    xb_parse_prefix(w[1], false, &c->allow[c->n_allow],
					    why, sizeof(why)))
				rc = -1;
			else
				c->n_allow++;
		} else if (!strcmp(w[0], "vip")) {
			if (c->n_vips == XB_MAX_VIPS ||
			    xb_parse_prefix(w[1], true, &c->vips[c->n_vips],
					    why, sizeof(why)))
				rc = -1;
			else
				c->n_vips++;
		} else {
			rc = -1;
		}
		if (rc && n == 2)
			xb_err("%s:%d: bad line '%s %s'", path, lno, w[0], w[1]);
	}
	fclose(f);
	return rc;
}

int xb_state_write(const char *path, const struct xb_state *s)
{
	static struct sbuf b;
	const struct xb_change *c;
	int i;

	b.len = 0;
	sb_add(&b, "# xlb-backend: what setup changed, in order;\n"
		   "# `xlb-backend teardown` undoes exactly this.\n");
	for (i = 0; i < s->n; i++) {
		c = &s->ch[i];
		switch (c->kind) {
		case XB_CH_SYSCTL:
			sb_add(&b, "sysctl %s %s %s\n", c->path, c->old, c->new);
			break;
		case XB_CH_ADDR:
			sb_add(&b, "addr %s\n", c->pfx.text);
			break;
		case XB_CH_ROUTE:
			sb_add(&b, "route %s\n", c->pfx.text);
			break;
		case XB_CH_XDP:
			sb_add(&b, "xdp %s %d %u %s\n", c->path, c->ifindex,
			       c->prog_id, c->generic ? "generic" : "native");
			break;
		case XB_CH_REDIRECT_ALLOW:
			sb_add(&b, "redirect-allow %s\n", c->pfx.text);
			break;
		case XB_CH_REDIRECT_ENABLE:
			sb_add(&b, "redirect-enable\n");
			break;
		}
	}
	return write_whole(path, b.s);
}

static int parse_uint(const char *s, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return (!*s || errno || *end || *v < 0 || *v > max) ? -1 : 0;
}

int xb_state_read(const char *path, struct xb_state *s)
{
	char line[XB_LINE], *w[6], why[160];
	struct xb_change *c;
	int n, lno = 0;
	long v;
	FILE *f;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			xb_err("cannot read %s: %s", path, strerror(errno));
		return errno == ENOENT ? 1 : -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lno++;
		if (line[0] == '#')
			continue;
		n = words(line, w, 6);
		if (n == 0)
			continue;
		if (n < 0 || s->n == XB_MAX_CHANGES)
			goto bad;
		c = &s->ch[s->n];
		memset(c, 0, sizeof(*c));
		if (!strcmp(w[0], "sysctl") && n == 4 &&
		    strlen(w[1]) < sizeof(c->path) &&
		    strlen(w[2]) < sizeof(c->old) &&
		    strlen(w[3]) < sizeof(c->new) &&
		    !strncmp(w[1], "/proc/sys/net/", 14) && !strstr(w[1], "..")) {
			c->kind = XB_CH_SYSCTL;
			strcpy(c->path, w[1]);
			strcpy(c->old, w[2]);
			strcpy(c->new, w[3]);
		} else if ((!strcmp(w[0], "addr") || !strcmp(w[0], "route") ||
			    !strcmp(w[0], "redirect-allow")) && n == 2) {
			c->kind = w[0][0] == 'a' ? XB_CH_ADDR :
				  w[0][0] == 'r' && w[0][1] == 'o' ?
				  XB_CH_ROUTE : XB_CH_REDIRECT_ALLOW;
			if (xb_parse_prefix(w[1], c->kind != XB_CH_REDIRECT_ALLOW,
					    &c->pfx, why, sizeof(why)))
				goto bad;
		} else if (!strcmp(w[0], "xdp") && n == 5 &&
			   strlen(w[1]) < 16) {
			c->kind = XB_CH_XDP;
			strcpy(c->path, w[1]);
			if (parse_uint(w[2], 0x7fffffff, &v))
				goto bad;
			c->ifindex = (int)v;
			if (parse_uint(w[3], 0x7fffffff, &v))
				goto bad;
			c->prog_id = (__u32)v;
			if (!strcmp(w[4], "generic"))
				c->generic = 1;
			else if (strcmp(w[4], "native"))
				goto bad;
		} else if (!strcmp(w[0], "redirect-enable") && n == 1) {
			c->kind = XB_CH_REDIRECT_ENABLE;
		} else {
			goto bad;
		}
		s->n++;
	}
	fclose(f);
	return 0;
bad:
	xb_err("%s:%d: not a line xlb-backend writes; the state file is damaged", path, lno);
	fclose(f);
	return -1;
}
