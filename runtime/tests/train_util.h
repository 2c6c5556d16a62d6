/*
 * train_util.h - the single-process training loop shared by the accuracy
 * tests (test_train_softmax.c, test_train_mlp.c): real Fashion-MNIST, the
 * real model, optimizer and iterator, no shortcuts. Header-only because it
 * is test code used by exactly these two programs.
 */
#ifndef TFJ_TRAIN_UTIL_H
#define TFJ_TRAIN_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/compute.h"
#include "data/data.h"
#include "compute/model.h"
#include "compute/optim.h"
#include "tfj_testutil.h"

struct train_cfg {
	const char *kind;       /* "softmax" or "mlp" */
	const char *hidden;     /* NULL for softmax */
	enum tfj_optim_kind optim;
	float lr;
	size_t batch;
	int max_epochs;
	float target;           /* test accuracy to reach */
	uint64_t seed;
};

/*
 * Trains until the test accuracy reaches cfg->target or max_epochs pass.
 * Returns 77 when the dataset is not installed, else 0 and *best_acc.
 */
static int train_run(const struct train_cfg *cfg, float *best_acc, int *epochs_used)
{
	struct tfj_dataset tr = { 0 }, te = { 0 };
	struct tfj_compute *c = NULL;
	struct tfj_model *m = NULL;
	struct tfj_model_spec spec;
	struct tfj_optim_hparams h;
	struct tfj_data_iter it = { 0 };
	float *params[32] = { 0 }, *grads[32] = { 0 }, *state[32] = { 0 };
	size_t nt = 0, i;
	int64_t step = 0;
	int epoch, rc;
	double t0 = tfj_testutil_now_s();

	*best_acc = 0.0f;
	*epochs_used = 0;
	/*
	 * One BLAS thread: these matrices are small enough that threads buy
	 * little, and ctest runs tests side by side on a 2-core machine.
	 */
	TFJ_CHECK_INT(tfj_compute_set_cpu_threads(1), 0);
	rc = tfj_data_load(&tr, NULL, 1);
	if (rc == TFJ_ENOTFOUND) {
		printf("skip: Fashion-MNIST not installed (%s)\n", tfj_err_detail());
		return 77;
	}
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_INT(tfj_data_load(&te, NULL, 0), 0);
	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 0), 0);
	TFJ_CHECK_INT(tfj_model_spec_parse(&spec, cfg->kind, cfg->hidden, tr.dim, 10), 0);
	TFJ_CHECK_INT(tfj_model_new(&m, &spec, c), 0);
	if (!m || !tr.n || !te.n)
		goto out;
	nt = tfj_model_num_tensors(m);
	for (i = 0; i < nt; i++) {
		size_t n = tfj_model_tensor(m, i)->count;

		params[i] = malloc(n * sizeof(float));
		grads[i] = malloc(n * sizeof(float));
		state[i] = calloc(tfj_optim_state_size(cfg->optim, n) + 1, sizeof(float));
		TFJ_CHECK(params[i] && grads[i] && state[i]);
		if (!params[i] || !grads[i] || !state[i])
			goto out;
	}
	TFJ_CHECK_INT(tfj_model_init_params(m, cfg->seed, params), 0);
	tfj_optim_defaults(&h, cfg->optim);
	h.lr = cfg->lr;
	TFJ_CHECK_INT(tfj_data_iter_init(&it, &tr, cfg->batch, cfg->seed), 0);
	printf("  %s on %s, %zu params, load %.1fs\n", cfg->kind, tfj_compute_name(c),
	       tfj_model_num_params(m), tfj_testutil_now_s() - t0);
	for (epoch = 0; epoch < cfg->max_epochs; epoch++) {
		double loss_sum = 0.0, te0;
		size_t batches = 0;
		float acc = 0.0f, tloss = 0.0f;

		while (it.epoch == (uint64_t)epoch) {
			const float *x;
			const uint8_t *y;
			size_t n;
			float loss;

			rc = tfj_data_iter_next(&it, &x, &y, &n);
			if (rc == 0)
				rc = tfj_model_grad(m, (const float *const *)params, x, y, n, grads, &loss);
			for (i = 0; rc == 0 && i < nt; i++)
				rc = tfj_optim_apply(cfg->optim, &h, params[i], grads[i], state[i],
						     tfj_model_tensor(m, i)->count, step);
			TFJ_CHECK_INT(rc, 0);
			if (rc)
				goto out;
			step++;
			loss_sum += loss;
			batches++;
		}
		te0 = tfj_testutil_now_s();
		TFJ_CHECK_INT(tfj_model_eval(m, (const float *const *)params, te.x, te.y, te.n, &acc,
					     &tloss), 0);
		printf("  epoch %d: train loss %.4f, test loss %.4f, test acc %.4f "
		       "(eval %.2fs, total %.1fs)\n",
		       epoch + 1, loss_sum / (double)batches, tloss, acc, tfj_testutil_now_s() - te0,
		       tfj_testutil_now_s() - t0);
		if (acc > *best_acc)
			*best_acc = acc;
		*epochs_used = epoch + 1;
		if (acc >= cfg->target)
			break;
	}
out:
	for (i = 0; i < 32; i++) {
		free(params[i]);
		free(grads[i]);
		free(state[i]);
	}
	tfj_data_iter_free(&it);
	tfj_model_free(m);
	tfj_compute_free(c);
	tfj_data_free(&tr);
	tfj_data_free(&te);
	return 0;
}

#endif
