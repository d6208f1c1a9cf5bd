// SPDX-License-Identifier: GPL-2.0
/*
 * Ring hash with virtual nodes, materialized into the M-slot table
 * (docs/design.md contract 2).
 *
 * A backend of weight w places vnodes x w tokens on a 32-bit ring, token i
 * at the folded keyed hash of "name#i".  Slot s belongs to the owner of the
 * first token at or after s x 2^32 / M (clockwise, wrapping).  Equal token
 * positions are ordered by name, so the order is total and the table does
 * not depend on input order.  Because slot positions are fixed, a change
 * moves only slots to or from the backend whose tokens changed.
 *
 * Secondary: the next distinct backend clockwise from the owning token,
 * which is exactly the owner the slot gets if the primary is removed.
 *
 * The build is three linear passes: hash the tokens (the hash state after
 * the whole 8-byte blocks of "name#" is computed once per backend, the
 * decimal counter is incremented in place), radix sort them, and walk
 * slots and sorted tokens together, with no division per slot and the
 * next distinct backend found by a pointer that only moves forward.
 * Scratch: 16 bytes per token (the tokens and the sort's second buffer).
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

/*
 * A token: ring position in the high 32 bits, backend id in the low 16.
 * Tokens are made in name order and the sort is stable on the position,
 * so equal positions stay in name order; the id tells backends apart.
 */
typedef uint64_t token_t;

/* Token numbers have at most 8 decimal digits (digits_word). */
_Static_assert(XLB_RING_TOKENS_MAX < 100000000, "token digits fit 8 bytes");

#define TOKEN(pos, id)		((uint64_t)(pos) << 32 | (id))
#define TOKEN_POS(t)		((uint32_t)((t) >> 32))
#define TOKEN_ID(t)		((uint16_t)(t))

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* k in decimal (at most 8 digits), first digit in the low byte; *d digits */
static uint64_t digits_word(uint64_t k, size_t *d)
{
	uint64_t w = 0;
	size_t n = 0;

	do {
		w = w << 8 | (uint64_t)('0' + k % 10);
		k /= 10;
		n++;
	} while (k);
	*d = n;
	return w;
}

/*
 * The tokens of one backend: SipHash-1-3 of "name#k" for k = 0..count-1,
 * exactly as xlb_siphash13 over that string.  The 8-byte blocks of "name#"
 * are hashed once; what follows them (the r bytes of "name#" past its last
 * whole block, then the digits of k) is at most 7 + 7 bytes, kept in
 * registers: k + 1 is one added to the last digit's byte unless that digit
 * is a 9.
 */
static size_t backend_tokens(const struct xlb_hash_key *key, const char *name,
			     uint16_t id, uint64_t count, token_t *tok)
{
	unsigned char buf[XLB_NAME_MAX + 1 + 8] = { 0 };
	size_t len = strlen(name), plen = len + 1, full = plen & ~(size_t)7;
	size_t r = plen - full, d, i;
	struct xlb_sip pre;
	uint64_t k, rw, dw;

	memcpy(buf, name, len);
	buf[len] = '#';
	xlb_sip_init(&pre, key);
	for (i = 0; i < full; i += 8)
		xlb_sip13_word(&pre, load_le64(buf + i));
	rw = load_le64(buf + full);	/* r bytes, zero above */
	dw = digits_word(0, &d);
	for (k = 0; k < count; k++) {
		/* the bytes after the whole blocks: lo, then hi */
		uint64_t lo = rw | dw << (8 * r);
		uint64_t hi = r ? dw >> (64 - 8 * r) : 0;
		uint64_t total = plen + d;
		struct xlb_sip s = pre;
		uint64_t h;

		if (r + d >= 8) {
			xlb_sip13_word(&s, lo);
			h = xlb_sip13_final(&s, hi | total << 56);
		} else {
			h = xlb_sip13_final(&s, lo | total << 56);
		}
		tok[k] = TOKEN(xlb_hash_fold(h), id);

		if ((dw >> (8 * (d - 1)) & 0xff) != '9')
			dw += 1ULL << (8 * (d - 1));
		else
			dw = digits_word(k + 1, &d);
	}
	return count;
}

static size_t make_tokens(const struct xlb_build_ctx *c, token_t *tok)
{
	size_t i, n = 0;

	for (i = 0; i < c->n_usable; i++)
		n += backend_tokens(&c->p->key, c->usable[i]->name,
				    c->usable[i]->id,
				    (uint64_t)c->usable[i]->weight *
					    c->p->vnodes, tok + n);
	return n;
}

/*
 * LSD radix sort on the 32-bit position, 11 bits a pass, the three counts
 * taken in one read.  Stable, so equal positions keep name order.  Returns
 * the buffer that holds the result (tmp: three passes).
 */
#define RADIX_BITS	11
#define RADIX		(1u << RADIX_BITS)

static token_t *sort_tokens(token_t *tok, token_t *tmp, size_t n)
{
	static const int shifts[3] = { 32, 32 + RADIX_BITS,
				       32 + 2 * RADIX_BITS };
	uint32_t count[3][RADIX];
	token_t *src = tok, *dst = tmp, *t;
	size_t i;
	int p;

	memset(count, 0, sizeof(count));
	for (i = 0; i < n; i++) {
		uint64_t x = tok[i];

		count[0][(x >> shifts[0]) & (RADIX - 1)]++;
		count[1][(x >> shifts[1]) & (RADIX - 1)]++;
		count[2][(x >> shifts[2]) & (RADIX - 1)]++;
	}
	for (p = 0; p < 3; p++) {
		uint32_t sum = 0, *cnt = count[p];

		for (i = 0; i < RADIX; i++) {
			uint32_t v = cnt[i];

			cnt[i] = sum;
			sum += v;
		}
		for (i = 0; i < n; i++) {
			uint64_t x = src[i];

			dst[cnt[(x >> shifts[p]) & (RADIX - 1)]++] = x;
		}
		t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/*
 * For every token, the id of the first token clockwise after it that is
 * another backend's (its slots' secondary), in the token's bits 16..31.
 * Backwards, each token takes its successor's id or, when that is its own
 * backend's, its successor's answer; the last token's answer is found from
 * the start of the ring first.  One backend: NONE everywhere.
 */
#define TOKEN_SEC(t)		((uint16_t)((t) >> 16))

static void mark_secondaries(token_t *tok, size_t n)
{
	uint64_t sec = XLB_BACKEND_NONE;
	uint16_t last = TOKEN_ID(tok[n - 1]);
	size_t j;

	for (j = 0; j < n; j++)
		if (TOKEN_ID(tok[j]) != last) {
			sec = TOKEN_ID(tok[j]);
			break;
		}
	tok[n - 1] |= sec << 16;
	for (j = n - 1; j-- > 0;) {
		uint64_t next = tok[j + 1];

		sec = TOKEN_ID(next) != TOKEN_ID(tok[j]) ? TOKEN_ID(next) :
							   TOKEN_SEC(next);
		tok[j] |= sec << 16;
	}
}

/*
 * Slot s has position q(s) = floor(s 2^32 / M); a token at p is at or after
 * q(s) exactly when s <= j(p) = floor(((p + 1) M - 1) / 2^32), the last
 * slot position not past p.  So slot s belongs to the first token with
 * j >= s: mark each slot j(p) with its first token (scanning backwards,
 * the first wins), then sweep the slots backwards carrying the owner;
 * slots past the last token's j wrap to the first token.  The slots, still
 * all ones, hold the marks until the sweep overwrites them.
 */
static void fill_slots(const token_t *tok, size_t n, struct xlb_slot *slots,
		       uint32_t m)
{
	uint32_t *mark = (uint32_t *)slots;
	uint32_t own = 0, s;
	size_t i;

	for (i = n; i-- > 0;)
		mark[((uint64_t)TOKEN_POS(tok[i]) * m + m - 1) >> 32] =
			(uint32_t)i;
	for (s = m; s-- > 0;) {
		uint32_t k = mark[s];

		own = k != UINT32_MAX ? k : own;
		slots[s].primary = TOKEN_ID(tok[own]);
		slots[s].secondary = TOKEN_SEC(tok[own]);
	}
}

int xlb_ring_fill(struct xlb_build_ctx *c, struct xlb_err *err)
{
	uint64_t total = 0;
	token_t *tok, *sorted;
	size_t i, n;

	for (i = 0; i < c->n_usable; i++)
		total += (uint64_t)c->usable[i]->weight * c->p->vnodes;
	tok = xlb_build_scratch(c, 2 * total * sizeof(*tok));
	if (!tok)
		return xlb_errf(err, ENOMEM, "out of memory for %llu ring tokens",
				(unsigned long long)total);
	n = make_tokens(c, tok);
	sorted = sort_tokens(tok, tok + n, n);
	mark_secondaries(sorted, n);
	fill_slots(sorted, n, c->slots, c->p->size);
	return 0;
}
