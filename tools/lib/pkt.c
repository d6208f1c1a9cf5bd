// SPDX-License-Identifier: GPL-2.0
/*
 * Test packets: builders and the oracle (pkt.h says what and from which
 * specifications).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pkt.h"

/* --- bytes and checksums ------------------------------------------------- */

/* RFC 1071: add bytes as big-endian 16-bit words (odd tail padded). */
__u64 pkt_sum(const void *data, size_t len, __u64 sum)
{
	const __u8 *b = data;

	for (; len > 1; b += 2, len -= 2)
		sum += pkt_get16(b);
	if (len)
		sum += (__u16)(b[0] << 8);
	return sum;
}

/* The checksum field for a sum: one's complement of the folded sum. */
__u16 pkt_csum(__u64 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* Sum of the TCP/UDP/ICMPv6 pseudo-header (RFC 768, RFC 8200 8.1). */
__u64 pkt_pseudo_sum(int family, const __be32 *src,
		     const __be32 *dst, __u8 proto, __u32 len)
{
	__u8 b[40] = { 0 };

	if (family == XLB_FAMILY_INET) {
		memcpy(b, src, 4);
		memcpy(b + 4, dst, 4);
		b[9] = proto;
		pkt_put16(b + 10, (__u16)len);
		return pkt_sum(b, 12, 0);
	}
	memcpy(b, src, 16);
	memcpy(b + 16, dst, 16);
	pkt_put32(b + 32, len);
	b[39] = proto;
	return pkt_sum(b, 40, 0);
}

/* Recompute the header checksum of the IPv4 header at ip. */
void pkt_ip4_set_csum(void *ip)
{
	__u8 *b = ip;
	size_t hl = (b[0] & 0xf) * 4;

	b[10] = b[11] = 0;
	pkt_put16(b + 10, pkt_csum(pkt_sum(b, hl, 0)));
}

/* inet_pton into the xlb layout (IPv4 in addr[0]); 0 or -1. */
int pkt_addr(int family, const char *str, __be32 addr[4])
{
	memset(addr, 0, 16);
	return inet_pton(family == XLB_FAMILY_INET ? AF_INET : AF_INET6, str,
			 addr) == 1 ? 0 : -1;
}

size_t pkt_addr_len(int family)
{
	return family == XLB_FAMILY_INET ? 4 : 16;
}

/* --- builder ------------------------------------------------------------- */

/*
 * Defaults: MACs 02:00:00:00:00:01 -> 02:00:00:00:00:02, no tag;
 * 192.0.2.1 -> 198.51.100.1 or 2001:db8::1 -> 2001:db8:1::1, TTL 64;
 * TCP 40000 -> 80 SYN seq 1 window 65535; UDP 40000 -> 53; ICMP echo
 * request / ICMPv6 echo request with id 1 seq 1; no payload.
 */
void pkt_spec_init(struct pkt_spec *s, int family, int proto)
{
	static const __u8 src_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	static const __u8 dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

	memset(s, 0, sizeof(*s));
	memcpy(s->src_mac, src_mac, 6);
	memcpy(s->dst_mac, dst_mac, 6);
	s->family = family;
	s->proto = proto;
	s->ttl = 64;
	if (family == XLB_FAMILY_INET) {
		pkt_addr(family, "192.0.2.1", s->src);
		pkt_addr(family, "198.51.100.1", s->dst);
	} else if (family == XLB_FAMILY_INET6) {
		pkt_addr(family, "2001:db8::1", s->src);
		pkt_addr(family, "2001:db8:1::1", s->dst);
	}
	s->sport = 40000;
	s->dport = proto == IPPROTO_UDP ? 53 : 80;
	s->tcp_flags = PKT_TCP_SYN;
	s->seq = 1;
	s->window = 65535;
	s->icmp_type = proto == IPPROTO_ICMPV6 ? 128 : 8;
	s->icmp_rest = 1 << 16 | 1;
}

size_t pkt_l2_len(const struct pkt_spec *s)
{
	return PKT_ETH_LEN + (size_t)s->vlans * PKT_VLAN_LEN;
}

static size_t pkt_ext6_len(const struct pkt_ext6 *x)
{
	return x->type == IPPROTO_FRAGMENT ? 8 : 8 * (1 + (size_t)x->len8);
}


static long pkt_put_payload(const struct pkt_spec *s, __u8 *p,
			    size_t cap)
{
	if (cap < s->payload_len)
		return -1;
	if (s->payload_len)
		memcpy(p, s->payload, s->payload_len);
	return (long)s->payload_len;
}

/* Transport header and payload, checksum left 0; bytes or -1. */
static long pkt_build_l4(const struct pkt_spec *s, __u8 *p, size_t cap)
{
	size_t h, q = 0;
	long n;

	switch (s->proto) {
	case IPPROTO_TCP:
		h = PKT_TCP_LEN;
		if (cap < h)
			return -1;
		memset(p, 0, h);
		pkt_put16(p, s->sport);
		pkt_put16(p + 2, s->dport);
		pkt_put32(p + 4, s->seq);
		pkt_put32(p + 8, s->ack);
		p[12] = 5 << 4;
		p[13] = s->tcp_flags;
		pkt_put16(p + 14, s->window);
		break;
	case IPPROTO_UDP:
		h = PKT_UDP_LEN;
		if (cap < h)
			return -1;
		memset(p, 0, h);
		pkt_put16(p, s->sport);
		pkt_put16(p + 2, s->dport);
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		h = PKT_ICMP_LEN;
		if (cap < h)
			return -1;
		p[0] = s->icmp_type;
		p[1] = s->icmp_code;
		p[2] = p[3] = 0;
		pkt_put32(p + 4, s->icmp_rest);
		if (s->quote) {
			q = pkt_build_ip(s->quote, p + h, cap - h);
			if (!q)
				return -1;
			if (s->quote_len && s->quote_len < q)
				q = s->quote_len;
		}
		break;
	default:
		h = 0;
	}
	n = pkt_put_payload(s, p + h + q, cap - h - q);
	if (n < 0)
		return -1;
	n += (long)(h + q);
	if (s->proto == IPPROTO_UDP) {
		if (n > 0xffff)
			return -1;
		pkt_put16(p + 4, (__u16)n);
	}
	return n;
}

static void pkt_l4_set_csum(const struct pkt_spec *s, __u8 *p,
			    size_t len)
{
	__u64 ph = pkt_pseudo_sum(s->family, s->src, s->dst, (__u8)s->proto,
				  (__u32)len);
	__u16 c;

	switch (s->proto) {
	case IPPROTO_TCP:
		pkt_put16(p + 16, pkt_csum(pkt_sum(p, len, ph)));
		break;
	case IPPROTO_UDP:
		if (s->udp_no_csum)
			break;
		c = pkt_csum(pkt_sum(p, len, ph));
		pkt_put16(p + 6, c ? c : 0xffff);	/* 0 means "none" */
		break;
	case IPPROTO_ICMP:
		pkt_put16(p + 2, pkt_csum(pkt_sum(p, len, 0)));
		break;
	case IPPROTO_ICMPV6:
		pkt_put16(p + 2, pkt_csum(pkt_sum(p, len, ph)));
		break;
	}
}

static void pkt_put_ext6(const struct pkt_ext6 *x, __u8 next, __u8 *p)
{
	size_t len = pkt_ext6_len(x), n, chunk;
	__u8 *o;

	memset(p, 0, len);
	p[0] = next;
	switch (x->type) {
	case IPPROTO_FRAGMENT:
		pkt_put16(p + 2, (__u16)(x->frag_off << 3 | x->more));
		pkt_put32(p + 4, x->frag_id);
		break;
	case IPPROTO_ROUTING:
		p[1] = x->len8;
		p[2] = PKT_RH_TYPE;
		break;
	default:	/* options: PadN to the end (RFC 8200 4.2) */
		p[1] = x->len8;
		for (o = p + 2, n = len - 2; n; o += chunk, n -= chunk) {
			chunk = n > 257 ? 257 : n;
			if (n - chunk == 1)
				chunk--;	/* leave room for the last PadN */
			o[0] = 1;
			o[1] = (__u8)(chunk - 2);
		}
	}
}

/* The packet from the IP header on (no Ethernet). */
size_t pkt_build_ip(const struct pkt_spec *s, void *buf,
		    size_t cap)
{
	__u8 *b = buf, *x;
	bool later = false;
	size_t hl, tot;
	long l4;
	int i;

	if (s->family == XLB_FAMILY_INET) {
		if (s->ip_opts_len < 0 || s->ip_opts_len > PKT_IP4_OPT_MAX ||
		    s->ip_opts_len % 4)
			return 0;
		hl = PKT_IP4_LEN + (size_t)s->ip_opts_len;
		later = s->frag_off != 0;
	} else if (s->family == XLB_FAMILY_INET6) {
		if (s->n_ext < 0 || s->n_ext > PKT_MAX_EXT)
			return 0;
		hl = PKT_IP6_LEN;
		for (i = 0; i < s->n_ext; i++) {
			switch (s->ext[i].type) {
			case IPPROTO_FRAGMENT:
				later |= s->ext[i].frag_off != 0;
				/* fallthrough */
			case IPPROTO_HOPOPTS:
			case IPPROTO_ROUTING:
			case IPPROTO_DSTOPTS:
				hl += pkt_ext6_len(&s->ext[i]);
				break;
			default:
				return 0;
			}
		}
	} else {
		return 0;
	}
	if (cap < hl)
		return 0;
	l4 = later ? pkt_put_payload(s, b + hl, cap - hl) :
		     pkt_build_l4(s, b + hl, cap - hl);
	if (l4 < 0)
		return 0;
	tot = hl + (size_t)l4;

	if (s->family == XLB_FAMILY_INET) {
		if (tot > 0xffff)
			return 0;
		b[0] = (__u8)(0x40 | hl / 4);
		b[1] = s->tos;
		pkt_put16(b + 2, (__u16)tot);
		pkt_put16(b + 4, s->ip_id);
		pkt_put16(b + 6, (s->df ? PKT_IP4_DF : 0) |
				 (s->mf ? PKT_IP4_MF : 0) |
				 (s->frag_off & PKT_IP4_OFFSET));
		b[8] = s->ttl;
		b[9] = (__u8)s->proto;
		memcpy(b + 12, s->src, 4);
		memcpy(b + 16, s->dst, 4);
		memcpy(b + 20, s->ip_opts, (size_t)s->ip_opts_len);
		pkt_ip4_set_csum(b);
	} else {
		if (tot - PKT_IP6_LEN > 0xffff)
			return 0;
		pkt_put32(b, 6u << 28 | (__u32)s->tos << 20 |
			     (s->flow_label & 0xfffff));
		pkt_put16(b + 4, (__u16)(tot - PKT_IP6_LEN));
		b[6] = (__u8)(s->n_ext ? s->ext[0].type : s->proto);
		b[7] = s->ttl;
		memcpy(b + 8, s->src, 16);
		memcpy(b + 24, s->dst, 16);
		for (i = 0, x = b + PKT_IP6_LEN; i < s->n_ext; i++) {
			pkt_put_ext6(&s->ext[i], (__u8)(i + 1 < s->n_ext ?
					s->ext[i + 1].type : s->proto), x);
			x += pkt_ext6_len(&s->ext[i]);
		}
	}
	if (!later)
		pkt_l4_set_csum(s, b + hl, (size_t)l4);
	return tot;
}

/* A whole frame: Ethernet, tags, then pkt_build_ip() (or raw payload). */
size_t pkt_build(const struct pkt_spec *s, void *buf, size_t cap)
{
	size_t l2 = pkt_l2_len(s), n;
	__u16 type = s->ethertype;
	__u8 *b = buf;
	int i;

	if (s->vlans < 0 || s->vlans > PKT_MAX_VLANS || cap < l2)
		return 0;
	if (!type)
		type = s->family == XLB_FAMILY_INET ? PKT_ETH_IP :
		       s->family == XLB_FAMILY_INET6 ? PKT_ETH_IPV6 : 0;
	memcpy(b, s->dst_mac, 6);
	memcpy(b + 6, s->src_mac, 6);
	for (i = 0; i < s->vlans; i++) {
		pkt_put16(b + 12 + 4 * i, s->vlan[i].tpid);
		pkt_put16(b + 14 + 4 * i, s->vlan[i].tci);
	}
	pkt_put16(b + l2 - 2, type);
	if (!s->family) {
		if (pkt_put_payload(s, b + l2, cap - l2) < 0)
			return 0;
		return l2 + s->payload_len;
	}
	n = pkt_build_ip(s, b + l2, cap - l2);
	return n ? l2 + n : 0;
}

/*
 * Defaults: outer 203.0.113.1 -> 192.0.2.10 (IPv4) or 2001:db8:ff::1 ->
 * 2001:db8:10::10 (IPv6), TTL 64, DF; GUE 50000 -> XLB_GUE_PORT_DEFAULT,
 * hop list [dst, 192.0.2.11 / 2001:db8:10::11], index 0.
 */
void pkt_encap_init(struct pkt_encap *e, int encap, int family)
{
	bool v4 = family == XLB_FAMILY_INET;

	memset(e, 0, sizeof(*e));
	e->encap = encap;
	e->family = family;
	pkt_addr(family, v4 ? "203.0.113.1" : "2001:db8:ff::1", e->src);
	pkt_addr(family, v4 ? "192.0.2.10" : "2001:db8:10::10", e->dst);
	e->ttl = 64;
	e->df = true;
	e->sport = 50000;
	e->dport = XLB_GUE_PORT_DEFAULT;
	e->hop_count = XLB_HOPS;
	memcpy(e->hops[0], e->dst, 16);
	pkt_addr(family, v4 ? "192.0.2.11" : "2001:db8:10::11", e->hops[1]);
}

/* GUE header, hop list (structs.h); bytes or 0. */
static size_t pkt_put_gue(const struct pkt_encap *e, int inner_family,
			  __u8 *p, size_t cap)
{
	size_t alen = pkt_addr_len(e->family), len;
	int i;

	if (e->hop_count < 0 || e->hop_count > XLB_HOPS)
		return 0;
	/* room for XLB_HOPS addresses always; count says how many are valid */
	len = PKT_GUE_LEN + 4 + (size_t)XLB_HOPS * alen;
	if (cap < len)
		return 0;
	memset(p, 0, len);
	p[0] = (__u8)((len - PKT_GUE_LEN) / 4);	/* version 0, C 0, hlen */
	p[1] = inner_family == XLB_FAMILY_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
	pkt_put16(p + 2, XLB_GUE_FLAGS);
	p[4] = XLB_GUE_HOPS_MAGIC;
	p[5] = (__u8)e->hop_count;
	p[6] = (__u8)e->hop_index;
	p[7] = (__u8)e->family;
	for (i = 0; i < e->hop_count; i++)
		memcpy(p + 8 + i * alen, e->hops[i], alen);
	return len;
}

/*
 * The frame of `inner` (its Ethernet header and tags) with its IP packet
 * inside the tunnel e: what the LB sends for it.  The outer ethertype
 * follows e->family, the IPv4 outer ID is 0.
 */
size_t pkt_build_encap(const struct pkt_encap *e,
		       const struct pkt_spec *inner, void *buf,
		       size_t cap)
{
	struct pkt_spec o;
	size_t g = 0, n;
	__u8 *tmp;

	tmp = malloc(cap + 1);
	if (!tmp)
		return 0;
	if (e->encap == XLB_ENCAP_GUE) {
		g = pkt_put_gue(e, inner->family, tmp, cap);
		if (!g)
			goto fail;
	}
	n = pkt_build_ip(inner, tmp + g, cap - g);
	if (!n)
		goto fail;
	pkt_spec_init(&o, e->family, e->encap == XLB_ENCAP_GUE ? IPPROTO_UDP :
		      inner->family == XLB_FAMILY_INET ? IPPROTO_IPIP :
		      IPPROTO_IPV6);
	memcpy(o.dst_mac, inner->dst_mac, 6);
	memcpy(o.src_mac, inner->src_mac, 6);
	memcpy(o.vlan, inner->vlan, sizeof(o.vlan));
	o.vlans = inner->vlans;
	memcpy(o.src, e->src, 16);
	memcpy(o.dst, e->dst, 16);
	o.ttl = e->ttl;
	o.tos = e->tos;
	o.df = e->df;
	o.sport = e->sport;
	o.dport = e->dport;
	o.udp_no_csum = e->udp_no_csum;
	o.payload = tmp;
	o.payload_len = g + n;
	n = pkt_build(&o, buf, cap);
	free(tmp);
	return n;
fail:
	free(tmp);
	return 0;
}

/* --- parsers ------------------------------------------------------------- */

static int __attribute__((format(printf, 2, 3)))
pkt_fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, PKT_ERR_MAX, fmt, ap);
	va_end(ap);
	return -1;
}

/* Does err name field ("ip4.csum" matches "ip4.csum: ...")? */
bool pkt_err_is(const char *err, const char *field)
{
	size_t n = strlen(field);

	return !strncmp(err, field, n) && err[n] == ':';
}

int pkt_parse_l2(const __u8 *f, size_t len, struct pkt_l2 *l2,
		 char *err)
{
	size_t off = 12;
	__u16 type;

	memset(l2, 0, sizeof(*l2));
	if (len < PKT_ETH_LEN)
		return pkt_fail(err, "frame: %zu bytes, shorter than Ethernet",
				len);
	memcpy(l2->dst_mac, f, 6);
	memcpy(l2->src_mac, f + 6, 6);
	type = pkt_get16(f + off);
	while (type == PKT_ETH_8021Q || type == PKT_ETH_8021AD) {
		if (l2->vlans == PKT_MAX_VLANS)
			return pkt_fail(err, "vlan: more than %d tags",
					PKT_MAX_VLANS);
		if (len < off + 2 + PKT_VLAN_LEN)
			return pkt_fail(err, "frame: ends inside a VLAN tag");
		l2->vlan[l2->vlans].tpid = type;
		l2->vlan[l2->vlans].tci = pkt_get16(f + off + 2);
		l2->vlans++;
		off += PKT_VLAN_LEN;
		type = pkt_get16(f + off);
	}
	l2->ethertype = type;
	l2->l3_off = off + 2;
	return 0;
}

static int pkt_parse_ip4(const __u8 *f, size_t len, struct pkt_info *pi)
{
	const __u8 *ip = f + pi->l3_off;
	size_t avail = len - pi->l3_off, hl, tot;
	__u16 fo;

	if (avail < PKT_IP4_LEN)
		return pkt_fail(pi->err, "frame: ends inside the IPv4 header");
	if (ip[0] >> 4 != 4)
		return pkt_fail(pi->err, "ip4.version: %u", ip[0] >> 4);
	hl = (ip[0] & 0xf) * 4u;
	if (hl < PKT_IP4_LEN || hl > avail)
		return pkt_fail(pi->err, "ip4.ihl: %zu bytes, %zu available",
				hl, avail);
	if (pkt_csum(pkt_sum(ip, hl, 0)))
		return pkt_fail(pi->err, "ip4.csum: 0x%04x does not verify",
				pkt_get16(ip + 10));
	tot = pkt_get16(ip + 2);
	if (tot != avail || tot < hl)
		return pkt_fail(pi->err, "ip4.tot_len: %zu, frame carries %zu",
				tot, avail);
	fo = pkt_get16(ip + 6);
	pi->family = XLB_FAMILY_INET;
	pi->tos = ip[1];
	pi->ip_id = pkt_get16(ip + 4);
	pi->df = fo & PKT_IP4_DF;
	pi->mf = fo & PKT_IP4_MF;
	pi->frag_off = fo & PKT_IP4_OFFSET;
	pi->frag = pi->mf || pi->frag_off;
	pi->ttl = ip[8];
	pi->proto = ip[9];
	memcpy(pi->src, ip + 12, 4);
	memcpy(pi->dst, ip + 16, 4);
	pi->l4_off = pi->l3_off + hl;
	pi->l4_len = tot - hl;
	return 0;
}

static int pkt_parse_ip6(const __u8 *f, size_t len, struct pkt_info *pi)
{
	const __u8 *ip = f + pi->l3_off, *x;
	size_t avail = len - pi->l3_off, off = PKT_IP6_LEN, xl;
	__u8 nh;

	if (avail < PKT_IP6_LEN)
		return pkt_fail(pi->err, "frame: ends inside the IPv6 header");
	if (ip[0] >> 4 != 6)
		return pkt_fail(pi->err, "ip6.version: %u", ip[0] >> 4);
	if ((size_t)pkt_get16(ip + 4) + PKT_IP6_LEN != avail)
		return pkt_fail(pi->err, "ip6.payload_len: %u, frame carries %zu",
				pkt_get16(ip + 4), avail - PKT_IP6_LEN);
	pi->family = XLB_FAMILY_INET6;
	pi->tos = (__u8)(pkt_get32(ip) >> 20);
	pi->flow_label = pkt_get32(ip) & 0xfffff;
	pi->ttl = ip[7];
	memcpy(pi->src, ip + 8, 16);
	memcpy(pi->dst, ip + 24, 16);
	nh = ip[6];
	while (nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING ||
	       nh == IPPROTO_DSTOPTS || nh == IPPROTO_FRAGMENT) {
		if (nh == IPPROTO_HOPOPTS && pi->n_ext)
			return pkt_fail(pi->err, "ip6.ext: hop-by-hop not first");
		x = ip + off;
		if (avail < off + 8)
			return pkt_fail(pi->err, "ip6.ext: header %d cut short",
					pi->n_ext);
		xl = nh == IPPROTO_FRAGMENT ? 8 : (x[1] + 1) * 8u;
		if (avail < off + xl)
			return pkt_fail(pi->err, "ip6.ext: header %d cut short",
					pi->n_ext);
		if (nh == IPPROTO_FRAGMENT) {
			pi->frag = true;
			pi->frag_off = pkt_get16(x + 2) >> 3;
			pi->mf = x[3] & 1;
		}
		pi->n_ext++;
		nh = x[0];
		off += xl;
	}
	pi->proto = nh;
	pi->l4_off = pi->l3_off + off;
	pi->l4_len = avail - off;
	return 0;
}

static int pkt_parse_l4(const __u8 *f, struct pkt_info *pi)
{
	const __u8 *p = f + pi->l4_off;
	size_t n = pi->l4_len, h;
	__u64 ph = pkt_pseudo_sum(pi->family, pi->src, pi->dst, pi->proto,
				  (__u32)n);
	bool whole = !pi->frag;

	pi->payload_off = pi->l4_off;
	pi->payload_len = n;
	if (pi->frag_off)
		return 0;	/* no transport header in this fragment */
	switch (pi->proto) {
	case IPPROTO_TCP:
		if (n < PKT_TCP_LEN)
			return pkt_fail(pi->err, "tcp.len: %zu bytes", n);
		h = (p[12] >> 4) * 4u;
		if (h < PKT_TCP_LEN || h > n)
			return pkt_fail(pi->err, "tcp.doff: %zu bytes of %zu",
					h, n);
		if (whole && pkt_csum(pkt_sum(p, n, ph)))
			return pkt_fail(pi->err, "tcp.csum: 0x%04x does not verify",
					pkt_get16(p + 16));
		pi->sport = pkt_get16(p);
		pi->dport = pkt_get16(p + 2);
		pi->seq = pkt_get32(p + 4);
		pi->ack = pkt_get32(p + 8);
		pi->tcp_flags = p[13];
		break;
	case IPPROTO_UDP:
		h = PKT_UDP_LEN;
		if (n < h)
			return pkt_fail(pi->err, "udp.len: %zu bytes", n);
		if (whole && pkt_get16(p + 4) != n)
			return pkt_fail(pi->err, "udp.len: %u, IP carries %zu",
					pkt_get16(p + 4), n);
		if (whole && !pkt_get16(p + 6) &&
		    pi->family == XLB_FAMILY_INET6)
			return pkt_fail(pi->err, "udp.csum: 0 over IPv6");
		if (whole && pkt_get16(p + 6) && pkt_csum(pkt_sum(p, n, ph)))
			return pkt_fail(pi->err, "udp.csum: 0x%04x does not verify",
					pkt_get16(p + 6));
		pi->sport = pkt_get16(p);
		pi->dport = pkt_get16(p + 2);
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		h = PKT_ICMP_LEN;
		if (n < h)
			return pkt_fail(pi->err, "icmp.len: %zu bytes", n);
		if (whole && pkt_csum(pkt_sum(p, n, pi->proto == IPPROTO_ICMP ?
					     0 : ph)))
			return pkt_fail(pi->err, "%s.csum: 0x%04x does not verify",
					pi->proto == IPPROTO_ICMP ? "icmp" :
					"icmp6", pkt_get16(p + 2));
		pi->icmp_type = p[0];
		pi->icmp_code = p[1];
		pi->icmp_rest = pkt_get32(p + 4);
		break;
	default:
		return 0;
	}
	pi->payload_off = pi->l4_off + h;
	pi->payload_len = n - h;
	return 0;
}

/*
 * Check a plain frame: Ethernet and tags, IPv4 (header checksum, total
 * length = the frame) or IPv6 (payload length = the frame, extension
 * headers), and the transport checksum unless it is a fragment.  A frame
 * that is neither IPv4 nor IPv6 parses with family 0.
 */
int pkt_parse(const void *frame, size_t len, struct pkt_info *pi)
{
	const __u8 *f = frame;

	memset(pi, 0, sizeof(*pi));
	if (pkt_parse_l2(f, len, &pi->l2, pi->err))
		return -1;
	pi->l3_off = pi->l2.l3_off;
	if (pi->l2.ethertype == PKT_ETH_IP) {
		if (pkt_parse_ip4(f, len, pi))
			return -1;
	} else if (pi->l2.ethertype == PKT_ETH_IPV6) {
		if (pkt_parse_ip6(f, len, pi))
			return -1;
	} else {
		return 0;
	}
	return pkt_parse_l4(f, pi);
}

/* Outer IPv4 of a tunnel frame; sets o->proto and the IP payload. */
static int pkt_outer_ip4(const __u8 *f, size_t len, struct pkt_outer *o,
			 size_t *pay, size_t *pay_len)
{
	const __u8 *ip = f + o->l3_off;
	size_t avail = len - o->l3_off, hl, tot;
	__u16 fo;

	if (avail < PKT_IP4_LEN)
		return pkt_fail(o->err, "frame: ends inside the IPv4 header");
	if (ip[0] >> 4 != 4)
		return pkt_fail(o->err, "ip4.version: %u", ip[0] >> 4);
	hl = (ip[0] & 0xf) * 4u;
	if (hl < PKT_IP4_LEN || hl > avail)
		return pkt_fail(o->err, "ip4.ihl: %zu bytes, %zu available",
				hl, avail);
	if (pkt_csum(pkt_sum(ip, hl, 0)))
		return pkt_fail(o->err, "ip4.csum: 0x%04x does not verify",
				pkt_get16(ip + 10));
	tot = pkt_get16(ip + 2);
	if (tot != avail || tot < hl)
		return pkt_fail(o->err, "ip4.tot_len: %zu, frame carries %zu",
				tot, avail);
	fo = pkt_get16(ip + 6);
	if (fo & (PKT_IP4_MF | PKT_IP4_OFFSET))
		return pkt_fail(o->err, "ip4.frag: outer packet is a fragment "
				"(MF %d, offset %u)", !!(fo & PKT_IP4_MF),
				fo & PKT_IP4_OFFSET);
	o->proto = ip[9];
	if (o->proto != IPPROTO_IPIP && o->proto != IPPROTO_IPV6 &&
	    o->proto != IPPROTO_UDP)
		return pkt_fail(o->err, "ip4.proto: %u is no xlb tunnel",
				o->proto);
	o->tos = ip[1];
	o->ip_id = pkt_get16(ip + 4);
	o->df = fo & PKT_IP4_DF;
	o->ttl = ip[8];
	memcpy(o->src, ip + 12, 4);
	memcpy(o->dst, ip + 16, 4);
	o->ip_hlen = hl;
	*pay = o->l3_off + hl;
	*pay_len = tot - hl;
	return 0;
}

static int pkt_outer_ip6(const __u8 *f, size_t len, struct pkt_outer *o,
			 size_t *pay, size_t *pay_len)
{
	const __u8 *ip = f + o->l3_off;
	size_t avail = len - o->l3_off;

	if (avail < PKT_IP6_LEN)
		return pkt_fail(o->err, "frame: ends inside the IPv6 header");
	if (ip[0] >> 4 != 6)
		return pkt_fail(o->err, "ip6.version: %u", ip[0] >> 4);
	if ((size_t)pkt_get16(ip + 4) + PKT_IP6_LEN != avail)
		return pkt_fail(o->err, "ip6.payload_len: %u, frame carries %zu",
				pkt_get16(ip + 4), avail - PKT_IP6_LEN);
	o->proto = ip[6];
	if (o->proto != IPPROTO_IPIP && o->proto != IPPROTO_IPV6 &&
	    o->proto != IPPROTO_UDP)
		return pkt_fail(o->err, "ip6.nexthdr: %u is no xlb tunnel",
				o->proto);
	o->tos = (__u8)(pkt_get32(ip) >> 20);
	o->flow_label = pkt_get32(ip) & 0xfffff;
	o->ttl = ip[7];
	memcpy(o->src, ip + 8, 16);
	memcpy(o->dst, ip + 24, 16);
	o->ip_hlen = PKT_IP6_LEN;
	*pay = o->l3_off + PKT_IP6_LEN;
	*pay_len = avail - PKT_IP6_LEN;
	return 0;
}

/* UDP, GUE header and hop list at f + *off; moves *off to the inner. */
static int pkt_outer_gue(const __u8 *f, struct pkt_outer *o,
			 size_t *off, size_t *n)
{
	const __u8 *u = f + *off, *g = u + PKT_UDP_LEN, *h = g + PKT_GUE_LEN;
	size_t alen = pkt_addr_len(o->family), glen, i;
	__u64 ph;

	if (*n < PKT_UDP_LEN)
		return pkt_fail(o->err, "udp.len: IP payload of %zu bytes", *n);
	o->sport = pkt_get16(u);
	o->dport = pkt_get16(u + 2);
	o->udp_len = pkt_get16(u + 4);
	o->udp_csum = pkt_get16(u + 6);
	if (o->udp_len != *n)
		return pkt_fail(o->err, "udp.len: %u, IP carries %zu",
				o->udp_len, *n);
	ph = pkt_pseudo_sum(o->family, o->src, o->dst, IPPROTO_UDP,
			    (__u32)*n);
	if (!o->udp_csum && o->family == XLB_FAMILY_INET6)
		return pkt_fail(o->err, "udp.csum: 0 over IPv6");
	if (o->udp_csum && pkt_csum(pkt_sum(u, *n, ph)))
		return pkt_fail(o->err, "udp.csum: 0x%04x does not verify",
				o->udp_csum);
	if (*n < PKT_UDP_LEN + PKT_GUE_LEN)
		return pkt_fail(o->err, "udp.len: %zu, no room for GUE", *n);
	o->gue_version = g[0] >> 6;
	o->gue_hlen = g[0] & 0x1f;
	o->gue_proto = g[1];
	o->gue_flags = pkt_get16(g + 2);
	if (o->gue_version != 0)
		return pkt_fail(o->err, "gue.version: %u", o->gue_version);
	if (g[0] & 0x20)
		return pkt_fail(o->err, "gue.control: C bit set");
	if (o->gue_proto != IPPROTO_IPIP && o->gue_proto != IPPROTO_IPV6)
		return pkt_fail(o->err, "gue.proto: %u", o->gue_proto);
	if (o->gue_flags != XLB_GUE_FLAGS)
		return pkt_fail(o->err, "gue.flags: 0x%04x, want 0x%04x",
				o->gue_flags, XLB_GUE_FLAGS);
	glen = PKT_GUE_LEN + o->gue_hlen * 4u;
	if (o->gue_hlen < 1 || PKT_UDP_LEN + glen > *n)
		return pkt_fail(o->err, "gue.hlen: %u words, %zu bytes follow",
				o->gue_hlen, *n - PKT_UDP_LEN - PKT_GUE_LEN);
	o->hop_count = h[1];
	o->hop_index = h[2];
	o->hop_family = h[3];
	if (h[0] != XLB_GUE_HOPS_MAGIC)
		return pkt_fail(o->err, "hops.magic: 0x%02x", h[0]);
	if (o->hop_family != o->family)
		return pkt_fail(o->err, "hops.family: %u, outer is %d",
				o->hop_family, o->family);
	if (o->hop_count < 1 || o->hop_count > XLB_HOPS)
		return pkt_fail(o->err, "hops.count: %u", o->hop_count);
	if (o->gue_hlen != 1 + XLB_HOPS * alen / 4)
		return pkt_fail(o->err, "gue.hlen: %u words, the hop list needs %zu",
				o->gue_hlen, 1 + XLB_HOPS * alen / 4);
	for (i = o->hop_count; i < XLB_HOPS; i++) {
		static const __u8 zero[16];

		if (memcmp(h + 4 + i * alen, zero, alen))
			return pkt_fail(o->err, "hops.unused: hop %zu of %u is not zero",
					i, o->hop_count);
	}
	if (o->hop_index >= o->hop_count)
		return pkt_fail(o->err, "hops.index: %u of %u hops",
				o->hop_index, o->hop_count);
	for (i = 0; i < o->hop_count; i++)
		memcpy(o->hops[i], h + 4 + i * alen, alen);
	if (memcmp(o->hops[o->hop_index], o->dst, 16))
		return pkt_fail(o->err, "hops.addr: hop %u is not the outer "
				"destination", o->hop_index);
	*off += PKT_UDP_LEN + glen;
	*n -= PKT_UDP_LEN + glen;
	return 0;
}

/*
 * The test oracle: check what the load balancer sends to a backend.
 *   Ethernet (+ tags), ethertype matching the outer header;
 *   IPv4: version, IHL, header checksum, total length = the frame, not a
 *   fragment; IPv6: version, payload length = the frame, no extension
 *   headers; protocol / next header 4, 41 or 17;
 *   UDP: length = the IP payload, checksum correct (IPv4 may send 0);
 *   GUE: version 0, C 0, proto 4 or 41, flags XLB_GUE_FLAGS, hop list
 *   magic, family = the outer family, 1 <= count <= XLB_HOPS, hlen =
 *   1 + count * words per address, index < count, hop[index] = the outer
 *   destination;
 *   inner: its IP version is the one the outer protocol / GUE proto names,
 *   and its own length fills the rest of the frame exactly.
 */
int pkt_parse_outer(const void *frame, size_t len,
		    struct pkt_outer *o)
{
	const __u8 *f = frame;
	size_t off = 0, n = 0, il;
	__u8 names;
	int v;

	memset(o, 0, sizeof(*o));
	if (pkt_parse_l2(f, len, &o->l2, o->err))
		return -1;
	o->l3_off = o->l2.l3_off;
	if (o->l2.ethertype == PKT_ETH_IP) {
		o->family = XLB_FAMILY_INET;
		if (pkt_outer_ip4(f, len, o, &off, &n))
			return -1;
	} else if (o->l2.ethertype == PKT_ETH_IPV6) {
		o->family = XLB_FAMILY_INET6;
		if (pkt_outer_ip6(f, len, o, &off, &n))
			return -1;
	} else {
		return pkt_fail(o->err, "eth.type: 0x%04x is not IP",
				o->l2.ethertype);
	}
	if (o->proto == IPPROTO_UDP) {
		o->encap = XLB_ENCAP_GUE;
		if (pkt_outer_gue(f, o, &off, &n))
			return -1;
		names = o->gue_proto;
	} else {
		o->encap = XLB_ENCAP_IPIP;
		names = o->proto;
	}
	o->inner_off = off;
	o->inner_len = n;
	if (!n)
		return pkt_fail(o->err, "inner.len: no inner packet");
	v = f[off] >> 4;
	if ((names == IPPROTO_IPIP && v != 4) ||
	    (names == IPPROTO_IPV6 && v != 6))
		return pkt_fail(o->err, "%s: %u, but the inner packet is "
				"version %d", o->encap == XLB_ENCAP_GUE ?
				"gue.proto" : o->family == XLB_FAMILY_INET ?
				"ip4.proto" : "ip6.nexthdr", names, v);
	o->inner_family = v;
	if (v == 4)
		il = n < PKT_IP4_LEN ? 0 : pkt_get16(f + off + 2);
	else
		il = n < PKT_IP6_LEN ? 0 : PKT_IP6_LEN +
					   pkt_get16(f + off + 4);
	if (il != n)
		return pkt_fail(o->err, "inner.len: IPv%d packet of %zu bytes "
				"in %zu", v, il, n);
	return 0;
}
