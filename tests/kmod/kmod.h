/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of the backend module (kmod/xlb_redirect.ko) share:
 * loading it, anonymous network namespaces held by file descriptors (they
 * vanish with the test's process, whatever failed), the module's per
 * namespace control file and counters, and a packet socket to send
 * crafted frames and watch what comes back.
 *
 * The tests run as root in the qemu guest of tests/vm/kmod.sh (Debian's
 * kernel 6.1, the one the module is built for), from the repository's
 * directory; XLB_KMOD names another module file.
 */
#ifndef XLB_TESTS_KMOD_H
#define XLB_TESTS_KMOD_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "mono.h"
#include "nl.h"

/*
 * Every case may take 300 s, not the harness's 30: the guest is emulated
 * (TCG) on a machine other jobs share, and a case that merely ran slow
 * must not count as failed.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

#define KM_MODULE	"xlb_redirect"
#define KM_KO_DEFAULT	"kmod/xlb_redirect.ko"
#define KM_PROC		"/proc/net/xlb_redirect"
#define KM_WAIT_MS	10000	/* what "soon" may take in a loaded emulated guest */

static inline void km_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Run a shell command; its exit status, or -1. */
static inline int __attribute__((format(printf, 1, 2)))
km_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

/* --- the module ----------------------------------------------------------- */

static inline bool km_loaded(void)
{
	struct stat st;

	return stat("/sys/module/" KM_MODULE, &st) == 0;
}

static inline const char *km_ko(void)
{
	const char *p = getenv("XLB_KMOD");

	return p && *p ? p : KM_KO_DEFAULT;
}

/* Load the module (and the tunnel helpers it links against) if needed. */
static inline int km_load(void)
{
	if (km_loaded())
		return 0;
	if (km_sh("modprobe -a udp_tunnel ip6_udp_tunnel"))
		return -1;
	return km_sh("insmod %s", km_ko()) ? -1 : 0;
}

static inline int km_unload(void)
{
	return km_sh("rmmod " KM_MODULE) ? -1 : 0;
}

/* --- namespaces ------------------------------------------------------------ */

static inline int km_ns_self(void)
{
	return open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
}

/* A fresh namespace with lo up; the caller is left inside it.  fd or -1. */
static inline int km_ns_new(void)
{
	int fd;

	if (unshare(CLONE_NEWNET))
		return -1;
	fd = km_ns_self();
	if (fd < 0)
		return -1;
	if (nl_up("lo", NULL) ||
	    nl_sysctl("net.ipv6.conf.all.accept_dad", "0") ||
	    nl_sysctl("net.ipv6.conf.default.accept_dad", "0") ||
	    nl_sysctl("net.ipv4.conf.all.rp_filter", "0") ||
	    nl_sysctl("net.ipv4.conf.default.rp_filter", "0")) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Run fn-like code in namespace ns: km_ns_enter() saves where we are,
 * km_ns_leave() goes back.  Not nested.
 */
static int km_ns_saved = -1;

static inline int km_ns_enter(int ns)
{
	km_ns_saved = km_ns_self();
	if (km_ns_saved < 0)
		return -1;
	if (setns(ns, CLONE_NEWNET)) {
		close(km_ns_saved);
		km_ns_saved = -1;
		return -1;
	}
	return 0;
}

static inline void km_ns_leave(void)
{
	if (km_ns_saved < 0)
		return;
	if (setns(km_ns_saved, CLONE_NEWNET))
		perror("setns back");
	close(km_ns_saved);
	km_ns_saved = -1;
}

/* A shell command inside ns. */
static inline int __attribute__((format(printf, 2, 3)))
km_ns_sh(int ns, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (km_ns_enter(ns))
		return -1;
	rc = km_sh("%s", cmd);
	km_ns_leave();
	return rc;
}

/* A socket that lives in ns. */
static inline int km_ns_socket(int ns, int domain, int type, int proto)
{
	int fd;

	if (km_ns_enter(ns))
		return -1;
	fd = socket(domain, type | SOCK_CLOEXEC, proto);
	km_ns_leave();
	return fd;
}

static inline int km_ifindex(int ns, const char *ifname)
{
	int idx;

	if (km_ns_enter(ns))
		return 0;
	idx = (int)if_nametoindex(ifname);
	km_ns_leave();
	return idx;
}

/*
 * Wait until ifname in ns is operationally up and sends: a veth's queue
 * starts with the kernel's link watch, up to a second after the carrier,
 * and frames sent before are dropped without an error.  The link watch
 * sets the operational state up (nl_operstate: IFF_RUNNING would be seen
 * before, while the state is still unknown) and then attaches the queue,
 * both under the rtnl lock; an ioctl that takes that lock (setting the
 * MTU the device has) returns only once the queue is there.
 */
static inline int km_wait_up(int ns, const char *ifname)
{
	long long end = (long long)xlb_mono_ms() + KM_WAIT_MS;
	struct ifreq ifr;
	int fd, up = 0;

	if (km_ns_enter(ns))
		return -1;
	while (!up && (long long)xlb_mono_ms() < end) {
		up = nl_operstate(ifname) == IF_OPER_UP;
		if (!up)
			km_sleep_ms(20);
	}
	km_ns_leave();
	fd = km_ns_socket(ns, AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (up && (ioctl(fd, SIOCGIFMTU, &ifr) || ioctl(fd, SIOCSIFMTU, &ifr)))
		up = 0;
	close(fd);
	return up ? 0 : -1;
}

/*
 * Wait until addr is local in ns: the kernel inserts an IPv6 address's
 * local route from a work item once the link is up (even with
 * IFA_F_NODAD), and until then frames to the address are not taken.
 */
static inline int km_wait_local(int ns, const char *addr)
{
	long long end = (long long)xlb_mono_ms() + KM_WAIT_MS;
	int local = 0;

	if (km_ns_enter(ns))
		return -1;
	while (!local && (long long)xlb_mono_ms() < end) {
		local = nl_route_type(addr) == RTN_LOCAL;
		if (!local)
			km_sleep_ms(20);
	}
	km_ns_leave();
	if (!local)
		fprintf(stderr, "%s is not local after %d ms\n", addr,
			KM_WAIT_MS);
	return local ? 0 : -1;
}

/* --- control file and counters -------------------------------------------- */

/* Write cmd to ns's /proc/net/xlb_redirect: 0 or -errno. */
static inline int km_ctl(int ns, const char *cmd)
{
	int fd, err = 0;

	if (km_ns_enter(ns))
		return -errno;
	fd = open(KM_PROC, O_WRONLY | O_CLOEXEC);
	km_ns_leave();
	if (fd < 0)
		return -errno;
	if (write(fd, cmd, strlen(cmd)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* One value of ns's /proc/net/xlb_redirect, or -1. */
static inline long long km_stat(int ns, const char *name)
{
	char line[128], key[64];
	long long v, found = -1;
	FILE *f;

	if (km_ns_enter(ns))
		return -1;
	f = fopen(KM_PROC, "re");
	km_ns_leave();
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lld", key, &v) == 2 &&
		    !strcmp(key, name)) {
			found = v;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Print file, as seen from ns, as "# " lines; with nonzero, only lines
 * whose last field is not 0 (for the long name-value files). */
static inline void km_dump_file(int ns, const char *tag, const char *file,
				bool nonzero)
{
	char line[1024];
	FILE *f;
	size_t n;

	if (km_ns_enter(ns))
		return;
	f = fopen(file, "re");
	km_ns_leave();
	if (!f) {
		printf("# %s %s: %s\n", tag, file, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		n = strlen(line);
		while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
			line[--n] = 0;
		if (nonzero && n > 1 && line[n - 1] == '0' &&
		    (line[n - 2] == ' ' || line[n - 2] == '\t'))
			continue;
		printf("# %s %s: %s\n", tag, file, line);
	}
	fclose(f);
}

/*
 * After a failed test: what the module counted in ns and where the stack
 * dropped, so that a frame lost under load says where it went.
 */
static inline void km_dump(int ns, const char *tag)
{
	km_dump_file(ns, tag, KM_PROC, true);
	km_dump_file(ns, tag, "/proc/net/arp", false);
	km_dump_file(ns, tag, "/proc/net/dev", false);
	km_dump_file(ns, tag, "/proc/net/snmp", false);
	km_dump_file(ns, tag, "/proc/net/snmp6", true);
	km_dump_file(ns, tag, "/proc/net/softnet_stat", false);
	fflush(stdout);
}

/* Wait until counter name in ns reaches want; the last value read. */
static inline long long km_stat_wait(int ns, const char *name, long long want)
{
	long long end = (long long)xlb_mono_ms() + KM_WAIT_MS, v;

	for (;;) {
		v = km_stat(ns, name);
		if (v >= want || (long long)xlb_mono_ms() >= end)
			return v;
		km_sleep_ms(10);
	}
}

/* --- frames ---------------------------------------------------------------- */

/* A packet socket on ifname in ns, for sending and watching frames. */
static inline int km_packet_socket(int ns, const char *ifname)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
	};
	int fd;

	sll.sll_ifindex = km_ifindex(ns, ifname);
	if (!sll.sll_ifindex)
		return -1;
	fd = km_ns_socket(ns, AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int km_send(int fd, const void *frame, size_t len)
{
	return send(fd, frame, len, 0) == (ssize_t)len ? 0 : -1;
}

/* Forget what the packet socket has seen so far. */
static inline void km_drain(int fd)
{
	unsigned char buf[2048];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/*
 * The next frame received (not one we sent) for which match() says yes,
 * within ms milliseconds: its length, or 0.
 */
static inline size_t km_recv_match(int fd, void *buf, size_t cap, int ms,
				   bool (*match)(const void *f, size_t len,
						 const void *arg),
				   const void *arg)
{
	long long end = (long long)xlb_mono_ms() + ms;
	struct sockaddr_ll from;
	socklen_t fl;
	ssize_t n;

	for (;;) {
		long long left = end - (long long)xlb_mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		fl = sizeof(from);
		n = recvfrom(fd, buf, cap, MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fl);
		if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (!match || match(buf, (size_t)n, arg))
			return (size_t)n;
	}
}

#endif /* XLB_TESTS_KMOD_H */
