/*
 * smoke_main.c - plain C caller of the CUDA smoke library. Exit codes: 0 the
 * GPU result matches a CPU reference, 1 mismatch or CUDA failure, 77 no GPU
 * (ctest: skipped). Without a GPU it still proves that the program links
 * and that cudart and cuBLAS load through the RUNPATH.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tfj_smoke.h>

#if !defined(TFJOB_HAVE_CUDA) || TFJOB_HAVE_CUDA != 1
#error "tfj_cuda_attach must pass TFJOB_HAVE_CUDA=1 on to users of the target"
#endif

enum { M = 67, N = 45, K = 129 };

int main(void)
{
	static float a[M * K], b[K * N], c[M * N], ref[M * N];
	char err[256] = "";
	unsigned seed = 12345;
	int rc, bad = 0;

	/* A fixed LCG keeps the inputs reproducible without rand(). */
	for (size_t i = 0; i < M * K; i++) {
		seed = seed * 1103515245u + 12345u;
		a[i] = (float)((seed >> 16) % 200) / 100.0f - 1.0f;
	}
	for (size_t i = 0; i < K * N; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (float)((seed >> 16) % 200) / 100.0f - 1.0f;
	}
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0.0;
			for (int p = 0; p < K; p++)
				s += (double)(TFJ_SMOKE_SCALE * a[i * K + p]) * b[p * N + j];
			ref[i * N + j] = (float)s;
		}

	printf("cuda runtime %d\n", tfj_smoke_runtime_version());
	rc = tfj_smoke_gemm(c, a, b, M, N, K, err, sizeof(err));
	if (rc == TFJ_SMOKE_NODEV) {
		printf("no CUDA device: %s (skipped)\n", err);
		return 77;
	}
	if (rc != 0) {
		fprintf(stderr, "tfj_smoke_gemm: %s\n", err);
		return 1;
	}
	for (int i = 0; i < M * N; i++)
		if (fabsf(c[i] - ref[i]) > 1e-3f * (1.0f + fabsf(ref[i])))
			bad++;
	printf("%d of %d entries differ from the CPU reference\n", bad, M * N);
	return bad ? 1 : 0;
}
