/*
 * trainer.c - worker, chief and evaluator loops (trainer.h).
 */
#include "trainer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "checkpoint.h"
#include "ckptdir.h"
#include "compute.h"
#include "data.h"
#include "exitcode.h"
#include "model.h"
#include "layout.h"
#include "progress.h"
#include "psserver.h"
#include "session.h"

#define CKPT_PREFIX "model"
#define CKPT_KEEP 3
#define SYNC_WAIT_MS 2000


/* Loads a split, cut to --train_limit (train only). */
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

/* mkdir -p for the checkpoint directory (the chief is the one that writes). */
static int make_dirs(const char *dir)
{
	char path[TFJ_RT_PATH_MAX];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(path))
		return tfj_err_set(TFJ_EINVAL, "checkpoint dir: bad path");
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
	for (i = 0; i < s->plan.nvars; i++) {
		const struct tfj_ckpt_var *v = &ck->vars[tfj_ckpt_find(ck, s->plan.vars[i].name)];

		if (ck->optim_kind != (uint32_t)s->cfg->optim || v->state_count != k * v->count) {
			tfj_log_fmt(TFJ_LOG_INFO, "checkpoint holds no %s state (written by %s%s); "
				    "optimizer state starts afresh", tfj_optim_name(s->cfg->optim),
				    tfj_optim_name((enum tfj_optim_kind)ck->optim_kind),
				    v->state_count ? "" : ", without state");
			return 0;
		}
	}
	st = calloc(s->plan.nvars, sizeof(*st));
	if (!st)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	for (i = 0; i < s->plan.nvars; i++) {
		const struct tfj_ckpt_var *v = &ck->vars[tfj_ckpt_find(ck, s->plan.vars[i].name)];

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
		rc = tfj_ckptdir_latest(path, sizeof(path), step, s->cfg->checkpoint_dir, CKPT_PREFIX);
		if (rc == 0) {
			rc = tfj_ckpt_load(&ck, path);
			for (i = 0; rc == 0 && i < s->plan.nvars; i++) {
				int vi = tfj_ckpt_find(&ck, s->plan.vars[i].name);

				if (vi < 0 || ck.vars[vi].count != s->plan.counts[i])
					rc = tfj_err_set(TFJ_EPARSE, "checkpoint %s does not fit the "
							 "model (variable %s)", path,
							 s->plan.vars[i].name);
				else
					memcpy(s->params[i], ck.vars[vi].value,
					       s->plan.counts[i] * sizeof(float));
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
 * Pulls parameters and optimizer state from every ps (retrying like any
 * pull) and writes them as one checkpoint. A ps that sends no state (an
 * older version) makes a checkpoint of parameters only.
 */
static int save_checkpoint(struct tfj_session *s, char *path, size_t cap)
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
	vars = calloc(s->plan.nvars, sizeof(*vars));
	if (!vars)
		return tfj_err_set(TFJ_ENOMEM, "checkpoint: out of memory");
	for (i = 0; i < s->plan.nvars; i++) {
		const struct tfj_tensor_info *t = &s->plan.vars[i];

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
	ck.n_vars = s->plan.nvars;
	ck.vars = vars;
	rc = tfj_ckpt_save(s->cfg->checkpoint_dir, CKPT_PREFIX, &ck, path, cap);
	if (rc == 0)
		tfj_ckptdir_prune(s->cfg->checkpoint_dir, CKPT_PREFIX, CKPT_KEEP);
	free(vars);
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


int tfj_trainer_main(const struct tfj_rtconfig *cfg)
{
	struct tfj_session s;
	struct tfj_dataset full = { 0 }, mine = { 0 }, test = { 0 };
	struct tfj_data_iter it;
	struct tfj_retry r = { 0, 0 };
	int64_t *min_step = NULL, max_steps, local = 0, last_ckpt_step, init_step = 0;
	int64_t last_progress_step = 0, stale_total = 0;
	double last_ckpt_t, t_train0, t_last = 0, loss_acc = 0;
	size_t loss_n = 0, examples = 0, ex_last = 0;
	double t_pull = 0, t_comp = 0, t_push = 0, ta, tb; /* per progress interval */
	int rc, code = TFJ_EXIT_OK, pushed = 0, it_ok = 0;
	float **init_vals = NULL, **init_state = NULL;
	int64_t init_optim_steps = 0;

	memset(&it, 0, sizeof(it));
	rc = tfj_session_init(&s, cfg);
	if (rc)
		goto fail;
	rc = load_split(&full, cfg, 1);
	if (rc) {
		s.exit_hint = TFJ_EXIT_DATA;
		goto fail;
	}
	rc = tfj_data_shard(&mine, &full, (size_t)cfg->replica, (size_t)cfg->nreplicas);
	if (rc) {
		s.exit_hint = TFJ_EXIT_USAGE;
		goto fail;
	}
	max_steps = cfg->max_steps ? cfg->max_steps : tfj_rtconfig_steps_for(cfg, full.n);
	tfj_data_free(&full);
	rc = tfj_data_iter_init(&it, &mine, cfg->batch_size, cfg->seed + (uint64_t)cfg->replica);
	if (rc)
		goto fail;
	it_ok = 1;
	if (cfg->is_coordinator) {
		if (cfg->checkpoint_dir[0] && (rc = make_dirs(cfg->checkpoint_dir)) != 0) {
			s.exit_hint = TFJ_EXIT_IO;
			goto fail;
		}
		rc = load_split(&test, cfg, 0);
		if (rc) {
			s.exit_hint = TFJ_EXIT_DATA;
			goto fail;
		}
		rc = initial_values(&s, &init_step, &init_state, &init_optim_steps);
		if (rc)
			goto fail;
		/* Sent with every Init, including the refill of a ps that comes back empty. */
		s.init_state = (const float *const *)init_state;
		s.init_optim_steps = init_optim_steps;
		/* Keep the initial values: a ps that restarts empty is refilled from them. */
		init_vals = calloc(s.plan.nvars, sizeof(*init_vals));
		if (!init_vals) {
			rc = tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
			goto fail;
		}
		for (size_t i = 0; i < s.plan.nvars; i++) {
			init_vals[i] = malloc(s.plan.counts[i] * sizeof(float));
			if (!init_vals[i]) {
				rc = tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
				goto fail;
			}
			memcpy(init_vals[i], s.params[i], s.plan.counts[i] * sizeof(float));
		}
	}
	min_step = calloc(s.nps, sizeof(*min_step));
	if (!min_step) {
		rc = tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		goto fail;
	}
	do {
		rc = tfj_session_ensure_ready(&s, (const float *const *)init_vals, init_step);
	} while ((rc = tfj_session_retry(&s, &r, rc, "waiting for the ps tasks")) == 1);
	if (rc)
		goto fail;
	tfj_log_fmt(TFJ_LOG_INFO, "%s: replica %d of %d, %zu examples, %s%s, max_steps %" PRId64,
		    s.task, cfg->replica, cfg->nreplicas, mine.n, cfg->sync ? "sync" : "async",
		    cfg->is_coordinator ? ", coordinator" : "", max_steps);
	t_train0 = tfj_session_now();
	t_last = t_train0;
	last_ckpt_t = t_train0;
	last_ckpt_step = -1;
	for (;;) {
		const float *x;
		const uint8_t *y;
		size_t n, j;
		float loss;
		int stale = 0;

		if (tfj_stop_requested) {
			rc = tfj_err_set(TFJ_ECANCELED, "stopped by signal");
			goto fail;
		}
		if (cfg->fail_after_s > 0 && tfj_session_now() - s.t0 > cfg->fail_after_s) {
			rc = tfj_err_set(TFJ_EUNAVAIL, "--fail_after %.1fs reached (test hook)",
					 cfg->fail_after_s);
			goto fail;
		}
		/* Sync: wait for the step after the one we contributed to. */
		for (j = 0; j < s.nps; j++)
			min_step[j] = (cfg->sync && pushed) ? s.shard_step[j] + 1 : 0;
		ta = tfj_session_now();
		rc = tfj_session_pull_retry(&s, min_step, cfg->sync ? SYNC_WAIT_MS : 0,
				cfg->is_coordinator ? (const float *const *)init_vals : NULL,
				init_step);
		if (rc)
			goto fail;
		if (s.finished || s.gstep >= max_steps)
			break;
		if (cfg->sync && pushed) {
			int behind = 0;

			for (j = 0; j < s.nps; j++)
				if (s.shard_step[j] < min_step[j])
					behind = 1;
			if (behind) {
				/*
				 * Nobody completed the step within the wait (a replica is
				 * slow or gone): wait again, but not past --peer_timeout.
				 */
				if (r.first_fail == 0)
					r.first_fail = tfj_session_now();
				if (tfj_session_now() - r.first_fail <= cfg->peer_timeout_s)
					continue;
				rc = tfj_err_set(TFJ_EUNAVAIL, "sync step %" PRId64 " did not "
						 "complete within --peer_timeout %.0fs (replicas "
						 "missing?)", s.gstep, cfg->peer_timeout_s);
				goto fail;
			}
			r.first_fail = 0;
			r.delay = 0;
		}
		if (cfg->is_coordinator && cfg->checkpoint_dir[0] && s.gstep != last_ckpt_step &&
		    ((cfg->checkpoint_steps && s.gstep - (last_ckpt_step < 0 ? init_step :
							 last_ckpt_step) >= cfg->checkpoint_steps) ||
		     (cfg->checkpoint_secs > 0 && tfj_session_now() - last_ckpt_t >= cfg->checkpoint_secs))) {
			char path[TFJ_RT_PATH_MAX + 64];

			if (save_checkpoint(&s, path, sizeof(path)) == 0)
				tfj_log_info("checkpoint saved", "path", path);
			else
				tfj_log_warn("checkpoint failed; will retry", "detail", tfj_err_detail());
			last_ckpt_step = s.gstep;
			last_ckpt_t = tfj_session_now();
		}
		tb = tfj_session_now();
		t_pull += tb - ta;
		rc = tfj_data_iter_next(&it, &x, &y, &n);
		if (rc)
			goto fail;
		/* Test hook: a poisoned parameter makes the loss NaN, as a diverging run would. */
		if (cfg->inject_nan_at > 0 && local + 1 == cfg->inject_nan_at)
			s.params[0][0] = NAN;
		rc = tfj_model_grad(s.model, (const float *const *)s.params, x, y, n, s.grads, &loss);
		if (rc) {
			if (rc == TFJ_ENUMERIC)
				tfj_err_set(rc, "loss became NaN/Inf at step %" PRId64
					    " (learning rate too high?)", s.gstep);
			goto fail;
		}
		ta = tfj_session_now();
		t_comp += ta - tb;
		for (;;) {
			rc = tfj_session_push(&s, max_steps, &stale);
			rc = tfj_session_retry(&s, &r, rc, "pushing gradients");
			if (rc == 0)
				break;
			if (rc != 1)
				goto fail;
		}
		t_push += tfj_session_now() - ta;
		pushed = 1;
		stale_total += stale;
		local++;
		examples += n;
		loss_acc += loss;
		loss_n++;
		if (local % cfg->progress_steps == 0) {
			struct tfj_progress p;
			double t = tfj_session_now();

			tfj_progress_begin(&p, tfj_role_name(cfg->role), cfg->index);
			tfj_progress_int(&p, "step", s.gstep);
			tfj_progress_int(&p, "local_step", local);
			tfj_progress_num(&p, "loss", loss_acc / (double)loss_n);
			tfj_progress_num(&p, "examples_per_sec",
					 (double)(examples - ex_last) / (t - t_last));
			tfj_progress_int(&p, "stale", stale_total);
			tfj_progress_num(&p, "pull_ms", t_pull * 1e3 / (double)cfg->progress_steps);
			tfj_progress_num(&p, "compute_ms", t_comp * 1e3 / (double)cfg->progress_steps);
			tfj_progress_num(&p, "push_ms", t_push * 1e3 / (double)cfg->progress_steps);
			tfj_progress_num(&p, "time_s", t - s.t0);
			t_pull = t_comp = t_push = 0;
			tfj_progress_end(&p);
			t_last = t;
			ex_last = examples;
			loss_acc = 0;
			loss_n = 0;
			last_progress_step = s.gstep;
		}
	}
	(void)last_progress_step;
	if (cfg->is_coordinator) {
		double train_s = tfj_session_now() - t_train0;
		float acc = 0, tloss = 0;
		struct tfj_progress p;
		char path[TFJ_RT_PATH_MAX + 64];
		double per = (double)cfg->batch_size * (cfg->sync ? cfg->replicas_to_aggregate : 1);

		/* The final parameters: what the ps hold now. */
		rc = tfj_session_pull_retry(&s, NULL, 0, NULL, 0);
		if (rc)
			goto fail;
		if (cfg->checkpoint_dir[0]) {
			rc = save_checkpoint(&s, path, sizeof(path));
			if (rc) {
				s.exit_hint = TFJ_EXIT_IO;
				goto fail;
			}
			tfj_log_info("final checkpoint saved", "path", path);
		}
		rc = tfj_model_eval(s.model, (const float *const *)s.params, test.x, test.y, test.n,
				    &acc, &tloss);
		if (rc)
			goto fail;
		tfj_progress_begin(&p, tfj_role_name(cfg->role), cfg->index);
		tfj_progress_bool(&p, "final", 1);
		tfj_progress_int(&p, "step", s.gstep);
		tfj_progress_num(&p, "test_accuracy", acc);
		tfj_progress_num(&p, "test_loss", tloss);
		tfj_progress_num(&p, "examples", (double)(s.gstep - init_step) * per);
		tfj_progress_num(&p, "examples_per_sec", (double)(s.gstep - init_step) * per / train_s);
		tfj_progress_num(&p, "train_s", train_s);
		tfj_progress_num(&p, "time_s", tfj_session_now() - s.t0);
		tfj_progress_end(&p);
		r.first_fail = 0;
		r.delay = 0;
		do {
			rc = tfj_session_finish(&s);
		} while ((rc = tfj_session_retry(&s, &r, rc, "telling the ps tasks to finish")) == 1);
		if (rc)
			goto fail;
	}
	tfj_log_fmt(TFJ_LOG_INFO, "%s done at step %" PRId64 " after %" PRId64 " local steps",
		    s.task, s.gstep, local);
	goto out;
fail:
	code = exit_for(&s, rc);
	tfj_log_error("task failed", "task", s.task, "error", tfj_err_name(rc), "detail",
		      tfj_err_detail(), "exit", tfj_exitcode_name(code));
out:
	if (init_vals) {
		for (size_t i = 0; i < s.plan.nvars; i++)
			free(init_vals[i]);
		free(init_vals);
	}
	if (init_state) {
		for (size_t i = 0; i < s.plan.nvars; i++)
			free(init_state[i]);
		free(init_state);
	}
	free(min_step);
	if (it_ok)
		tfj_data_iter_free(&it);
	tfj_data_free(&mine);
	tfj_data_free(&full);
	tfj_data_free(&test);
	tfj_session_free(&s);
	return code;
}

int tfj_evaluator_main(const struct tfj_rtconfig *cfg)
{
	struct tfj_session s;
	struct tfj_dataset test = { 0 };
	struct tfj_retry r = { 0, 0 };
	int64_t *min_step = NULL, last = -1;
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
		struct tfj_progress p;
		uint32_t wait = (uint32_t)(cfg->eval_secs * 1000);

		if (tfj_stop_requested) {
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
			tfj_progress_begin(&p, "evaluator", cfg->index);
			tfj_progress_int(&p, "step", s.gstep);
			tfj_progress_num(&p, "accuracy", acc);
			tfj_progress_num(&p, "loss", loss);
			if (s.finished)
				tfj_progress_bool(&p, "final", 1);
			tfj_progress_num(&p, "time_s", tfj_session_now() - s.t0);
			tfj_progress_end(&p);
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
	free(min_step);
	tfj_data_free(&test);
	tfj_session_free(&s);
	return code;
}
