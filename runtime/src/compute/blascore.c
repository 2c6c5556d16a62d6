/*
 * blascore.c - see blascore.h.
 */
#include "compute/blascore.h"

#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>

/* XCR0, the state components the OS saves: what it lets programs use. */
static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

unsigned tfj_blascore_features(void)
{
	unsigned a, b, c, d, out = 0;
	uint64_t xcr0;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	/* OSXSAVE (27), AVX (28) and FMA (12) first: xgetbv needs OSXSAVE. */
	if (!(c & (1u << 27)) || !(c & (1u << 28)) || !(c & (1u << 12)))
		return 0;
	xcr0 = xgetbv0();
	if ((xcr0 & 0x6) != 0x6) /* SSE and YMM state */
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	if (b & (1u << 5)) /* AVX2 */
		out |= TFJ_BLASCORE_AVX2;
	/* F (16), DQ (17), CD (28), BW (30), VL (31): SkylakeX's kernels. */
	if ((out & TFJ_BLASCORE_AVX2) &&
	    (b & ((1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31))) ==
		    ((1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31)) &&
	    (xcr0 & 0xe0) == 0xe0) /* opmask, ZMM_Hi256, Hi16_ZMM state */
		out |= TFJ_BLASCORE_AVX512;
	return out;
}
#else
unsigned tfj_blascore_features(void)
{
	return 0;
}
#endif

const char *tfj_blascore_choose(const char *loaded_core, unsigned features)
{
	if (!loaded_core || strcasecmp(loaded_core, "prescott") != 0)
		return NULL;
	if (features & TFJ_BLASCORE_AVX512)
		return "SkylakeX";
	if (features & TFJ_BLASCORE_AVX2)
		return "Haswell";
	return NULL;
}

void tfj_blascore_reexec(char **argv)
{
	const char *core;

	if (getenv("OPENBLAS_CORETYPE"))
		return;
	core = tfj_blascore_choose(openblas_get_corename(), tfj_blascore_features());
	if (!core)
		return;
	/*
	 * Set even if the exec fails, so that a process started from here
	 * later does not try again; this one keeps the kernels it has.
	 */
	if (setenv("OPENBLAS_CORETYPE", core, 1) != 0)
		return;
	execv("/proc/self/exe", argv);
}
