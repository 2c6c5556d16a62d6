/*
 * smoke.cu - a kernel and a cuBLAS call behind a C interface, compiled by
 * tfj_cuda_attach() in the scratch project of this directory. It proves that
 * nvcc, cudart and cuBLAS from scripts/install-cuda build and link a C
 * program; on a GPU node the test also checks the numbers.
 */
#include <cstdio>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include <tfj_smoke.h>
}

#ifndef TFJ_SMOKE_SCALE
#error "TFJ_SMOKE_SCALE comes from an INTERFACE library; include propagation is broken"
#endif

static __global__ void scale_kernel(float *x, size_t n, float s)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= s;
}

/* Records a failure in err and returns -1, or TFJ_SMOKE_NODEV. */
static int fail(char *err, size_t errlen, const char *what, int code, int nodev)
{
	if (err && errlen)
		snprintf(err, errlen, nodev ? "%s (%d)" : "%s failed (%d)", what, code);
	return nodev ? TFJ_SMOKE_NODEV : -1;
}

extern "C" int tfj_smoke_gemm(float *c, const float *a, const float *b, int m, int n, int k,
			      char *err, size_t errlen)
{
	float *da = nullptr, *db = nullptr, *dc = nullptr;
	cublasHandle_t h = nullptr;
	const float one = 1.0f, zero = 0.0f;
	int rc = -1, count = 0;
	cudaError_t ce;
	cublasStatus_t bs;

	if (!c || !a || !b || m < 1 || n < 1 || k < 1 || m > 4096 || n > 4096 || k > 4096)
		return fail(err, errlen, "argument check", 0, 0);
	size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;

	/* No driver reads as cudaErrorInsufficientDriver, no GPU as NoDevice. */
	ce = cudaGetDeviceCount(&count);
	if (ce == cudaErrorNoDevice || ce == cudaErrorInsufficientDriver || count == 0)
		return fail(err, errlen, cudaGetErrorString(ce), (int)ce, 1);
	if (ce != cudaSuccess)
		return fail(err, errlen, "cudaGetDeviceCount", (int)ce, 0);

	if ((ce = cudaMalloc(&da, na * sizeof(float))) != cudaSuccess ||
	    (ce = cudaMalloc(&db, nb * sizeof(float))) != cudaSuccess ||
	    (ce = cudaMalloc(&dc, nc * sizeof(float))) != cudaSuccess) {
		rc = fail(err, errlen, "cudaMalloc", (int)ce, 0);
		goto out;
	}
	if ((ce = cudaMemcpy(da, a, na * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (ce = cudaMemcpy(db, b, nb * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess) {
		rc = fail(err, errlen, "cudaMemcpy to device", (int)ce, 0);
		goto out;
	}
	scale_kernel<<<(unsigned)((na + 255) / 256), 256>>>(da, na, TFJ_SMOKE_SCALE);
	if ((ce = cudaGetLastError()) != cudaSuccess) {
		rc = fail(err, errlen, "scale_kernel launch", (int)ce, 0);
		goto out;
	}
	if ((bs = cublasCreate(&h)) != CUBLAS_STATUS_SUCCESS) {
		rc = fail(err, errlen, "cublasCreate", (int)bs, 0);
		goto out;
	}
	/*
	 * cuBLAS is column-major: a row-major m x n matrix is its n x m
	 * transpose, so c^T = b^T a^T is one column-major gemm with the
	 * operands swapped and no transposition.
	 */
	bs = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, db, n, da, k, &zero, dc, n);
	if (bs != CUBLAS_STATUS_SUCCESS) {
		rc = fail(err, errlen, "cublasSgemm", (int)bs, 0);
		goto out;
	}
	if ((ce = cudaMemcpy(c, dc, nc * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) {
		rc = fail(err, errlen, "cudaMemcpy to host", (int)ce, 0);
		goto out;
	}
	rc = 0;
out:
	if (h)
		cublasDestroy(h);
	cudaFree(dc);
	cudaFree(db);
	cudaFree(da);
	return rc;
}

extern "C" int tfj_smoke_runtime_version(void)
{
	int v = 0;
	return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : -1;
}
