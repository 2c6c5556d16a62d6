/*
 * progstatus.c - status.progress as JSON (see progstatus.h).
 */
#include "tfjob/progstatus.h"

#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

static int opt_num(int *has, double *out, const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	*has = 0;
	if (!it || cJSON_IsNull(it))
		return 0;
	*has = 1;
	return tfj_json_get_number(out, obj, key);
}


/* The names of the metrics derived from the typed fields, in that order. */
static const char *const derived[] = { "loss", "accuracy", "examples_per_second" };

/* One {name, value} entry of status.progress.metrics (KEP-2779's shape). */
static int add_metric(cJSON *arr, const char *name, const char *value)
{
	cJSON *m = cJSON_CreateObject();

	if (!m)
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(arr, m);
	return cJSON_AddStringToObject(m, "name", name) && cJSON_AddStringToObject(m, "value", value)
		       ? 0
		       : TFJ_ENOMEM;
}

/*
 * The latest named metrics as KEP-2779's list of name/value strings, for
 * tools written against Trainer v2's status: the three typed fields above
 * (derived, so never decoded), then the trainer's other named metrics
 * (p->metric) whose names are not those three.
 */
static int encode_metrics(cJSON *po, const struct tfj_progress_status *p)
{
	const int has[] = { p->has_loss, p->has_accuracy, p->has_eps };
	const double val[] = { p->loss, p->accuracy, p->eps };
	char buf[32];
	cJSON *arr;
	unsigned i;

	if (!p->has_loss && !p->has_accuracy && !p->has_eps && !p->nmetric)
		return 0;
	if (!(arr = cJSON_AddArrayToObject(po, "metrics")))
		return TFJ_ENOMEM;
	for (i = 0; i < sizeof(derived) / sizeof(derived[0]); i++) {
		if (!has[i])
			continue;
		(void)snprintf(buf, sizeof(buf), "%.6g", val[i]);
		if (add_metric(arr, derived[i], buf))
			return TFJ_ENOMEM;
	}
	for (i = 0; i < p->nmetric && i < TFJ_PROGREC_METRICS_MAX; i++)
		if (add_metric(arr, p->metric[i].name, p->metric[i].value))
			return TFJ_ENOMEM;
	return 0;
}

int tfj_progstatus_derived(const char *name)
{
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (!strcmp(name, derived[i]))
			return 1;
	return 0;
}

/*
 * The trainer's named metrics back from status.progress.metrics: the
 * entries encode_metrics did not derive, at most TFJ_PROGREC_METRICS_MAX;
 * names or values too long for the struct are skipped.
 */
static int decode_metrics(struct tfj_progress_status *p, const cJSON *o)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "metrics"), *it;
	const char *name, *value;
	int rc;

	p->nmetric = 0;
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return tfj_err_set(TFJ_ETYPE, "status.progress.metrics: expected an array");
	cJSON_ArrayForEach(it, arr) {
		if ((rc = tfj_json_get_string(&name, it, "name")) ||
		    (rc = tfj_json_get_string(&value, it, "value")))
			return rc;
		if (tfj_progstatus_derived(name) || p->nmetric >= TFJ_PROGREC_METRICS_MAX ||
		    strlen(name) >= sizeof(p->metric[0].name) ||
		    strlen(value) >= sizeof(p->metric[0].value))
			continue;
		memcpy(p->metric[p->nmetric].name, name, strlen(name) + 1);
		memcpy(p->metric[p->nmetric].value, value, strlen(value) + 1);
		p->nmetric++;
	}
	return 0;
}

int tfj_progstatus_decode(struct tfj_progress_status *p, const cJSON *status)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(status, "progress");
	const char *done = "";
	int rc;

	if (!o || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o))
		return tfj_err_set(TFJ_ETYPE, "status.progress: expected an object");
	p->present = 1;
	p->has_step = cJSON_GetObjectItemCaseSensitive(o, "globalStep") != NULL;
	p->has_total = cJSON_GetObjectItemCaseSensitive(o, "totalSteps") != NULL;
	p->has_pct = cJSON_GetObjectItemCaseSensitive(o, "progressPercentage") != NULL;
	p->has_eta = cJSON_GetObjectItemCaseSensitive(o, "estimatedRemainingSeconds") != NULL;
	if ((p->has_step &&
	     (rc = tfj_json_get_int64(&p->step, o, "globalStep", 0, TFJ_JSON_INT_MAX))) ||
	    (p->has_total &&
	     (rc = tfj_json_get_int64(&p->total, o, "totalSteps", 1, TFJ_JSON_INT_MAX))) ||
	    (p->has_pct &&
	     (rc = tfj_json_get_int(&p->pct, o, "progressPercentage", 0, 100))) ||
	    (p->has_eta && (rc = tfj_json_get_int64(&p->eta, o, "estimatedRemainingSeconds", 0,
						     TFJ_JSON_INT_MAX))) ||
	    (rc = opt_num(&p->has_loss, &p->loss, o, "loss")) ||
	    (rc = opt_num(&p->has_accuracy, &p->accuracy, o, "accuracy")) ||
	    (rc = opt_num(&p->has_eps, &p->eps, o, "examplesPerSecond")) ||
	    (rc = tfj_jobstatus_get_time(&p->last_report, o, "lastReportTime")) ||
	    (rc = tfj_json_opt_string(&done, o, "trainingDonePodUID", "")) ||
	    (rc = decode_metrics(p, o)))
		return rc;
	if (strlen(done) >= sizeof(p->done_pod))
		return tfj_err_set(TFJ_ERANGE, "status.progress.trainingDonePodUID: too long");
	memcpy(p->done_pod, done, strlen(done) + 1);
	return 0;
}

int tfj_progstatus_encode(cJSON *o, const struct tfj_progress_status *p)
{
	cJSON *po;
	int rc;

	if (!p->present)
		return 0;
	if (!(po = cJSON_AddObjectToObject(o, "progress")) ||
	    (p->has_step && !cJSON_AddNumberToObject(po, "globalStep", (double)p->step)) ||
	    (p->has_total && !cJSON_AddNumberToObject(po, "totalSteps", (double)p->total)) ||
	    (p->has_pct && !cJSON_AddNumberToObject(po, "progressPercentage", p->pct)) ||
	    (p->has_eta &&
	     !cJSON_AddNumberToObject(po, "estimatedRemainingSeconds", (double)p->eta)) ||
	    (p->has_loss && !cJSON_AddNumberToObject(po, "loss", p->loss)) ||
	    (p->has_accuracy && !cJSON_AddNumberToObject(po, "accuracy", p->accuracy)) ||
	    (p->has_eps && !cJSON_AddNumberToObject(po, "examplesPerSecond", p->eps)) ||
	    (p->done_pod[0] && !cJSON_AddStringToObject(po, "trainingDonePodUID", p->done_pod)))
		return TFJ_ENOMEM;
	if ((rc = encode_metrics(po, p)) || (rc = tfj_jobstatus_put_time(po, "lastReportTime", p->last_report)))
		return rc;
	return tfj_jobstatus_put_time(po, "lastUpdatedTime", p->last_report);
}
