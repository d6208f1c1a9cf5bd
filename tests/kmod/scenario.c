// SPDX-License-Identifier: GPL-2.0
/*
 * Why xlb_redirect exists (docs/design.md contract 6), end to end: a client,
 * one LB running xlb's XDP data path (bpf/xlb.bpf.c, configured through
 * libxlb as xlbd would), and backends with a real TCP echo server on the
 * VIP, joined by a bridge:
 *
 *   c   eth0 02:09:00:00:00:01 10.9.0.1     route VIP via 10.9.0.10
 *   lb  eth0 02:09:00:00:00:10 10.9.0.10    XDP: VIP 198.51.100.10:80/tcp,
 *                                           Maglev, GUE, fixed next hops
 *   bN  eth0 02:09:00:00:00:2N 10.9.0.2N    VIP on lo, echo server,
 *                                           N = 1..4
 *   sw  br0 with every peer end (s-lb runs an XDP_PASS program, so the
 *       LB's XDP_TX frames are picked up)
 *
 * NCONN long-lived connections are opened while the table holds b1..b3;
 * then b4 joins (about a quarter of the slots change primary) and every
 * connection keeps sending.  Without LB state for the flows (a stateless
 * VIP, or the connection table flushed), a moved connection's packets
 * reach b4, which does not know it:
 *   - with xlb_redirect on the backends, b4 forwards them to the second hop
 *     of the GUE hop list, the old backend, and the connection lives;
 *   - with plain decapsulation (build/xlb_decap.bpf.o in XDP) b4's stack
 *     answers with a reset and the connection breaks.
 * Expectations come from libxlb's xlb_explain_pick on the two tables: a
 * connection "moved" when its primary changed, and the module can save it
 * when the new table's secondary is its old backend.  Maglev's secondary is
 * the old owner for nearly every slot a join takes, not all (about 0.2% of
 * the slots here): such a connection goes to a second hop that does not
 * know it either, and breaks.  The client's ports are fixed (20000 + i),
 * so the flows, and the figures, are the same in every run; none of these
 * 200 flows is in such a slot.  Each variant prints one "# SCENARIO" line.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "kselftest_harness.h"
#include "kmod.h"
#include "attach.h"
#include "datapath.h"
#include "explain.h"
#include "lookup_table.h"
#include "xlb.skel.h"
#include "xlb_decap.skel.h"

#define NCONN		200
#define NBACKENDS	4
#define ROUNDS		3	/* of sending on every connection, after */
#define ROUND_MS	15000	/* for every echo of a round */
#define VIP		"198.51.100.10"
#define VIP_PORT	80
#define CLIENT		"10.9.0.1"
#define CLIENT_PORT	20000	/* connection i from port 20000 + i */
#define LB_ADDR		"10.9.0.10"
#define TABLE_M		65537
#define KEY_K0		0x7363656e6172696fULL	/* "scenario" */
#define KEY_K1		0x7365636f6e646868ULL

static const __u8 lb_mac[6] = { 2, 9, 0, 0, 0, 0x10 };

FIXTURE(scn) {
	int home, sw, c, lb, b[NBACKENDS];
	struct xlb_bpf *skel;
	struct xdp_program *lbprog;
	struct xlb_dp dp;
	bool dp_open;
	struct xlb_decap_bpf *decap;
	struct xdp_program *decprog;
	bool lb_attached, dec_attached[NBACKENDS];
	struct xlb_table old, cur;
	int lsn[NBACKENDS];
	int conn[NCONN];
	bool broken[NCONN];
	pthread_t server;
	bool serving;
	atomic_bool stop;
};

FIXTURE_VARIANT(scn) {
	const char *name;
	bool module;		/* xlb_redirect, else xlb_decap.bpf.o */
	bool stateless;		/* stateless VIP, else flush the table */
};

FIXTURE_VARIANT_ADD(scn, stateless_redirect) {
	.name = "stateless VIP, xlb_redirect on the backends",
	.module = true, .stateless = true,
};

FIXTURE_VARIANT_ADD(scn, stateless_plain_decap) {
	.name = "stateless VIP, plain decap (xlb_decap.bpf.o) on the backends",
	.module = false, .stateless = true,
};

FIXTURE_VARIANT_ADD(scn, flushed_redirect) {
	.name = "connection table flushed, xlb_redirect on the backends",
	.module = true, .stateless = false,
};

FIXTURE_VARIANT_ADD(scn, flushed_plain_decap) {
	.name = "connection table flushed, plain decap (xlb_decap.bpf.o) on the backends",
	.module = false, .stateless = false,
};

static long long t0;

/* Where the time goes, under software emulation. */
static void step(const char *what)
{
	if (!t0)
		t0 = (long long)xlb_mono_ms();
	fprintf(stderr, "# %6.1f s  %s\n", ((long long)xlb_mono_ms() - t0) / 1000.0, what);
}

static void be_addr(int i, char *s, size_t n)
{
	snprintf(s, n, "10.9.0.%d", 21 + i);
}

static void be_mac(int i, char *s, size_t n)
{
	snprintf(s, n, "02:09:00:00:00:%02x", 0x21 + i);
}

/* --- the network ------------------------------------------------------------ */

/*
 * XDP_TX out of a veth reaches the peer only when the peer runs NAPI, and
 * on 6.1 only an XDP program there makes the sender kick it: give the
 * LB's bridge port a program that passes everything.
 */
static int xdp_pass(const char *ifname)
{
	const struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd, ret;

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xlb_test_pass", "GPL", prog,
			   2, NULL);
	if (fd < 0)
		return -1;
	ret = bpf_xdp_attach((int)if_nametoindex(ifname), fd,
			     XDP_FLAGS_DRV_MODE, NULL);
	close(fd);
	return ret ? -1 : 0;
}

/* A port of br0 in sw, its peer "eth0" in ns with mac and addr/24. */
static int port(FIXTURE_DATA(scn) *self, const char *sname, int ns,
		const char *mac, const char *addr)
{
	if (setns(self->sw, CLONE_NEWNET) ||
	    nl_veth(sname, NULL, "eth0", mac, ns) || nl_up(sname, "br0"))
		return -1;
	if (setns(ns, CLONE_NEWNET) || nl_up("eth0", NULL) ||
	    nl_addr("eth0", addr, 24))
		return -1;
	return setns(self->home, CLONE_NEWNET);
}

static int network(FIXTURE_DATA(scn) *self)
{
	char name[16], addr[32], mac[32];
	int i;

	if (setns(self->sw, CLONE_NEWNET) || nl_bridge("br0") ||
	    nl_up("br0", NULL))
		return -1;
	if (port(self, "s-c", self->c, "02:09:00:00:00:01", CLIENT) ||
	    port(self, "s-lb", self->lb, "02:09:00:00:00:10", LB_ADDR))
		return -1;
	for (i = 0; i < NBACKENDS; i++) {
		snprintf(name, sizeof(name), "s-b%d", i + 1);
		be_addr(i, addr, sizeof(addr));
		be_mac(i, mac, sizeof(mac));
		if (port(self, name, self->b[i], mac, addr))
			return -1;
		/* the VIP is theirs; replies go straight to the client */
		if (setns(self->b[i], CLONE_NEWNET) ||
		    nl_addr("lo", VIP, 32) ||
		    nl_ethtool("eth0", ETHTOOL_STXCSUM, 0))
			return -1;
	}
	if (setns(self->sw, CLONE_NEWNET) || xdp_pass("s-lb"))
		return -1;
	if (setns(self->c, CLONE_NEWNET) || nl_route(VIP, 32, LB_ADDR) ||
	    nl_ethtool("eth0", ETHTOOL_STXCSUM, 0))
		return -1;
	if (setns(self->home, CLONE_NEWNET))
		return -1;
	if (km_wait_up(self->c, "eth0") || km_wait_up(self->lb, "eth0"))
		return -1;
	for (i = 0; i < NBACKENDS; i++)
		if (km_wait_up(self->b[i], "eth0"))
			return -1;
	return 0;
}

/* --- the LB ------------------------------------------------------------------ */

static int table(FIXTURE_DATA(scn) *self, int n, struct xlb_table *t)
{
	struct xlb_table_params p = {
		.algo = XLB_ALGO_MAGLEV, .size = TABLE_M,
		.vnodes = XLB_RING_VNODES_DEFAULT,
		.key = { KEY_K0, KEY_K1 },
	};
	struct xlb_backend_spec spec[NBACKENDS];
	char names[NBACKENDS][16];
	struct xlb_err err;
	int i;

	for (i = 0; i < n; i++) {
		be_addr(i, names[i], sizeof(names[i]));
		spec[i] = (struct xlb_backend_spec){
			.name = names[i], .weight = 1, .id = (__u16)(i + 1),
			.state = XLB_BACKEND_ACTIVE,
		};
	}
	if (xlb_table_build(t, &p, spec, (size_t)n, &err)) {
		fprintf(stderr, "# xlb_table_build: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int publish(FIXTURE_DATA(scn) *self, const struct xlb_table *t)
{
	struct xlb_err err;

	if (xlb_dp_table_publish(&self->dp, 0, t, &err)) {
		fprintf(stderr, "# xlb_dp_table_publish: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int lb(FIXTURE_DATA(scn) *self, bool stateless)
{
	struct xlb_vip_key key = { .port = htons(VIP_PORT),
				   .proto = IPPROTO_TCP,
				   .family = XLB_FAMILY_INET };
	struct xlb_vip vip = { .id = 0, .hash_mode = XLB_HASH_5TUPLE };
	struct xlb_config cfg;
	struct xlb_err err;
	char addr[32], mac[32];
	int i, ret = -1;

	self->skel = xlb_bpf__open();
	if (!self->skel)
		return -1;
	if (setns(self->lb, CLONE_NEWNET))
		return -1;
	if (xlb_link_attach(&self->lbprog, self->skel->obj,
			    (int)if_nametoindex("eth0"), 0, &err)) {
		fprintf(stderr, "# attach: %s\n", err.msg);
		goto out;
	}
	self->lb_attached = true;
	if (xlb_dp_from_obj(&self->dp, self->skel->obj, &err)) {
		fprintf(stderr, "# xlb_dp_from_obj: %s\n", err.msg);
		goto out;
	}
	self->dp_open = true;
	xlb_config_defaults(&cfg);
	cfg.key.k0 = KEY_K0;
	cfg.key.k1 = KEY_K1;
	inet_pton(AF_INET, LB_ADDR, &cfg.src4);
	if (xlb_dp_config_set(&self->dp, &cfg))
		goto out;
	for (i = 0; i < NBACKENDS; i++) {
		struct xlb_backend b = {
			.family = XLB_FAMILY_INET, .encap = XLB_ENCAP_GUE,
			.flags = XLB_BE_F_VALID | XLB_BE_F_NEXTHOP,
		};

		be_addr(i, addr, sizeof(addr));
		be_mac(i, mac, sizeof(mac));
		inet_pton(AF_INET, addr, b.addr);
		nl_mac(mac, b.dmac);
		memcpy(b.smac, lb_mac, 6);
		if (xlb_dp_backend_set(&self->dp, (__u16)(i + 1), &b, &err)) {
			fprintf(stderr, "# backend %d: %s\n", i + 1, err.msg);
			goto out;
		}
	}
	if (table(self, NBACKENDS - 1, &self->old) || publish(self, &self->old))
		goto out;
	inet_pton(AF_INET, VIP, key.addr);
	vip.flags = stateless ? XLB_VIP_F_STATELESS : 0;
	if (xlb_dp_vip_set(&self->dp, &key, &vip, &err)) {
		fprintf(stderr, "# vip: %s\n", err.msg);
		goto out;
	}
	ret = 0;
out:
	if (setns(self->home, CLONE_NEWNET))
		ret = -1;
	return ret;
}

/* --- the backends --------------------------------------------------------------- */

static int backends(FIXTURE_DATA(scn) *self, bool module)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(VIP_PORT) };
	struct xlb_err err;
	int i, one = 1;

	inet_pton(AF_INET, VIP, &sin.sin_addr);
	if (!module) {
		self->decap = xlb_decap_bpf__open();
		if (!self->decap)
			return -1;
	}
	for (i = 0; i < NBACKENDS; i++) {
		if (module) {
			/* the LB, and the backends that forward */
			if (km_ctl(self->b[i], "allow 10.9.0.0/24\nenable"))
				return -1;
		} else {
			if (setns(self->b[i], CLONE_NEWNET))
				return -1;
			if (xlb_link_attach(&self->decprog, self->decap->obj,
					    (int)if_nametoindex("eth0"), 0,
					    &err)) {
				fprintf(stderr, "# decap: %s\n", err.msg);
				return -1;
			}
			self->dec_attached[i] = true;
			if (setns(self->home, CLONE_NEWNET))
				return -1;
		}
		self->lsn[i] = km_ns_socket(self->b[i], AF_INET,
					    SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (self->lsn[i] < 0)
			return -1;
		setsockopt(self->lsn[i], SOL_SOCKET, SO_REUSEADDR, &one,
			   sizeof(one));
		if (bind(self->lsn[i], (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(self->lsn[i], NCONN))
			return -1;
	}
	return 0;
}

/* Echo everything on every backend until told to stop. */
static void *serve(void *arg)
{
	FIXTURE_DATA(scn) *self = arg;
	struct epoll_event ev, evs[64];
	char buf[4096];
	int ep, i, n, fd;
	ssize_t r;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return NULL;
	for (i = 0; i < NBACKENDS; i++) {
		ev.events = EPOLLIN;
		ev.data.u64 = (__u64)self->lsn[i] << 1 | 1;
		epoll_ctl(ep, EPOLL_CTL_ADD, self->lsn[i], &ev);
	}
	while (!atomic_load(&self->stop)) {
		n = epoll_wait(ep, evs, 64, 50);
		for (i = 0; i < n; i++) {
			fd = (int)(evs[i].data.u64 >> 1);
			if (evs[i].data.u64 & 1) {
				int c;

				while ((c = accept4(fd, NULL, NULL,
						    SOCK_NONBLOCK |
						    SOCK_CLOEXEC)) >= 0) {
					ev.events = EPOLLIN;
					ev.data.u64 = (__u64)c << 1;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			r = read(fd, buf, sizeof(buf));
			if (r > 0) {
				if (write(fd, buf, (size_t)r) != r)
					close(fd);
			} else if (r == 0 || errno != EAGAIN) {
				close(fd);
			}
		}
	}
	close(ep);
	return NULL;
}

/* What the LB and the backends counted: for a failure's log. */
static void report(FIXTURE_DATA(scn) *self)
{
	__u64 act[XLB_ACTIONS] = { 0 }, ev[XLB_EV_MAX] = { 0 };
	int i;

	if (self->dp_open && !xlb_dp_actions(&self->dp, act) &&
	    !xlb_dp_events(&self->dp, ev))
		fprintf(stderr, "# LB: drop %llu pass %llu tx %llu redirect "
			"%llu; malformed %llu no_backend %llu no_route %llu\n",
			(unsigned long long)act[1], (unsigned long long)act[2],
			(unsigned long long)act[3], (unsigned long long)act[4],
			(unsigned long long)ev[XLB_EV_MALFORMED],
			(unsigned long long)ev[XLB_EV_NO_BACKEND],
			(unsigned long long)ev[XLB_EV_NO_ROUTE]);
	for (i = 0; i < NBACKENDS; i++)
		fprintf(stderr, "# b%d: received %lld delivered %lld "
			"forwarded %lld malformed %lld\n", i + 1,
			km_stat(self->b[i], "received"),
			km_stat(self->b[i], "delivered"),
			km_stat(self->b[i], "forwarded"),
			km_stat(self->b[i], "malformed"));
}

/* --- the client --------------------------------------------------------------- */

static int connect_all(FIXTURE_DATA(scn) *self)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(VIP_PORT) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	long long end = (long long)xlb_mono_ms() + 60000;
	int i, done = 0, err;
	socklen_t el;

	inet_pton(AF_INET, VIP, &sin.sin_addr);
	inet_pton(AF_INET, CLIENT, &me.sin_addr);
	for (i = 0; i < NCONN; i++) {
		self->conn[i] = km_ns_socket(self->c, AF_INET,
					     SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (self->conn[i] < 0)
			return -1;
		me.sin_port = htons(CLIENT_PORT + i);
		if (bind(self->conn[i], (struct sockaddr *)&me, sizeof(me)))
			return -1;
		if (connect(self->conn[i], (struct sockaddr *)&sin,
			    sizeof(sin)) && errno != EINPROGRESS)
			return -1;
	}
	while (done < NCONN && (long long)xlb_mono_ms() < end) {
		struct pollfd p[NCONN];

		for (i = 0; i < NCONN; i++)
			p[i] = (struct pollfd){ self->conn[i], POLLOUT, 0 };
		if (poll(p, NCONN, 1000) < 0)
			return -1;
		for (i = 0, done = 0; i < NCONN; i++) {
			if (!(p[i].revents & (POLLOUT | POLLERR | POLLHUP)))
				continue;
			el = sizeof(err);
			getsockopt(self->conn[i], SOL_SOCKET, SO_ERROR, &err,
				   &el);
			if (err) {
				fprintf(stderr, "# connection %d: %s\n", i,
					strerror(err));
				report(self);
				return -1;
			}
			done++;
		}
	}
	if (done != NCONN) {
		fprintf(stderr, "# %d of %d connected\n", done, NCONN);
		report(self);
	}
	return done == NCONN ? 0 : -1;
}

/*
 * One round: a message on every live connection, then its echo.  A
 * connection that errs, closes or stays silent is broken from then on.
 * Returns how many broke in this round.
 */
static int round_trip(FIXTURE_DATA(scn) *self, int r)
{
	char msg[NCONN][32], got[NCONN][32];
	size_t len[NCONN], have[NCONN] = { 0 };
	long long end = (long long)xlb_mono_ms() + ROUND_MS;
	int i, waiting = 0, broke = 0;

	for (i = 0; i < NCONN; i++) {
		if (self->broken[i])
			continue;
		len[i] = (size_t)snprintf(msg[i], sizeof(msg[i]),
					  "round %d conn %d\n", r, i);
		if (send(self->conn[i], msg[i], len[i], MSG_NOSIGNAL) !=
		    (ssize_t)len[i]) {
			self->broken[i] = true;
			broke++;
			continue;
		}
		waiting++;
	}
	while (waiting && (long long)xlb_mono_ms() < end) {
		struct pollfd p[NCONN];
		int map[NCONN], np = 0;

		for (i = 0; i < NCONN; i++) {
			if (self->broken[i] || have[i] == len[i])
				continue;
			map[np] = i;
			p[np++] = (struct pollfd){ self->conn[i], POLLIN, 0 };
		}
		if (poll(p, (nfds_t)np, 200) < 0)
			break;
		for (int k = 0; k < np; k++) {
			ssize_t n;

			if (!p[k].revents)
				continue;
			i = map[k];
			n = recv(self->conn[i], got[i] + have[i],
				 len[i] - have[i], MSG_DONTWAIT);
			if (n > 0) {
				have[i] += (size_t)n;
				if (have[i] == len[i]) {
					waiting--;
					if (memcmp(got[i], msg[i], len[i])) {
						self->broken[i] = true;
						broke++;
					}
				}
			} else if (n == 0 || errno != EAGAIN) {
				self->broken[i] = true;
				broke++;
				waiting--;
			}
		}
	}
	for (i = 0; i < NCONN; i++) {
		if (!self->broken[i] && have[i] != len[i]) {
			self->broken[i] = true;	/* silent */
			broke++;
		}
	}
	return broke;
}

/* What the two tables say about connection i: moved, and saved by hop 2. */
static void fate(FIXTURE_DATA(scn) *self, int i, bool *moved, bool *saveable)
{
	struct xlb_hash_key key = { KEY_K0, KEY_K1 };
	struct sockaddr_in me;
	socklen_t ml = sizeof(me);
	struct xlb_pick a, b;
	struct xlb_flow f;

	getsockname(self->conn[i], (struct sockaddr *)&me, &ml);
	memset(&f, 0, sizeof(f));
	f.family = XLB_FAMILY_INET;
	f.proto = IPPROTO_TCP;
	f.src.v4 = me.sin_addr.s_addr;
	inet_pton(AF_INET, VIP, &f.dst.v4);
	f.sport = me.sin_port;
	f.dport = htons(VIP_PORT);
	xlb_explain_pick(&key, XLB_HASH_5TUPLE, &self->old, &f, &a);
	xlb_explain_pick(&key, XLB_HASH_5TUPLE, &self->cur, &f, &b);
	*moved = a.primary != b.primary;
	*saveable = *moved && b.secondary == a.primary;
}

FIXTURE_SETUP(scn)
{
	int i;

	self->dp_open = false;
	self->serving = false;
	self->lbprog = self->decprog = NULL;
	self->lb_attached = false;
	memset(self->dec_attached, 0, sizeof(self->dec_attached));
	self->skel = NULL;
	self->decap = NULL;
	memset(&self->old, 0, sizeof(self->old));
	memset(&self->cur, 0, sizeof(self->cur));
	memset(self->broken, 0, sizeof(self->broken));
	for (i = 0; i < NCONN; i++)
		self->conn[i] = -1;
	for (i = 0; i < NBACKENDS; i++)
		self->lsn[i] = self->b[i] = -1;
	atomic_store(&self->stop, false);
	libbpf_set_print(NULL);
	libxdp_set_print(NULL);

	if (variant->module)
		ASSERT_EQ(0, km_load()) TH_LOG("cannot load %s", km_ko());
	self->home = km_ns_self();
	ASSERT_LE(0, self->home);
	self->sw = km_ns_new();
	ASSERT_LE(0, self->sw) TH_LOG("unshare: needs root");
	self->c = km_ns_new();
	self->lb = km_ns_new();
	ASSERT_LE(0, self->c);
	ASSERT_LE(0, self->lb);
	for (i = 0; i < NBACKENDS; i++) {
		self->b[i] = km_ns_new();
		ASSERT_LE(0, self->b[i]);
	}
	ASSERT_EQ(0, setns(self->home, CLONE_NEWNET));
	step("namespaces");
	ASSERT_EQ(0, network(self));
	step("network");
	ASSERT_EQ(0, lb(self, variant->stateless));
	step("LB data path loaded and configured");
	ASSERT_EQ(0, backends(self, variant->module));
	step("backends");
	ASSERT_EQ(0, pthread_create(&self->server, NULL, serve, self));
	self->serving = true;
}

/*
 * Detach prog from eth0 of namespace ns.  A namespace that goes away with
 * a program still attached leaves libxdp's dispatcher pinned in bpffs, and
 * with it the program and its maps: 140 MB of connection table per case,
 * which runs a 1 GB guest out of memory after a few.
 */
static void detach_in(int home, int ns, struct xdp_program *prog)
{
	struct xlb_err err;

	if (setns(ns, CLONE_NEWNET))
		return;
	if (xlb_link_detach(prog, (int)if_nametoindex("eth0"), 0, &err))
		fprintf(stderr, "# detach: %s\n", err.msg);
	if (setns(home, CLONE_NEWNET))
		fprintf(stderr, "# cannot return to the first namespace\n");
}

FIXTURE_TEARDOWN(scn)
{
	int i;

	if (self->serving) {
		atomic_store(&self->stop, true);
		pthread_join(self->server, NULL);
	}
	if (setns(self->home, CLONE_NEWNET))
		TH_LOG("cannot return to the first namespace");
	if (self->lb_attached)
		detach_in(self->home, self->lb, self->lbprog);
	for (i = 0; i < NBACKENDS; i++)
		if (self->dec_attached[i])
			detach_in(self->home, self->b[i], self->decprog);
	for (i = 0; i < NCONN; i++)
		if (self->conn[i] >= 0)
			close(self->conn[i]);
	for (i = 0; i < NBACKENDS; i++) {
		if (self->lsn[i] >= 0)
			close(self->lsn[i]);
		if (self->b[i] >= 0)
			close(self->b[i]);
	}
	if (self->dp_open)
		xlb_dp_close(&self->dp);
	if (self->lbprog)
		xdp_program__close(self->lbprog);
	if (self->decprog)
		xdp_program__close(self->decprog);
	xlb_bpf__destroy(self->skel);
	xlb_decap_bpf__destroy(self->decap);
	xlb_table_free(&self->old);
	xlb_table_free(&self->cur);
	close(self->sw);
	close(self->c);
	close(self->lb);
	close(self->home);
}

TEST_F_TIMEOUT(scn, connections_survive_a_new_backend, 600)
{
	int i, broken = 0, moved = 0, saveable = 0, unmoved_broken = 0;
	int unsaveable_broken = 0, r;
	long long fwd = 0;

	ASSERT_EQ(0, connect_all(self)) TH_LOG("opening %d connections",
					       NCONN);
	step("connected");
	ASSERT_EQ(0, round_trip(self, 0)) TH_LOG("before the change");
	step("first round");

	/* b4 joins */
	ASSERT_EQ(0, table(self, NBACKENDS, &self->cur));
	ASSERT_EQ(0, publish(self, &self->cur));
	if (!variant->stateless)
		ASSERT_EQ(0, xlb_dp_ct_flush(&self->dp));
	step("fourth backend published");
	for (r = 1; r <= ROUNDS; r++)
		broken += round_trip(self, r);
	step("rounds after the change");

	for (i = 0; i < NCONN; i++) {
		bool mv, sv;

		fate(self, i, &mv, &sv);
		moved += mv;
		saveable += sv;
		unmoved_broken += !mv && self->broken[i];
		unsaveable_broken += mv && !sv && self->broken[i];
	}
	if (variant->module)
		fwd = km_stat(self->b[NBACKENDS - 1], "forwarded");
	if (variant->module)
		printf("# SCENARIO %s: %d of %d connections broken after a "
		       "fourth backend joined (%d moved to another backend, "
		       "%d with their old backend as second hop; the new one "
		       "forwarded %lld packets)\n", variant->name, broken,
		       NCONN, moved, saveable, fwd);
	else
		printf("# SCENARIO %s: %d of %d connections broken after a "
		       "fourth backend joined (%d moved to another backend)\n",
		       variant->name, broken, NCONN, moved);
	fflush(stdout);

	EXPECT_LT(0, moved);
	EXPECT_EQ(0, unmoved_broken);
	if (variant->module) {
		/* all that the hop list can save are saved */
		EXPECT_EQ(broken, unsaveable_broken);
		EXPECT_EQ(moved - saveable, broken);
		EXPECT_LT(0, fwd);
	} else {
		/* every moved connection breaks */
		EXPECT_EQ(moved, broken);
	}
}

TEST_HARNESS_MAIN
