/*
 * jobstatus.c - the TFJob status model and its JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "tfjob/jobstatus.h"
#include "tfjob/progstatus.h"

static const char *const cond_names[TFJ_COND_COUNT] = {
	"Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed", "ReplicaFailure",
	"NetworkPolicyFailure"
};

/* Spec keys of the replica types, in enum tfj_rtype order (see tfjob.h). */
static const char *const type_keys[TFJ_JOBSTATUS_TYPES] = {
	"Chief", "Master", "PS", "Worker", "Evaluator"
};

const char *tfj_jobstatus_cond_name(enum tfj_cond c)
{
	return (c >= 0 && c < TFJ_COND_COUNT) ? cond_names[c] : "";
}

/* ---- time ---------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp, yy;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	yy = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yy + (*m <= 2));
}

static int digits(const char *s, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int tfj_jobstatus_parse_time(int64_t *out, const char *s)
{
	int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
	const char *p;

	if (!s || strlen(s) < 20 || strlen(s) > 40)
		return tfj_err_set(TFJ_EPARSE, "timestamp '%.40s': expected RFC 3339", s ? s : "");
	if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
	    digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
	    s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &se))
		return tfj_err_set(TFJ_EPARSE, "timestamp '%.40s': expected RFC 3339", s);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return tfj_err_set(TFJ_ERANGE, "timestamp '%.40s': field out of range", s);
	p = s + 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return tfj_err_set(TFJ_EPARSE, "timestamp '%.40s': empty fraction", s);
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		sign = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && !digits(p + 1, 2, &oh) &&
		   p[3] == ':' && !digits(p + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = *p == '+' ? 1 : -1;
	} else {
		return tfj_err_set(TFJ_EPARSE, "timestamp '%.40s': bad zone", s);
	}
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
	       sign * (oh * 3600 + om * 60);
	return 0;
}

int tfj_jobstatus_format_time(char *out, size_t outlen, int64_t t)
{
	int y, m, d, n;
	int64_t days = t / 86400, rem = t % 86400;

	if (rem < 0) {
		rem += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)
		return tfj_err_set(TFJ_ERANGE, "time %lld outside years 0-9999", (long long)t);
	n = snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, (int)(rem / 3600),
		     (int)(rem % 3600 / 60), (int)(rem % 60));
	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ERANGE, "time buffer too small");
	return 0;
}

/* ---- completed indexes --------------------------------------------- */

int tfj_jobstatus_completed(const struct tfj_replica_status *rs, int index)
{
	if (index < 0 || index >= TFJ_JOBSTATUS_MAX_INDEX)
		return 0;
	return (rs->completed[index / 8] >> (index % 8)) & 1;
}

void tfj_jobstatus_mark_completed(struct tfj_replica_status *rs, int index)
{
	if (index < 0 || index >= TFJ_JOBSTATUS_MAX_INDEX)
		return;
	if (!tfj_jobstatus_completed(rs, index)) {
		rs->completed[index / 8] |= (unsigned char)(1u << (index % 8));
		rs->succeeded++;
	}
}

static int parse_index(const char **p, int limit, int *out)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return tfj_err_set(TFJ_EPARSE, "completedIndexes: expected a number");
	v = strtol(*p, &end, 10);
	if (v < 0 || v >= limit)
		return tfj_err_set(TFJ_ERANGE, "completedIndexes: index %ld out of range", v);
	*p = end;
	*out = (int)v;
	return 0;
}

int tfj_jobstatus_parse_indexes(struct tfj_replica_status *rs, const char *s, int limit)
{
	const char *p = s;
	int a = 0, b, i, rc;

	if (limit > TFJ_JOBSTATUS_MAX_INDEX)
		limit = TFJ_JOBSTATUS_MAX_INDEX;
	memset(rs->completed, 0, sizeof(rs->completed));
	rs->succeeded = 0;
	if (strlen(s) > 8 * (size_t)TFJ_JOBSTATUS_MAX_INDEX)
		return tfj_err_set(TFJ_ETOOBIG, "completedIndexes: too long");
	while (*p) {
		if ((rc = parse_index(&p, limit, &a)))
			return rc;
		b = a;
		if (*p == '-') {
			p++;
			if ((rc = parse_index(&p, limit, &b)))
				return rc;
			if (b < a)
				return tfj_err_set(TFJ_EPARSE, "completedIndexes: range %d-%d", a, b);
		}
		for (i = a; i <= b; i++)
			tfj_jobstatus_mark_completed(rs, i);
		if (*p == ',')
			p++;
		else if (*p)
			return tfj_err_set(TFJ_EPARSE, "completedIndexes: unexpected '%c'", *p);
	}
	return 0;
}

int tfj_jobstatus_format_indexes(char **out, const struct tfj_replica_status *rs)
{
	struct tfj_buf b = TFJ_BUF_INIT(64 * 1024);
	int i = 0, j, rc = 0;

	*out = NULL;
	while (i < TFJ_JOBSTATUS_MAX_INDEX) {
		if (!tfj_jobstatus_completed(rs, i)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < TFJ_JOBSTATUS_MAX_INDEX && tfj_jobstatus_completed(rs, j + 1); j++)
			;
		if (b.len && (rc = tfj_buf_putc(&b, ',')))
			goto out;
		rc = j == i ? tfj_buf_printf(&b, "%d", i) : tfj_buf_printf(&b, "%d-%d", i, j);
		if (rc)
			goto out;
		i = j + 1;
	}
	*out = tfj_buf_detach(&b);
	if (!*out)
		rc = tfj_err_set(TFJ_ENOMEM, "completedIndexes");
out:
	tfj_buf_free(&b);
	return rc;
}

/* ---- conditions ---------------------------------------------------- */

int tfj_jobstatus_is(const struct tfj_job_status *st, enum tfj_cond c)
{
	return st->cond[c].present && st->cond[c].status;
}

int tfj_jobstatus_finished(const struct tfj_job_status *st)
{
	return tfj_jobstatus_is(st, TFJ_COND_SUCCEEDED) || tfj_jobstatus_is(st, TFJ_COND_FAILED);
}

static void set_one(struct tfj_condition *c, int status, const char *reason, const char *msg,
		    int64_t now)
{
	int changed_status = !c->present || c->status != status;

	if (!changed_status && !strcmp(c->reason, reason) && !strcmp(c->message, msg))
		return;
	c->present = 1;
	c->status = status;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	snprintf(c->message, sizeof(c->message), "%s", msg);
	c->last_update = now;
	if (changed_status)
		c->last_transition = now;
}

/* Turns a True condition False, keeping its reason; absent stays absent. */
static void clear_one(struct tfj_condition *c, int64_t now)
{
	if (c->present && c->status) {
		c->status = 0;
		c->last_update = now;
		c->last_transition = now;
	}
}

int tfj_jobstatus_set(struct tfj_job_status *st, enum tfj_cond c, int status,
		      const char *reason, const char *message, int64_t now)
{
	if (c < 0 || c >= TFJ_COND_COUNT || !reason || !message)
		return tfj_err_set(TFJ_EINVAL, "bad condition");
	if (status && ((c == TFJ_COND_SUCCEEDED && tfj_jobstatus_is(st, TFJ_COND_FAILED)) ||
		       (c == TFJ_COND_FAILED && tfj_jobstatus_is(st, TFJ_COND_SUCCEEDED))))
		return tfj_err_set(TFJ_ESTATE, "job already finished; cannot set %s",
				   cond_names[c]);
	if (status) {
		if (c == TFJ_COND_RUNNING)
			clear_one(&st->cond[TFJ_COND_RESTARTING], now);
		if (c == TFJ_COND_RESTARTING)
			clear_one(&st->cond[TFJ_COND_RUNNING], now);
		if (c == TFJ_COND_SUCCEEDED || c == TFJ_COND_FAILED) {
			clear_one(&st->cond[TFJ_COND_RUNNING], now);
			clear_one(&st->cond[TFJ_COND_RESTARTING], now);
		}
	}
	set_one(&st->cond[c], status ? 1 : 0, reason, message, now);
	return 0;
}

void tfj_jobstatus_remove(struct tfj_job_status *st, enum tfj_cond c)
{
	if (c >= 0 && c < TFJ_COND_COUNT)
		memset(&st->cond[c], 0, sizeof(st->cond[c]));
}

const char *tfj_jobstatus_phase(const struct tfj_job_status *st)
{
	static const enum tfj_cond prio[] = { TFJ_COND_FAILED, TFJ_COND_SUCCEEDED,
					      TFJ_COND_SUSPENDED, TFJ_COND_RESTARTING,
					      TFJ_COND_RUNNING, TFJ_COND_CREATED };
	size_t i;

	for (i = 0; i < sizeof(prio) / sizeof(prio[0]); i++)
		if (tfj_jobstatus_is(st, prio[i]))
			return cond_names[prio[i]];
	return "";
}

/* ---- decode -------------------------------------------------------- */

int tfj_jobstatus_get_time(int64_t *out, const cJSON *obj, const char *key)
{
	const char *s;
	int rc = tfj_json_opt_string(&s, obj, key, NULL);

	*out = 0;
	if (rc || !s)
		return rc;
	return tfj_jobstatus_parse_time(out, s);
}

static int decode_condition(struct tfj_job_status *st, const cJSON *it)
{
	const char *type, *status, *reason, *msg;
	struct tfj_condition *c;
	int i, rc;

	if ((rc = tfj_json_get_string(&type, it, "type")) ||
	    (rc = tfj_json_get_string(&status, it, "status")) ||
	    (rc = tfj_json_opt_string(&reason, it, "reason", "")) ||
	    (rc = tfj_json_opt_string(&msg, it, "message", "")))
		return rc;
	for (i = 0; i < TFJ_COND_COUNT; i++)
		if (!strcmp(type, cond_names[i]))
			break;
	if (i == TFJ_COND_COUNT)
		return 0; /* a condition someone else added: not ours to keep */
	c = &st->cond[i];
	c->present = 1;
	c->status = !strcmp(status, "True");
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	snprintf(c->message, sizeof(c->message), "%s", msg);
	if ((rc = tfj_jobstatus_get_time(&c->last_update, it, "lastUpdateTime")) ||
	    (rc = tfj_jobstatus_get_time(&c->last_transition, it, "lastTransitionTime")))
		return rc;
	return 0;
}

static int decode_replica(struct tfj_replica_status *rs, const cJSON *it)
{
	const char *idx;
	int rc;

	rs->present = 1;
	if ((rc = tfj_json_opt_int(&rs->active, it, "active", 0, 1 << 20, 0)) ||
	    (rc = tfj_json_opt_int(&rs->failed, it, "failed", 0, 1 << 20, 0)) ||
	    (rc = tfj_json_opt_int64(&rs->restarts, it, "restarts", 0, TFJ_JSON_INT_MAX, 0)) ||
	    (rc = tfj_json_opt_string(&idx, it, "completedIndexes", "")) ||
	    (rc = tfj_jobstatus_parse_indexes(rs, idx, TFJ_JOBSTATUS_MAX_INDEX)))
		return rc;
	return 0;
}

static int decode_all(struct tfj_job_status *out, const cJSON *status)
{
	const cJSON *conds = NULL, *rss = NULL, *it;
	int rc, i, n = 0;

	if (!cJSON_IsObject(status))
		return tfj_err_set(TFJ_ETYPE, "status: expected an object");
	if (cJSON_HasObjectItem(status, "conditions") &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(status, "conditions"))) {
		if ((rc = tfj_json_get_array(&conds, status, "conditions")))
			return rc;
		cJSON_ArrayForEach(it, conds) {
			if (++n > 64)
				return tfj_err_set(TFJ_ETOOBIG, "status.conditions: more than 64");
			if ((rc = decode_condition(out, it)))
				return rc;
		}
	}
	if (cJSON_HasObjectItem(status, "replicaStatuses") &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(status, "replicaStatuses"))) {
		if ((rc = tfj_json_get_object(&rss, status, "replicaStatuses")))
			return rc;
		for (i = 0; i < TFJ_JOBSTATUS_TYPES; i++) {
			it = cJSON_GetObjectItemCaseSensitive(rss, type_keys[i]);
			if (it && !cJSON_IsObject(it))
				return tfj_err_set(TFJ_ETYPE, "replicaStatuses.%s: expected an object",
						   type_keys[i]);
			if (it && (rc = decode_replica(&out->rs[i], it)))
				return rc;
		}
	}
	if ((rc = tfj_jobstatus_get_time(&out->start_time, status, "startTime")) ||
	    (rc = tfj_jobstatus_get_time(&out->completion_time, status, "completionTime")) ||
	    (rc = tfj_json_opt_int64(&out->observed_generation, status, "observedGeneration", 0,
				     TFJ_JSON_INT_MAX, 0)) ||
	    (rc = tfj_progstatus_decode(&out->progress, status)))
		return rc;
	return 0;
}

int tfj_jobstatus_decode(struct tfj_job_status *out, const cJSON *status)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!status || cJSON_IsNull(status))
		return 0;
	rc = decode_all(out, status);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ---- encode -------------------------------------------------------- */

int tfj_jobstatus_put_time(cJSON *obj, const char *key, int64_t t)
{
	char buf[32];
	int rc;

	if (!t)
		return 0;
	if ((rc = tfj_jobstatus_format_time(buf, sizeof(buf), t)))
		return rc;
	return cJSON_AddStringToObject(obj, key, buf) ? 0 : TFJ_ENOMEM;
}

static int encode_condition(cJSON *arr, const struct tfj_condition *c, const char *type)
{
	cJSON *o = cJSON_CreateObject();
	int rc = TFJ_ENOMEM;

	if (!o)
		return TFJ_ENOMEM;
	cJSON_AddItemToArray(arr, o);
	if (!cJSON_AddStringToObject(o, "type", type) ||
	    !cJSON_AddStringToObject(o, "status", c->status ? "True" : "False") ||
	    !cJSON_AddStringToObject(o, "reason", c->reason) ||
	    !cJSON_AddStringToObject(o, "message", c->message))
		return rc;
	if ((rc = tfj_jobstatus_put_time(o, "lastUpdateTime", c->last_update)) ||
	    (rc = tfj_jobstatus_put_time(o, "lastTransitionTime", c->last_transition)))
		return rc;
	return 0;
}

static int encode_replica(cJSON *rss, const struct tfj_replica_status *rs, const char *key)
{
	cJSON *o = cJSON_AddObjectToObject(rss, key);
	char *idx = NULL;
	int rc;

	if (!o)
		return TFJ_ENOMEM;
	if (!cJSON_AddNumberToObject(o, "active", rs->active) ||
	    !cJSON_AddNumberToObject(o, "succeeded", rs->succeeded) ||
	    !cJSON_AddNumberToObject(o, "failed", rs->failed) ||
	    !cJSON_AddNumberToObject(o, "restarts", (double)rs->restarts))
		return TFJ_ENOMEM;
	if ((rc = tfj_jobstatus_format_indexes(&idx, rs)))
		return rc;
	if (*idx && !cJSON_AddStringToObject(o, "completedIndexes", idx))
		rc = TFJ_ENOMEM;
	free(idx);
	return rc;
}

/* "chief 1/1 ps 2/2 worker 3/4": pods running or done over replicas wanted. */
static int encode_summary(cJSON *o, const struct tfj_job_status *st)
{
	static const char *const lower[TFJ_JOBSTATUS_TYPES] = { "chief", "master", "ps", "worker",
								 "evaluator" };
	char buf[256];
	size_t len = 0;
	int i, n;

	buf[0] = '\0';
	for (i = 0; i < TFJ_JOBSTATUS_TYPES; i++) {
		const struct tfj_replica_status *rs = &st->rs[i];

		if (!rs->present || rs->expected <= 0)
			continue;
		n = snprintf(buf + len, sizeof(buf) - len, "%s%s %d/%d", len ? " " : "", lower[i],
			     rs->active + rs->succeeded, rs->expected);
		if (n < 0 || (size_t)n >= sizeof(buf) - len)
			break;
		len += (size_t)n;
	}
	if (len && !cJSON_AddStringToObject(o, "replicaSummary", buf))
		return TFJ_ENOMEM;
	return 0;
}

static int encode_all(cJSON *o, const struct tfj_job_status *st)
{
	cJSON *conds, *rss;
	int i, rc;

	if (!(conds = cJSON_AddArrayToObject(o, "conditions")))
		return TFJ_ENOMEM;
	for (i = 0; i < TFJ_COND_COUNT; i++)
		if (st->cond[i].present && (rc = encode_condition(conds, &st->cond[i], cond_names[i])))
			return rc;
	if (!(rss = cJSON_AddObjectToObject(o, "replicaStatuses")))
		return TFJ_ENOMEM;
	for (i = 0; i < TFJ_JOBSTATUS_TYPES; i++)
		if (st->rs[i].present && (rc = encode_replica(rss, &st->rs[i], type_keys[i])))
			return rc;
	if ((rc = tfj_jobstatus_put_time(o, "startTime", st->start_time)) ||
	    (rc = tfj_jobstatus_put_time(o, "completionTime", st->completion_time)))
		return rc;
	if (*tfj_jobstatus_phase(st) &&
	    !cJSON_AddStringToObject(o, "phase", tfj_jobstatus_phase(st)))
		return TFJ_ENOMEM;
	if ((rc = encode_summary(o, st)))
		return rc;
	if (st->observed_generation &&
	    !cJSON_AddNumberToObject(o, "observedGeneration", (double)st->observed_generation))
		return TFJ_ENOMEM;
	if (st->ps_secret[0] && !cJSON_AddStringToObject(o, "psSecretName", st->ps_secret))
		return TFJ_ENOMEM;
	return tfj_progstatus_encode(o, &st->progress);
}

int tfj_jobstatus_encode(cJSON **out, const struct tfj_job_status *st)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	*out = NULL;
	if (!o)
		return tfj_err_set(TFJ_ENOMEM, "encoding status");
	rc = encode_all(o, st);
	if (rc) {
		cJSON_Delete(o);
		return rc == TFJ_ENOMEM ? tfj_err_set(TFJ_ENOMEM, "encoding status") : rc;
	}
	*out = o;
	return 0;
}
