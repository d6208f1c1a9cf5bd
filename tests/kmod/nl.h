/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Building test networks without starting programs: links, addresses,
 * routes over rtnetlink (libmnl), sysctls through /proc/sys, offloads
 * through the ethtool ioctl.  In the qemu guest (software emulation) every
 * program started costs about half a second; a namespace set up this way
 * takes milliseconds.
 *
 * Everything acts on the network namespace the caller is in; 0 or -1
 * (errno set, and a line on stderr saying what failed).
 */
#ifndef XLB_TESTS_NL_H
#define XLB_TESTS_NL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One request, answered by an ACK or an error. */
static inline int nl_talk(struct nlmsghdr *nlh, const char *what)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	unsigned int seq = (unsigned int)time(NULL), port;
	int ret = -1;
	ssize_t n;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		goto out;
	port = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto out;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n > 0)
		ret = mnl_cb_run(buf, (size_t)n, seq, port, NULL, NULL) < 0 ?
		      -1 : 0;
out:
	if (ret)
		fprintf(stderr, "netlink: %s: %s\n", what, strerror(errno));
	if (nl)
		mnl_socket_close(nl);
	return ret;
}

static inline int nl_mac(const char *s, unsigned char mac[6])
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
		      &mac[2], &mac[3], &mac[4], &mac[5]) == 6 ? 0 : -1;
}

static inline struct nlmsghdr *nl_link_msg(char *buf, int type, int flags,
					   int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	return nlh;
}

/*
 * A veth pair: name here, peer in the namespace peer_ns (a descriptor; -1:
 * here too), each with its MAC (NULL: random).
 */
static inline int nl_veth(const char *name, const char *mac, const char *peer,
			  const char *peer_mac, int peer_ns)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlattr *li, *data, *pi;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	unsigned char m[6];

	nlh = nl_link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (mac && !nl_mac(mac, m))
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, m);
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	pi = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	if (peer_mac && !nl_mac(peer_mac, m))
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, m);
	if (peer_ns >= 0)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (__u32)peer_ns);
	mnl_attr_nest_end(nlh, pi);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, li);
	return nl_talk(nlh, name);
}

static inline int nl_bridge(const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct nlattr *li;

	nlh = nl_link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(nlh, li);
	return nl_talk(nlh, name);
}

/* Up, and into bridge master unless NULL. */
static inline int nl_up(const char *name, const char *master)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int idx = (int)if_nametoindex(name), midx = 0;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;

	if (master)
		midx = (int)if_nametoindex(master);
	if (!idx || (master && !midx)) {
		fprintf(stderr, "netlink: no link %s\n", idx ? master : name);
		return -1;
	}
	nlh = nl_link_msg(buf, RTM_NEWLINK, 0, idx);
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = IFF_UP;
	if (midx)
		mnl_attr_put_u32(nlh, IFLA_MASTER, (__u32)midx);
	return nl_talk(nlh, name);
}

/* addr/plen on name ("10.0.0.1", 24); IPv6 without DAD. */
static inline int nl_addr(const char *name, const char *addr, int plen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	unsigned char a[16];

	if (inet_pton(fam, addr, a) != 1)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)fam;
	ifa->ifa_prefixlen = (unsigned char)plen;
	ifa->ifa_flags = fam == AF_INET6 ? IFA_F_NODAD : 0;
	ifa->ifa_index = if_nametoindex(name);
	mnl_attr_put(nlh, IFA_LOCAL, fam == AF_INET ? 4 : 16, a);
	mnl_attr_put(nlh, IFA_ADDRESS, fam == AF_INET ? 4 : 16, a);
	return nl_talk(nlh, addr);
}

/* A route to dst/plen via gw. */
static inline int nl_route(const char *dst, int plen, const char *gw)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int fam = strchr(dst, ':') ? AF_INET6 : AF_INET;
	unsigned char d[16], g[16];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	if (inet_pton(fam, dst, d) != 1 || inet_pton(fam, gw, g) != 1)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)fam;
	rtm->rtm_dst_len = (unsigned char)plen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, fam == AF_INET ? 4 : 16, d);
	mnl_attr_put(nlh, RTA_GATEWAY, fam == AF_INET ? 4 : 16, g);
	return nl_talk(nlh, dst);
}

/*
 * One request whose answer is one message (not an ACK): the answer's
 * length in buf (the request's buffer, MNL_SOCKET_BUFFER_SIZE), or -1.
 */
static inline ssize_t nl_ask(char *buf, struct nlmsghdr *nlh)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	ssize_t n = -1;

	nlh->nlmsg_seq = (unsigned int)time(NULL);
	if (!nl)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == 0 &&
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) >= 0)
		n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE);
	mnl_socket_close(nl);
	nlh = (struct nlmsghdr *)buf;
	return n >= (ssize_t)sizeof(*nlh) && mnl_nlmsg_ok(nlh, (int)n) ? n : -1;
}

/* The type of the route the kernel picks for dst (RTN_LOCAL for an
 * address this host takes), or -1. */
static inline int nl_route_type(const char *dst)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int fam = strchr(dst, ':') ? AF_INET6 : AF_INET;
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	unsigned char d[16];

	if (inet_pton(fam, dst, d) != 1)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)fam;
	rtm->rtm_dst_len = fam == AF_INET ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, fam == AF_INET ? 4 : 16, d);
	if (nl_ask(buf, nlh) < (ssize_t)(sizeof(*nlh) + sizeof(*rtm)) ||
	    nlh->nlmsg_type != RTM_NEWROUTE)
		return -1;
	return ((struct rtmsg *)mnl_nlmsg_get_payload(nlh))->rtm_type;
}

/*
 * The operational state of link name (IF_OPER_UP, ...; linux/if.h), or
 * -1.  Not IFF_RUNNING: the kernel reports that for IF_OPER_UNKNOWN too,
 * the state of a new veth until the link watch has seen its carrier, and
 * until then its queue drops every frame without an error.
 */
static inline int nl_operstate(const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct nlattr *a;
	int state = -1;

	nlh = nl_link_msg(buf, RTM_GETLINK, NLM_F_REQUEST, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (nl_ask(buf, nlh) < 0 || nlh->nlmsg_type != RTM_NEWLINK)
		return -1;
	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg))
		if (mnl_attr_get_type(a) == IFLA_OPERSTATE)
			state = mnl_attr_get_u8(a);
	return state;
}

/* echo value > /proc/sys/<key with dots as slashes> */
static inline int nl_sysctl(const char *key, const char *value)
{
	char path[256];
	size_t i;
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/sys/%s", key);
	for (i = strlen("/proc/sys/"); path[i]; i++)
		if (path[i] == '.')
			path[i] = '/';
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "sysctl %s: %s\n", key, strerror(errno));
		return -1;
	}
	ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	if (!ok)
		fprintf(stderr, "sysctl %s=%s: %s\n", key, value,
			strerror(errno));
	close(fd);
	return ok ? 0 : -1;
}

/* An ethtool on/off setting (ETHTOOL_STXCSUM, ETHTOOL_SGRO, ...). */
static inline int nl_ethtool(const char *name, __u32 cmd, __u32 on)
{
	struct ethtool_value ev = { .cmd = cmd, .data = on };
	struct ifreq ifr;
	int fd, ret;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&ev;
	ret = ioctl(fd, SIOCETHTOOL, &ifr);
	if (ret)
		fprintf(stderr, "ethtool %s 0x%x: %s\n", name, cmd,
			strerror(errno));
	close(fd);
	return ret ? -1 : 0;
}

#endif /* XLB_TESTS_NL_H */
