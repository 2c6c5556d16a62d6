/*
 * test_progress.c - the report channel's per-job memory: what counts as
 * progress, which replica's values become the job's, Exit reports, and the
 * bounds.
 */
#include <stdio.h>
#include <string.h>

#include <tfj_test.h>

#include "report/progress.h"
#include "tfjob/tfjob.h"

static struct tfj_reportmsg hb(const char *job_uid, int type, int index, int64_t step,
			       int64_t agent_ms)
{
	struct tfj_reportmsg m;

	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_HEARTBEAT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "%s", job_uid);
	m.ref.type = type;
	m.ref.index = index;
	m.has_step = 1;
	m.step = step;
	m.has_loss = 1;
	m.loss = 1.0 / (double)(step + 1);
	m.progress_ms = agent_ms;
	return m;
}

static const struct tfj_plan_replica_report *rep(const struct tfj_plan_progress *p,
						 const char *uid)
{
	for (size_t i = 0; i < p->nreplicas; i++)
		if (!strcmp(p->replicas[i].pod_uid, uid))
			return &p->replicas[i];
	return NULL;
}

static void test_progress(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_plan_progress p;
	struct tfj_reportmsg m;

	TFJ_CHECK_INT(tfj_progress_new(&st, 0), 0);
	if (!st)
		return;
	/* Nothing known: an empty snapshot, but with the clock. */
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK_EQ(p.report_ms, 0);
	TFJ_CHECK_EQ(p.nreplicas, 0);
	TFJ_CHECK_GT(p.since_ms, 0);

	/* Register starts the replica's hang clock. */
	m = hb("job-1", TFJ_RT_WORKER, 0, 0, 0);
	m.kind = TFJ_RM_REGISTER;
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w0", 1000), 0);
	m = hb("job-1", TFJ_RT_WORKER, 0, 10, 500);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w0", 2000), 0);
	/* The same record again (a heartbeat with nothing new) is not progress. */
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w0", 9000), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(rep(&p, "pod-w0") && rep(&p, "pod-w0")->progress_ms == 2000);
	/* ... but it is heard: the evidence hang detection needs (planprog.h). */
	TFJ_CHECK(rep(&p, "pod-w0") && rep(&p, "pod-w0")->heard_ms == 9000);
	TFJ_CHECK(p.has_step && p.step == 10 && p.report_ms == 2000);
	tfj_progress_release(&p);

	/* A ps step never becomes the job's; an evaluator's accuracy does. */
	m = hb("job-1", TFJ_RT_PS, 0, 99999, 700);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-ps0", 3000), 0);
	m = hb("job-1", TFJ_RT_EVALUATOR, 0, 5, 800);
	m.has_accuracy = 1;
	m.accuracy = 0.9;
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-ev0", 4000), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(p.step == 10);
	TFJ_CHECK(p.has_accuracy && p.accuracy == 0.9);
	TFJ_CHECK_INT((int)p.nreplicas, 3);
	/* No replica said the training length; only the worker's step is a rate sample. */
	TFJ_CHECK_INT(p.has_total, 0);
	TFJ_CHECK_INT((int)p.rate.n, 1);
	tfj_progress_release(&p);

	/* Worker 1's steps are the job's, but only worker 0's time the rate. */
	m = hb("job-1", TFJ_RT_WORKER, 1, 25, 850);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w1", 4200), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK_INT((int)p.step, 25);
	TFJ_CHECK_INT((int)p.rate.n, 1);
	tfj_progress_release(&p);
	/* A worker's next record says the length: the job has a total and a step rate. */
	m = hb("job-1", TFJ_RT_WORKER, 0, 30, 900);
	m.has_total = 1;
	m.total = 300;
	snprintf(m.metrics[0].name, sizeof(m.metrics[0].name), "val_loss");
	m.metrics[0].value = 0.75;
	m.nmetrics = 1;
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w0", 4500), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(p.has_total && p.total == 300);
	TFJ_CHECK_INT((int)p.nmetrics, 1);
	TFJ_CHECK_STR(p.metrics[0].name, "val_loss");
	TFJ_CHECK_INT((int)p.rate.n, 2);
	{
		double r = 0;

		TFJ_CHECK_INT(tfj_progeta_rate(&r, &p.rate), 0);
		TFJ_CHECK(r > 7.99 && r < 8.01); /* 20 steps in 2.5 s */
	}
	tfj_progress_release(&p);

	/* Exit is remembered with the agent's reason. */
	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_EXIT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "job-1");
	m.ref.type = TFJ_RT_WORKER;
	m.exit_code = 137;
	snprintf(m.reason, sizeof(m.reason), "Signaled");
	snprintf(m.message, sizeof(m.message), "killed");
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-w0", 5000), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	{
		const struct tfj_plan_replica_report *r = rep(&p, "pod-w0");

		TFJ_CHECK(r != NULL);
		if (r) {
			TFJ_CHECK(r->exited && r->exit_code == 137);
			TFJ_CHECK_STR(r->reason, "Signaled");
			TFJ_CHECK_STR(r->message, "killed");
		}
	}
	tfj_progress_release(&p);

	/* Another job (or a re-created one: another uid) starts empty; forget drops one. */
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-2"), 0);
	TFJ_CHECK(p.report_ms == 0);
	tfj_progress_forget(st, "job-1");
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(p.report_ms == 0 && p.nreplicas == 0);
	tfj_progress_free(st);
}

/*
 * Acks: a pod's records are acked once a snapshot taken after them was
 * persisted (the controller wrote the status), never before; a repeated
 * Exit keeps its place; a record after the snapshot waits for the next one.
 */
static void test_acks(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_plan_progress p;
	struct tfj_progress_ack a;
	struct tfj_reportmsg m;
	uint64_t seq;

	TFJ_CHECK_INT(tfj_progress_new(&st, 0), 0);
	if (!st)
		return;
	m = hb("job-1", TFJ_RT_CHIEF, 0, 10, 500);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 1000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 0);
	TFJ_CHECK_INT(a.exit, 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	seq = p.seq;
	tfj_progress_release(&p);
	/* A newer record arrives while that status is being written. */
	m = hb("job-1", TFJ_RT_CHIEF, 0, 20, 600);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 2000), 0);
	tfj_progress_persisted(st, "job-1", seq);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 0); /* its newest record (600) is not in yet */
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	tfj_progress_persisted(st, "job-1", p.seq);
	tfj_progress_release(&p);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 600);
	/* The same record again (a resend) stays acked; other pods and jobs know nothing. */
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 3000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 600);
	tfj_progress_ack(st, &a, "job-1", "pod-w0");
	TFJ_CHECK_EQ(a.progress_ms, 0);
	tfj_progress_ack(st, &a, "job-2", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 0);
	/* Exit: acked after the next persisted snapshot, and resends do not move it. */
	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_EXIT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "job-1");
	m.ref.type = TFJ_RT_CHIEF;
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 4000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_INT(a.exit, 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	seq = p.seq;
	tfj_progress_release(&p);
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 5000), 0);
	tfj_progress_persisted(st, "job-1", seq);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_INT(a.exit, 1);
	TFJ_CHECK_EQ(a.progress_ms, 600);
	/* A persisted sequence never goes back (an older reconcile finishing late). */
	tfj_progress_persisted(st, "job-1", 1);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_INT(a.exit, 1);
	/* A restarted operator (a new store) acks nothing until it wrote the status. */
	tfj_progress_free(st);
	TFJ_CHECK_INT(tfj_progress_new(&st, 0), 0);
	if (!st)
		return;
	TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod-c0", 6000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_INT(a.exit, 0);
	tfj_progress_free(st);
}

static void test_bounds(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_plan_progress p;
	struct tfj_reportmsg m;
	char uid[32];
	int i;

	TFJ_CHECK_INT(tfj_progress_new(&st, 2), 0);
	if (!st)
		return;
	/* Three jobs in a store of two: the least recently reported goes. */
	for (i = 0; i < 3; i++) {
		snprintf(uid, sizeof(uid), "job-%d", i);
		m = hb(uid, TFJ_RT_WORKER, 0, i + 1, 100 + i);
		TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, "pod", 1000 * (i + 1)), 0);
	}
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-0"), 0);
	TFJ_CHECK(p.report_ms == 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-2"), 0);
	TFJ_CHECK(p.step == 3);
	tfj_progress_release(&p);
	/* Pods per job are capped: the oldest pod is dropped. */
	for (i = 0; i < TFJ_PROGRESS_MAX_REPLICAS + 5; i++) {
		snprintf(uid, sizeof(uid), "pod-%d", i);
		m = hb("job-2", TFJ_RT_WORKER, 0, 1, 1);
		TFJ_CHECK_INT(tfj_progress_record(NULL, st, &m, uid, 5000), 0);
	}
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-2"), 0);
	TFJ_CHECK_INT((int)p.nreplicas, TFJ_PROGRESS_MAX_REPLICAS);
	TFJ_CHECK(rep(&p, "pod-0") == NULL);
	TFJ_CHECK(rep(&p, "pod-8196") != NULL);
	tfj_progress_release(&p);
	tfj_progress_free(st);
}

static struct tfj_reportmsg exit_msg(const char *job_uid, int type, int code)
{
	struct tfj_reportmsg m;

	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_EXIT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "%s", job_uid);
	m.ref.type = type;
	m.exit_code = code;
	snprintf(m.reason, sizeof(m.reason), "Error");
	return m;
}

/*
 * A job whose workers crash-loop: 5000 pods, each registering, reporting
 * progress and exiting, then deleted (the controller's pod DELETE calls
 * tfj_progress_forget_pod). The store keeps the records of the pods that
 * exist, not of every pod the job ever had: a live pod's progress and an
 * Exit the planner has not acted on (its pod still exists) survive.
 */
static void test_gone_pods(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_progress_stats s0, s;
	struct tfj_plan_progress p;
	struct tfj_reportmsg m;
	size_t most = 0;
	char uid[32];
	int i, created = -1;

	TFJ_CHECK_OK(tfj_progress_new(&st, 0));
	if (!st)
		return;
	tfj_progress_stats(st, &s0);
	TFJ_CHECK_EQ(s0.jobs, 0);
	TFJ_CHECK_EQ(s0.records, 0);
	m = hb("job-1", TFJ_RT_CHIEF, 0, 1, 100);
	TFJ_CHECK_OK(tfj_progress_record(&created, st, &m, "pod-live", 1000));
	TFJ_CHECK_INT(created, 1);
	m = exit_msg("job-1", TFJ_RT_PS, 3);
	TFJ_CHECK_OK(tfj_progress_record(&created, st, &m, "pod-exit", 1000));
	TFJ_CHECK_INT(created, 1);
	for (i = 0; i < 5000; i++) {
		int64_t now = 2000 + i;

		snprintf(uid, sizeof(uid), "p%d", i);
		m = hb("job-1", TFJ_RT_WORKER, i % 4, i + 1, 1000 + i);
		m.kind = TFJ_RM_REGISTER;
		TFJ_CHECK_OK(tfj_progress_record(&created, st, &m, uid, now));
		if (created != 1)
			TFJ_CHECK_INT(created, 1);
		m.kind = TFJ_RM_HEARTBEAT;
		TFJ_CHECK_OK(tfj_progress_record(&created, st, &m, uid, now));
		if (created != 0)
			TFJ_CHECK_INT(created, 0);
		m = exit_msg("job-1", TFJ_RT_WORKER, 1);
		m.ref.index = i % 4;
		TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, uid, now));
		tfj_progress_stats(st, &s);
		if (s.records > most)
			most = s.records;
		tfj_progress_forget_pod(st, "job-1", uid);
		/* The live chief keeps reporting. */
		if (i % 100 == 0) {
			m = hb("job-1", TFJ_RT_CHIEF, 0, 1 + i, 200 + i);
			TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-live", now));
		}
	}
	/* Each gone pod's record went with it: never more than the live two and one. */
	TFJ_CHECK_EQ(most, 3);
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.jobs, 1);
	TFJ_CHECK_EQ(s.records, 2);
	/* Bytes: the job table and a small record array, not 5000 records. */
	TFJ_CHECK_LE(s.bytes, s0.bytes + 16 * sizeof(struct tfj_plan_replica_report));
	TFJ_CHECK_OK(tfj_progress_snapshot(st, &p, "job-1"));
	TFJ_CHECK_EQ(p.nreplicas, 2);
	TFJ_CHECK(rep(&p, "p0") == NULL);
	TFJ_CHECK(rep(&p, "p4999") == NULL);
	TFJ_CHECK(rep(&p, "pod-live") != NULL);
	if (rep(&p, "pod-live"))
		TFJ_CHECK_EQ(rep(&p, "pod-live")->progress_ms, 6900);
	TFJ_CHECK(rep(&p, "pod-exit") != NULL);
	if (rep(&p, "pod-exit")) {
		TFJ_CHECK_INT(rep(&p, "pod-exit")->exited, 1);
		TFJ_CHECK_INT(rep(&p, "pod-exit")->exit_code, 3);
	}
	/* The job's values are the job's: forgetting pods does not lose them. */
	TFJ_CHECK_INT(p.has_step, 1);
	TFJ_CHECK_EQ(p.step, 5000);
	tfj_progress_release(&p);
	/* Unknown pods and jobs are no-ops; a pod reporting again starts anew. */
	tfj_progress_forget_pod(st, "job-1", "nobody");
	tfj_progress_forget_pod(st, "job-9", "pod-live");
	tfj_progress_forget_pod(st, NULL, NULL);
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.records, 2);
	tfj_progress_forget_pod(st, "job-1", "pod-live");
	m = hb("job-1", TFJ_RT_CHIEF, 0, 5000, 9000);
	TFJ_CHECK_OK(tfj_progress_record(&created, st, &m, "pod-live", 9000));
	TFJ_CHECK_INT(created, 1);
	tfj_progress_free(st);
}

/*
 * The backstop for deletions never seen: a job holds at most twice its
 * replicas plus TFJ_PROGRESS_SPARE_RECORDS records; the one heard from
 * least recently goes first, an Exit the status does not hold yet last.
 */
static void test_limit(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_progress_stats s;
	struct tfj_plan_progress p;
	struct tfj_reportmsg m;
	char uid[32];
	int i;

	TFJ_CHECK_OK(tfj_progress_new(&st, 0));
	if (!st)
		return;
	/* A job the store does not have is not added by its bound. */
	tfj_progress_limit(st, "job-1", 2);
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.jobs, 0);
	/* The oldest record of all is an Exit not yet in the status. */
	m = exit_msg("job-1", TFJ_RT_WORKER, 1);
	TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-exit", 500));
	/* Before the job's size is known, the store-wide bound alone. */
	for (i = 0; i < 40; i++) {
		snprintf(uid, sizeof(uid), "p%d", i);
		m = hb("job-1", TFJ_RT_WORKER, 0, i + 1, 1000 + i);
		TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, uid, 1000 + i));
	}
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.records, 41);
	/* Two replicas: 2 * 2 + 16 = 20, applied at once. */
	tfj_progress_limit(st, "job-1", 2);
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.records, 2 * 2 + TFJ_PROGRESS_SPARE_RECORDS);
	TFJ_CHECK_OK(tfj_progress_snapshot(st, &p, "job-1"));
	TFJ_CHECK(rep(&p, "pod-exit") != NULL);
	TFJ_CHECK(rep(&p, "p20") == NULL);
	TFJ_CHECK(rep(&p, "p21") != NULL);
	TFJ_CHECK(rep(&p, "p39") != NULL);
	tfj_progress_release(&p);
	/* A new pod takes the place of the least recently heard. */
	m = hb("job-1", TFJ_RT_WORKER, 0, 99, 99);
	TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-new", 5000));
	TFJ_CHECK_OK(tfj_progress_snapshot(st, &p, "job-1"));
	TFJ_CHECK_EQ(p.nreplicas, 20);
	TFJ_CHECK(rep(&p, "pod-new") != NULL);
	TFJ_CHECK(rep(&p, "pod-exit") != NULL);
	TFJ_CHECK(rep(&p, "p21") == NULL);
	/* Once the status holds the Exit, it is as evictable as any. */
	tfj_progress_persisted(st, "job-1", p.seq);
	tfj_progress_release(&p);
	m = hb("job-1", TFJ_RT_WORKER, 0, 99, 99);
	TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-newer", 6000));
	TFJ_CHECK_OK(tfj_progress_snapshot(st, &p, "job-1"));
	TFJ_CHECK(rep(&p, "pod-exit") == NULL);
	TFJ_CHECK(rep(&p, "p22") != NULL);
	tfj_progress_release(&p);
	/* Out-of-range sizes fall back to the store-wide bound. */
	tfj_progress_limit(st, "job-1", -1);
	tfj_progress_limit(st, "job-1", 1 << 30);
	for (i = 0; i < 40; i++) {
		snprintf(uid, sizeof(uid), "q%d", i);
		m = hb("job-1", TFJ_RT_WORKER, 0, i + 1, 1000 + i);
		TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, uid, 7000 + i));
	}
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.records, 60);
	/* Scaled down: the array shrinks with the records. */
	tfj_progress_limit(st, "job-1", 0);
	tfj_progress_stats(st, &s);
	TFJ_CHECK_EQ(s.records, TFJ_PROGRESS_SPARE_RECORDS);
	{
		struct tfj_progress_stats e;
		struct tfj_progress *empty = NULL;

		TFJ_CHECK_OK(tfj_progress_new(&empty, 0));
		if (empty) {
			tfj_progress_stats(empty, &e);
			TFJ_CHECK_LE(s.bytes - e.bytes,
				     32 * sizeof(struct tfj_plan_replica_report));
			tfj_progress_free(empty);
		}
	}
	tfj_progress_free(st);
}

static void test_metrics(void)
{
	struct tfj_progress *st = NULL;
	struct tfj_reportmsg m;
	struct tfj_buf b;

	tfj_buf_init(&b, 1 << 16);
	TFJ_CHECK_OK(tfj_progress_metrics(NULL, &b));
	TFJ_CHECK_EQ(b.len, 0);
	TFJ_CHECK_OK(tfj_progress_new(&st, 0));
	if (!st) {
		tfj_buf_free(&b);
		return;
	}
	m = hb("job-1", TFJ_RT_WORKER, 0, 1, 1);
	TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-a", 1000));
	TFJ_CHECK_OK(tfj_progress_record(NULL, st, &m, "pod-b", 1000));
	TFJ_CHECK_OK(tfj_progress_metrics(st, &b));
	TFJ_CHECK_NOT_NULL(strstr(tfj_buf_cstr(&b), "\ntfjob_report_progress_jobs 1\n"));
	TFJ_CHECK_NOT_NULL(strstr(tfj_buf_cstr(&b), "\ntfjob_report_progress_records 2\n"));
	TFJ_CHECK_NOT_NULL(strstr(tfj_buf_cstr(&b), "# TYPE tfjob_report_progress_bytes gauge\n"));
	tfj_buf_free(&b);
	tfj_progress_free(st);
}

int main(void)
{
	TFJ_RUN(test_progress);
	TFJ_RUN(test_acks);
	TFJ_RUN(test_bounds);
	TFJ_RUN(test_gone_pods);
	TFJ_RUN(test_limit);
	TFJ_RUN(test_metrics);
	return tfj_test_finish();
}
