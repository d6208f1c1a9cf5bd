// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "attach.h"

static const char *ifname(int ifindex, char *buf)
{
	if (!if_indextoname((unsigned int)ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

/*
 * obj's XDP program, loaded, as libxdp's program: loaded by us, not by
 * libxdp, the way xlbd hands it its pinned program.  libxdp then attaches
 * it directly instead of as an extension of its dispatcher: 6.12's
 * verifier refuses an extension that moves the packet's head in place of
 * a dispatcher slot that does not (tried in the vm tier), and xlb owns its
 * links anyway.  The fd is duplicated: closing p closes only its own.
 */
static int loaded_prog(struct bpf_object *obj, struct xdp_program **out)
{
	struct bpf_program *bp = NULL, *it;
	struct xdp_program *p;
	int fd, ret;

	bpf_object__for_each_program(it, obj)
		if (!strncmp(bpf_program__section_name(it), "xdp", 3)) {
			bp = it;
			break;
		}
	if (!bp)
		return -ENOENT;
	if (bpf_program__fd(bp) < 0) {
		ret = bpf_object__load(obj);
		if (ret)
			return ret;
	}
	fd = dup(bpf_program__fd(bp));
	if (fd < 0)
		return -errno;
	p = xdp_program__from_fd(fd);
	ret = (int)libxdp_get_error(p);
	if (ret) {
		close(fd);
		return ret;
	}
	*out = p;
	return 0;
}

int xlb_link_attach(struct xdp_program **prog, struct bpf_object *obj,
		    int ifindex, int generic, struct xlb_err *err)
{
	enum xdp_attach_mode mode = generic ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	char name[IF_NAMESIZE];
	struct xdp_program *p = *prog;
	int ret;

	if (!if_indextoname((unsigned int)ifindex, name))
		return xlb_errf(err, ENODEV, "no interface with index %d",
				ifindex);
	if (!p) {
		ret = loaded_prog(obj, &p);
		if (ret)
			return xlb_errf(err, -ret,
					"cannot prepare the data path for libxdp: %s",
					strerror(-ret));
	}
	ret = xdp_program__attach(p, ifindex, mode, 0);
	if (ret) {
		if (!*prog)
			xdp_program__close(p);
		return xlb_errf(err, -ret,
				"cannot attach the data path to %s in %s mode: %s%s",
				name, generic ? "generic" : "native",
				strerror(-ret),
				!generic && ret == -EOPNOTSUPP ?
				" (the driver has no native XDP; try generic)" : "");
	}
	*prog = p;
	return 0;
}

int xlb_link_detach(struct xdp_program *prog, int ifindex, int generic,
		    struct xlb_err *err)
{
	enum xdp_attach_mode mode = generic ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	char name[IF_NAMESIZE];
	int ret;

	ret = xdp_program__detach(prog, ifindex, mode, 0);
	if (ret)
		return xlb_errf(err, -ret,
				"cannot detach the data path from %s: %s",
				ifname(ifindex, name), strerror(-ret));
	return 0;
}

int xlb_link_prog_id(int ifindex, int generic, __u32 *id)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int ret;

	ret = bpf_xdp_query(ifindex, 0, &q);
	if (ret)
		return ret;
	*id = generic ? q.skb_prog_id : q.drv_prog_id;
	return 0;
}
