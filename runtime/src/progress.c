/*
 * progress.c - TFJ_PROGRESS lines (progress.h).
 */
#include "progress.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

void tfj_progress_begin(struct tfj_progress *p, const char *role, int index)
{
	tfj_buf_init(&p->b, TFJ_PROGRESS_MAX);
	tfj_buf_printf(&p->b, TFJ_PROGRESS_PREFIX "{\"role\":\"%s\",\"index\":%d", role, index);
}

void tfj_progress_int(struct tfj_progress *p, const char *key, int64_t v)
{
	tfj_buf_printf(&p->b, ",\"%s\":%" PRId64, key, v);
}

void tfj_progress_num(struct tfj_progress *p, const char *key, double v)
{
	if (isfinite(v))
		tfj_buf_printf(&p->b, ",\"%s\":%.6g", key, v);
	else
		tfj_buf_printf(&p->b, ",\"%s\":null", key);
}

void tfj_progress_bool(struct tfj_progress *p, const char *key, int v)
{
	tfj_buf_printf(&p->b, ",\"%s\":%s", key, v ? "true" : "false");
}

void tfj_progress_end(struct tfj_progress *p)
{
	/* A record that hit the cap is still closed: drop the partial key instead. */
	if (tfj_buf_puts(&p->b, "}\n") != 0) {
		tfj_buf_clear(&p->b);
		tfj_buf_puts(&p->b, TFJ_PROGRESS_PREFIX "{\"error\":\"record too long\"}\n");
	}
	fwrite(tfj_buf_cstr(&p->b), 1, p->b.len, stdout);
	fflush(stdout);
	tfj_buf_free(&p->b);
}
