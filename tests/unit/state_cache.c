// SPDX-License-Identifier: GPL-2.0
/*
 * The state cache (user/lib/state_cache.c): read back, it is the state
 * parsed from its text; made from another text, cut short, grown,
 * damaged anywhere or of another layout, it is refused with its reason
 * and the state given stays as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "kselftest_harness.h"
#include "config.h"

/* Every kind of line, IPv4 and IPv6, settings away from their defaults. */
static const char rich[] =
	"set key 000102030405060708090a0b0c0d0e0f\n"
	"set mtu 1400\n"
	"link attach xlb0 generic\n"
	"vip add 10.0.0.1:80/tcp algo ring table-size 4093 hash 3tuple\n"
	"vip add 10.0.0.2:443/udp quic on quic-sid-len 2\n"
	"vip add [2001:db8::1]:80/tcp encap gue health http http-path /up\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.1 name web1 weight 3\n"
	"backend add 10.0.0.1:80/tcp 10.1.0.2 state drain\n"
	"backend add 10.0.0.2:443/udp 10.1.0.3 quic-id 0a0b\n"
	"backend add [2001:db8::1]:80/tcp 2001:db8::10 health tcp health-port 81\n";

/* The header's layout, which these tests pin (state_cache.c). */
#define HEAD_BYTES	80
#define OFF_VERSION	8
#define OFF_TEXT_LEN	24
#define OFF_N_BACKENDS	56
#define OFF_HEAD_HASH	72

FIXTURE(cache) {
	char dir[64], path[96];
	struct xlb_state parsed;	/* from rich */
	struct xlb_state s;		/* what a read may replace */
	struct xlb_state before;	/* s's copy, to compare with */
	char *file;			/* the cache's bytes */
	size_t len;
	struct xlb_err err;
};

static int parse(const char *text, struct xlb_state *s)
{
	struct xlb_err err;
	int ret;

	xlb_state_init(s);
	ret = xlb_config_parse(text, strlen(text), "t.conf", s, &err);
	if (ret)
		fprintf(stderr, "# %s\n", err.msg);
	return ret;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *b;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int spill(const char *path, const char *b, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (len && fwrite(b, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

FIXTURE_SETUP(cache)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/xlb-cache-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/state.cache", self->dir);
	ASSERT_EQ(0, parse(rich, &self->parsed));
	ASSERT_EQ(0, xlb_state_cache_write(self->path, &self->parsed, rich,
					   strlen(rich), &self->err))
		TH_LOG("%s", self->err.msg);
	self->file = slurp(self->path, &self->len);
	ASSERT_NE(NULL, self->file);
	/* a state of its own in s: a refused read must leave it */
	ASSERT_EQ(0, parse("set key 0f0e0d0c0b0a09080706050403020100\n"
			   "vip add 10.9.9.9:53/udp\n"
			   "backend add 10.9.9.9:53/udp 10.8.8.8\n", &self->s));
	ASSERT_EQ(0, xlb_state_copy(&self->before, &self->s));
}

FIXTURE_TEARDOWN(cache)
{
	char tmp[128];

	xlb_state_free(&self->parsed);
	xlb_state_free(&self->s);
	xlb_state_free(&self->before);
	free(self->file);
	unlink(self->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", self->path);
	unlink(tmp);
	rmdir(self->dir);
}

/* The cache as bytes b: refused with a reason containing why, s kept. */
static int refused(struct __test_metadata *_metadata,
		   FIXTURE_DATA(cache) *self, const char *b, size_t len,
		   const char *text, const char *why)
{
	int ret;

	if (spill(self->path, b, len))
		return -1;
	ret = xlb_state_cache_read(self->path, text, strlen(text), &self->s,
				   &self->err);
	EXPECT_GT(0, ret);
	EXPECT_NE(NULL, strstr(self->err.msg, why)) TH_LOG("%s", self->err.msg);
	EXPECT_TRUE(xlb_state_equal(&self->s, &self->before));
	return ret < 0 && strstr(self->err.msg, why) ? 0 : -1;
}

TEST_F(cache, read_back_is_the_state_parsed_from_the_text)
{
	const char *add = "backend add 10.0.0.1:80/tcp 10.1.0.4";
	unsigned int col;
	char *a, *b;
	int empty;

	ASSERT_EQ(0, xlb_state_cache_read(self->path, rich, strlen(rich),
					  &self->s, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_TRUE(xlb_state_equal(&self->s, &self->parsed));
	ASSERT_EQ(0, xlb_config_save(&self->s, &a));
	ASSERT_EQ(0, xlb_config_save(&self->parsed, &b));
	EXPECT_STREQ(b, a);
	free(a);
	free(b);
	EXPECT_TRUE(xlb_state_cache_fresh(self->path, rich, strlen(rich)));
	/* what it read grows like any state */
	ASSERT_EQ(0, xlb_config_apply_line(&self->s, add, strlen(add), NULL,
					   NULL, &empty, &col, &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(self->parsed.n_backends + 1, self->s.n_backends);
}

TEST_F(cache, a_large_state_reads_back_equal)
{
	size_t cap = 1 << 20, len = 0;
	char *t = malloc(cap);
	struct xlb_state p;
	int v, b;

	ASSERT_NE(NULL, t);
	len += snprintf(t, cap, "set key 000102030405060708090a0b0c0d0e0f\n");
	/* 8000 backends: 2 MiB of them, on huge pages (xlb_mem_alloc) */
	for (v = 0; v < 80; v++) {
		len += snprintf(t + len, cap - len, "vip add 10.2.0.%d:80/tcp\n",
				v + 1);
		for (b = 0; b < 100; b++)
			len += snprintf(t + len, cap - len,
					"backend add 10.2.0.%d:80/tcp 10.3.%d.%d\n",
					v + 1, b / 200, b % 200 + 1);
	}
	ASSERT_EQ(0, parse(t, &p));
	ASSERT_EQ(0, xlb_state_cache_write(self->path, &p, t, len, &self->err));
	ASSERT_EQ(0, xlb_state_cache_read(self->path, t, len, &self->s,
					  &self->err))
		TH_LOG("%s", self->err.msg);
	EXPECT_EQ(8000, self->s.n_backends);
	EXPECT_TRUE(xlb_state_equal(&self->s, &p));
	xlb_state_free(&p);
	free(t);
}

TEST_F(cache, made_from_another_text_is_stale)
{
	char other[sizeof(rich)], longer[sizeof(rich) + 1];

	memcpy(other, rich, sizeof(rich));
	other[strlen(rich) - 2] ^= 1;	/* same length, one bit */
	EXPECT_EQ(0, refused(_metadata, self, self->file, self->len, other,
			     "made from another state.conf"));
	EXPECT_EQ(-ESTALE, xlb_state_cache_read(self->path, other,
						strlen(other), &self->s,
						&self->err));
	EXPECT_FALSE(xlb_state_cache_fresh(self->path, other, strlen(other)));
	/* a text one byte longer */
	memcpy(longer, rich, sizeof(rich));
	strcat(longer, "\n");
	EXPECT_EQ(0, refused(_metadata, self, self->file, self->len, longer,
			     "made from another state.conf"));
}

TEST_F(cache, every_length_short_of_the_whole_is_refused)
{
	size_t n;

	for (n = 0; n < self->len; n++) {
		const char *why = n < HEAD_BYTES ? "shorter than its header" :
						   "bytes, not";

		ASSERT_EQ(0, refused(_metadata, self, self->file, n, rich, why))
			TH_LOG("%zu of %zu bytes", n, self->len);
	}
}

TEST_F(cache, a_byte_more_is_refused)
{
	char *b = malloc(self->len + 1);

	ASSERT_NE(NULL, b);
	memcpy(b, self->file, self->len);
	b[self->len] = 0;
	EXPECT_EQ(0, refused(_metadata, self, b, self->len + 1, rich,
			     "bytes, not"));
	free(b);
}

TEST_F(cache, any_byte_changed_is_refused)
{
	char *b = malloc(self->len);
	size_t i;

	ASSERT_NE(NULL, b);
	for (i = 0; i < self->len; i++) {
		const char *why = i < 8 ? "not a state cache" :
				  i < HEAD_BYTES ? "header damaged" :
						   "contents damaged";

		memcpy(b, self->file, self->len);
		b[i] ^= 0x40;
		ASSERT_EQ(0, refused(_metadata, self, b, self->len, rich, why))
			TH_LOG("byte %zu of %zu", i, self->len);
	}
	free(b);
}

/* A header changed at off to v, with its own hash made to match. */
static void forge(char *b, size_t off, uint64_t v, size_t width)
{
	uint64_t h;

	memcpy(b + off, &v, width);
	h = XXH3_64bits(b, OFF_HEAD_HASH);
	memcpy(b + OFF_HEAD_HASH, &h, sizeof(h));
}

TEST_F(cache, header_layout_and_its_checks)
{
	char *b = malloc(self->len);
	uint32_t version;
	uint64_t text_len, n;

	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, memcmp(self->file, "XLBSTATC", 8));
	memcpy(&version, self->file + OFF_VERSION, sizeof(version));
	EXPECT_EQ(1, version);
	memcpy(&text_len, self->file + OFF_TEXT_LEN, sizeof(text_len));
	EXPECT_EQ(strlen(rich), text_len);
	memcpy(&n, self->file + OFF_N_BACKENDS, sizeof(n));
	EXPECT_EQ(self->parsed.n_backends, n);
	EXPECT_EQ(HEAD_BYTES + sizeof(struct xlb_global_conf) +
		  self->parsed.n_links * sizeof(struct xlb_link_conf) +
		  self->parsed.n_vips * sizeof(struct xlb_vip_conf) +
		  n * sizeof(struct xlb_backend_conf), self->len);

	/* another layout, with a header that is whole */
	memcpy(b, self->file, self->len);
	forge(b, OFF_VERSION, 2, sizeof(version));
	EXPECT_EQ(0, refused(_metadata, self, b, self->len, rich,
			     "written by another version"));
	/* more backends than any state holds */
	memcpy(b, self->file, self->len);
	forge(b, OFF_N_BACKENDS, XLB_MEMBERS_MAX + 1ULL, sizeof(n));
	EXPECT_EQ(0, refused(_metadata, self, b, self->len, rich,
			     "over the limits"));
	/* one backend fewer, the file cut to match: the contents' hash */
	memcpy(b, self->file, self->len);
	forge(b, OFF_N_BACKENDS, n - 1, sizeof(n));
	EXPECT_EQ(0, refused(_metadata, self, b,
			     self->len - sizeof(struct xlb_backend_conf), rich,
			     "contents damaged"));
	free(b);
}

TEST_F(cache, no_file_or_no_room_is_an_error)
{
	unlink(self->path);
	EXPECT_EQ(-ENOENT, xlb_state_cache_read(self->path, rich, strlen(rich),
						&self->s, &self->err));
	EXPECT_TRUE(xlb_state_equal(&self->s, &self->before));
	EXPECT_FALSE(xlb_state_cache_fresh(self->path, rich, strlen(rich)));
	EXPECT_GT(0, xlb_state_cache_write("/nonexistent/dir/state.cache",
					   &self->parsed, rich, strlen(rich),
					   &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "cannot write")) TH_LOG("%s", self->err.msg);
}

TEST_HARNESS_MAIN
