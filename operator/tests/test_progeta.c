/*
 * test_progeta.c - how far a job is and when it will end: the step-rate
 * window, the percentage and ETA math (tfjob/progeta.h), and what the
 * planner writes to status.progress from them: PROGRESS and ETA, or
 * nothing when the total is unknown.
 */
#include <math.h>

#include "plan_fixtures.h"
#include "tfjob/progeta.h"

static void test_rate_window(void)
{
	struct tfj_progeta_window w;
	double r;
	int i;

	memset(&w, 0, sizeof(w));
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), TFJ_ENOTFOUND);
	tfj_progeta_add(&w, 10000, 100);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), TFJ_ENOTFOUND);
	/* Under a second apart: too short to call a rate. */
	tfj_progeta_add(&w, 10500, 150);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), TFJ_ENOTFOUND);
	tfj_progeta_add(&w, 12000, 300);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), 0);
	TFJ_CHECK_NEAR(r, 100.0, 1e-9);
	/* The same step again adds nothing (a repeat of the same record). */
	tfj_progeta_add(&w, 13000, 300);
	TFJ_CHECK_INT(w.n, 3);
	/* Samples older than 60 s leave: the rate follows the recent pace. */
	tfj_progeta_add(&w, 80000, 400);
	tfj_progeta_add(&w, 90000, 500);
	TFJ_CHECK_INT(w.n, 2);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), 0);
	TFJ_CHECK_NEAR(r, 10.0, 1e-9);
	/* Sparse reports: the two newest always stay, even a window apart. */
	tfj_progeta_add(&w, 300000, 1500);
	TFJ_CHECK_INT(w.n, 2);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), 0);
	TFJ_CHECK_NEAR(r, 1000.0 / 210.0, 1e-9);
	/* A step going back (restart from a checkpoint) starts over. */
	tfj_progeta_add(&w, 301000, 1200);
	TFJ_CHECK_INT(w.n, 1);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), TFJ_ENOTFOUND);
	/* At most TFJ_PROGETA_SAMPLES: the oldest goes first. */
	for (i = 1; i <= 40; i++)
		tfj_progeta_add(&w, 301000 + i * 1000, 1200 + i * 2);
	TFJ_CHECK_INT(w.n, TFJ_PROGETA_SAMPLES);
	TFJ_CHECK_INT(w.s[0].step, 1200 + (40 - TFJ_PROGETA_SAMPLES + 1) * 2);
	TFJ_CHECK_INT(tfj_progeta_rate(&r, &w), 0);
	TFJ_CHECK_NEAR(r, 2.0, 1e-9);
}

static void test_percent_and_remaining(void)
{
	int64_t s;
	int pct;

	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 10, 0), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 0, 300), 0);
	TFJ_CHECK_INT(pct, 0);
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 1, 3), 0);
	TFJ_CHECK_INT(pct, 33);
	/* Rounded down: 100 only at the end, never before. */
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 9999, 10000), 0);
	TFJ_CHECK_INT(pct, 99);
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 10000, 10000), 0);
	TFJ_CHECK_INT(pct, 100);
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, 12000, 10000), 0);
	TFJ_CHECK_INT(pct, 100);
	/* No overflow near the int64 range, and doubles' rounding never says 100 early. */
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, INT64_MAX / 4, INT64_MAX), 0);
	TFJ_CHECK_INT(pct, 25);
	TFJ_CHECK_INT(tfj_progeta_percent(&pct, INT64_MAX - 1000, INT64_MAX), 0);
	TFJ_CHECK_INT(pct, 99);

	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 400, 100.0), 0);
	TFJ_CHECK_INT(s, 3);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 400, 7.0), 0);
	TFJ_CHECK_INT(s, 43); /* 300 / 7 = 42.9, rounded up */
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 400, 400, 0.0), 0);
	TFJ_CHECK_INT(s, 0);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 400, 0.0), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 400, NAN), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 400, -1.0), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 100, 0, 5.0), TFJ_ENOTFOUND);
	/* A job that all but stopped: no ETA rather than centuries. */
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 0, INT64_MAX, 1e-3), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_progeta_remaining(&s, 0, 1000000, 1e-3), TFJ_ENOTFOUND);
}

static cJSON *progress_obj(struct fx_world *w)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(w->job, "status"), "progress");
}

static double num(cJSON *o, const char *key)
{
	cJSON *it = cJSON_GetObjectItem(o, key);

	TFJ_CHECK(it != NULL && cJSON_IsNumber(it));
	return it ? it->valuedouble : -1;
}

/* The planner writes PROGRESS and ETA from the reports; unknown totals write neither. */
static void test_status_progress_eta(void)
{
	struct fx_world w;
	struct tfj_plan_progress p;
	cJSON *j = fx_job("mnist"), *po, *m;
	int64_t t0;

	fx_replica(j, "PS", 1, NULL);
	fx_replica(j, "Worker", 1, NULL);
	fx_world_init(&w, j);
	fx_step(&w);
	fx_all_pods(&w, "Running");
	fx_step(&w);
	memset(&p, 0, sizeof(p));
	w.progress = &p;
	t0 = w.now_ms;

	/* Steps but no total: the fields stay absent, never a guess. */
	p.has_step = p.has_loss = 1;
	p.step = 100;
	p.loss = 0.5;
	p.report_ms = t0;
	tfj_progeta_add(&p.rate, t0, 100);
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK(po != NULL);
	TFJ_CHECK(cJSON_GetObjectItem(po, "progressPercentage") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(po, "estimatedRemainingSeconds") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(po, "totalSteps") == NULL);
	/* KEP-2779's names: lastUpdatedTime and the metrics list. */
	TFJ_CHECK(cJSON_GetObjectItem(po, "lastUpdatedTime") != NULL);
	m = cJSON_GetArrayItem(cJSON_GetObjectItem(po, "metrics"), 0);
	TFJ_CHECK(m && !strcmp(cJSON_GetObjectItem(m, "name")->valuestring, "loss"));
	TFJ_CHECK(m && !strcmp(cJSON_GetObjectItem(m, "value")->valuestring, "0.5"));

	/* The total arrives, 10 s later at 100 steps/s: 26 %, 30 s left. */
	w.now_ms = t0 + 10000;
	p.has_total = 1;
	p.total = 4100;
	p.step = 1100;
	p.report_ms = w.now_ms;
	tfj_progeta_add(&p.rate, w.now_ms, 1100);
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK_INT((int)num(po, "totalSteps"), 4100);
	TFJ_CHECK_INT((int)num(po, "progressPercentage"), 26);
	TFJ_CHECK_INT((int)num(po, "estimatedRemainingSeconds"), 30);
	/* The decoded status holds them: the same values write nothing. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);

	/* Later, the same pace: the percentage rises, the ETA falls. */
	w.now_ms = t0 + 20000;
	p.step = 2100;
	p.report_ms = w.now_ms;
	tfj_progeta_add(&p.rate, w.now_ms, 2100);
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK_INT((int)num(po, "progressPercentage"), 51);
	TFJ_CHECK_INT((int)num(po, "estimatedRemainingSeconds"), 20);

	/* The trainer's other named metrics follow the typed ones; "loss" is not repeated. */
	snprintf(p.metrics[0].name, sizeof(p.metrics[0].name), "loss");
	p.metrics[0].value = 0.5;
	snprintf(p.metrics[1].name, sizeof(p.metrics[1].name), "val_loss");
	p.metrics[1].value = 0.625;
	p.nmetrics = 2;
	w.now_ms = t0 + 25000;
	p.report_ms = w.now_ms;
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(po, "metrics")), 2);
	m = cJSON_GetArrayItem(cJSON_GetObjectItem(po, "metrics"), 1);
	TFJ_CHECK(m && !strcmp(cJSON_GetObjectItem(m, "name")->valuestring, "val_loss"));
	TFJ_CHECK(m && !strcmp(cJSON_GetObjectItem(m, "value")->valuestring, "0.625"));
	/* Decoded back, they compare equal: nothing to write. */
	TFJ_CHECK_INT(fx_plan(&w), 0);
	TFJ_CHECK_INT(w.plan.n, 0);

	/* The last step: 100 % and nothing left. */
	w.now_ms = t0 + 30000;
	p.step = 4100;
	p.report_ms = w.now_ms;
	tfj_progeta_add(&p.rate, w.now_ms, 4100);
	fx_step(&w);
	po = progress_obj(&w);
	TFJ_CHECK_INT((int)num(po, "progressPercentage"), 100);
	TFJ_CHECK_INT((int)num(po, "estimatedRemainingSeconds"), 0);
	fx_world_free(&w);
}

int main(void)
{
	TFJ_RUN(test_rate_window);
	TFJ_RUN(test_percent_and_remaining);
	TFJ_RUN(test_status_progress_eta);
	return tfj_test_finish();
}
