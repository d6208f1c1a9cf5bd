// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus metrics over HTTP (libmicrohttpd, its own thread): GET
 * /metrics answers the text exposition format.  The handler takes d->lock,
 * so it sees one consistent state between two changes; it only reads
 * what is at hand: the connection table is counted by ctcount.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "config.h"
#include "number.h"
#include "xlbd.h"

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap ? b->cap * 2 : 65536) + (size_t)n;
			char *p = realloc(b->p, cap);

			if (!p) {
				b->oom = true;
				return;
			}
			b->p = p;
			b->cap = cap;
		}
	}
}

static void help(struct buf *b, const char *name, const char *type,
		 const char *text)
{
	bprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void render(struct xlbd *d, struct buf *b)
{
	__u64 ev[XLB_EV_MAX] = { 0 }, act[XLB_ACTIONS] = { 0 };
	static const char *const actions[XLB_ACTIONS] = {
		"aborted", "drop", "pass", "tx", "redirect" };
	static const char *const states[] = { "active", "drain", "down" };
	struct xlbd_ct_figures ctf;
	size_t i, k;
	__u32 ct = 0;

	help(b, "xlb_up", "gauge", "1 while xlbd runs");
	bprintf(b, "xlb_up 1\n");
	if (!d->ready)
		return;		/* still starting */
	help(b, "xlb_generation", "counter", "accepted configuration changes");
	bprintf(b, "xlb_generation %llu\n", (unsigned long long)d->generation);
	help(b, "xlb_uptime_seconds", "gauge", "seconds since xlbd started");
	bprintf(b, "xlb_uptime_seconds %.3f\n", xlbd_now() - d->started_at);

	if (d->cl) {
		char *t = xlbd_cluster_metrics(d);

		if (t)
			bprintf(b, "%s", t);
		free(t);
	}

	help(b, "xlb_vip_packets_total", "counter", "packets forwarded per VIP");
	for (i = 0; i < d->state.n_vips; i++) {
		struct xlb_vip_stats st = { 0 };
		char vs[XLB_VIP_STR_MAX];

		xlb_dp_vip_stats(&d->dp, d->rt_vips[i].id, &st);
		xlb_vip_str(&d->state.vips[i].key, vs);
		bprintf(b, "xlb_vip_packets_total{vip=\"%s\"} %llu\n", vs,
			(unsigned long long)st.packets);
		bprintf(b, "xlb_vip_bytes_total{vip=\"%s\"} %llu\n", vs,
			(unsigned long long)st.bytes);
		bprintf(b, "xlb_vip_new_flows_total{vip=\"%s\"} %llu\n", vs,
			(unsigned long long)st.new_flows);
		bprintf(b, "xlb_vip_conntrack_hits_total{vip=\"%s\"} %llu\n",
			vs, (unsigned long long)st.ct_hits);
		bprintf(b, "xlb_vip_flow_cache_hits_total{vip=\"%s\"} %llu\n",
			vs, (unsigned long long)st.cache_hits);
		bprintf(b, "xlb_vip_table_generation{vip=\"%s\"} %llu\n", vs,
			(unsigned long long)d->rt_vips[i].generation);
		bprintf(b, "xlb_vip_table_fingerprint{vip=\"%s\",fingerprint=\"0x%016llx\"} 1\n",
			vs, (unsigned long long)d->rt_vips[i].fingerprint);
		bprintf(b, "xlb_vip_table_changed_timestamp_seconds{vip=\"%s\"} %.3f\n",
			vs, d->rt_vips[i].changed_at);
		bprintf(b, "xlb_vip_backends_in_table{vip=\"%s\"} %u\n", vs,
			d->rt_vips[i].in_table);
		bprintf(b, "xlb_vip_panic{vip=\"%s\"} %d\n", vs,
			d->rt_vips[i].panic);
	}

	help(b, "xlb_backend_packets_total", "counter",
	     "packets sent to a backend (per address and encapsulation)");
	for (i = 0; i < d->state.n_backends; i++) {
		const struct xlb_backend_conf *be = &d->state.backends[i];
		const struct xlbd_be *rb = &d->rt_bes[i];
		struct xlb_counter c = { 0 };
		char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX], l[256];

		xlb_dp_backend_stats(&d->dp, rb->id, &c);
		snprintf(l, sizeof(l), "vip=\"%s\",backend=\"%s\",addr=\"%s\"",
			 xlb_vip_str(&be->vip, vs), be->name,
			 xlb_addr_str(be->family, be->addr, as));
		bprintf(b, "xlb_backend_packets_total{%s} %llu\n", l,
			(unsigned long long)c.packets);
		bprintf(b, "xlb_backend_bytes_total{%s} %llu\n", l,
			(unsigned long long)c.bytes);
		bprintf(b, "xlb_backend_healthy{%s} %d\n", l,
			rb->health != XLB_HC_DOWN);
		bprintf(b, "xlb_backend_weight{%s} %u\n", l, be->weight);
		for (k = 0; k < 3; k++)
			bprintf(b, "xlb_backend_state{%s,state=\"%s\"} %d\n", l,
				states[k], be->admin == k);
		if (rb->has_result) {
			bprintf(b, "xlb_backend_check_up{%s} %d\n", l,
				rb->last.ok);
			bprintf(b, "xlb_backend_check_rtt_seconds{%s} %.3f\n",
				l, rb->last.rtt_ms / 1000.0);
		}
	}

	help(b, "xlb_events_total", "counter",
	     "data-path events: drops by reason, ICMP answers and steering");
	xlb_dp_events(&d->dp, ev);
	for (k = 0; k < XLB_EV_MAX; k++)
		bprintf(b, "xlb_events_total{event=\"%s\"} %llu\n",
			xlb_event_name((int)k), (unsigned long long)ev[k]);
	help(b, "xlb_xdp_actions_total", "counter", "XDP verdicts");
	xlb_dp_actions(&d->dp, act);
	for (k = 0; k < XLB_ACTIONS; k++)
		bprintf(b, "xlb_xdp_actions_total{action=\"%s\"} %llu\n",
			actions[k], (unsigned long long)act[k]);
	if (xlbd_ctcount_get(d, &ctf)) {
		help(b, "xlb_conntrack_entries", "gauge",
		     "connection table entries, as of the last count");
		bprintf(b, "xlb_conntrack_entries %u\n", ctf.count);
		help(b, "xlb_conntrack_count_age_seconds", "gauge",
		     "seconds since that count ended");
		bprintf(b, "xlb_conntrack_count_age_seconds %.3f\n", ctf.age_s);
		help(b, "xlb_conntrack_count_seconds", "gauge",
		     "seconds the last count took (off the control loop)");
		bprintf(b, "xlb_conntrack_count_seconds %.3f\n", ctf.seconds);
	}
	if (d->ctcount) {
		xlbd_ctcount_get(d, &ctf);
		help(b, "xlb_conntrack_counts_total", "counter",
		     "counts of the connection table done");
		bprintf(b, "xlb_conntrack_counts_total %llu\n",
			(unsigned long long)ctf.counts);
		help(b, "xlb_conntrack_counting", "gauge",
		     "1 while the connection table is being counted");
		bprintf(b, "xlb_conntrack_counting %d\n", ctf.counting);
	}
	if (!xlb_dp_ct_capacity(&d->dp, &ct)) {
		help(b, "xlb_conntrack_capacity", "gauge",
		     "flows the connection table holds at most");
		bprintf(b, "xlb_conntrack_capacity %u\n", ct);
	}

	help(b, "xlb_health_checks_total", "counter", "health check verdicts");
	bprintf(b, "xlb_health_checks_total{result=\"fail\"} %llu\n",
		(unsigned long long)d->hc_results[0]);
	bprintf(b, "xlb_health_checks_total{result=\"ok\"} %llu\n",
		(unsigned long long)d->hc_results[1]);
	help(b, "xlb_control_updates_total", "counter",
	     "reconciliations that published tables");
	bprintf(b, "xlb_control_updates_total %llu\n",
		(unsigned long long)d->updates);
	help(b, "xlb_control_update_seconds", "summary",
	     "time from a change to its tables being live");
	bprintf(b, "xlb_control_update_seconds_sum %.6f\n",
		d->update_seconds_sum);
	bprintf(b, "xlb_control_update_seconds_count %llu\n",
		(unsigned long long)d->updates);
	help(b, "xlb_control_update_last_seconds", "gauge",
	     "the last change's time to live");
	bprintf(b, "xlb_control_update_last_seconds %.6f\n",
		d->update_seconds_last);
	help(b, "xlb_control_publish_errors_total", "counter",
	     "tables or entries the data path refused");
	bprintf(b, "xlb_control_publish_errors_total %llu\n",
		(unsigned long long)d->publish_errors);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **ptr)
{
	struct xlbd *d = cls;
	struct MHD_Response *resp;
	struct buf b = { 0 };
	unsigned int status = MHD_HTTP_OK;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)ptr;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		bprintf(&b, "only GET\n");
	} else if (strcmp(url, "/metrics")) {
		status = MHD_HTTP_NOT_FOUND;
		bprintf(&b, "see /metrics\n");
	} else {
		pthread_mutex_lock(&d->lock);
		render(d, &b);
		pthread_mutex_unlock(&d->lock);
	}
	if (b.oom) {
		free(b.p);
		return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(b.len, b.p,
					       MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(b.p);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
				"text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

int xlbd_metrics_start(struct xlbd *d, struct xlb_err *err)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in sa4 = { .sin_family = AF_INET };
	char host[64];
	const char *colon;
	struct sockaddr *sa;
	uint32_t port;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG;
	size_t hl;

	if (!strcmp(d->o.metrics, "none"))
		return 0;
	colon = strrchr(d->o.metrics, ':');
	if (!colon)
		goto bad;
	hl = (size_t)(colon - d->o.metrics);
	if (hl >= sizeof(host))
		goto bad;
	memcpy(host, d->o.metrics, hl);
	host[hl] = 0;
	if (xlb_parse_u32(colon + 1, 1, 65535, &port))
		goto bad;
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		if (inet_pton(AF_INET6, host + 1, &sa6.sin6_addr) != 1)
			goto bad;
		sa6.sin6_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&sa6;
		flags |= MHD_USE_IPv6;
	} else {
		if (inet_pton(AF_INET, host, &sa4.sin_addr) != 1)
			goto bad;
		sa4.sin_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&sa4;
	}
	d->metrics = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL,
				      answer, d, MHD_OPTION_SOCK_ADDR, sa,
				      MHD_OPTION_CONNECTION_LIMIT, 16u,
				      MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				      MHD_OPTION_END);
	if (!d->metrics)
		return xlb_errf(err, EADDRINUSE,
				"cannot serve metrics on %s (address in use or not local?)",
				d->o.metrics);
	log_info("metrics on http://%s/metrics", d->o.metrics);
	return 0;
bad:
	return xlb_errf(err, EINVAL,
			"--metrics \"%s\": expected ADDR:PORT (IPv6 in brackets) or none",
			d->o.metrics);
}

void xlbd_metrics_stop(struct xlbd *d)
{
	if (d->metrics)
		MHD_stop_daemon(d->metrics);
	d->metrics = NULL;
}
