/*
 * err.c - error names, messages and the thread-local detail.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tfj/err.h"

static _Thread_local char err_detail[TFJ_ERR_DETAIL_MAX];

const char *tfj_err_name(int code)
{
	switch (code) {
#define TFJ_ERR_NAME(sym, val, name, msg) case val: return name;
	TFJ_ERR_TABLE(TFJ_ERR_NAME)
#undef TFJ_ERR_NAME
	default:
		return "unknown";
	}
}

const char *tfj_err_str(int code)
{
	switch (code) {
#define TFJ_ERR_MSG(sym, val, name, msg) case val: return msg;
	TFJ_ERR_TABLE(TFJ_ERR_MSG)
#undef TFJ_ERR_MSG
	default:
		return "unknown error";
	}
}

int tfj_err_set(int code, const char *fmt, ...)
{
	char tmp[TFJ_ERR_DETAIL_MAX];
	va_list ap;

	/* Format into a scratch buffer first: callers often wrap the previous
	 * detail (`tfj_err_set(rc, "ctx: %s", tfj_err_detail())`). A truncated
	 * detail is still useful; vsnprintf always terminates. */
	va_start(ap, fmt);
	(void)vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(err_detail, tmp, sizeof(err_detail));
	return code;
}

const char *tfj_err_detail(void)
{
	return err_detail;
}

void tfj_err_clear(void)
{
	err_detail[0] = '\0';
}
