/*
 * towers.c - see towers.h.
 */
#include "worker/towers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "task/rtconfig.h"

_Static_assert(TFJ_TOWERS_MAX == TFJ_RT_TOWERS_MAX, "--towers' bound is the towers' own");

struct tower {
	struct tfj_towers *tw;
	int index;
	pthread_t thread;
	int started;
	struct tfj_compute *comp;
	struct tfj_model *model;
	float **grads;               /* per tensor, the model's shapes */
	size_t off, rows;            /* this step's slice */
	float loss;
	int rc;
};

struct tfj_towers {
	int n;
	size_t ntensors;
	size_t counts[TFJ_MODEL_MAX_TENSORS];
	struct tower t[TFJ_TOWERS_MAX];
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint64_t gen;                /* bumped per step; a tower runs each once */
	int pending;                 /* towers still computing this step */
	int quit;
	/* This step's inputs, read by the towers between go and done. */
	const float *const *params;
	const float *x;
	const uint8_t *y;
	size_t input_dim;
};

/* One tower's share of this step: its rows' gradients and loss. */
static int tower_step(const struct tfj_towers *tw, struct tower *t)
{
	if (!t->rows)
		return 0;
	return tfj_model_grad(t->model, tw->params, tw->x + t->off * tw->input_dim, tw->y + t->off,
			      t->rows, t->grads, &t->loss);
}

/* Towers 1..n-1 each wait on their own thread for the next step. */
static void *tower_main(void *arg)
{
	struct tower *t = arg;
	struct tfj_towers *tw = t->tw;
	uint64_t seen = 0;

	pthread_mutex_lock(&tw->mu);
	for (;;) {
		while (!tw->quit && tw->gen == seen)
			pthread_cond_wait(&tw->go, &tw->mu);
		if (tw->quit)
			break;
		seen = tw->gen;
		pthread_mutex_unlock(&tw->mu);
		t->rc = tower_step(tw, t);
		pthread_mutex_lock(&tw->mu);
		if (--tw->pending == 0)
			pthread_cond_signal(&tw->done);
	}
	pthread_mutex_unlock(&tw->mu);
	return NULL;
}

static int tower_open(struct tower *t, const struct tfj_model_spec *spec, const char *device)
{
	struct tfj_towers *tw = t->tw;
	size_t i;
	int rc;

	rc = tfj_compute_open(&t->comp, device, 0);
	if (rc == 0)
		rc = tfj_model_new(&t->model, spec, t->comp);
	if (rc)
		return rc;
	t->grads = calloc(tw->ntensors, sizeof(*t->grads));
	if (!t->grads)
		return tfj_err_set(TFJ_ENOMEM, "towers: out of memory");
	for (i = 0; i < tw->ntensors; i++) {
		t->grads[i] = calloc(tw->counts[i], sizeof(float));
		if (!t->grads[i])
			return tfj_err_set(TFJ_ENOMEM, "towers: out of memory");
	}
	/* Tower 0 computes on the caller's thread (tfj_towers_grad), which
	 * would otherwise only wait for the others. */
	if (t->index == 0)
		return 0;
	if (pthread_create(&t->thread, NULL, tower_main, t) != 0)
		return tfj_err_set(TFJ_ENOMEM, "towers: cannot start tower %d", t->index);
	t->started = 1;
	return 0;
}

int tfj_towers_new(struct tfj_towers **out, const struct tfj_model_spec *spec, const char *device,
		   int n)
{
	struct tfj_tensor_info info[TFJ_MODEL_MAX_TENSORS];
	struct tfj_towers *tw;
	size_t i;
	int k, rc;

	*out = NULL;
	if (n < 2 || n > TFJ_TOWERS_MAX)
		return tfj_err_set(TFJ_EINVAL, "towers: %d, wanted 2..%d", n, TFJ_TOWERS_MAX);
	tw = calloc(1, sizeof(*tw));
	if (!tw)
		return tfj_err_set(TFJ_ENOMEM, "towers: out of memory");
	pthread_mutex_init(&tw->mu, NULL);
	pthread_cond_init(&tw->go, NULL);
	pthread_cond_init(&tw->done, NULL);
	rc = tfj_model_shapes(info, &tw->ntensors, TFJ_MODEL_MAX_TENSORS, spec);
	if (rc)
		goto out;
	for (i = 0; i < tw->ntensors; i++)
		tw->counts[i] = info[i].count;
	tw->input_dim = spec->input_dim;
	for (k = 0; k < n; k++) {
		tw->t[k].tw = tw;
		tw->t[k].index = k;
		tw->n = k + 1;
		rc = tower_open(&tw->t[k], spec, device);
		if (rc)
			goto out;
	}
	*out = tw;
	tw = NULL;
out:
	tfj_towers_free(tw);
	return rc;
}

void tfj_towers_free(struct tfj_towers *tw)
{
	size_t i;
	int k;

	if (!tw)
		return;
	pthread_mutex_lock(&tw->mu);
	tw->quit = 1;
	pthread_cond_broadcast(&tw->go);
	pthread_mutex_unlock(&tw->mu);
	for (k = 0; k < tw->n; k++) {
		struct tower *t = &tw->t[k];

		if (t->started)
			pthread_join(t->thread, NULL);
		if (t->grads)
			for (i = 0; i < tw->ntensors; i++)
				free(t->grads[i]);
		free(t->grads);
		tfj_model_free(t->model);
		tfj_compute_free(t->comp);
	}
	pthread_cond_destroy(&tw->done);
	pthread_cond_destroy(&tw->go);
	pthread_mutex_destroy(&tw->mu);
	free(tw);
}

/* grads = sum over towers of (rows / n) x the tower's gradients; same for the loss. */
static void average(struct tfj_towers *tw, size_t n, float *const *grads, float *loss)
{
	size_t i, j;
	double l = 0;
	int k;

	for (i = 0; i < tw->ntensors; i++)
		memset(grads[i], 0, tw->counts[i] * sizeof(float));
	for (k = 0; k < tw->n; k++) {
		const struct tower *t = &tw->t[k];
		float w = (float)t->rows / (float)n;

		if (!t->rows)
			continue;
		l += (double)t->loss * t->rows;
		for (i = 0; i < tw->ntensors; i++) {
			const float *g = t->grads[i];
			float *o = grads[i];

			for (j = 0; j < tw->counts[i]; j++)
				o[j] += w * g[j];
		}
	}
	*loss = (float)(l / (double)n);
}

int tfj_towers_grad(struct tfj_towers *tw, const float *const *params, const float *x,
		    const uint8_t *y, size_t n, float *const *grads, float *loss,
		    tfj_model_ready_fn ready, void *ud)
{
	size_t per, extra, off = 0;
	int k, rc = 0;

	if (n == 0 || n > TFJ_MODEL_MAX_BATCH)
		return tfj_err_set(TFJ_EINVAL, "towers: batch of %zu rows", n);
	per = n / (size_t)tw->n;
	extra = n % (size_t)tw->n;
	pthread_mutex_lock(&tw->mu);
	tw->params = params;
	tw->x = x;
	tw->y = y;
	for (k = 0; k < tw->n; k++) {
		tw->t[k].off = off;
		tw->t[k].rows = per + ((size_t)k < extra);
		off += tw->t[k].rows;
	}
	tw->pending = tw->n - 1;
	tw->gen++;
	pthread_cond_broadcast(&tw->go);
	pthread_mutex_unlock(&tw->mu);
	tw->t[0].rc = tower_step(tw, &tw->t[0]);
	pthread_mutex_lock(&tw->mu);
	while (tw->pending)
		pthread_cond_wait(&tw->done, &tw->mu);
	pthread_mutex_unlock(&tw->mu);
	for (k = 0; k < tw->n && rc == 0; k++)
		rc = tw->t[k].rc;
	if (rc)
		return rc;
	average(tw, n, grads, loss);
	/* A layer l is its kernel and bias, tensors 2l and 2l+1 (model.h). */
	for (size_t l = tw->ntensors / 2; ready && l-- > 0;)
		ready(ud, 2 * l);
	return 0;
}
