/*
 * exitcode.c - the exit-code table and the retryable rule (see exitcode.h).
 */
#include "tfj/exitcode.h"

#include "tfj/err.h"

int tfj_exitcode_retryable(int code)
{
	return code >= TFJ_EXIT_RETRYABLE_MIN && code <= TFJ_EXIT_RETRYABLE_MAX;
}

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
#define TFJ_EXIT_NAME(sym, val, name) case val: return name;
	TFJ_EXIT_TABLE(TFJ_EXIT_NAME)
#undef TFJ_EXIT_NAME
	default:
		return "unknown";
	}
}
