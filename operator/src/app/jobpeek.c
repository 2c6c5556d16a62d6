/*
 * jobpeek.c - a cached TFJob's uid and status from its text (see jobpeek.h).
 */
#include "app/jobpeek.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/json.h>

#include "kube/jscan.h"
#include "tfjob/tfjob.h"

static struct tfj_jscan_span whole(const char *text, size_t len)
{
	struct tfj_jscan_span v = { text, len };
	return v;
}

int tfj_jobpeek_uid(char *out, size_t outlen, const char *text, size_t len)
{
	static const char *const path[] = { "metadata", "uid", NULL };

	return tfj_jscan_path_string(out, outlen, whole(text, len), path);
}

int tfj_jobpeek_status(struct tfj_job_status *out, const char *text, size_t len)
{
	struct tfj_jscan_span v;
	cJSON *st = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tfj_jscan_member(&v, whole(text, len), "status");
	if (rc == TFJ_ENOTFOUND)
		return tfj_jobstatus_decode(out, NULL);
	if (rc)
		return rc;
	if ((rc = tfj_json_parse(&st, v.p, v.n, TFJ_TFJOB_MAX_BYTES)))
		return rc;
	rc = tfj_jobstatus_decode(out, st);
	cJSON_Delete(st);
	return rc;
}
