/*
 * summary.c - TensorBoard Event messages and the run writer (summary.h).
 */
#include "summary/summary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/log.h>

#include "summary/evfile.h"
#include "tfj_tbevent.pb-c.h"

#define PATH_CAP 1200
#define HOST_CAP 64
/* Same second, host and pid twice (a restart inside one container): try a suffix. */
#define NAME_TRIES 8

struct tfj_summary {
	struct tfj_evfile *file;
	char path[PATH_CAP];
	int failed;                  /* a write failed: warned once, write no more */
	int64_t rate_step;           /* tfj_summary_rate's previous call */
	uint64_t rate_ns;
	int rate_ok;
	uint8_t rec[TFJ_EVFILE_MAX_DATA];
};

/* Wall time in seconds, as Event.wall_time holds it (milliseconds are plenty). */
static double wall_now(void)
{
	return (double)tfj_clock_unix_ms() / 1e3;
}

static int pack(uint8_t *out, size_t cap, size_t *len, const Tfj__Tensorboard__Event *ev)
{
	size_t n = tfj__tensorboard__event__get_packed_size(ev);

	/*
	 * Defined on failure too: gcc 12 at -O3 cannot see that tfj_err_set
	 * returns non-zero, and warned that a caller could read *len unset.
	 */
	*len = 0;
	if (n > cap)
		return tfj_err_set(TFJ_ETOOBIG, "summary event of %zu bytes (room for %zu)", n, cap);
	*len = tfj__tensorboard__event__pack(ev, out);
	return 0;
}

int tfj_summary_encode(uint8_t *out, size_t cap, size_t *len, double wall_time, int64_t step,
		       const struct tfj_summary_value *v, size_t n)
{
	Tfj__Tensorboard__Event ev = TFJ__TENSORBOARD__EVENT__INIT;
	Tfj__Tensorboard__Summary sum = TFJ__TENSORBOARD__SUMMARY__INIT;
	Tfj__Tensorboard__Summary__Value vals[TFJ_SUMMARY_MAX_VALUES];
	Tfj__Tensorboard__Summary__Value *ptrs[TFJ_SUMMARY_MAX_VALUES];
	size_t i, tl, k = 0;

	if (n == 0 || n > TFJ_SUMMARY_MAX_VALUES)
		return tfj_err_set(TFJ_EINVAL, "summary: %zu values (1 to %d)", n,
				   TFJ_SUMMARY_MAX_VALUES);
	for (i = 0; i < n; i++) {
		tl = v[i].tag ? strnlen(v[i].tag, TFJ_SUMMARY_MAX_TAG + 1) : 0;
		if (tl == 0 || tl > TFJ_SUMMARY_MAX_TAG)
			return tfj_err_set(TFJ_EINVAL, "summary: value %zu has no tag or one over "
					   "%d bytes", i, TFJ_SUMMARY_MAX_TAG);
		if (isnan(v[i].value))
			continue;
		tfj__tensorboard__summary__value__init(&vals[k]);
		vals[k].tag = (char *)v[i].tag;
		vals[k].value_case = TFJ__TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
		vals[k].simple_value = (float)v[i].value;
		ptrs[k] = &vals[k];
		k++;
	}
	*len = 0;
	if (k == 0)
		return 0;
	sum.n_value = k;
	sum.value = ptrs;
	ev.wall_time = wall_time;
	ev.step = step;
	ev.what_case = TFJ__TENSORBOARD__EVENT__WHAT_SUMMARY;
	ev.summary = &sum;
	return pack(out, cap, len, &ev);
}

int tfj_summary_encode_version(uint8_t *out, size_t cap, size_t *len, double wall_time)
{
	Tfj__Tensorboard__Event ev = TFJ__TENSORBOARD__EVENT__INIT;

	ev.wall_time = wall_time;
	ev.what_case = TFJ__TENSORBOARD__EVENT__WHAT_FILE_VERSION;
	ev.file_version = (char *)TFJ_SUMMARY_FILE_VERSION;
	return pack(out, cap, len, &ev);
}

/* The host name with anything but [A-Za-z0-9._-] replaced: it goes into a file name. */
static void host_part(char *out, size_t cap)
{
	size_t i;

	if (gethostname(out, cap) != 0 || !out[0])
		snprintf(out, cap, "localhost");
	out[cap - 1] = '\0';
	for (i = 0; out[i]; i++) {
		char c = out[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
			out[i] = '_';
	}
}

/* Creates the run directory and the file (a fresh name: never two writers on one file). */
static int create_file(struct tfj_summary *w, const char *logdir, const char *run)
{
	char host[HOST_CAP];
	long long sec = (long long)time(NULL);
	int n, i, rc = 0;

	n = snprintf(w->path, sizeof(w->path), "%s/%s", logdir, run);
	if (n < 0 || (size_t)n >= sizeof(w->path))
		return tfj_err_set(TFJ_EINVAL, "--logdir: path too long");
	if (mkdir(w->path, 0755) != 0 && errno != EEXIST)
		return tfj_err_set(TFJ_EIO, "cannot create %s: %s", w->path, strerror(errno));
	host_part(host, sizeof(host));
	for (i = 0; i < NAME_TRIES; i++) {
		n = snprintf(w->path, sizeof(w->path), "%s/%s/events.out.tfevents.%lld.%s.%ld%s%.0d",
			     logdir, run, sec, host, (long)getpid(), i ? "." : "", i);
		if (n < 0 || (size_t)n >= sizeof(w->path))
			return tfj_err_set(TFJ_EINVAL, "--logdir: path too long");
		rc = tfj_evfile_open(&w->file, w->path);
		if (rc != TFJ_EEXIST)
			break;
	}
	return rc;
}

int tfj_summary_open(struct tfj_summary **out, const char *logdir, const char *run)
{
	struct tfj_summary *w;
	size_t len;
	int rc;

	*out = NULL;
	if (!logdir || !logdir[0] || !run || !run[0] || strchr(run, '/') ||
	    strcmp(run, ".") == 0 || strcmp(run, "..") == 0)
		return tfj_err_set(TFJ_EINVAL, "summary: bad logdir or run name");
	w = calloc(1, sizeof(*w));
	if (!w)
		return tfj_err_set(TFJ_ENOMEM, "summary: out of memory");
	rc = create_file(w, logdir, run);
	if (rc)
		goto out;
	rc = tfj_summary_encode_version(w->rec, sizeof(w->rec), &len, wall_now());
	if (rc == 0)
		rc = tfj_evfile_append(w->file, w->rec, len);
out:
	if (rc) {
		tfj_summary_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int tfj_summary_scalars(struct tfj_summary *w, int64_t step, const struct tfj_summary_value *v,
			size_t n)
{
	size_t len;
	int rc;

	if (!w || w->failed)
		return 0;
	rc = tfj_summary_encode(w->rec, sizeof(w->rec), &len, wall_now(), step, v, n);
	if (rc == 0 && len)
		rc = tfj_evfile_append(w->file, w->rec, len);
	if (rc) {
		w->failed = 1;
		tfj_log_warn("TensorBoard summaries stopped", "path", w->path, "error",
			     tfj_err_name(rc), "detail", tfj_err_detail());
	}
	return rc;
}

double tfj_summary_rate(struct tfj_summary *w, int64_t step)
{
	uint64_t now;
	double r = NAN;

	if (!w)
		return NAN;
	now = tfj_clock_mono_ns();
	if (w->rate_ok && step >= w->rate_step && now > w->rate_ns)
		r = (double)(step - w->rate_step) * 1e9 / (double)(now - w->rate_ns);
	w->rate_step = step;
	w->rate_ns = now;
	w->rate_ok = 1;
	return r;
}

const char *tfj_summary_path(const struct tfj_summary *w)
{
	return w ? w->path : "";
}

void tfj_summary_free(struct tfj_summary *w)
{
	if (!w)
		return;
	tfj_evfile_close(w->file);
	free(w);
}
