/*
 * progress.c - the report channel's per-job memory (see progress.h).
 */
#include "report/progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>

#include "tfjob/tfjob.h"

struct job {
	char uid[64];
	int64_t touched_ms;
	struct tfj_plan_progress sum;   /* sum.replicas unused here */
	struct tfj_plan_replica_report *reps;
	size_t nreps, cap;
	size_t limit;                   /* records at most (tfj_progress_limit) */
	uint64_t durable_seq;           /* records up to here are in the status */
	int rate_rank;                  /* rate_rank() of the replica sum.rate follows */
};

struct tfj_progress {
	pthread_mutex_t mu;
	int64_t since_ms;
	uint64_t seq;                   /* records stored so far, all jobs */
	struct job *jobs;
	size_t n, max;
};

void tfj_progress_restart_clock(struct tfj_progress *p)
{
	pthread_mutex_lock(&p->mu);
	p->since_ms = tfj_clock_unix_ms();
	pthread_mutex_unlock(&p->mu);
}

int tfj_progress_new(struct tfj_progress **out, size_t max_jobs)
{
	struct tfj_progress *p;

	*out = NULL;
	if (!(p = calloc(1, sizeof(*p))))
		return tfj_err_set(TFJ_ENOMEM, "progress");
	p->max = max_jobs ? max_jobs : 4096;
	if (!(p->jobs = calloc(p->max, sizeof(*p->jobs)))) {
		free(p);
		return tfj_err_set(TFJ_ENOMEM, "progress");
	}
	pthread_mutex_init(&p->mu, NULL);
	p->since_ms = tfj_clock_unix_ms();
	*out = p;
	return 0;
}

void tfj_progress_free(struct tfj_progress *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		free(p->jobs[i].reps);
	free(p->jobs);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static struct job *find(struct tfj_progress *p, const char *uid)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->jobs[i].uid, uid))
			return &p->jobs[i];
	return NULL;
}

static void drop(struct tfj_progress *p, struct job *j)
{
	free(j->reps);
	*j = p->jobs[--p->n];
	memset(&p->jobs[p->n], 0, sizeof(p->jobs[p->n]));
}

static struct job *find_or_add(struct tfj_progress *p, const char *uid, int64_t now_ms)
{
	struct job *j = find(p, uid);
	size_t i, old = 0;

	if (j)
		return j;
	if (p->n == p->max) {
		for (i = 1; i < p->n; i++)
			if (p->jobs[i].touched_ms < p->jobs[old].touched_ms)
				old = i;
		drop(p, &p->jobs[old]);
	}
	j = &p->jobs[p->n++];
	memset(j, 0, sizeof(*j));
	snprintf(j->uid, sizeof(j->uid), "%s", uid);
	j->touched_ms = now_ms;
	/* Until a reconcile tells the job's size, only the store-wide bound. */
	j->limit = TFJ_PROGRESS_MAX_REPLICAS;
	return j;
}

/* 1 while r holds an Exit the status does not (persisted) yet. */
static int exit_pending(const struct job *j, const struct tfj_plan_replica_report *r)
{
	return r->exited && r->exit_seq > j->durable_seq;
}

/* Removes reps[i], keeping the others in the order they came. */
static void remove_rep(struct job *j, size_t i)
{
	memmove(&j->reps[i], &j->reps[i + 1], (j->nreps - i - 1) * sizeof(*j->reps));
	j->nreps--;
}

/*
 * Drops the record least worth keeping, for room: the one heard from least
 * recently (a pod whose deletion was never seen is silent), among those
 * without an Exit the status does not hold yet if there are any (the
 * planner may still have to act on it). Ties go to the older record.
 */
static void evict(struct job *j)
{
	size_t i, at = j->nreps;
	int pass;

	for (pass = 0; pass < 2 && at == j->nreps; pass++)
		for (i = 0; i < j->nreps; i++)
			if ((pass || !exit_pending(j, &j->reps[i])) &&
			    (at == j->nreps || j->reps[i].heard_ms < j->reps[at].heard_ms))
				at = i;
	if (at < j->nreps)
		remove_rep(j, at);
}

/*
 * Gives memory back once most of the array is unused: a job that once had
 * thousands of records (a big job scaled down, or records dropped as pods
 * went) does not keep its high-water mark.
 */
static void shrink(struct job *j)
{
	struct tfj_plan_replica_report *r;
	size_t cap = j->cap / 2;

	if (j->cap <= 8 || j->nreps > j->cap / 4)
		return;
	if (cap < 8)
		cap = 8;
	/* A failed shrink keeps the larger array: nothing is lost. */
	if ((r = realloc(j->reps, cap * sizeof(*r)))) {
		j->reps = r;
		j->cap = cap;
	}
}

static struct tfj_plan_replica_report *replica(struct job *j, const char *pod_uid,
					       int *created)
{
	struct tfj_plan_replica_report *r;
	size_t i;

	for (i = 0; i < j->nreps; i++)
		if (!strcmp(j->reps[i].pod_uid, pod_uid))
			return &j->reps[i];
	while (j->nreps && j->nreps >= j->limit)
		evict(j);
	if (j->nreps == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 8;

		if (cap > TFJ_PROGRESS_MAX_REPLICAS)
			cap = TFJ_PROGRESS_MAX_REPLICAS;
		if (!(r = realloc(j->reps, cap * sizeof(*r))))
			return NULL;
		j->reps = r;
		j->cap = cap;
	}
	r = &j->reps[j->nreps++];
	memset(r, 0, sizeof(*r));
	snprintf(r->pod_uid, sizeof(r->pod_uid), "%s", pod_uid);
	*created = 1;
	return r;
}

/*
 * Which replica's steps time the step rate (sum.rate): one replica, the
 * lead (chief or master 0, else worker 0), because replicas' reports
 * interleave (worker 1's record of step 500 may arrive after worker 0's of
 * 510) and a window fed by several would see the step go back and start
 * over. 0 = not a candidate; a higher rank takes the window over.
 */
static int rate_rank(int type, int index)
{
	if (index != 0)
		return 0;
	if (type == TFJ_RT_CHIEF || type == TFJ_RT_MASTER)
		return 2;
	return type == TFJ_RT_WORKER ? 1 : 0;
}

static void rate_sample(struct job *j, const struct tfj_reportmsg *m, int64_t now_ms)
{
	int rank = rate_rank(m->ref.type, m->ref.index);

	if (rank == 0 || rank < j->rate_rank)
		return;
	if (rank > j->rate_rank) {
		memset(&j->sum.rate, 0, sizeof(j->sum.rate));
		j->rate_rank = rank;
	}
	tfj_progeta_add(&j->sum.rate, now_ms, m->step);
}

int tfj_progress_record(int *created, struct tfj_progress *p, const struct tfj_reportmsg *m,
			const char *pod_uid, int64_t now_ms)
{
	struct tfj_plan_replica_report *r;
	struct job *j;
	int trains = m->ref.type != TFJ_RT_PS && m->ref.type != TFJ_RT_EVALUATOR, made = 0;

	if (created)
		*created = 0;
	pthread_mutex_lock(&p->mu);
	j = find_or_add(p, m->ref.job_uid, now_ms);
	j->touched_ms = now_ms;
	if (!(r = replica(j, pod_uid, &made))) {
		pthread_mutex_unlock(&p->mu);
		return tfj_err_set(TFJ_ENOMEM, "progress");
	}
	r->type = m->ref.type;
	r->index = m->ref.index;
	r->heard_ms = now_ms;
	switch (m->kind) {
	case TFJ_RM_REGISTER:
		/* The agent just started: the hang clock starts here too. */
		if (!r->progress_ms)
			r->progress_ms = now_ms;
		break;
	case TFJ_RM_HEARTBEAT:
		/*
		 * Progress advanced when the agent saw a newer record than the
		 * one it sent last time (heartbeats repeat the last record, so
		 * a hung trainer does not look alive). Timed on our clock.
		 */
		if (m->progress_ms <= 0 || m->progress_ms == r->agent_ms)
			break;
		r->agent_ms = m->progress_ms;
		r->progress_ms = now_ms;
		r->seq = ++p->seq;
		if (m->has_step && trains) {
			j->sum.has_step = 1;
			j->sum.step = m->step;
			rate_sample(j, m, now_ms);
		}
		/* Named metrics: the newest training replica's report that has any. */
		if (m->nmetrics && trains) {
			unsigned i;

			for (i = 0; i < m->nmetrics && i < TFJ_PROGREC_METRICS_MAX; i++) {
				memcpy(j->sum.metrics[i].name, m->metrics[i].name,
				       sizeof(j->sum.metrics[i].name));
				j->sum.metrics[i].value = m->metrics[i].value;
			}
			j->sum.nmetrics = i;
		}
		/* The training length, from any replica that knows it (all say the same). */
		if (m->has_total) {
			j->sum.has_total = 1;
			j->sum.total = m->total;
		}
		if (m->has_loss && trains) {
			j->sum.has_loss = 1;
			j->sum.loss = m->loss;
		}
		if (m->has_accuracy) {
			j->sum.has_accuracy = 1;
			j->sum.accuracy = m->accuracy;
		}
		if (m->has_eps && trains) {
			j->sum.has_eps = 1;
			j->sum.eps = m->eps;
		}
		j->sum.report_ms = now_ms;
		break;
	case TFJ_RM_EXIT:
		/* A repeat (the agent had no ack) keeps its place: it is the same exit. */
		if (!r->exited)
			r->exit_seq = ++p->seq;
		r->exited = 1;
		r->exit_code = m->exit_code;
		memcpy(r->reason, m->reason, sizeof(r->reason));
		memcpy(r->message, m->message, sizeof(r->message) - 1);
		r->message[sizeof(r->message) - 1] = '\0';
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&p->mu);
	if (created)
		*created = made;
	return 0;
}

int tfj_progress_snapshot(struct tfj_progress *p, struct tfj_plan_progress *out,
			  const char *job_uid)
{
	struct tfj_plan_replica_report *copy = NULL;
	struct job *j;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->mu);
	out->since_ms = p->since_ms;
	out->seq = p->seq;
	if ((j = find(p, job_uid))) {
		*out = j->sum;
		out->since_ms = p->since_ms;
		out->seq = p->seq;
		out->replicas = NULL;
		out->nreplicas = 0;
		if (j->nreps && !(copy = malloc(j->nreps * sizeof(*copy)))) {
			rc = tfj_err_set(TFJ_ENOMEM, "progress snapshot");
		} else if (j->nreps) {
			memcpy(copy, j->reps, j->nreps * sizeof(*copy));
			out->replicas = copy;
			out->nreplicas = j->nreps;
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

void tfj_progress_release(struct tfj_plan_progress *snap)
{
	if (!snap)
		return;
	free((void *)snap->replicas);
	snap->replicas = NULL;
	snap->nreplicas = 0;
}

void tfj_progress_forget(struct tfj_progress *p, const char *job_uid)
{
	struct job *j;

	pthread_mutex_lock(&p->mu);
	if ((j = find(p, job_uid)))
		drop(p, j);
	pthread_mutex_unlock(&p->mu);
}

void tfj_progress_forget_pod(struct tfj_progress *p, const char *job_uid, const char *pod_uid)
{
	struct job *j;
	size_t i;

	if (!job_uid || !pod_uid)
		return;
	pthread_mutex_lock(&p->mu);
	if ((j = find(p, job_uid))) {
		for (i = 0; i < j->nreps; i++) {
			if (!strcmp(j->reps[i].pod_uid, pod_uid)) {
				remove_rep(j, i);
				shrink(j);
				break;
			}
		}
	}
	pthread_mutex_unlock(&p->mu);
}

void tfj_progress_limit(struct tfj_progress *p, const char *job_uid, int replicas)
{
	size_t limit = TFJ_PROGRESS_MAX_REPLICAS;
	struct job *j;

	/* Replicas are at most TFJ_TFJOB_MAX_REPLICAS (tfjob.h): no overflow. */
	if (replicas >= 0 && (size_t)replicas < (TFJ_PROGRESS_MAX_REPLICAS -
						  TFJ_PROGRESS_SPARE_RECORDS) / 2)
		limit = 2 * (size_t)replicas + TFJ_PROGRESS_SPARE_RECORDS;
	pthread_mutex_lock(&p->mu);
	if ((j = find(p, job_uid))) {
		j->limit = limit;
		if (j->nreps > limit) {
			while (j->nreps > limit)
				evict(j);
			shrink(j);
		}
	}
	pthread_mutex_unlock(&p->mu);
}

void tfj_progress_stats(struct tfj_progress *p, struct tfj_progress_stats *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->mu);
	out->jobs = p->n;
	/* The job table is allocated whole at creation (tfj_progress_new). */
	out->bytes = sizeof(*p) + p->max * sizeof(*p->jobs);
	for (i = 0; i < p->n; i++) {
		out->records += p->jobs[i].nreps;
		out->bytes += p->jobs[i].cap * sizeof(*p->jobs[i].reps);
	}
	pthread_mutex_unlock(&p->mu);
}

int tfj_progress_metrics(struct tfj_progress *p, struct tfj_buf *out)
{
	struct tfj_progress_stats s;

	if (!p)
		return 0;
	tfj_progress_stats(p, &s);
	return tfj_buf_printf(out,
		"# HELP tfjob_report_progress_jobs Jobs whose reports the progress store holds.\n"
		"# TYPE tfjob_report_progress_jobs gauge\n"
		"tfjob_report_progress_jobs %zu\n"
		"# HELP tfjob_report_progress_records Pods' report records in the progress store.\n"
		"# TYPE tfjob_report_progress_records gauge\n"
		"tfjob_report_progress_records %zu\n"
		"# HELP tfjob_report_progress_bytes Approximate bytes the progress store holds.\n"
		"# TYPE tfjob_report_progress_bytes gauge\n"
		"tfjob_report_progress_bytes %zu\n",
		s.jobs, s.records, s.bytes);
}

void tfj_progress_persisted(struct tfj_progress *p, const char *job_uid, uint64_t seq)
{
	struct job *j;

	pthread_mutex_lock(&p->mu);
	if ((j = find(p, job_uid)) && seq > j->durable_seq)
		j->durable_seq = seq;
	pthread_mutex_unlock(&p->mu);
}

void tfj_progress_ack(struct tfj_progress *p, struct tfj_progress_ack *out, const char *job_uid,
		      const char *pod_uid)
{
	struct job *j;
	size_t i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->mu);
	if ((j = find(p, job_uid))) {
		for (i = 0; i < j->nreps; i++) {
			const struct tfj_plan_replica_report *r = &j->reps[i];

			if (strcmp(r->pod_uid, pod_uid))
				continue;
			if (r->seq && r->seq <= j->durable_seq)
				out->progress_ms = r->agent_ms;
			out->exit = r->exited && r->exit_seq <= j->durable_seq;
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
}
