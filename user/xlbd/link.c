// SPDX-License-Identifier: GPL-2.0
/*
 * Links: the interfaces the data path is attached to (libxdp, attach.h),
 * as the desired state lists them.  A link that cannot be attached at
 * start is retried every second (d->lenient_links); in a change it fails
 * the change, and the links attached for it are detached again.
 */
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <xdp/libxdp.h>

#include "attach.h"
#include "xlbd.h"

static bool link_runs_ours(const struct xlbd *d, int ifindex, int generic)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	__u32 id = 0;
	bool found = false;

	if (xlb_link_prog_id(ifindex, generic, &id) || !id)
		return false;
	if (id == d->prog_id)
		return true;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return false;
	while ((p = xdp_multiprog__next_prog(p, mp)))
		found |= xdp_program__id(p) == d->prog_id;
	xdp_multiprog__close(mp);
	return found;
}

static int link_attach(struct xlbd *d, struct xlbd_link *l,
		       struct xlb_err *err)
{
	int ifindex = (int)if_nametoindex(l->ifname);
	int ret;

	if (!ifindex)
		return xlb_errf(err, ENODEV, "link %s: no such interface",
				l->ifname);
	l->ifindex = ifindex;
	if (link_runs_ours(d, ifindex, l->mode == XLB_ATTACH_GENERIC)) {
		l->attached = true;
		l->error[0] = 0;
		return 0;
	}
	xlbd_log_libbpf_quiet(true);
	ret = xlb_link_attach(&d->xprog, NULL, ifindex,
			      l->mode == XLB_ATTACH_GENERIC, err);
	xlbd_log_libbpf_quiet(false);
	if (ret)
		return ret;
	/* the data path redirects out of every attached link */
	xlb_dp_tx_port_add(&d->dp, (__u32)ifindex);
	l->attached = true;
	l->error[0] = 0;
	log_notice("link %s: data path attached (%s)", l->ifname,
		   l->mode == XLB_ATTACH_GENERIC ? "generic" : "native");
	return 0;
}

static void link_detach(struct xlbd *d, struct xlbd_link *l)
{
	struct xlb_err err = { "" };
	int ifindex = (int)if_nametoindex(l->ifname);

	if (!l->attached || !ifindex)
		return;
	/* another program on it (--cleanup tries every link) stays, quietly */
	if (!link_runs_ours(d, ifindex, l->mode == XLB_ATTACH_GENERIC))
		;
	else if (xlb_link_detach(d->xprog, ifindex,
				 l->mode == XLB_ATTACH_GENERIC, &err))
		log_err("link %s: %s", l->ifname, err.msg);
	else
		log_notice("link %s: data path detached", l->ifname);
	xlb_dp_tx_port_del(&d->dp, (__u32)ifindex);
	l->attached = false;
}

void xlbd_detach_all(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		link_detach(d, &d->links[i]);
}

static struct xlbd_link *link_find(struct xlbd_link *links, size_t n,
				   const char *ifname)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(links[i].ifname, ifname))
			return &links[i];
	return NULL;
}

/*
 * New link list for s: links kept as they are, new ones attached.  On a
 * failed attach the ones attached here are detached again and the error
 * returned; *out is then NULL.
 */
int xlbd_links_prepare(struct xlbd *d, const struct xlb_state *s,
		       struct xlbd_link **out, struct xlb_err *err)
{
	struct xlbd_link *nl = calloc(s->n_links ? s->n_links : 1, sizeof(*nl));
	size_t i, j;
	int ret;

	*out = NULL;
	if (!nl)
		return xlb_errf(err, ENOMEM, "out of memory");
	for (i = 0; i < s->n_links; i++) {
		struct xlbd_link *old = link_find(d->links, d->n_links,
						  s->links[i].ifname);

		if (old && old->mode == s->links[i].mode) {
			nl[i] = *old;
			continue;
		}
		snprintf(nl[i].ifname, sizeof(nl[i].ifname), "%s",
			 s->links[i].ifname);
		nl[i].mode = s->links[i].mode;
		if (old)	/* mode changes: detach the old way first */
			link_detach(d, old);
		ret = link_attach(d, &nl[i], err);
		if (ret && d->lenient_links) {
			snprintf(nl[i].error, sizeof(nl[i].error), "%s",
				 err->msg);
			log_err("%s (retrying every second)", err->msg);
			continue;
		}
		if (ret) {
			for (j = 0; j < i; j++)
				if (!link_find(d->links, d->n_links,
					       nl[j].ifname))
					link_detach(d, &nl[j]);
			free(nl);
			return ret;
		}
	}
	*out = nl;
	return 0;
}

/* After a commit: nl (n links) replaces d->links; links gone are detached. */
void xlbd_links_commit(struct xlbd *d, struct xlbd_link *nl, size_t n)
{
	size_t i;

	for (i = 0; i < d->n_links; i++)
		if (!link_find(nl, n, d->links[i].ifname))
			link_detach(d, &d->links[i]);
	free(d->links);
	d->links = nl;
	d->n_links = n;
}

/* Attach the links that are not attached yet (periodic). */
void xlbd_links_retry(struct xlbd *d)
{
	size_t i;

	for (i = 0; i < d->n_links; i++) {
		struct xlbd_link *l = &d->links[i];
		struct xlb_err e = { "" };

		if (l->attached)
			continue;
		if (link_attach(d, l, &e))
			snprintf(l->error, sizeof(l->error), "%s", e.msg);
	}
}

/* --- lower devices -------------------------------------------------------- */

struct lowers {
	int master;
	int *out;
	size_t max, n;
};

static int lower_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, IFLA_MAX) >= 0 && type == IFLA_MASTER &&
	    mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
		tb[type] = a;
	return MNL_CB_OK;
}

static int lower_link(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[IFLA_MAX + 1] = { NULL };
	struct lowers *l = data;

	mnl_attr_parse(nlh, sizeof(*ifm), lower_attr, tb);
	if (tb[IFLA_MASTER] &&
	    (int)mnl_attr_get_u32(tb[IFLA_MASTER]) == l->master) {
		if (l->n < l->max)
			l->out[l->n] = ifm->ifi_index;
		l->n++;
	}
	return MNL_CB_OK;
}

/*
 * The interfaces enslaved to ifindex (a bond's slaves), from an
 * RTM_GETLINK dump of this namespace: up to max in out, how many in all;
 * -1 if the dump failed.  On a bond, XDP runs on the slaves' receive
 * path, and packets count by the slave they came in on.
 */
int xlbd_link_lowers(int ifindex, int *out, size_t max)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct lowers l = { ifindex, out, max, 0 };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct rtgenmsg *g;
	unsigned int seq = (unsigned int)time(NULL), port;
	ssize_t n;
	int ret = 0;

	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		mnl_socket_close(nl);
		return -1;
	}
	port = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->rtgen_family = AF_UNSPEC;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		ret = -1;
	while (!ret) {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n <= 0) {
			ret = -1;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, port, lower_link, &l);
		if (ret == MNL_CB_STOP) {
			ret = 0;
			break;
		}
		ret = ret < 0 ? -1 : 0;
	}
	mnl_socket_close(nl);
	return ret ? -1 : (int)l.n;
}
