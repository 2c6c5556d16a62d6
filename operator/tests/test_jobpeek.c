/*
 * test_jobpeek.c - a cached TFJob's uid and status from its text
 * (app/jobpeek.h), as the whole tree gives them.
 */
#include <string.h>

#include <tfj/err.h>

#include "app/jobpeek.h"
#include "tfj_test.h"

#define SUCCEEDED "{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"}]}"

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

int main(void)
{
	TFJ_RUN(test_uid_status);
	return tfj_test_finish();
}
