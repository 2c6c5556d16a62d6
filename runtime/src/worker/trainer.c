/*
 * trainer.c - worker, chief and evaluator tasks (trainer.h): set-up, the
 * coordinator's start and end, the evaluator; the step loops are trainloop.c.
 */
#include "worker/trainer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>
#include <tfj/progrec.h>

#include "data/checkpoint.h"
#include "data/ckptdir.h"
#include "compute/compute.h"
#include "data/data.h"
#include <tfj/exitcode.h>
#include "compute/model.h"
#include "task/layout.h"
#include "task/stop.h"
#include "worker/session.h"
#include "worker/trainloop.h"

/* Loads a split, cut to --train-limit (train only). */
static int load_split(struct tfj_dataset *ds, const struct tfj_rtconfig *cfg, int train)
{
	int rc = tfj_data_load_named(ds, cfg->dataset, cfg->data_dir[0] ? cfg->data_dir : NULL,
				     train, cfg->synthetic_examples, cfg->seed);

	if (rc)
		return rc;
	/* Keeping the first N examples only shortens n; the arrays stay owned as before. */
	if (train && cfg->train_limit && cfg->train_limit < ds->n)
		ds->n = cfg->train_limit;
	return 0;
}

/* mkdir -p for --checkpoint-dir and --logdir (the coordinator and the evaluator write). */
static int make_dirs(const char *dir)
{
	char path[TFJ_RT_PATH_MAX];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(path))
		return tfj_err_set(TFJ_EINVAL, "directory \"%.60s\": bad path", dir);
	memcpy(path, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0750) != 0 && errno != EEXIST)
			return tfj_err_set(TFJ_EIO, "cannot create %s: %s", path, strerror(errno));
		path[i] = i < n ? '/' : '\0';
	}
	return 0;
}

/*
 * Takes the optimizer state of a checkpoint into *state (per variable,
 * state_k blocks of its count) when the checkpoint holds this optimizer's
 * state for every variable; else leaves *state NULL: the ps start afresh.
 */
static int initial_state(float ***state, struct tfj_session *s, const struct tfj_ckpt *ck)
{
	size_t i, k = s->state_k;
	float **st;

	*state = NULL;
	if (k == 0)
		return 0;
	for (i = 0; i < s->layout.nvars; i++) {
		const struct tfj_ckpt_var *v = &ck->vars[tfj_ckpt_find(ck, s->layout.vars[i].name)];

		if (ck->optim_kind != (uint32_t)s->cfg->optim || v->state_count != k * v->count) {
			tfj_log_fmt(TFJ_LOG_INFO, "checkpoint holds no %s state (written by %s%s); "
				    "optimizer state starts afresh", tfj_optim_name(s->cfg->optim),
				    tfj_optim_name((enum tfj_optim_kind)ck->optim_kind),
				    v->state_count ? "" : ", without state");
			return 0;
		}
	}
	st = calloc(s->layout.nvars, sizeof(*st));
	if (!st)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	for (i = 0; i < s->layout.nvars; i++) {
		const struct tfj_ckpt_var *v = &ck->vars[tfj_ckpt_find(ck, s->layout.vars[i].name)];

		st[i] = malloc(v->state_count * sizeof(float));
		if (!st[i]) {
			while (i--)
				free(st[i]);
			free(st);
			return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		}
		memcpy(st[i], v->state, v->state_count * sizeof(float));
	}
	tfj_log_fmt(TFJ_LOG_INFO, "restoring %s optimizer state (%" PRId64 " updates)",
		    tfj_optim_name(s->cfg->optim), ck->optim_steps);
	*state = st;
	return 0;
}

/*
 * Initial values for the ps tasks: newest checkpoint (with its optimizer
 * state into *state when it has this optimizer's, else NULL), else seeded.
 */
static int initial_values(struct tfj_session *s, int64_t *step, float ***state,
			  int64_t *optim_steps)
{
	char path[TFJ_RT_PATH_MAX + 64];
	struct tfj_ckpt ck = { 0 };
	size_t i;
	int rc;

	*step = 0;
	*state = NULL;
	*optim_steps = 0;
	if (s->cfg->checkpoint_dir[0]) {
		rc = tfj_ckptdir_latest(path, sizeof(path), step, s->cfg->checkpoint_dir, TFJ_TRAINLOOP_CKPT_PREFIX);
		if (rc == 0) {
			rc = tfj_ckpt_load(&ck, path);
			for (i = 0; rc == 0 && i < s->layout.nvars; i++) {
				int vi = tfj_ckpt_find(&ck, s->layout.vars[i].name);

				if (vi < 0 || ck.vars[vi].count != s->layout.counts[i])
					rc = tfj_err_set(TFJ_EPARSE, "checkpoint %s does not fit the "
							 "model (variable %s)", path,
							 s->layout.vars[i].name);
				else
					memcpy(s->params[i], ck.vars[vi].value,
					       s->layout.counts[i] * sizeof(float));
			}
			if (rc == 0) {
				*step = ck.global_step;
				*optim_steps = ck.optim_steps;
				tfj_log_info("restoring from checkpoint", "path", path);
				rc = initial_state(state, s, &ck);
			}
			tfj_ckpt_free(&ck);
			if (rc)
				s->exit_hint = TFJ_EXIT_CHECKPOINT;
			return rc;
		}
		if (rc != TFJ_ENOTFOUND)
			return rc;
	}
	return tfj_model_init_params(s->model, s->cfg->seed, s->params);
}

/*
 * The exit for a directory (--logdir's run, --checkpoint-dir) a task could
 * not set up. One the task may not write (the volume's owner or mode, a
 * read-only mount) does not heal when the pod is restarted: the pod's
 * fsGroup or its volume must change, so the exit is permanent (usage), not
 * a retryable io that would spend the job's backoffLimit for nothing. The
 * deepest part of DIR that exists decides.
 */
static int dir_exit(const char *dir)
{
	char path[TFJ_RT_PATH_MAX];
	size_t n = strlen(dir);
	char *slash;

	if (n == 0 || n >= sizeof(path))
		return TFJ_EXIT_USAGE;
	memcpy(path, dir, n + 1);
	while (access(path, F_OK) != 0 && errno == ENOENT && (slash = strrchr(path, '/'))) {
		if (slash == path) {
			path[1] = '\0';
			break;
		}
		*slash = '\0';
	}
	if (access(path, W_OK | X_OK) != 0 && (errno == EACCES || errno == EROFS || errno == EPERM))
		return TFJ_EXIT_USAGE;
	return TFJ_EXIT_IO;
}

/* --logdir's run directory and event file (summary/summary.h); a failure ends the task. */
static int open_summary(struct tfj_summary **w, struct tfj_session *s, const char *logdir,
			const char *run)
{
	char dir[TFJ_RT_PATH_MAX];
	int rc = make_dirs(logdir), n;

	if (rc == 0)
		rc = tfj_summary_open(w, logdir, run);
	if (rc) {
		/* A run path too long to hold is the usage error dir_exit gives an empty one. */
		n = snprintf(dir, sizeof(dir), "%s/%s", logdir, run);
		s->exit_hint = dir_exit(n >= 0 && (size_t)n < sizeof(dir) ? dir : "");
	}
	return rc;
}

static int exit_for(struct tfj_session *s, int rc)
{
	if (rc == TFJ_ENUMERIC)
		return TFJ_EXIT_NUMERIC;
	if (s->exit_hint)
		return s->exit_hint;
	return tfj_exitcode_from_err(rc);
}


/* Loads the training split and this replica's shard of it, and the batch iterator. */
static int prepare_data(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_dataset full = { 0 };
	int rc;

	rc = load_split(&full, cfg, 1);
	if (rc) {
		t->s.exit_hint = TFJ_EXIT_DATA;
		goto out;
	}
	rc = tfj_data_shard(&t->mine, &full, (size_t)cfg->replica, (size_t)cfg->nreplicas);
	if (rc) {
		t->s.exit_hint = TFJ_EXIT_USAGE;
		goto out;
	}
	t->max_steps = cfg->max_steps ? cfg->max_steps : tfj_rtconfig_steps_for(cfg, full.n);
	tfj_data_free(&full);
	rc = tfj_data_iter_init(&t->it, &t->mine, cfg->batch_size,
				cfg->seed + (uint64_t)cfg->replica);
	if (rc)
		goto out;
	t->it_ok = 1;
out:
	tfj_data_free(&full);
	return rc;
}

/*
 * The coordinator's extra start: the checkpoint directory, the test split
 * and the initial values (newest checkpoint or seeded), a copy of which is
 * kept for refilling a ps that comes back empty.
 */
static int prepare_coordinator(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_session *s = &t->s;
	int rc;

	if (cfg->checkpoint_dir[0] && (rc = make_dirs(cfg->checkpoint_dir)) != 0) {
		s->exit_hint = dir_exit(cfg->checkpoint_dir);
		return rc;
	}
	rc = load_split(&t->test, cfg, 0);
	if (rc) {
		s->exit_hint = TFJ_EXIT_DATA;
		return rc;
	}
	rc = initial_values(s, &t->init_step, &t->init_state, &t->init_optim_steps);
	if (rc)
		return rc;
	/* Sent with every Init, including the refill of a ps that comes back empty. */
	s->init_state = (const float *const *)t->init_state;
	s->init_optim_steps = t->init_optim_steps;
	/* Keep the initial values: a ps that restarts empty is refilled from them. */
	t->init_vals = calloc(s->layout.nvars, sizeof(*t->init_vals));
	if (!t->init_vals)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	for (size_t i = 0; i < s->layout.nvars; i++) {
		t->init_vals[i] = malloc(s->layout.counts[i] * sizeof(float));
		if (!t->init_vals[i])
			return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		memcpy(t->init_vals[i], s->params[i], s->layout.counts[i] * sizeof(float));
	}
	return 0;
}

/* Waits (with retries) until every ps is initialised, then starts the clocks. */
static int wait_for_ps(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_session *s = &t->s;
	int rc;

	t->min_step = calloc(s->nps, sizeof(*t->min_step));
	if (!t->min_step)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	do {
		rc = tfj_session_ensure_ready(s, (const float *const *)t->init_vals, t->init_step);
	} while ((rc = tfj_session_retry(s, &t->r, rc, "waiting for the ps tasks")) == 1);
	if (rc)
		return rc;
	tfj_log_fmt(TFJ_LOG_INFO, "%s: replica %d of %d, %zu examples, %s%s, max_steps %" PRId64,
		    s->task, cfg->replica, cfg->nreplicas, t->mine.n, cfg->sync ? "sync" : "async",
		    cfg->is_coordinator ? ", coordinator" : "", t->max_steps);
	t->t_train0 = tfj_session_now();
	t->t_last = t->t_train0;
	t->last_ckpt_t = t->t_train0;
	t->last_ckpt_step = -1;
	return 0;
}

/* A signal, or the --fail-after test hook, ends the loop. */
/*
 * The coordinator's end: the final parameters (and checkpoint), the test
 * set evaluation as the final progress record, then Finish to every ps.
 */
static int finish_coordinator(struct tfj_train *t)
{
	const struct tfj_rtconfig *cfg = t->cfg;
	struct tfj_session *s = &t->s;
	double train_s = tfj_session_now() - t->t_train0;
	float acc = 0, tloss = 0;
	struct tfj_progrec_writer p;
	char line[TFJ_PROGREC_MAX + 1];
	char path[TFJ_RT_PATH_MAX + 64];
	double per = (double)cfg->batch_size * (cfg->sync ? cfg->replicas_to_aggregate : 1);
	int rc;

	/* The final parameters: what the ps hold now. */
	rc = tfj_session_pull_retry(s, NULL, 0, NULL, 0);
	if (rc)
		return rc;
	if (cfg->checkpoint_dir[0]) {
		rc = tfj_trainloop_save_checkpoint(s, path, sizeof(path));
		if (rc) {
			s->exit_hint = TFJ_EXIT_IO;
			return rc;
		}
		tfj_log_info("final checkpoint saved", "path", path);
	}
	rc = tfj_model_eval(s->model, (const float *const *)s->params, t->test.x, t->test.y,
			    t->test.n, &acc, &tloss);
	if (rc)
		return rc;
	tfj_progrec_begin(&p, line, sizeof(line), tfj_role_name(cfg->role), cfg->index);
	tfj_progrec_bool(&p, TFJ_PROGREC_KEY_FINAL, 1);
	tfj_progrec_int(&p, TFJ_PROGREC_KEY_STEP, s->gstep);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_TEST_ACCURACY, acc);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_TEST_LOSS, tloss);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_EXAMPLES, (double)(s->gstep - t->init_step) * per);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC,
			 (double)(s->gstep - t->init_step) * per / train_s);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_TRAIN_S, train_s);
	tfj_progrec_num(&p, TFJ_PROGREC_KEY_TIME_S, tfj_session_now() - s->t0);
	tfj_trainloop_emit(&p);
	tfj_summary_scalars(t->sum, s->gstep, (const struct tfj_summary_value[]){
		{ "test_accuracy", acc }, { "test_loss", tloss } }, 2);
	t->r.first_fail = 0;
	t->r.delay = 0;
	do {
		rc = tfj_session_finish(s);
	} while ((rc = tfj_session_retry(s, &t->r, rc, "telling the ps tasks to finish")) == 1);
	return rc;
}

static void train_free(struct tfj_train *t)
{
	tfj_trainloop_free_values(t->init_vals, t->s.layout.nvars);
	tfj_trainloop_free_values(t->init_state, t->s.layout.nvars);
	free(t->min_step);
	if (t->it_ok)
		tfj_data_iter_free(&t->it);
	tfj_data_free(&t->mine);
	tfj_data_free(&t->test);
	tfj_session_free(&t->s);
	tfj_summary_free(t->sum);
	tfj_towers_free(t->towers);
}

int tfj_trainer_main(const struct tfj_rtconfig *cfg)
{
	struct tfj_train t;
	int rc, code = TFJ_EXIT_OK;

	memset(&t, 0, sizeof(t));
	t.cfg = cfg;
	rc = tfj_session_init(&t.s, cfg);
	if (rc == 0)
		rc = prepare_data(&t);
	if (rc == 0 && cfg->is_coordinator)
		rc = prepare_coordinator(&t);
	if (rc == 0 && cfg->is_coordinator && cfg->logdir[0])
		rc = open_summary(&t.sum, &t.s, cfg->logdir, "train");
	if (rc == 0 && cfg->towers > 1) {
		rc = tfj_towers_new(&t.towers, &cfg->spec, cfg->device, (int)cfg->towers);
		if (rc)
			t.s.exit_hint = TFJ_EXIT_DEVICE;
		else
			tfj_log_fmt(TFJ_LOG_INFO, "%s: %d towers split each batch (in-graph)",
				    t.s.task, (int)cfg->towers);
	}
	if (rc == 0)
		rc = wait_for_ps(&t);
	if (rc == 0)
		rc = tfj_trainloop_run(&t);
	if (rc == 0 && cfg->is_coordinator)
		rc = finish_coordinator(&t);
	if (rc == 0) {
		tfj_log_fmt(TFJ_LOG_INFO, "%s done at step %" PRId64 " after %" PRId64
			    " local steps", t.s.task, t.s.gstep, t.local);
	} else {
		code = exit_for(&t.s, rc);
		tfj_log_error("task failed", "task", t.s.task, "error", tfj_err_name(rc), "detail",
			      tfj_err_detail(), "exit", tfj_exitcode_name(code));
	}
	train_free(&t);
	return code;
}

int tfj_evaluator_main(const struct tfj_rtconfig *cfg)
{
	struct tfj_session s;
	struct tfj_dataset test = { 0 };
	struct tfj_retry r = { 0, 0 };
	int64_t *min_step = NULL, last = -1;
	struct tfj_summary *sum = NULL;
	int rc, code = TFJ_EXIT_OK;
	size_t j;

	rc = tfj_session_init(&s, cfg);
	if (rc)
		goto fail;
	rc = load_split(&test, cfg, 0);
	if (rc) {
		s.exit_hint = TFJ_EXIT_DATA;
		goto fail;
	}
	if (cfg->logdir[0] && (rc = open_summary(&sum, &s, cfg->logdir, "eval")) != 0)
		goto fail;
	min_step = calloc(s.nps, sizeof(*min_step));
	if (!min_step) {
		rc = tfj_err_set(TFJ_ENOMEM, "evaluator: out of memory");
		goto fail;
	}
	do {
		rc = tfj_session_ensure_ready(&s, NULL, 0);
	} while ((rc = tfj_session_retry(&s, &r, rc, "waiting for the ps tasks")) == 1);
	if (rc)
		goto fail;
	for (;;) {
		float acc = 0, loss = 0;
		struct tfj_progrec_writer p;
	char line[TFJ_PROGREC_MAX + 1];
		uint32_t wait = (uint32_t)(cfg->eval_secs * 1000);

		if (tfj_stop_requested()) {
			rc = tfj_err_set(TFJ_ECANCELED, "stopped by signal");
			goto fail;
		}
		/*
		 * A parked Pull for a step that will not come soon doubles as the
		 * evaluation timer, and it returns at once when the chief finishes.
		 */
		for (j = 0; j < s.nps; j++)
			min_step[j] = last < 0 ? 0 : INT64_MAX;
		rc = tfj_session_pull_retry(&s, min_step, last < 0 ? 0 : wait, NULL, 0);
		if (rc)
			goto fail;
		if (s.gstep != last || s.finished) {
			rc = tfj_model_eval(s.model, (const float *const *)s.params, test.x, test.y,
					    test.n, &acc, &loss);
			if (rc)
				goto fail;
			tfj_progrec_begin(&p, line, sizeof(line), "evaluator", cfg->index);
			tfj_progrec_int(&p, TFJ_PROGREC_KEY_STEP, s.gstep);
			tfj_progrec_num(&p, TFJ_PROGREC_KEY_ACCURACY, acc);
			tfj_progrec_num(&p, TFJ_PROGREC_KEY_LOSS, loss);
			if (s.finished)
				tfj_progrec_bool(&p, TFJ_PROGREC_KEY_FINAL, 1);
			tfj_progrec_num(&p, TFJ_PROGREC_KEY_TIME_S, tfj_session_now() - s.t0);
			tfj_trainloop_emit(&p);
			tfj_summary_scalars(sum, s.gstep, (const struct tfj_summary_value[]){
				{ "accuracy", acc }, { "loss", loss } }, 2);
			last = s.gstep;
		}
		if (s.finished || (cfg->max_steps && s.gstep >= cfg->max_steps))
			break;
	}
	goto out;
fail:
	code = exit_for(&s, rc);
	tfj_log_error("task failed", "task", s.task, "error", tfj_err_name(rc), "detail",
		      tfj_err_detail(), "exit", tfj_exitcode_name(code));
out:
	tfj_summary_free(sum);
	free(min_step);
	tfj_data_free(&test);
	tfj_session_free(&s);
	return code;
}
