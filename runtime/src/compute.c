/*
 * compute.c - backend selection, argument checks and memory accounting for
 * the compute interface. The backends themselves (compute_cpu.c,
 * compute_cuda.cu) only do arithmetic.
 */
#include "compute.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/log.h>

#define NAME_MAX_LEN 128
/* Rows handed to softmax_xent per call bound the host scratch arrays. */
#define XENT_MAX_ROWS (1u << 20)

struct tfj_compute {
	const struct tfj_compute_ops *ops;
	void *state;
	size_t cap;   /* 0 = no cap */
	size_t used;
	float *scratch; /* 2 * scratch_rows floats for per-row loss and hit */
	size_t scratch_rows;
	char name[NAME_MAX_LEN];
};

struct tfj_cbuf {
	void *mem;
	size_t n;
};

/*
 * The CUDA backend is registered here, and only here, when the build
 * compiled compute_cuda.cu (TfjCuda.cmake defines TFJOB_HAVE_CUDA=1 then).
 * A weak symbol would not do: nothing else references the CUDA object, so
 * the linker would never pull it out of the static library.
 */
#if defined(TFJOB_HAVE_CUDA) && TFJOB_HAVE_CUDA
static const struct tfj_compute_ops *cuda_ops(void)
{
	return &tfj_compute_cuda_ops;
}
#else
static const struct tfj_compute_ops *cuda_ops(void)
{
	return NULL;
}
#endif

int tfj_compute_have_cuda(void)
{
	return cuda_ops() != NULL;
}

static int open_with(struct tfj_compute **out, const struct tfj_compute_ops *ops, size_t cap)
{
	struct tfj_compute *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return tfj_err_set(TFJ_ENOMEM, "compute: handle");
	c->ops = ops;
	c->cap = cap;
	rc = ops->open(&c->state, c->name, sizeof(c->name));
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int tfj_compute_open(struct tfj_compute **out, const char *device, size_t gpu_mem_cap)
{
	const struct tfj_compute_ops *gpu = cuda_ops();
	int rc;

	if (!out)
		return tfj_err_set(TFJ_EINVAL, "compute: out is NULL");
	*out = NULL;
	if (!device || strcmp(device, "auto") == 0) {
		/* A missing or broken GPU is normal on CPU nodes: fall back. */
		if (gpu) {
			if (open_with(out, gpu, gpu_mem_cap) == 0)
				return 0;
			/* Say why, so a GPU node running on the CPU is noticed. */
			tfj_log_info("compute: no usable GPU, using the CPU", "reason",
				     tfj_err_detail());
		}
		tfj_err_clear();
		return open_with(out, &tfj_compute_cpu_ops, gpu_mem_cap);
	}
	if (strcmp(device, "cpu") == 0)
		return open_with(out, &tfj_compute_cpu_ops, gpu_mem_cap);
	if (strcmp(device, "gpu") == 0) {
		if (!gpu)
			return tfj_err_set(TFJ_EUNSUPP,
					   "compute: device gpu requested but this build has no CUDA backend");
		rc = open_with(out, gpu, gpu_mem_cap);
		return rc;
	}
	return tfj_err_set(TFJ_EINVAL, "compute: device must be cpu, gpu or auto, not '%.32s'",
			   device);
}

void tfj_compute_free(struct tfj_compute *c)
{
	if (!c)
		return;
	c->ops->close(c->state);
	free(c->scratch);
	free(c);
}

const char *tfj_compute_name(const struct tfj_compute *c)
{
	return c ? c->name : "none";
}

int tfj_compute_is_gpu(const struct tfj_compute *c)
{
	return c && strcmp(c->ops->kind, "gpu") == 0;
}

size_t tfj_compute_mem_used(const struct tfj_compute *c)
{
	return c ? c->used : 0;
}

int tfj_compute_buf_new(struct tfj_compute *c, struct tfj_cbuf **out, size_t n)
{
	struct tfj_cbuf *b;
	size_t bytes;
	int rc;

	if (!c || !out || n == 0)
		return tfj_err_set(TFJ_EINVAL, "compute: bad buffer request");
	*out = NULL;
	if (n > SIZE_MAX / sizeof(float))
		return tfj_err_set(TFJ_ETOOBIG, "compute: buffer of %zu floats", n);
	bytes = n * sizeof(float);
	if (c->cap && (bytes > c->cap || c->used > c->cap - bytes))
		return tfj_err_set(TFJ_ETOOBIG,
				   "compute: %zu bytes would exceed the memory cap of %zu (in use %zu)",
				   bytes, c->cap, c->used);
	b = calloc(1, sizeof(*b));
	if (!b)
		return tfj_err_set(TFJ_ENOMEM, "compute: buffer handle");
	rc = c->ops->alloc(c->state, &b->mem, bytes);
	if (rc < 0) {
		free(b);
		return rc;
	}
	b->n = n;
	c->used += bytes;
	*out = b;
	return 0;
}

void tfj_compute_buf_free(struct tfj_compute *c, struct tfj_cbuf *b)
{
	if (!b)
		return;
	if (c) {
		c->ops->release(c->state, b->mem);
		c->used -= b->n * sizeof(float);
	}
	free(b);
}

size_t tfj_compute_buf_len(const struct tfj_cbuf *b)
{
	return b ? b->n : 0;
}

int tfj_compute_upload(struct tfj_compute *c, struct tfj_cbuf *b, const float *host, size_t n)
{
	if (!c || !b || (!host && n))
		return tfj_err_set(TFJ_EINVAL, "compute: upload: NULL argument");
	if (n > b->n)
		return tfj_err_set(TFJ_ERANGE, "compute: upload of %zu floats into %zu", n, b->n);
	return n ? c->ops->upload(c->state, b->mem, host, n) : 0;
}

int tfj_compute_download(struct tfj_compute *c, float *host, const struct tfj_cbuf *b, size_t n)
{
	if (!c || !b || (!host && n))
		return tfj_err_set(TFJ_EINVAL, "compute: download: NULL argument");
	if (n > b->n)
		return tfj_err_set(TFJ_ERANGE, "compute: download of %zu floats from %zu", n, b->n);
	return n ? c->ops->download(c->state, host, b->mem, n) : 0;
}

/* 1 when rows * cols floats fit into b without overflow. */
static int fits(const struct tfj_cbuf *b, size_t rows, size_t cols)
{
	if (!b || rows == 0 || cols == 0)
		return 0;
	if (rows > SIZE_MAX / cols)
		return 0;
	return rows * cols <= b->n;
}

int tfj_compute_gemm(struct tfj_compute *c, int ta, int tb, size_t m, size_t n, size_t k,
		     float alpha, const struct tfj_cbuf *a, const struct tfj_cbuf *b,
		     float beta, struct tfj_cbuf *cm)
{
	if (!c)
		return tfj_err_set(TFJ_EINVAL, "compute: gemm: NULL handle");
	/* BLAS takes int dimensions; anything larger is far past our caps. */
	if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
		return tfj_err_set(TFJ_ERANGE, "compute: gemm dimensions too large");
	if (!fits(a, m, k) || !fits(b, k, n) || !fits(cm, m, n))
		return tfj_err_set(TFJ_EINVAL, "compute: gemm %zux%zux%zu: buffers too small", m,
				   n, k);
	return c->ops->gemm(c->state, !!ta, !!tb, m, n, k, alpha, a->mem, b->mem, beta, cm->mem);
}

int tfj_compute_bias_act(struct tfj_compute *c, struct tfj_cbuf *z, const struct tfj_cbuf *bias,
			 size_t rows, size_t cols, int relu)
{
	if (!c || !fits(z, rows, cols) || !fits(bias, 1, cols))
		return tfj_err_set(TFJ_EINVAL, "compute: bias_act: bad arguments");
	return c->ops->bias_act(c->state, z->mem, bias->mem, rows, cols, !!relu);
}

int tfj_compute_relu_grad(struct tfj_compute *c, struct tfj_cbuf *dz, const struct tfj_cbuf *act,
			  size_t n)
{
	if (!c || !fits(dz, 1, n) || !fits(act, 1, n))
		return tfj_err_set(TFJ_EINVAL, "compute: relu_grad: bad arguments");
	return c->ops->relu_grad(c->state, dz->mem, act->mem, n);
}

int tfj_compute_colsum(struct tfj_compute *c, struct tfj_cbuf *out, const struct tfj_cbuf *m,
		       size_t rows, size_t cols)
{
	if (!c || !fits(out, 1, cols) || !fits(m, rows, cols))
		return tfj_err_set(TFJ_EINVAL, "compute: colsum: bad arguments");
	return c->ops->colsum(c->state, out->mem, m->mem, rows, cols);
}

int tfj_compute_softmax_xent(struct tfj_compute *c, struct tfj_cbuf *logits,
			     const struct tfj_cbuf *labels, size_t rows, size_t cols,
			     int want_grad, float grad_scale, double *loss_sum, size_t *correct)
{
	double sum = 0.0;
	size_t hits = 0, i;
	int rc;

	if (!c || !fits(logits, rows, cols) || !fits(labels, rows, 1) || !loss_sum || !correct)
		return tfj_err_set(TFJ_EINVAL, "compute: softmax_xent: bad arguments");
	if (rows > XENT_MAX_ROWS)
		return tfj_err_set(TFJ_ERANGE, "compute: softmax_xent: %zu rows", rows);
	if (rows > c->scratch_rows) {
		float *s = realloc(c->scratch, 2 * rows * sizeof(float));

		if (!s)
			return tfj_err_set(TFJ_ENOMEM, "compute: softmax_xent scratch");
		c->scratch = s;
		c->scratch_rows = rows;
	}
	rc = c->ops->softmax_xent(c->state, logits->mem, labels->mem, rows, cols, !!want_grad,
				  grad_scale, c->scratch, c->scratch + rows);
	if (rc < 0)
		return rc;
	for (i = 0; i < rows; i++) {
		float hit = c->scratch[rows + i];

		/* Backends flag a label outside [0, cols) with hit = -1. */
		if (hit < 0.0f)
			return tfj_err_set(TFJ_EINVAL, "compute: softmax_xent: row %zu: label out of range",
					   i);
		sum += c->scratch[i];
		hits += hit > 0.5f;
	}
	*loss_sum = sum;
	*correct = hits;
	return 0;
}
