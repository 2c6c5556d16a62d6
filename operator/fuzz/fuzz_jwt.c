/*
 * fuzz_jwt.c - the issuer's key set (jwks.h) and the local token check
 * (jwtverify.h) on arbitrary bytes.
 *
 * The input is a JWKS document, a newline, and a token: the set is parsed
 * (a refused one leaves no keys) and the token checked against it, so both
 * parsers and the signature path see attacker-chosen input together.
 * Properties: no crash or leak; a set never holds more than its cap; a
 * token that passes names its issuer, a namespace, a pod and its uid, and
 * an expiry after the fixed clock's skew.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/jwks.h"
#include "report/jwtverify.h"

#define ISS "https://kubernetes.default.svc.cluster.local"
#define AUD "tfjob-report"
#define NOW_MS 1700000000000LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t doc_len = nl ? (size_t)(nl - data) : size;
	struct tfj_jwks *ks = NULL;
	struct tfj_jwtclaims c;
	char *tok;

	if (tfj_jwks_parse(&ks, (const char *)data, doc_len) == 0 &&
	    tfj_jwks_count(ks) > TFJ_JWKS_KEYS_MAX)
		abort();
	tok = malloc(nl ? size - doc_len : 1);
	if (!tok) {
		tfj_jwks_free(ks);
		return 0;
	}
	tok[0] = '\0';
	if (nl) {
		memcpy(tok, nl + 1, size - doc_len - 1);
		tok[size - doc_len - 1] = '\0';
	}
	if (tfj_jwtverify_check(&c, tok, ks, ISS, AUD, NOW_MS) == TFJ_JWT_OK &&
	    (strcmp(c.iss, ISS) || !c.ns[0] || !c.pod[0] || !c.pod_uid[0] ||
	     c.exp_ms + TFJ_JWT_SKEW_MS < NOW_MS))
		abort();
	free(tok);
	tfj_jwks_free(ks);
	return 0;
}
