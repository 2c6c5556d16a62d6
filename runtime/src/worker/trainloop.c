/*
 * trainloop.c - the step loops of a worker or chief (trainloop.h).
 */
#include "worker/trainloop.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "data/checkpoint.h"
#include "data/ckptdir.h"
#include "compute/model.h"
#include "worker/overlap.h"
#include "task/stop.h"

#define CKPT_KEEP 3
#define SYNC_WAIT_MS 2000

/* A ps that sends no state (an older version) makes a checkpoint of parameters only. */
int tfj_trainloop_save_checkpoint(struct tfj_session *s, char *path, size_t cap)
{
	struct tfj_ckpt ck = { 0 };
	struct tfj_ckpt_var *vars;
	struct tfj_retry r = { 0, 0 };
	size_t i;
	int rc, d;

	for (;;) {
		rc = tfj_session_pull_state(s);
		d = tfj_session_retry(s, &r, rc, "pulling parameters for a checkpoint");
		if (d == 0)
			break;
		if (d != 1)
			return d;
	}
	if (s->state_k && !s->have_state)
		tfj_log_warn("a ps sent no optimizer state; checkpoint holds parameters only");
	vars = calloc(s->layout.nvars, sizeof(*vars));
	if (!vars)
		return tfj_err_set(TFJ_ENOMEM, "checkpoint: out of memory");
	for (i = 0; i < s->layout.nvars; i++) {
		const struct tfj_tensor_info *t = &s->layout.vars[i];

		snprintf(vars[i].name, sizeof(vars[i].name), "%s", t->name);
		vars[i].rank = (uint32_t)t->rank;
		vars[i].shape[0] = t->shape[0];
		vars[i].shape[1] = t->rank > 1 ? t->shape[1] : 0;
		vars[i].count = t->count;
		vars[i].value = s->params[i];
		if (s->have_state) {
			vars[i].state = s->state[i];
			vars[i].state_count = s->state_k * t->count;
		}
	}
	ck.global_step = s->gstep;
	ck.optim_kind = (uint32_t)s->cfg->optim;
	ck.optim_steps = s->have_state ? s->optim_steps : 0;
	ck.n_vars = s->layout.nvars;
	ck.vars = vars;
	rc = tfj_ckpt_save(s->cfg->checkpoint_dir, TFJ_TRAINLOOP_CKPT_PREFIX, &ck, path, cap);
	if (rc == 0)
		tfj_ckptdir_prune(s->cfg->checkpoint_dir, TFJ_TRAINLOOP_CKPT_PREFIX, CKPT_KEEP);
	free(vars);
	return rc;
}

/*
 * Closes a progress record (tfj/progrec.h) and writes it to stdout with one
 * fwrite, flushed at once, so records from a task never interleave with its
 * other output and the agent sees each as soon as it is made.
 */
void tfj_trainloop_emit(struct tfj_progrec_writer *p)
{
	size_t n = tfj_progrec_end(p);

	fwrite(p->buf, 1, n, stdout);
	fflush(stdout);
}

void tfj_trainloop_free_values(float **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* What a retry refills an empty ps with: the initial values, for the coordinator only. */
static const float *const *reinit_vals(const struct tfj_train *t)
{
	return t->cfg->is_coordinator ? (const float *const *)t->init_vals : NULL;
}

static int check_stop(const struct tfj_train *t)
{
	if (tfj_stop_requested())
		return tfj_err_set(TFJ_ECANCELED, "stopped by signal");
	if (t->cfg->fail_after_s > 0 && tfj_session_now() - t->s.t0 > t->cfg->fail_after_s)
		return tfj_err_set(TFJ_EUNAVAIL, "--fail-after %.1fs reached (test hook)",
				   t->cfg->fail_after_s);
	return 0;
}

enum pull_next {
	PULL_GO,     /* parameters are here: compute a step */
	PULL_AGAIN,  /* sync: the step is not complete yet, pull again */
	PULL_DONE,   /* training is over */
};

/* Pulls the parameters for the next step; in sync mode, of the step after ours. */
static int pull_step(struct tfj_train *t, enum pull_next *next)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_session *s = &t->s;
	size_t j;
	int rc, behind = 0;

	*next = PULL_GO;
	/* Sync: wait for the step after the one we contributed to. */
	for (j = 0; j < s->nps; j++)
		t->min_step[j] = (cfg->sync && t->pushed) ? s->shard_step[j] + 1 : 0;
	rc = tfj_session_pull_retry(s, t->min_step, cfg->sync ? SYNC_WAIT_MS : 0,
			reinit_vals(t), t->init_step);
	if (rc)
		return rc;
	if (s->finished || s->gstep >= t->max_steps) {
		*next = PULL_DONE;
		return 0;
	}
	if (!cfg->sync || !t->pushed)
		return 0;
	for (j = 0; j < s->nps; j++)
		if (s->shard_step[j] < t->min_step[j])
			behind = 1;
	if (behind) {
		/*
		 * Nobody completed the step within the wait (a replica is
		 * slow or gone): wait again, but not past --peer-timeout.
		 */
		if (t->r.first_fail == 0)
			t->r.first_fail = tfj_session_now();
		if (tfj_session_now() - t->r.first_fail <= cfg->peer_timeout_s) {
			*next = PULL_AGAIN;
			return 0;
		}
		return tfj_err_set(TFJ_EUNAVAIL, "sync step %" PRId64 " did not "
				   "complete within --peer-timeout %.0fs (replicas "
				   "missing?)", s->gstep, cfg->peer_timeout_s);
	}
	t->r.first_fail = 0;
	t->r.delay = 0;
	return 0;
}

/* The coordinator checkpoints every --checkpoint-steps / --checkpoint-secs; a failure retries. */
static void maybe_checkpoint(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_session *s = &t->s;
	char path[TFJ_RT_PATH_MAX + 64];
	int64_t since = t->last_ckpt_step < 0 ? t->init_step : t->last_ckpt_step;

	if (!cfg->is_coordinator || !cfg->checkpoint_dir[0] || s->gstep == t->last_ckpt_step)
		return;
	if (!(cfg->checkpoint_steps && s->gstep - since >= cfg->checkpoint_steps) &&
	    !(cfg->checkpoint_secs > 0 &&
	      tfj_session_now() - t->last_ckpt_t >= cfg->checkpoint_secs))
		return;
	if (tfj_trainloop_save_checkpoint(s, path, sizeof(path)) == 0)
		tfj_log_info("checkpoint saved", "path", path);
	else
		tfj_log_warn("checkpoint failed; will retry", "detail", tfj_err_detail());
	t->last_ckpt_step = s->gstep;
	t->last_ckpt_t = tfj_session_now();
}

/*
 * One batch's gradients on `params` into `grads`; *loss and *n for the
 * progress record. Counts computed steps for the --inject-nan-at hook.
 */
static int compute_step(struct tfj_train *t, float **params, float **grads, float *loss, size_t *n,
			tfj_model_ready_fn ready, void *ud)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	const float *x;
	const uint8_t *y;
	int rc;

	rc = tfj_data_iter_next(&t->it, &x, &y, n);
	if (rc)
		return rc;
	/* Test hook: a poisoned parameter makes the loss NaN, as a diverging run would. */
	t->computed++;
	if (cfg->inject_nan_at > 0 && t->computed == cfg->inject_nan_at)
		params[0][0] = NAN;
	if (t->towers)
		rc = tfj_towers_grad(t->towers, (const float *const *)params, x, y, *n, grads, loss,
				     ready, ud);
	else
		rc = tfj_model_grad_ready(t->s.model, (const float *const *)params, x, y, *n, grads,
					  loss, ready, ud);
	if (rc == TFJ_ENUMERIC)
		tfj_err_set(rc, "loss became NaN/Inf at local step %" PRId64
			    " (learning rate too high?)", t->computed);
	return rc;
}

/* A pushed step enters the progress interval. */
static void count_step(struct tfj_train *t, float loss, size_t n, int stale)
{
	t->pushed = 1;
	t->stale_total += stale;
	t->local++;
	t->examples += n;
	t->loss_acc += loss;
	t->loss_n++;
}

/* Split of the step that just ended into the interval and run totals. */
static void add_split(struct tfj_train *t, double comp, double pull, double push, double wait)
{
	t->t_comp += comp;
	t->t_pull += pull;
	t->t_push += push;
	t->t_wait += wait;
	t->all_comp += comp;
	t->all_pull += pull;
	t->all_push += push;
	t->all_wait += wait;
	t->all_steps++;
}

/* One batch: gradients on the pulled parameters, pushed with retries. t0: compute start. */
static int compute_and_push(struct tfj_train *t, double t0, double pull_s)
{
	struct tfj_session *s = &t->s;
	size_t n;
	float loss;
	double t1;
	int rc, stale = 0;

	rc = compute_step(t, s->params, s->grads, &loss, &n, NULL, NULL);
	if (rc)
		return rc;
	t1 = tfj_session_now();
	rc = tfj_session_push_retry(s, t->max_steps, &stale, reinit_vals(t), t->init_step);
	if (rc)
		return rc;
	{
		double push = tfj_session_now() - t1;

		add_split(t, t1 - t0, pull_s, push, pull_s + push);
	}
	count_step(t, loss, n, stale);
	return 0;
}

/* The progress record of the interval that just ended; starts the next one. */
static void report_progress(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_progrec_writer p;
	char line[TFJ_PROGREC_MAX + 1];
	double now = tfj_session_now();
	double steps = (double)(t->local - t->local_last);
	double loss = t->loss_acc / (double)t->loss_n;
	double eps = (double)(t->examples - t->ex_last) / (now - t->t_last);

	tfj_progrec_begin(&p, line, sizeof(line), tfj_role_name(cfg->role), cfg->index);
	tfj_progrec_int(&p, TFJ_PROGREC_KEY_STEP, t->s.gstep);
	tfj_progrec_int(&p, TFJ_PROGREC_KEY_MAX_STEPS, t->max_steps);
	tfj_progrec_int(&p, TFJ_PROGREC_KEY_LOCAL_STEP, t->local);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_LOSS, loss);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, eps);
	tfj_progrec_int(&p, TFJ_PROGREC_KEY_STALE, t->stale_total);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_PULL_MS, t->t_pull * 1e3 / steps);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_COMPUTE_MS, t->t_comp * 1e3 / steps);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_PUSH_MS, t->t_push * 1e3 / steps);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_WAIT_MS, t->t_wait * 1e3 / steps);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_STEP_MS, (now - t->t_last) * 1e3 / steps);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_TIME_S, now - t->s.t0);
	tfj_summary_scalars(t->sum, t->s.gstep, (const struct tfj_summary_value[]){
		{ "loss", loss },
		{ "examples_per_sec", eps },
		{ "global_step/sec", tfj_summary_rate(t->sum, t->s.gstep) } }, 3);
	t->t_pull = t->t_comp = t->t_push = t->t_wait = 0;
	t->local_last = t->local;
	tfj_trainloop_emit(&p);
	t->t_last = now;
	t->ex_last = t->examples;
	t->loss_acc = 0;
	t->loss_n = 0;
}

/* Pull, (checkpoint,) compute, push until max_steps or the chief's Finish. */
static int train_loop(struct tfj_train *t)
{
	for (;;) {
		enum pull_next next;
		double ta, tb;
		int rc;

		rc = check_stop(t);
		if (rc)
			return rc;
		ta = tfj_session_now();
		rc = pull_step(t, &next);
		if (rc)
			return rc;
		if (next == PULL_DONE)
			return 0;
		if (next == PULL_AGAIN)
			continue;
		maybe_checkpoint(t);
		tb = tfj_session_now();
		rc = compute_and_push(t, tb, tb - ta);
		if (rc)
			return rc;
		if (t->local % t->cfg->progress_steps == 0)
			report_progress(t);
	}
}

static void swap_arrays(float ***a, float ***b)
{
	float **tmp = *a;

	*a = *b;
	*b = tmp;
}

/* A second set of per-variable arrays shaped like the parameters. */
static float **alloc_like(const struct tfj_session *s)
{
	float **v = calloc(s->layout.nvars, sizeof(*v));

	for (size_t i = 0; v && i < s->layout.nvars; i++) {
		v[i] = calloc(s->layout.counts[i], sizeof(float));
		if (!v[i]) {
			while (i--)
				free(v[i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

/*
 * Asynchronous training with the transfers overlapped (overlap.h): while
 * step k computes on `front`, the transfer thread pushes step k-1's
 * gradients and pulls the parameters step k+1 computes on. The session's
 * arrays are the thread's; `front` and `gfront` are the compute's; they
 * trade places (pointer swaps) only while the thread is idle. When the
 * pull says training is over, the step just computed is dropped, as the
 * sequential loop would not have computed it.
 */
static int train_loop_overlap(struct tfj_train *t)
{
	struct tfj_session *s = &t->s;
	struct tfj_overlap *o = NULL;
	float **front = NULL, **gfront = NULL;
	float pend_loss = 0;
	size_t pend_n = 0;
	int have_grads = 0, rc;
	enum pull_next next;

	/* The first parameters, pulled the sequential way. */
	do {
		rc = check_stop(t);
		if (rc == 0)
			rc = pull_step(t, &next);
	} while (rc == 0 && next == PULL_AGAIN);
	if (rc || next == PULL_DONE)
		return rc;
	front = alloc_like(s);
	gfront = alloc_like(s);
	if (!front || !gfront) {
		rc = tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		goto out;
	}
	swap_arrays(&front, &s->params);
	rc = tfj_overlap_new(&o, s, reinit_vals(t), t->init_step);
	if (rc)
		goto out;
	for (;;) {
		struct tfj_overlap_result res;
		double t0, t1, t2;
		float loss = 0;
		size_t n = 0;
		int crc, wrc;

		rc = check_stop(t);
		if (rc)
			break;
		/* The thread is idle here: a checkpoint may use the session. */
		maybe_checkpoint(t);
		if (have_grads)
			swap_arrays(&gfront, &s->grads);
		rc = tfj_overlap_submit(o, have_grads, t->max_steps);
		if (rc)
			break;
		t0 = tfj_session_now();
		crc = compute_step(t, front, gfront, &loss, &n, NULL, NULL);
		t1 = tfj_session_now();
		wrc = tfj_overlap_wait(o, &res);
		t2 = tfj_session_now();
		/* A transfer error names the peer; it wins over a compute error. */
		rc = wrc ? wrc : crc;
		if (rc)
			break;
		add_split(t, t1 - t0, res.pull_s, res.push_s, t2 - t1);
		if (res.pushed) {
			count_step(t, pend_loss, pend_n, res.stale);
			if (t->local % t->cfg->progress_steps == 0)
				report_progress(t);
		}
		have_grads = 1;
		pend_loss = loss;
		pend_n = n;
		swap_arrays(&front, &s->params);
		if (s->finished || s->gstep >= t->max_steps)
			break;
	}
out:
	tfj_overlap_free(o);
	/* The session keeps the newest parameters; the spare arrays go. */
	if (front && gfront && rc == 0)
		swap_arrays(&front, &s->params);
	tfj_trainloop_free_values(front, s->layout.nvars);
	tfj_trainloop_free_values(gfront, s->layout.nvars);
	return rc;
}

/* The model's ready callback in push mode: hand the finished layer to the transfer thread. */
static void layer_ready(void *ud, size_t first_var)
{
	tfj_overlap_ready(ud, first_var);
}

/*
 * Asynchronous training with the push overlapped (--overlap push,
 * overlap.h): the sequential loop, except that each layer's gradients go
 * to the ps while the backward pass computes the layers below it. The
 * pull waits for the whole push, so every step computes on parameters as
 * fresh as the sequential loop's, and accuracy is the same.
 */
static int train_loop_push(struct tfj_train *t)
{
	struct tfj_session *s = &t->s;
	struct tfj_overlap *o = NULL;
	int rc;

	rc = tfj_overlap_new(&o, s, reinit_vals(t), t->init_step);
	if (rc)
		return rc;
	for (;;) {
		struct tfj_overlap_result res;
		enum pull_next next;
		double ta, tb, tc, td;
		float loss = 0;
		size_t n = 0;
		int crc, wrc;

		if ((rc = check_stop(t)) != 0)
			break;
		ta = tfj_session_now();
		if ((rc = pull_step(t, &next)) != 0 || next == PULL_DONE)
			break;
		if (next == PULL_AGAIN)
			continue;
		maybe_checkpoint(t);
		tb = tfj_session_now();
		if ((rc = tfj_overlap_submit_parts(o, t->max_steps)) != 0)
			break;
		crc = compute_step(t, s->params, s->grads, &loss, &n, layer_ready, o);
		if (crc)
			tfj_overlap_abandon(o);
		tc = tfj_session_now();
		wrc = tfj_overlap_wait(o, &res);
		td = tfj_session_now();
		/* A compute error is the step's own; a transfer error names the peer. */
		rc = crc ? crc : wrc;
		if (rc)
			break;
		t->parts += res.parts;
		/* Wait: the push left after the pass (the first layer's, mostly). */
		add_split(t, tc - tb, tb - ta, res.push_s, (tb - ta) + (td - tc));
		count_step(t, loss, n, res.stale);
		if (t->local % t->cfg->progress_steps == 0)
			report_progress(t);
	}
	tfj_overlap_free(o);
	return rc;
}

static const char *mode_name(const struct tfj_rtconfig *cfg)
{
	if (cfg->sync)
		return "sync";
	switch (cfg->overlap) {
	case TFJ_OVERLAP_STEP: return "async, overlapped";
	case TFJ_OVERLAP_PUSH: return "async, push overlapped";
	default: return "async";
	}
}

/*
 * The worker's step split over the whole run, logged at the end so the
 * goal "step <= 1.25 x max(compute, pull + push)" can be checked (issue
 * #18); the progress records carry the same split per interval.
 */
static void log_split(const struct tfj_train *t)
{
	double n = (double)t->all_steps, comp, pull, push, wait, step, floor;

	if (t->all_steps == 0)
		return;
	comp = t->all_comp * 1e3 / n;
	pull = t->all_pull * 1e3 / n;
	push = t->all_push * 1e3 / n;
	wait = t->all_wait * 1e3 / n;
	step = (tfj_session_now() - t->all_t0) * 1e3 / n;
	floor = comp > pull + push ? comp : pull + push;
	tfj_log_fmt(TFJ_LOG_INFO, "%s step split (%s, %" PRId64 " steps): compute %.3f ms, "
		    "pull %.3f ms, push %.3f ms, wait %.3f ms, step %.3f ms = %.2f x "
		    "max(compute, pull+push); pushes per step %.2f", t->s.task, mode_name(t->cfg),
		    t->all_steps, comp, pull, push, wait, step, floor > 0 ? step / floor : 0.0,
		    t->parts ? (double)t->parts / n : 1.0);
}

int tfj_trainloop_run(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	int rc;

	t->all_t0 = tfj_session_now();
	if (cfg->sync || cfg->overlap == TFJ_OVERLAP_OFF)
		rc = train_loop(t);
	else if (cfg->overlap == TFJ_OVERLAP_PUSH)
		rc = train_loop_push(t);
	else
		rc = train_loop_overlap(t);
	log_split(t);
	return rc;
}
