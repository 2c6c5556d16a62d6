/*
 * fuzz_report.c - the report decoder (reportmsg.h) on arbitrary bytes.
 *
 * The first input byte picks the method (RegisterReplica, Heartbeat, Exit);
 * the rest is the request body as it would arrive off the wire.
 * Properties: no crash or leak, and a decoded report always satisfies the
 * decoder's promises: names non-empty, NUL-terminated and of the allowed
 * characters, a known replica type, an index in range, finite numbers, a
 * training length of at least one step, at most TFJ_PROGREC_METRICS_MAX named
 * metrics with names and finite values, an exit code in 0..255, printable
 * reason and message.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/reportmsg.h"
#include "tfjob/tfjob.h"

static void check_name(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == 0 || n >= cap)
		abort();
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
			abort();
}

static void check_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap), i;

	if (n >= cap)
		abort();
	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_reportmsg m;
	enum tfj_reportmsg_kind kind;

	if (size < 1)
		return 0;
	kind = (enum tfj_reportmsg_kind)(data[0] % TFJ_RM_COUNT);
	if (tfj_reportmsg_decode(&m, kind, data + 1, size - 1) != 0)
		return 0;
	if (m.kind != kind)
		abort();
	check_name(m.ref.ns, sizeof(m.ref.ns));
	check_name(m.ref.job, sizeof(m.ref.job));
	check_name(m.ref.job_uid, sizeof(m.ref.job_uid));
	check_name(m.ref.pod, sizeof(m.ref.pod));
	if (m.ref.type < 0 || m.ref.type >= TFJ_RT_COUNT || m.ref.index < 0 ||
	    m.ref.index >= TFJ_TFJOB_MAX_REPLICAS)
		abort();
	if ((m.has_loss && !isfinite(m.loss)) || (m.has_accuracy && !isfinite(m.accuracy)) ||
	    (m.has_eps && !isfinite(m.eps)) || (m.has_step && m.step < 0) || m.progress_ms < 0)
		abort();
	if ((m.has_total && m.total < 1) || m.nmetrics > TFJ_PROGREC_METRICS_MAX)
		abort();
	for (unsigned i = 0; i < m.nmetrics; i++) {
		size_t n = strnlen(m.metrics[i].name, sizeof(m.metrics[i].name));

		if (n == 0 || n >= sizeof(m.metrics[i].name) || !isfinite(m.metrics[i].value))
			abort();
	}
	if (m.exit_code < 0 || m.exit_code > 255)
		abort();
	check_text(m.reason, sizeof(m.reason));
	check_text(m.message, sizeof(m.message));
	return 0;
}
