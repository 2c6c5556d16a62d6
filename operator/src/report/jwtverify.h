/*
 * jwtverify.h - the whole local verification of one agent token: the
 * claims of report/jwtclaims.h (shape, algorithm, audience, exp/nbf/iat,
 * the pod binding), then the issuer, then the signature with the issuer's
 * key named by the token's kid (report/jwks.h).
 *
 * Pure: no clock, no I/O; the caller passes the keys, the issuer and the
 * time. A token that passes is one the API server signed for `audience`
 * and that has not expired; whether its pod still exists, with the uid the
 * token names, is the caller's check (tokenreview.h, on every call).
 */
#ifndef TFJ_JWTVERIFY_H
#define TFJ_JWTVERIFY_H

#include <stdint.h>

#include "report/jwks.h"
#include "report/jwtclaims.h"

/*
 * TFJ_JWT_OK with *out filled, or the first reason the token fails (*out
 * zeroed): jwtclaims' reasons, then TFJ_JWT_ISSUER (iss is not `issuer`),
 * TFJ_JWT_UNKNOWN_KEY (no key in `keys` for its kid and alg; the caller may
 * refetch the set) or TFJ_JWT_SIGNATURE.
 */
enum tfj_jwt_reason tfj_jwtverify_check(struct tfj_jwtclaims *out, const char *token,
					const struct tfj_jwks *keys, const char *issuer,
					const char *audience, int64_t now_ms);

#endif
