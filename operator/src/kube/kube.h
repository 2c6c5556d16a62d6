/*
 * kube.h - the one Kubernetes API client (libcurl).
 *
 * Every request the operator makes goes through here: TLS verified against
 * the configured CA (never switched off), bearer token or client
 * certificate, a client-side QPS/burst token bucket, response bodies capped
 * in size, and the HTTP status mapped to a tfj error code:
 *   404 TFJ_ENOTFOUND, 409 TFJ_EEXIST (reason AlreadyExists) or TFJ_ECONFLICT,
 *   410 TFJ_EGONE, 401 TFJ_EAUTH, 403 TFJ_EFORBIDDEN, 400/422 TFJ_EINVAL,
 *   408/504 TFJ_ETIMEOUT, 429/5xx and transport failures TFJ_EUNAVAIL.
 * A 429, and a 503 with Retry-After, is first retried after the wait the
 * server asks for, a bounded number of times (retryafter.h).
 * The error detail carries the API's Status message, never a credential.
 *
 * The token file (service account token, tokenFile) is re-read every
 * token_reload_s seconds and immediately after a 401, and the request is
 * retried once, because projected tokens rotate under a running process.
 *
 * Threads: a client is shared by all threads. Curl handles are kept in a
 * small pool so connections are reused; each request takes one for its
 * duration.
 *
 * Ownership: the client copies what it needs from the kubeconfig. JSON
 * results (*out) are new cJSON trees the caller frees with cJSON_Delete().
 */
#ifndef TFJ_KUBE_H
#define TFJ_KUBE_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/kubeconfig.h"

enum tfj_kube_verb {
	TFJ_KUBE_GET = 0,
	TFJ_KUBE_LIST,
	TFJ_KUBE_WATCH,
	TFJ_KUBE_POST,
	TFJ_KUBE_PUT,
	TFJ_KUBE_PATCH,
	TFJ_KUBE_DELETE,
	TFJ_KUBE_NVERBS
};

enum tfj_kube_patch_type {
	TFJ_KUBE_PATCH_MERGE = 0,     /* application/merge-patch+json */
	TFJ_KUBE_PATCH_STRATEGIC,     /* application/strategic-merge-patch+json */
	TFJ_KUBE_PATCH_JSON           /* application/json-patch+json */
};

#define TFJ_KUBE_MAX_BODY_DEFAULT (64u << 20) /* responses (lists can be large) */
#define TFJ_KUBE_MAX_REQUEST      (4u << 20)  /* request bodies we send */
#define TFJ_KUBE_MAX_PATH         4096

struct tfj_kube_opts {
	double qps;            /* client-side rate; <= 0: unlimited (default 20) */
	int burst;             /* default 30 */
	long timeout_ms;       /* per request except watches (default 30000) */
	size_t max_body;       /* response cap (default TFJ_KUBE_MAX_BODY_DEFAULT) */
	long token_reload_s;   /* default 60 */
	const char *user_agent;/* default "tfjob-operator" */
};

struct tfj_kube;

/* opts may be NULL (all defaults). Fails on an unusable config. */
int tfj_kube_new(struct tfj_kube **out, const struct tfj_kubeconfig *cfg,
		 const struct tfj_kube_opts *opts);
void tfj_kube_free(struct tfj_kube *k);

/* The namespace of the configuration (context or service account), or NULL. */
const char *tfj_kube_namespace(const struct tfj_kube *k);

/*
 * One request. `path` starts with '/' and is appended to the server URL
 * (query included). body may be NULL. The response body is appended to
 * `resp` (may be NULL) and *status (may be NULL) gets the HTTP code (0 on
 * a transport error). Returns 0 on 2xx, else the mapped error.
 */
int tfj_kube_do(struct tfj_kube *k, enum tfj_kube_verb verb, const char *path,
		const char *content_type, const char *body, size_t body_len,
		struct tfj_buf *resp, long *status);

/*
 * GET `path` asking for `accept` (an Accept header value; NULL:
 * application/json), the body appended to resp: for documents the API
 * server serves only in another media type (the service-account issuer's
 * JWKS, application/jwk-set+json). Returns 0 on 2xx, else the mapped error.
 */
int tfj_kube_get_as(struct tfj_kube *k, const char *path, const char *accept,
		    struct tfj_buf *resp);

/* GET one object or a list (counted as LIST). *out is the parsed body. */
int tfj_kube_get(struct tfj_kube *k, cJSON **out, const char *path);
int tfj_kube_list(struct tfj_kube *k, cJSON **out, const char *path);
/* POST obj to a collection path. out may be NULL. */
int tfj_kube_create(struct tfj_kube *k, cJSON **out, const char *path, const cJSON *obj);
/* PUT obj (must carry metadata.resourceVersion for optimistic locking). */
int tfj_kube_replace(struct tfj_kube *k, cJSON **out, const char *path, const cJSON *obj);
int tfj_kube_patch(struct tfj_kube *k, cJSON **out, const char *path,
		   enum tfj_kube_patch_type type, const char *patch);
/*
 * DELETE with optional preconditions.uid (only that incarnation is deleted)
 * and propagationPolicy ("Background", "Foreground", "Orphan" or NULL).
 */
int tfj_kube_delete(struct tfj_kube *k, const char *path, const char *uid,
		    const char *propagation);
/*
 * The same with gracePeriodSeconds grace_s (0: the object goes at once,
 * without waiting for the kubelet; a negative grace_s sends none: the
 * object's own).
 */
int tfj_kube_delete_grace(struct tfj_kube *k, const char *path, const char *uid,
			  const char *propagation, int grace_s);

/*
 * A streaming GET (watch). fn is called with every chunk of a 2xx body as it
 * arrives; a nonzero return from fn ends the stream and is returned. The
 * stream also ends when *cancel becomes nonzero (checked about once a
 * second; returns TFJ_ECANCELED), when the server closes it (returns 0) or
 * after max_s seconds (returns 0: a normal rollover). While a 2xx stream is
 * open, fn is also called with len 0 about once a second (its return value
 * ignored): a heartbeat that tells an established quiet watch from one still
 * connecting or gone.
 */
typedef int (*tfj_kube_stream_fn)(void *ud, const char *data, size_t len);
int tfj_kube_stream(struct tfj_kube *k, const char *path, tfj_kube_stream_fn fn, void *ud,
		    const _Atomic int *cancel, long max_s);

/*
 * Maps an HTTP status and the Status body's `reason` (may be NULL) to an
 * error code; 0 for 2xx. Pure; exposed for tests.
 */
int tfj_kube_map_status(long status, const char *reason);

/* Percent-encodes s for a URL query value into out. TFJ_ETOOBIG if it won't fit. */
int tfj_kube_escape(char *out, size_t outlen, const char *s);

/*
 * Leader fencing (leader.h): with a fence set, every request but a watch
 * is limited to end by *deadline_mono_ms (tfj_clock_mono_ns() / 1e6), and
 * once that has passed is not sent at all (TFJ_ECANCELED), so no request of
 * a leader outlives its lease. *deadline <= 0: no limit (not leading yet).
 * NULL removes the fence. The pointed-to value must outlive the client.
 */
void tfj_kube_set_fence(struct tfj_kube *k, const _Atomic int64_t *deadline_mono_ms);
/* Requests refused by the fence so far. */
uint64_t tfj_kube_fenced(const struct tfj_kube *k);
/*
 * Pure: the timeout of a request started at now_ms: timeout_ms, cut to end
 * at deadline_ms (> 0); 0 when the deadline has passed.
 */
long tfj_kube_fence_timeout(long timeout_ms, int64_t deadline_ms, int64_t now_ms);

const char *tfj_kube_verb_name(enum tfj_kube_verb verb);
/* Requests made with `verb` that ended with HTTP `code` (0: transport error). */
uint64_t tfj_kube_count(const struct tfj_kube *k, enum tfj_kube_verb verb, int code);
/* Appends Prometheus text for the request counters and latencies. */
int tfj_kube_metrics(const struct tfj_kube *k, struct tfj_buf *out);
/*
 * Appends only the request counter, as the family `name` (verb and code
 * labels) with its HELP text: for a second client of the process (the
 * Events' one) next to the main client's tfj_kube_metrics.
 */
int tfj_kube_requests_metric(const struct tfj_kube *k, struct tfj_buf *out, const char *name,
			     const char *help);

#endif
