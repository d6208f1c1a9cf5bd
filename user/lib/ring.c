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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup_table.h"

/* A token: ring position in the high 32 bits, backend rank in the low 16. */
typedef uint64_t token_t;

#define TOKEN(pos, rank)	((uint64_t)(pos) << 32 | (rank))
#define TOKEN_POS(t)		((uint32_t)((t) >> 32))
#define TOKEN_RANK(t)		((uint32_t)(t) & 0xffff)

static size_t make_tokens(const struct xlb_build_ctx *c, token_t *tok)
{
	char buf[XLB_NAME_MAX + 16];
	size_t i, n = 0;

	for (i = 0; i < c->n_usable; i++) {
		const struct xlb_backend_spec *b = c->usable[i];
		size_t len = strlen(b->name);
		uint64_t k, count = (uint64_t)b->weight * c->p->vnodes;

		memcpy(buf, b->name, len);
		buf[len] = '#';
		for (k = 0; k < count; k++) {
			/* decimal k after the '#', no printf in the loop */
			char digits[20];
			size_t d = 0, j;
			uint64_t v = k;

			do {
				digits[d++] = (char)('0' + v % 10);
				v /= 10;
			} while (v);
			for (j = 0; j < d; j++)
				buf[len + 1 + j] = digits[d - 1 - j];
			tok[n++] = TOKEN(xlb_hash_fold(xlb_siphash13(&c->p->key,
						buf, len + 1 + d)), i);
		}
	}
	return n;
}

/*
 * LSD radix sort on the 32-bit position, 11 bits a pass.  Tokens are made in
 * rank (name) order and the sort is stable, so equal positions stay in name
 * order without sorting on the rank.
 */
static int sort_tokens(token_t *tok, size_t n)
{
	static const int shifts[3] = { 32, 43, 54 };
	token_t *tmp = malloc(n * sizeof(*tmp)), *src = tok, *dst = tmp, *t;
	size_t count[1 << 11], i;
	int p;

	if (!tmp)
		return -ENOMEM;
	for (p = 0; p < 3; p++) {
		size_t sum = 0;

		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(src[i] >> shifts[p]) & 0x7ff]++;
		for (i = 0; i < 1 << 11; i++) {
			size_t c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i] >> shifts[p]) & 0x7ff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	/* three passes: the sorted data is in tmp */
	memcpy(tok, src, n * sizeof(*tok));
	free(tmp);
	return 0;
}

/*
 * nextd[j]: rank of the first token after j (clockwise) that belongs to
 * another backend.  nextd[j] = rank(j + 1) if that differs from rank(j),
 * else nextd[j + 1]; two backward sweeps settle the wrap-around.
 */
static void next_distinct(const token_t *tok, size_t n, uint16_t *nextd)
{
	size_t k;

	for (k = 0; k < n; k++)
		nextd[k] = XLB_BACKEND_NONE;
	for (k = 2 * n; k-- > 0;) {
		size_t j = k % n, nj = (j + 1) % n;
		uint16_t r = TOKEN_RANK(tok[j]), rn = TOKEN_RANK(tok[nj]);

		nextd[j] = r != rn ? rn : nextd[nj];
	}
}

int xlb_ring_fill(struct xlb_build_ctx *c, struct xlb_err *err)
{
	uint64_t total = 0;
	uint32_t m = c->p->size, s;
	token_t *tok;
	uint16_t *nextd;
	size_t i, n, j = 0;

	for (i = 0; i < c->n_usable; i++)
		total += (uint64_t)c->usable[i]->weight * c->p->vnodes;
	tok = malloc(total * sizeof(*tok));
	nextd = malloc(total * sizeof(*nextd));
	if (!tok || !nextd) {
		free(tok);
		free(nextd);
		return xlb_errf(err, ENOMEM, "out of memory for %llu ring tokens",
				(unsigned long long)total);
	}
	n = make_tokens(c, tok);
	if (sort_tokens(tok, n)) {
		free(tok);
		free(nextd);
		return xlb_errf(err, ENOMEM, "out of memory sorting %zu tokens", n);
	}
	next_distinct(tok, n, nextd);
	for (s = 0; s < m; s++) {
		uint32_t q = (uint32_t)(((uint64_t)s << 32) / m);
		uint16_t rank, sec;

		while (j < n && TOKEN_POS(tok[j]) < q)
			j++;
		rank = TOKEN_RANK(tok[j < n ? j : 0]);
		sec = nextd[j < n ? j : 0];
		c->slots[s].primary = c->usable[rank]->id;
		c->slots[s].secondary = sec == XLB_BACKEND_NONE ?
			XLB_BACKEND_NONE : c->usable[sec]->id;
	}
	free(tok);
	free(nextd);
	return 0;
}
