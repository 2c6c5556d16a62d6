/*
 * tokenreview.c - TokenReview, its cache, and the authorization decision
 * (see tokenreview.h).
 */
#include "report/tokenreview.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

#define EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"
#define EXTRA_POD_UID "authentication.kubernetes.io/pod-uid"
#define SA_PREFIX "system:serviceaccount:"
#define REVIEW_PATH "/apis/authentication.k8s.io/v1/tokenreviews"
#define REVIEW_RESP_MAX (256u * 1024u)
#define WAYS 4

static const char *const reasons[] = { "ok", "no_token", "invalid_token", "not_pod_bound",
				       "pod_mismatch", "pod_unknown", "wrong_replica" };

const char *tfj_tokenreview_reason(enum tfj_authz a)
{
	return (a >= 0 && a < TFJ_AUTHZ_COUNT) ? reasons[a] : "";
}

static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap);

	if (n >= cap)
		return tfj_err_set(TFJ_ERANGE, "tokenreview: field too long");
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* The first string of user.extra[key] ("" when absent). */
static int extra_first(char *dst, size_t cap, const cJSON *extra, const char *key)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(extra, key), *first;
	const char *s;
	int rc;

	dst[0] = '\0';
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return tfj_err_set(TFJ_ETYPE, "tokenreview: extra %s: not an array", key);
	if (!(first = arr->child))
		return 0;
	if ((rc = tfj_json_as_string(&s, first, key)))
		return rc;
	return copy_str(dst, cap, s);
}

int tfj_tokenreview_parse(struct tfj_tokenreview *out, const cJSON *review, const char *audience)
{
	const cJSON *status, *user, *extra = NULL, *auds, *a;
	const char *username, *colon;
	int authed = 0, rc, listed = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = tfj_json_get_object(&status, review, "status")) ||
	    (rc = tfj_json_opt_bool(&authed, status, "authenticated", 0)))
		return rc;
	if (!authed)
		return 0;
	if (audience) {
		if (tfj_json_get_array(&auds, status, "audiences"))
			return 0;
		cJSON_ArrayForEach(a, auds)
			listed |= cJSON_IsString(a) && a->valuestring && !strcmp(a->valuestring, audience);
		if (!listed)
			return 0;
	}
	if ((rc = tfj_json_get_object(&user, status, "user")) ||
	    (rc = tfj_json_get_string(&username, user, "username")))
		goto bad;
	if (cJSON_GetObjectItemCaseSensitive(user, "extra") &&
	    (rc = tfj_json_get_object(&extra, user, "extra")))
		goto bad;
	/* Only service accounts have pods; other users stay without ns/pod. */
	if (!strncmp(username, SA_PREFIX, strlen(SA_PREFIX))) {
		const char *rest = username + strlen(SA_PREFIX);
		size_t nl;

		colon = strchr(rest, ':');
		if (!colon || (nl = (size_t)(colon - rest)) == 0 || nl >= sizeof(out->ns)) {
			rc = tfj_err_set(TFJ_EPARSE, "tokenreview: bad service account user name");
			goto bad;
		}
		memcpy(out->ns, rest, nl);
		out->ns[nl] = '\0';
		if ((rc = copy_str(out->sa, sizeof(out->sa), colon + 1)))
			goto bad;
	}
	if (extra && ((rc = extra_first(out->pod, sizeof(out->pod), extra, EXTRA_POD_NAME)) ||
		      (rc = extra_first(out->pod_uid, sizeof(out->pod_uid), extra, EXTRA_POD_UID))))
		goto bad;
	out->authenticated = 1;
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return rc;
}

static const char *label(const cJSON *meta, const char *key)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, key);

	return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

static int controller_uid_is(const cJSON *meta, const char *uid)
{
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences"), *r;

	cJSON_ArrayForEach(r, refs) {
		const cJSON *ctl = cJSON_GetObjectItemCaseSensitive(r, "controller");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(r, "uid");
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");

		if (cJSON_IsTrue(ctl) && cJSON_IsString(u) && u->valuestring &&
		    cJSON_IsString(kind) && kind->valuestring &&
		    !strcmp(kind->valuestring, TFJ_TFJOB_KIND))
			return !strcmp(u->valuestring, uid);
	}
	return 0;
}

enum tfj_authz tfj_tokenreview_authorize(const struct tfj_tokenreview *tr, const cJSON *pod,
					 const struct tfj_reportmsg_ref *ref)
{
	const cJSON *meta;
	const char *v;
	char idx[16];

	if (!tr || !tr->authenticated)
		return TFJ_AUTHZ_INVALID_TOKEN;
	if (!tr->pod[0] || !tr->pod_uid[0] || !tr->ns[0])
		return TFJ_AUTHZ_NOT_POD_BOUND;
	if (strcmp(tr->ns, ref->ns) || strcmp(tr->pod, ref->pod))
		return TFJ_AUTHZ_POD_MISMATCH;
	if (!pod || tfj_json_get_object(&meta, pod, "metadata"))
		return TFJ_AUTHZ_POD_UNKNOWN;
	/* A token of an earlier pod with the same name must not speak for this one. */
	if (tfj_json_get_string(&v, meta, "uid") || strcmp(v, tr->pod_uid))
		return TFJ_AUTHZ_POD_MISMATCH;
	if (tfj_json_get_string(&v, meta, "namespace") || strcmp(v, ref->ns) ||
	    tfj_json_get_string(&v, meta, "name") || strcmp(v, ref->pod))
		return TFJ_AUTHZ_POD_MISMATCH;
	snprintf(idx, sizeof(idx), "%d", ref->index);
	if (!(v = label(meta, TFJ_LABEL_JOB_NAME)) || strcmp(v, ref->job) ||
	    !(v = label(meta, TFJ_LABEL_REPLICA_TYPE)) ||
	    strcmp(v, tfj_tfjob_type_lower((enum tfj_rtype)ref->type)) ||
	    !(v = label(meta, TFJ_LABEL_REPLICA_INDEX)) || strcmp(v, idx) ||
	    !controller_uid_is(meta, ref->job_uid))
		return TFJ_AUTHZ_WRONG_REPLICA;
	return TFJ_AUTHZ_OK;
}

/* ---- the reviewer and its cache ---- */

struct entry {
	unsigned char hash[32];
	int used;
	int64_t expires_ms;
	struct tfj_tokenreview tr;
};

struct tfj_tokenreviewer {
	struct tfj_kube *k;
	char *audience;
	int64_t ttl_ms;
	size_t nsets;
	struct entry *tab;
	pthread_mutex_t mu;
	uint64_t reviews, hits;
};

int tfj_tokenreviewer_new(struct tfj_tokenreviewer **out, struct tfj_kube *k,
			  const char *audience, int64_t ttl_ms, size_t entries)
{
	struct tfj_tokenreviewer *r;

	*out = NULL;
	if (!audience || !*audience || strlen(audience) > 253)
		return tfj_err_set(TFJ_EINVAL, "tokenreview: bad audience");
	if (!entries)
		entries = 1024;
	if (entries > (1u << 20))
		return tfj_err_set(TFJ_EINVAL, "tokenreview: cache too large");
	if (!(r = calloc(1, sizeof(*r))))
		return tfj_err_set(TFJ_ENOMEM, "tokenreview");
	r->k = k;
	r->ttl_ms = ttl_ms > 0 ? ttl_ms : 60000;
	r->nsets = (entries + WAYS - 1) / WAYS;
	r->audience = strdup(audience);
	r->tab = calloc(r->nsets * WAYS, sizeof(*r->tab));
	if (!r->audience || !r->tab) {
		tfj_tokenreviewer_free(r);
		return tfj_err_set(TFJ_ENOMEM, "tokenreview");
	}
	pthread_mutex_init(&r->mu, NULL);
	*out = r;
	return 0;
}

void tfj_tokenreviewer_free(struct tfj_tokenreviewer *r)
{
	if (!r)
		return;
	if (r->tab)
		pthread_mutex_destroy(&r->mu);
	free(r->audience);
	free(r->tab);
	free(r);
}

static int sha256(unsigned char out[32], const char *s)
{
	unsigned int n = 0;

	if (!EVP_Digest(s, strlen(s), out, &n, EVP_sha256(), NULL) || n != 32)
		return tfj_err_set(TFJ_EINTERNAL, "tokenreview: sha256 failed");
	return 0;
}

static struct entry *set_of(struct tfj_tokenreviewer *r, const unsigned char *h)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | h[i];
	return &r->tab[(v % r->nsets) * WAYS];
}

/* The API call. The request body holds the token: wiped before it is freed. */
static int review(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out, const char *token)
{
	cJSON *body = NULL, *spec = NULL, *auds, *resp = NULL;
	char *text = NULL;
	struct tfj_buf rb;
	int rc;

	tfj_buf_init(&rb, REVIEW_RESP_MAX);
	if (!(body = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(body, "apiVersion", "authentication.k8s.io/v1") ||
	    !cJSON_AddStringToObject(body, "kind", "TokenReview") ||
	    !(spec = cJSON_AddObjectToObject(body, "spec")) ||
	    !cJSON_AddStringToObject(spec, "token", token) ||
	    !(auds = cJSON_AddArrayToObject(spec, "audiences"))) {
		rc = tfj_err_set(TFJ_ENOMEM, "tokenreview");
		goto out;
	}
	cJSON_AddItemToArray(auds, cJSON_CreateString(r->audience));
	if (!(text = cJSON_PrintUnformatted(body))) {
		rc = tfj_err_set(TFJ_ENOMEM, "tokenreview");
		goto out;
	}
	rc = tfj_kube_do(r->k, TFJ_KUBE_POST, REVIEW_PATH, "application/json", text, strlen(text),
			 &rb, NULL);
	if (rc)
		goto out;
	if ((rc = tfj_json_parse(&resp, tfj_buf_cstr(&rb), rb.len, REVIEW_RESP_MAX)))
		goto out;
	rc = tfj_tokenreview_parse(out, resp, r->audience);
out:
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	if (spec && body) {
		cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "token");

		if (t && t->valuestring)
			explicit_bzero(t->valuestring, strlen(t->valuestring));
	}
	cJSON_Delete(body);
	cJSON_Delete(resp);
	tfj_buf_free(&rb);
	return rc;
}

int tfj_tokenreviewer_check(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out,
			    const char *token, int64_t now_ms)
{
	unsigned char h[32];
	struct entry *set, *victim;
	int rc, i;

	memset(out, 0, sizeof(*out));
	if (!token || !*token || strnlen(token, TFJ_TOKENREVIEW_TOKEN_MAX + 1) >
	    TFJ_TOKENREVIEW_TOKEN_MAX)
		return 0; /* not authenticated */
	if ((rc = sha256(h, token)))
		return rc;
	pthread_mutex_lock(&r->mu);
	set = set_of(r, h);
	for (i = 0; i < WAYS; i++)
		if (set[i].used && set[i].expires_ms > now_ms && !memcmp(set[i].hash, h, 32)) {
			*out = set[i].tr;
			r->hits++;
			pthread_mutex_unlock(&r->mu);
			return 0;
		}
	r->reviews++;
	pthread_mutex_unlock(&r->mu);
	/* Concurrent misses for one token may both ask; the cache stays consistent. */
	if ((rc = review(r, out, token)))
		return rc;
	pthread_mutex_lock(&r->mu);
	set = set_of(r, h);
	victim = &set[0];
	for (i = 0; i < WAYS; i++) {
		if (!set[i].used || !memcmp(set[i].hash, h, 32)) {
			victim = &set[i];
			break;
		}
		if (set[i].expires_ms < victim->expires_ms)
			victim = &set[i];
	}
	memcpy(victim->hash, h, 32);
	victim->used = 1;
	/* Refusals are remembered shorter: a token may be valid a moment later. */
	victim->expires_ms = now_ms + (out->authenticated ? r->ttl_ms : r->ttl_ms / 4);
	victim->tr = *out;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

void tfj_tokenreviewer_stats(struct tfj_tokenreviewer *r, uint64_t *reviews, uint64_t *hits)
{
	pthread_mutex_lock(&r->mu);
	*reviews = r->reviews;
	*hits = r->hits;
	pthread_mutex_unlock(&r->mu);
}
