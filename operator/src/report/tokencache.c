/*
 * tokencache.c - fixed-size tables of decided tokens (see tokencache.h).
 */
#include "report/tokencache.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <tfj/err.h>

#define WAYS 4

int tfj_tokencache_init(struct tfj_tokencache *c, size_t entries)
{
	c->nsets = (entries + WAYS - 1) / WAYS;
	c->tab = calloc(c->nsets * WAYS, sizeof(*c->tab));
	return c->tab ? 0 : tfj_err_set(TFJ_ENOMEM, "tokencache");
}

void tfj_tokencache_free(struct tfj_tokencache *c)
{
	free(c->tab);
	c->tab = NULL;
	c->nsets = 0;
}

int tfj_tokencache_hash(unsigned char out[TFJ_TOKENCACHE_HASH], const char *token)
{
	unsigned int n = 0;

	if (!EVP_Digest(token, strlen(token), out, &n, EVP_sha256(), NULL) ||
	    n != TFJ_TOKENCACHE_HASH)
		return tfj_err_set(TFJ_EINTERNAL, "tokencache: sha256 failed");
	return 0;
}

static struct tfj_tokencache_entry *set_of(struct tfj_tokencache *c, const unsigned char *h)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | h[i];
	return &c->tab[(v % c->nsets) * WAYS];
}

struct tfj_tokencache_entry *tfj_tokencache_lookup(struct tfj_tokencache *c,
						   const unsigned char *h, int64_t now_ms)
{
	struct tfj_tokencache_entry *set = set_of(c, h);
	int i;

	for (i = 0; i < WAYS; i++)
		if (set[i].used && set[i].expires_ms > now_ms &&
		    !memcmp(set[i].hash, h, TFJ_TOKENCACHE_HASH))
			return &set[i];
	return NULL;
}

void tfj_tokencache_insert(struct tfj_tokencache *c, const unsigned char *h,
			   const struct tfj_tokenreview *tr, int64_t now_ms, int64_t expires_ms)
{
	struct tfj_tokencache_entry *set = set_of(c, h), *victim = &set[0];
	int i;

	for (i = 0; i < WAYS; i++) {
		if (!set[i].used || set[i].expires_ms <= now_ms ||
		    !memcmp(set[i].hash, h, TFJ_TOKENCACHE_HASH)) {
			victim = &set[i];
			break;
		}
		if (set[i].expires_ms < victim->expires_ms)
			victim = &set[i];
	}
	memcpy(victim->hash, h, TFJ_TOKENCACHE_HASH);
	victim->used = 1;
	victim->expires_ms = expires_ms;
	victim->tr = *tr;
}
