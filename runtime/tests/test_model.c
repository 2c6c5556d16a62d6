/*
 * test_model.c - model specs, tensor layout, seeded init, and the analytic
 * gradients of both models against central finite differences.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/compute.h"
#include "data/data.h"
#include "compute/model.h"
#include "compute/optim.h"

struct fixture {
	struct tfj_compute *c;
	struct tfj_model *m;
	size_t nt;
	float *params[2 * (TFJ_MODEL_MAX_HIDDEN + 1)];
	float *grads[2 * (TFJ_MODEL_MAX_HIDDEN + 1)];
};

static int fixture_open(struct fixture *f, const struct tfj_model_spec *spec, uint64_t seed)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	if (tfj_compute_open(&f->c, "cpu", 0) < 0 || tfj_model_new(&f->m, spec, f->c) < 0)
		return -1;
	f->nt = tfj_model_num_tensors(f->m);
	for (i = 0; i < f->nt; i++) {
		size_t n = tfj_model_tensor(f->m, i)->count;

		f->params[i] = calloc(n, sizeof(float));
		f->grads[i] = calloc(n, sizeof(float));
		if (!f->params[i] || !f->grads[i])
			return -1;
	}
	return tfj_model_init_params(f->m, seed, f->params);
}

static void fixture_close(struct fixture *f)
{
	size_t i;

	for (i = 0; i < f->nt; i++) {
		free(f->params[i]);
		free(f->grads[i]);
	}
	tfj_model_free(f->m);
	tfj_compute_free(f->c);
}

static void random_batch(float *x, uint8_t *y, size_t n, size_t dim, size_t classes)
{
	size_t i;

	for (i = 0; i < n * dim; i++)
		x[i] = (float)tfj_test_below(1000) / 1000.0f;
	for (i = 0; i < n; i++)
		y[i] = (uint8_t)tfj_test_below(classes);
}

/*
 * Reference forward pass in double precision, written independently of
 * model.c: returns the mean loss and a hash of which hidden units are
 * active, so a caller can tell when a perturbation crossed a ReLU kink.
 */
static double ref_loss(const struct tfj_model_spec *s, float *const *p, const float *x,
		       const uint8_t *y, size_t n, uint64_t *pattern)
{
	double a[64], z[64], total = 0.0;
	size_t widths[TFJ_MODEL_MAX_HIDDEN + 2], layers = s->n_hidden + 1, r, l, i, j;

	widths[0] = s->input_dim;
	for (l = 0; l < s->n_hidden; l++)
		widths[l + 1] = s->hidden[l];
	widths[layers] = s->classes;
	*pattern = 1469598103934665603ull;
	for (r = 0; r < n; r++) {
		double zmax = -1e300, sum = 0.0;

		for (i = 0; i < widths[0]; i++)
			a[i] = x[r * widths[0] + i];
		for (l = 0; l < layers; l++) {
			const float *w = p[2 * l], *b = p[2 * l + 1];

			for (j = 0; j < widths[l + 1]; j++) {
				z[j] = b[j];
				for (i = 0; i < widths[l]; i++)
					z[j] += a[i] * (double)w[i * widths[l + 1] + j];
			}
			for (j = 0; j < widths[l + 1]; j++) {
				if (l + 1 < layers) {
					*pattern = (*pattern ^ (z[j] > 0.0)) * 1099511628211ull;
					a[j] = z[j] > 0.0 ? z[j] : 0.0;
				} else {
					a[j] = z[j];
				}
			}
		}
		for (j = 0; j < s->classes; j++)
			zmax = a[j] > zmax ? a[j] : zmax;
		for (j = 0; j < s->classes; j++)
			sum += exp(a[j] - zmax);
		total += zmax + log(sum) - a[y[r]];
	}
	return total / (double)n;
}

/*
 * Compares every analytic partial derivative with a central difference of
 * the double-precision reference loss (so float rounding does not blur the
 * difference), and the model's own loss with the reference loss.
 */
static void gradcheck(const struct tfj_model_spec *spec)
{
	enum { N = 6 };
	struct fixture f;
	float x[N * 8], loss = 0.0f, acc;
	uint8_t y[N];
	size_t t, i, checked = 0, bad = 0;
	const double eps = 1e-4;
	uint64_t kink;
	size_t skipped = 0;

	TFJ_CHECK_LE(spec->input_dim, 8);
	TFJ_CHECK_INT(fixture_open(&f, spec, 42), 0);
	random_batch(x, y, N, spec->input_dim, spec->classes);
	/* Non-zero biases so the bias gradients see a general point. */
	for (t = 1; t < f.nt; t += 2)
		for (i = 0; i < tfj_model_tensor(f.m, t)->count; i++)
			f.params[t][i] = 0.05f * (float)((int)tfj_test_below(21) - 10);
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y, N, f.grads, &loss),
		      0);
	TFJ_CHECK_GT(loss, 0.0f);
	TFJ_CHECK(isfinite(loss));
	TFJ_CHECK_LT(fabs(loss - ref_loss(spec, f.params, x, y, N, &kink)), 1e-5);
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, x, y, N, &acc, &loss), 0);
	TFJ_CHECK_LT(fabs(loss - ref_loss(spec, f.params, x, y, N, &kink)), 1e-5);
	for (t = 0; t < f.nt; t++) {
		for (i = 0; i < tfj_model_tensor(f.m, t)->count; i++) {
			float keep = f.params[t][i];
			double num, ana = f.grads[t][i], lp, lm;
			uint64_t k1, k2;

			/* Perturb in double through the float: use the stored step. */
			f.params[t][i] = (float)(keep + eps);
			lp = ref_loss(spec, f.params, x, y, N, &k1);
			num = (double)f.params[t][i];
			f.params[t][i] = (float)(keep - eps);
			lm = ref_loss(spec, f.params, x, y, N, &k2);
			num = (lp - lm) / (num - (double)f.params[t][i]);
			f.params[t][i] = keep;
			checked++;
			/* A kink inside the step makes the difference meaningless. */
			if (k1 != k2) {
				skipped++;
				continue;
			}
			if (fabs(num - ana) > 1e-4 + 1e-3 * fabs(num)) {
				bad++;
				printf("  %s[%zu]: analytic %.6f numeric %.6f\n",
				       tfj_model_tensor(f.m, t)->name, i, ana, num);
			}
		}
	}
	printf("  %s: %zu partials checked, %zu skipped at a kink, %zu off\n",
	       tfj_model_kind_name(spec->kind), checked, skipped, bad);
	TFJ_CHECK_GT(checked, 20);
	TFJ_CHECK_LT(skipped * 10, checked);
	TFJ_CHECK_INT(bad, 0);
	fixture_close(&f);
}

static void test_gradcheck_softmax(void)
{
	struct tfj_model_spec s;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", NULL, 7, 4), 0);
	gradcheck(&s);
}

static void test_gradcheck_mlp(void)
{
	struct tfj_model_spec s;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "5,4", 6, 3), 0);
	gradcheck(&s);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "9", 8, 5), 0);
	gradcheck(&s);
}

static void test_spec_parse(void)
{
	struct tfj_model_spec s;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "256,128", 784, 10), 0);
	TFJ_CHECK_INT(s.n_hidden, 2);
	TFJ_CHECK_INT(s.hidden[0], 256);
	TFJ_CHECK_INT(s.hidden[1], 128);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", "", 784, 10), 0);
	TFJ_CHECK_INT(s.kind, TFJ_MODEL_SOFTMAX);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", NULL, 784, 10), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "256,", 784, 10), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "-3", 784, 10), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "0", 784, 10), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "99999999999999999999", 784, 10), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "1,2,3,4,5,6,7,8,9", 784, 10), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "12x", 784, 10), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", "5", 784, 10), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "cnn", NULL, 784, 10), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", NULL, 784, 1), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", NULL, 784, 257), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", NULL, 0, 10), TFJ_ERANGE);
}

static void test_tensors_and_init(void)
{
	struct tfj_model_spec s;
	struct fixture a, b;
	size_t i, t;
	int same = 1, zero_bias = 1;
	double sum2 = 0.0;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "64,32", 100, 10), 0);
	TFJ_CHECK_INT(fixture_open(&a, &s, 7), 0);
	TFJ_CHECK_INT(fixture_open(&b, &s, 7), 0);
	TFJ_CHECK_INT(a.nt, 6);
	TFJ_CHECK_STR(tfj_model_tensor(a.m, 0)->name, "dense_0/kernel");
	TFJ_CHECK_STR(tfj_model_tensor(a.m, 3)->name, "dense_1/bias");
	TFJ_CHECK_STR(tfj_model_tensor(a.m, 4)->name, "logits/kernel");
	TFJ_CHECK_INT(tfj_model_tensor(a.m, 4)->shape[0], 32);
	TFJ_CHECK_INT(tfj_model_tensor(a.m, 4)->shape[1], 10);
	TFJ_CHECK_INT(tfj_model_tensor(a.m, 5)->rank, 1);
	TFJ_CHECK(tfj_model_tensor(a.m, 6) == NULL);
	TFJ_CHECK_INT(tfj_model_tensor_index(a.m, "logits/bias"), 5);
	TFJ_CHECK_INT(tfj_model_tensor_index(a.m, "nope"), -1);
	TFJ_CHECK_INT(tfj_model_num_params(a.m), 100 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10);
	for (t = 0; t < a.nt; t++)
		for (i = 0; i < tfj_model_tensor(a.m, t)->count; i++) {
			same &= a.params[t][i] == b.params[t][i];
			if (t % 2)
				zero_bias &= a.params[t][i] == 0.0f;
		}
	TFJ_CHECK(same);
	TFJ_CHECK(zero_bias);
	/* He init: the first kernel's variance is about 2 / fan_in. */
	for (i = 0; i < 100 * 64; i++)
		sum2 += (double)a.params[0][i] * a.params[0][i];
	sum2 /= 100 * 64;
	TFJ_CHECK_GT(sum2, 0.8 * 2.0 / 100);
	TFJ_CHECK_LT(sum2, 1.2 * 2.0 / 100);
	fixture_close(&b);
	TFJ_CHECK_INT(fixture_open(&b, &s, 8), 0);
	TFJ_CHECK(memcmp(a.params[0], b.params[0], 64 * sizeof(float)) != 0);
	fixture_close(&a);
	fixture_close(&b);
}

/* The shapes from the spec alone are the built model's, in its order. */
static void test_shapes_without_a_model(void)
{
	struct tfj_tensor_info t[TFJ_MODEL_MAX_TENSORS];
	struct tfj_model_spec s;
	struct fixture a;
	size_t n = 99, i;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "64,32", 100, 10), 0);
	TFJ_CHECK_OK(tfj_model_shapes(t, &n, TFJ_MODEL_MAX_TENSORS, &s));
	TFJ_CHECK_INT(n, 6);
	TFJ_CHECK_INT(fixture_open(&a, &s, 7), 0);
	for (i = 0; i < n; i++) {
		TFJ_CHECK_STR(t[i].name, tfj_model_tensor(a.m, i)->name);
		TFJ_CHECK_INT(t[i].rank, tfj_model_tensor(a.m, i)->rank);
		TFJ_CHECK_INT(t[i].shape[0], tfj_model_tensor(a.m, i)->shape[0]);
		TFJ_CHECK_INT(t[i].shape[1], tfj_model_tensor(a.m, i)->shape[1]);
		TFJ_CHECK_INT(t[i].count, tfj_model_tensor(a.m, i)->count);
	}
	fixture_close(&a);
	TFJ_CHECK_INT(tfj_model_shapes(t, &n, 5, &s), TFJ_ERANGE);
	TFJ_CHECK_INT(n, 0);
	s.hidden[0] = 0;
	TFJ_CHECK(tfj_model_shapes(t, &n, TFJ_MODEL_MAX_TENSORS, &s) < 0);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "65536,65536", 784, 10), 0);
	TFJ_CHECK_INT(tfj_model_shapes(t, &n, TFJ_MODEL_MAX_TENSORS, &s), TFJ_ETOOBIG);
}

static void test_bad_inputs(void)
{
	struct tfj_model_spec s;
	struct fixture f;
	float x[4 * 5], loss, acc;
	uint8_t y[4] = { 0, 1, 2, 1 };

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "3", 5, 3), 0);
	TFJ_CHECK_INT(fixture_open(&f, &s, 1), 0);
	random_batch(x, y, 4, 5, 3);
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y, 0, f.grads, &loss),
		      TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y,
				     TFJ_MODEL_MAX_BATCH + 1, f.grads, &loss), TFJ_ERANGE);
	y[2] = 3;
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y, 4, f.grads, &loss),
		      TFJ_EINVAL);
	y[2] = 2;
	/* A NaN parameter makes the loss NaN: refused, not propagated. */
	f.params[2][0] = NAN;
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y, 4, f.grads, &loss),
		      TFJ_ENUMERIC);
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, x, y, 4, &acc, &loss),
		      TFJ_ENUMERIC);
	f.params[2][0] = INFINITY;
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, x, y, 4, &acc, &loss),
		      TFJ_ENUMERIC);
	fixture_close(&f);
}

/* What the ready callback saw: the first_var of each call, and the grads final by then. */
struct ready_log {
	struct fixture *f;
	float *const *want;  /* the grads of a plain tfj_model_grad */
	size_t calls, first[TFJ_MODEL_MAX_HIDDEN + 1];
	int final;           /* every reported tensor equal to want when reported */
	int early;           /* a tensor not yet reported already equal (would hide a late copy) */
};

static void on_ready(void *ud, size_t first_var)
{
	struct ready_log *r = ud;
	size_t i;

	if (r->calls <= TFJ_MODEL_MAX_HIDDEN)
		r->first[r->calls] = first_var;
	r->calls++;
	for (i = 0; i < r->f->nt; i++) {
		size_t n = tfj_model_tensor(r->f->m, i)->count;
		int same = memcmp(r->f->grads[i], r->want[i], n * sizeof(float)) == 0;

		if (i >= first_var && !same)
			r->final = 0;
		if (i < first_var && same)
			r->early = 1;
	}
}

/*
 * tfj_model_grad_ready reports each layer, last first, once its kernel and
 * bias gradients are final, and ends with the gradients and loss of
 * tfj_model_grad. A NaN loss fails before any report.
 */
static void test_grad_ready(void)
{
	struct tfj_model_spec s;
	struct fixture f, g;
	struct ready_log r;
	float x[8 * 5], la, lb;
	uint8_t y[8];
	size_t i;

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "4,3", 5, 3), 0);
	TFJ_CHECK_INT(fixture_open(&f, &s, 7), 0);
	TFJ_CHECK_INT(fixture_open(&g, &s, 7), 0);
	random_batch(x, y, 8, 5, 3);
	TFJ_CHECK_INT(tfj_model_grad(g.m, (const float *const *)g.params, x, y, 8, g.grads, &lb), 0);
	/* Poison f's grads so that a tensor reported before it is written shows. */
	for (i = 0; i < f.nt; i++)
		f.grads[i][0] = NAN;
	memset(&r, 0, sizeof(r));
	r.f = &f;
	r.want = g.grads;
	r.final = 1;
	TFJ_CHECK_INT(tfj_model_grad_ready(f.m, (const float *const *)f.params, x, y, 8, f.grads,
					   &la, on_ready, &r), 0);
	TFJ_CHECK_INT((long long)r.calls, 3);
	TFJ_CHECK_INT((long long)r.first[0], 4);
	TFJ_CHECK_INT((long long)r.first[1], 2);
	TFJ_CHECK_INT((long long)r.first[2], 0);
	TFJ_CHECK(r.final);
	TFJ_CHECK(!r.early);
	TFJ_CHECK(la == lb);
	/* A NaN loss: no layer is reported. */
	f.params[0][0] = NAN;
	r.calls = 0;
	TFJ_CHECK_INT(tfj_model_grad_ready(f.m, (const float *const *)f.params, x, y, 8, f.grads,
					   &la, on_ready, &r), TFJ_ENUMERIC);
	TFJ_CHECK_INT((long long)r.calls, 0);
	fixture_close(&f);
	fixture_close(&g);
}

/* Huge but finite logits must not overflow the softmax (stable form). */
static void test_stable_softmax(void)
{
	struct tfj_model_spec s;
	struct fixture f;
	float x[2] = { 1.0f, 1.0f }, loss = 0, acc = 0;
	uint8_t y[1] = { 1 };

	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "softmax", NULL, 2, 3), 0);
	TFJ_CHECK_INT(fixture_open(&f, &s, 1), 0);
	/* logits = (0, 1e4, -1e4): label 1 wins by a mile. */
	memset(f.params[0], 0, 6 * sizeof(float));
	f.params[1][0] = 0.0f;
	f.params[1][1] = 1e4f;
	f.params[1][2] = -1e4f;
	TFJ_CHECK_INT(tfj_model_grad(f.m, (const float *const *)f.params, x, y, 1, f.grads, &loss),
		      0);
	TFJ_CHECK_GE(loss, 0.0f);
	TFJ_CHECK_LT(loss, 1e-6f);
	y[0] = 2;
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, x, y, 1, &acc, &loss), 0);
	TFJ_CHECK_LT(fabsf(loss - 2e4f), 1.0f);
	TFJ_CHECK(acc == 0.0f);
	fixture_close(&f);
}

/*
 * End to end on the synthetic set: an MLP trained with Adam goes from
 * chance to near-perfect test accuracy within a few dozen steps. This is
 * the dataset the distributed tests use when Fashion-MNIST is absent.
 */
static void test_learns_synthetic(void)
{
	struct tfj_dataset tr, te;
	struct tfj_model_spec s;
	struct tfj_optim_hparams h;
	struct tfj_data_iter it;
	struct fixture f;
	float *state[4] = { 0 }, acc0 = 1.0f, acc = 0.0f, loss;
	size_t t;
	int step;

	TFJ_CHECK_INT(tfj_data_synthetic(&tr, 2000, 784, 10, 5, 1), 0);
	TFJ_CHECK_INT(tfj_data_synthetic(&te, 500, 784, 10, 5, 0), 0);
	TFJ_CHECK_INT(tfj_model_spec_parse(&s, "mlp", "32", 784, 10), 0);
	TFJ_CHECK_INT(fixture_open(&f, &s, 3), 0);
	for (t = 0; t < f.nt; t++)
		state[t] = calloc(tfj_optim_state_size(TFJ_OPTIM_ADAM, tfj_model_tensor(f.m, t)->count),
				  sizeof(float));
	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	TFJ_CHECK_INT(tfj_data_iter_init(&it, &tr, 64, 1), 0);
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, te.x, te.y, te.n, &acc0,
				     &loss), 0);
	for (step = 0; step < 60; step++) {
		const float *x;
		const uint8_t *y;
		size_t n;
		int rc = tfj_data_iter_next(&it, &x, &y, &n);

		if (rc == 0)
			rc = tfj_model_grad(f.m, (const float *const *)f.params, x, y, n, f.grads, &loss);
		for (t = 0; rc == 0 && t < f.nt; t++)
			rc = tfj_optim_apply(TFJ_OPTIM_ADAM, &h, f.params[t], f.grads[t], state[t],
					     tfj_model_tensor(f.m, t)->count, step);
		TFJ_CHECK_INT(rc, 0);
		if (rc)
			break;
	}
	TFJ_CHECK_INT(tfj_model_eval(f.m, (const float *const *)f.params, te.x, te.y, te.n, &acc,
				     &loss), 0);
	printf("  synthetic: test accuracy %.3f -> %.3f after 60 steps\n", acc0, acc);
	TFJ_CHECK_LT(acc0, 0.5f);
	TFJ_CHECK_GT(acc, 0.95f);
	for (t = 0; t < f.nt; t++)
		free(state[t]);
	tfj_data_iter_free(&it);
	tfj_data_free(&tr);
	tfj_data_free(&te);
	fixture_close(&f);
}

int main(void)
{
	TFJ_RUN(test_spec_parse);
	TFJ_RUN(test_tensors_and_init);
	TFJ_RUN(test_shapes_without_a_model);
	TFJ_RUN(test_gradcheck_softmax);
	TFJ_RUN(test_gradcheck_mlp);
	TFJ_RUN(test_bad_inputs);
	TFJ_RUN(test_grad_ready);
	TFJ_RUN(test_stable_softmax);
	TFJ_RUN(test_learns_synthetic);
	return tfj_test_finish();
}
