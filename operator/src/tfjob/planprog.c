/*
 * planprog.c - progress, hang detection and training-done for the planner
 * (see planprog.h).
 */
#include "tfjob/planprog.h"

#include <string.h>

#include "tfjob/progeta.h"
#include "tfjob/progstatus.h"
#include "tfjob/stoprule.h"
#include "tfjob/tfjob.h"

const struct tfj_plan_replica_report *tfj_planprog_find(const struct tfj_planctx *c,
							 const char *pod_uid)
{
	const struct tfj_plan_progress *p = c->in->progress;
	size_t i;

	if (!p || !pod_uid || !*pod_uid)
		return NULL;
	for (i = 0; i < p->nreplicas; i++)
		if (!strcmp(p->replicas[i].pod_uid, pod_uid))
			return &p->replicas[i];
	return NULL;
}

void tfj_planprog_reasons(struct tfj_planctx *c)
{
	size_t i;

	for (i = 0; i < c->npods; i++) {
		struct tfj_podstate *ps = &c->pods[i];
		const struct tfj_plan_replica_report *r;

		/* The termination message is kubelet's record: it wins. */
		if (ps->phase != TFJ_POD_FAILED || ps->agent_reason[0] ||
		    !(r = tfj_planprog_find(c, ps->uid)) || !r->exited || !r->reason[0])
			continue;
		tfj_planact_fmt(ps->agent_reason, sizeof(ps->agent_reason), "%s", r->reason);
		tfj_planact_fmt(ps->agent_message, sizeof(ps->agent_message), "%s", r->message);
	}
}

static int same_metrics(const struct tfj_progress_status *a, const struct tfj_progress_status *b)
{
	unsigned i;

	if (a->nmetric != b->nmetric)
		return 0;
	for (i = 0; i < a->nmetric && i < TFJ_PROGREC_METRICS_MAX; i++)
		if (strcmp(a->metric[i].name, b->metric[i].name) ||
		    strcmp(a->metric[i].value, b->metric[i].value))
			return 0;
	return 1;
}

/*
 * The trainer's named metrics, values formatted as the status writes them
 * (so a decoded status compares equal to the same report), without the
 * names the typed fields already give.
 */
static void named_metrics(struct tfj_progress_status *n, const struct tfj_plan_progress *p)
{
	unsigned i;

	n->nmetric = 0;
	for (i = 0; i < p->nmetrics && i < TFJ_PROGREC_METRICS_MAX; i++) {
		const char *name = p->metrics[i].name;

		if (tfj_progstatus_derived(name) || n->nmetric >= TFJ_PROGREC_METRICS_MAX)
			continue;
		tfj_planact_fmt(n->metric[n->nmetric].name, sizeof(n->metric[0].name), "%s", name);
		tfj_planact_fmt(n->metric[n->nmetric].value, sizeof(n->metric[0].value), "%.6g",
				p->metrics[i].value);
		n->nmetric++;
	}
}

static int same_values(const struct tfj_progress_status *a, const struct tfj_progress_status *b)
{
	return a->present == b->present && a->has_step == b->has_step && a->step == b->step &&
	       a->has_loss == b->has_loss && (!a->has_loss || a->loss == b->loss) &&
	       a->has_accuracy == b->has_accuracy && (!a->has_accuracy || a->accuracy == b->accuracy) &&
	       a->has_eps == b->has_eps && (!a->has_eps || a->eps == b->eps) &&
	       a->has_total == b->has_total && (!a->has_total || a->total == b->total) &&
	       a->has_pct == b->has_pct && (!a->has_pct || a->pct == b->pct) &&
	       a->has_eta == b->has_eta && (!a->has_eta || a->eta == b->eta) &&
	       same_metrics(a, b);
}

/*
 * Percentage and ETA from the training length and the step rate (progeta.h).
 * Without both a step and a total neither is set: an unknown total leaves
 * the PROGRESS and ETA columns empty rather than wrong.
 */
static void eta_fields(struct tfj_progress_status *n, const struct tfj_plan_progress *p)
{
	double rate;

	if (!p->has_total || !p->has_step)
		return;
	n->has_total = 1;
	n->total = p->total;
	n->has_pct = tfj_progeta_percent(&n->pct, p->step, p->total) == 0;
	if (tfj_progeta_rate(&rate, &p->rate) != 0)
		rate = 0;
	n->has_eta = tfj_progeta_remaining(&n->eta, p->step, p->total, rate) == 0;
}

void tfj_planprog_progress(struct tfj_planctx *c)
{
	const struct tfj_plan_progress *p = c->in->progress;
	struct tfj_progress_status n;
	int64_t next;

	if (!p)
		return;
	/* Unless held back below, the status this plan leaves holds all of p. */
	c->plan->progress_durable = 1;
	if (p->report_ms <= 0)
		return;
	memset(&n, 0, sizeof(n));
	n.present = 1;
	n.has_step = p->has_step;
	n.step = p->step;
	n.has_loss = p->has_loss;
	n.loss = p->loss;
	n.has_accuracy = p->has_accuracy;
	n.accuracy = p->accuracy;
	n.has_eps = p->has_eps;
	n.eps = p->eps;
	eta_fields(&n, p);
	named_metrics(&n, p);
	n.last_report = p->report_ms / 1000;
	memcpy(n.done_pod, c->st.progress.done_pod, sizeof(n.done_pod));
	if (same_values(&n, &c->st.progress) || n.last_report < c->st.progress.last_report)
		return;
	next = c->st.progress.last_report + TFJ_PLAN_PROGRESS_MIN_S;
	if (c->st.progress.present && c->now < next) {
		tfj_planact_requeue_at(c, next);
		c->plan->progress_durable = 0;
		return;
	}
	c->st.progress = n;
}

/* The current pod of replica `t` index 0, or -1 when there is none. */
static int first_pod(const struct tfj_planctx *c, int t)
{
	if (!c->job->rs[t].present || c->job->rs[t].replicas < 1 || !c->pod_slot[t])
		return -1;
	return c->pod_slot[t][0];
}

/*
 * The lead replica's pod (chief/master 0, else worker 0) when it completed
 * and its agent's termination message names a final step; -1 otherwise.
 */
static int lead_completed(const struct tfj_planctx *c)
{
	int t = tfj_tfjob_chief_type(c->job), at;

	if ((at = first_pod(c, t < 0 ? TFJ_RT_WORKER : t)) < 0)
		return -1;
	if (c->pods[at].phase != TFJ_POD_SUCCEEDED || c->pods[at].has_exit != 2 ||
	    c->pods[at].exit_code != 0 || !c->pods[at].has_term_step)
		return -1;
	return at;
}

void tfj_planprog_final(struct tfj_planctx *c)
{
	struct tfj_progress_status *st = &c->st.progress;
	const struct tfj_podstate *ps;
	int at = lead_completed(c);

	if (at < 0)
		return;
	ps = &c->pods[at];
	/* The reports got there first (or as far): they are the same record. */
	if (st->present && st->has_step && st->step >= ps->term_step)
		return;
	st->present = 1;
	st->has_step = 1;
	st->step = ps->term_step;
	/* The figures of that last record, or none: older ones would mislead. */
	st->has_loss = ps->has_term_loss;
	st->loss = ps->has_term_loss ? ps->term_loss : 0;
	st->has_accuracy = ps->has_term_accuracy;
	st->accuracy = ps->has_term_accuracy ? ps->term_accuracy : 0;
	/* The step moved: the percentage follows; the trainer ended, so no time is left. */
	if (st->has_total) {
		st->has_pct = tfj_progeta_percent(&st->pct, st->step, st->total) == 0;
		st->has_eta = 1;
		st->eta = 0;
	}
	if (ps->finished_at > st->last_report)
		st->last_report = ps->finished_at;
}

int tfj_planprog_hung(struct tfj_planctx *c, size_t i, char *detail, size_t n)
{
	const struct tfj_run_policy *rp = &c->job->run;
	const struct tfj_podstate *ps = &c->pods[i];
	const struct tfj_plan_replica_report *r;
	int64_t since, limit_ms;

	if (!c->in->progress || !rp->has_progress_deadline || ps->phase != TFJ_POD_RUNNING ||
	    ps->deleting || ps->type < 0 || tfj_planprog_auxiliary(ps->type))
		return 0;
	/*
	 * Only evidence counts: a report of this pod's agent. Silence says
	 * nothing about the trainer (the channel or TokenReviews down, an image
	 * without the agent, this process just started leading), so it never
	 * restarts a pod.
	 */
	if (!(r = tfj_planprog_find(c, ps->uid)) || r->exited)
		return 0; /* an exited one is finishing; its pod phase follows */
	since = ps->running_since_ms;
	if (since > 0 && c->in->progress->since_ms > since)
		since = c->in->progress->since_ms;
	if (r->progress_ms > since)
		since = r->progress_ms;
	if (since <= 0)
		return 0;
	limit_ms = rp->progress_deadline_seconds * 1000;
	/*
	 * Hung when a heartbeat arrived a whole deadline after the last progress
	 * and still repeated the old record. Until then a timer covers the
	 * deadline; past it, the next heartbeat queues the job (app/reporthub.c)
	 * and no heartbeat means no verdict.
	 */
	if (r->heard_ms - since < limit_ms) {
		if (c->in->now_ms - since < limit_ms)
			tfj_planact_requeue_at(c, (since + limit_ms) / 1000 + 1);
		return 0;
	}
	tfj_planact_fmt(detail, n, "%s replica %d (pod %s) made no progress for %lld s "
	    "(progressDeadlineSeconds %lld)", tfj_tfjob_type_lower((enum tfj_rtype)ps->type),
	    ps->index, ps->name, (long long)((c->in->now_ms - since) / 1000),
	    (long long)rp->progress_deadline_seconds);
	return 1;
}

int tfj_planprog_training_done(const struct tfj_planctx *c)
{
	int t = tfj_tfjob_chief_type(c->job), at;
	const struct tfj_plan_replica_report *r;

	if (!c->in->progress)
		return 0;
	if (t < 0) {
		/* With AllWorkers, worker 0 being done does not end training. */
		if (c->job->success_policy != TFJ_SUCCESS_DEFAULT)
			return 0;
		t = TFJ_RT_WORKER;
	}
	if ((at = first_pod(c, t)) < 0)
		return 0;
	/* Said before a restart of ours (or to another leader): the status has it. */
	if (c->pods[at].uid[0] && !strcmp(c->pods[at].uid, c->st.progress.done_pod))
		return 1;
	r = tfj_planprog_find(c, c->pods[at].uid);
	return r && r->exited && r->exit_code == 0 && r->type == t && r->index == 0;
}

int tfj_planprog_done(struct tfj_planctx *c)
{
	int t = tfj_tfjob_chief_type(c->job);

	if (!tfj_planprog_training_done(c))
		return 0;
	/* Persisted, so that it outlives this process (and acks the Exit). */
	if (t < 0)
		t = TFJ_RT_WORKER;
	tfj_planact_fmt(c->st.progress.done_pod, sizeof(c->st.progress.done_pod), "%s",
			c->pods[c->pod_slot[t][0]].uid);
	c->st.progress.present = 1;
	return 1;
}

int tfj_planprog_auxiliary(int type)
{
	return type == TFJ_RT_PS || type == TFJ_RT_EVALUATOR;
}

/* When the lingering pod pods[i] is due for deletion, and why. */
static int64_t linger_due(const struct tfj_planctx *c, size_t i, const char **why)
{
	int64_t from = c->st.completion_time ? c->st.completion_time : c->now;
	const struct tfj_plan_progress *p = c->in->progress;

	/* A restarted operator or a new leader has heard nobody yet. */
	if (p && p->since_ms / 1000 + 1 > from)
		from = p->since_ms / 1000 + 1;
	if (tfj_planprog_find(c, c->pods[i].uid)) {
		*why = "its agent did not end it";
		return from + TFJ_PLANPROG_STOP_MAX_S;
	}
	*why = "no agent reported for it";
	return from + TFJ_PLANPROG_STOP_GRACE_S;
}

int tfj_planprog_linger(struct tfj_planctx *c)
{
	char msg[256];
	const char *why;
	size_t i;
	int rc;

	for (i = 0; i < c->npods; i++) {
		const struct tfj_podstate *ps = &c->pods[i];
		enum tfj_stoprule rule;
		int64_t due;

		if (!c->pod_used[i] || c->pod_gone[i] || ps->deleting ||
		    ps->phase == TFJ_POD_SUCCEEDED || ps->phase == TFJ_POD_FAILED ||
		    (rule = tfj_stoprule_of(c->job, ps->type)) == TFJ_STOP_NONE)
			continue;
		if (rule == TFJ_STOP_DELETE) {
			why = "restartPolicy Always would restart a stopped container";
		} else if (c->in->now_ms < (due = linger_due(c, i, &why)) * 1000) {
			tfj_planact_requeue_at(c, due);
			continue;
		}
		tfj_planact_fmt(msg, sizeof(msg), "training finished: the job has succeeded and %s",
				why);
		if ((rc = tfj_planact_delete_pod(c, i, TFJ_DEL_CLEANUP, msg)))
			return rc;
	}
	return 0;
}
