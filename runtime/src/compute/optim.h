/*
 * optim.h - optimizers applied in place to a float array.
 *
 * The parameter servers own each variable as a float array plus an
 * optimizer state array of tfj_optim_state_size(kind, n) floats, zeroed
 * before the first update. tfj_optim_apply() performs one update; `step` is
 * the number of updates already applied to this variable (0 for the first),
 * which Adam uses for bias correction.
 *
 *   sgd:      p -= lr * (g + wd * p)
 *   momentum: v = mu * v + g';  p -= lr * v          (or nesterov: lr*(g' + mu*v))
 *   adam:     m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
 *             p -= lr * mhat / (sqrt(vhat) + eps),   g' = g + wd * p
 *
 * A gradient holding NaN or Inf is refused with TFJ_ENUMERIC before any
 * element changes, so a bad step never corrupts the parameters.
 */
#ifndef TFJ_OPTIM_H
#define TFJ_OPTIM_H

#include <stddef.h>
#include <stdint.h>

enum tfj_optim_kind { TFJ_OPTIM_SGD = 0, TFJ_OPTIM_MOMENTUM = 1, TFJ_OPTIM_ADAM = 2 };

struct tfj_optim_hparams {
	float lr;           /* > 0 */
	float momentum;     /* momentum: [0, 1) */
	int nesterov;       /* momentum: 0 or 1 */
	float beta1;        /* adam: [0, 1) */
	float beta2;        /* adam: [0, 1) */
	float eps;          /* adam: > 0 */
	float weight_decay; /* >= 0, L2 added to the gradient */
};

/* Defaults: lr 0.1/0.05/0.001 (sgd/momentum/adam), mu 0.9, b1 0.9, b2 0.999, eps 1e-7. */
void tfj_optim_defaults(struct tfj_optim_hparams *h, enum tfj_optim_kind kind);

/* Parses "sgd", "momentum" or "adam". */
int tfj_optim_parse(enum tfj_optim_kind *out, const char *s);
const char *tfj_optim_name(enum tfj_optim_kind kind);

/* Checks the hyperparameters that `kind` uses. */
int tfj_optim_validate(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h);

/* Floats of state per variable of n floats: 0 (sgd), n (momentum), 2n (adam). */
size_t tfj_optim_state_size(enum tfj_optim_kind kind, size_t n);

/*
 * 1 when none of the n floats at v is NaN or Inf (branch-free, vectorised;
 * see optim.c). v needs no alignment: it may point into received bytes.
 */
int tfj_optim_finite(const void *v, size_t n);

/* One update of param[0..n) with grad[0..n); state as above (NULL for sgd). */
int tfj_optim_apply(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h, float *param,
		    const float *grad, float *state, size_t n, int64_t step);

/*
 * The update of tfj_optim_apply() without its checks, for a caller that
 * applies one gradient in many pieces and has checked once for all of them:
 * h passed tfj_optim_validate(), every piece passed tfj_optim_finite(),
 * step >= 0. The state comes as its blocks: m is momentum's velocity or
 * Adam's first moment, v Adam's second moment (n floats each; NULL where
 * kind keeps none). For a state array laid out as above that is
 * m = state, v = state + n; apart, a piece [o, o + k) of a variable of n
 * floats updates with m = state + o, v = state + n + o. grad is n floats in
 * host byte order at any alignment (the parameter server applies pushes
 * straight from gRPC's receive buffers, where a tensor starts wherever the
 * message put it).
 */
void tfj_optim_update(enum tfj_optim_kind kind, const struct tfj_optim_hparams *h, float *param,
		      const void *grad, float *m, float *v, size_t n, int64_t step);

#endif
