/*
 * compute.h - the one compute interface of the runtime (CPU or GPU).
 *
 * A struct tfj_compute is an opened backend: OpenBLAS on the host, or cuBLAS
 * on a CUDA device through the CUDA backend library (libtfjob-compute-cuda.so,
 * loaded with dlopen by computelib.c on first use, so the runtime binary
 * itself links no CUDA library and runs on nodes without one). Callers
 * never test for CUDA themselves: they open "cpu", "gpu" or "auto" and use
 * the operations below, which dispatch through the backend's vtable.
 *
 * Data lives in backend buffers (struct tfj_cbuf, float arrays that are
 * host memory on the CPU backend and device memory on the CUDA backend).
 * Host float arrays cross the interface only through upload/download, so a
 * model step moves parameters in and gradients out once per step and keeps
 * every intermediate on the device. On the CPU backend a buffer can also be
 * a view of the caller's host array (tfj_compute_view_new), which saves
 * those two copies.
 *
 * All matrices are dense, row-major and contiguous (leading dimension =
 * number of columns). Every operation returns 0 or a negative TFJ_E* code
 * (TFJ_EDEVICE for a CUDA/cuBLAS failure, TFJ_ETOOBIG when an allocation
 * would exceed the memory cap given to tfj_compute_open()).
 *
 * Threading: one handle is used by one thread at a time.
 * Ownership: the caller owns the handle (tfj_compute_free) and every buffer
 * (tfj_compute_buf_free); buffers must be freed before their handle.
 */
#ifndef TFJ_COMPUTE_H
#define TFJ_COMPUTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tfj_compute;
struct tfj_cbuf;

/*
 * Opens a backend. `device` is "cpu", "gpu" or "auto" (NULL means "auto").
 * "auto" picks the GPU when the CUDA backend library loads and at least one
 * device is visible (CUDA_VISIBLE_DEVICES is honoured by the CUDA runtime),
 * else the CPU, with a log line saying why. "gpu" never falls back: no
 * backend library is TFJ_EUNSUPP; a library that does not load or has the
 * wrong ABI, or no usable device, is TFJ_EDEVICE (the runtime exits with
 * TFJ_EXIT_DEVICE for either). `gpu_mem_cap` bounds the bytes this handle may allocate on the
 * device (0 = no cap of our own); it is also applied on the CPU backend so
 * limits behave the same everywhere.
 */
int tfj_compute_open(struct tfj_compute **out, const char *device, size_t gpu_mem_cap);

/* Frees the handle; accepts NULL. */
void tfj_compute_free(struct tfj_compute *c);

/*
 * Human-readable name of the opened backend, e.g. "cpu (openblas)" or
 * "cuda:0 (NVIDIA H100 80GB HBM3)". Owned by the handle.
 */
const char *tfj_compute_name(const struct tfj_compute *c);

/* 1 when the handle runs on a GPU, 0 on the CPU. */
int tfj_compute_is_gpu(const struct tfj_compute *c);

/*
 * 1 when the CUDA backend library is present and loads (computelib.c; the
 * first call loads it for the whole process), whether or not a GPU is.
 */
int tfj_compute_have_cuda(void);

/*
 * Sets the number of threads the CPU backend's BLAS uses, process-wide
 * (OpenBLAS otherwise starts one per core, which oversubscribes a pod whose
 * CPU limit is below the node's core count). n must be 1..1024.
 */
int tfj_compute_set_cpu_threads(int n);

/* Bytes currently allocated through this handle. */
size_t tfj_compute_mem_used(const struct tfj_compute *c);

/* --- buffers ------------------------------------------------------------ */

/* Allocates `n` floats (n > 0), contents undefined. */
int tfj_compute_buf_new(struct tfj_compute *c, struct tfj_cbuf **out, size_t n);
/* Frees a buffer; accepts NULL. */
void tfj_compute_buf_free(struct tfj_compute *c, struct tfj_cbuf *b);
/* Number of floats in the buffer. */
size_t tfj_compute_buf_len(const struct tfj_cbuf *b);

/*
 * Host backends (the CPU) only: a buffer that is a view of host memory the
 * caller owns, pointed at it (and re-pointed) by tfj_compute_view_set().
 * Nothing is copied, the handle never frees the memory and does not count
 * it against the cap; tfj_compute_buf_free() frees the view itself. An
 * operation that writes its output buffer writes the caller's memory, one
 * that only reads a view leaves it as it was. This lets a model read the
 * parameters and write the gradients in the caller's arrays instead of an
 * upload and a download per step. TFJ_EUNSUPP on a GPU handle.
 */
int tfj_compute_view_new(struct tfj_compute *c, struct tfj_cbuf **out);
/* Points view b at n floats at host; TFJ_EINVAL when b is not a view. */
int tfj_compute_view_set(struct tfj_cbuf *b, const float *host, size_t n);
/* Copies n host floats into b[0..n). */
int tfj_compute_upload(struct tfj_compute *c, struct tfj_cbuf *b, const float *host, size_t n);
/* Copies b[0..n) to the host. */
int tfj_compute_download(struct tfj_compute *c, float *host, const struct tfj_cbuf *b, size_t n);

/* --- operations --------------------------------------------------------- */

/*
 * C = alpha * op(A) * op(B) + beta * C, with op(A) m x k, op(B) k x n and C
 * m x n. ta/tb = 1 means the stored matrix is transposed (A stored k x m).
 */
int tfj_compute_gemm(struct tfj_compute *c, int ta, int tb, size_t m, size_t n, size_t k,
		     float alpha, const struct tfj_cbuf *a, const struct tfj_cbuf *b,
		     float beta, struct tfj_cbuf *cm);

/* Z[i][j] += bias[j] for a rows x cols Z; then Z = max(Z, 0) if relu. */
int tfj_compute_bias_act(struct tfj_compute *c, struct tfj_cbuf *z, const struct tfj_cbuf *bias,
			 size_t rows, size_t cols, int relu);

/* dz[i] = 0 where act[i] <= 0 (backward of ReLU through its output), i < n. */
int tfj_compute_relu_grad(struct tfj_compute *c, struct tfj_cbuf *dz, const struct tfj_cbuf *act,
			  size_t n);

/* out[j] = sum_i m[i][j] for a rows x cols m (bias gradients). */
int tfj_compute_colsum(struct tfj_compute *c, struct tfj_cbuf *out, const struct tfj_cbuf *m,
		       size_t rows, size_t cols);

/*
 * Softmax cross-entropy over a rows x cols matrix of logits with labels
 * given as floats holding class indices (exact below 2^24). Uses the stable
 * form log-sum-exp(z - max z). Writes the sum of per-row losses to *loss_sum
 * and the number of rows whose arg-max equals the label to *correct. When
 * want_grad is set, the logits are overwritten by d(mean loss)/d(logits) =
 * (softmax - onehot) * grad_scale. A label outside [0, cols) is TFJ_EINVAL.
 */
int tfj_compute_softmax_xent(struct tfj_compute *c, struct tfj_cbuf *logits,
			     const struct tfj_cbuf *labels, size_t rows, size_t cols,
			     int want_grad, float grad_scale, double *loss_sum, size_t *correct);

/* The backend interface and the backend libraries' ABI: compute_backend.h. */

#ifdef __cplusplus
}
#endif

#endif
