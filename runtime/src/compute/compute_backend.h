/*
 * compute_backend.h - what a compute backend implements and how a backend
 * library is loaded: the interface between compute.c (the dispatch) and
 * the backends (compute_cpu.c, compute_cuda.cu, tests' fake plugins), and
 * the loader's ABI (computelib.c).
 *
 * It is apart from compute.h, the callers' interface, so that the loader
 * and the backends depend on this header only, and compute.c on them,
 * without a loop between compute and computelib.
 *
 * Ownership: only types and constants; a plugin's description is static
 * storage of the library, valid while it is loaded.
 */
#ifndef TFJ_COMPUTE_BACKEND_H
#define TFJ_COMPUTE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A backend fills one of these. compute.c owns the dispatch, argument and
 * bounds checks, and memory accounting, so backend functions may assume
 * valid sizes and buffers that are large enough.
 */
struct tfj_compute_ops {
	const char *kind; /* "cpu" or "gpu" */
	/* Returns 0 and fills *state; name is written into name[namecap]. */
	int (*open)(void **state, char *name, size_t namecap);
	void (*close)(void *state);
	int (*alloc)(void *state, void **mem, size_t bytes);
	void (*release)(void *state, void *mem);
	int (*upload)(void *state, void *dst, const float *src, size_t n);
	int (*download)(void *state, float *dst, const void *src, size_t n);
	int (*gemm)(void *state, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
		    const void *a, const void *b, float beta, void *cm);
	int (*bias_act)(void *state, void *z, const void *bias, size_t rows, size_t cols, int relu);
	int (*relu_grad)(void *state, void *dz, const void *act, size_t n);
	int (*colsum)(void *state, void *out, const void *m, size_t rows, size_t cols);
	/* loss[i] and hit[i] (0/1) per row are written to the host arrays. */
	int (*softmax_xent)(void *state, void *logits, const void *labels, size_t rows,
			    size_t cols, int want_grad, float grad_scale, float *loss, float *hit);
};

/* The CPU backend (compute_cpu.c); always present. */
extern const struct tfj_compute_ops tfj_compute_cpu_ops;

/*
 * Backend libraries (the plugin ABI). The CUDA backend is a shared object,
 * libtfjob-compute-cuda.so, that exports exactly one symbol,
 * TFJ_COMPUTE_PLUGIN_ENTRY (a tfj_compute_plugin_fn), and links cuBLAS and
 * the CUDA runtime itself. The loader (computelib.c) passes the host's
 * services in, and accepts the returned description only when its `abi`
 * equals TFJ_COMPUTE_PLUGIN_ABI and `ops_size` equals sizeof(struct
 * tfj_compute_ops) of this build. Bump TFJ_COMPUTE_PLUGIN_ABI on any change
 * to struct tfj_compute_ops, tfj_compute_host or tfj_compute_plugin (order,
 * types, meaning); `abi` stays the first member of both structs in every
 * version, so either side can read the other's version safely.
 */
#define TFJ_COMPUTE_PLUGIN_ABI 1u
#define TFJ_COMPUTE_PLUGIN_ENTRY "tfj_compute_plugin_entry"
#define TFJ_COMPUTE_CUDA_LIB "libtfjob-compute-cuda.so"

/* What the runtime gives a backend library. */
struct tfj_compute_host {
	uint32_t abi; /* TFJ_COMPUTE_PLUGIN_ABI of the runtime */
	/*
	 * tfj_err_set of the runtime: a library reports error details through
	 * it (its own copy of tfj_common would keep them in another
	 * thread-local buffer, which the runtime never reads).
	 */
	int (*err_set)(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
};

/* What a backend library returns: static storage, valid while it is loaded. */
struct tfj_compute_plugin {
	uint32_t abi;      /* TFJ_COMPUTE_PLUGIN_ABI the library was built with */
	uint32_t ops_size; /* sizeof(struct tfj_compute_ops) of that build */
	const struct tfj_compute_ops *ops;
};

/*
 * The entry point. A library must not use `host` unless host->abi equals
 * its own TFJ_COMPUTE_PLUGIN_ABI; it returns its description either way,
 * so the loader can name both versions in its error.
 */
typedef const struct tfj_compute_plugin *tfj_compute_plugin_fn(const struct tfj_compute_host *host);

#ifdef __cplusplus
}
#endif

#endif
