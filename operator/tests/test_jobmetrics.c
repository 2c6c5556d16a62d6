/*
 * test_jobmetrics.c - job counters under Kubeflow's names (app/jobmetrics.h):
 * one series per namespace and family with job_namespace and framework,
 * the namespaces past the cap (and anything not a namespace name) counted
 * under "_other", the names shown before the first job, restarts by exit
 * code with "other" and "none", the jobs-by-phase gauge following each
 * job's notes.
 */
#include <string.h>

#include "app/jobmetrics.h"
#include "tfj_test.h"

static int has(struct tfj_buf *b, const char *line)
{
	return strstr(tfj_buf_cstr(b), line) != NULL;
}

static void test_names_before_first_job(void)
{
	struct tfj_jobmetrics *m = NULL;
	struct tfj_buf b = TFJ_BUF_INIT(1 << 16);

	TFJ_CHECK_OK(tfj_jobmetrics_new(&m, 0));
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "# TYPE training_operator_jobs_created_total counter\n"));
	TFJ_CHECK(has(&b, "# TYPE training_operator_jobs_deleted_total counter\n"));
	TFJ_CHECK(has(&b, "# TYPE training_operator_jobs_successful_total counter\n"));
	TFJ_CHECK(has(&b, "# TYPE training_operator_jobs_failed_total counter\n"));
	TFJ_CHECK(has(&b, "# TYPE training_operator_jobs_restarted_total counter\n"));
	TFJ_CHECK(has(&b, "# TYPE tfjob_operator_pod_restarts_total counter\n"));
	/* No sample yet: "_other" shows only once it counted something. */
	TFJ_CHECK(!has(&b, "{job_namespace="));
	TFJ_CHECK(!has(&b, "{exit_code="));
	tfj_buf_free(&b);
	tfj_jobmetrics_free(m);
	/* NULL is no metrics, not a crash. */
	tfj_jobmetrics_inc(NULL, "ml", TFJ_JM_CREATED);
	tfj_jobmetrics_restart(NULL, 1);
	TFJ_CHECK_OK(tfj_jobmetrics_render(NULL, &b));
	tfj_jobmetrics_free(NULL);
}

static void test_per_namespace(void)
{
	struct tfj_jobmetrics *m = NULL;
	struct tfj_buf b = TFJ_BUF_INIT(1 << 16);

	TFJ_CHECK_OK(tfj_jobmetrics_new(&m, 0));
	tfj_jobmetrics_inc(m, "ml", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "ml", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "team-b", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "ml", TFJ_JM_SUCCESSFUL);
	tfj_jobmetrics_inc(m, "team-b", TFJ_JM_FAILED);
	tfj_jobmetrics_inc(m, "team-b", TFJ_JM_RESTARTED);
	tfj_jobmetrics_inc(m, "ml", TFJ_JM_DELETED);
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "training_operator_jobs_created_total{job_namespace=\"ml\","
			  "framework=\"tensorflow\"} 2\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_created_total{job_namespace=\"team-b\","
			  "framework=\"tensorflow\"} 1\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_successful_total{job_namespace=\"ml\","
			  "framework=\"tensorflow\"} 1\n"));
	/* A namespace seen once has a series (0) in every family. */
	TFJ_CHECK(has(&b, "training_operator_jobs_successful_total{job_namespace=\"team-b\","
			  "framework=\"tensorflow\"} 0\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_failed_total{job_namespace=\"team-b\","
			  "framework=\"tensorflow\"} 1\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_restarted_total{job_namespace=\"team-b\","
			  "framework=\"tensorflow\"} 1\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_deleted_total{job_namespace=\"ml\","
			  "framework=\"tensorflow\"} 1\n"));
	TFJ_CHECK(!has(&b, "_other"));
	tfj_buf_free(&b);
	tfj_jobmetrics_free(m);
}

static void test_cardinality_bounded(void)
{
	struct tfj_jobmetrics *m = NULL;
	struct tfj_buf b = TFJ_BUF_INIT(1 << 16);
	const char *p;
	int series = 0;

	TFJ_CHECK_OK(tfj_jobmetrics_new(&m, 2));
	tfj_jobmetrics_inc(m, "a", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "b", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "c", TFJ_JM_CREATED);  /* past the cap */
	tfj_jobmetrics_inc(m, "d", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "a", TFJ_JM_CREATED);  /* still its own */
	/* Not namespace names: never a label value. */
	tfj_jobmetrics_inc(m, "x\"} 1\ninjected", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "UPPER", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "", TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, NULL, TFJ_JM_CREATED);
	tfj_jobmetrics_inc(m, "a123456789b123456789c123456789d123456789e123456789f123456789abcd",
			   TFJ_JM_CREATED); /* 64 characters */
	tfj_jobmetrics_inc(m, "a", TFJ_JM_COUNT); /* no such family */
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "training_operator_jobs_created_total{job_namespace=\"a\","
			  "framework=\"tensorflow\"} 2\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_created_total{job_namespace=\"b\","
			  "framework=\"tensorflow\"} 1\n"));
	TFJ_CHECK(has(&b, "training_operator_jobs_created_total{job_namespace=\"_other\","
			  "framework=\"tensorflow\"} 7\n"));
	TFJ_CHECK(!has(&b, "job_namespace=\"c\""));
	TFJ_CHECK(!has(&b, "injected"));
	for (p = tfj_buf_cstr(&b); (p = strstr(p, "training_operator_jobs_created_total{")); p++)
		series++;
	TFJ_CHECK_INT(series, 3);
	tfj_buf_free(&b);
	tfj_jobmetrics_free(m);
}

static void test_restarts_by_exit_code(void)
{
	struct tfj_jobmetrics *m = NULL;
	struct tfj_buf b = TFJ_BUF_INIT(1 << 16);

	TFJ_CHECK_OK(tfj_jobmetrics_new(&m, 0));
	tfj_jobmetrics_restart(m, 137);
	tfj_jobmetrics_restart(m, 137);
	tfj_jobmetrics_restart(m, 0);
	tfj_jobmetrics_restart(m, 255);
	tfj_jobmetrics_restart(m, 256);
	tfj_jobmetrics_restart(m, -2);
	tfj_jobmetrics_restart(m, TFJ_JOBMETRICS_EXIT_NONE);
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "tfjob_operator_pod_restarts_total{exit_code=\"137\"} 2\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_pod_restarts_total{exit_code=\"0\"} 1\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_pod_restarts_total{exit_code=\"255\"} 1\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_pod_restarts_total{exit_code=\"other\"} 2\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_pod_restarts_total{exit_code=\"none\"} 1\n"));
	TFJ_CHECK(!has(&b, "exit_code=\"1\""));
	tfj_buf_free(&b);
	tfj_jobmetrics_free(m);
}

static void test_jobs_by_phase(void)
{
	struct tfj_jobmetrics *m = NULL;
	struct tfj_buf b = TFJ_BUF_INIT(1 << 16);

	TFJ_CHECK_OK(tfj_jobmetrics_new(&m, 0));
	/* All six phases shown before any job. */
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "# TYPE tfjob_operator_jobs gauge\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Created\"} 0\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Failed\"} 0\n"));
	tfj_buf_clear(&b);
	tfj_jobmetrics_phase(m, "ml/a", "Created");
	tfj_jobmetrics_phase(m, "ml/b", "Created");
	tfj_jobmetrics_phase(m, "ml/a", "Running");
	tfj_jobmetrics_phase(m, "ml/a", "Running"); /* unchanged: counted once */
	tfj_jobmetrics_phase(m, "ml/c", "Succeeded");
	tfj_jobmetrics_phase(m, "ml/d", "Bogus");     /* not a phase: not shown */
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Created\"} 1\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Running\"} 1\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Succeeded\"} 1\n"));
	TFJ_CHECK(!has(&b, "Bogus"));
	tfj_buf_clear(&b);
	/* Deleted, or a phase that is none: gone from the gauge. */
	tfj_jobmetrics_forget(m, "ml/a");
	tfj_jobmetrics_forget(m, "ml/never");
	tfj_jobmetrics_phase(m, "ml/b", "");
	tfj_jobmetrics_phase(m, "ml/c", "Failed");
	TFJ_CHECK_OK(tfj_jobmetrics_render(m, &b));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Created\"} 0\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Running\"} 0\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Succeeded\"} 0\n"));
	TFJ_CHECK(has(&b, "tfjob_operator_jobs{phase=\"Failed\"} 1\n"));
	tfj_buf_free(&b);
	tfj_jobmetrics_free(m);
	tfj_jobmetrics_phase(NULL, "ml/a", "Running");
	tfj_jobmetrics_forget(NULL, "ml/a");
}

int main(void)
{
	TFJ_RUN(test_names_before_first_job);
	TFJ_RUN(test_per_namespace);
	TFJ_RUN(test_cardinality_bounded);
	TFJ_RUN(test_restarts_by_exit_code);
	TFJ_RUN(test_jobs_by_phase);
	return tfj_test_finish();
}
