/*
 * tokenreview.c - TokenReview, its cache, and the authorization decision
 * (see tokenreview.h).
 */
#include "report/tokenreview.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include <tfj/buf.h>
#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/ratelimit.h"
#include "report/issuer.h"
#include "report/jwtclaims.h"
#include "report/peerlimit.h"
#include "report/tokencache.h"

#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

#define EXTRA_POD_NAME "authentication.kubernetes.io/pod-name"
#define EXTRA_POD_UID "authentication.kubernetes.io/pod-uid"
#define SA_PREFIX "system:serviceaccount:"
#define REVIEW_PATH "/apis/authentication.k8s.io/v1/tokenreviews"
#define REVIEW_RESP_MAX (256u * 1024u)
/* One namespace may spend at most this fraction (1/N) of the TokenReview budget. */
#define NS_SHARE_DIVISOR 4

static const char *const reasons[] = { "ok", "no_token", "invalid_token", "not_pod_bound",
				       "pod_mismatch", "pod_unknown", "wrong_replica",
				       "review_limited" };

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

/* ---- the reviewer and its caches ---- */

/*
 * Local refusals by reason: jwtclaims.h's reasons, then the authorization
 * reasons of what the token claims (a pod we do not know, another job...).
 */
#define LOCAL_AUTHZ0 TFJ_JWT_COUNT
#define NLOCAL (TFJ_JWT_COUNT + 3)
static const char *const authz_local[3] = { "pod_mismatch", "pod_unknown", "wrong_replica" };

enum { RES_AUTHENTICATED, RES_UNAUTHENTICATED, RES_ERROR, NRES };
static const char *const res_names[NRES] = { "authenticated", "unauthenticated", "error" };

/* tfjob_report_auth_total{method,result}: how each token was decided. */
enum { M_CACHE, M_LOCAL, M_REVIEW, NMETHOD };
enum { A_OK, A_REFUSED, A_LIMITED, A_ERROR, NARES };
static const char *const method_names[NMETHOD] = { "cache", "local", "tokenreview" };
static const char *const ares_names[NARES] = { "ok", "refused", "limited", "error" };

struct tfj_tokenreviewer {
	struct tfj_kube *k;
	char *audience;
	int64_t ttl_ms;
	struct tfj_tokencache good, bad;      /* verified tokens; tokens the API server refused */
	struct tfj_ratelimit rl;     /* the TokenReview budget */
	struct tfj_peerlimit *ns_share; /* each namespace's share of it */
	struct tfj_issuer *issuer;   /* local verification; NULL: TokenReview only */
	pthread_mutex_t mu;
	int mu_init;
	uint64_t hits, bad_hits, throttled, ns_throttled;
	uint64_t auth[NMETHOD][NARES];
	uint64_t results[NRES];
	uint64_t local[NLOCAL];
};

/*
 * The per-namespace buckets: 1/NS_SHARE_DIVISOR of the budget each, so
 * forged tokens naming pods of one namespace leave the rest to the others.
 */
static int share_new(struct tfj_peerlimit **out, double qps, int burst)
{
	int b = burst / NS_SHARE_DIVISOR;

	return tfj_peerlimit_new(out, qps > 0 ? qps / NS_SHARE_DIVISOR : 0, b > 1 ? b : 1, 256);
}

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
	r->audience = strdup(audience);
	/* Refusals need less room: garbage never gets this far. */
	if (!r->audience || tfj_tokencache_init(&r->good, entries) ||
	    tfj_tokencache_init(&r->bad, entries / 4 > 64 ? entries / 4 : 64)) {
		tfj_tokenreviewer_free(r);
		return tfj_err_set(TFJ_ENOMEM, "tokenreview");
	}
	pthread_mutex_init(&r->mu, NULL);
	r->mu_init = 1;
	tfj_ratelimit_init(&r->rl, 5, 20);
	if (share_new(&r->ns_share, 5, 20)) {
		tfj_tokenreviewer_free(r);
		return tfj_err_set(TFJ_ENOMEM, "tokenreview");
	}
	*out = r;
	return 0;
}

void tfj_tokenreviewer_limit(struct tfj_tokenreviewer *r, double qps, int burst)
{
	struct tfj_peerlimit *share = NULL;

	tfj_ratelimit_destroy(&r->rl);
	tfj_ratelimit_init(&r->rl, qps, burst);
	/* Keeps the old shares when the new table cannot be made. */
	if (!share_new(&share, qps, burst)) {
		tfj_peerlimit_free(r->ns_share);
		r->ns_share = share;
	}
}

void tfj_tokenreviewer_use_issuer(struct tfj_tokenreviewer *r, struct tfj_issuer *is)
{
	r->issuer = is;
}

void tfj_tokenreviewer_free(struct tfj_tokenreviewer *r)
{
	if (!r)
		return;
	if (r->mu_init) {
		pthread_mutex_destroy(&r->mu);
		tfj_ratelimit_destroy(&r->rl);
	}
	tfj_peerlimit_free(r->ns_share);
	free(r->audience);
	tfj_tokencache_free(&r->good);
	tfj_tokencache_free(&r->bad);
	free(r);
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

static void count(struct tfj_tokenreviewer *r, uint64_t *counter)
{
	pthread_mutex_lock(&r->mu);
	(*counter)++;
	pthread_mutex_unlock(&r->mu);
}

/*
 * The local verdict on token: TFJ_AUTHZ_OK when it is worth a TokenReview
 * (*claims filled), else the refusal (counted).
 */
static enum tfj_authz local_check(struct tfj_tokenreviewer *r, struct tfj_jwtclaims *claims,
				  const char *token, const cJSON *pod,
				  const struct tfj_reportmsg_ref *ref, int64_t now_ms)
{
	enum tfj_jwt_reason jr = tfj_jwtclaims_check(claims, token, r->audience, now_ms);
	struct tfj_tokenreview claimed;
	enum tfj_authz az;

	if (jr != TFJ_JWT_OK) {
		count(r, &r->local[jr]);
		return jr == TFJ_JWT_NOT_POD_BOUND ? TFJ_AUTHZ_NOT_POD_BOUND
						   : TFJ_AUTHZ_INVALID_TOKEN;
	}
	/* What the token claims, judged as if it were true: a refusal needs no proof. */
	memset(&claimed, 0, sizeof(claimed));
	claimed.authenticated = 1;
	memcpy(claimed.ns, claims->ns, sizeof(claimed.ns));
	memcpy(claimed.sa, claims->sa, sizeof(claimed.sa));
	memcpy(claimed.pod, claims->pod, sizeof(claimed.pod));
	memcpy(claimed.pod_uid, claims->pod_uid, sizeof(claimed.pod_uid));
	az = tfj_tokenreview_authorize(&claimed, pod, ref);
	if (az == TFJ_AUTHZ_POD_MISMATCH || az == TFJ_AUTHZ_POD_UNKNOWN ||
	    az == TFJ_AUTHZ_WRONG_REPLICA)
		count(r, &r->local[LOCAL_AUTHZ0 + (az - TFJ_AUTHZ_POD_MISMATCH)]);
	return az;
}

/* what the token's verified claims say, as a review would have said it. */
static void from_claims(struct tfj_tokenreview *out, const struct tfj_jwtclaims *c)
{
	memset(out, 0, sizeof(*out));
	out->authenticated = 1;
	memcpy(out->ns, c->ns, sizeof(out->ns));
	memcpy(out->sa, c->sa, sizeof(out->sa));
	memcpy(out->pod, c->pod, sizeof(out->pod));
	memcpy(out->pod_uid, c->pod_uid, sizeof(out->pod_uid));
}

/*
 * The issuer's verdict (issuer.h): 1 when it decided (*local and *out set,
 * a verified token cached until its exp), 0 when it could not and a
 * TokenReview must.
 */
static int verify_locally(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out,
			  enum tfj_authz *local, const char *token, const unsigned char *h,
			  int64_t now_ms)
{
	struct tfj_jwtclaims c;
	enum tfj_jwt_reason why;

	if (!r->issuer || tfj_issuer_verify(r->issuer, &why, &c, token, r->audience, now_ms))
		return 0;
	pthread_mutex_lock(&r->mu);
	if (why == TFJ_JWT_OK) {
		from_claims(out, &c);
		/* The signature holds until exp; the pod is checked on every call anyway. */
		tfj_tokencache_insert(&r->good, h, out, now_ms, c.exp_ms);
		r->auth[M_LOCAL][A_OK]++;
	} else {
		r->local[why]++;
		r->auth[M_LOCAL][A_REFUSED]++;
		*local = why == TFJ_JWT_NOT_POD_BOUND ? TFJ_AUTHZ_NOT_POD_BOUND
						      : TFJ_AUTHZ_INVALID_TOKEN;
	}
	pthread_mutex_unlock(&r->mu);
	return 1;
}

/*
 * 1 when a TokenReview for a token naming namespace ns may be sent now:
 * within the namespace's share, then within the whole budget.
 */
static int review_allowed(struct tfj_tokenreviewer *r, const char *ns)
{
	uint64_t now = tfj_clock_mono_ns();

	if (!tfj_peerlimit_allowed(r->ns_share, ns, now)) {
		pthread_mutex_lock(&r->mu);
		r->ns_throttled++;
		r->throttled++;
		r->auth[M_REVIEW][A_LIMITED]++;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	if (!tfj_ratelimit_try(&r->rl, now)) {
		pthread_mutex_lock(&r->mu);
		r->throttled++;
		r->auth[M_REVIEW][A_LIMITED]++;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	tfj_peerlimit_charge(r->ns_share, ns, now);
	return 1;
}

/* The fallback: the refusals' cache, the budget, the TokenReview. */
static int ask_server(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out,
		      enum tfj_authz *local, const char *token, const unsigned char *h,
		      const struct tfj_jwtclaims *claims, int64_t now_ms)
{
	int64_t until;
	int rc;

	pthread_mutex_lock(&r->mu);
	if (tfj_tokencache_lookup(&r->bad, h, now_ms)) {
		r->bad_hits++;
		r->auth[M_REVIEW][A_REFUSED]++;
		pthread_mutex_unlock(&r->mu);
		return 0; /* refused a moment ago */
	}
	pthread_mutex_unlock(&r->mu);
	if (!review_allowed(r, claims->ns)) {
		*local = TFJ_AUTHZ_REVIEW_LIMITED;
		return 0;
	}
	/* Concurrent misses for one token may both ask; the caches stay consistent. */
	if ((rc = review(r, out, token))) {
		pthread_mutex_lock(&r->mu);
		r->results[RES_ERROR]++;
		r->auth[M_REVIEW][A_ERROR]++;
		pthread_mutex_unlock(&r->mu);
		return rc;
	}
	pthread_mutex_lock(&r->mu);
	if (out->authenticated) {
		r->results[RES_AUTHENTICATED]++;
		r->auth[M_REVIEW][A_OK]++;
		/* Trusted no longer than the token itself. */
		until = now_ms + r->ttl_ms;
		if (claims->exp_ms < until)
			until = claims->exp_ms;
		tfj_tokencache_insert(&r->good, h, out, now_ms, until);
	} else {
		r->results[RES_UNAUTHENTICATED]++;
		r->auth[M_REVIEW][A_REFUSED]++;
		/* Refusals are remembered shorter: a token may be valid a moment later. */
		tfj_tokencache_insert(&r->bad, h, out, now_ms, now_ms + r->ttl_ms / 4);
	}
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int tfj_tokenreviewer_check(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out,
			    enum tfj_authz *local, const char *token, const cJSON *pod,
			    const struct tfj_reportmsg_ref *ref, int64_t now_ms)
{
	struct tfj_jwtclaims claims;
	unsigned char h[TFJ_TOKENCACHE_HASH];
	struct tfj_tokencache_entry *e;
	int rc;

	memset(out, 0, sizeof(*out));
	*local = TFJ_AUTHZ_OK;
	if (!token || !*token) {
		*local = TFJ_AUTHZ_NO_TOKEN;
		return 0;
	}
	if (strnlen(token, TFJ_TOKENREVIEW_TOKEN_MAX + 1) > TFJ_TOKENREVIEW_TOKEN_MAX) {
		count(r, &r->local[TFJ_JWT_TOO_LARGE]);
		count(r, &r->auth[M_LOCAL][A_REFUSED]);
		*local = TFJ_AUTHZ_INVALID_TOKEN;
		return 0;
	}
	if ((rc = tfj_tokencache_hash(h, token)))
		return rc;
	pthread_mutex_lock(&r->mu);
	if ((e = tfj_tokencache_lookup(&r->good, h, now_ms))) {
		*out = e->tr;
		r->hits++;
		r->auth[M_CACHE][A_OK]++;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	pthread_mutex_unlock(&r->mu);
	if ((*local = local_check(r, &claims, token, pod, ref, now_ms)) != TFJ_AUTHZ_OK) {
		count(r, &r->auth[M_LOCAL][A_REFUSED]);
		return 0;
	}
	if (verify_locally(r, out, local, token, h, now_ms))
		return 0;
	return ask_server(r, out, local, token, h, &claims, now_ms);
}

int tfj_tokenreviewer_known(struct tfj_tokenreviewer *r, const char *token, int64_t now_ms)
{
	unsigned char h[TFJ_TOKENCACHE_HASH];
	int known;

	if (!token || !*token ||
	    strnlen(token, TFJ_TOKENREVIEW_TOKEN_MAX + 1) > TFJ_TOKENREVIEW_TOKEN_MAX ||
	    tfj_tokencache_hash(h, token))
		return 0;
	pthread_mutex_lock(&r->mu);
	known = tfj_tokencache_lookup(&r->good, h, now_ms) != NULL;
	pthread_mutex_unlock(&r->mu);
	return known;
}

void tfj_tokenreviewer_stats(struct tfj_tokenreviewer *r, uint64_t *reviews, uint64_t *hits)
{
	pthread_mutex_lock(&r->mu);
	*reviews = r->results[RES_AUTHENTICATED] + r->results[RES_UNAUTHENTICATED] +
		   r->results[RES_ERROR];
	*hits = r->hits;
	pthread_mutex_unlock(&r->mu);
}

int tfj_tokenreviewer_metrics(struct tfj_tokenreviewer *r, struct tfj_buf *out)
{
	uint64_t res[NRES], loc[NLOCAL], hits, bad_hits, throttled, ns_throttled;
	uint64_t auth[NMETHOD][NARES];
	int rc = 0, i, j;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->mu);
	memcpy(auth, r->auth, sizeof(auth));
	ns_throttled = r->ns_throttled;
	memcpy(res, r->results, sizeof(res));
	memcpy(loc, r->local, sizeof(loc));
	hits = r->hits;
	bad_hits = r->bad_hits;
	throttled = r->throttled;
	pthread_mutex_unlock(&r->mu);
	rc |= tfj_buf_puts(out, "# HELP tfjob_report_tokenreviews_total TokenReviews sent to the "
			   "API server, by result.\n"
			   "# TYPE tfjob_report_tokenreviews_total counter\n");
	for (i = 0; i < NRES; i++)
		rc |= tfj_buf_printf(out, "tfjob_report_tokenreviews_total{result=\"%s\"} %llu\n",
				     res_names[i], (unsigned long long)res[i]);
	rc |= tfj_buf_printf(out, "# HELP tfjob_report_tokenreview_cache_hits_total Tokens "
			     "answered from a cache (verified, or refused a moment ago).\n"
			     "# TYPE tfjob_report_tokenreview_cache_hits_total counter\n"
			     "tfjob_report_tokenreview_cache_hits_total{cache=\"verified\"} %llu\n"
			     "tfjob_report_tokenreview_cache_hits_total{cache=\"refused\"} %llu\n"
			     "# HELP tfjob_report_tokenreview_throttled_total TokenReviews not sent "
			     "because their budget was spent.\n"
			     "# TYPE tfjob_report_tokenreview_throttled_total counter\n"
			     "tfjob_report_tokenreview_throttled_total %llu\n",
			     (unsigned long long)hits, (unsigned long long)bad_hits,
			     (unsigned long long)throttled);
	rc |= tfj_buf_puts(out, "# HELP tfjob_report_token_local_rejected_total Tokens refused "
			   "without a TokenReview, by reason.\n"
			   "# TYPE tfjob_report_token_local_rejected_total counter\n");
	for (i = 1; i < NLOCAL; i++)
		rc |= tfj_buf_printf(out, "tfjob_report_token_local_rejected_total{reason=\"%s\"} "
				     "%llu\n", i < LOCAL_AUTHZ0 ? tfj_jwtclaims_reason(
				     (enum tfj_jwt_reason)i) : authz_local[i - LOCAL_AUTHZ0],
				     (unsigned long long)loc[i]);
	rc |= tfj_buf_printf(out, "# HELP tfjob_report_tokenreview_ns_throttled_total "
			     "TokenReviews not sent because their namespace's share of the budget "
			     "was spent.\n"
			     "# TYPE tfjob_report_tokenreview_ns_throttled_total counter\n"
			     "tfjob_report_tokenreview_ns_throttled_total %llu\n"
			     "# HELP tfjob_report_auth_total Report tokens decided, by how "
			     "(cache, local signature check, TokenReview) and result.\n"
			     "# TYPE tfjob_report_auth_total counter\n",
			     (unsigned long long)ns_throttled);
	for (i = 0; i < NMETHOD; i++)
		for (j = 0; j < NARES; j++)
			rc |= tfj_buf_printf(out, "tfjob_report_auth_total{method=\"%s\","
					     "result=\"%s\"} %llu\n", method_names[i],
					     ares_names[j], (unsigned long long)auth[i][j]);
	rc |= tfj_issuer_metrics(r->issuer, out);
	return rc ? TFJ_ENOMEM : 0;
}
