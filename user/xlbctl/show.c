// SPDX-License-Identifier: GPL-2.0
/*
 * Read commands: their arguments, their request, then the result as JSON
 * (-j) or as a human view (render.c).
 *
 *   link show            {"cmd": "link.show"}
 *   vip show [VIP]       {"cmd": "vip.show", "vip"?: VIP}
 *   backend show VIP     {"cmd": "backend.show", "vip": VIP}
 *   table show VIP       {"cmd": "table.show", "vip": VIP}
 *   status               {"cmd": "status"}
 *   explain FLOW         {"cmd": "explain", "flow": "PROTO SRC -> DST"}
 *   host show            {"cmd": "host.show"}
 *   host drain|undrain   {"cmd": "host.drain"} / {"cmd": "host.undrain"}
 *
 * VIPs and flows are checked here and sent in canonical form.
 */
#include <string.h>

#include "result.h"
#include "xlbctl.h"

typedef void (*render_fn)(FILE *f, json_object *res);

static int show(struct ctl *c, json_object *req, render_fn render)
{
	json_object *res;
	int ret;

	ret = ctl_call(c, req, &res, 0);
	if (ret)
		return ret;
	if (c->json)
		ctl_print_json(res);
	else
		render(stdout, res);
	json_object_put(res);
	return EXIT_OK;
}

enum vip_arg {
	VIP_NONE,	/* link show */
	VIP_OPTIONAL,	/* vip show [VIP] */
	VIP_REQUIRED,	/* backend show VIP, table show VIP */
};

/* OBJECT show [VIP]: the VIP, if any, in canonical form. */
static int show_args(int argc, char **argv, enum vip_arg want,
		     char vip[XLB_VIP_STR_MAX])
{
	int max = want == VIP_NONE ? 2 : 3;
	char topic[64];
	int ret;

	snprintf(topic, sizeof(topic), "%s show", argv[0]);
	ret = arg_misplaced(topic, argc, argv);
	if (ret)
		return ret;
	vip[0] = 0;
	if (argc < 3 && want == VIP_REQUIRED)
		return ctl_usage_error(topic, "%s show needs a VIP such as "
				       "10.0.0.1:80/tcp", argv[0]);
	if (argc > max)
		return ctl_usage_error(topic,
				       "argument %d: unexpected \"%.40s\"",
				       max + 1, argv[max]);
	if (argc == 3)
		return arg_vip(topic, 3, argv[2], vip);
	return 0;
}

static json_object *vip_req(const char *cmd, const char *vip)
{
	json_object *req = ctl_req(cmd);

	if (vip[0])
		json_object_object_add(req, "vip",
				       json_object_new_string(vip));
	return req;
}

static void render_link_result(FILE *f, json_object *res)
{
	render_links(f, r_arr(res, "links"));
}

int show_links(struct ctl *c, int argc, char **argv)
{
	char vip[XLB_VIP_STR_MAX];
	int ret = show_args(argc, argv, VIP_NONE, vip);

	return ret ? ret : show(c, ctl_req("link.show"), render_link_result);
}

static void render_one_vip(FILE *f, json_object *res)
{
	json_object *vips = r_arr(res, "vips");
	size_t i;

	for (i = 0; i < r_len(vips); i++) {
		if (i)
			fputc('\n', f);
		render_vip_detail(f, r_at(vips, i));
	}
}

int show_vips(struct ctl *c, int argc, char **argv)
{
	char vip[XLB_VIP_STR_MAX];
	int ret = show_args(argc, argv, VIP_OPTIONAL, vip);

	if (ret)
		return ret;
	return show(c, vip_req("vip.show", vip),
		    vip[0] ? render_one_vip : render_vips);
}

int show_backends(struct ctl *c, int argc, char **argv)
{
	char vip[XLB_VIP_STR_MAX];
	int ret = show_args(argc, argv, VIP_REQUIRED, vip);

	return ret ? ret : show(c, vip_req("backend.show", vip),
				render_backends);
}

int cmd_table(struct ctl *c, int argc, char **argv)
{
	char vip[XLB_VIP_STR_MAX], verbs[32];
	int ret;

	usage_verbs("table", verbs, sizeof(verbs));
	if (argc < 2)
		return ctl_usage_error("table", "table needs a verb: %s", verbs);
	if (strcmp(argv[1], "show"))
		return ctl_usage_error("table",
				       "argument 2: unknown verb \"%.40s\" for table; use %s",
				       argv[1], verbs);
	ret = show_args(argc, argv, VIP_REQUIRED, vip);
	return ret ? ret : show(c, vip_req("table.show", vip), render_table);
}

int cmd_status(struct ctl *c, int argc, char **argv)
{
	int ret = arg_misplaced("status", argc, argv);

	if (ret)
		return ret;
	if (argc > 1)
		return ctl_usage_error("status",
				       "argument 2: unexpected \"%.40s\"; status takes no arguments",
				       argv[1]);
	return show(c, ctl_req("status"), render_status);
}

int cmd_cluster(struct ctl *c, int argc, char **argv)
{
	int ret = arg_misplaced("cluster", argc, argv);

	if (ret)
		return ret;
	if (argc < 2 || strcmp(argv[1], "status"))
		return ctl_usage_error("cluster", argc < 2 ?
				       "cluster needs a verb: status" :
				       "argument 2: unknown verb \"%.40s\" for cluster; use status",
				       argc < 2 ? "" : argv[1]);
	if (argc > 2)
		return ctl_usage_error("cluster status",
				       "argument 3: unexpected \"%.40s\"; cluster status takes no arguments",
				       argv[2]);
	return show(c, ctl_req("cluster.status"), render_cluster);
}

/* host show | host drain | host undrain: the VIP announcements */
int cmd_host(struct ctl *c, int argc, char **argv)
{
	char topic[64];
	json_object *res;
	int ret = arg_misplaced("host", argc, argv);

	if (ret)
		return ret;
	if (argc < 2 || (strcmp(argv[1], "show") && strcmp(argv[1], "drain") &&
			 strcmp(argv[1], "undrain")))
		return ctl_usage_error("host", argc < 2 ?
				       "host needs a verb: drain, undrain or show" :
				       "argument 2: unknown verb \"%.40s\" for host; use drain, undrain or show",
				       argc < 2 ? "" : argv[1]);
	snprintf(topic, sizeof(topic), "host %s", argv[1]);
	if (argc > 2)
		return ctl_usage_error(topic,
				       "argument 3: unexpected \"%.40s\"; host %s takes no arguments",
				       argv[2], argv[1]);
	if (!strcmp(argv[1], "show"))
		return show(c, ctl_req("host.show"), render_host);
	snprintf(topic, sizeof(topic), "host.%s", argv[1]);
	ret = ctl_call(c, ctl_req(topic), &res, CTL_CHANGE_TIMEOUT_MS);
	if (ret)
		return ret;
	if (c->json)
		ctl_print_json(res);
	else
		render_host(stdout, res);
	json_object_put(res);
	return EXIT_OK;
}

int cmd_explain(struct ctl *c, int argc, char **argv)
{
	json_object *req;
	char flow[192];
	int ret;

	ret = arg_misplaced("explain", argc, argv);
	if (!ret)
		ret = arg_flow(argc - 1, argv + 1, 2, flow, sizeof(flow));
	if (ret)
		return ret;
	req = ctl_req("explain");
	json_object_object_add(req, "flow", json_object_new_string(flow));
	return show(c, req, render_explain);
}
