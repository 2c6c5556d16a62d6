/*
 * smoke_stub.c - the C half of the smoke library. A static library needs
 * at least one source of its own language; this also shows a C file of the
 * same target seeing TFJOB_HAVE_CUDA=1.
 */
#include <tfj_smoke.h>

#if !defined(TFJOB_HAVE_CUDA)
#error "tfj_cuda_attach should have defined TFJOB_HAVE_CUDA"
#endif

int tfj_smoke_have_cuda(void);

int tfj_smoke_have_cuda(void)
{
	return TFJOB_HAVE_CUDA;
}
