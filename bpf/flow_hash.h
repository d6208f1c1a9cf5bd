/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one flow hash of xlb (docs/design.md contract 1).
 *
 * This header is compiled by clang -target bpf into the data path and by gcc
 * into libxlb; both must compute the same value for the same flow and key.
 *
 * Function: SipHash-1-3 (Aumasson & Bernstein), keyed with the 128-bit cluster
 * secret.  Why this one:
 *  - it is a PRF: without the key an outsider cannot predict which flows land
 *    on which slot, so they cannot aim crafted flows at one backend (jhash,
 *    CRC or Toeplitz with a known key give that away);
 *  - it only needs 64-bit add, xor and rotate, which the BPF ISA has natively
 *    and the JIT maps 1:1 to machine instructions: an IPv4 tuple is two words,
 *    i.e. 2 + 1 + 3 = 6 SipRounds (about 80 BPF instructions), no tables, no
 *    loops the verifier has to walk;
 *  - 1-3 rounds (as in the kernel's hsiphash on 64-bit and Rust's std) are
 *    enough for hash-flooding resistance, where the attacker only sees the
 *    effect of the output, never the output itself.
 *
 * Message layout (so any SipHash-1-3 implementation can reproduce a value):
 *   IPv4: src(4) dst(4) sport(2) dport(2) proto(1) family(1) 0 0   16 bytes
 *   IPv6: src(16) dst(16) sport(2) dport(2) proto(1) family(1) 0 0 40 bytes
 * Addresses and ports are in network byte order, as on the wire.  The hash
 * modes zero fields before hashing: 3-tuple zeroes the ports, source-only
 * zeroes everything but the source address and family.
 * The 64-bit SipHash output is folded to 32 bits (high xor low): the flow
 * hash.  Slots are "hash % M"; the GUE source port takes bits of it too.
 */
#ifndef XLB_FLOW_HASH_H
#define XLB_FLOW_HASH_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xlb defines the flow hash over little-endian word loads"
#endif

/* The cluster secret.  Same key on every LB host of a cluster. */
struct xlb_hash_key {
	__u64 k0;
	__u64 k1;
};

#define XLB_FAMILY_INET		4
#define XLB_FAMILY_INET6	6

/* Which fields of a flow feed the hash (per VIP). */
enum xlb_hash_mode {
	XLB_HASH_5TUPLE = 0,
	XLB_HASH_3TUPLE = 1,	/* src, dst, proto */
	XLB_HASH_SRC = 2,	/* source address only: client stickiness */
};

/*
 * A flow as the hash sees it.  IPv4 addresses use the first word of the
 * address, the other three stay zero.  40 bytes, five aligned words.
 */
struct xlb_flow {
	union {
		__be32 v4;
		__be32 v6[4];
	} src, dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family;
	__u16 pad;
} __attribute__((aligned(8)));

_Static_assert(sizeof(struct xlb_flow) == 40, "xlb_flow is 5 words");

#define XLB_ROTL64(x, b) (__u64)(((x) << (b)) | ((x) >> (64 - (b))))

#define XLB_SIPROUND(v0, v1, v2, v3)				\
	do {							\
		v0 += v1; v1 = XLB_ROTL64(v1, 13); v1 ^= v0;	\
		v0 = XLB_ROTL64(v0, 32);			\
		v2 += v3; v3 = XLB_ROTL64(v3, 16); v3 ^= v2;	\
		v0 += v3; v3 = XLB_ROTL64(v3, 21); v3 ^= v0;	\
		v2 += v1; v1 = XLB_ROTL64(v1, 17); v1 ^= v2;	\
		v2 = XLB_ROTL64(v2, 32);			\
	} while (0)

struct xlb_sip {
	__u64 v0, v1, v2, v3;
};

static __always_inline void xlb_sip_init(struct xlb_sip *s,
					 const struct xlb_hash_key *key)
{
	s->v0 = 0x736f6d6570736575ULL ^ key->k0;
	s->v1 = 0x646f72616e646f6dULL ^ key->k1;
	s->v2 = 0x6c7967656e657261ULL ^ key->k0;
	s->v3 = 0x7465646279746573ULL ^ key->k1;
}

/* One message word through c = 1 compression round. */
static __always_inline void xlb_sip13_word(struct xlb_sip *s, __u64 m)
{
	__u64 v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;

	v3 ^= m;
	XLB_SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	s->v0 = v0; s->v1 = v1; s->v2 = v2; s->v3 = v3;
}

/* Last block (length byte and tail) and d = 3 finalization rounds. */
static __always_inline __u64 xlb_sip13_final(struct xlb_sip *s, __u64 b)
{
	__u64 v0, v1, v2, v3;

	xlb_sip13_word(s, b);
	v0 = s->v0; v1 = s->v1; v2 = s->v2; v3 = s->v3;
	v2 ^= 0xff;
	XLB_SIPROUND(v0, v1, v2, v3);
	XLB_SIPROUND(v0, v1, v2, v3);
	XLB_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static __always_inline __u32 xlb_hash_fold(__u64 h)
{
	return (__u32)(h ^ (h >> 32));
}

/* Zero the fields the VIP's hash mode leaves out. */
static __always_inline void xlb_flow_mask(struct xlb_flow *f, __u32 mode)
{
	if (mode == XLB_HASH_5TUPLE)
		return;
	f->sport = 0;
	f->dport = 0;
	if (mode == XLB_HASH_SRC) {
		f->dst.v6[0] = 0;
		f->dst.v6[1] = 0;
		f->dst.v6[2] = 0;
		f->dst.v6[3] = 0;
		f->proto = 0;
	}
}

/* The 8 bytes after the addresses, as one little-endian word. */
static __always_inline __u64 xlb_flow_tail_word(const struct xlb_flow *f)
{
	return (__u64)f->sport | (__u64)f->dport << 16 |
	       (__u64)f->proto << 32 | (__u64)f->family << 40;
}

/* SipHash-1-3 of the flow's message, full 64 bits. */
static __always_inline __u64 xlb_flow_hash64(const struct xlb_hash_key *key,
					     const struct xlb_flow *f)
{
	struct xlb_sip s;

	xlb_sip_init(&s, key);
	if (f->family == XLB_FAMILY_INET) {
		xlb_sip13_word(&s, (__u64)f->src.v4 | (__u64)f->dst.v4 << 32);
		xlb_sip13_word(&s, xlb_flow_tail_word(f));
		return xlb_sip13_final(&s, (__u64)16 << 56);
	}
	xlb_sip13_word(&s, (__u64)f->src.v6[0] | (__u64)f->src.v6[1] << 32);
	xlb_sip13_word(&s, (__u64)f->src.v6[2] | (__u64)f->src.v6[3] << 32);
	xlb_sip13_word(&s, (__u64)f->dst.v6[0] | (__u64)f->dst.v6[1] << 32);
	xlb_sip13_word(&s, (__u64)f->dst.v6[2] | (__u64)f->dst.v6[3] << 32);
	xlb_sip13_word(&s, xlb_flow_tail_word(f));
	return xlb_sip13_final(&s, (__u64)40 << 56);
}

/* The flow hash: the 32-bit value tables are indexed with. */
static __always_inline __u32 xlb_flow_hash(const struct xlb_hash_key *key,
					   const struct xlb_flow *f)
{
	return xlb_hash_fold(xlb_flow_hash64(key, f));
}

/*
 * The flow hash under a VIP's hash mode: the same value as masking a copy
 * with xlb_flow_mask() and hashing it, computed without the copy (the
 * data path's stack is small).
 */
static __always_inline __u32 xlb_flow_hash_mode(const struct xlb_hash_key *key,
						const struct xlb_flow *f,
						__u32 mode)
{
	__u64 dmask = mode == XLB_HASH_SRC ? 0 : ~(__u64)0;
	__u64 pmask = mode == XLB_HASH_5TUPLE ? ~(__u64)0 : 0;
	__u64 tail = ((__u64)f->sport | (__u64)f->dport << 16) & pmask;
	struct xlb_sip s;

	tail |= ((__u64)f->proto << 32 & dmask) | (__u64)f->family << 40;
	xlb_sip_init(&s, key);
	if (f->family == XLB_FAMILY_INET) {
		xlb_sip13_word(&s, (__u64)f->src.v4 |
				   ((__u64)f->dst.v4 << 32 & dmask));
		xlb_sip13_word(&s, tail);
		return xlb_hash_fold(xlb_sip13_final(&s, (__u64)16 << 56));
	}
	xlb_sip13_word(&s, (__u64)f->src.v6[0] | (__u64)f->src.v6[1] << 32);
	xlb_sip13_word(&s, (__u64)f->src.v6[2] | (__u64)f->src.v6[3] << 32);
	xlb_sip13_word(&s, ((__u64)f->dst.v6[0] | (__u64)f->dst.v6[1] << 32) &
			   dmask);
	xlb_sip13_word(&s, ((__u64)f->dst.v6[2] | (__u64)f->dst.v6[3] << 32) &
			   dmask);
	xlb_sip13_word(&s, tail);
	return xlb_hash_fold(xlb_sip13_final(&s, (__u64)40 << 56));
}

#ifndef __bpf__
/*
 * SipHash with c compression and d finalization rounds over a byte string.
 * Userspace only (names, tokens, fingerprints, test vectors); the data path
 * uses the fixed-layout flow functions above.
 */
static inline __u64 xlb_siphash_cd(const struct xlb_hash_key *key,
				   const void *data, __u64 len,
				   int c, int d)
{
	const unsigned char *p = (const unsigned char *)data;
	__u64 v0 = 0x736f6d6570736575ULL ^ key->k0;
	__u64 v1 = 0x646f72616e646f6dULL ^ key->k1;
	__u64 v2 = 0x6c7967656e657261ULL ^ key->k0;
	__u64 v3 = 0x7465646279746573ULL ^ key->k1;
	__u64 b = len << 56, m;
	__u64 i, full = len & ~(__u64)7;
	int r;

	for (i = 0; i < full; i += 8) {
		m = (__u64)p[i] | (__u64)p[i + 1] << 8 |
		    (__u64)p[i + 2] << 16 | (__u64)p[i + 3] << 24 |
		    (__u64)p[i + 4] << 32 | (__u64)p[i + 5] << 40 |
		    (__u64)p[i + 6] << 48 | (__u64)p[i + 7] << 56;
		v3 ^= m;
		for (r = 0; r < c; r++)
			XLB_SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (i = 0; i < (len & 7); i++)
		b |= (__u64)p[full + i] << (8 * i);
	v3 ^= b;
	for (r = 0; r < c; r++)
		XLB_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (r = 0; r < d; r++)
		XLB_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* SipHash-1-3 of a byte string: names, ring tokens. */
static inline __u64 xlb_siphash13(const struct xlb_hash_key *key,
				  const void *data, __u64 len)
{
	return xlb_siphash_cd(key, data, len, 1, 3);
}
#endif /* !__bpf__ */

#endif /* XLB_FLOW_HASH_H */
