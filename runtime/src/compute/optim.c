/*
 * optim.c - SGD, momentum and Adam updates on host float arrays.
 */
#include "compute/optim.h"

#include <math.h>
#include <string.h>

#include <tfj/err.h>

void tfj_optim_defaults(struct tfj_optim_hparams *h, enum tfj_optim_kind kind)
{
	memset(h, 0, sizeof(*h));
	h->lr = kind == TFJ_OPTIM_ADAM ? 0.001f : kind == TFJ_OPTIM_MOMENTUM ? 0.05f : 0.1f;
	h->momentum = 0.9f;
	h->beta1 = 0.9f;
	h->beta2 = 0.999f;
	h->eps = 1e-7f;
}

int tfj_optim_parse(enum tfj_optim_kind *out, const char *s)
{
	if (!out || !s)
		return tfj_err_set(TFJ_EINVAL, "optim: NULL argument");
	if (strcmp(s, "sgd") == 0)
		*out = TFJ_OPTIM_SGD;
	else if (strcmp(s, "momentum") == 0)
		*out = TFJ_OPTIM_MOMENTUM;
	else if (strcmp(s, "adam") == 0)
		*out = TFJ_OPTIM_ADAM;
	else
		return tfj_err_set(TFJ_EINVAL, "optim: must be sgd, momentum or adam, not '%.32s'", s);
	return 0;
}

const char *tfj_optim_name(enum tfj_optim_kind kind)
{
	switch (kind) {
	case TFJ_OPTIM_SGD: return "sgd";
	case TFJ_OPTIM_MOMENTUM: return "momentum";
	case TFJ_OPTIM_ADAM: return "adam";
	}
	return "unknown";
}

/* [lo, hi) with NaN rejected by the comparisons themselves. */
static int in_range(float v, float lo, float hi)
{
	return v >= lo && v < hi;
}

int tfj_optim_validate(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h)
{
	if (!h)
		return tfj_err_set(TFJ_EINVAL, "optim: hyperparameters are NULL");
	if (kind != TFJ_OPTIM_SGD && kind != TFJ_OPTIM_MOMENTUM && kind != TFJ_OPTIM_ADAM)
		return tfj_err_set(TFJ_EINVAL, "optim: unknown kind %d", (int)kind);
	if (!(h->lr > 0.0f) || !isfinite(h->lr) || h->lr > 1e3f)
		return tfj_err_set(TFJ_ERANGE, "optim: learning rate must be in (0, 1000]");
	if (!in_range(h->weight_decay, 0.0f, 1.0f))
		return tfj_err_set(TFJ_ERANGE, "optim: weight decay must be in [0, 1)");
	if (kind == TFJ_OPTIM_MOMENTUM) {
		if (!in_range(h->momentum, 0.0f, 1.0f))
			return tfj_err_set(TFJ_ERANGE, "optim: momentum must be in [0, 1)");
		if (h->nesterov != 0 && h->nesterov != 1)
			return tfj_err_set(TFJ_EINVAL, "optim: nesterov must be 0 or 1");
	}
	if (kind == TFJ_OPTIM_ADAM) {
		if (!in_range(h->beta1, 0.0f, 1.0f) || !in_range(h->beta2, 0.0f, 1.0f))
			return tfj_err_set(TFJ_ERANGE, "optim: adam betas must be in [0, 1)");
		if (!(h->eps > 0.0f) || !isfinite(h->eps))
			return tfj_err_set(TFJ_ERANGE, "optim: adam epsilon must be > 0");
	}
	return 0;
}

size_t tfj_optim_state_size(enum tfj_optim_kind kind, size_t n)
{
	switch (kind) {
	case TFJ_OPTIM_SGD: return 0;
	case TFJ_OPTIM_MOMENTUM: return n;
	case TFJ_OPTIM_ADAM: return n <= SIZE_MAX / 2 ? 2 * n : 0;
	}
	return 0;
}

/*
 * An element is NaN or Inf when its exponent bits are all ones; adding one
 * exponent step to the masked exponent then carries into bit 31, and only
 * then. So OR-ing (u & exponent) + step over all elements and testing bit
 * 31 is the whole check: no branch, no libm call, nothing but and/add/or.
 * The lanes of a fixed 16-wide block are kept apart so that gcc at -O2
 * (whose cheap vector cost model refuses loops that need a scalar
 * epilogue) vectorises the inner loop as well as clang does; measured on
 * 203,530 floats: 115 -> 45 us (gcc), 111 -> 18 us (clang) against the
 * early-exit isfinite() loop.
 */
#define FINITE_LANES 16

int tfj_optim_finite(const void *v, size_t n)
{
	const unsigned char *b = v;
	uint32_t acc[FINITE_LANES] = { 0 }, u[FINITE_LANES], all = 0;
	size_t i = 0, j;

	for (; i + FINITE_LANES <= n; i += FINITE_LANES) {
		memcpy(u, b + i * sizeof(float), sizeof(u));
		for (j = 0; j < FINITE_LANES; j++)
			acc[j] |= (u[j] & 0x7f800000u) + 0x00800000u;
	}
	for (j = 0; j < FINITE_LANES; j++)
		all |= acc[j];
	for (; i < n; i++) {
		memcpy(u, b + i * sizeof(float), sizeof(u[0]));
		all |= (u[0] & 0x7f800000u) + 0x00800000u;
	}
	return !(all >> 31);
}

int tfj_optim_apply(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h, float *param,
		    const float *grad, float *state, size_t n, int64_t step)
{
	int rc;

	if ((rc = tfj_optim_validate(kind, h)) < 0)
		return rc;
	if ((!param || !grad) && n)
		return tfj_err_set(TFJ_EINVAL, "optim: NULL param or grad");
	if (kind != TFJ_OPTIM_SGD && !state && n)
		return tfj_err_set(TFJ_EINVAL, "optim: %s needs a state array", tfj_optim_name(kind));
	if (step < 0)
		return tfj_err_set(TFJ_ERANGE, "optim: negative step %lld", (long long)step);
	/*
	 * Check first, so a NaN gradient leaves param and state untouched. The
	 * shard checks its pushes itself and calls tfj_optim_update(), but this
	 * function is public and the guarantee must not depend on the caller.
	 */
	if (n && !tfj_optim_finite(grad, n))
		return tfj_err_set(TFJ_ENUMERIC, "optim: gradient holds NaN or Inf");
	tfj_optim_update(kind, h, param, grad, state,
			 kind == TFJ_OPTIM_ADAM && state ? state + n : NULL, n, step);
	return 0;
}

/* Element i of a gradient at any alignment (a plain load on x86 and arm64). */
static inline float grad_at(const unsigned char *g, size_t i)
{
	float v;

	memcpy(&v, g + i * sizeof(float), sizeof(v));
	return v;
}

void tfj_optim_update(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h, float *param_,
		      const void *grad, float *m_, float *v_, size_t n, int64_t step)
{
	/* Distinct arrays (optim.h): restrict lets the loops vectorise without alias checks. */
	float *restrict param = param_, *restrict state = m_;
	const unsigned char *restrict gb = grad;
	const float lr = h->lr, wd = h->weight_decay;
	size_t i;

	switch (kind) {
	case TFJ_OPTIM_SGD:
		for (i = 0; i < n; i++)
			param[i] -= lr * (grad_at(gb, i) + wd * param[i]);
		break;
	case TFJ_OPTIM_MOMENTUM: {
		const float mu = h->momentum;

		/* Two loops, not a branch per element: each vectorises. */
		if (h->nesterov) {
			for (i = 0; i < n; i++) {
				float g = grad_at(gb, i) + wd * param[i];
				float v = mu * state[i] + g;

				state[i] = v;
				param[i] -= lr * (g + mu * v);
			}
		} else {
			for (i = 0; i < n; i++) {
				float g = grad_at(gb, i) + wd * param[i];
				float v = mu * state[i] + g;

				state[i] = v;
				param[i] -= lr * v;
			}
		}
		break;
	}
	case TFJ_OPTIM_ADAM: {
		float *restrict m = m_, *restrict v = v_;
		/* Bias correction for update number t = step + 1. */
		double t = (double)step + 1.0;
		const float c1 = (float)(1.0 - pow(h->beta1, t));
		const float c2 = (float)(1.0 - pow(h->beta2, t));
		const float b1 = h->beta1, b2 = h->beta2, eps = h->eps;

		/*
		 * The hyperparameters in locals, and sqrtf without errno
		 * (its argument is >= 0 here, so the result is the same; see
		 * runtime/CMakeLists.txt): the loop vectorises.
		 */
		for (i = 0; i < n; i++) {
			float g = grad_at(gb, i) + wd * param[i];

			m[i] = b1 * m[i] + (1.0f - b1) * g;
			v[i] = b2 * v[i] + (1.0f - b2) * g * g;
			param[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
		}
		break;
	}
	}
}
