// SPDX-License-Identifier: GPL-2.0
/*
 * The backend module xlb_redirect, packet by packet: crafted GUE frames
 * (tools/lib/pkt.h) sent into a backend namespace over a veth pair, and
 * what the backend does with them, seen from its counters, its sockets and
 * the frames that come back.
 *
 *   c (the LB and the client's router)            b (backend, module on)
 *   xkc0 02:00:00:00:00:01 10.1.0.1, 10.1.0.3 <-> xkb0 02:00:00:00:00:02
 *        fd00:1::1, fd00:1::3                          10.1.0.2, fd00:1::2
 *                                                  lo: VIP 198.51.100.1,
 *                                                      2001:db8:1::1
 *   xkc1 02:00:00:00:00:03 10.2.0.1          <->  n (module loaded, off)
 *        fd00:2::1                                 xkn0 10.2.0.2, fd00:2::2
 *
 * The client is 192.0.2.1 / 2001:db8::1 (routed back via c); the second
 * hop of the lists is 10.1.0.3 / fd00:1::3, an address of c, so frames the
 * module forwards come back to c's packet socket, where the test oracle
 * pkt_parse_outer() checks them.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "kselftest_harness.h"
#include "kmod.h"
#include "pkt.h"

#define C_IF		"xkc0"
#define B_IF		"xkb0"
#define C2_IF		"xkc1"
#define N_IF		"xkn0"
#define C_MAC		"02:00:00:00:00:01"
#define B_MAC		"02:00:00:00:00:02"
#define C2_MAC		"02:00:00:00:00:03"
#define N_MAC		"02:00:00:00:00:04"
#define VIP_PORT	80
#define UDP_PORT	53
#define BUF		2048
#define QUIET_MS	300	/* how long "nothing happens" is watched */

static const __u8 n_mac[6] = { 2, 0, 0, 0, 0, 4 };
static const __u8 c2_mac[6] = { 2, 0, 0, 0, 0, 3 };

/* Addresses by family: [0] IPv4, [1] IPv6. */
static const char *const lb_addr[2] = { "10.1.0.1", "fd00:1::1" };
static const char *const b_addr[2] = { "10.1.0.2", "fd00:1::2" };
static const char *const hop2_addr[2] = { "10.1.0.3", "fd00:1::3" };
static const char *const vip_addr[2] = { "198.51.100.1", "2001:db8:1::1" };
static const char *const n_lb_addr[2] = { "10.2.0.1", "fd00:2::1" };
static const char *const n_addr[2] = { "10.2.0.2", "fd00:2::2" };

static int fi(int family)
{
	return family == XLB_FAMILY_INET ? 0 : 1;
}

static int af(int family)
{
	return family == XLB_FAMILY_INET ? AF_INET : AF_INET6;
}

FIXTURE(kmod) {
	int home;		/* where the test started */
	int c, b, n;		/* the namespaces */
	int pc, pc2;		/* packet sockets on xkc0, xkc1 (in c) */
	int udp[2];		/* UDP servers on the VIP in b */
	int lsn[2];		/* TCP listeners on the VIP in b */
	__u8 buf[BUF];
};

static int bound_socket(int ns, int family, int type, const char *addr,
			int port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (void *)&ss;
	struct sockaddr_in6 *s6 = (void *)&ss;
	int fd, one = 1;

	fd = km_ns_socket(ns, af(family), type | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (family == XLB_FAMILY_INET) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sizeof(ss)) ||
	    (type == SOCK_STREAM && listen(fd, 16))) {
		close(fd);
		return -1;
	}
	return fd;
}

FIXTURE_SETUP(kmod)
{
	int f;

	self->c = self->b = self->n = self->pc = self->pc2 = -1;
	self->udp[0] = self->udp[1] = self->lsn[0] = self->lsn[1] = -1;
	ASSERT_EQ(0, km_load()) TH_LOG("cannot load %s", km_ko());
	self->home = km_ns_self();
	ASSERT_LE(0, self->home);
	self->c = km_ns_new();
	ASSERT_LE(0, self->c) TH_LOG("unshare: needs root");
	self->b = km_ns_new();
	ASSERT_LE(0, self->b);
	self->n = km_ns_new();
	ASSERT_LE(0, self->n);
	ASSERT_EQ(0, setns(self->home, CLONE_NEWNET));

	ASSERT_EQ(0, km_ns_enter(self->c));
	ASSERT_EQ(0, nl_veth(C_IF, C_MAC, B_IF, B_MAC, self->b));
	ASSERT_EQ(0, nl_veth(C2_IF, C2_MAC, N_IF, N_MAC, self->n));
	ASSERT_EQ(0, nl_up(C_IF, NULL));
	ASSERT_EQ(0, nl_up(C2_IF, NULL));
	ASSERT_EQ(0, nl_addr(C_IF, "10.1.0.1", 24));
	ASSERT_EQ(0, nl_addr(C_IF, "10.1.0.3", 24));
	ASSERT_EQ(0, nl_addr(C_IF, "fd00:1::1", 64));
	ASSERT_EQ(0, nl_addr(C_IF, "fd00:1::3", 64));
	ASSERT_EQ(0, nl_addr(C2_IF, "10.2.0.1", 24));
	ASSERT_EQ(0, nl_addr(C2_IF, "fd00:2::1", 64));
	km_ns_leave();
	ASSERT_EQ(0, km_ns_enter(self->b));
	ASSERT_EQ(0, nl_up(B_IF, NULL));
	ASSERT_EQ(0, nl_addr(B_IF, "10.1.0.2", 24));
	ASSERT_EQ(0, nl_addr(B_IF, "fd00:1::2", 64));
	ASSERT_EQ(0, nl_addr("lo", "198.51.100.1", 32));
	ASSERT_EQ(0, nl_addr("lo", "2001:db8:1::1", 128));
	ASSERT_EQ(0, nl_route("192.0.2.0", 24, "10.1.0.1"));
	ASSERT_EQ(0, nl_route("2001:db8::", 64, "fd00:1::1"));
	/* replies leave with whole checksums, so pkt_parse() can check them */
	ASSERT_EQ(0, nl_ethtool(B_IF, ETHTOOL_STXCSUM, 0));
	km_ns_leave();
	ASSERT_EQ(0, km_ns_enter(self->n));
	ASSERT_EQ(0, nl_up(N_IF, NULL));
	ASSERT_EQ(0, nl_addr(N_IF, "10.2.0.2", 24));
	ASSERT_EQ(0, nl_addr(N_IF, "fd00:2::2", 64));
	ASSERT_EQ(0, nl_addr("lo", "198.51.100.1", 32));
	ASSERT_EQ(0, nl_addr("lo", "2001:db8:1::1", 128));
	ASSERT_EQ(0, nl_route("192.0.2.0", 24, "10.2.0.1"));
	ASSERT_EQ(0, nl_route("2001:db8::", 64, "fd00:2::1"));
	km_ns_leave();
	ASSERT_EQ(0, km_wait_up(self->c, C_IF));
	ASSERT_EQ(0, km_wait_up(self->c, C2_IF));
	ASSERT_EQ(0, km_wait_up(self->b, B_IF));
	ASSERT_EQ(0, km_wait_up(self->n, N_IF));
	for (f = 0; f < 2; f++) {
		ASSERT_EQ(0, km_wait_local(self->b, b_addr[f]));
		ASSERT_EQ(0, km_wait_local(self->b, vip_addr[f]));
		ASSERT_EQ(0, km_wait_local(self->n, vip_addr[f]));
	}
	for (f = 0; f < 2; f++) {
		ASSERT_EQ(0, km_wait_local(self->c, lb_addr[f]));
		ASSERT_EQ(0, km_wait_local(self->c, hop2_addr[f]));
		ASSERT_EQ(0, km_wait_local(self->c, n_lb_addr[f]));
		ASSERT_EQ(0, km_wait_local(self->n, n_addr[f]));
	}
	/* the LB's addresses; frames from the hop's addresses are refused */
	ASSERT_EQ(0, km_ctl(self->b, "allow 10.1.0.1 fd00:1::1\nenable"));

	self->pc = km_packet_socket(self->c, C_IF);
	ASSERT_LE(0, self->pc);
	self->pc2 = km_packet_socket(self->c, C2_IF);
	ASSERT_LE(0, self->pc2);
	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;

		self->udp[f] = bound_socket(self->b, fam, SOCK_DGRAM,
					    vip_addr[f], UDP_PORT);
		ASSERT_LE(0, self->udp[f]);
		self->lsn[f] = bound_socket(self->b, fam, SOCK_STREAM,
					    vip_addr[f], VIP_PORT);
		ASSERT_LE(0, self->lsn[f]);
	}
}

FIXTURE_TEARDOWN(kmod)
{
	int fds[] = { self->pc, self->pc2, self->udp[0], self->udp[1],
		      self->lsn[0], self->lsn[1], self->c, self->b, self->n };
	size_t i;

	if (!_metadata->passed) {	/* b first: it decides */
		if (self->b >= 0)
			km_dump(self->b, "b");
		if (self->c >= 0)
			km_dump(self->c, "c");
		if (self->n >= 0)
			km_dump(self->n, "n");
	}
	if (self->home >= 0 && setns(self->home, CLONE_NEWNET))
		TH_LOG("cannot return to the first namespace");
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (self->home >= 0)
		close(self->home);
}

/* --- frames ------------------------------------------------------------------ */

/* The client's packet: family, protocol, flags; pkt.h's defaults else. */
static void inner(struct pkt_spec *s, int family, int proto, __u8 flags)
{
	pkt_spec_init(s, family, proto);
	pkt_addr(family, vip_addr[fi(family)], s->dst);
	s->tcp_flags = flags;
	if (proto == IPPROTO_UDP)
		s->dport = UDP_PORT;
}

/*
 * GUE from the LB (outer family) to hops[index] of [hop0, hop1]; hop1
 * NULL: a list of one.
 */
static void gue(struct pkt_encap *e, int family, const char *hop0,
		const char *hop1, int index)
{
	pkt_encap_init(e, XLB_ENCAP_GUE, family);
	pkt_addr(family, lb_addr[fi(family)], e->src);
	pkt_addr(family, hop0, e->hops[0]);
	e->hop_count = 1;
	if (hop1) {
		pkt_addr(family, hop1, e->hops[1]);
		e->hop_count = 2;
	}
	e->hop_index = index;
	memcpy(e->dst, e->hops[index], 16);
}

/* The usual tunnel to b: [b, second hop], at b. */
static void gue_b(struct pkt_encap *e, int family)
{
	gue(e, family, b_addr[fi(family)], hop2_addr[fi(family)], 0);
}

static size_t build(const struct pkt_encap *e, const struct pkt_spec *s,
		    __u8 *buf)
{
	return pkt_build_encap(e, s, buf, BUF);
}

static long long stat_of(int ns, const char *name)
{
	return km_stat(ns, name);
}

/* Sum of the delivered_* counters. */
static long long delivered(int ns)
{
	return km_stat(ns, "delivered");
}

/* --- watching c ------------------------------------------------------------- */

struct want_gue {
	int family;
	__be32 dst[4];
	struct pkt_outer o;
};

static bool is_gue_to(const void *f, size_t len, const void *arg)
{
	struct want_gue *w = (struct want_gue *)arg;

	return !pkt_parse_outer(f, len, &w->o) && w->o.family == w->family &&
	       w->o.encap == XLB_ENCAP_GUE && !memcmp(w->o.dst, w->dst, 16);
}

struct want_tcp {
	__u16 dport;		/* the client's port */
	__u8 flags;		/* all of them set */
	struct pkt_info pi;
};

static bool is_tcp_reply(const void *f, size_t len, const void *arg)
{
	struct want_tcp *w = (struct want_tcp *)arg;

	return !pkt_parse(f, len, &w->pi) && w->pi.proto == IPPROTO_TCP &&
	       w->pi.dport == w->dport &&
	       (w->pi.tcp_flags & w->flags) == w->flags;
}

/* Send a frame from c on xkc0 after forgetting what c saw so far. */
static int send_b(FIXTURE_DATA(kmod) *self, const __u8 *f, size_t len)
{
	km_drain(self->pc);
	return km_send(self->pc, f, len);
}

/* The client's handshake through the tunnel; the accepted socket or -1. */
static int handshake(FIXTURE_DATA(kmod) *self, int family, __u16 sport,
		     __u32 *snd_nxt, __u32 *rcv_nxt)
{
	struct want_tcp w = { .dport = sport, .flags = 0x12 };
	struct pkt_encap e;
	struct pkt_spec s;
	size_t n;
	int fd;

	gue_b(&e, family);
	inner(&s, family, IPPROTO_TCP, PKT_TCP_SYN);
	s.sport = sport;
	s.seq = 1000;
	n = build(&e, &s, self->buf);
	if (!n || send_b(self, self->buf, n) ||
	    !km_recv_match(self->pc, self->buf, BUF, KM_WAIT_MS, is_tcp_reply,
			   &w))
		return -1;
	s.tcp_flags = PKT_TCP_ACK;
	s.seq = 1001;
	s.ack = w.pi.seq + 1;
	n = build(&e, &s, self->buf);
	if (!n || send_b(self, self->buf, n))
		return -1;
	*snd_nxt = s.seq;
	*rcv_nxt = s.ack;
	for (n = 0; n < KM_WAIT_MS / 10; n++) {
		fd = accept4(self->lsn[fi(family)], NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		km_sleep_ms(10);
	}
	return -1;
}

/* --- delivering ------------------------------------------------------------- */

TEST_F(kmod, udp_is_decapsulated_to_the_vip_socket_in_every_family_pair)
{
	static const int fams[] = { XLB_FAMILY_INET, XLB_FAMILY_INET6 };
	char got[64];
	int o, i, sent = 0;

	for (o = 0; o < 2; o++) {
		for (i = 0; i < 2; i++) {
			struct pkt_encap e;
			struct pkt_spec s;
			char msg[32];
			size_t n;
			ssize_t r = -1;
			int t;

			snprintf(msg, sizeof(msg), "outer %d inner %d",
				 fams[o], fams[i]);
			gue_b(&e, fams[o]);
			inner(&s, fams[i], IPPROTO_UDP, 0);
			s.payload = msg;
			s.payload_len = strlen(msg);
			n = build(&e, &s, self->buf);
			ASSERT_NE(0, n);
			ASSERT_EQ(0, send_b(self, self->buf, n));
			sent++;
			for (t = 0; t < KM_WAIT_MS / 10 && r < 0; t++) {
				r = recv(self->udp[i], got, sizeof(got), 0);
				if (r < 0)
					km_sleep_ms(10);
			}
			ASSERT_EQ((ssize_t)strlen(msg), r) TH_LOG("%s", msg);
			EXPECT_EQ(0, memcmp(msg, got, (size_t)r));
		}
	}
	EXPECT_EQ(sent, stat_of(self->b, "received"));
	EXPECT_EQ(sent, stat_of(self->b, "delivered_not_tcp"));
	EXPECT_EQ(sent, delivered(self->b));
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
	EXPECT_EQ(0, stat_of(self->b, "malformed"));
}

TEST_F(kmod, syn_is_delivered_and_answered)
{
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		struct want_tcp w = { .dport = 40000, .flags = 0x12 };
		struct pkt_encap e;
		struct pkt_spec s;
		size_t n;

		gue_b(&e, fam);
		inner(&s, fam, IPPROTO_TCP, PKT_TCP_SYN);
		n = build(&e, &s, self->buf);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		ASSERT_NE(0, km_recv_match(self->pc, self->buf, BUF,
					   KM_WAIT_MS, is_tcp_reply, &w))
			TH_LOG("no SYN-ACK over IPv%d", fam);
		EXPECT_EQ(f + 1, stat_of(self->b, "delivered_syn"));
	}
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
}

TEST_F(kmod, request_and_established_sockets_keep_their_flow)
{
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		__u32 seq, ack;
		struct pkt_encap e;
		struct pkt_spec s;
		char got[16];
		ssize_t r = -1;
		size_t n;
		int fd, t;

		/* the handshake's ACK finds the request socket */
		fd = handshake(self, fam, 41000, &seq, &ack);
		ASSERT_LE(0, fd) TH_LOG("handshake over IPv%d", fam);
		EXPECT_EQ(2 * f + 1, stat_of(self->b, "delivered_socket"));
		/* data finds the established socket, not the second hop */
		gue_b(&e, fam);
		inner(&s, fam, IPPROTO_TCP, PKT_TCP_ACK | PKT_TCP_PSH);
		s.sport = 41000;
		s.seq = seq;
		s.ack = ack;
		s.payload = "data";
		s.payload_len = 4;
		n = build(&e, &s, self->buf);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		for (t = 0; t < KM_WAIT_MS / 10 && r < 0; t++) {
			r = recv(fd, got, sizeof(got), MSG_DONTWAIT);
			if (r < 0)
				km_sleep_ms(10);
		}
		EXPECT_EQ(4, r);
		EXPECT_EQ(2 * (f + 1), stat_of(self->b, "delivered_socket"));
		close(fd);
	}
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
}

/* A SYN answered with a cookie: the cookie in the SYN-ACK's sequence. */
static int cookie_syn(FIXTURE_DATA(kmod) *self, int fam, __u16 sport,
		      __u32 *cookie)
{
	struct want_tcp w = { .dport = sport, .flags = 0x12 };
	struct pkt_encap e;
	struct pkt_spec s;
	size_t n;

	gue_b(&e, fam);
	inner(&s, fam, IPPROTO_TCP, PKT_TCP_SYN);
	s.sport = sport;
	s.seq = 5000;
	n = build(&e, &s, self->buf);
	if (send_b(self, self->buf, n) ||
	    !km_recv_match(self->pc, self->buf, BUF, KM_WAIT_MS, is_tcp_reply,
			   &w))
		return -1;
	*cookie = w.pi.seq;
	return 0;
}

TEST_F(kmod, ack_with_valid_syncookie_is_delivered_other_acks_forwarded)
{
	int f, fd = -1, t;

	ASSERT_EQ(0, km_ns_enter(self->b));
	ASSERT_EQ(0, nl_sysctl("net.ipv4.tcp_syncookies", "2"));
	km_ns_leave();
	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		struct want_gue w = { .family = fam };
		struct pkt_encap e;
		struct pkt_spec s;
		__u32 cookie;
		size_t n;

		ASSERT_EQ(0, cookie_syn(self, fam, 42000, &cookie))
			TH_LOG("no SYN-ACK over IPv%d", fam);
		/* a wrong cookie: nobody here owns the flow */
		gue_b(&e, fam);
		inner(&s, fam, IPPROTO_TCP, PKT_TCP_ACK);
		s.sport = 42000;
		s.seq = 5001;
		s.ack = cookie + 1 + 0x01000000;
		n = build(&e, &s, self->buf);
		pkt_addr(fam, hop2_addr[f], w.dst);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		ASSERT_NE(0, km_recv_match(self->pc, self->buf, BUF,
					   KM_WAIT_MS, is_gue_to, &w));
		EXPECT_EQ(f + 1, stat_of(self->b, "forwarded"));
		/* the right one */
		s.ack = cookie + 1;
		n = build(&e, &s, self->buf);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		EXPECT_EQ(f + 1, km_stat_wait(self->b, "delivered_syncookie",
					      f + 1));
		for (t = 0, fd = -1; t < KM_WAIT_MS / 10 && fd < 0; t++) {
			fd = accept4(self->lsn[f], NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				km_sleep_ms(10);
		}
		EXPECT_LE(0, fd) TH_LOG("the cookie made no socket (IPv%d)",
					fam);
		if (fd >= 0)
			close(fd);
	}
	EXPECT_EQ(2, stat_of(self->b, "forwarded"));
}

/* --- forwarding ------------------------------------------------------------- */

/*
 * An ACK nobody here knows goes to the second hop: outer destination the
 * hop, outer source b's address, index 1, TTL one less, checksums right,
 * the inner packet unchanged.
 */
static void forward_case(struct __test_metadata *_metadata,
			 FIXTURE_DATA(kmod) *self, int outer, int in,
			 bool udp_csum)
{
	struct want_gue w = { .family = outer };
	struct pkt_encap e;
	struct pkt_spec s;
	__u8 sent[BUF];
	__be32 src[4];
	struct pkt_outer so;
	size_t n;

	gue_b(&e, outer);
	e.udp_no_csum = !udp_csum && outer == XLB_FAMILY_INET;
	inner(&s, in, IPPROTO_TCP, PKT_TCP_ACK);
	s.sport = 43000;
	s.seq = 77;
	s.ack = 88;
	s.payload = "payload";
	s.payload_len = 7;
	n = build(&e, &s, sent);
	ASSERT_NE(0, n);
	ASSERT_EQ(0, pkt_parse_outer(sent, n, &so));
	pkt_addr(outer, hop2_addr[fi(outer)], w.dst);
	ASSERT_EQ(0, send_b(self, sent, n));
	ASSERT_NE(0, km_recv_match(self->pc, self->buf, BUF, KM_WAIT_MS,
				   is_gue_to, &w))
		TH_LOG("nothing forwarded (outer IPv%d, inner IPv%d): b received %lld, forwarded %lld",
		       outer, in, stat_of(self->b, "received"),
		       stat_of(self->b, "forwarded"));
	pkt_addr(outer, b_addr[fi(outer)], src);
	EXPECT_EQ(0, memcmp(w.o.src, src, 16));
	EXPECT_EQ(1, w.o.hop_index);
	EXPECT_EQ(2, w.o.hop_count);
	EXPECT_EQ(e.ttl - 1, w.o.ttl);
	EXPECT_EQ(so.sport, w.o.sport);
	EXPECT_EQ(so.inner_len, w.o.inner_len);
	EXPECT_EQ(0, memcmp(sent + so.inner_off, self->buf + w.o.inner_off,
			    so.inner_len));
	if (outer == XLB_FAMILY_INET && !udp_csum)
		EXPECT_EQ(0, w.o.udp_csum);
}

TEST_F(kmod, unknown_flow_is_forwarded_to_the_next_hop)
{
	static const int fams[] = { XLB_FAMILY_INET, XLB_FAMILY_INET6 };
	int o, i, n = 0;

	for (o = 0; o < 2; o++) {
		for (i = 0; i < 2; i++) {
			forward_case(_metadata, self, fams[o], fams[i], true);
			n++;
		}
	}
	forward_case(_metadata, self, XLB_FAMILY_INET, XLB_FAMILY_INET, false);
	n++;
	EXPECT_EQ(n, stat_of(self->b, "forwarded"));
	EXPECT_EQ(0, delivered(self->b));
	EXPECT_EQ(0, stat_of(self->b, "forward_errors"));
}

TEST_F(kmod, rst_and_fin_of_unknown_flows_are_forwarded_too)
{
	static const __u8 flags[] = { PKT_TCP_RST, PKT_TCP_FIN | PKT_TCP_ACK,
				      PKT_TCP_SYN | PKT_TCP_ACK };
	size_t i;

	for (i = 0; i < sizeof(flags); i++) {
		struct want_gue w = { .family = XLB_FAMILY_INET };
		struct pkt_encap e;
		struct pkt_spec s;
		size_t n;

		gue_b(&e, XLB_FAMILY_INET);
		inner(&s, XLB_FAMILY_INET, IPPROTO_TCP, flags[i]);
		n = build(&e, &s, self->buf);
		pkt_addr(XLB_FAMILY_INET, hop2_addr[0], w.dst);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		EXPECT_NE(0, km_recv_match(self->pc, self->buf, BUF,
					   KM_WAIT_MS, is_gue_to, &w))
			TH_LOG("flags 0x%02x", flags[i]);
	}
	EXPECT_EQ(3, stat_of(self->b, "forwarded"));
}

/* Not forwarded but delivered: the stack answers an unknown ACK with RST. */
static void delivered_case(struct __test_metadata *_metadata,
			   FIXTURE_DATA(kmod) *self, const struct pkt_encap *e,
			   const char *counter, long long want)
{
	struct want_tcp w = { .dport = 44000, .flags = PKT_TCP_RST };
	struct pkt_spec s;
	size_t n;

	inner(&s, e->family, IPPROTO_TCP, PKT_TCP_ACK);
	s.sport = 44000;
	s.ack = 12345;
	n = build(e, &s, self->buf);
	ASSERT_EQ(0, send_b(self, self->buf, n));
	EXPECT_NE(0, km_recv_match(self->pc, self->buf, BUF, KM_WAIT_MS,
				   is_tcp_reply, &w))
		TH_LOG("no RST: not delivered (%s)", counter);
	EXPECT_EQ(want, stat_of(self->b, counter));
}

TEST_F(kmod, last_hop_delivers)
{
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		struct pkt_encap e;

		/* b is the second hop of two */
		gue(&e, fam, hop2_addr[f], b_addr[f], 1);
		delivered_case(_metadata, self, &e, "delivered_last_hop",
			       2 * f + 1);
		/* a list of one */
		gue(&e, fam, b_addr[f], NULL, 0);
		delivered_case(_metadata, self, &e, "delivered_last_hop",
			       2 * f + 2);
	}
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
}

TEST_F(kmod, next_hop_that_is_this_host_or_visited_delivers)
{
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		struct pkt_encap e;

		/* visited: the list names b twice */
		gue(&e, fam, b_addr[f], b_addr[f], 0);
		delivered_case(_metadata, self, &e, "delivered_hop_local",
			       2 * f + 1);
		/* another address of b (the VIP on lo) */
		gue(&e, fam, b_addr[f], vip_addr[f], 0);
		delivered_case(_metadata, self, &e, "delivered_hop_local",
			       2 * f + 2);
	}
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
}

/* --- ICMP errors ------------------------------------------------------------ */

/* An ICMP error about the reply VIP:80 -> client:cport, from a router. */
static size_t icmp_about(__u8 *buf, int fam, __u16 cport)
{
	struct pkt_spec q, s;
	struct pkt_encap e;

	inner(&q, fam, IPPROTO_TCP, PKT_TCP_ACK);
	memcpy(q.src, q.dst, 16);
	pkt_addr(fam, fam == XLB_FAMILY_INET ? "192.0.2.1" : "2001:db8::1",
		 q.dst);
	q.sport = VIP_PORT;
	q.dport = cport;
	inner(&s, fam, fam == XLB_FAMILY_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6,
	      0);
	pkt_addr(fam, fam == XLB_FAMILY_INET ? "192.0.2.254" :
		 "2001:db8::fe", s.src);
	s.icmp_type = fam == XLB_FAMILY_INET ? 3 : 2;	/* frag needed, PTB */
	s.icmp_code = fam == XLB_FAMILY_INET ? 4 : 0;
	s.icmp_rest = 1280;
	s.quote = &q;
	gue_b(&e, fam);
	return build(&e, &s, buf);
}

TEST_F(kmod, icmp_error_follows_the_quoted_connection)
{
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;
		struct want_gue w = { .family = fam };
		__u32 seq, ack;
		size_t n;
		int fd;

		fd = handshake(self, fam, 45000, &seq, &ack);
		ASSERT_LE(0, fd);
		/* about the connection b has: delivered */
		n = icmp_about(self->buf, fam, 45000);
		ASSERT_NE(0, n);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		EXPECT_EQ(2 * f + 2, km_stat_wait(self->b, "delivered_socket",
						  2 * f + 2));
		/* about one it does not: forwarded */
		n = icmp_about(self->buf, fam, 45001);
		pkt_addr(fam, hop2_addr[f], w.dst);
		ASSERT_EQ(0, send_b(self, self->buf, n));
		EXPECT_NE(0, km_recv_match(self->pc, self->buf, BUF,
					   KM_WAIT_MS, is_gue_to, &w));
		EXPECT_EQ(f + 1, stat_of(self->b, "forwarded"));
		close(fd);
	}
}

/* --- malformed GUE ------------------------------------------------------------ */

/* Offsets in a frame from build(): Ethernet, outer IP, UDP, GUE. */
static size_t ip_off(void)
{
	return PKT_ETH_LEN;
}

static size_t udp_off(int fam)
{
	return PKT_ETH_LEN + (fam == XLB_FAMILY_INET ? PKT_IP4_LEN :
						       PKT_IP6_LEN);
}

static size_t gue_off(int fam)
{
	return udp_off(fam) + PKT_UDP_LEN;
}

static size_t inner_off(int fam)
{
	return gue_off(fam) + PKT_GUE_LEN + 4 + XLB_HOPS * pkt_addr_len(fam);
}

/* Cut the frame to len bytes; outer lengths follow. */
static size_t cut(__u8 *f, int fam, size_t len)
{
	if (fam == XLB_FAMILY_INET) {
		pkt_put16(f + ip_off() + 2, (__u16)(len - ip_off()));
		pkt_ip4_set_csum(f + ip_off());
	} else {
		pkt_put16(f + ip_off() + 4, (__u16)(len - udp_off(fam)));
	}
	pkt_put16(f + udp_off(fam) + 4, (__u16)(len - udp_off(fam)));
	return len;
}

/* Make the outer UDP checksum right again (IPv6; IPv4 sends none). */
static void fix_udp(__u8 *f, int fam, size_t len)
{
	__u8 *u = f + udp_off(fam);
	size_t ulen = len - udp_off(fam);
	__be32 src[4] = { 0 }, dst[4] = { 0 };
	__u16 c;

	if (fam == XLB_FAMILY_INET) {
		pkt_put16(u + 6, 0);
		return;
	}
	memcpy(src, f + ip_off() + 8, 16);
	memcpy(dst, f + ip_off() + 24, 16);
	pkt_put16(u + 6, 0);
	c = pkt_csum(pkt_sum(u, ulen, pkt_pseudo_sum(fam, src, dst,
						     IPPROTO_UDP,
						     (__u32)ulen)));
	pkt_put16(u + 6, c ? c : 0xffff);
}

/* Break a good frame of outer family fam; its new length. */
struct bad_case {
	const char *name;
	size_t (*mangle)(__u8 *f, int fam, size_t len);
};

static size_t bad_short(__u8 *f, int fam, size_t len)
{
	return cut(f, fam, gue_off(fam) + 2);
}

static size_t bad_version(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam)] |= 0x40;
	return len;
}

static size_t bad_control(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam)] |= 0x20;
	return len;
}

static size_t bad_flags(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 2] = 0x80;
	return len;
}

static size_t bad_proto(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 1] = IPPROTO_UDP;
	return len;
}

static size_t bad_hlen_beyond(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam)] = 0x1f;
	return len;
}

static size_t bad_hlen_no_hops(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam)] = 0;
	return len;
}

static size_t bad_hlen_short(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam)] = 1;	/* the hop list header only */
	return len;
}

static size_t bad_magic(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 4] = 'y';
	return len;
}

static size_t bad_count0(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 5] = 0;
	return len;
}

static size_t bad_count3(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 5] = XLB_HOPS + 1;
	return len;
}

static size_t bad_index(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 6] = 2;
	return len;
}

static size_t bad_index_255(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 6] = 255;
	return len;
}

static size_t bad_family(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 7] = fam == XLB_FAMILY_INET ? XLB_FAMILY_INET6 :
						       XLB_FAMILY_INET;
	return len;
}

static size_t bad_hop_zero(__u8 *f, int fam, size_t len)
{
	memset(f + gue_off(fam) + 8 + pkt_addr_len(fam), 0,
	       pkt_addr_len(fam));
	return len;
}

static size_t bad_hop_multicast(__u8 *f, int fam, size_t len)
{
	f[gue_off(fam) + 8 + pkt_addr_len(fam)] = fam == XLB_FAMILY_INET ?
						  224 : 0xff;
	return len;
}

static size_t bad_inner_version(__u8 *f, int fam, size_t len)
{
	f[inner_off(fam)] = 0x65;
	return len;
}

static size_t bad_inner_len(__u8 *f, int fam, size_t len)
{
	__u8 *ip = f + inner_off(fam);

	pkt_put16(ip + 2, (__u16)(pkt_get16(ip + 2) + 100));
	pkt_ip4_set_csum(ip);
	return len;
}

static size_t bad_inner_cut(__u8 *f, int fam, size_t len)
{
	return cut(f, fam, inner_off(fam) + 10);
}

static size_t bad_tcp_cut(__u8 *f, int fam, size_t len)
{
	__u8 *ip = f + inner_off(fam);

	pkt_put16(ip + 2, PKT_IP4_LEN + 10);
	pkt_ip4_set_csum(ip);
	return cut(f, fam, inner_off(fam) + PKT_IP4_LEN + 10);
}

static size_t bad_tcp_doff(__u8 *f, int fam, size_t len)
{
	f[inner_off(fam) + PKT_IP4_LEN + 12] = 4 << 4;
	return len;
}

static const struct bad_case bad_cases[] = {
	{ "udp payload shorter than GUE", bad_short },
	{ "GUE version 1", bad_version },
	{ "GUE control message", bad_control },
	{ "GUE flags", bad_flags },
	{ "GUE proto not IP", bad_proto },
	{ "GUE hlen beyond the datagram", bad_hlen_beyond },
	{ "GUE without hop list", bad_hlen_no_hops },
	{ "hlen too short for the hops", bad_hlen_short },
	{ "hop list magic", bad_magic },
	{ "hop count 0", bad_count0 },
	{ "hop count above XLB_HOPS", bad_count3 },
	{ "hop index = count", bad_index },
	{ "hop index 255", bad_index_255 },
	{ "hop family not the outer one", bad_family },
	{ "hop address zero", bad_hop_zero },
	{ "hop address multicast", bad_hop_multicast },
	{ "inner IP version", bad_inner_version },
	{ "inner length beyond the datagram", bad_inner_len },
	{ "inner IP header cut", bad_inner_cut },
	{ "inner TCP header cut", bad_tcp_cut },
	{ "inner TCP data offset < 5", bad_tcp_doff },
};

TEST_F(kmod, malformed_gue_is_dropped_and_counted)
{
	long long bad = 0;
	size_t i;
	int f;

	for (f = 0; f < 2; f++) {
		int fam = f ? XLB_FAMILY_INET6 : XLB_FAMILY_INET;

		for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
			struct pkt_encap e;
			struct pkt_spec s;
			size_t n;

			gue_b(&e, fam);
			e.udp_no_csum = true;
			/* an ACK nobody owns: forwarded if not dropped */
			inner(&s, XLB_FAMILY_INET, IPPROTO_TCP, PKT_TCP_ACK);
			n = build(&e, &s, self->buf);
			ASSERT_NE(0, n);
			n = bad_cases[i].mangle(self->buf, fam, n);
			fix_udp(self->buf, fam, n);
			ASSERT_EQ(0, send_b(self, self->buf, n));
			bad++;
			EXPECT_EQ(bad, km_stat_wait(self->b, "malformed", bad))
				TH_LOG("not dropped: %s, outer IPv%d",
				       bad_cases[i].name, fam);
			EXPECT_EQ(bad, stat_of(self->b, "received"));
		}
	}
	km_sleep_ms(QUIET_MS);
	EXPECT_EQ(0, delivered(self->b));
	EXPECT_EQ(0, stat_of(self->b, "forwarded"));
	TH_LOG("%lld malformed frames dropped", bad);
	/* and the next good one goes through */
	forward_case(_metadata, self, XLB_FAMILY_INET, XLB_FAMILY_INET, true);
}

/* --- namespaces and the control file ----------------------------------------- */

static size_t udp_to_n(__u8 *buf, const char *msg)
{
	struct pkt_encap e;
	struct pkt_spec s;

	pkt_encap_init(&e, XLB_ENCAP_GUE, XLB_FAMILY_INET);
	pkt_addr(XLB_FAMILY_INET, n_lb_addr[0], e.src);
	pkt_addr(XLB_FAMILY_INET, n_addr[0], e.dst);
	memcpy(e.hops[0], e.dst, 16);
	e.hop_count = 1;
	inner(&s, XLB_FAMILY_INET, IPPROTO_UDP, 0);
	memcpy(s.dst_mac, n_mac, 6);
	memcpy(s.src_mac, c2_mac, 6);
	s.payload = msg;
	s.payload_len = strlen(msg);
	return pkt_build_encap(&e, &s, buf, BUF);
}

TEST_F(kmod, enabled_in_one_namespace_only)
{
	char got[16];
	ssize_t r = -1;
	size_t n;
	int fd, t;

	fd = bound_socket(self->n, XLB_FAMILY_INET, SOCK_DGRAM, vip_addr[0],
			  UDP_PORT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, stat_of(self->b, "enabled"));
	EXPECT_EQ(0, stat_of(self->n, "enabled"));
	/* n is off: GUE there is an ordinary datagram to a closed port */
	n = udp_to_n(self->buf, "one");
	ASSERT_EQ(0, km_send(self->pc2, self->buf, n));
	km_sleep_ms(QUIET_MS);
	EXPECT_EQ(-1, recv(fd, got, sizeof(got), MSG_DONTWAIT));
	EXPECT_EQ(0, stat_of(self->n, "received"));
	EXPECT_EQ(0, stat_of(self->b, "received"));
	/* on in n: n's counters move, b's do not */
	ASSERT_EQ(0, km_ctl(self->n, "allow 10.2.0.1\nenable"));
	EXPECT_EQ(1, stat_of(self->n, "enabled"));
	n = udp_to_n(self->buf, "two");
	ASSERT_EQ(0, km_send(self->pc2, self->buf, n));
	for (t = 0; t < KM_WAIT_MS / 10 && r < 0; t++) {
		r = recv(fd, got, sizeof(got), MSG_DONTWAIT);
		if (r < 0)
			km_sleep_ms(10);
	}
	EXPECT_EQ(3, r);
	EXPECT_EQ(1, stat_of(self->n, "delivered_not_tcp"));
	EXPECT_EQ(0, stat_of(self->b, "received"));
	/* off again */
	ASSERT_EQ(0, km_ctl(self->n, "disable"));
	EXPECT_EQ(0, stat_of(self->n, "enabled"));
	n = udp_to_n(self->buf, "three");
	ASSERT_EQ(0, km_send(self->pc2, self->buf, n));
	km_sleep_ms(QUIET_MS);
	EXPECT_EQ(-1, recv(fd, got, sizeof(got), MSG_DONTWAIT));
	EXPECT_EQ(1, stat_of(self->n, "received"));
	close(fd);
}

TEST_F(kmod, control_file_accepts_enable_disable_only)
{
	EXPECT_EQ(6080, stat_of(self->b, "port"));
	EXPECT_EQ(0, km_ctl(self->b, "enable\n"));	/* again: no change */
	EXPECT_EQ(1, stat_of(self->b, "enabled"));
	EXPECT_EQ(-EINVAL, km_ctl(self->b, "on"));
	EXPECT_EQ(-EINVAL, km_ctl(self->b, "enable please"));
	EXPECT_EQ(1, stat_of(self->b, "enabled"));
	EXPECT_EQ(0, km_ctl(self->b, "disable"));
	EXPECT_EQ(0, km_ctl(self->b, "disable"));
	EXPECT_EQ(0, stat_of(self->b, "enabled"));
	EXPECT_EQ(0, km_ctl(self->b, "enable"));
	EXPECT_EQ(1, stat_of(self->b, "enabled"));
	/* the port is taken while enabled */
	EXPECT_GT(0, bound_socket(self->b, XLB_FAMILY_INET, SOCK_DGRAM,
				  "0.0.0.0", 6080));
}

TEST_HARNESS_MAIN
