/*
 * blascore.h - OpenBLAS's kernel choice on CPUs it does not recognise.
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH: at load time it reads the
 * CPU's family and model and picks kernels for that core. A CPU it does
 * not know (virtual machines often report a generic "Intel Xeon
 * Processor" model) falls back to the Prescott kernels (SSE3), although
 * the CPU may run AVX2 or AVX-512: sgemm then costs about 1.6 times the
 * CPU time it needs (docs/benchmarks.md, "Runtime vs TensorFlow").
 * OPENBLAS_CORETYPE overrides the choice, but only before the library is
 * loaded, so the runtime sets it and executes itself again once.
 *
 * Nothing here allocates; no state is kept.
 */
#ifndef TFJ_BLASCORE_H
#define TFJ_BLASCORE_H

/* CPU features that decide the kernels (bits of tfj_blascore_features). */
#define TFJ_BLASCORE_AVX2 0x1u    /* AVX2 and FMA3, YMM state enabled by the OS */
#define TFJ_BLASCORE_AVX512 0x2u  /* AVX-512 F, CD, BW, DQ, VL, ZMM state enabled */

/* The features of the CPU this process runs on (0 off x86-64). */
unsigned tfj_blascore_features(void);

/*
 * The OpenBLAS core type to force, or NULL to leave OpenBLAS's own choice:
 * only when OpenBLAS fell back to its generic core ("Prescott", compared
 * without case) and the features allow better kernels. Pure.
 */
const char *tfj_blascore_choose(const char *loaded_core, unsigned features);

/*
 * Called first thing in main: when OPENBLAS_CORETYPE is unset and
 * tfj_blascore_choose names a core, sets OPENBLAS_CORETYPE (inherited by
 * every task `launch` starts) and executes /proc/self/exe with the same
 * argv. Returns only when there is nothing to do or the exec failed (the
 * process then runs on OpenBLAS's own choice, as before). A user's own
 * OPENBLAS_CORETYPE, even empty, is never overridden.
 */
void tfj_blascore_reexec(char **argv);

#endif
