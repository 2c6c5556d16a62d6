/*
 * test_jobpeek.c - a cached TFJob's uid, status and replica types from its
 * text (app/jobpeek.h): the uid and status as the whole tree gives them,
 * and the brief decode against the full one on random jobs, valid and not
 * (the replica fields, the status and stoprule.h's answers must agree),
 * an oversize spec or its mark failing both, without carrying the
 * templates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "app/jobpeek.h"
#include "tfj_test.h"
#include "tfjob/stoprule.h"

#define SUCCEEDED "{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"}]}"
#define FAILED "{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}"

static const char *const JOB =
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"metadata\":{\"name\":\"mnist\",\"namespace\":\"ml\",\"uid\":\"u-1\","
	"\"annotations\":{\"status\":\"not this one\"}},"
	"\"spec\":{\"tfReplicaSpecs\":{\"Worker\":{\"replicas\":2,\"template\":{\"spec\":"
	"{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}}}},"
	"\"status\":" SUCCEEDED "}";

static void test_uid_status(void)
{
	struct tfj_job_status st;
	char uid[64];

	TFJ_CHECK_OK(tfj_jobpeek_uid(uid, sizeof(uid), JOB, strlen(JOB)));
	TFJ_CHECK_STR(uid, "u-1");
	TFJ_CHECK_INT(tfj_jobpeek_uid(uid, 3, JOB, strlen(JOB)), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_jobpeek_uid(uid, sizeof(uid), "{\"metadata\":{}}", 15), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_jobpeek_uid(uid, sizeof(uid), "{\"metadata\":{\"uid\":5}}", 22),
		      TFJ_ETYPE);
	TFJ_CHECK_OK(tfj_jobpeek_status(&st, JOB, strlen(JOB)));
	TFJ_CHECK_INT(tfj_jobstatus_is(&st, TFJ_COND_SUCCEEDED), 1);
	/* No status, or null: an empty one, as tfj_jobstatus_decode(NULL). */
	TFJ_CHECK_OK(tfj_jobpeek_status(&st, "{\"spec\":{}}", 11));
	TFJ_CHECK_INT(tfj_jobstatus_finished(&st), 0);
	TFJ_CHECK_OK(tfj_jobpeek_status(&st, "{\"status\":null}", 15));
	TFJ_CHECK_INT(tfj_jobstatus_finished(&st), 0);
	/* A malformed status is an error, and leaves it empty. */
	TFJ_CHECK_NE(tfj_jobpeek_status(&st, "{\"status\":{\"conditions\":5}}", 27), 0);
	TFJ_CHECK_INT(tfj_jobstatus_finished(&st), 0);
	TFJ_CHECK_NE(tfj_jobpeek_status(&st, "[1]", 3), 0);
}

/* ---- the brief decode against the full one ---- */

static const char *pick(const char *const *v, size_t n)
{
	return v[tfj_test_rand() % n];
}
#define PICK(v) pick(v, sizeof(v) / sizeof(v[0]))

static const char *const type_keys[] = { "Chief", "Master", "PS", "Worker", "Evaluator",
					 "worker", "chief", "Foo", "Worker" };
static const char *const replicas_v[] = { NULL, "0", "1", "1", "2", "3", "-1", "5000",
					  "\"2\"", "null", "1.5" };
static const char *const restart_v[] = { NULL, NULL, "\"\"", "\"Never\"", "\"OnFailure\"",
					 "\"Always\"", "\"ExitCode\"", "\"Bogus\"", "5" };
static const char *const container_v[] = {
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"env\":[{\"name\":\"A\",\"value\":\"B\"}]}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"command\":[\"python\",\"x.py\"]}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"command\":[]}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"command\":\"python\"}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"command\":null}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"ports\":[{\"name\":\"tfjob-port\","
	"\"containerPort\":2223}]}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"ports\":[{\"name\":\"tfjob-port\","
	"\"containerPort\":70000}]}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"ports\":null}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"ports\":{}}",
	"{\"name\":\"tensorflow\",\"image\":\"\",\"image\":\"i\"}",
	"{\"name\":\"tensorflow\",\"image\":\"i\",\"image\":\"\"}",
	"{\"name\":\"tensorflow\"}",
	"{\"image\":\"i\"}",
	"{\"name\":5,\"image\":\"i\"}",
	"{\"name\":\"sidecar\",\"image\":\"i\"}",
	"5",
	"[]",
};
static const char *const status_v[] = { NULL, "null", SUCCEEDED, FAILED,
	"{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"},"
	"{\"type\":\"Failed\",\"status\":\"True\"}]}",
	"{\"conditions\":5}", "\"garbage\"", "{}" };

/* What a valid job draws from (the first entries of the lists above). */
static const char *const good_types[] = { "Chief", "PS", "Worker", "Evaluator" };
static const char *const good_replicas[] = { "1", "1", "0" };
#define GOOD_RESTARTS 7   /* restart_v[0..6] */
#define GOOD_CONTAINERS 8 /* container_v[0..7] */

/* A template: usually a good one, sometimes each way of being wrong. */
static int put_template(struct tfj_buf *b, int good)
{
	int rc = 0, n, i;

	if (good) {
		return tfj_buf_printf(b, "{\"spec\":{\"containers\":[%s]}}",
				      container_v[tfj_test_rand() % GOOD_CONTAINERS]);
	}
	switch (tfj_test_rand() % 10) {
	case 0:
		return tfj_buf_puts(b, "7");
	case 1:
		return tfj_buf_puts(b, "{}");
	case 2:
		return tfj_buf_puts(b, "{\"spec\":3}");
	case 3:
		return tfj_buf_puts(b, "{\"spec\":{\"containers\":{}}}");
	default:
		break;
	}
	rc |= tfj_buf_puts(b, "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{"
			   "\"volumes\":[],\"containers\":[");
	n = (int)(tfj_test_rand() % 3);
	for (i = 0; i < n; i++)
		rc |= tfj_buf_printf(b, "%s%s", i ? "," : "", PICK(container_v));
	return rc | tfj_buf_puts(b, "]}}");
}

/*
 * A random TFJob's text: replica types in random order, each field maybe
 * wrong; half of them valid (types once each, good values), so both kinds
 * are drawn often.
 */
static int random_job(struct tfj_buf *b)
{
	const char *st = PICK(status_v), *rep, *rst;
	int rc = 0, n = 1 + (int)(tfj_test_rand() % 4), i, k, good = tfj_test_rand() % 2;
	int first = (int)(tfj_test_rand() % 4);

	rc |= tfj_buf_printf(b, "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
			     "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-1\","
			     "\"resourceVersion\":\"7\",\"generation\":2},"
			     "\"spec\":{\"tfReplicaSpecs\":{",
			     good || tfj_test_rand() % 20 ? "mnist"
				  : "a-name-of-sixty-four-characters-which-is-one-too-many-for-a-label");
	for (i = 0; i < n; i++) {
		rc |= tfj_buf_printf(b, "%s\"%s\":", i ? "," : "",
				     good ? good_types[(first + i) % 4] : PICK(type_keys));
		if (!good && tfj_test_rand() % 15 == 0) {
			rc |= tfj_buf_puts(b, "[]");
			continue;
		}
		rc |= tfj_buf_putc(b, '{');
		k = 0;
		if ((rep = good ? PICK(good_replicas) : PICK(replicas_v)))
			rc |= tfj_buf_printf(b, "%s\"replicas\":%s", k++ ? "," : "", rep);
		if ((rst = good ? restart_v[tfj_test_rand() % GOOD_RESTARTS] : PICK(restart_v)))
			rc |= tfj_buf_printf(b, "%s\"restartPolicy\":%s", k++ ? "," : "", rst);
		if (good || tfj_test_rand() % 12) {
			rc |= tfj_buf_printf(b, "%s\"template\":", k++ ? "," : "");
			rc |= put_template(b, good);
		}
		rc |= tfj_buf_putc(b, '}');
	}
	rc |= tfj_buf_puts(b, "}}");
	if (st)
		rc |= tfj_buf_printf(b, ",\"status\":%s", st);
	return rc | tfj_buf_putc(b, '}');
}

/* "" when the brief decode agrees with the full one, else what differs. */
static const char *differs(const struct tfj_tfjob *a, const struct tfj_tfjob *b)
{
	int t;

	if (strcmp(a->uid, b->uid) || strcmp(a->name, b->name) || strcmp(a->ns, b->ns))
		return "metadata";
	if (a->spec_valid != b->spec_valid)
		return "spec_valid";
	if (a->total_replicas != b->total_replicas)
		return "total_replicas";
	for (t = 0; t < TFJ_RT_COUNT; t++)
		if (a->rs[t].present != b->rs[t].present || a->rs[t].replicas != b->rs[t].replicas ||
		    a->rs[t].restart != b->rs[t].restart || a->rs[t].port != b->rs[t].port ||
		    a->rs[t].has_command != b->rs[t].has_command)
			return "replica spec";
	if (memcmp(&a->status, &b->status, sizeof(a->status)))
		return "status";
	for (t = -1; t <= TFJ_RT_COUNT; t++)
		if (tfj_stoprule_of(a, t) != tfj_stoprule_of(b, t) ||
		    tfj_stoprule_stop_now(a, t) != tfj_stoprule_stop_now(b, t))
			return "stoprule";
	return "";
}

static void test_brief_agrees(void)
{
	int i, decoded = 0, stops = 0, invalid = 0;

	for (i = 0; i < 3000; i++) {
		struct tfj_buf b = TFJ_BUF_INIT(1 << 20);
		struct tfj_tfjob full, brief;
		const char *why;
		int ra, rb, t;

		TFJ_CHECK_OK(random_job(&b));
		ra = tfj_tfjob_decode(&full, b.ptr, b.len);
		rb = tfj_jobpeek_brief(&brief, b.ptr, b.len);
		why = ra || rb ? (ra == rb ? "" : "result") : differs(&full, &brief);
		if (*why) {
			fprintf(stderr, "brief decode differs (%s) from the full one for: %s\n", why,
				b.ptr);
			TFJ_CHECK_STR(why, "");
		}
		if (ra == 0 && rb == 0) {
			decoded++;
			invalid += !full.spec_valid;
			for (t = 0; t < TFJ_RT_COUNT; t++)
				stops += tfj_stoprule_stop_now(&full, t);
		}
		tfj_tfjob_free(&full);
		tfj_tfjob_free(&brief);
		tfj_buf_free(&b);
	}
	/* The draw covers what matters: decoded jobs, invalid specs, stops. */
	TFJ_CHECK_GT(decoded, 2000);
	TFJ_CHECK_GT(invalid, 500);
	TFJ_CHECK_LT(invalid, decoded - 500);
	TFJ_CHECK_GT(stops, 100);
}

/* A job whose PS template carries n env variables of about 60 bytes each. */
static int big_job(struct tfj_buf *b, int n)
{
	int rc = 0, i;

	rc |= tfj_buf_puts(b, "{\"kind\":\"TFJob\",\"metadata\":{\"name\":\"big\","
			   "\"namespace\":\"ml\",\"uid\":\"u-2\",\"labels\":{\"x\":\"y\"}},"
			   "\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"None\"},"
			   "\"tfReplicaSpecs\":{\"PS\":{\"replicas\":1,\"template\":"
			   "{\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"i\","
			   "\"command\":[\"python\"],\"env\":[");
	for (i = 0; i < n; i++)
		rc |= tfj_buf_printf(b, "%s{\"name\":\"VAR_%d\",\"value\":\"%040d\"}",
				     i ? "," : "", i, i);
	return rc | tfj_buf_puts(b, "]}]}}},\"Chief\":{\"template\":{\"spec\":{\"containers\":"
				 "[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}}}},"
				 "\"status\":" SUCCEEDED "}");
}

/*
 * A spec over the size the operator serves, or the informer's mark of
 * one: the job is invalid either way, and stops nothing.
 */
static void test_brief_oversize(void)
{
	static const char *const marked =
		"{\"kind\":\"TFJob\",\"tfjobOperatorOversizeSpecBytes\":300000,"
		"\"metadata\":{\"name\":\"big\",\"namespace\":\"ml\",\"uid\":\"u-3\"},"
		"\"spec\":{\"tfReplicaSpecs\":{\"PS\":{\"template\":{\"spec\":{\"containers\":"
		"[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}},\"Chief\":{\"template\":"
		"{\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}}}},"
		"\"status\":" SUCCEEDED "}";
	struct tfj_buf b = TFJ_BUF_INIT(1 << 20);
	struct tfj_tfjob full, brief;

	TFJ_CHECK_OK(big_job(&b, 6000));
	TFJ_CHECK_GT(b.len, TFJ_TFJOB_MAX_SPEC_BYTES);
	TFJ_CHECK_OK(tfj_tfjob_decode(&full, b.ptr, b.len));
	TFJ_CHECK_OK(tfj_jobpeek_brief(&brief, b.ptr, b.len));
	TFJ_CHECK_INT(full.spec_valid, 0);
	TFJ_CHECK_STR(differs(&full, &brief), "");
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&brief, TFJ_RT_PS), 0);
	tfj_tfjob_free(&full);
	tfj_tfjob_free(&brief);
	TFJ_CHECK_OK(tfj_tfjob_decode(&full, marked, strlen(marked)));
	TFJ_CHECK_OK(tfj_jobpeek_brief(&brief, marked, strlen(marked)));
	TFJ_CHECK_INT(full.spec_valid, 0);
	TFJ_CHECK_STR(differs(&full, &brief), "");
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&brief, TFJ_RT_PS), 0);
	tfj_tfjob_free(&full);
	tfj_tfjob_free(&brief);
	tfj_buf_free(&b);
}

/* The brief leaves the templates behind: a 240 KB one costs nothing. */
static void test_brief_is_brief(void)
{
	struct tfj_buf b = TFJ_BUF_INIT(1 << 20);
	struct tfj_tfjob job;
	char *doc;

	TFJ_CHECK_OK(big_job(&b, 3400));
	TFJ_CHECK_GT(b.len, 230000);
	TFJ_CHECK_LT(b.len, TFJ_TFJOB_MAX_SPEC_BYTES);
	TFJ_CHECK_OK(tfj_jobpeek_brief(&job, b.ptr, b.len));
	TFJ_CHECK_INT(job.spec_valid, 1);
	TFJ_CHECK_INT(job.rs[TFJ_RT_PS].present, 1);
	TFJ_CHECK_INT(job.rs[TFJ_RT_PS].has_command, 1);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_PS), 1);
	TFJ_CHECK_INT(tfj_stoprule_stop_now(&job, TFJ_RT_CHIEF), 0);
	doc = cJSON_PrintUnformatted(job.doc);
	TFJ_CHECK_NOT_NULL(doc);
	if (doc)
		TFJ_CHECK_LT(strlen(doc), 1024);
	free(doc);
	tfj_tfjob_free(&job);
	/* Not an object at all. */
	TFJ_CHECK_INT(tfj_jobpeek_brief(&job, " [1]", 4), TFJ_ETYPE);
	TFJ_CHECK_INT(tfj_jobpeek_brief(&job, "", 0), TFJ_ETYPE);
	tfj_buf_free(&b);
}

int main(void)
{
	TFJ_RUN(test_uid_status);
	TFJ_RUN(test_brief_agrees);
	TFJ_RUN(test_brief_oversize);
	TFJ_RUN(test_brief_is_brief);
	return tfj_test_finish();
}
