/*
 * compute.c - backend selection, argument checks and memory accounting for
 * the compute interface. The backends themselves (compute_cpu.c, and
 * compute_cuda.cu in the library computelib.c loads) only do arithmetic.
 */
#include "compute/compute.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/compute_backend.h"
#include "compute/computelib.h"

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
	int view;  /* mem is the caller's host memory (tfj_compute_view_new) */
};

/*
 * The CUDA backend library, loaded once per process on first use and never
 * unloaded (computelib.h). The outcome, failure included, is kept so every
 * open says the same thing without touching the file system again.
 */
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static struct tfj_computelib *cuda_lib;
static int cuda_rc;
static char cuda_why[TFJ_ERR_DETAIL_MAX];

static void cuda_load(void)
{
	char path[4096];

	cuda_rc = tfj_computelib_find(path, sizeof(path));
	if (cuda_rc == 0)
		cuda_rc = tfj_computelib_load(&cuda_lib, path);
	if (cuda_rc < 0)
		snprintf(cuda_why, sizeof(cuda_why), "%s", tfj_err_detail());
	tfj_err_clear();
}

/* The CUDA backend's ops, or NULL with the reason in the error detail. */
static const struct tfj_compute_ops *cuda_ops(int *rc)
{
	pthread_once(&cuda_once, cuda_load);
	if (cuda_lib) {
		*rc = 0;
		return tfj_computelib_ops(cuda_lib);
	}
	*rc = tfj_err_set(cuda_rc, "%s", cuda_why);
	return NULL;
}

int tfj_compute_have_cuda(void)
{
	int rc;

	if (cuda_ops(&rc))
		return 1;
	tfj_err_clear();
	return 0;
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
	const struct tfj_compute_ops *gpu;
	char why[TFJ_ERR_DETAIL_MAX];
	int rc;

	if (!out)
		return tfj_err_set(TFJ_EINVAL, "compute: out is NULL");
	*out = NULL;
	if (!device || strcmp(device, "auto") == 0) {
		/* No library or no GPU is normal on CPU nodes: fall back, and say
		 * why, so a GPU node that runs on the CPU is noticed. */
		gpu = cuda_ops(&rc);
		if (gpu && open_with(out, gpu, gpu_mem_cap) == 0)
			return 0;
		tfj_log_info("compute: device auto: no usable GPU, using the CPU", "reason",
			     tfj_err_detail());
		tfj_err_clear();
		return open_with(out, &tfj_compute_cpu_ops, gpu_mem_cap);
	}
	if (strcmp(device, "cpu") == 0)
		return open_with(out, &tfj_compute_cpu_ops, gpu_mem_cap);
	if (strcmp(device, "gpu") == 0) {
		gpu = cuda_ops(&rc);
		if (!gpu) {
			/* Copied: the detail is the buffer tfj_err_set writes. */
			snprintf(why, sizeof(why), "%s", tfj_err_detail());
			return tfj_err_set(rc == TFJ_ENOTFOUND ? TFJ_EUNSUPP : TFJ_EDEVICE,
					   "compute: device gpu requested but the CUDA backend is "
					   "unavailable: %s", why);
		}
		return open_with(out, gpu, gpu_mem_cap);
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
	if (c && !b->view) {
		c->ops->release(c->state, b->mem);
		c->used -= b->n * sizeof(float);
	}
	free(b);
}

int tfj_compute_view_new(struct tfj_compute *c, struct tfj_cbuf **out)
{
	if (!c || !out)
		return tfj_err_set(TFJ_EINVAL, "compute: view: NULL argument");
	*out = NULL;
	if (tfj_compute_is_gpu(c))
		return tfj_err_set(TFJ_EUNSUPP, "compute: %s cannot view host memory",
				   tfj_compute_name(c));
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "compute: buffer handle");
	(*out)->view = 1;
	return 0;
}

int tfj_compute_view_set(struct tfj_cbuf *b, const float *host, size_t n)
{
	if (!b || !b->view || (!host && n))
		return tfj_err_set(TFJ_EINVAL, "compute: view_set: not a view, or NULL memory");
	/* The backend never writes through a view it was given as an input. */
	b->mem = (void *)(uintptr_t)host;
	b->n = n;
	return 0;
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
