/*
 * exitcode.c - maps error classes to exit codes (see exitcode.h).
 */
#include "exitcode.h"

#include <tfj/err.h>

int tfj_exitcode_from_err(int err)
{
	switch (err) {
	case TFJ_OK:
		return TFJ_EXIT_OK;
	case TFJ_EINVAL:
	case TFJ_EPARSE:
	case TFJ_ETYPE:
	case TFJ_ERANGE:
	case TFJ_ETOOBIG:
	case TFJ_EUNSUPP:
		return TFJ_EXIT_USAGE;
	case TFJ_ENOTFOUND:
		return TFJ_EXIT_DATA;
	case TFJ_ENUMERIC:
		return TFJ_EXIT_NUMERIC;
	case TFJ_ECONFLICT:
	case TFJ_ESTATE:
		return TFJ_EXIT_MISMATCH;
	case TFJ_EDEVICE:
		return TFJ_EXIT_DEVICE;
	case TFJ_ETIMEOUT:
	case TFJ_EUNAVAIL:
		return TFJ_EXIT_UNAVAILABLE;
	case TFJ_EIO:
		return TFJ_EXIT_IO;
	case TFJ_ENOMEM:
		return TFJ_EXIT_NOMEM;
	case TFJ_ECANCELED:
		return TFJ_EXIT_ABORTED;
	default:
		return TFJ_EXIT_INTERNAL;
	}
}

const char *tfj_exitcode_name(int code)
{
	switch (code) {
	case TFJ_EXIT_OK: return "ok";
	case TFJ_EXIT_INTERNAL: return "internal";
	case TFJ_EXIT_USAGE: return "usage";
	case TFJ_EXIT_DATA: return "data";
	case TFJ_EXIT_NUMERIC: return "numeric";
	case TFJ_EXIT_MISMATCH: return "mismatch";
	case TFJ_EXIT_CHECKPOINT: return "checkpoint";
	case TFJ_EXIT_DEVICE: return "device";
	case TFJ_EXIT_UNAVAILABLE: return "unavailable";
	case TFJ_EXIT_IO: return "io";
	case TFJ_EXIT_NOMEM: return "nomem";
	case TFJ_EXIT_ABORTED: return "aborted";
	default: return "unknown";
	}
}
