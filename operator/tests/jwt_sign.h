/*
 * jwt_sign.h - signed tokens and their JWKS for the tests of local token
 * verification (test_jwtverify.c, itest_report.c): an RSA or P-256 key made
 * here, its JWK, and header.payload signed with it as an issuer would.
 * Header-only (static); builds on jwt_forge.h's base64url.
 */
#ifndef TFJ_JWT_SIGN_H
#define TFJ_JWT_SIGN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "jwt_forge.h"

/* base64url of n bytes (no padding) into out. */
static inline void js_b64url_bin(char *out, size_t cap, const unsigned char *b, size_t n)
{
	unsigned char *tmp = malloc(n / 3 * 4 + 8);
	int len = tmp ? EVP_EncodeBlock(tmp, b, (int)n) : 0;
	size_t i, o = 0;

	for (i = 0; i < (size_t)len && o + 1 < cap && tmp[i] != '='; i++)
		out[o++] = tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : (char)tmp[i];
	out[o] = '\0';
	free(tmp);
}

/* A fresh key: "RSA" (2048 bits) or "EC" (P-256). */
static inline EVP_PKEY *js_key(const char *type)
{
	return !strcmp(type, "RSA") ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
}

static inline void js_bn_member(char *out, size_t cap, const EVP_PKEY *k, const char *param,
				int pad)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	int n;

	out[0] = '\0';
	if (!EVP_PKEY_get_bn_param(k, param, &bn))
		return;
	n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
	if (n > 0)
		js_b64url_bin(out, cap, buf, (size_t)n);
	BN_free(bn);
}

/* The key's public JWK (one JSON object) with `kid`. */
static inline void js_jwk(char *out, size_t cap, const EVP_PKEY *k, const char *kid)
{
	char a[1500], b[200];

	if (EVP_PKEY_is_a(k, "RSA")) {
		js_bn_member(a, sizeof(a), k, OSSL_PKEY_PARAM_RSA_N, 0);
		js_bn_member(b, sizeof(b), k, OSSL_PKEY_PARAM_RSA_E, 0);
		snprintf(out, cap, "{\"use\":\"sig\",\"kty\":\"RSA\",\"kid\":\"%s\",\"alg\":\"RS256\","
			 "\"n\":\"%s\",\"e\":\"%s\"}", kid, a, b);
	} else {
		js_bn_member(a, sizeof(a), k, OSSL_PKEY_PARAM_EC_PUB_X, 32);
		js_bn_member(b, sizeof(b), k, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
		snprintf(out, cap, "{\"use\":\"sig\",\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\","
			 "\"alg\":\"ES256\",\"x\":\"%s\",\"y\":\"%s\"}", kid, a, b);
	}
}

/* ECDSA's DER signature as JWS's r || s (64 bytes). */
static inline size_t js_der_to_raw(unsigned char *raw, const unsigned char *der, size_t n)
{
	ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &der, (long)n);
	const BIGNUM *r, *ss;

	if (!s)
		return 0;
	ECDSA_SIG_get0(s, &r, &ss);
	BN_bn2binpad(r, raw, 32);
	BN_bn2binpad(ss, raw + 32, 32);
	ECDSA_SIG_free(s);
	return 64;
}

/* header.payload signed by k (RS256 or ES256 after its type); malloc'd. */
static inline char *js_sign(EVP_PKEY *k, const char *header, const char *payload)
{
	size_t cap = 4 * (strlen(header) + strlen(payload)) + 1024, siglen = 0, n;
	char *t = malloc(cap), *p;
	unsigned char sig[600], raw[64];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!t || !ctx) {
		free(t);
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	jf_b64url(t, cap, header);
	p = t + strlen(t);
	*p++ = '.';
	jf_b64url(p, cap - (size_t)(p - t), payload);
	siglen = sizeof(sig);
	if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (unsigned char *)t, strlen(t)) != 1) {
		free(t);
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	EVP_MD_CTX_free(ctx);
	n = strlen(t);
	t[n++] = '.';
	if (EVP_PKEY_is_a(k, "EC"))
		js_b64url_bin(t + n, cap - n, raw, js_der_to_raw(raw, sig, siglen));
	else
		js_b64url_bin(t + n, cap - n, sig, siglen);
	return t;
}

#endif
