/*
 * issuer.h - the API server's service-account issuer, for verifying agent
 * tokens without a TokenReview: its name and its public keys, read through
 * the one Kubernetes client from issuer discovery
 * (GET /.well-known/openid-configuration for "issuer", GET /openid/v1/jwks
 * for the keys; every service account may read both under the default
 * system:service-account-issuer-discovery binding, and the chart grants
 * them explicitly too).
 *
 * The keys are always fetched from the API server's own /openid/v1/jwks,
 * never from the document's jwks_uri: that URL names the issuer's public
 * address, which the operator need not reach or trust.
 *
 * Fetching is bounded: at most one attempt per `refetch_ms` (default 5 s)
 * however many tokens name a key id the set lacks, and one at a time; the
 * set is also refreshed when older than TFJ_ISSUER_MAX_AGE_MS, so a key the
 * API server dropped stops verifying. Report threads never wait for a fetch
 * another thread is making: they use the set they have.
 *
 * Threads: shared by the report threads; one lock. Ownership: borrows the
 * kube client (it must outlive the issuer); a key set is held by reference
 * while a token is checked, so a refetch never frees it under a reader.
 */
#ifndef TFJ_ISSUER_H
#define TFJ_ISSUER_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

#include "kube/kube.h"
#include "report/jwtclaims.h"

#define TFJ_ISSUER_DISCOVERY_PATH "/.well-known/openid-configuration"
#define TFJ_ISSUER_JWKS_PATH "/openid/v1/jwks"
/* The API server answers 406 to a JWKS request that accepts only application/json. */
#define TFJ_ISSUER_JWKS_ACCEPT "application/jwk-set+json, application/json"
#define TFJ_ISSUER_DOC_MAX (64u * 1024u)
#define TFJ_ISSUER_NAME_MAX 256
#define TFJ_ISSUER_REFETCH_MS 5000
#define TFJ_ISSUER_MAX_AGE_MS 600000

struct tfj_issuer;

/* refetch_ms <= 0: TFJ_ISSUER_REFETCH_MS. Nothing is fetched until the first token. */
int tfj_issuer_new(struct tfj_issuer **out, struct tfj_kube *k, int64_t refetch_ms);
void tfj_issuer_free(struct tfj_issuer *is);

/*
 * Pure: the "issuer" of a discovery document text[0..len) into out (cap
 * bytes). TFJ_EPARSE/TFJ_ETYPE/TFJ_ETOOBIG when it has none that fits.
 */
int tfj_issuer_parse_discovery(char *out, size_t cap, const char *text, size_t len);

/*
 * Checks `token` (report/jwtverify.h) against the issuer's current keys at
 * now_ms (Unix ms; also the clock of the refetch bound), fetching them
 * first when there are none or they are old, and once more when the token
 * names a key id they lack. 0 with *why the verdict (TFJ_JWT_OK with *out
 * filled); TFJ_EUNAVAIL when no verdict can be given: discovery never
 * answered, or the token's key is unknown and the last fetch failed. The
 * caller then falls back to a TokenReview.
 */
int tfj_issuer_verify(struct tfj_issuer *is, enum tfj_jwt_reason *why,
		      struct tfj_jwtclaims *out, const char *token, const char *audience,
		      int64_t now_ms);

/* Fetches attempted and failed, keys held now (for metrics and tests). */
void tfj_issuer_stats(struct tfj_issuer *is, uint64_t *fetches, uint64_t *failures,
		      size_t *keys);

/* Appends tfjob_report_issuer_fetches_total{result} and _keys. Accepts NULL. */
int tfj_issuer_metrics(struct tfj_issuer *is, struct tfj_buf *out);

#endif
