/*
 * computestep.c - tfj-bench-compute: a worker's compute step (upload the
 * parameters and a batch, forward, backward, download the gradients:
 * tfj_model_grad, what the runtime times as "compute") on the CPU backend
 * (OpenBLAS) and on the CUDA backend (cuBLAS, the dlopen'ed library) for
 * the benchmark MLPs, in one process, so the two are compared on the same
 * machine and the same data. One JSON line per (model, device):
 *   {"hidden":"256,128","params":235146,"batch":256,"device":"cpu",
 *    "name":"cpu (openblas)","steps":50,"median_ms":..,"min_ms":..,"max_ms":..}
 *
 * Usage: tfj-bench-compute [--hidden 256,128] [--hidden 1024,1024]...
 *                          [--batch N] [--steps N] [--cpu-threads N] [--require-gpu]
 * Defaults: both MLPs above, batch 256, 50 timed steps after 5 warm-up steps,
 * the CPU backend's BLAS threads as OPENBLAS_NUM_THREADS says. Without a
 * usable GPU it measures the CPU only and says why on stderr; with
 * --require-gpu it then exits 77 (the `gpu` ctest bench_compute_gpu).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/parse.h>
#include <tfj_testutil.h>

#include "compute/compute.h"
#include "compute/model.h"

#define MAX_MODELS 8
#define MAX_STEPS 100000
#define WARMUP 5
#define INPUT 784
#define CLASSES 10

struct opts {
	const char *hidden[MAX_MODELS];
	int nhidden;
	int batch;
	int steps;
	int cpu_threads;
	int require_gpu;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	int i, rc = 0;

	memset(o, 0, sizeof(*o));
	o->batch = 256;
	o->steps = 50;
	for (i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--require-gpu") == 0) {
			o->require_gpu = 1;
			continue;
		}
		if (!v)
			return tfj_err_set(TFJ_EINVAL, "%s: unknown or missing its value", a);
		i++;
		if (strcmp(a, "--hidden") == 0) {
			if (o->nhidden == MAX_MODELS)
				return tfj_err_set(TFJ_ERANGE, "at most %d --hidden", MAX_MODELS);
			o->hidden[o->nhidden++] = v;
		} else if (strcmp(a, "--batch") == 0) {
			rc = tfj_parse_int(&o->batch, v, 1, 65536, "--batch");
		} else if (strcmp(a, "--steps") == 0) {
			rc = tfj_parse_int(&o->steps, v, 1, MAX_STEPS, "--steps");
		} else if (strcmp(a, "--cpu-threads") == 0) {
			rc = tfj_parse_int(&o->cpu_threads, v, 1, 1024, "--cpu-threads");
		} else {
			return tfj_err_set(TFJ_EINVAL, "unknown flag %s", a);
		}
	}
	if (o->nhidden == 0) {
		o->hidden[o->nhidden++] = "256,128";
		o->hidden[o->nhidden++] = "1024,1024";
	}
	return rc;
}

/* Times `steps` gradient steps of `hidden` on `c` and prints one JSON line. */
static int bench_one(struct tfj_compute *c, const struct opts *o, const char *hidden)
{
	struct tfj_model_spec spec;
	struct tfj_model *m = NULL;
	float **params = NULL, **grads = NULL, *x = NULL, loss;
	uint8_t *y = NULL;
	double *ms = NULL, t0;
	size_t nt = 0, i, n = (size_t)o->batch;
	int rc, s;

	rc = tfj_model_spec_parse(&spec, "mlp", hidden, INPUT, CLASSES);
	if (rc == 0)
		rc = tfj_model_new(&m, &spec, c);
	if (rc < 0)
		goto out;
	nt = tfj_model_num_tensors(m);
	params = calloc(nt, sizeof(*params));
	grads = calloc(nt, sizeof(*grads));
	x = malloc(n * INPUT * sizeof(float));
	y = malloc(n);
	ms = malloc((size_t)o->steps * sizeof(double));
	rc = params && grads && x && y && ms ? 0 : tfj_err_set(TFJ_ENOMEM, "bench buffers");
	for (i = 0; rc == 0 && i < nt; i++) {
		params[i] = malloc(tfj_model_tensor(m, i)->count * sizeof(float));
		grads[i] = malloc(tfj_model_tensor(m, i)->count * sizeof(float));
		if (!params[i] || !grads[i])
			rc = tfj_err_set(TFJ_ENOMEM, "bench tensors");
	}
	if (rc == 0)
		rc = tfj_model_init_params(m, 7, params);
	if (rc < 0)
		goto out;
	/* Fixed pseudo-random pixels and labels: the step's cost does not
	 * depend on the values, only that they are finite. */
	for (i = 0; i < n * INPUT; i++)
		x[i] = (float)((i * 2654435761u) % 256) / 255.0f;
	for (i = 0; i < n; i++)
		y[i] = (uint8_t)(i % CLASSES);
	for (s = -WARMUP; s < o->steps; s++) {
		t0 = tfj_testutil_now_s();
		rc = tfj_model_grad(m, (const float *const *)params, x, y, n, grads, &loss);
		if (rc < 0)
			goto out;
		if (s >= 0)
			ms[s] = (tfj_testutil_now_s() - t0) * 1e3;
	}
	qsort(ms, (size_t)o->steps, sizeof(double), cmp_double);
	printf("{\"hidden\":\"%s\",\"params\":%zu,\"batch\":%d,\"device\":\"%s\",\"name\":\"%s\","
	       "\"steps\":%d,\"median_ms\":%.4f,\"min_ms\":%.4f,\"max_ms\":%.4f}\n",
	       hidden, tfj_model_num_params(m), o->batch, tfj_compute_is_gpu(c) ? "gpu" : "cpu",
	       tfj_compute_name(c), o->steps, ms[o->steps / 2], ms[0], ms[o->steps - 1]);
	fflush(stdout);
out:
	for (i = 0; i < nt; i++) {
		free(params ? params[i] : NULL);
		free(grads ? grads[i] : NULL);
	}
	free(params);
	free(grads);
	free(x);
	free(y);
	free(ms);
	tfj_model_free(m);
	return rc;
}

int main(int argc, char **argv)
{
	struct tfj_compute *cpu = NULL, *gpu = NULL;
	struct opts o;
	int i, rc;

	rc = parse_opts(&o, argc, argv);
	if (rc < 0) {
		fprintf(stderr, "tfj-bench-compute: %s\n", tfj_err_detail());
		return 2;
	}
	if (o.cpu_threads && tfj_compute_set_cpu_threads(o.cpu_threads) < 0)
		return 2;
	if (tfj_compute_open(&gpu, "gpu", 0) < 0) {
		fprintf(stderr, "tfj-bench-compute: no GPU: %s\n", tfj_err_detail());
		if (o.require_gpu)
			return 77;
	}
	rc = tfj_compute_open(&cpu, "cpu", 0);
	for (i = 0; rc == 0 && i < o.nhidden; i++) {
		rc = bench_one(cpu, &o, o.hidden[i]);
		if (rc == 0 && gpu)
			rc = bench_one(gpu, &o, o.hidden[i]);
	}
	if (rc < 0)
		fprintf(stderr, "tfj-bench-compute: %s: %s\n", tfj_err_name(rc), tfj_err_detail());
	tfj_compute_free(cpu);
	tfj_compute_free(gpu);
	return rc < 0 ? 1 : 0;
}
