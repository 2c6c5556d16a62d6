/*
 * test_jwtverify.c - local verification of agent tokens with the issuer's
 * keys: the JWKS parser (usable keys kept, others skipped, caps and bad
 * keys refused) and the verifier (RS256 and ES256 tokens signed here pass;
 * another key, another kid, another issuer, a changed payload or
 * signature, a switched algorithm are refused with their reason).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "jwt_sign.h"
#include "report/jwks.h"
#include "report/jwtverify.h"

#define AUD "tfjob-report"
#define ISS "https://kubernetes.default.svc.cluster.local"
#define NOW_S 1700000000LL
#define NOW_MS (NOW_S * 1000)

static EVP_PKEY *RSA_K, *RSA_OTHER, *EC_K;
static struct tfj_jwks *KEYS;

static struct tfj_jwks *parse(const char *doc, int *rc)
{
	struct tfj_jwks *ks = NULL;

	*rc = tfj_jwks_parse(&ks, doc, strlen(doc));
	return ks;
}

/* A token like a projected one for pod mnist-worker-0, signed by k with kid. */
static char *token(EVP_PKEY *k, const char *alg, const char *kid, const char *aud,
		   long long exp)
{
	char hdr[256], p[2048], claim[512];

	snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"%s\"}", alg, kid);
	jf_pod_claim(claim, sizeof(claim), "team-a", "mnist-worker-0", "pod-0");
	jf_payload(p, sizeof(p), aud, NOW_S - 10, exp, claim);
	return js_sign(k, hdr, p);
}

static enum tfj_jwt_reason verify(const char *t, const char *iss)
{
	struct tfj_jwtclaims c;

	return tfj_jwtverify_check(&c, t, KEYS, iss, AUD, NOW_MS);
}

static void test_setup(void)
{
	char doc[8192], a[3000], b[3000];
	int rc;

	RSA_K = js_key("RSA");
	RSA_OTHER = js_key("RSA");
	EC_K = js_key("EC");
	TFJ_CHECK(RSA_K && RSA_OTHER && EC_K);
	js_jwk(a, sizeof(a), RSA_K, "rsa-1");
	js_jwk(b, sizeof(b), EC_K, "ec-1");
	/* Keys of kinds not checked here are skipped: a symmetric one, P-384, encryption. */
	snprintf(doc, sizeof(doc),
		 "{\"keys\":[%s,{\"kty\":\"oct\",\"k\":\"AAAA\"},%s,"
		 "{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"},"
		 "{\"kty\":\"RSA\",\"use\":\"enc\",\"n\":\"AA\",\"e\":\"AQAB\"}]}", a, b);
	KEYS = parse(doc, &rc);
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_EQ(tfj_jwks_count(KEYS), (size_t)2);
	TFJ_CHECK(tfj_jwks_find(KEYS, "rsa-1", "RS256") != NULL);
	TFJ_CHECK(tfj_jwks_find(KEYS, "ec-1", "ES256") != NULL);
	/* A key only serves its own algorithm family. */
	TFJ_CHECK(tfj_jwks_find(KEYS, "rsa-1", "ES256") == NULL);
	TFJ_CHECK(tfj_jwks_find(KEYS, "ec-1", "RS256") == NULL);
	TFJ_CHECK(tfj_jwks_find(KEYS, "rsa-1", "PS256") == NULL);
	TFJ_CHECK(tfj_jwks_find(KEYS, "", "RS256") == NULL); /* no kid: only a set of one */
}

static void test_valid_tokens(void)
{
	struct tfj_jwtclaims c;
	char *t = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 3590);

	TFJ_CHECK_INT(tfj_jwtverify_check(&c, t, KEYS, ISS, AUD, NOW_MS), TFJ_JWT_OK);
	TFJ_CHECK_STR(c.ns, "team-a");
	TFJ_CHECK_STR(c.pod, "mnist-worker-0");
	TFJ_CHECK_STR(c.pod_uid, "pod-0");
	TFJ_CHECK_STR(c.kid, "rsa-1");
	TFJ_CHECK_STR(c.iss, ISS);
	TFJ_CHECK_EQ(c.exp_ms, (NOW_S + 3590) * 1000);
	free(t);
	t = token(EC_K, "ES256", "ec-1", "[\"" AUD "\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_OK);
	free(t);
}

static void test_refused(void)
{
	char *t;
	size_t n;

	/* Signed by a key the issuer does not have, under a kid it does. */
	t = token(RSA_OTHER, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_SIGNATURE);
	free(t);
	t = token(RSA_OTHER, "RS256", "rsa-2", "[\"" AUD "\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_UNKNOWN_KEY);
	free(t);
	/* The claims come first: expired, another audience, before any key work. */
	t = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S - 3600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_EXPIRED);
	free(t);
	t = token(RSA_K, "RS256", "rsa-1", "[\"other\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_AUDIENCE);
	free(t);
	/* Another issuer; no issuer known. */
	t = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, "https://other.example"), TFJ_JWT_ISSUER);
	TFJ_CHECK_INT(verify(t, NULL), TFJ_JWT_ISSUER);
	/* One bit of the signature flipped; the signature cut short. */
	n = strlen(t);
	t[n - 3] = t[n - 3] == 'A' ? 'B' : 'A';
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_SIGNATURE);
	t[n - 4] = '\0';
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_SIGNATURE);
	free(t);
	/* The header says ES256 for the RSA key's kid: no key of that kind. */
	t = token(RSA_K, "ES256", "rsa-1", "[\"" AUD "\"]", NOW_S + 600);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_UNKNOWN_KEY);
	free(t);
	/* An ES256 signature of the wrong length. */
	t = token(EC_K, "ES256", "ec-1", "[\"" AUD "\"]", NOW_S + 600);
	n = strlen(t);
	memcpy(t + n - 8, "\0", 1);
	TFJ_CHECK_INT(verify(t, ISS), TFJ_JWT_SIGNATURE);
	free(t);
	/* The payload of one token with the signature of another. */
	{
		char *a = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 600);
		char *b = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 700);
		char *mix = malloc(strlen(a) + strlen(b) + 1);

		strcpy(mix, a);
		strcpy(strrchr(mix, '.'), strrchr(b, '.'));
		TFJ_CHECK_INT(verify(a, ISS), TFJ_JWT_OK);
		TFJ_CHECK_INT(verify(mix, ISS), TFJ_JWT_SIGNATURE);
		free(a);
		free(b);
		free(mix);
	}
	/* No keys at all. */
	t = token(RSA_K, "RS256", "rsa-1", "[\"" AUD "\"]", NOW_S + 600);
	{
		struct tfj_jwtclaims c;

		TFJ_CHECK_INT(tfj_jwtverify_check(&c, t, NULL, ISS, AUD, NOW_MS),
			      TFJ_JWT_UNKNOWN_KEY);
		TFJ_CHECK_STR(c.pod, "");
	}
	free(t);
	TFJ_CHECK_STR(tfj_jwtclaims_reason(TFJ_JWT_SIGNATURE), "signature");
}

static void test_jwks_refusals(void)
{
	static const char *const bad[] = {
		"", "[]", "{}", "{\"keys\":{}}", "{\"keys\":[1]}",
		"{\"keys\":[{\"n\":\"AA\"}]}",                                /* no kty */
		"{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}", /* 24 bits */
		"{\"keys\":[{\"kty\":\"RSA\",\"e\":\"AQAB\"}]}",               /* no n */
		"{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}]}",
		"{\"keys\":[{\"kty\":\"RSA\",\"n\":\"A+A\",\"e\":\"AQAB\"}]}", /* not base64url */
	};
	char doc[8192], x[64];
	unsigned char zero[32] = { 0 };
	struct tfj_jwks *ks;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ks = parse(bad[i], &rc);
		TFJ_CHECK_NE(rc, 0);
		TFJ_CHECK(ks == NULL);
	}
	/* A point not on the curve. */
	js_b64url_bin(x, sizeof(x), zero, sizeof(zero));
	snprintf(doc, sizeof(doc), "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\","
		 "\"y\":\"%s\"}]}", x, x);
	ks = parse(doc, &rc);
	TFJ_CHECK_NE(rc, 0);
	/* More keys than the cap, even skipped ones. */
	strcpy(doc, "{\"keys\":[");
	for (i = 0; i <= TFJ_JWKS_KEYS_MAX; i++)
		strcat(doc, i ? ",{\"kty\":\"oct\"}" : "{\"kty\":\"oct\"}");
	strcat(doc, "]}");
	ks = parse(doc, &rc);
	TFJ_CHECK_INT(rc, TFJ_ETOOBIG);
	/* A document over the size cap. */
	{
		char *big = malloc(TFJ_JWKS_DOC_MAX + 100);

		memset(big, ' ', TFJ_JWKS_DOC_MAX + 99);
		memcpy(big, "{\"keys\":[]}", 11);
		big[TFJ_JWKS_DOC_MAX + 99] = '\0';
		ks = parse(big, &rc);
		TFJ_CHECK_INT(rc, TFJ_ETOOBIG);
		free(big);
	}
	/* An empty set is a set: nothing verifies with it. */
	ks = parse("{\"keys\":[]}", &rc);
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_EQ(tfj_jwks_count(ks), (size_t)0);
	tfj_jwks_free(ks);
	tfj_jwks_free(NULL);
}

int main(void)
{
	TFJ_RUN(test_setup);
	TFJ_RUN(test_valid_tokens);
	TFJ_RUN(test_refused);
	TFJ_RUN(test_jwks_refusals);
	tfj_jwks_free(KEYS);
	EVP_PKEY_free(RSA_K);
	EVP_PKEY_free(RSA_OTHER);
	EVP_PKEY_free(EC_K);
	return tfj_test_finish();
}
