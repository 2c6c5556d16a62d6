/*
 * jwtverify.c - one token against the issuer's keys (see jwtverify.h).
 */
#include "report/jwtverify.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>

#define P256_SIG_BYTES 64

static const EVP_MD *digest_of(const char *alg)
{
	if (!strcmp(alg, "RS256") || !strcmp(alg, "ES256"))
		return EVP_sha256();
	if (!strcmp(alg, "RS384"))
		return EVP_sha384();
	if (!strcmp(alg, "RS512"))
		return EVP_sha512();
	return NULL;
}

/*
 * JWS carries an ES256 signature as r || s, 32 bytes each (RFC 7518
 * 3.4); libcrypto verifies the DER form. *der is malloc'd.
 */
static int es256_der(unsigned char **der, size_t *der_len, const unsigned char *sig,
		     size_t len)
{
	ECDSA_SIG *es = NULL;
	BIGNUM *r = NULL, *s = NULL;
	int n = -1;

	*der = NULL;
	if (len != P256_SIG_BYTES || !(es = ECDSA_SIG_new()) ||
	    !(r = BN_bin2bn(sig, P256_SIG_BYTES / 2, NULL)) ||
	    !(s = BN_bin2bn(sig + P256_SIG_BYTES / 2, P256_SIG_BYTES / 2, NULL)) ||
	    !ECDSA_SIG_set0(es, r, s)) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return -1;
	}
	n = i2d_ECDSA_SIG(es, der);
	ECDSA_SIG_free(es);
	if (n <= 0) {
		*der = NULL;
		return -1;
	}
	*der_len = (size_t)n;
	return 0;
}

/* 1 when sig (base64url) is alg's signature of signed_part[0..n) under key. */
static int signature_ok(EVP_PKEY *key, const char *alg, const char *signed_part, size_t n,
			const char *sig_b64)
{
	unsigned char *sig = NULL, *der = NULL;
	const unsigned char *use;
	size_t len = 0, use_len;
	const EVP_MD *md = digest_of(alg);
	EVP_MD_CTX *ctx = NULL;
	int ok = 0;

	if (!md || tfj_jwtclaims_b64url(&sig, &len, sig_b64, strlen(sig_b64)))
		goto out;
	use = sig;
	use_len = len;
	if (!strcmp(alg, "ES256")) {
		if (es256_der(&der, &use_len, sig, len))
			goto out;
		use = der;
	}
	if (!(ctx = EVP_MD_CTX_new()) || EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) != 1)
		goto out;
	ok = EVP_DigestVerify(ctx, use, use_len, (const unsigned char *)signed_part, n) == 1;
out:
	EVP_MD_CTX_free(ctx);
	free(sig);
	OPENSSL_free(der);
	return ok;
}

enum tfj_jwt_reason tfj_jwtverify_check(struct tfj_jwtclaims *out, const char *token,
					const struct tfj_jwks *keys, const char *issuer,
					const char *audience, int64_t now_ms)
{
	enum tfj_jwt_reason r = tfj_jwtclaims_check(out, token, audience, now_ms);
	const char *sig;
	EVP_PKEY *key;

	if (r != TFJ_JWT_OK)
		return r;
	/* jwtclaims found exactly two dots in a string of bounded length. */
	sig = strrchr(token, '.');
	if (!issuer || strcmp(out->iss, issuer))
		r = TFJ_JWT_ISSUER;
	else if (!(key = tfj_jwks_find(keys, out->kid, out->alg)))
		r = TFJ_JWT_UNKNOWN_KEY;
	else if (!signature_ok(key, out->alg, token, (size_t)(sig - token), sig + 1))
		r = TFJ_JWT_SIGNATURE;
	if (r != TFJ_JWT_OK)
		memset(out, 0, sizeof(*out));
	return r;
}
