/*
 * computelib.c - dlopen of a compute backend library and its ABI check
 * (see computelib.h and the plugin ABI in compute_backend.h).
 */
#include "compute/computelib.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>

#define PATH_CAP 4096

struct tfj_computelib {
	void *dl;
	const struct tfj_compute_ops *ops;
};

/* Handed to every library; static, so it outlives any library that keeps it. */
static const struct tfj_compute_host host = {
	.abi = TFJ_COMPUTE_PLUGIN_ABI,
	.err_set = tfj_err_set,
};

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory of the running executable, without a trailing slash. */
static int exe_dir(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	char *slash;

	if (n <= 0 || (size_t)n >= cap - 1)
		return tfj_err_set(TFJ_EIO, "compute: cannot read /proc/self/exe");
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return tfj_err_set(TFJ_EIO, "compute: /proc/self/exe is not a path: %.64s", buf);
	*slash = '\0';
	return 0;
}

int tfj_computelib_find(char *buf, size_t cap)
{
	static const char *const rel[] = { "/" TFJ_COMPUTE_CUDA_LIB,
					   "/../lib/tfjob/" TFJ_COMPUTE_CUDA_LIB };
	const char *env = getenv("TFJOB_COMPUTE_CUDA_LIB");
	char dir[PATH_CAP], tried[2][PATH_CAP];
	size_t i;
	int n, rc;

	if (!buf || cap == 0)
		return tfj_err_set(TFJ_EINVAL, "compute: find: no buffer");
	buf[0] = '\0';
	/* An explicit choice is taken alone: a typo must not load another file. */
	if (env && env[0]) {
		if (strlen(env) >= cap)
			return tfj_err_set(TFJ_ETOOBIG, "compute: TFJOB_COMPUTE_CUDA_LIB too long");
		if (!is_file(env))
			return tfj_err_set(TFJ_ENOTFOUND,
					   "compute: TFJOB_COMPUTE_CUDA_LIB=%.200s: no such file", env);
		memcpy(buf, env, strlen(env) + 1);
		return 0;
	}
	rc = exe_dir(dir, sizeof(dir));
	if (rc < 0)
		return rc;
	for (i = 0; i < 2; i++) {
		n = snprintf(tried[i], sizeof(tried[i]), "%s%s", dir, rel[i]);
		if (n < 0 || (size_t)n >= sizeof(tried[i]) || (size_t)n >= cap)
			return tfj_err_set(TFJ_ETOOBIG, "compute: backend library path too long");
		if (is_file(tried[i])) {
			memcpy(buf, tried[i], (size_t)n + 1);
			return 0;
		}
	}
	return tfj_err_set(TFJ_ENOTFOUND,
			   "compute: no CUDA backend library (looked for %.300s and %.300s; "
			   "the GPU image carries it, or set TFJOB_COMPUTE_CUDA_LIB)",
			   tried[0], tried[1]);
}

/* Every operation present: a NULL would crash on first use instead of here. */
static int ops_complete(const struct tfj_compute_ops *o)
{
	return o->kind && o->open && o->close && o->alloc && o->release && o->upload &&
	       o->download && o->gemm && o->bias_act && o->relu_grad && o->colsum &&
	       o->softmax_xent;
}

/* Checks what the entry point returned; 0 or TFJ_EDEVICE naming `path`. */
static int check_plugin(const struct tfj_compute_plugin *p, const char *path)
{
	if (!p)
		return tfj_err_set(TFJ_EDEVICE, "compute: %.300s: entry point returned nothing",
				   path);
	if (p->abi != TFJ_COMPUTE_PLUGIN_ABI)
		return tfj_err_set(TFJ_EDEVICE,
				   "compute: %.300s: plugin ABI version %u, this runtime needs %u "
				   "(library and runtime are from different builds)",
				   path, (unsigned)p->abi, (unsigned)TFJ_COMPUTE_PLUGIN_ABI);
	if (p->ops_size != sizeof(struct tfj_compute_ops))
		return tfj_err_set(TFJ_EDEVICE,
				   "compute: %.300s: vtable of %u bytes, this runtime's has %zu", path,
				   (unsigned)p->ops_size, sizeof(struct tfj_compute_ops));
	if (!p->ops || !ops_complete(p->ops))
		return tfj_err_set(TFJ_EDEVICE, "compute: %.300s: incomplete vtable", path);
	return 0;
}

int tfj_computelib_load(struct tfj_computelib **out, const char *path)
{
	struct tfj_computelib *lib = NULL;
	tfj_compute_plugin_fn *entry;
	const struct tfj_compute_plugin *p;
	void *dl = NULL, *sym;
	const char *why;
	int rc;

	if (!out || !path)
		return tfj_err_set(TFJ_EINVAL, "compute: load: NULL argument");
	*out = NULL;
	if (!is_file(path))
		return tfj_err_set(TFJ_ENOTFOUND, "compute: %.300s: no such file", path);
	/* Local: the library's symbols (and cuBLAS's) never interpose on ours. */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		why = dlerror();
		return tfj_err_set(TFJ_EDEVICE, "compute: cannot load %.300s: %.300s", path,
				   why ? why : "unknown error");
	}
	dlerror();
	sym = dlsym(dl, TFJ_COMPUTE_PLUGIN_ENTRY);
	if (!sym) {
		rc = tfj_err_set(TFJ_EDEVICE, "compute: %.300s has no symbol %s: not a backend library",
				 path, TFJ_COMPUTE_PLUGIN_ENTRY);
		goto out;
	}
	/* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
	memcpy(&entry, &sym, sizeof(entry));
	p = entry(&host);
	rc = check_plugin(p, path);
	if (rc < 0)
		goto out;
	lib = calloc(1, sizeof(*lib));
	if (!lib) {
		rc = tfj_err_set(TFJ_ENOMEM, "compute: backend library handle");
		goto out;
	}
	lib->dl = dl;
	lib->ops = p->ops;
	*out = lib;
	return 0;
out:
	dlclose(dl);
	return rc;
}

const struct tfj_compute_ops *tfj_computelib_ops(const struct tfj_computelib *lib)
{
	return lib ? lib->ops : NULL;
}

void tfj_computelib_unload(struct tfj_computelib *lib)
{
	if (!lib)
		return;
	dlclose(lib->dl);
	free(lib);
}
