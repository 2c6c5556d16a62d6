/*
 * tfj_smoke.h - the C interface of the CUDA smoke test (cmake/cuda-smoke).
 *
 * This is a plain C header: the .cu file includes it inside extern "C" so
 * the functions get C linkage, which is how the runtime's CUDA backend keeps
 * its headers free of C++ (see docs/cuda.md).
 *
 * Ownership: the caller owns every array; nothing is kept between calls.
 */
#ifndef TFJ_SMOKE_H
#define TFJ_SMOKE_H

#include <stddef.h>

/* Returned when no CUDA device (or no driver) is available. */
#define TFJ_SMOKE_NODEV (-2)

/*
 * Computes c = (TFJ_SMOKE_SCALE * a) * b on the GPU: the scaling by a kernel
 * of our own, the product by cublasSgemm. All matrices are row-major; a is
 * m x k, b is k x n, c is m x n; 1 <= m, n, k <= 4096. Returns 0, -1 for bad
 * arguments or a CUDA/cuBLAS failure, TFJ_SMOKE_NODEV without a device; on
 * failure `err` (errlen bytes) says why.
 */
int tfj_smoke_gemm(float *c, const float *a, const float *b, int m, int n, int k, char *err,
		   size_t errlen);

/* The CUDA runtime version the smoke library was linked with, e.g. 13000. */
int tfj_smoke_runtime_version(void);

#endif
