/*
 * compute_cuda.cu - the CUDA backend: cuBLAS sgemm plus small kernels for
 * the element-wise operations. It is the whole of the backend library
 * libtfjob-compute-cuda.so (built only when TfjCuda.cmake finds the
 * toolkit), which tfjob-runtime loads with dlopen (computelib.c) and which
 * exports one symbol, tfj_compute_plugin_entry (compute_cuda.map). This is
 * the one file of the project that contains CUDA code.
 *
 * The library links no project library: error details go back through the
 * runtime's tfj_err_set, handed in by the entry point (struct
 * tfj_compute_host), and err.h is used for its codes only.
 *
 * Row-major on cuBLAS: cuBLAS is column-major, and a row-major m x n matrix
 * is the same bytes as a column-major n x m one. So C = op(A) op(B) in
 * row-major is computed as C^T = op(B)^T op(A)^T in column-major, i.e.
 * sgemm with the operands swapped and m/n exchanged.
 */
#include "compute/compute_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The common headers are C and carry no extern "C" of their own. */
extern "C" {
#include <tfj/err.h>
}

#define THREADS 256

/* The runtime's services; set by the entry point when the ABI matches. */
static const struct tfj_compute_host *host;

/* Formats here and hands the text to the runtime's tfj_err_set. */
static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return host ? host->err_set(code, "%s", msg) : code;
}

struct cuda_state {
	int device;
	cublasHandle_t blas;
	/* Device scratch for per-row loss and hit of softmax_xent. */
	float *rows_dev;
	size_t rows_cap;
};

static int cuda_fail(cudaError_t e, const char *what)
{
	return fail(TFJ_EDEVICE, "cuda: %s: %s", what, cudaGetErrorString(e));
}

static int blas_fail(cublasStatus_t s, const char *what)
{
	return fail(TFJ_EDEVICE, "cublas: %s: status %d", what, (int)s);
}

static unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;

	/* Grid-stride loops below cover anything past this many blocks. */
	return (unsigned)(b > 65535 ? 65535 : (b ? b : 1));
}

static int cuda_open(void **state, char *name, size_t namecap)
{
	struct cuda_state *s;
	struct cudaDeviceProp prop;
	cudaError_t e;
	cublasStatus_t bs;
	int count = 0;

	*state = NULL;
	/* CUDA_VISIBLE_DEVICES is applied by the runtime: count is what we may use. */
	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess)
		return cuda_fail(e, "no usable device");
	if (count < 1)
		return fail(TFJ_EDEVICE, "cuda: no visible device");
	s = (struct cuda_state *)calloc(1, sizeof(*s));
	if (!s)
		return fail(TFJ_ENOMEM, "cuda: state");
	s->device = 0;
	e = cudaSetDevice(s->device);
	if (e == cudaSuccess)
		e = cudaGetDeviceProperties(&prop, s->device);
	if (e != cudaSuccess) {
		free(s);
		return cuda_fail(e, "device 0");
	}
	bs = cublasCreate(&s->blas);
	if (bs != CUBLAS_STATUS_SUCCESS) {
		free(s);
		return blas_fail(bs, "create");
	}
	snprintf(name, namecap, "cuda:%d (%s)", s->device, prop.name);
	*state = s;
	return 0;
}

static void cuda_close(void *state)
{
	struct cuda_state *s = (struct cuda_state *)state;

	if (!s)
		return;
	cudaFree(s->rows_dev);
	cublasDestroy(s->blas);
	free(s);
}

static int cuda_alloc(void *state, void **mem, size_t bytes)
{
	cudaError_t e = cudaMalloc(mem, bytes);

	(void)state;
	if (e != cudaSuccess) {
		*mem = NULL;
		return cuda_fail(e, "malloc");
	}
	return 0;
}

static void cuda_release(void *state, void *mem)
{
	(void)state;
	cudaFree(mem);
}

static int cuda_upload(void *state, void *dst, const float *src, size_t n)
{
	cudaError_t e = cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice);

	(void)state;
	return e == cudaSuccess ? 0 : cuda_fail(e, "upload");
}

static int cuda_download(void *state, float *dst, const void *src, size_t n)
{
	cudaError_t e = cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost);

	(void)state;
	return e == cudaSuccess ? 0 : cuda_fail(e, "download");
}

static int cuda_gemm(void *state, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
		     const void *a, const void *b, float beta, void *cm)
{
	struct cuda_state *s = (struct cuda_state *)state;
	/* Leading dimensions of the stored row-major matrices. */
	int lda = ta ? (int)m : (int)k;
	int ldb = tb ? (int)k : (int)n;
	cublasStatus_t bs;

	bs = cublasSgemm(s->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
			 (int)n, (int)m, (int)k, &alpha, (const float *)b, ldb, (const float *)a,
			 lda, &beta, (float *)cm, (int)n);
	return bs == CUBLAS_STATUS_SUCCESS ? 0 : blas_fail(bs, "sgemm");
}

static int launch_check(const char *what)
{
	cudaError_t e = cudaGetLastError();

	return e == cudaSuccess ? 0 : cuda_fail(e, what);
}

static __global__ void k_bias_act(float *z, const float *bias, size_t rows, size_t cols,
				  int relu)
{
	size_t total = rows * cols;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = z[i] + bias[i % cols];

		z[i] = (relu && v < 0.0f) ? 0.0f : v;
	}
}

static int cuda_bias_act(void *state, void *z, const void *bias, size_t rows, size_t cols,
			 int relu)
{
	(void)state;
	k_bias_act<<<blocks_for(rows * cols), THREADS>>>((float *)z, (const float *)bias, rows,
							 cols, relu);
	return launch_check("bias_act");
}

static __global__ void k_relu_grad(float *dz, const float *act, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (act[i] <= 0.0f)
			dz[i] = 0.0f;
}

static int cuda_relu_grad(void *state, void *dz, const void *act, size_t n)
{
	(void)state;
	k_relu_grad<<<blocks_for(n), THREADS>>>((float *)dz, (const float *)act, n);
	return launch_check("relu_grad");
}

/* One thread per column; reads are coalesced across the threads of a row. */
static __global__ void k_colsum(float *out, const float *m, size_t rows, size_t cols)
{
	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < cols;
	     j += (size_t)gridDim.x * blockDim.x) {
		float acc = 0.0f;

		for (size_t i = 0; i < rows; i++)
			acc += m[i * cols + j];
		out[j] = acc;
	}
}

static int cuda_colsum(void *state, void *out, const void *m, size_t rows, size_t cols)
{
	(void)state;
	k_colsum<<<blocks_for(cols), THREADS>>>((float *)out, (const float *)m, rows, cols);
	return launch_check("colsum");
}

/*
 * One thread per row: the class counts here are small (10 for the MNIST
 * family), so a per-row loop is simpler than a block reduction and fast
 * enough. Same stable formulation as the CPU backend.
 */
static __global__ void k_softmax_xent(float *logits, const float *labels, size_t rows,
				      size_t cols, int want_grad, float grad_scale, float *loss,
				      float *hit)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows;
	     i += (size_t)gridDim.x * blockDim.x) {
		float *z = logits + i * cols;
		float lf = labels[i];
		float zmax = -3.402823466e+38f;
		size_t arg = 0, label;
		double sum = 0.0, lse;

		if (!(lf >= 0.0f && lf < (float)cols) || lf != floorf(lf)) {
			loss[i] = 0.0f;
			hit[i] = -1.0f;
			continue;
		}
		label = (size_t)lf;
		for (size_t j = 0; j < cols; j++) {
			if (z[j] > zmax) {
				zmax = z[j];
				arg = j;
			}
		}
		for (size_t j = 0; j < cols; j++)
			sum += exp((double)z[j] - (double)zmax);
		lse = (double)zmax + log(sum);
		loss[i] = (float)(lse - (double)z[label]);
		hit[i] = arg == label ? 1.0f : 0.0f;
		if (want_grad) {
			for (size_t j = 0; j < cols; j++) {
				double p = exp((double)z[j] - lse);

				z[j] = (float)((p - (j == label ? 1.0 : 0.0)) * grad_scale);
			}
		}
	}
}

static int cuda_softmax_xent(void *state, void *logits, const void *labels, size_t rows,
			     size_t cols, int want_grad, float grad_scale, float *loss,
			     float *hit)
{
	struct cuda_state *s = (struct cuda_state *)state;
	cudaError_t e;
	int rc;

	if (rows > s->rows_cap) {
		cudaFree(s->rows_dev);
		s->rows_dev = NULL;
		s->rows_cap = 0;
		e = cudaMalloc((void **)&s->rows_dev, 2 * rows * sizeof(float));
		if (e != cudaSuccess)
			return cuda_fail(e, "softmax scratch");
		s->rows_cap = rows;
	}
	k_softmax_xent<<<blocks_for(rows), THREADS>>>((float *)logits, (const float *)labels, rows,
						      cols, want_grad, grad_scale, s->rows_dev,
						      s->rows_dev + rows);
	rc = launch_check("softmax_xent");
	if (rc < 0)
		return rc;
	e = cudaMemcpy(loss, s->rows_dev, rows * sizeof(float), cudaMemcpyDeviceToHost);
	if (e == cudaSuccess)
		e = cudaMemcpy(hit, s->rows_dev + rows, rows * sizeof(float),
			       cudaMemcpyDeviceToHost);
	return e == cudaSuccess ? 0 : cuda_fail(e, "softmax results");
}

/* Positional initialisation: designated initialisers are C++20. */
static const struct tfj_compute_ops cuda_ops = {
	"gpu",           cuda_open,     cuda_close,     cuda_alloc,
	cuda_release,    cuda_upload,   cuda_download,  cuda_gemm,
	cuda_bias_act,   cuda_relu_grad, cuda_colsum,   cuda_softmax_xent,
};

static const struct tfj_compute_plugin plugin = {
	TFJ_COMPUTE_PLUGIN_ABI, (uint32_t)sizeof(struct tfj_compute_ops), &cuda_ops,
};

/* The library's one export (compute.h: the plugin ABI). */
extern "C" __attribute__((visibility("default"))) const struct tfj_compute_plugin *
tfj_compute_plugin_entry(const struct tfj_compute_host *h)
{
	if (h && h->abi == TFJ_COMPUTE_PLUGIN_ABI)
		host = h;
	return &plugin;
}
