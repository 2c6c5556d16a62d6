/*
 * computelib.h - loads a compute backend library (the CUDA backend,
 * libtfjob-compute-cuda.so) with dlopen and checks its plugin ABI
 * (compute_backend.h: TFJ_COMPUTE_PLUGIN_ENTRY, struct tfj_compute_plugin).
 *
 * Why a library and not a linked-in backend: cuBLAS and the CUDA runtime
 * are ~570 MB and a binary that links them does not start where they are
 * missing. With the backend behind dlopen, one tfjob-runtime binary (and
 * one image) runs on CPU nodes, and only the GPU image carries the library
 * and the CUDA libraries it needs.
 *
 * Where the library is looked for (tfj_computelib_find):
 *   1. $TFJOB_COMPUTE_CUDA_LIB, when set and not empty: that file only;
 *   2. <directory of the executable>/libtfjob-compute-cuda.so (build tree);
 *   3. <directory of the executable>/../lib/tfjob/libtfjob-compute-cuda.so
 *      (installed: /usr/bin/tfjob-runtime, /usr/lib/tfjob/...).
 * Paths, not the loader's search path, so that which file is loaded never
 * depends on LD_LIBRARY_PATH or ld.so.cache of the node.
 *
 * Threading: load/unload may be called from any thread; a loaded library's
 * ops are immutable. Ownership: the caller unloads what it loaded.
 */
#ifndef TFJ_COMPUTELIB_H
#define TFJ_COMPUTELIB_H

#include <stddef.h>

#include "compute/compute_backend.h"

struct tfj_computelib;

/*
 * Writes the path of the CUDA backend library to buf: the first of the
 * candidates above that exists. TFJ_ENOTFOUND (detail naming every path
 * tried) when none does, TFJ_ETOOBIG when a path does not fit into cap.
 */
int tfj_computelib_find(char *buf, size_t cap);

/*
 * Loads the library at `path` (dlopen with RTLD_NOW | RTLD_LOCAL, so a
 * missing dependency fails here and its symbols never clash with ours),
 * calls its entry point and checks the description: TFJ_ENOTFOUND when the
 * file does not exist; TFJ_EDEVICE when dlopen fails (e.g. libcublas
 * missing), the entry point is missing, the ABI version or the vtable size
 * differs, or an operation is NULL. The library is closed again on failure.
 */
int tfj_computelib_load(struct tfj_computelib **out, const char *path);

/* The backend's vtable; valid until tfj_computelib_unload. */
const struct tfj_compute_ops *tfj_computelib_ops(const struct tfj_computelib *lib);

/*
 * Closes the library; accepts NULL. Every handle opened with its ops must
 * have been freed. The runtime itself never unloads the CUDA backend (the
 * CUDA runtime does not support being unloaded while a context exists).
 */
void tfj_computelib_unload(struct tfj_computelib *lib);

#endif
