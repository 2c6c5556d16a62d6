/*
 * gtest_compute.c - the CUDA backend agrees with the CPU backend, op by op
 * and through a whole model gradient and evaluation. Exits 77 (skipped)
 * when the binary has no CUDA backend or no GPU is visible.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "compute/compute.h"
#include "compute/model.h"

static struct tfj_compute *cpu, *gpu;

static float frand(void)
{
	return (float)((int)tfj_test_below(2001) - 1000) / 500.0f;
}

static struct tfj_cbuf *put(struct tfj_compute *c, const float *host, size_t n)
{
	struct tfj_cbuf *b = NULL;

	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, n), 0);
	if (b && host)
		TFJ_CHECK_INT(tfj_compute_upload(c, b, host, n), 0);
	return b;
}

static double max_diff(const float *a, const float *b, size_t n)
{
	double worst = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		if (fabs((double)a[i] - b[i]) > worst)
			worst = fabs((double)a[i] - b[i]);
	return worst;
}

/* Runs gemm with the given shape on both backends and compares. */
static void gemm_case(int ta, int tb, size_t m, size_t n, size_t k)
{
	float *a = malloc(m * k * sizeof(float)), *b = malloc(k * n * sizeof(float));
	float *c0 = malloc(m * n * sizeof(float)), *r1 = malloc(m * n * sizeof(float));
	float *r2 = malloc(m * n * sizeof(float));
	struct tfj_cbuf *ca, *cb, *cc, *ga, *gb, *gc;
	size_t i;

	TFJ_CHECK(a && b && c0 && r1 && r2);
	if (!a || !b || !c0 || !r1 || !r2)
		goto out;
	for (i = 0; i < m * k; i++)
		a[i] = frand();
	for (i = 0; i < k * n; i++)
		b[i] = frand();
	for (i = 0; i < m * n; i++)
		c0[i] = frand();
	ca = put(cpu, a, m * k);
	cb = put(cpu, b, k * n);
	cc = put(cpu, c0, m * n);
	ga = put(gpu, a, m * k);
	gb = put(gpu, b, k * n);
	gc = put(gpu, c0, m * n);
	TFJ_CHECK_INT(tfj_compute_gemm(cpu, ta, tb, m, n, k, 0.75f, ca, cb, 0.5f, cc), 0);
	TFJ_CHECK_INT(tfj_compute_gemm(gpu, ta, tb, m, n, k, 0.75f, ga, gb, 0.5f, gc), 0);
	TFJ_CHECK_INT(tfj_compute_download(cpu, r1, cc, m * n), 0);
	TFJ_CHECK_INT(tfj_compute_download(gpu, r2, gc, m * n), 0);
	/* Different summation orders (and TF32 never: cuBLAS default is FP32). */
	if (max_diff(r1, r2, m * n) > 1e-3 * sqrt((double)k)) {
		tfj_test_fail(__FILE__, __LINE__, "gemm ta=%d tb=%d %zux%zux%zu differs by %g", ta,
			      tb, m, n, k, max_diff(r1, r2, m * n));
	}
	tfj_compute_buf_free(cpu, ca);
	tfj_compute_buf_free(cpu, cb);
	tfj_compute_buf_free(cpu, cc);
	tfj_compute_buf_free(gpu, ga);
	tfj_compute_buf_free(gpu, gb);
	tfj_compute_buf_free(gpu, gc);
out:
	free(a);
	free(b);
	free(c0);
	free(r1);
	free(r2);
}

static void test_gemm_agrees(void)
{
	int ta, tb;

	for (ta = 0; ta < 2; ta++)
		for (tb = 0; tb < 2; tb++) {
			gemm_case(ta, tb, 7, 5, 9);
			gemm_case(ta, tb, 128, 256, 784);
			gemm_case(ta, tb, 1, 10, 3);
		}
}

static void test_elementwise_agree(void)
{
	enum { R = 300, C = 10 };
	static float z[R * C], bias[C], lab[R], r1[R * C], r2[R * C];
	struct tfj_cbuf *cz, *cb, *cd, *cl, *gz, *gb, *gd, *gl, *cs, *gs;
	double l1 = 0, l2 = 0;
	size_t h1 = 0, h2 = 0, i;

	for (i = 0; i < R * C; i++)
		z[i] = frand() * 4.0f;
	for (i = 0; i < C; i++)
		bias[i] = frand();
	for (i = 0; i < R; i++)
		lab[i] = (float)tfj_test_below(C);
	cz = put(cpu, z, R * C);
	gz = put(gpu, z, R * C);
	cb = put(cpu, bias, C);
	gb = put(gpu, bias, C);
	TFJ_CHECK_INT(tfj_compute_bias_act(cpu, cz, cb, R, C, 1), 0);
	TFJ_CHECK_INT(tfj_compute_bias_act(gpu, gz, gb, R, C, 1), 0);
	TFJ_CHECK_INT(tfj_compute_download(cpu, r1, cz, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_download(gpu, r2, gz, R * C), 0);
	TFJ_CHECK(max_diff(r1, r2, R * C) == 0.0);
	cd = put(cpu, z, R * C);
	gd = put(gpu, z, R * C);
	TFJ_CHECK_INT(tfj_compute_relu_grad(cpu, cd, cz, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_relu_grad(gpu, gd, gz, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_download(cpu, r1, cd, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_download(gpu, r2, gd, R * C), 0);
	TFJ_CHECK(max_diff(r1, r2, R * C) == 0.0);
	cs = put(cpu, NULL, C);
	gs = put(gpu, NULL, C);
	TFJ_CHECK_INT(tfj_compute_colsum(cpu, cs, cd, R, C), 0);
	TFJ_CHECK_INT(tfj_compute_colsum(gpu, gs, gd, R, C), 0);
	TFJ_CHECK_INT(tfj_compute_download(cpu, r1, cs, C), 0);
	TFJ_CHECK_INT(tfj_compute_download(gpu, r2, gs, C), 0);
	TFJ_CHECK_LT(max_diff(r1, r2, C), 1e-3);
	cl = put(cpu, lab, R);
	gl = put(gpu, lab, R);
	TFJ_CHECK_INT(tfj_compute_upload(cpu, cz, z, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_upload(gpu, gz, z, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_softmax_xent(cpu, cz, cl, R, C, 1, 1.0f / R, &l1, &h1), 0);
	TFJ_CHECK_INT(tfj_compute_softmax_xent(gpu, gz, gl, R, C, 1, 1.0f / R, &l2, &h2), 0);
	TFJ_CHECK_LT(fabs(l1 - l2), 1e-3);
	TFJ_CHECK_INT(h1, h2);
	TFJ_CHECK_INT(tfj_compute_download(cpu, r1, cz, R * C), 0);
	TFJ_CHECK_INT(tfj_compute_download(gpu, r2, gz, R * C), 0);
	TFJ_CHECK_LT(max_diff(r1, r2, R * C), 1e-6);
	/* The GPU path flags bad labels too. */
	lab[5] = (float)C;
	TFJ_CHECK_INT(tfj_compute_upload(gpu, gl, lab, R), 0);
	TFJ_CHECK_INT(tfj_compute_softmax_xent(gpu, gz, gl, R, C, 0, 1.0f, &l2, &h2), TFJ_EINVAL);
	tfj_compute_buf_free(cpu, cz);
	tfj_compute_buf_free(cpu, cb);
	tfj_compute_buf_free(cpu, cd);
	tfj_compute_buf_free(cpu, cl);
	tfj_compute_buf_free(cpu, cs);
	tfj_compute_buf_free(gpu, gz);
	tfj_compute_buf_free(gpu, gb);
	tfj_compute_buf_free(gpu, gd);
	tfj_compute_buf_free(gpu, gl);
	tfj_compute_buf_free(gpu, gs);
}

/* A whole MLP gradient and evaluation, CPU versus GPU. */
static void test_model_agrees(void)
{
	enum { N = 200, D = 784 };
	struct tfj_model_spec spec;
	struct tfj_model *mc = NULL, *mg = NULL;
	float *params[6], *g1[6], *g2[6], *x = malloc(N * D * sizeof(float));
	uint8_t y[N];
	float loss1, loss2, acc1, acc2;
	size_t i, t;

	TFJ_CHECK_INT(tfj_model_spec_parse(&spec, "mlp", "256,128", D, 10), 0);
	TFJ_CHECK_INT(tfj_model_new(&mc, &spec, cpu), 0);
	TFJ_CHECK_INT(tfj_model_new(&mg, &spec, gpu), 0);
	if (!mc || !mg || !x)
		goto out;
	for (t = 0; t < 6; t++) {
		size_t n = tfj_model_tensor(mc, t)->count;

		params[t] = malloc(n * sizeof(float));
		g1[t] = malloc(n * sizeof(float));
		g2[t] = malloc(n * sizeof(float));
	}
	TFJ_CHECK_INT(tfj_model_init_params(mc, 3, params), 0);
	for (i = 0; i < N * D; i++)
		x[i] = (float)tfj_test_below(256) / 255.0f;
	for (i = 0; i < N; i++)
		y[i] = (uint8_t)tfj_test_below(10);
	TFJ_CHECK_INT(tfj_model_grad(mc, (const float *const *)params, x, y, N, g1, &loss1), 0);
	TFJ_CHECK_INT(tfj_model_grad(mg, (const float *const *)params, x, y, N, g2, &loss2), 0);
	TFJ_CHECK_LT(fabsf(loss1 - loss2), 1e-4f);
	for (t = 0; t < 6; t++) {
		double d = max_diff(g1[t], g2[t], tfj_model_tensor(mc, t)->count);

		printf("  %s: max |cpu - gpu| = %.3g\n", tfj_model_tensor(mc, t)->name, d);
		TFJ_CHECK_LT(d, 1e-4);
	}
	TFJ_CHECK_INT(tfj_model_eval(mc, (const float *const *)params, x, y, N, &acc1, &loss1), 0);
	TFJ_CHECK_INT(tfj_model_eval(mg, (const float *const *)params, x, y, N, &acc2, &loss2), 0);
	TFJ_CHECK_LT(fabsf(loss1 - loss2), 1e-4f);
	TFJ_CHECK_LE(fabsf(acc1 - acc2), 1.0f / N);
	for (t = 0; t < 6; t++) {
		free(params[t]);
		free(g1[t]);
		free(g2[t]);
	}
out:
	free(x);
	tfj_model_free(mc);
	tfj_model_free(mg);
}

/* The cap applies to device allocations. */
static void test_gpu_cap(void)
{
	struct tfj_compute *c = NULL;
	struct tfj_cbuf *b = NULL;

	TFJ_CHECK_INT(tfj_compute_open(&c, "gpu", 4096), 0);
	if (!c)
		return;
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, 1025), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_compute_buf_new(c, &b, 1024), 0);
	tfj_compute_buf_free(c, b);
	tfj_compute_free(c);
}

int main(void)
{
	int rc;

	if (!tfj_compute_have_cuda()) {
		printf("skip: built without the CUDA backend\n");
		return 77;
	}
	rc = tfj_compute_open(&gpu, "gpu", 0);
	if (rc < 0) {
		printf("skip: no usable GPU (%s)\n", tfj_err_detail());
		return 77;
	}
	if (tfj_compute_open(&cpu, "cpu", 0) < 0)
		return 1;
	printf("comparing %s with %s\n", tfj_compute_name(gpu), tfj_compute_name(cpu));
	TFJ_RUN(test_gemm_agrees);
	TFJ_RUN(test_elementwise_agree);
	TFJ_RUN(test_model_agrees);
	TFJ_RUN(test_gpu_cap);
	tfj_compute_free(cpu);
	tfj_compute_free(gpu);
	return tfj_test_finish();
}
