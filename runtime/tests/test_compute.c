/*
 * test_compute.c - the CPU backend against naive reference loops, backend
 * selection, argument checks and the memory cap.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/compute.h"

static float frand(void)
{
	return (float)((int)tfj_test_below(2001) - 1000) / 500.0f;
}

static struct tfj_cbuf *buf_from(struct tfj_compute *c, const float *host, size_t n)
{
	struct tfj_cbuf *b = NULL;

	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, n), 0);
	if (b && host)
		TFJ_CHECK_INT(tfj_compute_upload(c, b, host, n), 0);
	return b;
}

static void test_selection(void)
{
	struct tfj_compute *c = NULL;
	int rc;

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 0), 0);
	TFJ_CHECK_STR(tfj_compute_name(c), "cpu (openblas)");
	TFJ_CHECK_INT(tfj_compute_is_gpu(c), 0);
	tfj_compute_free(c);
	TFJ_CHECK_INT(tfj_compute_open(&c, "tpu", 0), TFJ_EINVAL);
	TFJ_CHECK(c == NULL);
	/* auto always yields a backend; gpu either works or says why not. */
	TFJ_CHECK_INT(tfj_compute_open(&c, "auto", 0), 0);
	printf("  auto picked %s (CUDA backend library: %d)\n", tfj_compute_name(c),
	       tfj_compute_have_cuda());
	tfj_compute_free(c);
	c = NULL;
	rc = tfj_compute_open(&c, "gpu", 0);
	if (!tfj_compute_have_cuda())
		TFJ_CHECK_INT(rc, TFJ_EUNSUPP);
	else
		TFJ_CHECK(rc == 0 || rc == TFJ_EDEVICE);
	if (rc == 0)
		TFJ_CHECK_INT(tfj_compute_is_gpu(c), 1);
	else
		printf("  gpu: %s\n", tfj_err_detail());
	tfj_compute_free(c);
	tfj_compute_free(NULL);
}

static void test_gemm(void)
{
	enum { M = 7, N = 5, K = 9 };
	struct tfj_compute *c = NULL;
	float a[M * K], b[K * N], cm[M * N], out[M * N];
	int ta, tb;
	size_t i, j, k;

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 0), 0);
	for (i = 0; i < M * K; i++)
		a[i] = frand();
	for (i = 0; i < K * N; i++)
		b[i] = frand();
	for (i = 0; i < M * N; i++)
		cm[i] = frand();
	for (ta = 0; ta < 2; ta++) {
		for (tb = 0; tb < 2; tb++) {
			struct tfj_cbuf *ba = buf_from(c, a, M * K), *bb = buf_from(c, b, K * N);
			struct tfj_cbuf *bc = buf_from(c, cm, M * N);
			double worst = 0.0;

			TFJ_CHECK_INT(tfj_compute_gemm(c, ta, tb, M, N, K, 0.5f, ba, bb, 2.0f, bc), 0);
			TFJ_CHECK_INT(tfj_compute_download(c, out, bc, M * N), 0);
			for (i = 0; i < M; i++) {
				for (j = 0; j < N; j++) {
					double ref = 2.0 * cm[i * N + j];

					/* Stored A is M x K (or K x M when transposed). */
					for (k = 0; k < K; k++)
						ref += 0.5 * (ta ? a[k * M + i] : a[i * K + k]) *
						       (tb ? b[j * K + k] : b[k * N + j]);
					if (fabs(ref - out[i * N + j]) > worst)
						worst = fabs(ref - out[i * N + j]);
				}
			}
			TFJ_CHECK_LT(worst, 1e-4);
			tfj_compute_buf_free(c, ba);
			tfj_compute_buf_free(c, bb);
			tfj_compute_buf_free(c, bc);
		}
	}
	TFJ_CHECK_INT(tfj_compute_mem_used(c), 0);
	tfj_compute_free(c);
}

/*
 * Views (CPU backend): a gemm reads its inputs from the caller's arrays and
 * writes its output into the caller's array, leaves the inputs as they
 * were, counts nothing against the cap and frees nothing of the caller's.
 */
static void test_views(void)
{
	enum { M = 4, N = 3, K = 5 };
	struct tfj_compute *c = NULL;
	struct tfj_cbuf *va = NULL, *vb = NULL, *vc = NULL, *own = NULL;
	float a[M * K], a0[M * K], b[K * N], out[M * N], ref[M * N];
	size_t i;

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 64), 0);
	for (i = 0; i < M * K; i++)
		a0[i] = a[i] = frand();
	for (i = 0; i < K * N; i++)
		b[i] = frand();
	TFJ_CHECK_INT(tfj_compute_view_new(c, &va), 0);
	TFJ_CHECK_INT(tfj_compute_view_new(c, &vb), 0);
	TFJ_CHECK_INT(tfj_compute_view_new(c, &vc), 0);
	TFJ_CHECK_INT(tfj_compute_view_set(va, a, M * K), 0);
	TFJ_CHECK_INT(tfj_compute_view_set(vb, b, K * N), 0);
	TFJ_CHECK_INT(tfj_compute_view_set(vc, out, M * N), 0);
	/* 60 floats of views under a cap of 64 bytes: views are not counted. */
	TFJ_CHECK_INT(tfj_compute_mem_used(c), 0);
	TFJ_CHECK_INT(tfj_compute_gemm(c, 0, 0, M, N, K, 1.0f, va, vb, 0.0f, vc), 0);
	for (i = 0; i < M * N; i++) {
		size_t r = i / N, col = i % N, k;
		double v = 0;

		for (k = 0; k < K; k++)
			v += (double)a[r * K + k] * b[k * N + col];
		ref[i] = (float)v;
		TFJ_CHECK_LT(fabs(ref[i] - out[i]), 1e-5);
	}
	TFJ_CHECK(memcmp(a, a0, sizeof(a)) == 0);
	/* Re-pointed, the same view reads other memory. */
	TFJ_CHECK_INT(tfj_compute_view_set(vb, a0, K * N < M * K ? K * N : M * K), 0);
	TFJ_CHECK_INT(tfj_compute_buf_len(vb), K * N);
	/* Only views can be pointed elsewhere. */
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &own, 4), 0);
	TFJ_CHECK_INT(tfj_compute_view_set(own, a, 4), TFJ_EINVAL);
	tfj_compute_buf_free(c, own);
	tfj_compute_buf_free(c, va);
	tfj_compute_buf_free(c, vb);
	tfj_compute_buf_free(c, vc);
	TFJ_CHECK_INT(tfj_compute_mem_used(c), 0);
	/* The caller's arrays are still its own (ASan would see a free of the stack). */
	out[0] = 1.0f;
	tfj_compute_free(c);
}

static void test_elementwise(void)
{
	enum { R = 4, C = 3 };
	struct tfj_compute *c = NULL;
	float z[R * C], bias[C] = { 0.5f, -1.0f, 0.0f }, out[R * C], col[C];
	float logits[R * C], labels[R] = { 0, 2, 1, 2 };
	struct tfj_cbuf *bz, *bb, *bl, *blab, *bcol;
	double loss = 0.0, ref_loss = 0.0;
	size_t correct = 0, ref_correct = 0, i, j;

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 0), 0);
	for (i = 0; i < R * C; i++) {
		z[i] = frand();
		logits[i] = frand() * 3.0f;
	}
	bz = buf_from(c, z, R * C);
	bb = buf_from(c, bias, C);
	TFJ_CHECK_INT(tfj_compute_bias_act(c, bz, bb, R, C, 1), 0);
	TFJ_CHECK_INT(tfj_compute_download(c, out, bz, R * C), 0);
	for (i = 0; i < R * C; i++) {
		float v = z[i] + bias[i % C];

		TFJ_CHECK(out[i] == (v > 0.0f ? v : 0.0f));
	}
	/* relu_grad zeroes where the activation is not positive. */
	bl = buf_from(c, z, R * C);
	TFJ_CHECK_INT(tfj_compute_relu_grad(c, bl, bz, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_download(c, out, bl, R * C), 0);
	for (i = 0; i < R * C; i++) {
		float v = z[i] + bias[i % C];

		TFJ_CHECK(out[i] == (v > 0.0f ? z[i] : 0.0f));
	}
	bcol = buf_from(c, NULL, C);
	TFJ_CHECK_INT(tfj_compute_colsum(c, bcol, bl, R, C), 0);
	TFJ_CHECK_INT(tfj_compute_download(c, col, bcol, C), 0);
	for (j = 0; j < C; j++) {
		float s = 0.0f;

		for (i = 0; i < R; i++)
			s += out[i * C + j];
		TFJ_CHECK_LT(fabsf(s - col[j]), 1e-5f);
	}
	/* Softmax cross-entropy and its gradient against a double reference. */
	tfj_compute_buf_free(c, bz);
	bz = buf_from(c, logits, R * C);
	blab = buf_from(c, labels, R);
	TFJ_CHECK_INT(tfj_compute_softmax_xent(c, bz, blab, R, C, 1, 0.25f, &loss, &correct), 0);
	TFJ_CHECK_INT(tfj_compute_download(c, out, bz, R * C), 0);
	for (i = 0; i < R; i++) {
		double mx = -1e30, s = 0.0;
		size_t arg = 0, y = (size_t)labels[i];

		for (j = 0; j < C; j++)
			if (logits[i * C + j] > mx) {
				mx = logits[i * C + j];
				arg = j;
			}
		for (j = 0; j < C; j++)
			s += exp(logits[i * C + j] - mx);
		ref_loss += mx + log(s) - logits[i * C + y];
		ref_correct += arg == y;
		for (j = 0; j < C; j++) {
			double g = (exp(logits[i * C + j] - mx) / s - (j == y)) * 0.25;

			TFJ_CHECK_LT(fabs(g - out[i * C + j]), 1e-6);
		}
	}
	TFJ_CHECK_LT(fabs(ref_loss - loss), 1e-5);
	TFJ_CHECK_INT(correct, ref_correct);
	/* A label outside [0, C) is refused. */
	labels[1] = 3.0f;
	TFJ_CHECK_INT(tfj_compute_upload(c, blab, labels, R), 0);
	TFJ_CHECK_INT(tfj_compute_softmax_xent(c, bz, blab, R, C, 0, 1.0f, &loss, &correct),
		      TFJ_EINVAL);
	tfj_compute_buf_free(c, bz);
	tfj_compute_buf_free(c, bb);
	tfj_compute_buf_free(c, bl);
	tfj_compute_buf_free(c, blab);
	tfj_compute_buf_free(c, bcol);
	tfj_compute_free(c);
}

static void test_checks_and_cap(void)
{
	struct tfj_compute *c = NULL;
	struct tfj_cbuf *a = NULL, *b = NULL, *small = NULL;
	float host[16] = { 0 };

	TFJ_CHECK_INT(tfj_compute_open(&c, "cpu", 1024), 0);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &a, 200), 0);
	TFJ_CHECK_INT(tfj_compute_mem_used(c), 800);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, 57), TFJ_ETOOBIG);
	TFJ_CHECK(b == NULL);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, 56), 0);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &small, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &small, SIZE_MAX / 2), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_compute_upload(c, b, host, 57), TFJ_ERANGE);
	/* Buffers too small for the stated shapes are refused, not overrun. */
	TFJ_CHECK_INT(tfj_compute_gemm(c, 0, 0, 10, 10, 10, 1.0f, a, b, 0.0f, a), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_compute_bias_act(c, a, b, 10, 57, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_compute_colsum(c, b, a, 4, 57), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_compute_relu_grad(c, b, a, 100), TFJ_EINVAL);
	tfj_compute_buf_free(c, a);
	tfj_compute_buf_free(c, b);
	TFJ_CHECK_INT(tfj_compute_mem_used(c), 0);
	tfj_compute_free(c);
}

int main(void)
{
	TFJ_RUN(test_selection);
	TFJ_RUN(test_gemm);
	TFJ_RUN(test_views);
	TFJ_RUN(test_elementwise);
	TFJ_RUN(test_checks_and_cap);
	return tfj_test_finish();
}
