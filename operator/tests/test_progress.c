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
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-w0", 1000), 0);
	m = hb("job-1", TFJ_RT_WORKER, 0, 10, 500);
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-w0", 2000), 0);
	/* The same record again (a heartbeat with nothing new) is not progress. */
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-w0", 9000), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(rep(&p, "pod-w0") && rep(&p, "pod-w0")->progress_ms == 2000);
	/* ... but it is heard: the evidence hang detection needs (planprog.h). */
	TFJ_CHECK(rep(&p, "pod-w0") && rep(&p, "pod-w0")->heard_ms == 9000);
	TFJ_CHECK(p.has_step && p.step == 10 && p.report_ms == 2000);
	tfj_progress_release(&p);

	/* A ps step never becomes the job's; an evaluator's accuracy does. */
	m = hb("job-1", TFJ_RT_PS, 0, 99999, 700);
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-ps0", 3000), 0);
	m = hb("job-1", TFJ_RT_EVALUATOR, 0, 5, 800);
	m.has_accuracy = 1;
	m.accuracy = 0.9;
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-ev0", 4000), 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	TFJ_CHECK(p.step == 10);
	TFJ_CHECK(p.has_accuracy && p.accuracy == 0.9);
	TFJ_CHECK_INT((int)p.nreplicas, 3);
	tfj_progress_release(&p);

	/* Exit is remembered with the agent's reason. */
	memset(&m, 0, sizeof(m));
	m.kind = TFJ_RM_EXIT;
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "job-1");
	m.ref.type = TFJ_RT_WORKER;
	m.exit_code = 137;
	snprintf(m.reason, sizeof(m.reason), "Signaled");
	snprintf(m.message, sizeof(m.message), "killed");
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-w0", 5000), 0);
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
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 1000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 0);
	TFJ_CHECK_INT(a.exit, 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	seq = p.seq;
	tfj_progress_release(&p);
	/* A newer record arrives while that status is being written. */
	m = hb("job-1", TFJ_RT_CHIEF, 0, 20, 600);
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 2000), 0);
	tfj_progress_persisted(st, "job-1", seq);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 0); /* its newest record (600) is not in yet */
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	tfj_progress_persisted(st, "job-1", p.seq);
	tfj_progress_release(&p);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_EQ(a.progress_ms, 600);
	/* The same record again (a resend) stays acked; other pods and jobs know nothing. */
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 3000), 0);
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
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 4000), 0);
	tfj_progress_ack(st, &a, "job-1", "pod-c0");
	TFJ_CHECK_INT(a.exit, 0);
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-1"), 0);
	seq = p.seq;
	tfj_progress_release(&p);
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 5000), 0);
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
	TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod-c0", 6000), 0);
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
		TFJ_CHECK_INT(tfj_progress_record(st, &m, "pod", 1000 * (i + 1)), 0);
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
		TFJ_CHECK_INT(tfj_progress_record(st, &m, uid, 5000), 0);
	}
	TFJ_CHECK_INT(tfj_progress_snapshot(st, &p, "job-2"), 0);
	TFJ_CHECK_INT((int)p.nreplicas, TFJ_PROGRESS_MAX_REPLICAS);
	TFJ_CHECK(rep(&p, "pod-0") == NULL);
	TFJ_CHECK(rep(&p, "pod-8196") != NULL);
	tfj_progress_release(&p);
	tfj_progress_free(st);
}

int main(void)
{
	TFJ_RUN(test_progress);
	TFJ_RUN(test_acks);
	TFJ_RUN(test_bounds);
	return tfj_test_finish();
}
