/*
 * jwtclaims.h - the cheap local look at a bearer token before anyone asks
 * the API server about it.
 *
 * An agent presents its pod's projected service-account token: a JWT whose
 * payload names the audience, the expiry and the pod it is bound to
 * ("kubernetes.io": {"namespace", "pod": {"name", "uid"}}). Nothing here
 * verifies the signature - report/jwtverify.h does that with the issuer's
 * keys, or a TokenReview where they are unavailable - so a token that
 * passes these checks is merely plausible. What they buy: a string that is
 * not such a token (wrong shape, size, algorithm, audience, expired, or
 * bound to no pod) is refused before any signature work or TokenReview, so
 * garbage costs almost nothing (docs/security.md, "Report authentication").
 *
 * Pure: no clock, no I/O; the caller passes the time.
 */
#ifndef TFJ_JWTCLAIMS_H
#define TFJ_JWTCLAIMS_H

#include <stddef.h>
#include <stdint.h>

/* Caps on the encoded parts; a projected token is about 1 KiB in all. */
#define TFJ_JWT_HEADER_MAX 1024
#define TFJ_JWT_PAYLOAD_MAX 8192
#define TFJ_JWT_SIGNATURE_MAX 2048
/* Clock difference tolerated between this node and the token's issuer. */
#define TFJ_JWT_SKEW_MS 60000

/* Why a token was refused locally; also the `reason` label of the metric. */
enum tfj_jwt_reason {
	TFJ_JWT_OK = 0,
	TFJ_JWT_MALFORMED,      /* not three base64url parts of JSON objects */
	TFJ_JWT_TOO_LARGE,      /* a part over its cap */
	TFJ_JWT_ALGORITHM,      /* "none", HMAC or no alg: never a service-account token */
	TFJ_JWT_AUDIENCE,       /* aud does not list ours */
	TFJ_JWT_EXPIRED,        /* exp in the past (beyond the skew) */
	TFJ_JWT_NOT_YET_VALID,  /* nbf or iat in the future (beyond the skew), or exp < iat */
	TFJ_JWT_NOT_POD_BOUND,  /* no kubernetes.io pod claim */
	/* The signature checks of report/jwtverify.h: */
	TFJ_JWT_ISSUER,         /* iss is not the API server's issuer */
	TFJ_JWT_UNKNOWN_KEY,    /* no key of the issuer's set has the token's kid and alg */
	TFJ_JWT_SIGNATURE,      /* the signature does not verify */
	TFJ_JWT_COUNT
};

/* What a plausible token claims. Strings are NUL-terminated and bounded. */
struct tfj_jwtclaims {
	int64_t exp_ms;         /* expiry, Unix ms */
	char alg[8];            /* header alg, one of the asymmetric JWS algorithms */
	char kid[128];          /* header kid ("" when absent) */
	char iss[256];          /* payload iss ("" when absent) */
	char ns[64];
	char sa[254];           /* service account name ("" when absent) */
	char pod[254];
	char pod_uid[64];
};

/* "ok", "malformed", "too_large", ... */
const char *tfj_jwtclaims_reason(enum tfj_jwt_reason r);

/*
 * Reads `token` and checks it against `audience` at `now_ms` (Unix ms).
 * TFJ_JWT_OK with *out filled, or the first reason it fails (*out zeroed).
 * Never fails otherwise: an allocation failure counts as malformed.
 */
enum tfj_jwt_reason tfj_jwtclaims_check(struct tfj_jwtclaims *out, const char *token,
					const char *audience, int64_t now_ms);

/*
 * Decodes s[0..n), unpadded base64url (RFC 7515 section 2), into a
 * malloc'd buffer the caller frees (NUL-terminated one past *outlen).
 * n is capped at TFJ_JWT_PAYLOAD_MAX: longer input, characters outside the
 * alphabet or an impossible length give TFJ_EPARSE (*out NULL).
 */
int tfj_jwtclaims_b64url(unsigned char **out, size_t *outlen, const char *s, size_t n);

#endif
