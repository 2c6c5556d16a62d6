/*
 * model.h - the trainable models: softmax regression and an MLP with ReLU
 * hidden layers, both ending in a softmax cross-entropy loss.
 *
 * A model is a spec plus an ordered list of named tensors (its parameters).
 * The tensors are kept by the caller as host float arrays, one per tensor,
 * in the order tfj_model_tensor() lists them; this is what the parameter
 * servers store, split and ship. The model itself holds no parameters, only
 * compute workspace, so one model object serves any number of parameter sets.
 *
 * Tensor names and order for input dim D, hidden sizes H1..Hk, C classes:
 *   "dense_0/kernel" [D, H1], "dense_0/bias" [H1], ...,
 *   "dense_{k-1}/kernel" [H{k-1}, Hk], "dense_{k-1}/bias" [Hk],
 *   "logits/kernel" [Hk or D, C], "logits/bias" [C].
 * Softmax regression is the k = 0 case (just the logits layer).
 *
 * Ownership: tfj_model_new() returns a model the caller frees with
 * tfj_model_free(); the model borrows the compute handle, which must outlive
 * it. Threading: one model is used by one thread at a time.
 */
#ifndef TFJ_MODEL_H
#define TFJ_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "compute/compute.h"

#define TFJ_MODEL_MAX_HIDDEN 8          /* hidden layers */
#define TFJ_MODEL_MAX_WIDTH 65536       /* input dim, hidden width, classes */
#define TFJ_MODEL_MAX_CLASSES 256       /* labels are uint8_t */
#define TFJ_MODEL_MAX_PARAMS (256u << 20) /* floats over all tensors (1 GiB) */
#define TFJ_MODEL_MAX_BATCH 16384       /* rows per tfj_model_grad() call */
#define TFJ_TENSOR_NAME_MAX 64          /* including the NUL */
#define TFJ_MODEL_MAX_TENSORS (2 * (TFJ_MODEL_MAX_HIDDEN + 1)) /* a kernel and a bias per layer */

enum tfj_model_kind { TFJ_MODEL_SOFTMAX = 0, TFJ_MODEL_MLP = 1 };

struct tfj_model_spec {
	enum tfj_model_kind kind;
	size_t input_dim;
	size_t n_hidden;                       /* 0 for softmax, >= 1 for mlp */
	size_t hidden[TFJ_MODEL_MAX_HIDDEN];
	size_t classes;
};

struct tfj_tensor_info {
	char name[TFJ_TENSOR_NAME_MAX];
	size_t rank;      /* 1 or 2 */
	size_t shape[2];  /* shape[1] unused when rank == 1 */
	size_t count;     /* product of the shape */
};

/*
 * Builds a spec from text, as given on a command line: kind "softmax" or
 * "mlp", hidden a comma-separated list of widths ("256,128"; NULL or "" for
 * softmax; required for mlp). Bad text is TFJ_EINVAL with a detail.
 */
int tfj_model_spec_parse(struct tfj_model_spec *out, const char *kind, const char *hidden,
			 size_t input_dim, size_t classes);

/* Checks a spec against the limits above. */
int tfj_model_spec_validate(const struct tfj_model_spec *spec);

/* "softmax" or "mlp". */
const char *tfj_model_kind_name(enum tfj_model_kind kind);

struct tfj_model;

/*
 * The tensors (names, shapes, in model order) of a model of `spec`,
 * computed from the spec alone, without building the model: out[0..*n)
 * of cap entries (TFJ_MODEL_MAX_TENSORS is always enough). TFJ_EINVAL for
 * a bad spec, TFJ_ETOOBIG over TFJ_MODEL_MAX_PARAMS, TFJ_ERANGE when cap
 * is too small (*n is 0 on any error).
 */
int tfj_model_shapes(struct tfj_tensor_info *out, size_t *n, size_t cap,
		     const struct tfj_model_spec *spec);

int tfj_model_new(struct tfj_model **out, const struct tfj_model_spec *spec,
		  struct tfj_compute *c);
void tfj_model_free(struct tfj_model *m);

const struct tfj_model_spec *tfj_model_get_spec(const struct tfj_model *m);
size_t tfj_model_num_tensors(const struct tfj_model *m);
/* Tensor i (i < tfj_model_num_tensors()); NULL when out of range. */
const struct tfj_tensor_info *tfj_model_tensor(const struct tfj_model *m, size_t i);
/* Index of the tensor called `name`, or -1. */
int tfj_model_tensor_index(const struct tfj_model *m, const char *name);
/* Total floats over all tensors. */
size_t tfj_model_num_params(const struct tfj_model *m);

/*
 * Fills params[i] (caller-allocated, tfj_model_tensor(m, i)->count floats)
 * with a seeded initialisation: He-normal kernels for ReLU layers,
 * Glorot-uniform for the logits kernel, zero biases. Same seed, same values.
 */
int tfj_model_init_params(const struct tfj_model *m, uint64_t seed, float *const *params);

/*
 * Mean cross-entropy loss over the batch x (n x input_dim, row-major) with
 * labels y, and its gradient with respect to every tensor into grads[i]
 * (caller-allocated, same shapes as params). 1 <= n <= TFJ_MODEL_MAX_BATCH.
 * Returns TFJ_ENUMERIC when the loss is NaN or infinite (grads are then
 * unspecified), TFJ_EINVAL for a label >= classes.
 */
int tfj_model_grad(struct tfj_model *m, const float *const *params, const float *x,
		   const uint8_t *y, size_t n, float *const *grads, float *loss);

/*
 * Told that grads[first_var..] are final: the backward pass computes the
 * layers last to first, and calls this once per layer, right after that
 * layer's kernel and bias gradients are in grads, with first_var the
 * kernel's index (2l). It runs on the caller's thread, inside the pass,
 * and must not touch grads[0..first_var).
 */
typedef void (*tfj_model_ready_fn)(void *ud, size_t first_var);

/*
 * tfj_model_grad, calling ready(ud, ...) as each layer's gradients are
 * done (see tfj_model_ready_fn; ready may be NULL), so that a caller can
 * send them while the rest of the pass runs. The loss is known, and *loss
 * set, before the first call; a NaN loss fails before any.
 */
int tfj_model_grad_ready(struct tfj_model *m, const float *const *params, const float *x,
			 const uint8_t *y, size_t n, float *const *grads, float *loss,
			 tfj_model_ready_fn ready, void *ud);

/*
 * Accuracy (fraction correct) and mean loss over n examples (any n >= 1;
 * evaluated in chunks). Either out-pointer may be NULL. TFJ_ENUMERIC as above.
 */
int tfj_model_eval(struct tfj_model *m, const float *const *params, const float *x,
		   const uint8_t *y, size_t n, float *acc, float *loss);

#endif
