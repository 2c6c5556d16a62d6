/*
 * tokenreview.h - who is calling the report service, and may it report for
 * the replica it names.
 *
 * Authentication: the agent sends its pod's projected service-account token
 * (audience e.g. "tfjob-report", docs/operator.md). The operator verifies it
 * itself with the API server's service-account keys (issuer.h: signature,
 * issuer, audience, exp/nbf, the pod claim). Only where issuer discovery
 * is unavailable does it ask the API server (POST authentication.k8s.io/v1
 * tokenreviews with spec.audiences = [audience]) through the one
 * Kubernetes client (kube.h); a token bound to a pod comes back with the
 * pod's name and uid in status.user.extra and the namespace in the username
 * system:serviceaccount:<ns>:<sa>.
 *
 * Authorization (pure, tfj_tokenreview_authorize): the token's pod must be
 * the pod the report names, in the job's namespace, and that pod (from the
 * operator's pod cache) must carry the job's labels for the claimed replica
 * type and index and be controlled by the TFJob whose uid the report names.
 *
 * Protection (docs/security.md, "Report authentication"): a token is first
 * looked at locally (report/jwtclaims.h: shape, size, algorithm, audience,
 * expiry, the pod claim) and the pod it claims is checked against the cache
 * with the same decision as below; only a token that survives has its
 * signature checked, or in the fallback asks the API server, and then only
 * within the reviewer's own token bucket (qps/burst) and its namespace's
 * quarter of it, on its own API client (main.c), so a flood never spends
 * the controller's budget. Reviews refused by a bucket answer
 * TFJ_AUTHZ_REVIEW_LIMITED.
 *
 * Caches, keyed by the SHA-256 of the token (the raw token is never stored
 * or logged), both fixed-size 4-way set-associative tables: verified tokens
 * only in one (trusted until the token's exp when its signature was
 * checked here, until min(ttl, exp) after a TokenReview); tokens the API
 * server refused in another, smaller one (a quarter of the ttl). Garbage
 * never reaches either, and refusals cannot push out a verified entry.
 * The pod a cached token names is still checked against the pod cache on
 * every call (tfj_tokenreview_authorize), so deleting the pod revokes it.
 *
 * Threads: a reviewer may be shared; it has its own lock.
 * Ownership: the reviewer borrows the kube client (it must outlive it).
 */
#ifndef TFJ_TOKENREVIEW_H
#define TFJ_TOKENREVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/kube.h"
#include "report/reportmsg.h"

#define TFJ_TOKENREVIEW_TOKEN_MAX 16384
#define TFJ_TOKENREVIEW_DEFAULT_AUDIENCE "tfjob-report"

/* What the API server said about a token. */
struct tfj_tokenreview {
	int authenticated;
	char ns[64];          /* from system:serviceaccount:<ns>:<sa> */
	char sa[254];
	char pod[254];        /* extra authentication.kubernetes.io/pod-name, "" if unbound */
	char pod_uid[64];     /* extra authentication.kubernetes.io/pod-uid */
};

/* Why a report is refused; also the `reason` label of tfjob_report_rejected_total. */
enum tfj_authz {
	TFJ_AUTHZ_OK = 0,
	TFJ_AUTHZ_NO_TOKEN,        /* no or malformed authorization metadata */
	TFJ_AUTHZ_INVALID_TOKEN,   /* TokenReview: not authenticated (forged, expired, audience) */
	TFJ_AUTHZ_NOT_POD_BOUND,   /* a valid token, but not bound to a pod */
	TFJ_AUTHZ_POD_MISMATCH,    /* the token's pod/namespace is not the pod the report names */
	TFJ_AUTHZ_POD_UNKNOWN,     /* the named pod is not in the cache */
	TFJ_AUTHZ_WRONG_REPLICA,   /* the pod's labels or owner are another job or replica */
	TFJ_AUTHZ_REVIEW_LIMITED,  /* plausible, but the TokenReview budget is spent: retry */
	TFJ_AUTHZ_COUNT
};

/* "ok", "no_token", "invalid_token", ... */
const char *tfj_tokenreview_reason(enum tfj_authz a);

/*
 * Reads a TokenReview response (the whole object). Pure. A review with
 * authenticated false gives 0 and out->authenticated = 0; a malformed one
 * gives TFJ_EPARSE/TFJ_ETYPE. When `audience` is not NULL, a review whose
 * status.audiences does not list it counts as not authenticated.
 */
int tfj_tokenreview_parse(struct tfj_tokenreview *out, const cJSON *review,
			  const char *audience);

/*
 * The decision. Pure. `pod` is the cached pod named ref->ns/ref->pod, or
 * NULL when the cache has none.
 */
enum tfj_authz tfj_tokenreview_authorize(const struct tfj_tokenreview *tr, const cJSON *pod,
					 const struct tfj_reportmsg_ref *ref);

struct tfj_tokenreviewer;

/*
 * ttl_ms: how long a result is trusted (0 = 60 s; negatives for a quarter
 * of that); entries: cache size (0 = 1024, rounded up to a multiple of 4).
 */
int tfj_tokenreviewer_new(struct tfj_tokenreviewer **out, struct tfj_kube *k,
			  const char *audience, int64_t ttl_ms, size_t entries);
void tfj_tokenreviewer_free(struct tfj_tokenreviewer *r);

/*
 * The TokenReview budget (default 5/s, burst 20); qps <= 0: unlimited. Each
 * namespace (the one the token claims) may spend a quarter of it.
 */
void tfj_tokenreviewer_limit(struct tfj_tokenreviewer *r, double qps, int burst);

struct tfj_issuer;
/*
 * Verifies tokens locally with the issuer's keys (issuer.h), borrowed: it
 * must outlive the reviewer. Without one (or while its discovery is
 * unavailable) every plausible token costs a TokenReview.
 */
void tfj_tokenreviewer_use_issuer(struct tfj_tokenreviewer *r, struct tfj_issuer *is);

/*
 * Reviews `token` for a report naming `ref`, whose pod `pod` is the cached
 * one (NULL when the cache has none). In order: the verified cache; the
 * local checks (jwtclaims.h, then tfj_tokenreview_authorize with what the
 * token claims); the signature with the issuer's keys, when an issuer is
 * set and has them; else the refusals' cache, the namespace's share and
 * the rate limit, the TokenReview.
 * Returns 0 with *local = TFJ_AUTHZ_OK and *out filled (check
 * out->authenticated, then authorize with it), or 0 with *local the reason
 * it was refused without asking (*out unauthenticated); or an API error
 * (TFJ_EUNAVAIL, TFJ_EFORBIDDEN when the operator may not create
 * tokenreviews, ...): the caller answers UNAVAILABLE.
 */
int tfj_tokenreviewer_check(struct tfj_tokenreviewer *r, struct tfj_tokenreview *out,
			    enum tfj_authz *local, const char *token, const cJSON *pod,
			    const struct tfj_reportmsg_ref *ref, int64_t now_ms);

/* 1 when `token` is in the verified cache at now_ms (no I/O, nothing counted). */
int tfj_tokenreviewer_known(struct tfj_tokenreviewer *r, const char *token, int64_t now_ms);

/* API calls made and cache hits (for metrics and tests). */
void tfj_tokenreviewer_stats(struct tfj_tokenreviewer *r, uint64_t *reviews, uint64_t *hits);

/*
 * Appends tfjob_report_tokenreviews_total{result}, the caches' hits,
 * tfjob_report_tokenreview_throttled_total (and _ns_throttled_total),
 * tfjob_report_token_local_rejected_total{reason},
 * tfjob_report_auth_total{method,result} and the issuer's metrics. Accepts
 * NULL (nothing).
 */
int tfj_tokenreviewer_metrics(struct tfj_tokenreviewer *r, struct tfj_buf *out);

#endif
