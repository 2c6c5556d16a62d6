/*
 * issuer.c - the service-account issuer's name and keys, fetched through
 * discovery and held for verifying tokens (see issuer.h).
 */
#include "report/issuer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "report/jwks.h"
#include "report/jwtverify.h"

/* One fetched key set with its issuer; freed when the last holder lets go. */
struct snap {
	int refs;
	int64_t fetched_ms;
	char issuer[TFJ_ISSUER_NAME_MAX];
	struct tfj_jwks *keys;
};

struct tfj_issuer {
	struct tfj_kube *k;
	int64_t refetch_ms;
	pthread_mutex_t mu;
	struct snap *cur;        /* NULL until a fetch succeeded */
	int fetching;            /* a thread is fetching now */
	int last_failed;         /* the latest fetch failed */
	int64_t last_attempt_ms; /* INT64_MIN: never */
	uint64_t failures, oks;
};

int tfj_issuer_new(struct tfj_issuer **out, struct tfj_kube *k, int64_t refetch_ms)
{
	struct tfj_issuer *is;

	*out = NULL;
	if (!(is = calloc(1, sizeof(*is))))
		return tfj_err_set(TFJ_ENOMEM, "issuer");
	is->k = k;
	is->refetch_ms = refetch_ms > 0 ? refetch_ms : TFJ_ISSUER_REFETCH_MS;
	is->last_attempt_ms = INT64_MIN;
	pthread_mutex_init(&is->mu, NULL);
	*out = is;
	return 0;
}

static void snap_release(struct tfj_issuer *is, struct snap *s)
{
	int last;

	if (!s)
		return;
	pthread_mutex_lock(&is->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&is->mu);
	if (last) {
		tfj_jwks_free(s->keys);
		free(s);
	}
}

void tfj_issuer_free(struct tfj_issuer *is)
{
	if (!is)
		return;
	snap_release(is, is->cur);
	pthread_mutex_destroy(&is->mu);
	free(is);
}

int tfj_issuer_parse_discovery(char *out, size_t cap, const char *text, size_t len)
{
	cJSON *doc = NULL;
	const char *iss;
	size_t n;
	int rc;

	out[0] = '\0';
	if (len > TFJ_ISSUER_DOC_MAX)
		return tfj_err_set(TFJ_ETOOBIG, "issuer: discovery document too large");
	if ((rc = tfj_json_parse(&doc, text, len, TFJ_ISSUER_DOC_MAX)))
		return rc;
	if (!cJSON_IsObject(doc)) {
		rc = tfj_err_set(TFJ_ETYPE, "issuer: discovery document is not an object");
		goto out;
	}
	if ((rc = tfj_json_get_string(&iss, doc, "issuer")))
		goto out;
	if (!*iss || (n = strnlen(iss, cap)) >= cap) {
		rc = tfj_err_set(TFJ_ETOOBIG, "issuer: bad issuer length");
		goto out;
	}
	memcpy(out, iss, n + 1);
out:
	cJSON_Delete(doc);
	return rc;
}

/*
 * GET path (bounded) into b, asking for `accept`; b is initialised here and
 * freed by the caller.
 */
static int get_doc(struct tfj_issuer *is, struct tfj_buf *b, const char *path,
		   const char *accept)
{
	tfj_buf_init(b, TFJ_ISSUER_DOC_MAX);
	return tfj_kube_get_as(is->k, path, accept, b);
}

/* Discovery, then the keys: a new snapshot (one reference) in *out. */
static int fetch(struct tfj_issuer *is, struct snap **out, int64_t now_ms)
{
	struct tfj_buf b;
	struct snap *s;
	int rc;

	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return tfj_err_set(TFJ_ENOMEM, "issuer");
	if (!(rc = get_doc(is, &b, TFJ_ISSUER_DISCOVERY_PATH, "application/json")))
		rc = tfj_issuer_parse_discovery(s->issuer, sizeof(s->issuer), tfj_buf_cstr(&b),
						b.len);
	tfj_buf_free(&b);
	if (rc)
		goto out;
	if (!(rc = get_doc(is, &b, TFJ_ISSUER_JWKS_PATH, TFJ_ISSUER_JWKS_ACCEPT)))
		rc = tfj_jwks_parse(&s->keys, tfj_buf_cstr(&b), b.len);
	tfj_buf_free(&b);
	if (rc)
		goto out;
	s->refs = 1;
	s->fetched_ms = now_ms;
	*out = s;
	s = NULL;
out:
	free(s);
	return rc;
}

/*
 * Fetches when the bound allows and nobody else is fetching: 1 when a new
 * set replaced the old one, 0 otherwise (not allowed, or failed).
 */
static int maybe_fetch(struct tfj_issuer *is, int64_t now_ms)
{
	struct snap *s = NULL, *old = NULL;
	int rc;

	pthread_mutex_lock(&is->mu);
	if (is->fetching || (is->last_attempt_ms != INT64_MIN &&
			     now_ms - is->last_attempt_ms < is->refetch_ms)) {
		pthread_mutex_unlock(&is->mu);
		return 0;
	}
	is->fetching = 1;
	is->last_attempt_ms = now_ms;
	pthread_mutex_unlock(&is->mu);
	rc = fetch(is, &s, now_ms);
	pthread_mutex_lock(&is->mu);
	is->fetching = 0;
	/* Logged when the state changes, not at every attempt of a lasting failure. */
	if (rc && !is->last_failed)
		tfj_log_warn("report: service-account issuer discovery failed; agent tokens "
			     "fall back to TokenReview", "detail", tfj_err_detail());
	else if (!rc && (is->last_failed || !is->cur))
		tfj_log_info("report: verifying agent tokens with the issuer's keys", "issuer",
			     s->issuer);
	is->last_failed = rc != 0;
	if (rc) {
		is->failures++;
	} else {
		is->oks++;
		old = is->cur;
		is->cur = s;
	}
	pthread_mutex_unlock(&is->mu);
	snap_release(is, old);
	return rc == 0;
}

/* The current set with a reference taken (NULL when none), and whether it is old. */
static struct snap *acquire(struct tfj_issuer *is, int64_t now_ms, int *old)
{
	struct snap *s;

	pthread_mutex_lock(&is->mu);
	if ((s = is->cur))
		s->refs++;
	*old = !s || now_ms - s->fetched_ms >= TFJ_ISSUER_MAX_AGE_MS;
	pthread_mutex_unlock(&is->mu);
	return s;
}

int tfj_issuer_verify(struct tfj_issuer *is, enum tfj_jwt_reason *why,
		      struct tfj_jwtclaims *out, const char *token, const char *audience,
		      int64_t now_ms)
{
	struct snap *s;
	int old, failed, rc = 0;

	memset(out, 0, sizeof(*out));
	*why = TFJ_JWT_UNKNOWN_KEY;
	s = acquire(is, now_ms, &old);
	if (old && maybe_fetch(is, now_ms)) {
		snap_release(is, s);
		s = acquire(is, now_ms, &old);
	}
	if (!s)
		return tfj_err_set(TFJ_EUNAVAIL, "issuer: no keys (discovery unavailable)");
	*why = tfj_jwtverify_check(out, token, s->keys, s->issuer, audience, now_ms);
	/* A key the set lacks may be a new one: look again, within the bound. */
	if (*why == TFJ_JWT_UNKNOWN_KEY && maybe_fetch(is, now_ms)) {
		snap_release(is, s);
		s = acquire(is, now_ms, &old);
		*why = tfj_jwtverify_check(out, token, s->keys, s->issuer, audience, now_ms);
	}
	/* Keys may have rotated while discovery fails: no verdict then. */
	if (*why == TFJ_JWT_UNKNOWN_KEY) {
		pthread_mutex_lock(&is->mu);
		failed = is->last_failed;
		pthread_mutex_unlock(&is->mu);
		if (failed)
			rc = tfj_err_set(TFJ_EUNAVAIL, "issuer: unknown key and discovery failing");
	}
	snap_release(is, s);
	return rc;
}

void tfj_issuer_stats(struct tfj_issuer *is, uint64_t *fetches, uint64_t *failures,
		      size_t *keys)
{
	pthread_mutex_lock(&is->mu);
	/* Attempts still under way count as neither. */
	*fetches = is->oks + is->failures;
	*failures = is->failures;
	*keys = is->cur ? tfj_jwks_count(is->cur->keys) : 0;
	pthread_mutex_unlock(&is->mu);
}

int tfj_issuer_metrics(struct tfj_issuer *is, struct tfj_buf *out)
{
	uint64_t fetches, failures;
	size_t keys;

	if (!is)
		return 0;
	tfj_issuer_stats(is, &fetches, &failures, &keys);
	return tfj_buf_printf(out, "# HELP tfjob_report_issuer_fetches_total Fetches of the "
			      "service-account issuer's discovery document and keys, by result.\n"
			      "# TYPE tfjob_report_issuer_fetches_total counter\n"
			      "tfjob_report_issuer_fetches_total{result=\"ok\"} %llu\n"
			      "tfjob_report_issuer_fetches_total{result=\"error\"} %llu\n"
			      "# HELP tfjob_report_issuer_keys Keys held for verifying agent "
			      "tokens locally.\n"
			      "# TYPE tfjob_report_issuer_keys gauge\n"
			      "tfjob_report_issuer_keys %zu\n",
			      (unsigned long long)(fetches - failures),
			      (unsigned long long)failures, keys) ? TFJ_ENOMEM : 0;
}
