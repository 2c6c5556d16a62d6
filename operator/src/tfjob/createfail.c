/*
 * createfail.c - permanent create failures: counting, backoff, condition.
 */
#include "tfjob/createfail.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>

int tfj_createfail_permanent(int rc)
{
	/* kube.h's mapping: 403 forbidden, 400/422 invalid, 404 not found; a
	 * 409 only arrives here once adopt.h has found the name taken. */
	return rc == TFJ_EFORBIDDEN || rc == TFJ_EINVAL || rc == TFJ_ENOTFOUND ||
	       rc == TFJ_EEXIST;
}

int64_t tfj_createfail_delay_ms(int n)
{
	int64_t d = TFJ_CREATEFAIL_BASE_MS;

	for (int i = 1; i < n && d < TFJ_CREATEFAIL_MAX_MS; i++)
		d *= 2;
	return d < TFJ_CREATEFAIL_MAX_MS ? d : TFJ_CREATEFAIL_MAX_MS;
}

void tfj_createfail_fail(struct tfj_createfail *cf, const char *reason, const char *message,
			 int64_t now_ms)
{
	if (cf->failures < 1000000)
		cf->failures++;
	cf->retry_at_ms = now_ms + tfj_createfail_delay_ms(cf->failures);
	snprintf(cf->reason, sizeof(cf->reason), "%s", reason ? reason : "FailedCreate");
	snprintf(cf->message, sizeof(cf->message), "%s", message ? message : "");
}

void tfj_createfail_ok(struct tfj_createfail *cf)
{
	cf->failures = 0;
	cf->retry_at_ms = 0;
}

void tfj_createfail_netpol(struct tfj_createfail *cf, const char *reason, const char *message)
{
	cf->netpol_failed = reason != NULL;
	snprintf(cf->netpol_reason, sizeof(cf->netpol_reason), "%s", reason ? reason : "");
	snprintf(cf->netpol_message, sizeof(cf->netpol_message), "%s",
		 reason && message ? message : "");
}

void tfj_createfail_podgroup(struct tfj_createfail *cf, int unavailable, int64_t now_ms)
{
	cf->podgroup_unavailable = unavailable;
	cf->podgroup_retry_at_ms = unavailable ? now_ms + TFJ_CREATEFAIL_PODGROUP_MS : 0;
}

int64_t tfj_createfail_wait_ms(const struct tfj_createfail *cf, int64_t now_ms)
{
	if (!cf || cf->failures == 0 || now_ms >= cf->retry_at_ms)
		return 0;
	return cf->retry_at_ms - now_ms;
}

int tfj_createfail_condition(struct tfj_job_status *st, const struct tfj_createfail *cf,
			     int64_t now)
{
	if (!cf)
		return 0;
	if (cf->failures == 0) {
		tfj_jobstatus_remove(st, TFJ_COND_REPLICA_FAILURE);
		return 0;
	}
	if (cf->failures < TFJ_CREATEFAIL_VISIBLE_AFTER)
		return 0;
	return tfj_jobstatus_set(st, TFJ_COND_REPLICA_FAILURE, 1, cf->reason, cf->message, now);
}
