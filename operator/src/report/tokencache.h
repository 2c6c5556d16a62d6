/*
 * tokencache.h - the reviewer's fixed-size tables of decided tokens
 * (tokenreview.h), keyed by the token's SHA-256 so the raw token is never
 * stored.
 *
 * 4-way set-associative: a token's hash picks a set of 4 slots; a new entry
 * takes its own slot, a free or expired one, else the one that expires
 * soonest. Memory is fixed at creation however many tokens arrive.
 *
 * Not thread-safe: the reviewer holds its lock around every call.
 * Ownership: a table owns its slots; tfj_tokencache_lookup lends one until
 * the next insert.
 */
#ifndef TFJ_TOKENCACHE_H
#define TFJ_TOKENCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "report/tokenreview.h"

#define TFJ_TOKENCACHE_HASH 32

struct tfj_tokencache_entry {
	unsigned char hash[TFJ_TOKENCACHE_HASH];
	int used;
	int64_t expires_ms;
	struct tfj_tokenreview tr;
};

struct tfj_tokencache {
	size_t nsets;
	struct tfj_tokencache_entry *tab;
};

/* entries rounded up to a multiple of 4. TFJ_ENOMEM. */
int tfj_tokencache_init(struct tfj_tokencache *c, size_t entries);
/* Accepts a zeroed or already freed table. */
void tfj_tokencache_free(struct tfj_tokencache *c);

/* The SHA-256 of the NUL-terminated token. TFJ_EINTERNAL if libcrypto fails. */
int tfj_tokencache_hash(unsigned char out[TFJ_TOKENCACHE_HASH], const char *token);

/* The live entry for hash h at now_ms, or NULL. */
struct tfj_tokencache_entry *tfj_tokencache_lookup(struct tfj_tokencache *c,
						   const unsigned char *h, int64_t now_ms);

/* Stores tr for h until expires_ms. */
void tfj_tokencache_insert(struct tfj_tokencache *c, const unsigned char *h,
			   const struct tfj_tokenreview *tr, int64_t now_ms, int64_t expires_ms);

#endif
