/*
 * jwt_forge.h - unsigned look-alikes of projected service-account tokens
 * for the tests of the local token checks (test_jwtclaims.c) and the flood
 * of forged tokens (itest_reportflood.c): base64url header.payload and a
 * signature no key made. Header-only (static).
 */
#ifndef TFJ_JWT_FORGE_H
#define TFJ_JWT_FORGE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* base64url without padding of s into out (truncated to cap). */
static inline void jf_b64url(char *out, size_t cap, const char *s)
{
	size_t n = strlen(s), i, o = 0;
	unsigned char *tmp = malloc(n / 3 * 4 + 8);
	int len = tmp ? EVP_EncodeBlock(tmp, (const unsigned char *)s, (int)n) : 0;

	for (i = 0; i < (size_t)len && o + 1 < cap; i++) {
		if (tmp[i] == '=')
			break;
		out[o++] = tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : (char)tmp[i];
	}
	out[o] = '\0';
	free(tmp);
}

/* header.payload.signature (malloc'd) with a fixed, meaningless signature. */
static inline char *jf_jwt(const char *header, const char *payload)
{
	size_t cap = 4 * (strlen(header) + strlen(payload)) + 64;
	char *t = malloc(cap), *p;

	if (!t)
		return NULL;
	jf_b64url(t, cap, header);
	p = t + strlen(t);
	*p++ = '.';
	jf_b64url(p, cap - (size_t)(p - t), payload);
	strcat(t, ".c2lnbmF0dXJlLWJ5dGVzLW5vLWtleS1tYWRl");
	return t;
}

/*
 * A projected token's payload as kube-apiserver writes it, for `aud` (a
 * JSON value), times in seconds, and `k8s` the "kubernetes.io" member with
 * its trailing comma ("" for none).
 */
static inline void jf_payload(char *out, size_t cap, const char *aud, long long iat,
			      long long exp, const char *k8s)
{
	snprintf(out, cap,
		 "{\"aud\":%s,\"exp\":%lld,\"iat\":%lld,\"nbf\":%lld,"
		 "\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"jti\":\"j\","
		 "%s\"sub\":\"system:serviceaccount:team-a:default\"}",
		 aud, exp, iat, iat, k8s);
}

/* The "kubernetes.io" member for pod name/uid in namespace ns. */
static inline void jf_pod_claim(char *out, size_t cap, const char *ns, const char *pod,
				const char *uid)
{
	snprintf(out, cap,
		 "\"kubernetes.io\":{\"namespace\":\"%s\",\"node\":{\"name\":\"n\",\"uid\":\"nu\"},"
		 "\"pod\":{\"name\":\"%s\",\"uid\":\"%s\"},"
		 "\"serviceaccount\":{\"name\":\"default\",\"uid\":\"sa\"}},", ns, pod, uid);
}

#endif
