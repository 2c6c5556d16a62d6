/*
 * jwtclaims.c - the local look at a bearer token (see jwtclaims.h).
 */
#include "report/jwtclaims.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <tfj/err.h>
#include <tfj/json.h>

/* Seconds since the epoch as JSON numbers: bounded so *1000 cannot overflow. */
#define SECONDS_MAX ((int64_t)1 << 40)

static const char *const reasons[] = { "ok", "malformed", "too_large", "algorithm",
				       "audience", "expired", "not_yet_valid", "not_pod_bound",
				       "issuer", "unknown_key", "signature" };

const char *tfj_jwtclaims_reason(enum tfj_jwt_reason r)
{
	return (r >= 0 && r < TFJ_JWT_COUNT) ? reasons[r] : "";
}

static int url_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* 1 when s[0..n) is unpadded base64url of a plausible length. */
static int url_part(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n % 4 == 1)
		return 0;
	for (i = 0; i < n; i++)
		if (!url_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/*
 * Decodes one unpadded base64url part (already checked by url_part, n at
 * most the part's cap) into a malloc'd buffer. OpenSSL's block decoder
 * takes the standard alphabet with padding: the part is translated first.
 */
static int url_decode(char **out, size_t *outlen, const char *s, size_t n)
{
	size_t padded = (n + 3) / 4 * 4, pad = padded - n, i;
	unsigned char *std = malloc(padded + 1), *bin = malloc(padded / 4 * 3 + 1);
	int len;

	*out = NULL;
	if (!std || !bin) {
		free(std);
		free(bin);
		return -1;
	}
	for (i = 0; i < n; i++)
		std[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : (unsigned char)s[i];
	for (; i < padded; i++)
		std[i] = '=';
	len = EVP_DecodeBlock(bin, std, (int)padded);
	free(std);
	/* The block decoder counts the padding as zero bytes. */
	if (len < 0 || (size_t)len < pad) {
		free(bin);
		return -1;
	}
	*outlen = (size_t)len - pad;
	bin[*outlen] = '\0';
	*out = (char *)bin;
	return 0;
}

/* The part as a JSON object (*out), or NULL when it is not one. */
static cJSON *part_json(const char *s, size_t n, size_t cap)
{
	char *text = NULL;
	size_t len = 0;
	cJSON *j = NULL;

	if (url_decode(&text, &len, s, n))
		return NULL;
	if (tfj_json_parse(&j, text, len, cap) || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	free(text);
	return j;
}

static int copy(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Signature algorithms a Kubernetes service-account issuer uses: asymmetric only. */
static int alg_ok(const cJSON *hdr)
{
	static const char *const ok[] = { "RS256", "RS384", "RS512", "ES256", "ES384",
					  "ES512", "PS256", "PS384", "PS512" };
	const char *alg;
	size_t i;

	if (tfj_json_get_string(&alg, hdr, "alg"))
		return 0;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(alg, ok[i]))
			return 1;
	return 0;
}

/* The header's alg (already checked) and optional kid, the payload's optional iss. */
static enum tfj_jwt_reason names(struct tfj_jwtclaims *out, const cJSON *hdr, const cJSON *p)
{
	const char *alg = "", *kid, *iss;

	if (tfj_json_get_string(&alg, hdr, "alg") || tfj_json_opt_string(&kid, hdr, "kid", "") ||
	    tfj_json_opt_string(&iss, p, "iss", "") || copy(out->alg, sizeof(out->alg), alg) ||
	    copy(out->kid, sizeof(out->kid), kid) || copy(out->iss, sizeof(out->iss), iss))
		return TFJ_JWT_MALFORMED;
	return TFJ_JWT_OK;
}

/* aud is a string or an array of strings (RFC 7519 4.1.3). -1: wrong type. */
static int aud_lists(const cJSON *payload, const char *audience)
{
	const cJSON *aud = cJSON_GetObjectItemCaseSensitive(payload, "aud"), *a;
	const char *s;
	int found = 0;

	if (cJSON_IsString(aud))
		return !strcmp(aud->valuestring, audience);
	if (!cJSON_IsArray(aud))
		return aud ? -1 : 0;
	cJSON_ArrayForEach(a, aud) {
		if (tfj_json_as_string(&s, a, "aud"))
			return -1;
		found |= !strcmp(s, audience);
	}
	return found;
}

/* Times: exp required; nbf and iat optional. */
static enum tfj_jwt_reason times(struct tfj_jwtclaims *out, const cJSON *p, int64_t now_ms)
{
	int64_t exp, nbf, iat;

	if (tfj_json_get_int64(&exp, p, "exp", 0, SECONDS_MAX) ||
	    tfj_json_opt_int64(&nbf, p, "nbf", 0, SECONDS_MAX, 0) ||
	    tfj_json_opt_int64(&iat, p, "iat", 0, SECONDS_MAX, 0))
		return TFJ_JWT_MALFORMED;
	out->exp_ms = exp * 1000;
	if (out->exp_ms + TFJ_JWT_SKEW_MS < now_ms)
		return TFJ_JWT_EXPIRED;
	if (nbf * 1000 > now_ms + TFJ_JWT_SKEW_MS || iat * 1000 > now_ms + TFJ_JWT_SKEW_MS ||
	    exp < iat)
		return TFJ_JWT_NOT_YET_VALID;
	return TFJ_JWT_OK;
}

/* The kubernetes.io claim: namespace, pod {name, uid}, serviceaccount {name}. */
static enum tfj_jwt_reason pod_claim(struct tfj_jwtclaims *out, const cJSON *p)
{
	const cJSON *k8s, *pod, *sa;
	const char *ns, *name, *uid, *san = "";

	if (!cJSON_GetObjectItemCaseSensitive(p, "kubernetes.io"))
		return TFJ_JWT_NOT_POD_BOUND;
	if (tfj_json_get_object(&k8s, p, "kubernetes.io") ||
	    tfj_json_get_string(&ns, k8s, "namespace"))
		return TFJ_JWT_MALFORMED;
	if (!cJSON_GetObjectItemCaseSensitive(k8s, "pod"))
		return TFJ_JWT_NOT_POD_BOUND;
	if (tfj_json_get_object(&pod, k8s, "pod") || tfj_json_get_string(&name, pod, "name") ||
	    tfj_json_get_string(&uid, pod, "uid"))
		return TFJ_JWT_MALFORMED;
	if (cJSON_GetObjectItemCaseSensitive(k8s, "serviceaccount") &&
	    (tfj_json_get_object(&sa, k8s, "serviceaccount") ||
	     tfj_json_get_string(&san, sa, "name")))
		return TFJ_JWT_MALFORMED;
	if (!*ns || !*name || !*uid || copy(out->ns, sizeof(out->ns), ns) ||
	    copy(out->pod, sizeof(out->pod), name) ||
	    copy(out->pod_uid, sizeof(out->pod_uid), uid) || copy(out->sa, sizeof(out->sa), san))
		return TFJ_JWT_MALFORMED;
	return TFJ_JWT_OK;
}

enum tfj_jwt_reason tfj_jwtclaims_check(struct tfj_jwtclaims *out, const char *token,
					const char *audience, int64_t now_ms)
{
	const char *d1, *d2;
	size_t n0, n1, n2, total;
	cJSON *hdr = NULL, *payload = NULL;
	enum tfj_jwt_reason r;
	int listed;

	memset(out, 0, sizeof(*out));
	total = strnlen(token, TFJ_JWT_HEADER_MAX + TFJ_JWT_PAYLOAD_MAX + TFJ_JWT_SIGNATURE_MAX + 3);
	if (!(d1 = memchr(token, '.', total)) ||
	    !(d2 = memchr(d1 + 1, '.', total - (size_t)(d1 + 1 - token))) ||
	    memchr(d2 + 1, '.', total - (size_t)(d2 + 1 - token)))
		return token[total] ? TFJ_JWT_TOO_LARGE : TFJ_JWT_MALFORMED;
	n0 = (size_t)(d1 - token);
	n1 = (size_t)(d2 - d1 - 1);
	n2 = total - (size_t)(d2 + 1 - token);
	if (token[total] || n0 > TFJ_JWT_HEADER_MAX || n1 > TFJ_JWT_PAYLOAD_MAX ||
	    n2 > TFJ_JWT_SIGNATURE_MAX)
		return TFJ_JWT_TOO_LARGE;
	if (!url_part(token, n0) || !url_part(d1 + 1, n1) || !url_part(d2 + 1, n2))
		return TFJ_JWT_MALFORMED;
	if (!(hdr = part_json(token, n0, TFJ_JWT_HEADER_MAX)) ||
	    !(payload = part_json(d1 + 1, n1, TFJ_JWT_PAYLOAD_MAX))) {
		r = TFJ_JWT_MALFORMED;
		goto out;
	}
	if (!alg_ok(hdr)) {
		r = TFJ_JWT_ALGORITHM;
		goto out;
	}
	listed = aud_lists(payload, audience);
	if (listed <= 0) {
		r = listed < 0 ? TFJ_JWT_MALFORMED : TFJ_JWT_AUDIENCE;
		goto out;
	}
	if ((r = times(out, payload, now_ms)) != TFJ_JWT_OK ||
	    (r = names(out, hdr, payload)) != TFJ_JWT_OK)
		goto out;
	r = pod_claim(out, payload);
out:
	cJSON_Delete(hdr);
	cJSON_Delete(payload);
	if (r != TFJ_JWT_OK)
		memset(out, 0, sizeof(*out));
	return r;
}

int tfj_jwtclaims_b64url(unsigned char **out, size_t *outlen, const char *s, size_t n)
{
	char *text = NULL;

	*out = NULL;
	*outlen = 0;
	if (n > TFJ_JWT_PAYLOAD_MAX || !url_part(s, n))
		return tfj_err_set(TFJ_EPARSE, "base64url: bad input");
	if (url_decode(&text, outlen, s, n))
		return tfj_err_set(TFJ_EPARSE, "base64url: bad input");
	*out = (unsigned char *)text;
	return 0;
}
