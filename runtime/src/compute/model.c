/*
 * model.c - softmax regression and ReLU MLPs on top of the compute
 * interface. Layer l maps widths[l] to widths[l+1]; the last layer produces
 * the logits. Forward and backward run on the backend's buffers so a GPU
 * step only moves parameters in and gradients out.
 */
#include "compute/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#define MAX_LAYERS (TFJ_MODEL_MAX_HIDDEN + 1)
_Static_assert(2 * MAX_LAYERS == TFJ_MODEL_MAX_TENSORS, "tensors per model");
/* Rows per forward pass in tfj_model_eval(); bounds the workspace. */
#define EVAL_CHUNK 2048

struct tfj_model {
	struct tfj_model_spec spec;
	struct tfj_compute *c;
	size_t layers;                     /* n_hidden + 1 */
	size_t widths[MAX_LAYERS + 1];
	size_t max_width;
	size_t n_params;
	struct tfj_tensor_info tensors[2 * MAX_LAYERS];
	/*
	 * Parameters and gradients. On a host backend (host = 1) these are
	 * views of the caller's arrays (compute.h), pointed at them on every
	 * call: the gemms read the parameters and write the gradients where
	 * the caller keeps them, with no upload or download copy.
	 */
	int host;
	struct tfj_cbuf *w[MAX_LAYERS], *b[MAX_LAYERS];
	struct tfj_cbuf *dw[MAX_LAYERS], *db[MAX_LAYERS];
	/* Workspace for batch_cap rows: activations, two deltas, labels. */
	size_t batch_cap;
	struct tfj_cbuf *act[MAX_LAYERS + 1];
	struct tfj_cbuf *delta[2];
	struct tfj_cbuf *labels;
	float *labels_host;
};

const char *tfj_model_kind_name(enum tfj_model_kind kind)
{
	return kind == TFJ_MODEL_MLP ? "mlp" : "softmax";
}

int tfj_model_spec_validate(const struct tfj_model_spec *s)
{
	size_t i;

	if (!s)
		return tfj_err_set(TFJ_EINVAL, "model: spec is NULL");
	if (s->kind != TFJ_MODEL_SOFTMAX && s->kind != TFJ_MODEL_MLP)
		return tfj_err_set(TFJ_EINVAL, "model: unknown kind %d", (int)s->kind);
	if (s->input_dim < 1 || s->input_dim > TFJ_MODEL_MAX_WIDTH)
		return tfj_err_set(TFJ_ERANGE, "model: input dim %zu outside 1..%u", s->input_dim,
				   TFJ_MODEL_MAX_WIDTH);
	if (s->classes < 2 || s->classes > TFJ_MODEL_MAX_CLASSES)
		return tfj_err_set(TFJ_ERANGE, "model: classes %zu outside 2..%u", s->classes,
				   TFJ_MODEL_MAX_CLASSES);
	if (s->kind == TFJ_MODEL_SOFTMAX && s->n_hidden != 0)
		return tfj_err_set(TFJ_EINVAL, "model: softmax takes no hidden layers");
	if (s->kind == TFJ_MODEL_MLP && (s->n_hidden < 1 || s->n_hidden > TFJ_MODEL_MAX_HIDDEN))
		return tfj_err_set(TFJ_ERANGE, "model: mlp needs 1..%d hidden layers, got %zu",
				   TFJ_MODEL_MAX_HIDDEN, s->n_hidden);
	for (i = 0; i < s->n_hidden; i++)
		if (s->hidden[i] < 1 || s->hidden[i] > TFJ_MODEL_MAX_WIDTH)
			return tfj_err_set(TFJ_ERANGE, "model: hidden width %zu outside 1..%u",
					   s->hidden[i], TFJ_MODEL_MAX_WIDTH);
	return 0;
}

int tfj_model_spec_parse(struct tfj_model_spec *out, const char *kind, const char *hidden,
			 size_t input_dim, size_t classes)
{
	const char *p = hidden;

	if (!out || !kind)
		return tfj_err_set(TFJ_EINVAL, "model: spec: NULL argument");
	memset(out, 0, sizeof(*out));
	out->input_dim = input_dim;
	out->classes = classes;
	if (strcmp(kind, "softmax") == 0)
		out->kind = TFJ_MODEL_SOFTMAX;
	else if (strcmp(kind, "mlp") == 0)
		out->kind = TFJ_MODEL_MLP;
	else
		return tfj_err_set(TFJ_EINVAL, "model: kind must be softmax or mlp, not '%.32s'",
				   kind);
	while (p && *p) {
		char *end;
		unsigned long v;

		if (out->n_hidden == TFJ_MODEL_MAX_HIDDEN)
			return tfj_err_set(TFJ_ERANGE, "model: more than %d hidden layers",
					   TFJ_MODEL_MAX_HIDDEN);
		if (*p < '0' || *p > '9')
			return tfj_err_set(TFJ_EINVAL, "model: hidden sizes: expected a number at '%.16s'",
					   p);
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v < 1 || v > TFJ_MODEL_MAX_WIDTH)
			return tfj_err_set(TFJ_ERANGE, "model: hidden width outside 1..%u",
					   TFJ_MODEL_MAX_WIDTH);
		out->hidden[out->n_hidden++] = v;
		if (*end == ',' && end[1] != '\0')
			p = end + 1;
		else if (*end == '\0')
			p = end;
		else
			return tfj_err_set(TFJ_EINVAL, "model: hidden sizes: bad text at '%.16s'", end);
	}
	return tfj_model_spec_validate(out);
}

static void free_workspace(struct tfj_model *m)
{
	size_t i;

	for (i = 0; i <= m->layers; i++) {
		tfj_compute_buf_free(m->c, m->act[i]);
		m->act[i] = NULL;
	}
	for (i = 0; i < 2; i++) {
		tfj_compute_buf_free(m->c, m->delta[i]);
		m->delta[i] = NULL;
	}
	tfj_compute_buf_free(m->c, m->labels);
	m->labels = NULL;
	free(m->labels_host);
	m->labels_host = NULL;
	m->batch_cap = 0;
}

/* Makes the workspace hold at least `rows` rows. */
static int ensure_workspace(struct tfj_model *m, size_t rows)
{
	size_t i;
	int rc;

	if (rows <= m->batch_cap)
		return 0;
	free_workspace(m);
	for (i = 0; i <= m->layers; i++) {
		rc = tfj_compute_buf_new(m->c, &m->act[i], rows * m->widths[i]);
		if (rc < 0)
			goto fail;
	}
	for (i = 0; i < 2; i++) {
		rc = tfj_compute_buf_new(m->c, &m->delta[i], rows * m->max_width);
		if (rc < 0)
			goto fail;
	}
	rc = tfj_compute_buf_new(m->c, &m->labels, rows);
	if (rc < 0)
		goto fail;
	m->labels_host = malloc(rows * sizeof(float));
	if (!m->labels_host) {
		rc = tfj_err_set(TFJ_ENOMEM, "model: label scratch");
		goto fail;
	}
	m->batch_cap = rows;
	return 0;
fail:
	free_workspace(m);
	return rc;
}

void tfj_model_free(struct tfj_model *m)
{
	size_t i;

	if (!m)
		return;
	free_workspace(m);
	for (i = 0; i < m->layers; i++) {
		tfj_compute_buf_free(m->c, m->w[i]);
		tfj_compute_buf_free(m->c, m->b[i]);
		tfj_compute_buf_free(m->c, m->dw[i]);
		tfj_compute_buf_free(m->c, m->db[i]);
	}
	free(m);
}

static void set_tensor(struct tfj_tensor_info *t, const char *layer, const char *what,
		       size_t rank, size_t d0, size_t d1)
{
	snprintf(t->name, sizeof(t->name), "%s/%s", layer, what);
	t->rank = rank;
	t->shape[0] = d0;
	t->shape[1] = rank == 2 ? d1 : 0;
	t->count = rank == 2 ? d0 * d1 : d0;
}

int tfj_model_shapes(struct tfj_tensor_info *out, size_t *n, size_t cap,
		     const struct tfj_model_spec *spec)
{
	size_t widths[MAX_LAYERS + 1], layers, l, params = 0;
	int rc;

	*n = 0;
	rc = tfj_model_spec_validate(spec);
	if (rc < 0)
		return rc;
	layers = spec->n_hidden + 1;
	if (cap < 2 * layers)
		return tfj_err_set(TFJ_ERANGE, "model: room for %zu tensors, %zu needed", cap,
				   2 * layers);
	widths[0] = spec->input_dim;
	for (l = 0; l < spec->n_hidden; l++)
		widths[l + 1] = spec->hidden[l];
	widths[layers] = spec->classes;
	for (l = 0; l < layers; l++) {
		char layer[32];
		size_t fan_in = widths[l], fan_out = widths[l + 1];

		/* Widths are capped at 2^16, so fan_in * fan_out cannot overflow. */
		if (l + 1 == layers)
			snprintf(layer, sizeof(layer), "logits");
		else
			snprintf(layer, sizeof(layer), "dense_%zu", l);
		set_tensor(&out[2 * l], layer, "kernel", 2, fan_in, fan_out);
		set_tensor(&out[2 * l + 1], layer, "bias", 1, fan_out, 0);
		params += fan_in * fan_out + fan_out;
		if (params > TFJ_MODEL_MAX_PARAMS)
			return tfj_err_set(TFJ_ETOOBIG, "model: more than %u parameters",
					   TFJ_MODEL_MAX_PARAMS);
	}
	*n = 2 * layers;
	return 0;
}

int tfj_model_new(struct tfj_model **out, const struct tfj_model_spec *spec,
		  struct tfj_compute *c)
{
	struct tfj_model *m = NULL;
	size_t l;
	int rc;

	if (!out || !c)
		return tfj_err_set(TFJ_EINVAL, "model: NULL argument");
	*out = NULL;
	rc = tfj_model_spec_validate(spec);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return tfj_err_set(TFJ_ENOMEM, "model");
	m->spec = *spec;
	m->c = c;
	m->layers = spec->n_hidden + 1;
	m->widths[0] = spec->input_dim;
	for (l = 0; l < spec->n_hidden; l++)
		m->widths[l + 1] = spec->hidden[l];
	m->widths[m->layers] = spec->classes;
	for (l = 0; l <= m->layers; l++)
		if (m->widths[l] > m->max_width)
			m->max_width = m->widths[l];
	rc = tfj_model_shapes(m->tensors, &l, 2 * MAX_LAYERS, spec);
	if (rc < 0)
		goto fail;
	for (l = 0; l < 2 * m->layers; l++)
		m->n_params += m->tensors[l].count;
	m->host = !tfj_compute_is_gpu(c);
	for (l = 0; l < m->layers && m->host; l++)
		if ((rc = tfj_compute_view_new(c, &m->w[l])) < 0 ||
		    (rc = tfj_compute_view_new(c, &m->b[l])) < 0 ||
		    (rc = tfj_compute_view_new(c, &m->dw[l])) < 0 ||
		    (rc = tfj_compute_view_new(c, &m->db[l])) < 0)
			goto fail;
	for (l = 0; l < m->layers && !m->host; l++) {
		size_t wn = m->tensors[2 * l].count, bn = m->tensors[2 * l + 1].count;

		if ((rc = tfj_compute_buf_new(c, &m->w[l], wn)) < 0 ||
		    (rc = tfj_compute_buf_new(c, &m->b[l], bn)) < 0 ||
		    (rc = tfj_compute_buf_new(c, &m->dw[l], wn)) < 0 ||
		    (rc = tfj_compute_buf_new(c, &m->db[l], bn)) < 0)
			goto fail;
	}
	*out = m;
	return 0;
fail:
	tfj_model_free(m);
	return rc;
}

const struct tfj_model_spec *tfj_model_get_spec(const struct tfj_model *m)
{
	return &m->spec;
}

size_t tfj_model_num_tensors(const struct tfj_model *m)
{
	return m ? 2 * m->layers : 0;
}

const struct tfj_tensor_info *tfj_model_tensor(const struct tfj_model *m, size_t i)
{
	return (m && i < 2 * m->layers) ? &m->tensors[i] : NULL;
}

int tfj_model_tensor_index(const struct tfj_model *m, const char *name)
{
	size_t i;

	for (i = 0; m && name && i < 2 * m->layers; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return (int)i;
	return -1;
}

size_t tfj_model_num_params(const struct tfj_model *m)
{
	return m ? m->n_params : 0;
}

/* splitmix64: small, seedable, and identical on every platform. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1), never 0 so log() below is finite. */
static double rng_unit(uint64_t *s)
{
	return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

int tfj_model_init_params(const struct tfj_model *m, uint64_t seed, float *const *params)
{
	uint64_t s = seed ^ 0x74666a6d6f64656cull;
	size_t l, i;

	if (!m || !params)
		return tfj_err_set(TFJ_EINVAL, "model: init: NULL argument");
	for (l = 0; l < m->layers; l++) {
		const struct tfj_tensor_info *w = &m->tensors[2 * l];
		size_t fan_in = m->widths[l], fan_out = m->widths[l + 1];
		int relu_layer = l + 1 < m->layers;

		if (!params[2 * l] || !params[2 * l + 1])
			return tfj_err_set(TFJ_EINVAL, "model: init: tensor %zu is NULL", 2 * l);
		for (i = 0; i < w->count; i++) {
			double v;

			if (relu_layer) {
				/* He: keeps the activation variance through ReLUs. */
				double r = sqrt(-2.0 * log(rng_unit(&s)));

				v = r * cos(6.283185307179586 * rng_unit(&s)) * sqrt(2.0 / (double)fan_in);
			} else {
				/* Glorot-uniform for the linear logits layer. */
				double lim = sqrt(6.0 / (double)(fan_in + fan_out));

				v = (2.0 * rng_unit(&s) - 1.0) * lim;
			}
			params[2 * l][i] = (float)v;
		}
		memset(params[2 * l + 1], 0, fan_out * sizeof(float));
	}
	return 0;
}

static int upload_params(struct tfj_model *m, const float *const *params)
{
	size_t l;
	int rc;

	if (!params)
		return tfj_err_set(TFJ_EINVAL, "model: params is NULL");
	for (l = 0; l < m->layers; l++) {
		if (!params[2 * l] || !params[2 * l + 1])
			return tfj_err_set(TFJ_EINVAL, "model: tensor %s is NULL",
					   m->tensors[2 * l].name);
		if (m->host)
			rc = tfj_compute_view_set(m->w[l], params[2 * l], m->tensors[2 * l].count);
		else
			rc = tfj_compute_upload(m->c, m->w[l], params[2 * l],
						m->tensors[2 * l].count);
		if (rc < 0)
			return rc;
		if (m->host)
			rc = tfj_compute_view_set(m->b[l], params[2 * l + 1],
						  m->tensors[2 * l + 1].count);
		else
			rc = tfj_compute_upload(m->c, m->b[l], params[2 * l + 1],
						m->tensors[2 * l + 1].count);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Forward pass of n rows (n <= batch_cap) from host x/y, ending in the
 * softmax cross-entropy. With want_grad the logits buffer holds
 * d(mean loss)/d(logits) afterwards.
 */
static int forward(struct tfj_model *m, const float *x, const uint8_t *y, size_t n,
		   int want_grad, double *loss_sum, size_t *correct)
{
	size_t l, i;
	int rc;

	for (i = 0; i < n; i++) {
		if (y[i] >= m->spec.classes)
			return tfj_err_set(TFJ_EINVAL, "model: label %u of row %zu >= %zu classes",
					   (unsigned)y[i], i, m->spec.classes);
		m->labels_host[i] = (float)y[i];
	}
	if ((rc = tfj_compute_upload(m->c, m->act[0], x, n * m->widths[0])) < 0 ||
	    (rc = tfj_compute_upload(m->c, m->labels, m->labels_host, n)) < 0)
		return rc;
	for (l = 0; l < m->layers; l++) {
		rc = tfj_compute_gemm(m->c, 0, 0, n, m->widths[l + 1], m->widths[l], 1.0f,
				      m->act[l], m->w[l], 0.0f, m->act[l + 1]);
		if (rc < 0)
			return rc;
		rc = tfj_compute_bias_act(m->c, m->act[l + 1], m->b[l], n, m->widths[l + 1],
					  l + 1 < m->layers);
		if (rc < 0)
			return rc;
	}
	rc = tfj_compute_softmax_xent(m->c, m->act[m->layers], m->labels, n,
				      m->spec.classes, want_grad, 1.0f / (float)n, loss_sum,
				      correct);
	if (rc < 0)
		return rc;
	if (!isfinite(*loss_sum))
		return tfj_err_set(TFJ_ENUMERIC, "model: loss is not finite");
	return 0;
}

/*
 * Where layer l's gradients go: on a host backend the gradient views are
 * pointed at grads (the backward pass writes there), elsewhere nothing.
 */
static int bind_grads(struct tfj_model *m, float *const *grads)
{
	size_t l;
	int rc;

	for (l = 0; l < m->layers; l++) {
		if (!grads[2 * l] || !grads[2 * l + 1])
			return tfj_err_set(TFJ_EINVAL, "model: grad tensor %zu is NULL", 2 * l);
		if (!m->host)
			continue;
		if ((rc = tfj_compute_view_set(m->dw[l], grads[2 * l],
					       m->tensors[2 * l].count)) < 0 ||
		    (rc = tfj_compute_view_set(m->db[l], grads[2 * l + 1],
					       m->tensors[2 * l + 1].count)) < 0)
			return rc;
	}
	return 0;
}

/* Layer l's gradients (kernel 2l, bias 2l + 1) into grads, unless they are there. */
static int download_layer(struct tfj_model *m, size_t l, float *const *grads)
{
	int rc;

	if (m->host)
		return 0;
	rc = tfj_compute_download(m->c, grads[2 * l], m->dw[l], m->tensors[2 * l].count);
	if (rc < 0)
		return rc;
	return tfj_compute_download(m->c, grads[2 * l + 1], m->db[l], m->tensors[2 * l + 1].count);
}

int tfj_model_grad(struct tfj_model *m, const float *const *params, const float *x,
		   const uint8_t *y, size_t n, float *const *grads, float *loss)
{
	return tfj_model_grad_ready(m, params, x, y, n, grads, loss, NULL, NULL);
}

int tfj_model_grad_ready(struct tfj_model *m, const float *const *params, const float *x,
			 const uint8_t *y, size_t n, float *const *grads, float *loss,
			 tfj_model_ready_fn ready, void *ud)
{
	struct tfj_cbuf *cur;
	double loss_sum = 0.0;
	size_t correct = 0, l;
	int rc, t = 0;

	if (!m || !x || !y || !grads)
		return tfj_err_set(TFJ_EINVAL, "model: grad: NULL argument");
	if (n < 1 || n > TFJ_MODEL_MAX_BATCH)
		return tfj_err_set(TFJ_ERANGE, "model: batch of %zu outside 1..%u", n,
				   TFJ_MODEL_MAX_BATCH);
	if ((rc = ensure_workspace(m, n)) < 0 || (rc = upload_params(m, params)) < 0 ||
	    (rc = bind_grads(m, grads)) < 0)
		return rc;
	rc = forward(m, x, y, n, 1, &loss_sum, &correct);
	if (rc < 0)
		return rc;
	if (loss)
		*loss = (float)(loss_sum / (double)n);
	/*
	 * Backward: cur holds dLoss/dZ of layer l (pre-activation). Each
	 * layer's gradients are final as soon as its dw and db are computed,
	 * so they go to the caller right then, last layer first.
	 */
	cur = m->act[m->layers];
	for (l = m->layers; l-- > 0;) {
		size_t in = m->widths[l], outw = m->widths[l + 1];

		rc = tfj_compute_gemm(m->c, 1, 0, in, outw, n, 1.0f, m->act[l], cur, 0.0f, m->dw[l]);
		if (rc < 0)
			return rc;
		rc = tfj_compute_colsum(m->c, m->db[l], cur, n, outw);
		if (rc < 0)
			return rc;
		/*
		 * A device download waits for the pass so far: only a caller
		 * that wants each layer early pays that inside the pass; the
		 * others get every layer after it, as before.
		 */
		if (ready) {
			if ((rc = download_layer(m, l, grads)) < 0)
				return rc;
			ready(ud, 2 * l);
		}
		if (l > 0) {
			struct tfj_cbuf *next = m->delta[t];

			t ^= 1;
			rc = tfj_compute_gemm(m->c, 0, 1, n, in, outw, 1.0f, cur, m->w[l], 0.0f, next);
			if (rc < 0)
				return rc;
			/* act[l] is the ReLU output, > 0 exactly where the ReLU passed. */
			rc = tfj_compute_relu_grad(m->c, next, m->act[l], n * in);
			if (rc < 0)
				return rc;
			cur = next;
		}
	}
	if (!ready)
		for (l = 0; l < m->layers; l++)
			if ((rc = download_layer(m, l, grads)) < 0)
				return rc;
	return 0;
}

int tfj_model_eval(struct tfj_model *m, const float *const *params, const float *x,
		   const uint8_t *y, size_t n, float *acc, float *loss)
{
	double total_loss = 0.0;
	size_t total_correct = 0, done = 0;
	int rc;

	if (!m || !x || !y)
		return tfj_err_set(TFJ_EINVAL, "model: eval: NULL argument");
	if (n < 1)
		return tfj_err_set(TFJ_ERANGE, "model: eval of 0 examples");
	if ((rc = ensure_workspace(m, n < EVAL_CHUNK ? n : EVAL_CHUNK)) < 0 ||
	    (rc = upload_params(m, params)) < 0)
		return rc;
	while (done < n) {
		size_t rows = n - done, correct = 0;
		double sum = 0.0;

		if (rows > m->batch_cap)
			rows = m->batch_cap;
		rc = forward(m, x + done * m->widths[0], y + done, rows, 0, &sum, &correct);
		if (rc < 0)
			return rc;
		total_loss += sum;
		total_correct += correct;
		done += rows;
	}
	if (acc)
		*acc = (float)((double)total_correct / (double)n);
	if (loss)
		*loss = (float)(total_loss / (double)n);
	return 0;
}
