/*
 * jwks.c - the issuer's public keys from a JWKS document (see jwks.h).
 */
#include "report/jwks.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "report/jwtclaims.h"

#define KID_MAX 128
#define RSA_MIN_BYTES 256   /* 2048 bits: what the API server's keys have at least */
#define RSA_MAX_BYTES 1024  /* 8192 bits */
#define RSA_E_MAX_BYTES 8
#define P256_BYTES 32

enum key_type { KEY_RSA, KEY_P256 };

struct key {
	char kid[KID_MAX];
	enum key_type type;
	EVP_PKEY *pkey;
};

struct tfj_jwks {
	size_t n;
	struct key keys[TFJ_JWKS_KEYS_MAX];
};

/* A base64url member of a JWK decoded into a malloc'd buffer of min..max bytes. */
static int member_bytes(unsigned char **out, size_t *len, const cJSON *jwk, const char *name,
			size_t min, size_t max)
{
	const char *s;
	int rc;

	*out = NULL;
	if ((rc = tfj_json_get_string(&s, jwk, name)))
		return rc;
	if ((rc = tfj_jwtclaims_b64url(out, len, s, strlen(s))))
		return rc;
	if (*len < min || *len > max) {
		free(*out);
		*out = NULL;
		return tfj_err_set(TFJ_ERANGE, "jwks: %s: %zu bytes", name, *len);
	}
	return 0;
}

/* Builds a public key of `type` ("RSA" or "EC") from the parameters in bld. */
static int from_params(EVP_PKEY **out, const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	int rc = 0;

	*out = NULL;
	if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) <= 0 || !*out)
		rc = tfj_err_set(TFJ_EPARSE, "jwks: %s key refused by libcrypto", type);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return rc;
}

static int rsa_key(EVP_PKEY **out, const cJSON *jwk)
{
	unsigned char *n = NULL, *e = NULL;
	size_t nl = 0, el = 0;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	int rc;

	*out = NULL;
	if ((rc = member_bytes(&n, &nl, jwk, "n", RSA_MIN_BYTES, RSA_MAX_BYTES)) ||
	    (rc = member_bytes(&e, &el, jwk, "e", 1, RSA_E_MAX_BYTES)))
		goto out;
	if (!(bn = BN_bin2bn(n, (int)nl, NULL)) || !(be = BN_bin2bn(e, (int)el, NULL)) ||
	    !(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be)) {
		rc = tfj_err_set(TFJ_ENOMEM, "jwks");
		goto out;
	}
	/* A leading zero byte would make a 2048-bit modulus look 2056 bits long. */
	if (BN_num_bits(bn) < RSA_MIN_BYTES * 8 || !BN_is_odd(be) || BN_is_one(be)) {
		rc = tfj_err_set(TFJ_ERANGE, "jwks: weak RSA key");
		goto out;
	}
	rc = from_params(out, "RSA", bld);
out:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return rc;
}

static int p256_key(EVP_PKEY **out, const cJSON *jwk)
{
	unsigned char *x = NULL, *y = NULL, pub[1 + 2 * P256_BYTES];
	size_t xl = 0, yl = 0;
	OSSL_PARAM_BLD *bld = NULL;
	int rc;

	*out = NULL;
	if ((rc = member_bytes(&x, &xl, jwk, "x", P256_BYTES, P256_BYTES)) ||
	    (rc = member_bytes(&y, &yl, jwk, "y", P256_BYTES, P256_BYTES)))
		goto out;
	/* The uncompressed point; libcrypto refuses one that is not on the curve. */
	pub[0] = 0x04;
	memcpy(pub + 1, x, P256_BYTES);
	memcpy(pub + 1 + P256_BYTES, y, P256_BYTES);
	if (!(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub))) {
		rc = tfj_err_set(TFJ_ENOMEM, "jwks");
		goto out;
	}
	rc = from_params(out, "EC", bld);
out:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return rc;
}

/* One JWK: 0 with k->pkey set, 0 with it NULL when the key is skipped, or an error. */
static int one_key(struct key *k, const cJSON *jwk)
{
	const char *kty, *use, *crv, *kid;
	size_t n;
	int rc;

	memset(k, 0, sizeof(*k));
	if (!cJSON_IsObject(jwk))
		return tfj_err_set(TFJ_ETYPE, "jwks: a key is not an object");
	if ((rc = tfj_json_get_string(&kty, jwk, "kty")) ||
	    (rc = tfj_json_opt_string(&use, jwk, "use", "sig")) ||
	    (rc = tfj_json_opt_string(&crv, jwk, "crv", "")) ||
	    (rc = tfj_json_opt_string(&kid, jwk, "kid", "")))
		return rc;
	if ((n = strnlen(kid, KID_MAX)) >= KID_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "jwks: kid too long");
	memcpy(k->kid, kid, n + 1);
	if (strcmp(use, "sig"))
		return 0;
	if (!strcmp(kty, "RSA")) {
		k->type = KEY_RSA;
		return rsa_key(&k->pkey, jwk);
	}
	if (!strcmp(kty, "EC") && !strcmp(crv, "P-256")) {
		k->type = KEY_P256;
		return p256_key(&k->pkey, jwk);
	}
	return 0;
}

int tfj_jwks_parse(struct tfj_jwks **out, const char *text, size_t len)
{
	struct tfj_jwks *ks = NULL;
	const cJSON *arr, *jwk;
	cJSON *doc = NULL;
	int rc;

	*out = NULL;
	if (len > TFJ_JWKS_DOC_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "jwks: document over %u bytes", TFJ_JWKS_DOC_MAX);
	if ((rc = tfj_json_parse(&doc, text, len, TFJ_JWKS_DOC_MAX)))
		return rc;
	if (!cJSON_IsObject(doc)) {
		rc = tfj_err_set(TFJ_ETYPE, "jwks: not an object");
		goto out;
	}
	if ((rc = tfj_json_get_array(&arr, doc, "keys")))
		goto out;
	if (cJSON_GetArraySize(arr) > TFJ_JWKS_KEYS_MAX) {
		rc = tfj_err_set(TFJ_ETOOBIG, "jwks: over %d keys", TFJ_JWKS_KEYS_MAX);
		goto out;
	}
	if (!(ks = calloc(1, sizeof(*ks)))) {
		rc = tfj_err_set(TFJ_ENOMEM, "jwks");
		goto out;
	}
	cJSON_ArrayForEach(jwk, arr) {
		if ((rc = one_key(&ks->keys[ks->n], jwk)))
			goto out;
		if (ks->keys[ks->n].pkey)
			ks->n++;
	}
	*out = ks;
	ks = NULL;
out:
	tfj_jwks_free(ks);
	cJSON_Delete(doc);
	return rc;
}

void tfj_jwks_free(struct tfj_jwks *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->n; i++)
		EVP_PKEY_free(ks->keys[i].pkey);
	free(ks);
}

size_t tfj_jwks_count(const struct tfj_jwks *ks)
{
	return ks ? ks->n : 0;
}

EVP_PKEY *tfj_jwks_find(const struct tfj_jwks *ks, const char *kid, const char *alg)
{
	enum key_type want;
	size_t i;

	if (!ks || !kid || !alg)
		return NULL;
	if (!strcmp(alg, "RS256") || !strcmp(alg, "RS384") || !strcmp(alg, "RS512"))
		want = KEY_RSA;
	else if (!strcmp(alg, "ES256"))
		want = KEY_P256;
	else
		return NULL;
	for (i = 0; i < ks->n; i++)
		if (ks->keys[i].type == want &&
		    (*kid ? !strcmp(ks->keys[i].kid, kid) : ks->n == 1))
			return ks->keys[i].pkey;
	return NULL;
}
