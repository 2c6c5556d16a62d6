/*
 * jwks.h - the service-account issuer's public keys, read from its JSON Web
 * Key Set (RFC 7517; the API server serves it at /openid/v1/jwks).
 *
 * Only what Kubernetes signs service-account tokens with is taken: RSA keys
 * (2048 to 8192 bits) for RS256/RS384/RS512 and P-256 keys for ES256. Keys
 * of another type or curve, or meant for encryption ("use": "enc"), are
 * skipped, not refused: the set stays usable when the API server adds
 * kinds this code does not check. Bounded: the document is at most
 * TFJ_JWKS_DOC_MAX bytes and lists at most TFJ_JWKS_KEYS_MAX keys, each
 * kid at most 127 bytes; anything beyond is refused as a whole.
 *
 * Pure (no I/O). Ownership: a set owns its keys; tfj_jwks_find lends one
 * for as long as the set lives. A set is immutable once parsed, so threads
 * may share it.
 */
#ifndef TFJ_JWKS_H
#define TFJ_JWKS_H

#include <stddef.h>

#include <openssl/evp.h>

#define TFJ_JWKS_DOC_MAX (64u * 1024u)
#define TFJ_JWKS_KEYS_MAX 16

struct tfj_jwks;

/*
 * Parses a JWKS document text[0..len). 0 with *out set (possibly holding no
 * usable key), TFJ_EPARSE/TFJ_ETYPE for a malformed document or key,
 * TFJ_ETOOBIG over the caps, TFJ_ENOMEM.
 */
int tfj_jwks_parse(struct tfj_jwks **out, const char *text, size_t len);
void tfj_jwks_free(struct tfj_jwks *ks);

/* How many usable keys the set holds. */
size_t tfj_jwks_count(const struct tfj_jwks *ks);

/*
 * The key for a token's header: kid must match exactly (a token without
 * kid only matches a set of one key) and the key's type must be the one alg
 * needs (RS256/384/512: RSA; ES256: P-256). NULL when none (borrowed).
 */
EVP_PKEY *tfj_jwks_find(const struct tfj_jwks *ks, const char *kid, const char *alg);

#endif
