/*
 * jobmetrics.c - job counters by namespace (Kubeflow's names) and pod
 * restarts by exit code.
 */
#include "app/jobmetrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/names.h>

#include "kube/strmap.h"
#include "tfjob/jobstatus.h"

#define NS_MAX 63            /* a namespace name is a DNS-1123 label */
#define EXIT_CODES 256       /* "0".."255" */
#define EXIT_OTHER EXIT_CODES
#define EXIT_NONE (EXIT_CODES + 1)

/* The phases the gauge shows: tfjob/jobstatus.h's STATE conditions, Created to Failed. */
#define NPHASES ((size_t)TFJ_COND_FAILED + 1)

struct ns_row {
	char ns[NS_MAX + 1];
	uint64_t n[TFJ_JM_COUNT];
};

struct tfj_jobmetrics {
	pthread_mutex_t mu;
	struct ns_row *rows;     /* rows[0] is "_other"; then namespaces as first seen */
	size_t nrows, max_rows;
	uint64_t exits[EXIT_CODES + 2];
	struct tfj_strmap phase_of;  /* job key -> its phase index + 1 (as a pointer) */
	uint64_t in_phase[NPHASES];
};

static const char *const family[TFJ_JM_COUNT] = {
	[TFJ_JM_CREATED] = "created",
	[TFJ_JM_DELETED] = "deleted",
	[TFJ_JM_SUCCESSFUL] = "successful",
	[TFJ_JM_FAILED] = "failed",
	[TFJ_JM_RESTARTED] = "restarted",
};

static const char *const help[TFJ_JM_COUNT] = {
	[TFJ_JM_CREATED] = "TFJobs that got their Created condition",
	[TFJ_JM_DELETED] = "TFJobs the operator deleted after ttlSecondsAfterFinished",
	[TFJ_JM_SUCCESSFUL] = "TFJobs that succeeded",
	[TFJ_JM_FAILED] = "TFJobs that failed",
	[TFJ_JM_RESTARTED] = "Replica pods of TFJobs deleted to be restarted",
};

int tfj_jobmetrics_new(struct tfj_jobmetrics **out, size_t max_ns)
{
	struct tfj_jobmetrics *m;

	*out = NULL;
	if (max_ns == 0)
		max_ns = TFJ_JOBMETRICS_MAX_NS_DEFAULT;
	if (max_ns > SIZE_MAX / sizeof(struct ns_row) - 1)
		return tfj_err_set(TFJ_EINVAL, "jobmetrics: too many namespaces");
	/* Zeroed: phase_of is then an empty map (TFJ_STRMAP_INIT). */
	if (!(m = calloc(1, sizeof(*m))))
		return tfj_err_set(TFJ_ENOMEM, "jobmetrics");
	if (!(m->rows = calloc(max_ns + 1, sizeof(*m->rows)))) {
		free(m);
		return tfj_err_set(TFJ_ENOMEM, "jobmetrics rows");
	}
	if (pthread_mutex_init(&m->mu, NULL)) {
		free(m->rows);
		free(m);
		return tfj_err_set(TFJ_ENOMEM, "jobmetrics mutex");
	}
	memcpy(m->rows[0].ns, TFJ_JOBMETRICS_OTHER_NS, sizeof(TFJ_JOBMETRICS_OTHER_NS));
	m->nrows = 1;
	m->max_rows = max_ns + 1;
	*out = m;
	return 0;
}

void tfj_jobmetrics_free(struct tfj_jobmetrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	tfj_strmap_free(&m->phase_of, NULL);
	free(m->rows);
	free(m);
}

/*
 * 1 when s is a namespace name (lowercase letters, digits, '-'; at most 63):
 * only those become label values, so a sample line can never be broken by
 * what a caller passed.
 */
/* The row of ns, added while there is room; rows[0] ("_other") otherwise. Under mu. */
static struct ns_row *row_of(struct tfj_jobmetrics *m, const char *ns)
{
	size_t i;

	if (!ns || !tfj_names_is_dns1123_label(ns, strnlen(ns, NS_MAX + 1)))
		return &m->rows[0];
	for (i = 1; i < m->nrows; i++)
		if (strcmp(m->rows[i].ns, ns) == 0)
			return &m->rows[i];
	if (m->nrows >= m->max_rows)
		return &m->rows[0];
	memcpy(m->rows[m->nrows].ns, ns, strlen(ns) + 1);
	return &m->rows[m->nrows++];
}

void tfj_jobmetrics_inc(struct tfj_jobmetrics *m, const char *ns, enum tfj_jobmetric which)
{
	if (!m || (unsigned)which >= TFJ_JM_COUNT)
		return;
	pthread_mutex_lock(&m->mu);
	row_of(m, ns)->n[which]++;
	pthread_mutex_unlock(&m->mu);
}

void tfj_jobmetrics_restart(struct tfj_jobmetrics *m, int exit_code)
{
	size_t at = exit_code == TFJ_JOBMETRICS_EXIT_NONE ? EXIT_NONE
		  : exit_code >= 0 && exit_code < EXIT_CODES ? (size_t)exit_code : EXIT_OTHER;

	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->exits[at]++;
	pthread_mutex_unlock(&m->mu);
}

/* One job fewer in phase idx (1-based; 0: none). Under mu. */
static void uncount(struct tfj_jobmetrics *m, uintptr_t idx)
{
	if (idx && m->in_phase[idx - 1])
		m->in_phase[idx - 1]--;
}

/* Drops key's note, if any. Under mu. */
static void drop_phase(struct tfj_jobmetrics *m, const char *key)
{
	uncount(m, (uintptr_t)tfj_strmap_del(&m->phase_of, key));
}

void tfj_jobmetrics_phase(struct tfj_jobmetrics *m, const char *key, const char *phase)
{
	uintptr_t idx = 0, old;

	if (!m || !key)
		return;
	for (size_t i = 0; phase && i < NPHASES; i++)
		if (strcmp(phase, tfj_jobstatus_cond_name((enum tfj_cond)i)) == 0)
			idx = i + 1;
	pthread_mutex_lock(&m->mu);
	old = (uintptr_t)tfj_strmap_get(&m->phase_of, key);
	if (idx == 0) {
		drop_phase(m, key);
	} else if (old != idx && (old || m->phase_of.n < TFJ_JOBMETRICS_MAX_JOBS) &&
		   tfj_strmap_put(&m->phase_of, key, (void *)idx, NULL) == 0) {
		uncount(m, old);
		m->in_phase[idx - 1]++;
	}
	pthread_mutex_unlock(&m->mu);
}

void tfj_jobmetrics_forget(struct tfj_jobmetrics *m, const char *key)
{
	if (!m || !key)
		return;
	pthread_mutex_lock(&m->mu);
	drop_phase(m, key);
	pthread_mutex_unlock(&m->mu);
}

static int render_phases(struct tfj_jobmetrics *m, struct tfj_buf *out)
{
	int rc = tfj_buf_puts(out,
		"# HELP tfjob_operator_jobs TFJobs this operator reconciles, by phase (STATE).\n"
		"# TYPE tfjob_operator_jobs gauge\n");

	for (size_t i = 0; i < NPHASES && rc == 0; i++)
		rc = tfj_buf_printf(out, "tfjob_operator_jobs{phase=\"%s\"} %llu\n", tfj_jobstatus_cond_name((enum tfj_cond)i),
				    (unsigned long long)m->in_phase[i]);
	return rc;
}

/* One Kubeflow family: the rows with a count, "_other" only when it has one. */
static int render_family(struct tfj_jobmetrics *m, struct tfj_buf *out, enum tfj_jobmetric f)
{
	int rc = tfj_buf_printf(out,
		"# HELP training_operator_jobs_%s_total %s (Kubeflow's name), by namespace.\n"
		"# TYPE training_operator_jobs_%s_total counter\n", family[f], help[f], family[f]);

	for (size_t i = 0; i < m->nrows && rc == 0; i++) {
		if (!m->rows[i].n[f] && i == 0)
			continue;
		rc = tfj_buf_printf(out,
			"training_operator_jobs_%s_total{job_namespace=\"%s\",framework=\"tensorflow\"} %llu\n",
			family[f], m->rows[i].ns, (unsigned long long)m->rows[i].n[f]);
	}
	return rc;
}

static int render_exits(struct tfj_jobmetrics *m, struct tfj_buf *out)
{
	int rc = tfj_buf_puts(out,
		"# HELP tfjob_operator_pod_restarts_total Replica pods deleted to be restarted, by "
		"the tensorflow container's exit code (none: no exit code, e.g. hung).\n"
		"# TYPE tfjob_operator_pod_restarts_total counter\n");

	for (size_t i = 0; i < EXIT_CODES + 2 && rc == 0; i++) {
		if (!m->exits[i])
			continue;
		if (i < EXIT_CODES)
			rc = tfj_buf_printf(out, "tfjob_operator_pod_restarts_total{exit_code=\"%zu\"} %llu\n",
					    i, (unsigned long long)m->exits[i]);
		else
			rc = tfj_buf_printf(out, "tfjob_operator_pod_restarts_total{exit_code=\"%s\"} %llu\n",
					    i == EXIT_OTHER ? "other" : "none",
					    (unsigned long long)m->exits[i]);
	}
	return rc;
}

int tfj_jobmetrics_render(struct tfj_jobmetrics *m, struct tfj_buf *out)
{
	int rc = 0;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->mu);
	for (int f = 0; f < TFJ_JM_COUNT && rc == 0; f++)
		rc = render_family(m, out, (enum tfj_jobmetric)f);
	if (rc == 0)
		rc = render_exits(m, out);
	if (rc == 0)
		rc = render_phases(m, out);
	pthread_mutex_unlock(&m->mu);
	return rc ? TFJ_ETOOBIG : 0;
}
