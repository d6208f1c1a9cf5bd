// SPDX-License-Identifier: GPL-2.0
/*
 * The state as parsed, kept beside the text it was parsed from.
 *
 * A large state.conf takes tens of milliseconds to parse (100 000 backends:
 * 4 MiB of text, 27 MiB of arrays), on the path of every restart.  The
 * cache holds the arrays themselves, with the length and hash of the exact
 * text they were parsed from: a reader that has that text reads the
 * arrays (a copy and two hashes) instead of parsing it again.  The text
 * stays the one source of truth; a cache that is stale, torn, of another
 * layout or damaged is reported and not used.
 *
 * The file: a header (struct cache_head, this host's byte order), then
 * the global settings, the links, the VIPs and the backends as they are in
 * memory.  XXH3 hashes the text, the header and the arrays.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xxhash.h>

#include "state.h"

/*
 * Raise with any change of the structs the file holds.  Their sizes are
 * in the header too, and the build stops below when one of them changes,
 * so a change of layout cannot go unnoticed.
 */
#define CACHE_VERSION	1
_Static_assert(sizeof(struct xlb_global_conf) == 64 &&
	       sizeof(struct xlb_link_conf) == 17 &&
	       sizeof(struct xlb_vip_conf) == 208 &&
	       sizeof(struct xlb_backend_conf) == 272,
	       "a struct of the state cache changed: raise CACHE_VERSION and these sizes");

static const char cache_magic[8] = "XLBSTATC";

struct cache_head {
	char magic[8];
	uint32_t version;
	uint16_t sz_global, sz_link, sz_vip, sz_backend;
	uint32_t pad;
	uint64_t text_len;
	uint64_t text_hash;
	uint64_t n_links, n_vips, n_backends;
	uint64_t payload_hash;	/* global, links, VIPs, backends */
	uint64_t head_hash;	/* of the bytes before it */
};

static void head_fill(struct cache_head *h, const char *text, size_t len)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, cache_magic, sizeof(h->magic));
	h->version = CACHE_VERSION;
	h->sz_global = sizeof(struct xlb_global_conf);
	h->sz_link = sizeof(struct xlb_link_conf);
	h->sz_vip = sizeof(struct xlb_vip_conf);
	h->sz_backend = sizeof(struct xlb_backend_conf);
	h->text_len = len;
	h->text_hash = XXH3_64bits(text, len);
}

static uint64_t head_hash(const struct cache_head *h)
{
	return XXH3_64bits(h, offsetof(struct cache_head, head_hash));
}

/* What follows the header, in the file's order: global, links, VIPs, backends. */
#define PARTS	4

static void state_parts(const struct xlb_state *s, struct iovec *part)
{
	part[0] = (struct iovec){ (void *)&s->global, sizeof(s->global) };
	part[1] = (struct iovec){ s->links, s->n_links * sizeof(*s->links) };
	part[2] = (struct iovec){ s->vips, s->n_vips * sizeof(*s->vips) };
	part[3] = (struct iovec){ s->backends,
				  s->n_backends * sizeof(*s->backends) };
}

/* XXH3 of the parts; 0 and ok false when out of memory. */
static uint64_t parts_hash(const struct iovec *part, bool *ok)
{
	XXH3_state_t *x = XXH3_createState();
	uint64_t h;
	size_t i;

	*ok = x != NULL;
	if (!x)
		return 0;
	XXH3_64bits_reset(x);
	for (i = 0; i < PARTS; i++)
		if (part[i].iov_len)
			XXH3_64bits_update(x, part[i].iov_base,
					   part[i].iov_len);
	h = XXH3_64bits_digest(x);
	XXH3_freeState(x);
	return h;
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t w = write(fd, c, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

int xlb_file_replace(const char *path, const struct iovec *part, size_t n,
		     bool durable)
{
	char tmp[600], dir[600];
	size_t i;
	int fd, ret = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (i = 0; !ret && i < n; i++)
		ret = write_all(fd, part[i].iov_base, part[i].iov_len);
	if (!ret && durable && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	if (!durable)
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int xlb_state_cache_write(const char *path, const struct xlb_state *s,
			  const char *text, size_t len, struct xlb_err *err)
{
	struct iovec part[1 + PARTS];
	struct cache_head h;
	bool ok;
	int ret;

	head_fill(&h, text, len);
	h.n_links = s->n_links;
	h.n_vips = s->n_vips;
	h.n_backends = s->n_backends;
	state_parts(s, part + 1);
	h.payload_hash = parts_hash(part + 1, &ok);
	if (!ok)
		return xlb_errf(err, ENOMEM, "out of memory");
	h.head_hash = head_hash(&h);
	part[0] = (struct iovec){ &h, sizeof(h) };
	/* not synced: a file lost or torn by a crash is refused */
	ret = xlb_file_replace(path, part, 1 + PARTS, false);
	if (ret)
		return xlb_errf(err, -ret, "cannot write %s: %s", path,
				strerror(-ret));
	return 0;
}

static int read_all(int fd, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t r = read(fd, c, len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!r)
			return -ENODATA;
		c += r;
		len -= (size_t)r;
	}
	return 0;
}

/* The header of the cache at fd, checked against text: 0 or why not. */
static int head_read(int fd, const char *path, const char *text, size_t len,
		     struct cache_head *h, struct xlb_err *err)
{
	struct cache_head want;
	int ret = read_all(fd, h, sizeof(*h));

	if (ret == -ENODATA)
		return xlb_errf(err, EBADMSG, "%s: shorter than its header",
				path);
	if (ret)
		return xlb_errf(err, -ret, "cannot read %s: %s", path,
				strerror(-ret));
	if (memcmp(h->magic, cache_magic, sizeof(h->magic)))
		return xlb_errf(err, EBADMSG, "%s: not a state cache", path);
	if (h->head_hash != head_hash(h))
		return xlb_errf(err, EBADMSG, "%s: header damaged", path);
	head_fill(&want, "", 0);
	if (h->version != want.version || h->sz_global != want.sz_global ||
	    h->sz_link != want.sz_link || h->sz_vip != want.sz_vip ||
	    h->sz_backend != want.sz_backend)
		return xlb_errf(err, EPROTO,
				"%s: written by another version (layout %u)",
				path, h->version);
	if (h->text_len != len || h->text_hash != XXH3_64bits(text, len))
		return xlb_errf(err, ESTALE,
				"%s: made from another state.conf", path);
	return 0;
}

bool xlb_state_cache_fresh(const char *path, const char *text, size_t len)
{
	struct xlb_err err;
	struct cache_head h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool fresh;

	if (fd < 0)
		return false;
	fresh = !head_read(fd, path, text, len, &h, &err);
	close(fd);
	return fresh;
}

int xlb_state_cache_read(const char *path, const char *text, size_t len,
			 struct xlb_state *s, struct xlb_err *err)
{
	struct iovec part[PARTS];
	struct xlb_state n;
	struct cache_head h;
	struct stat st;
	size_t bl, bv, bb, i;
	bool ok;
	int fd, ret;

	xlb_state_init(&n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return xlb_errf(err, errno, "cannot open %s: %s", path,
				strerror(errno));
	ret = head_read(fd, path, text, len, &h, err);
	if (ret)
		goto out;
	if (h.n_links > XLB_LINKS_MAX || h.n_vips > XLB_VIPS_MAX ||
	    h.n_backends > XLB_MEMBERS_MAX) {
		ret = xlb_errf(err, EBADMSG,
			       "%s: %llu links, %llu VIPs, %llu backends: over the limits",
			       path, (unsigned long long)h.n_links,
			       (unsigned long long)h.n_vips,
			       (unsigned long long)h.n_backends);
		goto out;
	}
	bl = h.n_links * sizeof(*n.links);
	bv = h.n_vips * sizeof(*n.vips);
	bb = h.n_backends * sizeof(*n.backends);
	if (fstat(fd, &st) || (uint64_t)st.st_size !=
	    sizeof(h) + sizeof(n.global) + bl + bv + bb) {
		ret = xlb_errf(err, EBADMSG, "%s: %lld bytes, not %zu",
			       path, (long long)st.st_size,
			       sizeof(h) + sizeof(n.global) + bl + bv + bb);
		goto out;
	}
	n.links = bl ? xlb_mem_alloc(bl, false) : NULL;
	n.vips = bv ? xlb_mem_alloc(bv, false) : NULL;
	n.backends = bb ? xlb_mem_alloc(bb, false) : NULL;
	if ((bl && !n.links) || (bv && !n.vips) || (bb && !n.backends)) {
		ret = xlb_errf(err, ENOMEM, "out of memory");
		goto out;
	}
	n.n_links = n.cap_links = h.n_links;
	n.n_vips = n.cap_vips = h.n_vips;
	n.n_backends = n.cap_backends = h.n_backends;
	state_parts(&n, part);
	for (i = 0; !ret && i < PARTS; i++)
		if (part[i].iov_len)
			ret = read_all(fd, part[i].iov_base, part[i].iov_len);
	if (ret) {
		ret = xlb_errf(err, -ret, "cannot read %s: %s", path,
			       ret == -ENODATA ? "cut short" : strerror(-ret));
		goto out;
	}
	if (parts_hash(part, &ok) != h.payload_hash || !ok) {
		ret = ok ? xlb_errf(err, EBADMSG, "%s: contents damaged", path) :
			   xlb_errf(err, ENOMEM, "out of memory");
		goto out;
	}
	xlb_state_free(s);
	*s = n;
	xlb_state_init(&n);
out:
	xlb_state_free(&n);
	close(fd);
	return ret;
}
