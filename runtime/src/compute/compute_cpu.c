/*
 * compute_cpu.c - the host backend: OpenBLAS sgemm plus plain loops for the
 * element-wise operations. Buffers are ordinary heap memory.
 */
#include "compute/compute_backend.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

static int cpu_open(void **state, char *name, size_t namecap)
{
	*state = NULL;
	snprintf(name, namecap, "cpu (openblas)");
	return 0;
}

static void cpu_close(void *state)
{
	(void)state;
}

static int cpu_alloc(void *state, void **mem, size_t bytes)
{
	/* 64-byte alignment keeps OpenBLAS on its vectorised paths. */
	size_t rounded = (bytes + 63) & ~(size_t)63;

	(void)state;
	*mem = aligned_alloc(64, rounded);
	if (!*mem)
		return tfj_err_set(TFJ_ENOMEM, "compute cpu: %zu bytes", bytes);
	return 0;
}

static void cpu_release(void *state, void *mem)
{
	(void)state;
	free(mem);
}

static int cpu_upload(void *state, void *dst, const float *src, size_t n)
{
	(void)state;
	memcpy(dst, src, n * sizeof(float));
	return 0;
}

static int cpu_download(void *state, float *dst, const void *src, size_t n)
{
	(void)state;
	memcpy(dst, src, n * sizeof(float));
	return 0;
}

static int cpu_gemm(void *state, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
		    const void *a, const void *b, float beta, void *cm)
{
	(void)state;
	/* Row-major, contiguous: the leading dimension is the stored width. */
	int lda = ta ? (int)m : (int)k;
	int ldb = tb ? (int)k : (int)n;

	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		    (int)m, (int)n, (int)k, alpha, a, lda, b, ldb, beta, cm, (int)n);
	return 0;
}

static int cpu_bias_act(void *state, void *zv, const void *biasv, size_t rows, size_t cols,
			int relu)
{
	float *z = zv;
	const float *bias = biasv;
	size_t i, j;

	(void)state;
	for (i = 0; i < rows; i++) {
		float *row = z + i * cols;

		for (j = 0; j < cols; j++) {
			float v = row[j] + bias[j];

			row[j] = (relu && v < 0.0f) ? 0.0f : v;
		}
	}
	return 0;
}

static int cpu_relu_grad(void *state, void *dzv, const void *actv, size_t n)
{
	float *dz = dzv;
	const float *act = actv;
	size_t i;

	(void)state;
	/*
	 * A select, not a conditional store: about half the units are
	 * active, so a branch mispredicts on every other element, and a store
	 * under a branch cannot vectorise. Same results (NaN activations keep
	 * dz, as before).
	 */
	for (i = 0; i < n; i++)
		dz[i] = act[i] <= 0.0f ? 0.0f : dz[i];
	return 0;
}

static int cpu_colsum(void *state, void *outv, const void *mv, size_t rows, size_t cols)
{
	float *out = outv;
	const float *m = mv;
	size_t i, j;

	(void)state;
	memset(out, 0, cols * sizeof(float));
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			out[j] += m[i * cols + j];
	return 0;
}

static int cpu_softmax_xent(void *state, void *logitsv, const void *labelsv, size_t rows,
			    size_t cols, int want_grad, float grad_scale, float *loss, float *hit)
{
	float *logits = logitsv;
	const float *labels = labelsv;
	size_t i, j;

	(void)state;
	for (i = 0; i < rows; i++) {
		float *z = logits + i * cols;
		float lf = labels[i];
		float zmax = -FLT_MAX;
		size_t arg = 0, label;
		double sum = 0.0, lse;

		if (!(lf >= 0.0f && lf < (float)cols) || lf != floorf(lf)) {
			loss[i] = 0.0f;
			hit[i] = -1.0f;
			continue;
		}
		label = (size_t)lf;
		/* A NaN logit never compares greater, so it shows up in the sum. */
		for (j = 0; j < cols; j++) {
			if (z[j] > zmax) {
				zmax = z[j];
				arg = j;
			}
		}
		for (j = 0; j < cols; j++)
			sum += exp((double)z[j] - (double)zmax);
		lse = (double)zmax + log(sum);
		loss[i] = (float)(lse - (double)z[label]);
		hit[i] = arg == label ? 1.0f : 0.0f;
		if (want_grad) {
			for (j = 0; j < cols; j++) {
				double p = exp((double)z[j] - lse);

				z[j] = (float)((p - (j == label ? 1.0 : 0.0)) * grad_scale);
			}
		}
	}
	return 0;
}

int tfj_compute_set_cpu_threads(int n)
{
	if (n < 1 || n > 1024)
		return tfj_err_set(TFJ_ERANGE, "compute cpu: %d threads (1..1024)", n);
	openblas_set_num_threads(n);
	return 0;
}

const struct tfj_compute_ops tfj_compute_cpu_ops = {
	.kind = "cpu",
	.open = cpu_open,
	.close = cpu_close,
	.alloc = cpu_alloc,
	.release = cpu_release,
	.upload = cpu_upload,
	.download = cpu_download,
	.gemm = cpu_gemm,
	.bias_act = cpu_bias_act,
	.relu_grad = cpu_relu_grad,
	.colsum = cpu_colsum,
	.softmax_xent = cpu_softmax_xent,
};
