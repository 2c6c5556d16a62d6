/*
 * test_optim.c - optimizers on a toy quadratic, exact first steps, state
 * sizes, and refusal of bad hyperparameters and non-finite gradients.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/optim.h"

#define N 8

/* f(p) = 0.5 * sum a_i (p_i - c_i)^2 with curvatures a_i from 0.5 to 4. */
static const float curv[N] = { 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f };
static const float target[N] = { 1.0f, -2.0f, 0.5f, 3.0f, -1.0f, 0.0f, 2.5f, -0.5f };

static void quad_grad(const float *p, float *g)
{
	size_t i;

	for (i = 0; i < N; i++)
		g[i] = curv[i] * (p[i] - target[i]);
}

/* Runs `steps` updates from p = 0 and returns the max distance to target. */
static double run(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h, int steps)
{
	float p[N] = { 0 }, g[N], state[2 * N] = { 0 };
	double worst = 0.0;
	int s;
	size_t i;

	for (s = 0; s < steps; s++) {
		quad_grad(p, g);
		if (tfj_optim_apply(kind, h, p, g, state, N, s) != 0)
			return 1e9;
	}
	for (i = 0; i < N; i++)
		if (fabs((double)p[i] - target[i]) > worst)
			worst = fabs((double)p[i] - target[i]);
	return worst;
}

static void test_converges(void)
{
	struct tfj_optim_hparams h;
	double d;

	tfj_optim_defaults(&h, TFJ_OPTIM_SGD);
	h.lr = 0.2f;
	d = run(TFJ_OPTIM_SGD, &h, 200);
	printf("  sgd: %.2e\n", d);
	TFJ_CHECK_LT(d, 1e-4);

	tfj_optim_defaults(&h, TFJ_OPTIM_MOMENTUM);
	h.lr = 0.05f;
	d = run(TFJ_OPTIM_MOMENTUM, &h, 300);
	printf("  momentum: %.2e\n", d);
	TFJ_CHECK_LT(d, 1e-4);
	h.nesterov = 1;
	d = run(TFJ_OPTIM_MOMENTUM, &h, 300);
	printf("  nesterov: %.2e\n", d);
	TFJ_CHECK_LT(d, 1e-4);

	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	h.lr = 0.05f;
	d = run(TFJ_OPTIM_ADAM, &h, 2000);
	printf("  adam: %.2e\n", d);
	TFJ_CHECK_LT(d, 1e-3);
	/* Too few steps must not pass: the check can fail. */
	TFJ_CHECK_GT(run(TFJ_OPTIM_ADAM, &h, 5), 0.5);
}

static void test_first_steps(void)
{
	struct tfj_optim_hparams h;
	float p[2], g[2] = { 2.0f, -0.5f }, st[4];

	/* SGD with weight decay: p -= lr * (g + wd * p). */
	tfj_optim_defaults(&h, TFJ_OPTIM_SGD);
	h.lr = 0.1f;
	h.weight_decay = 0.5f;
	p[0] = 1.0f;
	p[1] = 2.0f;
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_SGD, &h, p, g, NULL, 2, 0), 0);
	TFJ_CHECK_LT(fabsf(p[0] - (1.0f - 0.1f * 2.5f)), 1e-6f);
	TFJ_CHECK_LT(fabsf(p[1] - (2.0f - 0.1f * 0.5f)), 1e-6f);

	/* Momentum: v1 = g, v2 = mu g + g. */
	tfj_optim_defaults(&h, TFJ_OPTIM_MOMENTUM);
	h.lr = 0.1f;
	h.momentum = 0.9f;
	memset(p, 0, sizeof(p));
	memset(st, 0, sizeof(st));
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_MOMENTUM, &h, p, g, st, 2, 0), 0);
	TFJ_CHECK_LT(fabsf(p[0] + 0.2f), 1e-6f);
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_MOMENTUM, &h, p, g, st, 2, 1), 0);
	TFJ_CHECK_LT(fabsf(p[0] + 0.2f + 0.1f * 3.8f), 1e-5f);
	TFJ_CHECK_LT(fabsf(st[0] - 3.8f), 1e-6f);

	/* Adam's bias-corrected first step is lr * sign(g) (up to eps). */
	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	h.lr = 0.01f;
	memset(p, 0, sizeof(p));
	memset(st, 0, sizeof(st));
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_ADAM, &h, p, g, st, 2, 0), 0);
	TFJ_CHECK_LT(fabsf(p[0] + 0.01f), 1e-6f);
	TFJ_CHECK_LT(fabsf(p[1] - 0.01f), 1e-6f);
	TFJ_CHECK_LT(fabsf(st[0] - 0.2f), 1e-6f);           /* m = (1 - b1) g */
	TFJ_CHECK_LT(fabsf(st[2] - 0.001f * 4.0f), 1e-7f);  /* v = (1 - b2) g^2 */
}

static void test_state_and_parse(void)
{
	enum tfj_optim_kind k;

	TFJ_CHECK_INT(tfj_optim_state_size(TFJ_OPTIM_SGD, 10), 0);
	TFJ_CHECK_INT(tfj_optim_state_size(TFJ_OPTIM_MOMENTUM, 10), 10);
	TFJ_CHECK_INT(tfj_optim_state_size(TFJ_OPTIM_ADAM, 10), 20);
	TFJ_CHECK_INT(tfj_optim_parse(&k, "adam"), 0);
	TFJ_CHECK_INT(k, TFJ_OPTIM_ADAM);
	TFJ_CHECK_INT(tfj_optim_parse(&k, "momentum"), 0);
	TFJ_CHECK_INT(k, TFJ_OPTIM_MOMENTUM);
	TFJ_CHECK_INT(tfj_optim_parse(&k, "Adam"), TFJ_EINVAL);
	TFJ_CHECK_STR(tfj_optim_name(TFJ_OPTIM_SGD), "sgd");
}

static void test_refusals(void)
{
	struct tfj_optim_hparams h;
	float p[3] = { 1, 2, 3 }, g[3] = { 0.1f, NAN, 0.2f }, st[6] = { 0 };

	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_ADAM, &h, p, g, st, 3, 0), TFJ_ENUMERIC);
	/* Nothing changed, not even the elements before the NaN. */
	TFJ_CHECK(p[0] == 1.0f && p[1] == 2.0f && st[0] == 0.0f);
	g[1] = INFINITY;
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_SGD, &h, p, g, NULL, 3, 0), TFJ_ENUMERIC);
	g[1] = 0.0f;
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_MOMENTUM, &h, p, g, NULL, 3, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_ADAM, &h, p, g, st, 3, -1), TFJ_ERANGE);
	h.lr = 0.0f;
	TFJ_CHECK_INT(tfj_optim_apply(TFJ_OPTIM_SGD, &h, p, g, NULL, 3, 0), TFJ_ERANGE);
	h.lr = NAN;
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_SGD, &h), TFJ_ERANGE);
	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	h.beta1 = 1.0f;
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_ADAM, &h), TFJ_ERANGE);
	/* SGD ignores Adam's fields. */
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_SGD, &h), 0);
	tfj_optim_defaults(&h, TFJ_OPTIM_ADAM);
	h.eps = 0.0f;
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_ADAM, &h), TFJ_ERANGE);
	tfj_optim_defaults(&h, TFJ_OPTIM_MOMENTUM);
	h.momentum = -0.1f;
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_MOMENTUM, &h), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_optim_validate((enum tfj_optim_kind)7, &h), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_optim_validate(TFJ_OPTIM_SGD, NULL), TFJ_EINVAL);
}

/* The branch-free check: every position, lengths around the 16-wide blocks. */
static void test_finite_check(void)
{
	static const float bad[] = { NAN, -NAN, INFINITY, -INFINITY };
	float v[40] = { 0 };
	size_t n, pos, b, missed = 0, false_alarm = 0;

	for (n = 0; n <= 40; n++) {
		for (pos = 0; pos < n; pos++)
			v[pos] = pos % 3 == 0 ? FLT_MAX : pos % 3 == 1 ? -1e-40f : -0.0f;
		if (!tfj_optim_finite(v, n))
			false_alarm++;
		for (pos = 0; pos < n; pos++)
			for (b = 0; b < 4; b++) {
				float keep = v[pos];

				v[pos] = bad[b];
				if (tfj_optim_finite(v, n))
					missed++;
				v[pos] = keep;
			}
	}
	TFJ_CHECK_INT(missed, 0);
	TFJ_CHECK_INT(false_alarm, 0);
	TFJ_CHECK(tfj_optim_finite(NULL, 0));
}

/*
 * tfj_optim_update() reads its gradient at any alignment (the ps passes
 * pointers into received bytes) and does exactly what tfj_optim_apply()
 * does with the same numbers; tfj_optim_finite() reads the same way.
 */
static void test_unaligned_update(void)
{
	static const enum tfj_optim_kind kinds[] = { TFJ_OPTIM_SGD, TFJ_OPTIM_MOMENTUM,
						     TFJ_OPTIM_ADAM };
	unsigned char raw[N * sizeof(float) + 8];
	float pa[N], pb[N], g[N], sa[2 * N], sb[2 * N], bad = NAN;
	struct tfj_optim_hparams h;
	size_t k, off, i;
	int s;

	for (k = 0; k < 3; k++) {
		tfj_optim_defaults(&h, kinds[k]);
		h.weight_decay = 0.01f;
		for (off = 1; off < 4; off++) {
			for (i = 0; i < N; i++)
				pa[i] = pb[i] = (float)i - 3.5f;
			memset(sa, 0, sizeof(sa));
			memset(sb, 0, sizeof(sb));
			for (s = 0; s < 3; s++) {
				quad_grad(pa, g);
				memcpy(raw + off, g, sizeof(g));
				TFJ_CHECK(tfj_optim_finite(raw + off, N));
				TFJ_CHECK_INT(tfj_optim_apply(kinds[k], &h, pa, g, sa, N, s), 0);
				tfj_optim_update(kinds[k], &h, pb, raw + off, sb, sb + N, N, s);
			}
			TFJ_CHECK(memcmp(pa, pb, sizeof(pa)) == 0);
			TFJ_CHECK(memcmp(sa, sb, sizeof(sa)) == 0);
			memcpy(raw + off + 5 * sizeof(float), &bad, sizeof(bad));
			TFJ_CHECK(!tfj_optim_finite(raw + off, N));
		}
	}
}

int main(void)
{
	TFJ_RUN(test_converges);
	TFJ_RUN(test_first_steps);
	TFJ_RUN(test_state_and_parse);
	TFJ_RUN(test_refusals);
	TFJ_RUN(test_finite_check);
	TFJ_RUN(test_unaligned_update);
	return tfj_test_finish();
}
