// SPDX-License-Identifier: GPL-2.0
/*
 * What xlb-backend asks of the kernel's network configuration, in the
 * network namespace it runs in: addresses and local routes (rtnetlink),
 * whether an address is local (a route lookup), interface addresses, and
 * sysctls under /proc/sys/net.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "backend.h"

static struct mnl_socket *nl;
static unsigned int nl_seq;

int xb_nl_open(void)
{
	int one = 1;

	if (nl)
		return 0;
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		xb_err("cannot open rtnetlink: %s", strerror(errno));
		if (nl)
			mnl_socket_close(nl);
		nl = NULL;
		return -1;
	}
	/* the kernel's reason for a refusal, when it gives one */
	mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof(one));
	nl_seq = (unsigned int)time(NULL);
	return 0;
}

void xb_nl_close(void)
{
	if (nl)
		mnl_socket_close(nl);
	nl = NULL;
}

struct reply {
	int type;		/* route lookups: rtm_type */
	int found;
};

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct reply *r = data;
	const struct rtmsg *rtm;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return MNL_CB_OK;
	rtm = mnl_nlmsg_get_payload(nlh);
	r->type = rtm->rtm_type;
	r->found = 1;
	return MNL_CB_OK;
}

/* Send one request, read until its answer; 0 or -errno. */
static int nl_talk(struct nlmsghdr *req, struct reply *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int portid = mnl_socket_get_portid(nl);
	ssize_t len;
	int ret;

	req->nlmsg_seq = ++nl_seq;
	if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (len < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)len, req->nlmsg_seq, portid,
				 route_cb, r);
		if (ret < 0)
			return -errno;
		if (ret == MNL_CB_STOP)
			return 0;
		/* a GETROUTE answer carries no ACK after the route */
		if (r && r->found)
			return 0;
	}
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

int xb_addr(bool add, const struct xb_prefix *p, int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;

	if (xb_nl_open())
		return -EIO;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (__u8)p->family;
	ifa->ifa_prefixlen = (__u8)p->len;
	ifa->ifa_scope = RT_SCOPE_HOST;
	ifa->ifa_index = (unsigned int)ifindex;
	ifa->ifa_flags = p->family == AF_INET6 ? IFA_F_NODAD : 0;
	mnl_attr_put(nlh, IFA_LOCAL, addr_len(p->family), p->addr);
	mnl_attr_put(nlh, IFA_ADDRESS, addr_len(p->family), p->addr);
	return nl_talk(nlh, NULL);
}

int xb_local_route(bool add, const struct xb_prefix *p, int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	if (xb_nl_open())
		return -EIO;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (__u8)p->family;
	rtm->rtm_dst_len = (__u8)p->len;
	rtm->rtm_table = RT_TABLE_LOCAL;	/* where source lookups look */
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_scope = RT_SCOPE_HOST;
	rtm->rtm_type = RTN_LOCAL;
	mnl_attr_put(nlh, RTA_DST, addr_len(p->family), p->addr);
	mnl_attr_put_u32(nlh, RTA_OIF, (__u32)ifindex);
	return nl_talk(nlh, NULL);
}

int xb_is_local(int family, const __u8 *addr)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct reply r = { 0 };
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int err;

	if (xb_nl_open())
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (__u8)family;
	rtm->rtm_dst_len = family == AF_INET ? 32 : 128;
	mnl_attr_put(nlh, RTA_DST, addr_len(family), addr);
	err = nl_talk(nlh, &r);
	if (err == -ENETUNREACH || err == -EHOSTUNREACH)
		return 0;	/* no route at all: not local either */
	if (err)
		return -1;
	return r.found && r.type == RTN_LOCAL;
}

static const void *ifa_addr(const struct ifaddrs *ifa)
{
	if (ifa->ifa_addr->sa_family == AF_INET)
		return &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
	return &((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
}

static int prefix_len(const struct ifaddrs *ifa)
{
	const __u8 *m;
	int i, n = 0, bytes;

	if (!ifa->ifa_netmask)
		return 0;
	if (ifa->ifa_addr->sa_family == AF_INET) {
		m = (const __u8 *)&((const struct sockaddr_in *)ifa->ifa_netmask)->sin_addr;
		bytes = 4;
	} else {
		m = (const __u8 *)&((const struct sockaddr_in6 *)ifa->ifa_netmask)->sin6_addr;
		bytes = 16;
	}
	for (i = 0; i < bytes * 8; i++)
		if (m[i / 8] & (0x80 >> (i % 8)))
			n++;
	return n;
}

int xb_addr_on_dev(int family, const __u8 *addr, char *dev, size_t n)
{
	struct ifaddrs *all, *ifa;
	int found = 0;

	if (getifaddrs(&all))
		return -1;
	for (ifa = all; ifa && !found; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family ||
		    !strcmp(ifa->ifa_name, "lo"))
			continue;
		if (!memcmp(ifa_addr(ifa), addr, addr_len(family))) {
			snprintf(dev, n, "%s", ifa->ifa_name);
			found = 1;
		}
	}
	freeifaddrs(all);
	return found;
}

int xb_dev_addr(const char *dev, int family, __u8 *addr, int *len)
{
	struct ifaddrs *all, *ifa;
	const __u8 *a;
	int found = 0;

	if (getifaddrs(&all))
		return -1;
	for (ifa = all; ifa && !found; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family ||
		    strcmp(ifa->ifa_name, dev))
			continue;
		a = ifa_addr(ifa);
		if (family == AF_INET6 && a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
			continue;	/* link-local */
		memset(addr, 0, 16);
		memcpy(addr, a, addr_len(family));
		*len = prefix_len(ifa);
		found = 1;
	}
	freeifaddrs(all);
	return found;
}

int xb_sysctl_read(const char *path, char *val, size_t n)
{
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, val, n - 1);
	close(fd);
	if (len < 0)
		return -errno;
	val[len] = 0;
	while (len > 0 && (val[len - 1] == '\n' || val[len - 1] == ' '))
		val[--len] = 0;
	return 0;
}

int xb_sysctl_write(const char *path, const char *val)
{
	size_t len = strlen(val);
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, len) != (ssize_t)len)
		err = -errno;
	close(fd);
	return err;
}

int xb_sysctl_int(const char *path, int *v)
{
	char buf[32], *end;
	int err;

	err = xb_sysctl_read(path, buf, sizeof(buf));
	if (err)
		return err;
	*v = (int)strtol(buf, &end, 10);
	return *end ? -EINVAL : 0;
}
