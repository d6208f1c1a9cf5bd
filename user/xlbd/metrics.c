// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus metrics over HTTP (libmicrohttpd, its own thread, which has
 * no privilege: privs.c): GET
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
#include <sys/socket.h>
#include <unistd.h>

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

/* One family's lines: HELP and TYPE, then every sample of it. */
#define FAMILY(b, n, name, type, text, fmt, ...)			\
	do {								\
		help(b, name, type, text);				\
		for (i = 0; i < (n); i++)				\
			bprintf(b, name fmt "\n", __VA_ARGS__);	\
	} while (0)

struct vip_row {
	char vs[XLB_VIP_STR_MAX];
	struct xlb_vip_stats st;
	const struct xlbd_vip *rv;
};

static void render_vips(struct xlbd *d, struct buf *b)
{
	size_t i, n = d->state.n_vips;
	struct vip_row *r = calloc(n ? n : 1, sizeof(*r));

	if (!r) {
		b->oom = true;
		return;
	}
	for (i = 0; i < n; i++) {
		r[i].rv = &d->rt_vips[i];
		xlb_dp_vip_stats(&d->dp, r[i].rv->id, &r[i].st);
		xlb_vip_str(&d->state.vips[i].key, r[i].vs);
	}
	FAMILY(b, n, "xlb_vip_packets_total", "counter",
	       "packets forwarded per VIP", "{vip=\"%s\"} %llu", r[i].vs,
	       (unsigned long long)r[i].st.packets);
	FAMILY(b, n, "xlb_vip_bytes_total", "counter",
	       "bytes forwarded per VIP", "{vip=\"%s\"} %llu", r[i].vs,
	       (unsigned long long)r[i].st.bytes);
	FAMILY(b, n, "xlb_vip_new_flows_total", "counter",
	       "flows the VIP's table placed (connection table misses)",
	       "{vip=\"%s\"} %llu", r[i].vs,
	       (unsigned long long)r[i].st.new_flows);
	FAMILY(b, n, "xlb_vip_conntrack_hits_total", "counter",
	       "packets sent by their connection table entry",
	       "{vip=\"%s\"} %llu", r[i].vs,
	       (unsigned long long)r[i].st.ct_hits);
	FAMILY(b, n, "xlb_vip_flow_cache_hits_total", "counter",
	       "packets sent from the per-CPU flow cache",
	       "{vip=\"%s\"} %llu", r[i].vs,
	       (unsigned long long)r[i].st.cache_hits);
	FAMILY(b, n, "xlb_vip_table_generation", "gauge",
	       "tables of the VIP published so far", "{vip=\"%s\"} %llu",
	       r[i].vs, (unsigned long long)r[i].rv->generation);
	FAMILY(b, n, "xlb_vip_table_fingerprint", "gauge",
	       "1, labelled with the published table's fingerprint",
	       "{vip=\"%s\",fingerprint=\"0x%016llx\"} 1", r[i].vs,
	       (unsigned long long)r[i].rv->fingerprint);
	FAMILY(b, n, "xlb_vip_table_changed_timestamp_seconds", "gauge",
	       "unix time the VIP's table was last published",
	       "{vip=\"%s\"} %.3f", r[i].vs, r[i].rv->changed_at);
	FAMILY(b, n, "xlb_vip_backends_in_table", "gauge",
	       "backends with slots in the VIP's table", "{vip=\"%s\"} %u",
	       r[i].vs, r[i].rv->in_table);
	FAMILY(b, n, "xlb_vip_panic", "gauge",
	       "1 while the VIP is in panic (down backends kept in its table)",
	       "{vip=\"%s\"} %d", r[i].vs, r[i].rv->panic);
	free(r);
}

struct be_row {
	char l[256];		/* its labels */
	const struct xlb_backend_conf *be;
	const struct xlbd_be *rb;
};

/*
 * What the data path sent to each backend address and encapsulation (one
 * data-path id, whichever VIPs use it): one series per id, without a VIP,
 * so that a sum counts each packet once.
 */
static void render_backend_traffic(struct xlbd *d, struct buf *b)
{
	static const char *const encaps[] = { "ipip", "gue" };
	struct xlb_counter *c;
	uint32_t id, n = 0;
	int pass;

	c = calloc(d->beid_hi ? d->beid_hi : 1, sizeof(*c));
	if (!c) {
		b->oom = true;
		return;
	}
	for (id = 0; id < d->beid_hi; id++)
		if (d->beids[id].refs && d->beids[id].family &&
		    !xlb_dp_backend_stats(&d->dp, (uint16_t)id, &c[id]))
			n++;
	for (pass = 0; n && pass < 2; pass++) {
		help(b, pass ? "xlb_backend_bytes_total" :
			       "xlb_backend_packets_total", "counter",
		     pass ? "bytes sent to a backend address and encapsulation, for every VIP using it" :
			    "packets sent to a backend address and encapsulation, for every VIP using it");
		for (id = 0; id < d->beid_hi; id++) {
			const struct xlbd_beid *be = &d->beids[id];
			char as[XLB_ADDR_STR_MAX];

			if (!be->refs || !be->family)
				continue;
			bprintf(b, "%s{addr=\"%s\",encap=\"%s\"} %llu\n",
				pass ? "xlb_backend_bytes_total" :
				       "xlb_backend_packets_total",
				xlb_addr_str(be->family, be->addr, as),
				encaps[be->encap % 2],
				(unsigned long long)(pass ? c[id].bytes :
							    c[id].packets));
		}
	}
	if (n)
		help(b, "xlb_backend_connections", "gauge",
		     "active connections of a backend address and encapsulation, for every VIP using it: connection entries not closed (bounded loads)");
	for (id = 0; n && id < d->beid_hi; id++) {
		const struct xlbd_beid *be = &d->beids[id];
		char as[XLB_ADDR_STR_MAX];
		__s64 conns = 0;

		if (!be->refs || !be->family ||
		    xlb_dp_backend_conns(&d->dp, (uint16_t)id, &conns))
			continue;
		bprintf(b, "xlb_backend_connections{addr=\"%s\",encap=\"%s\"} %lld\n",
			xlb_addr_str(be->family, be->addr, as),
			encaps[be->encap % 2],
			(long long)(conns > 0 ? conns : 0));
	}
	free(c);
}

static void render_backends(struct xlbd *d, struct buf *b)
{
	static const char *const states[] = { "active", "drain", "down" };
	size_t i, k, n = d->state.n_backends, nr = 0;
	struct be_row *r = calloc(n ? n : 1, sizeof(*r));

	if (!r) {
		b->oom = true;
		return;
	}
	for (i = 0; i < n; i++) {
		const struct xlb_backend_conf *be = &d->state.backends[i];
		char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];

		r[i].be = be;
		r[i].rb = &d->rt_bes[i];
		snprintf(r[i].l, sizeof(r[i].l),
			 "vip=\"%s\",backend=\"%s\",addr=\"%s\"",
			 xlb_vip_str(&be->vip, vs), be->name,
			 xlb_addr_str(be->family, be->addr, as));
		nr += r[i].rb->has_result;
	}
	FAMILY(b, n, "xlb_backend_healthy", "gauge",
	       "1 unless the backend's health check says down",
	       "{%s} %d", r[i].l, r[i].rb->health != XLB_HC_DOWN);
	FAMILY(b, n, "xlb_backend_weight", "gauge", "the backend's weight",
	       "{%s} %u", r[i].l, r[i].be->weight);
	help(b, "xlb_backend_state", "gauge",
	     "1 for the backend's administrative state");
	for (i = 0; i < n; i++)
		for (k = 0; k < 3; k++)
			bprintf(b, "xlb_backend_state{%s,state=\"%s\"} %d\n",
				r[i].l, states[k], r[i].be->admin == k);
	if (nr) {
		help(b, "xlb_backend_check_up", "gauge",
		     "1 if the backend's last health check passed");
		for (i = 0; i < n; i++)
			if (r[i].rb->has_result)
				bprintf(b, "xlb_backend_check_up{%s} %d\n",
					r[i].l, r[i].rb->last.ok);
		help(b, "xlb_backend_check_rtt_seconds", "gauge",
		     "the round trip of the backend's last health check");
		for (i = 0; i < n; i++)
			if (r[i].rb->has_result)
				bprintf(b, "xlb_backend_check_rtt_seconds{%s} %.3f\n",
					r[i].l, r[i].rb->last.rtt_ms / 1000.0);
	}
	free(r);
}

/*
 * XDP verdicts per attached link, by the interface they came in on (a
 * bond's on its slaves, labelled with the bond; bpf/structs.h).
 */
static void render_links(struct xlbd *d, struct buf *b,
			 const char *const *actions)
{
	__u64 act[XLB_ACTIONS];
	int lowers[16], n, j;
	size_t i, k;

	if (!d->n_links)
		return;
	help(b, "xlb_link_xdp_actions_total", "counter",
	     "XDP verdicts on packets that came in on an attached link");
	for (i = 0; i < d->n_links; i++) {
		const struct xlbd_link *l = &d->links[i];

		if (l->ifindex <= 0)
			continue;
		memset(act, 0, sizeof(act));
		xlb_dp_link_actions(&d->dp, (__u32)l->ifindex, act);
		n = xlbd_link_lowers(l->ifindex, lowers, 16);
		for (j = 0; j < n && j < 16; j++) {
			__u64 more[XLB_ACTIONS] = { 0 };

			xlb_dp_link_actions(&d->dp, (__u32)lowers[j], more);
			for (k = 0; k < XLB_ACTIONS; k++)
				act[k] += more[k];
		}
		for (k = 0; k < XLB_ACTIONS; k++)
			bprintf(b, "xlb_link_xdp_actions_total{link=\"%s\",action=\"%s\"} %llu\n",
				l->ifname, actions[k],
				(unsigned long long)act[k]);
	}
}

/* The packets of quic VIPs by what their connection ID did (bpf/quic.h). */
static void render_quic(struct xlbd *d, struct buf *b)
{
	char vs[XLB_VIP_STR_MAX];
	bool any = false;
	size_t i;
	int k;

	for (i = 0; i < d->state.n_vips; i++) {
		struct xlb_quic_stats st = { 0 };
		const __u64 *w = (const __u64 *)&st;

		if (!d->state.vips[i].quic || d->rt_vips[i].id == UINT32_MAX)
			continue;
		if (!any)
			help(b, "xlb_vip_quic_packets_total", "counter",
			     "packets of a quic VIP: routed by connection ID, or as any flow and why");
		any = true;
		xlb_dp_quic_stats(&d->dp, d->rt_vips[i].id, &st);
		xlb_vip_str(&d->state.vips[i].key, vs);
		for (k = 0; k < XLB_QUIC_STATS_N; k++)
			bprintf(b, "xlb_vip_quic_packets_total{vip=\"%s\",outcome=\"%s\"} %llu\n",
				vs, xlb_quic_stat_names[k],
				(unsigned long long)w[k]);
	}
}

static void render(struct xlbd *d, struct buf *b)
{
	__u64 ev[XLB_EV_MAX] = { 0 }, act[XLB_ACTIONS] = { 0 };
	static const char *const actions[XLB_ACTIONS] = {
		"aborted", "drop", "pass", "tx", "redirect" };
	struct xlbd_ct_figures ctf;
	size_t k;
	__u32 ct = 0;

	help(b, "xlb_up", "gauge", "1 while xlbd runs");
	bprintf(b, "xlb_up 1\n");
	if (!d->ready)
		return;		/* still starting */
	help(b, "xlb_generation", "gauge",
	     "the daemon's generation: configuration changes accepted");
	bprintf(b, "xlb_generation %llu\n", (unsigned long long)d->generation);
	help(b, "xlb_uptime_seconds", "gauge", "seconds since xlbd started");
	bprintf(b, "xlb_uptime_seconds %.3f\n", xlbd_now() - d->started_at);

	if (d->cl) {
		char *t = xlbd_cluster_metrics(d);

		if (t)
			bprintf(b, "%s", t);
		free(t);
	}

	render_vips(d, b);
	render_backends(d, b);
	render_backend_traffic(d, b);

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
	render_links(d, b, actions);
	render_quic(d, b);
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
	help(b, "xlb_health_failover_total", "counter",
	     "health verdicts written to the data path's member records at once");
	bprintf(b, "xlb_health_failover_total{to=\"down\"} %llu\n",
		(unsigned long long)d->failover.downs);
	bprintf(b, "xlb_health_failover_total{to=\"up\"} %llu\n",
		(unsigned long long)d->failover.ups);
	help(b, "xlb_health_failover_last_seconds", "gauge",
	     "the last down verdict until its member record was stored");
	bprintf(b, "xlb_health_failover_last_seconds %.9f\n",
		d->failover.last_ms / 1e3);
	help(b, "xlb_health_failover_max_seconds", "gauge",
	     "the longest down verdict until its member record was stored");
	bprintf(b, "xlb_health_failover_max_seconds %.9f\n",
		d->failover.max_ms / 1e3);
	help(b, "xlb_bound_marks_total", "counter",
	     "members marked full or cleared by bounded loads");
	bprintf(b, "xlb_bound_marks_total %llu\n",
		(unsigned long long)d->bound_marks);
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
	{
		char *t;

		xlbd_announce_metrics(d, &t);
		if (t)
			bprintf(b, "%s", t);
		free(t);
	}
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

/*
 * The server's thread is created by a thread that gave up every privilege
 * first (privs.c), so it has none either: it parses what anyone who
 * reaches the port sends.  The socket is bound before, with the daemon's
 * rights, so any port works.
 */
struct spawn {
	struct xlbd *d;
	int fd;
	unsigned int flags;
	void *mhd;
};

static void *spawner(void *arg)
{
	struct spawn *sp = arg;

	xlbd_privs_none("xlbd-metrics");
	sp->mhd = MHD_start_daemon(sp->flags, 0, NULL, NULL, answer, sp->d,
				   MHD_OPTION_LISTEN_SOCKET, sp->fd,
				   MHD_OPTION_CONNECTION_LIMIT, 16u,
				   MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				   MHD_OPTION_END);
	return NULL;
}

int xlbd_metrics_start(struct xlbd *d, struct xlb_err *err)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in sa4 = { .sin_family = AF_INET };
	struct spawn sp = { .d = d, .fd = -1,
			    .flags = MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_ERROR_LOG };
	char host[64];
	const char *colon;
	struct sockaddr *sa;
	socklen_t salen;
	uint32_t port;
	pthread_t th;
	size_t hl;
	int one = 1;

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
		salen = sizeof(sa6);
	} else {
		if (inet_pton(AF_INET, host, &sa4.sin_addr) != 1)
			goto bad;
		sa4.sin_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&sa4;
		salen = sizeof(sa4);
	}
	sp.fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sp.fd < 0 ||
	    setsockopt(sp.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (sa == (struct sockaddr *)&sa6 &&
	     setsockopt(sp.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(sp.fd, sa, salen) || listen(sp.fd, 32)) {
		int e = errno;

		if (sp.fd >= 0)
			close(sp.fd);
		return xlb_errf(err, e,
				"cannot serve metrics on %s: %s (address in use or not local?)",
				d->o.metrics, strerror(e));
	}
	if (pthread_create(&th, NULL, spawner, &sp)) {
		close(sp.fd);
		return xlb_errf(err, EAGAIN, "cannot start the metrics server");
	}
	pthread_join(th, NULL);
	if (!sp.mhd) {
		close(sp.fd);
		return xlb_errf(err, EAGAIN, "cannot start the metrics server on %s",
				d->o.metrics);
	}
	d->metrics = sp.mhd;
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
