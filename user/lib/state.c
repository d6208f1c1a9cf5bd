// SPDX-License-Identifier: GPL-2.0
/*
 * The desired state (user/lib/state.h) and the one way it changes: commands of
 * the grammar (user/lib/config.h), each checked in full before it touches the
 * state, and transactions of them that apply whole or not at all
 * (docs/design.md contract 8).
 *
 * Arrays stay sorted (links by ifname, VIPs by key, backends by VIP and
 * name): lookups are binary searches, a VIP's backends are contiguous, and
 * equal states are equal arrays, which is what makes `save` canonical.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "state.h"

#define HEALTH_INTERVAL_DEFAULT	2000
#define HEALTH_TIMEOUT_DEFAULT	1000
#define HEALTH_RISE_DEFAULT	2
#define HEALTH_FALL_DEFAULT	3
#define HEALTH_STATUS_DEFAULT	200
#define PANIC_DEFAULT		50

/* --- defaults ------------------------------------------------------------- */

void xlb_health_init(struct xlb_health *h, uint8_t kind)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->interval_ms = HEALTH_INTERVAL_DEFAULT;
	h->timeout_ms = HEALTH_TIMEOUT_DEFAULT;
	h->rise = HEALTH_RISE_DEFAULT;
	h->fall = HEALTH_FALL_DEFAULT;
	h->http_status = HEALTH_STATUS_DEFAULT;
	strcpy(h->http_path, "/");
}

void xlb_vip_conf_init(struct xlb_vip_conf *v, const struct xlb_vip_key *key)
{
	memset(v, 0, sizeof(*v));
	v->key = *key;
	v->algo = XLB_ALGO_MAGLEV;
	v->table_size = XLB_TABLE_SIZE_DEFAULT;
	v->vnodes = XLB_RING_VNODES_DEFAULT;
	v->hash_mode = XLB_HASH_5TUPLE;
	v->encap = XLB_ENCAP_IPIP;
	v->panic_pct = PANIC_DEFAULT;
	v->quic_sid_len = XLB_QUIC_SID_DEFAULT;
	v->quic_nonce_len = XLB_QUIC_NONCE_DEFAULT;
	xlb_health_init(&v->health, XLB_HEALTH_NONE);
}

void xlb_backend_conf_init(struct xlb_backend_conf *b,
			   const struct xlb_vip_key *vip, uint8_t family,
			   const __be32 addr[4])
{
	_Static_assert(sizeof(b->name) >= XLB_ADDR_STR_MAX, "name holds an address");

	memset(b, 0, sizeof(*b));
	b->vip = *vip;
	b->family = family;
	memcpy(b->addr, addr, sizeof(b->addr));
	xlb_addr_str(family, addr, b->name);
	b->weight = 1;
	b->admin = XLB_ADMIN_ACTIVE;
	xlb_health_init(&b->health, XLB_HEALTH_INHERIT);
}

void xlb_state_init(struct xlb_state *s)
{
	memset(s, 0, sizeof(*s));
	s->global.gue_port = XLB_GUE_PORT_DEFAULT;
	s->global.mtu = XLB_MTU_DEFAULT;
	s->global.ttl = XLB_TTL_DEFAULT;
	s->global.udp_idle_s = XLB_UDP_IDLE_DEFAULT;
	s->global.new_flow_rate = XLB_CT_RATE_DEFAULT;
}

void xlb_state_free(struct xlb_state *s)
{
	free(s->links);
	free(s->vips);
	free(s->backends);
	xlb_state_init(s);
}

/* --- sorted arrays -------------------------------------------------------- */

/* Room for n and then some: arrays grow by doubling, from 4. */
static size_t cap_for(size_t n)
{
	size_t c = 4;

	while (c < n)
		c *= 2;
	return c;
}

/*
 * A page fault costs as much as zeroing a 4 KiB page several times over
 * on a virtual machine, and a state of many backends would take
 * thousands of them in 4 KiB pages.  The advice covers the allocation's
 * pages rounded out (its start is aligned): rounded in, it would split
 * the mapping.
 */
void *xlb_mem_alloc(size_t len, bool zero)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (len < XLB_MEM_HUGE_MIN)
		return zero ? calloc(1, len ? len : 1) : malloc(len ? len : 1);
	if (posix_memalign(&p, XLB_MEM_HUGE_MIN, len))
		return NULL;
	madvise(p, (len + page - 1) & ~(page - 1), MADV_HUGEPAGE);
	if (zero)
		memset(p, 0, len);
	return p;
}

/*
 * The array of n elements grown to cap: realloc while it is small; a
 * large one moves into a fresh aligned allocation (realloc's mremap
 * would move its huge pages to an address of another alignment, where
 * the kernel splits them).
 */
static void *arr_grow(void *arr, size_t n, size_t sz, size_t cap)
{
	void *a;

	if (cap * sz < XLB_MEM_HUGE_MIN)
		return realloc(arr, cap * sz);
	a = xlb_mem_alloc(cap * sz, false);
	if (a && n)
		memcpy(a, arr, n * sz);
	if (a)
		free(arr);
	return a;
}

/*
 * Insert elem at pos of an array with room for *cap; returns the (maybe
 * moved) array, NULL if out of memory.
 */
static void *arr_insert(void *arr, size_t *n, size_t *cap, size_t sz,
			size_t pos, const void *elem)
{
	char *a = arr;

	if (*n >= *cap) {
		a = arr_grow(arr, *n, sz, cap_for(*n + 1));
		if (!a)
			return NULL;
		*cap = cap_for(*n + 1);
	}
	memmove(a + (pos + 1) * sz, a + pos * sz, (*n - pos) * sz);
	memcpy(a + pos * sz, elem, sz);
	(*n)++;
	return a;
}

static void arr_remove(void *arr, size_t *n, size_t sz, size_t pos,
		       size_t count)
{
	char *a = arr;

	if (!count)	/* a VIP without backends: the array may be NULL */
		return;
	memmove(a + pos * sz, a + (pos + count) * sz,
		(*n - pos - count) * sz);
	*n -= count;
}

/* Store elem at index to of the array without index from; no allocation. */
static void arr_reposition(void *arr, size_t sz, size_t from, size_t to,
			   const void *elem)
{
	char *a = arr;

	if (to > from)
		memmove(a + from * sz, a + (from + 1) * sz, (to - from) * sz);
	else if (to < from)
		memmove(a + (to + 1) * sz, a + to * sz, (from - to) * sz);
	memcpy(a + to * sz, elem, sz);
}

static void *arr_dup(const void *arr, size_t n, size_t sz, size_t *cap,
		     int *ret)
{
	void *a;

	*cap = 0;
	if (!n)
		return NULL;
	a = xlb_mem_alloc(cap_for(n) * sz, false);
	if (!a) {
		*ret = -ENOMEM;
		return NULL;
	}
	memcpy(a, arr, n * sz);
	*cap = cap_for(n);
	return a;
}

int xlb_state_copy(struct xlb_state *dst, const struct xlb_state *src)
{
	int ret = 0;

	xlb_state_init(dst);
	dst->global = src->global;
	dst->links = arr_dup(src->links, src->n_links, sizeof(*src->links),
			     &dst->cap_links, &ret);
	dst->vips = arr_dup(src->vips, src->n_vips, sizeof(*src->vips),
			    &dst->cap_vips, &ret);
	dst->backends = arr_dup(src->backends, src->n_backends,
				sizeof(*src->backends), &dst->cap_backends,
				&ret);
	if (ret) {
		xlb_state_free(dst);
		return ret;
	}
	dst->n_links = src->n_links;
	dst->n_vips = src->n_vips;
	dst->n_backends = src->n_backends;
	return 0;
}

int xlb_state_reserve(struct xlb_state *s, size_t backends)
{
	void *b;

	if (backends <= s->cap_backends)
		return 0;
	b = arr_grow(s->backends, s->n_backends, sizeof(*s->backends),
		     backends);
	if (!b)
		return -ENOMEM;
	s->backends = b;
	s->cap_backends = backends;
	return 0;
}

/* a + b as one new array of their kind, with room for cap_for(na + nb) */
static void *arr_cat(const void *a, size_t na, const void *b, size_t nb,
		     size_t sz)
{
	char *c = xlb_mem_alloc(cap_for(na + nb) * sz, false);

	if (!c)
		return NULL;
	if (na)
		memcpy(c, a, na * sz);
	if (nb)
		memcpy(c + na * sz, b, nb * sz);
	return c;
}

/* --- order and lookups ---------------------------------------------------- */

int xlb_vip_key_cmp(const struct xlb_vip_key *a, const struct xlb_vip_key *b)
{
	int i;

	/* most calls compare a VIP with itself: a file's backends in order */
	if (!((a->addr[0] ^ b->addr[0]) | (a->addr[1] ^ b->addr[1]) |
	      (a->addr[2] ^ b->addr[2]) | (a->addr[3] ^ b->addr[3])) &&
	    a->port == b->port && a->proto == b->proto &&
	    a->family == b->family)
		return 0;
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	/* network order: word by word is byte by byte */
	for (i = 0; i < 4; i++)
		if (a->addr[i] != b->addr[i])
			return ntohl(a->addr[i]) < ntohl(b->addr[i]) ? -1 : 1;
	if (a->port != b->port)
		return ntohs(a->port) < ntohs(b->port) ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	return 0;
}

/* Backends sort by VIP, then name; name NULL sorts before every name. */
static int backend_cmp(const struct xlb_backend_conf *b,
		       const struct xlb_vip_key *vip, const char *name)
{
	int c = xlb_vip_key_cmp(&b->vip, vip);

	if (c || !name)
		return c ? c : 1;
	return strcmp(b->name, name);
}

/* First index whose element does not sort before the probe. */
static size_t vip_lower(const struct xlb_state *s,
			const struct xlb_vip_key *key)
{
	size_t lo = 0, hi = s->n_vips, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (xlb_vip_key_cmp(&s->vips[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t backend_lower(const struct xlb_state *s,
			    const struct xlb_vip_key *vip, const char *name)
{
	size_t lo = 0, hi = s->n_backends, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (backend_cmp(&s->backends[mid], vip, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The backends of a VIP are [*lo, *hi). */
static void backend_range(const struct xlb_state *s,
			  const struct xlb_vip_key *vip, size_t *lo, size_t *hi)
{
	size_t l, h = s->n_backends, mid;
	int last = h ? xlb_vip_key_cmp(&s->backends[h - 1].vip, vip) : -1;

	/* a file in canonical order adds every backend at the end */
	if (last < 0) {
		*lo = *hi = h;
		return;
	}
	if (!last) {
		/*
		 * The last VIP's, as every add of a file in canonical order:
		 * from the end back by doubling steps, then a binary search in
		 * the last step, all within the VIP's own backends.
		 */
		static __thread size_t first_hint;	/* found last */
		size_t step = 1, in = h - 1, out;

		/* still the first of this VIP's: the one before is not */
		if (first_hint < h &&
		    !xlb_vip_key_cmp(&s->backends[first_hint].vip, vip) &&
		    (!first_hint ||
		     xlb_vip_key_cmp(&s->backends[first_hint - 1].vip, vip))) {
			*lo = first_hint;
			*hi = h;
			return;
		}
		while (step <= in &&
		       !xlb_vip_key_cmp(&s->backends[in - step].vip, vip)) {
			in -= step;
			step *= 2;
		}
		out = step <= in ? in - step : 0;
		if (step > in && !xlb_vip_key_cmp(&s->backends[0].vip, vip))
			in = 0;
		/* backends[out] is another VIP's (or out == in == 0): the
		 * first of this VIP's is in (out, in] */
		while (out + 1 < in) {
			mid = out + (in - out) / 2;
			if (xlb_vip_key_cmp(&s->backends[mid].vip, vip))
				out = mid;
			else
				in = mid;
		}
		*lo = first_hint = in;
		*hi = h;
		return;
	}
	*lo = backend_lower(s, vip, NULL);
	l = *lo;
	while (l < h) {
		mid = l + (h - l) / 2;
		if (xlb_vip_key_cmp(&s->backends[mid].vip, vip) <= 0)
			l = mid + 1;
		else
			h = mid;
	}
	*hi = l;
}

static size_t link_lower(const struct xlb_state *s, const char *ifname)
{
	size_t i;

	for (i = 0; i < s->n_links; i++)
		if (strcmp(s->links[i].ifname, ifname) >= 0)
			break;
	return i;
}

/* Index of the VIP, or -1. */
static long vip_index(const struct xlb_state *s, const struct xlb_vip_key *key)
{
	/*
	 * The VIP found last, per thread: walks over the backends (sorted by
	 * VIP) ask for one VIP many times in a row.
	 */
	static __thread size_t hint;
	size_t i;

	/* a file in canonical order names the last VIP added, the last one */
	if (s->n_vips && !xlb_vip_key_cmp(&s->vips[s->n_vips - 1].key, key))
		return (long)s->n_vips - 1;
	if (hint < s->n_vips && !xlb_vip_key_cmp(&s->vips[hint].key, key))
		return (long)hint;
	i = vip_lower(s, key);

	if (i < s->n_vips && !xlb_vip_key_cmp(&s->vips[i].key, key)) {
		hint = i;
		return (long)i;
	}
	return -1;
}

static long backend_index(const struct xlb_state *s,
			  const struct xlb_vip_key *vip, uint8_t family,
			  const __be32 addr[4])
{
	size_t lo, hi, i;

	backend_range(s, vip, &lo, &hi);
	for (i = lo; i < hi; i++) {
		const __be32 *a = s->backends[i].addr;

		if (a[0] == addr[0] && a[1] == addr[1] && a[2] == addr[2] &&
		    a[3] == addr[3] && s->backends[i].family == family)
			return (long)i;
	}
	return -1;
}

static long backend_by_name(const struct xlb_state *s,
			    const struct xlb_vip_key *vip, const char *name)
{
	size_t i = backend_lower(s, vip, name);

	if (i < s->n_backends && !backend_cmp(&s->backends[i], vip, name))
		return (long)i;
	return -1;
}

const struct xlb_vip_conf *xlb_state_find_vip(const struct xlb_state *s,
					      const struct xlb_vip_key *key)
{
	long i = vip_index(s, key);

	return i < 0 ? NULL : &s->vips[i];
}

const struct xlb_backend_conf *
xlb_state_find_backend(const struct xlb_state *s, const struct xlb_vip_key *vip,
		       uint8_t family, const __be32 addr[4])
{
	long i = backend_index(s, vip, family, addr);

	return i < 0 ? NULL : &s->backends[i];
}

const struct xlb_link_conf *xlb_state_find_link(const struct xlb_state *s,
						const char *ifname)
{
	size_t i = link_lower(s, ifname);

	if (i < s->n_links && !strcmp(s->links[i].ifname, ifname))
		return &s->links[i];
	return NULL;
}

size_t xlb_state_vip_backends(const struct xlb_state *s,
			      const struct xlb_vip_key *vip,
			      const struct xlb_backend_conf **out, size_t max)
{
	size_t lo, hi, i;

	backend_range(s, vip, &lo, &hi);
	for (i = lo; i < hi && i - lo < max; i++)
		out[i - lo] = &s->backends[i];
	return hi - lo;
}

/* --- equality ------------------------------------------------------------- */

static bool health_equal(const struct xlb_health *a, const struct xlb_health *b)
{
	return a->kind == b->kind && a->port == b->port &&
	       a->interval_ms == b->interval_ms &&
	       a->timeout_ms == b->timeout_ms && a->rise == b->rise &&
	       a->fall == b->fall && a->http_status == b->http_status &&
	       !strcmp(a->http_path, b->http_path);
}

static bool vip_equal(const struct xlb_vip_conf *a, const struct xlb_vip_conf *b)
{
	return !xlb_vip_key_cmp(&a->key, &b->key) && a->algo == b->algo &&
	       a->table_size == b->table_size && a->vnodes == b->vnodes &&
	       a->hash_mode == b->hash_mode && a->encap == b->encap &&
	       a->stateless == b->stateless && a->panic_pct == b->panic_pct &&
	       a->health_consensus == b->health_consensus &&
	       a->quic == b->quic && a->quic_cr == b->quic_cr &&
	       a->quic_sid_len == b->quic_sid_len &&
	       a->quic_nonce_len == b->quic_nonce_len &&
	       a->bound_pct == b->bound_pct &&
	       a->src4 == b->src4 && !memcmp(a->src6, b->src6, sizeof(a->src6)) &&
	       health_equal(&a->health, &b->health);
}

static bool backend_equal(const struct xlb_backend_conf *a,
			  const struct xlb_backend_conf *b)
{
	return !xlb_vip_key_cmp(&a->vip, &b->vip) && a->family == b->family &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       !strcmp(a->name, b->name) && a->weight == b->weight &&
	       a->admin == b->admin && health_equal(&a->health, &b->health) &&
	       a->quic_id_len == b->quic_id_len &&
	       !memcmp(a->quic_id, b->quic_id, sizeof(a->quic_id));
}

static bool global_equal(const struct xlb_global_conf *a,
			 const struct xlb_global_conf *b)
{
	return a->key_set == b->key_set && a->key.k0 == b->key.k0 &&
	       a->key.k1 == b->key.k1 && a->src4 == b->src4 &&
	       !memcmp(a->src6, b->src6, sizeof(a->src6)) &&
	       a->gue_port == b->gue_port && a->mtu == b->mtu &&
	       a->ttl == b->ttl && a->udp_idle_s == b->udp_idle_s &&
	       a->new_flow_rate == b->new_flow_rate &&
	       a->announce_table == b->announce_table;
}

bool xlb_state_equal(const struct xlb_state *a, const struct xlb_state *b)
{
	size_t i;

	if (!global_equal(&a->global, &b->global) ||
	    a->n_links != b->n_links || a->n_vips != b->n_vips ||
	    a->n_backends != b->n_backends)
		return false;
	for (i = 0; i < a->n_links; i++)
		if (strcmp(a->links[i].ifname, b->links[i].ifname) ||
		    a->links[i].mode != b->links[i].mode)
			return false;
	for (i = 0; i < a->n_vips; i++)
		if (!vip_equal(&a->vips[i], &b->vips[i]))
			return false;
	for (i = 0; i < a->n_backends; i++)
		if (!backend_equal(&a->backends[i], &b->backends[i]))
			return false;
	return true;
}

int xlb_state_join(struct xlb_state *s, struct xlb_state *tail)
{
	struct xlb_state empty;
	void *v, *b;

	xlb_state_init(&empty);
	if (tail->n_links || !tail->n_vips ||
	    !global_equal(&tail->global, &empty.global) ||
	    (s->n_vips && xlb_vip_key_cmp(&s->vips[s->n_vips - 1].key,
					  &tail->vips[0].key) >= 0))
		return -EINVAL;
	/*
	 * Into new arrays, even when s has the room: an array written
	 * while the file was read and filled up by the join made the
	 * daemon's first commit, which walks it, slower by as much as the
	 * copy saves (measured with xlb-bench control's restart).
	 */
	v = arr_cat(s->vips, s->n_vips, tail->vips, tail->n_vips,
		    sizeof(*s->vips));
	b = arr_cat(s->backends, s->n_backends, tail->backends,
		    tail->n_backends, sizeof(*s->backends));
	if (!v || !b) {
		free(v);
		free(b);
		return -ENOMEM;
	}
	free(s->vips);
	free(s->backends);
	s->vips = v;
	s->backends = b;
	s->n_vips += tail->n_vips;
	s->n_backends += tail->n_backends;
	s->cap_vips = cap_for(s->n_vips);
	s->cap_backends = cap_for(s->n_backends);
	xlb_state_free(tail);
	return 0;
}

/* --- checks shared by apply and validate ---------------------------------- */

static bool health_needs_port(uint8_t kind)
{
	return kind == XLB_HEALTH_TCP || kind == XLB_HEALTH_HTTP ||
	       kind == XLB_HEALTH_UDP;
}

static const char *health_name(uint8_t kind)
{
	static const char *const names[] = { "none", "tcp", "http", "udp",
					     "inherit" };

	return kind < 5 ? names[kind] : "unknown";
}

/* Which rule a health check breaks: 0, XLB_OPT_TIMEOUT or _HEALTH_PORT. */
static int health_fault(const struct xlb_health *h,
			const struct xlb_vip_key *vip)
{
	if (h->timeout_ms >= h->interval_ms)
		return XLB_OPT_TIMEOUT;
	if (!vip->port && !h->port && health_needs_port(h->kind))
		return XLB_OPT_HEALTH_PORT;
	return 0;
}

/* what: "VIP ..." or "backend ... of VIP ...". */
static int health_error(const struct xlb_health *h, int fault,
			const char *what, struct xlb_err *err)
{
	if (fault == XLB_OPT_TIMEOUT)
		return xlb_errf(err, EINVAL,
				"%s: health timeout %u ms must be less than the interval %u ms",
				what, h->timeout_ms, h->interval_ms);
	return xlb_errf(err, EINVAL,
			"%s: the VIP serves every port, so health %s needs a health-port",
			what, health_name(h->kind));
}

/* Members of a VIP as a table build would see them. */
struct members {
	size_t n;
	uint64_t weight;	/* of active backends: what the ring places */
};

static void members_add(struct members *m, const struct xlb_backend_conf *b)
{
	m->n++;
	if (b->admin == XLB_ADMIN_ACTIVE)
		m->weight += b->weight;
}

/*
 * The backends of VIP v except the one at index skip (-1: none).  Only the
 * ring needs their weight, so only the ring pays for the walk.
 */
static void members_of(const struct xlb_state *s,
		       const struct xlb_vip_conf *v, long skip,
		       struct members *m)
{
	size_t lo, hi, i;

	memset(m, 0, sizeof(*m));
	backend_range(s, &v->key, &lo, &hi);
	m->n = hi - lo - (skip >= 0);
	if (v->algo != XLB_ALGO_RING)
		return;
	for (i = lo; i < hi; i++)
		if ((long)i != skip && s->backends[i].admin == XLB_ADMIN_ACTIVE)
			m->weight += s->backends[i].weight;
}

static int check_capacity(const struct xlb_vip_conf *v,
			  const struct members *m, int *where,
			  struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX];
	uint64_t tokens = m->weight * v->vnodes;

	if (m->n > XLB_BACKENDS_PER_VIP) {
		*where = XLB_WHERE_OBJECT;
		return xlb_errf(err, ENOSPC,
				"VIP %s would have %zu backends; the limit is %d per VIP",
				xlb_vip_str(&v->key, vs), m->n,
				XLB_BACKENDS_PER_VIP);
	}
	if (m->n > v->table_size) {
		*where = XLB_OPT_TABLE_SIZE;
		return xlb_errf(err, E2BIG,
				"VIP %s would have %zu backends but its table has %u slots; choose a larger table-size",
				xlb_vip_str(&v->key, vs), m->n, v->table_size);
	}
	if (v->algo == XLB_ALGO_RING && tokens > XLB_RING_TOKENS_MAX) {
		*where = XLB_OPT_VNODES;
		return xlb_errf(err, E2BIG,
				"VIP %s: vnodes %u x total weight %llu = %llu ring tokens; the limit is %u",
				xlb_vip_str(&v->key, vs), v->vnodes, (unsigned long long)m->weight,
				(unsigned long long)tokens, XLB_RING_TOKENS_MAX);
	}
	return 0;
}

static int check_vip_health(const struct xlb_vip_conf *v, int *where,
			    struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], what[XLB_VIP_STR_MAX + 8];
	int fault = health_fault(&v->health, &v->key);

	if (!fault)
		return 0;
	*where = fault;
	snprintf(what, sizeof(what), "VIP %s", xlb_vip_str(&v->key, vs));
	return health_error(&v->health, fault, what, err);
}

static int check_backend_health(const struct xlb_backend_conf *b, int *where,
				struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	char what[XLB_VIP_STR_MAX + XLB_ADDR_STR_MAX + 24];
	int fault = health_fault(&b->health, &b->vip);

	if (!fault)
		return 0;
	*where = fault;
	snprintf(what, sizeof(what), "backend %s of VIP %s",
		 xlb_addr_str(b->family, b->addr, as), xlb_vip_str(&b->vip, vs));
	return health_error(&b->health, fault, what, err);
}

static const char *quic_id_str(const struct xlb_backend_conf *b, char *buf)
{
	int i;

	for (i = 0; i < b->quic_id_len; i++)
		sprintf(buf + 2 * i, "%02x", b->quic_id[i]);
	buf[2 * i] = 0;
	return buf;
}

/*
 * QUIC connection-ID routing (bpf/quic.h): a VIP marked quic is UDP and
 * its CIDs fit 20 octets; a VIP not marked keeps the default
 * configuration; a backend's quic-id needs a quic VIP, has its server ID
 * length, and is unique in it.  b (index skip, -1: new; NULL: none) is
 * checked as it would be against the VIP's other backends.
 */
static int check_quic(const struct xlb_state *s, const struct xlb_vip_conf *v,
		      const struct xlb_backend_conf *b, long skip, int *where,
		      struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX], bs[XLB_ADDR_STR_MAX];
	char hex[2 * XLB_QUIC_SID_MAX + 1];
	size_t lo, hi, i, j;

	xlb_vip_str(&v->key, vs);
	if (v->quic && v->key.proto != IPPROTO_UDP) {
		*where = XLB_OPT_QUIC;
		return xlb_errf(err, EINVAL,
				"VIP %s is not UDP: quic is for UDP VIPs", vs);
	}
	if (v->quic_sid_len + v->quic_nonce_len > XLB_QUIC_CID_MAX - 1) {
		*where = XLB_OPT_QUIC_NONCE_LEN;
		return xlb_errf(err, EINVAL,
				"VIP %s: quic-sid-len %u and quic-nonce-len %u make %u octets after the first; a connection ID has at most %d in all",
				vs, v->quic_sid_len, v->quic_nonce_len,
				v->quic_sid_len + v->quic_nonce_len,
				XLB_QUIC_CID_MAX);
	}
	if (!v->quic && (v->quic_cr || v->quic_sid_len != XLB_QUIC_SID_DEFAULT ||
			 v->quic_nonce_len != XLB_QUIC_NONCE_DEFAULT)) {
		*where = v->quic_cr ? XLB_OPT_QUIC_CR :
			 v->quic_sid_len != XLB_QUIC_SID_DEFAULT ?
			 XLB_OPT_QUIC_SID_LEN : XLB_OPT_QUIC_NONCE_LEN;
		return xlb_errf(err, EINVAL,
				"VIP %s is not marked quic: quic-cr, quic-sid-len and quic-nonce-len need quic on",
				vs);
	}
	backend_range(s, &v->key, &lo, &hi);
	for (i = lo; i <= hi; i++) {
		const struct xlb_backend_conf *x = i < hi ? &s->backends[i] : b;

		if (!x || (i < hi && (long)i == skip) || !x->quic_id_len)
			continue;
		xlb_addr_str(x->family, x->addr, as);
		/* the VIP's change, or the backend's quic-id */
		*where = b ? XLB_OPT_QUIC_ID : !v->quic ? XLB_OPT_QUIC :
			     XLB_OPT_QUIC_SID_LEN;
		if (!v->quic)
			return xlb_errf(err, EINVAL,
					"backend %s has quic-id %s but VIP %s is not marked quic (quic on)",
					as, quic_id_str(x, hex), vs);
		if (x->quic_id_len != v->quic_sid_len)
			return xlb_errf(err, EINVAL,
					"backend %s: quic-id %s is %u octets, VIP %s's server IDs are %u (quic-sid-len)",
					as, quic_id_str(x, hex), x->quic_id_len,
					vs, v->quic_sid_len);
		for (j = lo; j < i && j < hi; j++) {
			const struct xlb_backend_conf *y = &s->backends[j];

			if ((long)j == skip || y->quic_id_len != x->quic_id_len ||
			    memcmp(y->quic_id, x->quic_id, x->quic_id_len))
				continue;
			return xlb_errf(err, EEXIST,
					"quic-id %s of backend %s is already backend %s's in VIP %s; server IDs are unique within a VIP",
					quic_id_str(x, hex), as,
					xlb_addr_str(y->family, y->addr, bs),
					vs);
		}
	}
	return 0;
}

/* A VIP as it would be, against its current backends. */
static int check_vip(const struct xlb_state *s, const struct xlb_vip_conf *v,
		     int *where, struct xlb_err *err)
{
	struct members m;
	int ret;

	ret = check_vip_health(v, where, err);
	if (!ret && v->bound_pct && v->stateless) {
		char vs[XLB_VIP_STR_MAX];

		*where = XLB_OPT_BOUND;
		ret = xlb_errf(err, EINVAL,
			       "VIP %s is stateless: a bound needs the connection table (its counts, and flows that stay where the bound sent them)",
			       xlb_vip_str(&v->key, vs));
	}
	if (!ret)
		ret = check_quic(s, v, NULL, -1, where, err);
	if (ret)
		return ret;
	members_of(s, v, -1, &m);
	return check_capacity(v, &m, where, err);
}

/* A backend as it would be, replacing the one at index skip (-1: new). */
static int check_backend(const struct xlb_state *s,
			 const struct xlb_vip_conf *v,
			 const struct xlb_backend_conf *b, long skip,
			 int *where, struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	struct members m;
	long other;
	int ret;

	ret = check_backend_health(b, where, err);
	if (!ret)
		ret = check_quic(s, v, b, skip, where, err);
	if (ret)
		return ret;
	other = backend_by_name(s, &b->vip, b->name);
	if (other >= 0 && other != skip) {
		*where = XLB_OPT_NAME;
		return xlb_errf(err, EEXIST,
				"backend name \"%s\" is already used by %s in VIP %s; names are unique within a VIP",
				b->name,
				xlb_addr_str(s->backends[other].family,
					     s->backends[other].addr, as),
				xlb_vip_str(&b->vip, vs));
	}
	members_of(s, v, skip, &m);
	members_add(&m, b);
	return check_capacity(v, &m, where, err);
}

/* --- commands ------------------------------------------------------------- */

#define TAKE(g, opt, dst, src)					\
	do {							\
		if ((g) & XLB_OPT(opt))				\
			(dst) = (src);				\
	} while (0)

static void health_merge(struct xlb_health *h, const struct xlb_health *o,
			 uint64_t g)
{
	TAKE(g, XLB_OPT_HEALTH, h->kind, o->kind);
	TAKE(g, XLB_OPT_HEALTH_PORT, h->port, o->port);
	TAKE(g, XLB_OPT_INTERVAL, h->interval_ms, o->interval_ms);
	TAKE(g, XLB_OPT_TIMEOUT, h->timeout_ms, o->timeout_ms);
	TAKE(g, XLB_OPT_RISE, h->rise, o->rise);
	TAKE(g, XLB_OPT_FALL, h->fall, o->fall);
	TAKE(g, XLB_OPT_HTTP_STATUS, h->http_status, o->http_status);
	if (g & XLB_OPT(XLB_OPT_HTTP_PATH))
		memcpy(h->http_path, o->http_path, sizeof(h->http_path));
}

static void vip_merge(struct xlb_vip_conf *v, const struct xlb_op *op)
{
	const struct xlb_vip_conf *o = &op->vip;
	uint64_t g = op->given;

	TAKE(g, XLB_OPT_ALGO, v->algo, o->algo);
	TAKE(g, XLB_OPT_TABLE_SIZE, v->table_size, o->table_size);
	TAKE(g, XLB_OPT_VNODES, v->vnodes, o->vnodes);
	TAKE(g, XLB_OPT_HASH, v->hash_mode, o->hash_mode);
	TAKE(g, XLB_OPT_ENCAP, v->encap, o->encap);
	TAKE(g, XLB_OPT_STATELESS, v->stateless, o->stateless);
	TAKE(g, XLB_OPT_PANIC, v->panic_pct, o->panic_pct);
	TAKE(g, XLB_OPT_HEALTH_CONSENSUS, v->health_consensus,
	     o->health_consensus);
	TAKE(g, XLB_OPT_VIP_SRC4, v->src4, o->src4);
	if (g & XLB_OPT(XLB_OPT_VIP_SRC6))
		memcpy(v->src6, o->src6, sizeof(v->src6));
	TAKE(g, XLB_OPT_QUIC, v->quic, o->quic);
	if (g & XLB_OPT(XLB_OPT_QUIC) && !o->quic) {
		/* quic off: the configuration goes with it */
		v->quic_cr = 0;
		v->quic_sid_len = XLB_QUIC_SID_DEFAULT;
		v->quic_nonce_len = XLB_QUIC_NONCE_DEFAULT;
	}
	TAKE(g, XLB_OPT_QUIC_CR, v->quic_cr, o->quic_cr);
	TAKE(g, XLB_OPT_QUIC_SID_LEN, v->quic_sid_len, o->quic_sid_len);
	TAKE(g, XLB_OPT_QUIC_NONCE_LEN, v->quic_nonce_len, o->quic_nonce_len);
	TAKE(g, XLB_OPT_BOUND, v->bound_pct, o->bound_pct);
	health_merge(&v->health, &o->health, g);
}

static void backend_merge(struct xlb_backend_conf *b, const struct xlb_op *op)
{
	const struct xlb_backend_conf *o = &op->backend;
	uint64_t g = op->given;

	if (g & XLB_OPT(XLB_OPT_NAME))
		memcpy(b->name, o->name, sizeof(b->name));
	TAKE(g, XLB_OPT_WEIGHT, b->weight, o->weight);
	TAKE(g, XLB_OPT_STATE, b->admin, o->admin);
	if (g & XLB_OPT(XLB_OPT_QUIC_ID)) {
		b->quic_id_len = o->quic_id_len;
		memcpy(b->quic_id, o->quic_id, sizeof(b->quic_id));
	}
	health_merge(&b->health, &o->health, g);
}

static void global_merge(struct xlb_global_conf *c, const struct xlb_op *op)
{
	const struct xlb_global_conf *o = &op->global;
	uint64_t g = op->given;

	if (g & XLB_OPT(XLB_OPT_KEY)) {
		c->key = o->key;
		c->key_set = true;
	}
	TAKE(g, XLB_OPT_SRC4, c->src4, o->src4);
	if (g & XLB_OPT(XLB_OPT_SRC6))
		memcpy(c->src6, o->src6, sizeof(c->src6));
	TAKE(g, XLB_OPT_GUE_PORT, c->gue_port, o->gue_port);
	TAKE(g, XLB_OPT_MTU, c->mtu, o->mtu);
	TAKE(g, XLB_OPT_TTL, c->ttl, o->ttl);
	TAKE(g, XLB_OPT_UDP_IDLE, c->udp_idle_s, o->udp_idle_s);
	TAKE(g, XLB_OPT_NEW_FLOW_RATE, c->new_flow_rate, o->new_flow_rate);
	TAKE(g, XLB_OPT_ANNOUNCE, c->announce_table, o->announce_table);
}

static int oom(struct xlb_err *err)
{
	return xlb_errf(err, ENOMEM, "out of memory");
}

static int link_attach(struct xlb_state *s, const struct xlb_op *op,
		       struct xlb_err *err)
{
	size_t pos = link_lower(s, op->link.ifname);
	struct xlb_link_conf l = op->link;
	void *p;

	if (pos < s->n_links && !strcmp(s->links[pos].ifname, l.ifname))
		return xlb_errf(err, EEXIST,
				"link %s is already attached; detach it first to change its mode",
				l.ifname);
	if (s->n_links >= XLB_LINKS_MAX)
		return xlb_errf(err, ENOSPC,
				"cannot attach %s: %d links are attached, the limit",
				l.ifname, XLB_LINKS_MAX);
	if (!(op->given & XLB_OPT(XLB_OPT_MODE)))
		l.mode = XLB_ATTACH_NATIVE;
	p = arr_insert(s->links, &s->n_links, &s->cap_links, sizeof(l), pos,
		       &l);
	if (!p)
		return oom(err);
	s->links = p;
	return 0;
}

static int link_detach(struct xlb_state *s, const struct xlb_op *op,
		       struct xlb_err *err)
{
	size_t pos = link_lower(s, op->link.ifname);

	if (pos >= s->n_links || strcmp(s->links[pos].ifname, op->link.ifname))
		return xlb_errf(err, ENOENT, "link %s is not attached",
				op->link.ifname);
	arr_remove(s->links, &s->n_links, sizeof(*s->links), pos, 1);
	return 0;
}

static int vip_missing(const struct xlb_vip_key *key, struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX];

	return xlb_errf(err, ENOENT, "VIP %s does not exist",
			xlb_vip_str(key, vs));
}

static int vip_add(struct xlb_state *s, const struct xlb_op *op, int *where,
		   struct xlb_err *err)
{
	size_t pos = vip_lower(s, &op->vip.key);
	char vs[XLB_VIP_STR_MAX];
	struct xlb_vip_conf v;
	void *p;
	int ret;

	if (pos < s->n_vips && !xlb_vip_key_cmp(&s->vips[pos].key, &op->vip.key))
		return xlb_errf(err, EEXIST,
				"VIP %s already exists; change it with \"vip set\"",
				xlb_vip_str(&op->vip.key, vs));
	if (s->n_vips >= XLB_VIPS_MAX)
		return xlb_errf(err, ENOSPC,
				"VIP %s cannot be added: there are %d VIPs, the limit",
				xlb_vip_str(&op->vip.key, vs), XLB_VIPS_MAX);
	xlb_vip_conf_init(&v, &op->vip.key);
	vip_merge(&v, op);
	ret = check_vip(s, &v, where, err);
	if (ret)
		return ret;
	p = arr_insert(s->vips, &s->n_vips, &s->cap_vips, sizeof(v), pos, &v);
	if (!p)
		return oom(err);
	s->vips = p;
	return 0;
}

static int vip_set(struct xlb_state *s, const struct xlb_op *op, int *where,
		   struct xlb_err *err)
{
	long i = vip_index(s, &op->vip.key);
	struct xlb_vip_conf v;
	int ret;

	if (i < 0)
		return vip_missing(&op->vip.key, err);
	v = s->vips[i];
	vip_merge(&v, op);
	ret = check_vip(s, &v, where, err);
	if (ret)
		return ret;
	s->vips[i] = v;
	return 0;
}

static int vip_del(struct xlb_state *s, const struct xlb_op *op,
		   struct xlb_err *err)
{
	long i = vip_index(s, &op->vip.key);
	size_t lo, hi;

	if (i < 0)
		return vip_missing(&op->vip.key, err);
	backend_range(s, &op->vip.key, &lo, &hi);
	arr_remove(s->backends, &s->n_backends, sizeof(*s->backends), lo,
		   hi - lo);
	arr_remove(s->vips, &s->n_vips, sizeof(*s->vips), (size_t)i, 1);
	return 0;
}

static int backend_missing(const struct xlb_backend_conf *b,
			   struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];

	return xlb_errf(err, ENOENT, "backend %s of VIP %s does not exist",
			xlb_addr_str(b->family, b->addr, as),
			xlb_vip_str(&b->vip, vs));
}

/* The backend's VIP, or NULL with err set and *where pointing at it. */
static const struct xlb_vip_conf *backend_vip(const struct xlb_state *s,
					      const struct xlb_op *op,
					      int *where, struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX];
	long i = vip_index(s, &op->backend.vip);

	if (i >= 0)
		return &s->vips[i];
	*where = XLB_WHERE_VIP;
	xlb_errf(err, ENOENT, "VIP %s does not exist; add it first with \"vip add\"",
		 xlb_vip_str(&op->backend.vip, vs));
	return NULL;
}

static int backend_add(struct xlb_state *s, const struct xlb_op *op,
		       int *where, struct xlb_err *err)
{
	const struct xlb_backend_conf *o = &op->backend;
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	const struct xlb_vip_conf *v = backend_vip(s, op, where, err);
	struct xlb_backend_conf b;
	size_t lo, hi, i, j, end;
	struct members m;
	void *p;
	int ret;

	if (!v)
		return -ENOENT;
	/*
	 * The VIP's backends are found once: a file of 100000 backends is
	 * that many adds, and each would otherwise search the whole array
	 * six times.
	 */
	backend_range(s, &o->vip, &lo, &hi);
	for (i = lo; i < hi; i++) {
		const __be32 *a = s->backends[i].addr;

		if (a[0] == o->addr[0] && a[1] == o->addr[1] &&
		    a[2] == o->addr[2] && a[3] == o->addr[3] &&
		    s->backends[i].family == o->family)
			return xlb_errf(err, EEXIST,
					"backend %s of VIP %s already exists; change it with \"backend set\"",
					xlb_addr_str(o->family, o->addr, as),
					xlb_vip_str(&o->vip, vs));
	}
	if (s->n_backends >= XLB_MEMBERS_MAX)
		return xlb_errf(err, ENOSPC,
				"backend %s of VIP %s cannot be added: there are %d backends in all, the limit",
				xlb_addr_str(o->family, o->addr, as),
				xlb_vip_str(&o->vip, vs), XLB_MEMBERS_MAX);
	xlb_backend_conf_init(&b, &o->vip, o->family, o->addr);
	backend_merge(&b, op);
	ret = check_backend_health(&b, where, err);
	/* a VIP not marked quic holds no quic-id: nothing to walk then */
	if (!ret && (v->quic || b.quic_id_len))
		ret = check_quic(s, v, &b, -1, where, err);
	if (ret)
		return ret;
	/*
	 * Where it goes by name within the VIP, and a name taken there;
	 * after the VIP's last backend in a file in canonical order.
	 */
	i = lo;
	end = hi;
	if (hi > lo && strcmp(s->backends[hi - 1].name, b.name) < 0)
		i = hi;
	for (; i < end;) {
		size_t mid = i + (end - i) / 2;

		if (strcmp(s->backends[mid].name, b.name) < 0)
			i = mid + 1;
		else
			end = mid;
	}
	if (i < hi && !strcmp(s->backends[i].name, b.name)) {
		*where = XLB_OPT_NAME;
		return xlb_errf(err, EEXIST,
				"backend name \"%s\" is already used by %s in VIP %s; names are unique within a VIP",
				b.name,
				xlb_addr_str(s->backends[i].family,
					     s->backends[i].addr, as),
				xlb_vip_str(&b.vip, vs));
	}
	memset(&m, 0, sizeof(m));
	m.n = hi - lo;
	for (j = lo; v->algo == XLB_ALGO_RING && j < hi; j++)
		if (s->backends[j].admin == XLB_ADMIN_ACTIVE)
			m.weight += s->backends[j].weight;
	members_add(&m, &b);
	ret = check_capacity(v, &m, where, err);
	if (ret)
		return ret;
	p = arr_insert(s->backends, &s->n_backends, &s->cap_backends,
		       sizeof(b), i, &b);
	if (!p)
		return oom(err);
	s->backends = p;
	return 0;
}

static int backend_set(struct xlb_state *s, const struct xlb_op *op,
		       int *where, struct xlb_err *err)
{
	const struct xlb_backend_conf *o = &op->backend;
	const struct xlb_vip_conf *v = backend_vip(s, op, where, err);
	struct xlb_backend_conf b;
	size_t pos;
	long i;
	int ret;

	if (!v)
		return -ENOENT;
	i = backend_index(s, &o->vip, o->family, o->addr);
	if (i < 0)
		return backend_missing(o, err);
	b = s->backends[i];
	backend_merge(&b, op);
	ret = check_backend(s, v, &b, i, where, err);
	if (ret)
		return ret;
	/* A new name may move it; see arr_reposition for the index. */
	pos = backend_lower(s, &b.vip, b.name);
	if (pos > (size_t)i)
		pos--;
	arr_reposition(s->backends, sizeof(b), (size_t)i, pos, &b);
	return 0;
}

static int backend_del(struct xlb_state *s, const struct xlb_op *op,
		       int *where, struct xlb_err *err)
{
	const struct xlb_backend_conf *o = &op->backend;
	long i;

	if (!backend_vip(s, op, where, err))
		return -ENOENT;
	i = backend_index(s, &o->vip, o->family, o->addr);
	if (i < 0)
		return backend_missing(o, err);
	arr_remove(s->backends, &s->n_backends, sizeof(*s->backends),
		   (size_t)i, 1);
	return 0;
}

/* add, set or del of a VIP or a backend */
static int apply_member(struct xlb_state *s, const struct xlb_op *op,
			int *where, struct xlb_err *err)
{
	bool vip = op->object == XLB_OBJ_VIP;

	switch (op->verb) {
	case XLB_VERB_ADD:
		return vip ? vip_add(s, op, where, err) :
			     backend_add(s, op, where, err);
	case XLB_VERB_SET:
		return vip ? vip_set(s, op, where, err) :
			     backend_set(s, op, where, err);
	case XLB_VERB_DEL:
		return vip ? vip_del(s, op, err) :
			     backend_del(s, op, where, err);
	}
	return xlb_errf(err, EINVAL, "%s has no verb %u",
			vip ? "vip" : "backend", op->verb);
}

/*
 * A check names the option that states the limit (timeout, table-size);
 * when the command did not give it, point at a related one it gave, or at
 * the object.
 */
static void where_given(const struct xlb_op *op, int *where)
{
	int alt;

	while (*where >= 0 && !(op->given & XLB_OPT(*where))) {
		switch (*where) {
		case XLB_OPT_TIMEOUT:
			alt = XLB_OPT_INTERVAL;
			break;
		case XLB_OPT_HEALTH_PORT:
			alt = XLB_OPT_HEALTH;
			break;
		case XLB_OPT_VNODES:
			alt = XLB_OPT_ALGO;
			break;
		case XLB_OPT_ALGO:
			alt = XLB_OPT_WEIGHT;
			break;
		case XLB_OPT_WEIGHT:
			alt = XLB_OPT_STATE;
			break;
		default:
			alt = XLB_WHERE_OBJECT;
		}
		*where = alt;
	}
}

int xlb_state_apply_at(struct xlb_state *s, const struct xlb_op *op,
		       int *where, struct xlb_err *err)
{
	int dummy, ret;

	if (!where)
		where = &dummy;
	*where = XLB_WHERE_OBJECT;
	switch (op->object) {
	case XLB_OBJ_GLOBAL:
		global_merge(&s->global, op);
		return 0;
	case XLB_OBJ_LINK:
		if (op->verb == XLB_VERB_ATTACH)
			return link_attach(s, op, err);
		return link_detach(s, op, err);
	case XLB_OBJ_VIP:
	case XLB_OBJ_BACKEND:
		ret = apply_member(s, op, where, err);
		break;
	default:
		return xlb_errf(err, EINVAL, "unknown object %u", op->object);
	}
	if (ret)
		where_given(op, where);
	return ret;
}

int xlb_state_apply(struct xlb_state *s, const struct xlb_op *op,
		    struct xlb_err *err)
{
	return xlb_state_apply_at(s, op, NULL, err);
}

int xlb_state_apply_all(struct xlb_state *s, const struct xlb_op *ops,
			size_t n, struct xlb_err *err)
{
	struct xlb_state tmp;
	struct xlb_err e = { "" };
	size_t i;
	int ret;

	if (xlb_state_copy(&tmp, s))
		return oom(err);
	for (i = 0; i < n; i++) {
		ret = xlb_state_apply(&tmp, &ops[i], &e);
		if (ret)
			goto fail;
	}
	ret = xlb_state_validate(&tmp, &e);
	if (ret)
		goto fail;
	xlb_state_free(s);
	*s = tmp;
	return 0;
fail:
	xlb_state_free(&tmp);
	if (n > 1 && i < n)
		return xlb_errf(err, -ret, "command %zu: %s", i + 1, e.msg);
	return xlb_errf(err, -ret, "%s", e.msg);
}

/* --- validation ----------------------------------------------------------- */

static int validate_order(const struct xlb_state *s, struct xlb_err *err)
{
	size_t i;

	for (i = 1; i < s->n_links; i++)
		if (strcmp(s->links[i - 1].ifname, s->links[i].ifname) >= 0)
			return xlb_errf(err, EINVAL,
					"link %s is listed twice or out of order",
					s->links[i].ifname);
	for (i = 1; i < s->n_vips; i++)
		if (xlb_vip_key_cmp(&s->vips[i - 1].key, &s->vips[i].key) >= 0)
			return xlb_errf(err, EINVAL,
					"VIPs are listed twice or out of order");
	for (i = 1; i < s->n_backends; i++)
		if (backend_cmp(&s->backends[i - 1], &s->backends[i].vip,
				s->backends[i].name) > 0)
			return xlb_errf(err, EINVAL,
					"backends are out of order");
	return 0;
}

static int validate_limits(const struct xlb_state *s, struct xlb_err *err)
{
	if (s->n_links > XLB_LINKS_MAX)
		return xlb_errf(err, ENOSPC, "%zu links; the limit is %d",
				s->n_links, XLB_LINKS_MAX);
	if (s->n_vips > XLB_VIPS_MAX)
		return xlb_errf(err, ENOSPC, "%zu VIPs; the limit is %d",
				s->n_vips, XLB_VIPS_MAX);
	if (s->n_backends > XLB_MEMBERS_MAX)
		return xlb_errf(err, ENOSPC, "%zu backends; the limit is %d",
				s->n_backends, XLB_MEMBERS_MAX);
	if (s->n_vips && !s->global.key_set)
		return xlb_errf(err, EINVAL,
				"there are VIPs but no cluster key; set one with \"set key\" and 32 hex digits");
	return 0;
}

/* Bytes the tunnel toward a backend of family adds (bpf/encap.h). */
static unsigned int encap_overhead(uint8_t family, uint8_t encap)
{
	unsigned int alen = family == XLB_FAMILY_INET ? 4 : 16;
	unsigned int ip = family == XLB_FAMILY_INET ? 20 : 40;

	if (encap != XLB_ENCAP_GUE)
		return ip;
	return ip + 8 + sizeof(struct xlb_gue_hdr) +
	       sizeof(struct xlb_gue_hops) + XLB_HOPS * alen;
}

/*
 * An IPv6 VIP's clients are told mtu - overhead when a packet is too big
 * (bpf/structs.h, "Too big"); IPv6 needs at least 1280 (RFC 8200 5).
 */
static int check_ipv6_mtu(const struct xlb_state *s,
			  const struct xlb_vip_conf *v,
			  const struct xlb_backend_conf *b, struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX], as[XLB_ADDR_STR_MAX];
	unsigned int over = encap_overhead(b->family, v->encap);

	if (v->key.family != XLB_FAMILY_INET6 ||
	    s->global.mtu >= XLB_IPV6_MIN_MTU + over)
		return 0;
	return xlb_errf(err, EINVAL,
			"mtu %u: IPv6 VIP %s reaches backend %s through %u bytes of %s over IPv%d, so its clients would be told an MTU of %u; IPv6 needs at least %u: set mtu %u or more",
			s->global.mtu, xlb_vip_str(&v->key, vs),
			xlb_addr_str(b->family, b->addr, as), over,
			v->encap == XLB_ENCAP_GUE ? "GUE" : "IP in IP",
			b->family, s->global.mtu - over, XLB_IPV6_MIN_MTU,
			XLB_IPV6_MIN_MTU + over);
}

/* The backends [lo, hi) of VIP v: names, health, capacity, MTU. */
static int validate_members(const struct xlb_state *s,
			    const struct xlb_vip_conf *v, size_t lo, size_t hi,
			    struct xlb_err *err)
{
	char vs[XLB_VIP_STR_MAX];
	struct members m = { 0 };
	int where, ret;
	size_t i;

	for (i = lo; i < hi; i++) {
		if (i > lo && !strcmp(s->backends[i - 1].name,
				      s->backends[i].name))
			return xlb_errf(err, EEXIST,
					"backend name \"%s\" is used twice in VIP %s",
					s->backends[i].name,
					xlb_vip_str(&v->key, vs));
		ret = check_backend_health(&s->backends[i], &where, err);
		if (!ret)
			ret = check_ipv6_mtu(s, v, &s->backends[i], err);
		if (ret)
			return ret;
		members_add(&m, &s->backends[i]);
	}
	return check_capacity(v, &m, &where, err);
}

int xlb_state_validate(const struct xlb_state *s, struct xlb_err *err)
{
	size_t i, lo, hi, seen = 0;
	char as[XLB_ADDR_STR_MAX];
	int where, ret;

	ret = validate_order(s, err);
	if (!ret)
		ret = validate_limits(s, err);
	for (i = 0; !ret && i < s->n_vips; i++) {
		ret = check_vip_health(&s->vips[i], &where, err);
		if (!ret)
			ret = check_quic(s, &s->vips[i], NULL, -1, &where, err);
		if (ret)
			break;
		backend_range(s, &s->vips[i].key, &lo, &hi);
		ret = validate_members(s, &s->vips[i], lo, hi, err);
		seen += hi - lo;
	}
	if (ret || seen == s->n_backends)
		return ret;
	for (i = 0; i < s->n_backends; i++)
		if (vip_index(s, &s->backends[i].vip) < 0)
			break;
	return xlb_errf(err, ENOENT, "backend %s belongs to no VIP",
			i < s->n_backends ?
			xlb_addr_str(s->backends[i].family,
				     s->backends[i].addr, as) : "?");
}
