/*
 * tfconfig.c - TF_CONFIG encoder, decoder and validator.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfj/err.h"
#include "tfj/json.h"
#include "tfj/parse.h"
#include "tfj/tfconfig.h"

static const char *const known_types[] = { "chief", "master", "worker", "ps", "evaluator" };

int tfj_tfconfig_known_type(const char *type)
{
	size_t i;

	if (!type)
		return 0;
	for (i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++)
		if (strcmp(type, known_types[i]) == 0)
			return 1;
	return 0;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static int utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned char c = *s;
		uint32_t cp;
		int n, i;

		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

static int check_string(const char *s, size_t max, const char *what)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0)
		return tfj_err_set(TFJ_EINVAL, "%s is empty", what);
	if (n > max)
		return tfj_err_set(TFJ_ETOOBIG, "%s is longer than %zu bytes", what, max);
	if (!utf8_valid((const unsigned char *)s))
		return tfj_err_set(TFJ_EINVAL, "%s is not valid UTF-8", what);
	return 0;
}

/* A sparse job's index k: in range and not used by an earlier host. */
static int check_index(const struct tfj_tfconfig_job *job, size_t k)
{
	size_t m;

	if (!job->indexes || job->indexes[k] < 0)
		return tfj_err_set(TFJ_ERANGE, "cluster.%s: task index missing or negative",
				   job->name);
	for (m = 0; m < k; m++)
		if (job->indexes[m] == job->indexes[k])
			return tfj_err_set(TFJ_EINVAL, "cluster.%s: task %d listed twice", job->name,
					   job->indexes[k]);
	return 0;
}

static int any_sparse(const struct tfj_tfconfig *cfg)
{
	size_t i;

	for (i = 0; i < cfg->njobs; i++)
		if (cfg->jobs[i].sparse)
			return 1;
	return 0;
}

int tfj_tfconfig_host_index(const struct tfj_tfconfig_job *j, size_t k)
{
	return j->sparse && j->indexes ? j->indexes[k] : (int)k;
}

int tfj_tfconfig_validate(const struct tfj_tfconfig *cfg)
{
	const struct tfj_tfconfig_job *task_job = NULL;
	size_t i, j;
	int rc;

	if (cfg->njobs > TFJ_TFCONFIG_MAX_JOBS)
		return tfj_err_set(TFJ_ETOOBIG, "cluster has %zu task types, at most %d allowed",
				   cfg->njobs, TFJ_TFCONFIG_MAX_JOBS);
	for (i = 0; i < cfg->njobs; i++) {
		const struct tfj_tfconfig_job *job = &cfg->jobs[i];

		if (!tfj_tfconfig_known_type(job->name))
			return tfj_err_set(TFJ_EINVAL,
					   "cluster: unknown task type '%s' (expected chief, master, "
					   "worker, ps or evaluator, lowercase)", job->name);
		for (j = 0; j < i; j++)
			if (strcmp(cfg->jobs[j].name, job->name) == 0)
				return tfj_err_set(TFJ_EINVAL, "cluster: task type '%s' listed twice",
						   job->name);
		if (job->nhosts > TFJ_TFCONFIG_MAX_HOSTS)
			return tfj_err_set(TFJ_ETOOBIG, "cluster.%s has %zu hosts, at most %d allowed",
					   job->name, job->nhosts, TFJ_TFCONFIG_MAX_HOSTS);
		if ((strcmp(job->name, "chief") == 0 || strcmp(job->name, "master") == 0) &&
		    job->nhosts > 1)
			return tfj_err_set(TFJ_EINVAL, "cluster.%s has %zu hosts; at most one allowed",
					   job->name, job->nhosts);
		for (j = 0; j < job->nhosts; j++) {
			if (job->sparse && (rc = check_index(job, j)))
				return rc;
			if (!job->hosts[j])
				return tfj_err_set(TFJ_EINVAL, "cluster.%s[%zu] is missing", job->name, j);
			rc = check_string(job->hosts[j], TFJ_TFCONFIG_MAX_HOSTLEN, "cluster host");
			if (rc)
				return tfj_err_set(rc, "cluster.%s[%zu]: %s", job->name, j,
						   tfj_err_detail());
		}
	}
	if (tfj_tfconfig_find_job(cfg, "chief") && tfj_tfconfig_find_job(cfg, "master"))
		return tfj_err_set(TFJ_EINVAL, "cluster has both chief and master; at most one chief");
	if (cfg->environment && (rc = check_string(cfg->environment, TFJ_TFCONFIG_MAX_STRLEN,
						   "environment")))
		return rc;
	if (cfg->rpc_layer && (rc = check_string(cfg->rpc_layer, TFJ_TFCONFIG_MAX_STRLEN,
						 "rpc_layer")))
		return rc;
	if (!cfg->has_task)
		return 0;
	if (!tfj_tfconfig_known_type(cfg->task_type))
		return tfj_err_set(TFJ_EINVAL, "task.type '%s' is not a known task type",
				   cfg->task_type ? cfg->task_type : "");
	if (cfg->task_index < 0)
		return tfj_err_set(TFJ_ERANGE, "task.index %d is negative", cfg->task_index);
	task_job = tfj_tfconfig_find_job(cfg, cfg->task_type);
	if (!task_job) {
		/*
		 * TensorFlow keeps the evaluator outside the training cluster;
		 * Kubeflow's sparse (enableDynamicWorker) config gives chief and
		 * evaluator a cluster without themselves.
		 */
		if (strcmp(cfg->task_type, "evaluator") == 0 || any_sparse(cfg))
			return 0;
		return tfj_err_set(TFJ_EINVAL, "task.type '%s' does not appear in cluster",
				   cfg->task_type);
	}
	if (task_job->sparse) {
		for (j = 0; j < task_job->nhosts; j++)
			if (task_job->indexes[j] == cfg->task_index)
				return 0;
		return tfj_err_set(TFJ_ERANGE, "task.index %d is not in the sparse cluster.%s",
				   cfg->task_index, cfg->task_type);
	}
	if ((size_t)cfg->task_index >= task_job->nhosts)
		return tfj_err_set(TFJ_ERANGE, "task.index %d out of range: cluster.%s has %zu hosts",
				   cfg->task_index, cfg->task_type, task_job->nhosts);
	return 0;
}

const struct tfj_tfconfig_job *tfj_tfconfig_find_job(const struct tfj_tfconfig *cfg,
						     const char *name)
{
	size_t i;

	for (i = 0; i < cfg->njobs; i++)
		if (strcmp(cfg->jobs[i].name, name) == 0)
			return &cfg->jobs[i];
	return NULL;
}

static struct tfj_tfconfig_job *find_job_mut(struct tfj_tfconfig *cfg, const char *name)
{
	return (struct tfj_tfconfig_job *)tfj_tfconfig_find_job(cfg, name);
}

int tfj_tfconfig_add_job(struct tfj_tfconfig *cfg, const char *name)
{
	struct tfj_tfconfig_job *jobs;

	if (!name || find_job_mut(cfg, name))
		return tfj_err_set(TFJ_EINVAL, "task type '%s' missing or already added",
				   name ? name : "");
	if (cfg->njobs >= TFJ_TFCONFIG_MAX_JOBS)
		return tfj_err_set(TFJ_ETOOBIG, "at most %d task types", TFJ_TFCONFIG_MAX_JOBS);
	jobs = realloc(cfg->jobs, (cfg->njobs + 1) * sizeof(*jobs));
	if (!jobs)
		return tfj_err_set(TFJ_ENOMEM, "adding task type");
	cfg->jobs = jobs;
	memset(&jobs[cfg->njobs], 0, sizeof(*jobs));
	jobs[cfg->njobs].name = strdup(name);
	if (!jobs[cfg->njobs].name)
		return tfj_err_set(TFJ_ENOMEM, "adding task type");
	cfg->njobs++;
	return 0;
}

int tfj_tfconfig_add_sparse_job(struct tfj_tfconfig *cfg, const char *name)
{
	int rc = tfj_tfconfig_add_job(cfg, name);

	if (!rc)
		cfg->jobs[cfg->njobs - 1].sparse = 1;
	return rc;
}

/* Appends host (task `index` of a sparse job; ignored for a list). */
static int append_host(struct tfj_tfconfig *cfg, const char *job, int sparse, int index,
		       const char *host)
{
	struct tfj_tfconfig_job *j = find_job_mut(cfg, job);
	char **hosts, *copy;
	int *idx;

	if (!j || !host || j->sparse != sparse)
		return tfj_err_set(TFJ_EINVAL, "no %s task type '%s' to add a host to",
				   sparse ? "sparse" : "list", job);
	if (j->nhosts >= TFJ_TFCONFIG_MAX_HOSTS)
		return tfj_err_set(TFJ_ETOOBIG, "cluster.%s: at most %d hosts", job,
				   TFJ_TFCONFIG_MAX_HOSTS);
	if (sparse) {
		if (!(idx = realloc(j->indexes, (j->nhosts + 1) * sizeof(*idx))))
			return tfj_err_set(TFJ_ENOMEM, "adding host");
		j->indexes = idx;
		idx[j->nhosts] = index;
	}
	copy = strdup(host);
	if (!copy)
		return tfj_err_set(TFJ_ENOMEM, "adding host");
	hosts = realloc(j->hosts, (j->nhosts + 1) * sizeof(*hosts));
	if (!hosts) {
		free(copy);
		return tfj_err_set(TFJ_ENOMEM, "adding host");
	}
	j->hosts = hosts;
	j->hosts[j->nhosts++] = copy;
	return 0;
}

int tfj_tfconfig_add_host(struct tfj_tfconfig *cfg, const char *job, const char *host)
{
	return append_host(cfg, job, 0, 0, host);
}

int tfj_tfconfig_add_host_at(struct tfj_tfconfig *cfg, const char *job, int index,
			     const char *host)
{
	return append_host(cfg, job, 1, index, host);
}

static int replace_str(char **dst, const char *src)
{
	char *copy = NULL;

	if (src && !(copy = strdup(src)))
		return tfj_err_set(TFJ_ENOMEM, "copying string");
	free(*dst);
	*dst = copy;
	return 0;
}

int tfj_tfconfig_set_task(struct tfj_tfconfig *cfg, const char *type, int index)
{
	int rc = replace_str(&cfg->task_type, type);

	if (rc)
		return rc;
	cfg->has_task = type != NULL;
	cfg->task_index = index;
	return 0;
}

int tfj_tfconfig_set_environment(struct tfj_tfconfig *cfg, const char *env)
{
	return replace_str(&cfg->environment, env);
}

int tfj_tfconfig_set_rpc_layer(struct tfj_tfconfig *cfg, const char *rpc_layer)
{
	return replace_str(&cfg->rpc_layer, rpc_layer);
}

void tfj_tfconfig_free(struct tfj_tfconfig *cfg)
{
	size_t i, j;

	if (!cfg)
		return;
	for (i = 0; i < cfg->njobs; i++) {
		for (j = 0; j < cfg->jobs[i].nhosts; j++)
			free(cfg->jobs[i].hosts[j]);
		free(cfg->jobs[i].hosts);
		free(cfg->jobs[i].indexes);
		free(cfg->jobs[i].name);
	}
	free(cfg->jobs);
	free(cfg->task_type);
	free(cfg->environment);
	free(cfg->rpc_layer);
	memset(cfg, 0, sizeof(*cfg));
}

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

int tfj_tfconfig_equal(const struct tfj_tfconfig *a, const struct tfj_tfconfig *b)
{
	size_t i, j;

	if (a->njobs != b->njobs || a->has_task != b->has_task ||
	    !str_eq(a->environment, b->environment) || !str_eq(a->rpc_layer, b->rpc_layer))
		return 0;
	if (a->has_task && (!str_eq(a->task_type, b->task_type) || a->task_index != b->task_index))
		return 0;
	for (i = 0; i < a->njobs; i++) {
		if (!str_eq(a->jobs[i].name, b->jobs[i].name) ||
		    a->jobs[i].nhosts != b->jobs[i].nhosts || a->jobs[i].sparse != b->jobs[i].sparse)
			return 0;
		for (j = 0; j < a->jobs[i].nhosts; j++)
			if (!str_eq(a->jobs[i].hosts[j], b->jobs[i].hosts[j]) ||
			    tfj_tfconfig_host_index(&a->jobs[i], j) !=
			    tfj_tfconfig_host_index(&b->jobs[i], j))
				return 0;
	}
	return 1;
}

/* --- decode --------------------------------------------------------------- */

/* {"<index>": "host:port", ...}: indexes are decimal, 0..TFJ_TFCONFIG_MAX_INDEX. */
static int decode_sparse(struct tfj_tfconfig *cfg, const cJSON *job)
{
	const cJSON *host;
	const char *s;
	int idx, rc;

	if (cJSON_GetArraySize(job) > TFJ_TFCONFIG_MAX_HOSTS)
		return tfj_err_set(TFJ_ETOOBIG, "cluster.%s: at most %d hosts", job->string,
				   TFJ_TFCONFIG_MAX_HOSTS);
	if ((rc = tfj_tfconfig_add_sparse_job(cfg, job->string)))
		return rc;
	cJSON_ArrayForEach(host, job) {
		if ((rc = tfj_parse_int(&idx, host->string, 0, TFJ_TFCONFIG_MAX_INDEX,
					"task index")))
			return tfj_err_set(rc, "cluster.%s: %s", job->string, tfj_err_detail());
		if ((rc = tfj_json_as_string(&s, host, "cluster host")))
			return tfj_err_set(rc, "cluster.%s: every host must be a string",
					   job->string);
		if ((rc = tfj_tfconfig_add_host_at(cfg, job->string, idx, s)))
			return rc;
	}
	return 0;
}

static int decode_cluster(struct tfj_tfconfig *cfg, const cJSON *cluster)
{
	const cJSON *job, *host;
	const char *s;
	int rc;

	if (cJSON_GetArraySize(cluster) > TFJ_TFCONFIG_MAX_JOBS)
		return tfj_err_set(TFJ_ETOOBIG, "cluster has more than %d task types",
				   TFJ_TFCONFIG_MAX_JOBS);
	cJSON_ArrayForEach(job, cluster) {
		if (!tfj_tfconfig_known_type(job->string))
			return tfj_err_set(TFJ_EINVAL,
					   "cluster: unknown task type '%s' (expected chief, master, "
					   "worker, ps or evaluator, lowercase)", job->string);
		if (tfj_tfconfig_find_job(cfg, job->string))
			return tfj_err_set(TFJ_EINVAL, "cluster: task type '%s' listed twice",
					   job->string);
		if (cJSON_IsObject(job)) {
			if ((rc = decode_sparse(cfg, job)))
				return rc;
			continue;
		}
		if (!cJSON_IsArray(job))
			return tfj_err_set(TFJ_ETYPE, "cluster.%s: expected an array of \"host:port\" "
					   "or an object {\"<index>\": \"host:port\"}", job->string);
		if ((rc = tfj_tfconfig_add_job(cfg, job->string)))
			return rc;
		cJSON_ArrayForEach(host, job) {
			if ((rc = tfj_json_as_string(&s, host, "cluster host")))
				return tfj_err_set(rc, "cluster.%s: every host must be a string",
						   job->string);
			if ((rc = tfj_tfconfig_add_host(cfg, job->string, s)))
				return rc;
		}
	}
	return 0;
}

static int decode_root(struct tfj_tfconfig *cfg, const cJSON *root)
{
	const cJSON *cluster = NULL, *task;
	const char *s;
	int rc;

	if (!cJSON_IsObject(root))
		return tfj_err_set(TFJ_ETYPE, "TF_CONFIG must be a JSON object");
	rc = tfj_json_get_object(&cluster, root, "cluster");
	if (rc == TFJ_ENOTFOUND)
		return tfj_err_set(TFJ_EINVAL, "TF_CONFIG has no \"cluster\" object");
	if (rc)
		return rc;
	if ((rc = decode_cluster(cfg, cluster)))
		return rc;
	task = cJSON_GetObjectItemCaseSensitive(root, "task");
	if (task && !cJSON_IsNull(task)) {
		int index;

		if (!cJSON_IsObject(task))
			return tfj_err_set(TFJ_ETYPE, "TF_CONFIG \"task\" must be an object");
		if ((rc = tfj_json_get_string(&s, task, "type")))
			return tfj_err_set(rc, "task: %s", tfj_err_detail());
		if ((rc = tfj_json_opt_int(&index, task, "index", INT32_MIN, INT32_MAX, 0)))
			return tfj_err_set(rc, "task: %s", tfj_err_detail());
		if ((rc = tfj_tfconfig_set_task(cfg, s, index)))
			return rc;
	}
	if ((rc = tfj_json_opt_string(&s, root, "environment", NULL)) ||
	    (s && (rc = tfj_tfconfig_set_environment(cfg, s))))
		return rc;
	if ((rc = tfj_json_opt_string(&s, root, "rpc_layer", NULL)) ||
	    (s && (rc = tfj_tfconfig_set_rpc_layer(cfg, s))))
		return rc;
	return tfj_tfconfig_validate(cfg);
}

int tfj_tfconfig_decode(struct tfj_tfconfig *out, const char *text, size_t len)
{
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tfj_json_parse(&root, text, len, TFJ_TFCONFIG_MAX_BYTES);
	if (rc)
		return tfj_err_set(rc, "TF_CONFIG: %s", tfj_err_detail());
	rc = decode_root(out, root);
	if (rc) {
		tfj_tfconfig_free(out);
		rc = tfj_err_set(rc, "TF_CONFIG: %s", tfj_err_detail());
	}
	cJSON_Delete(root);
	return rc;
}

/* --- encode --------------------------------------------------------------- */

int tfj_tfconfig_encode(char **out, const struct tfj_tfconfig *cfg)
{
	cJSON *root = NULL, *cluster, *arr, *task, *s;
	size_t i, j;
	int rc;

	*out = NULL;
	if ((rc = tfj_tfconfig_validate(cfg)))
		return rc;
	rc = TFJ_ENOMEM;
	if (!(root = cJSON_CreateObject()) || !(cluster = cJSON_AddObjectToObject(root, "cluster")))
		goto out;
	for (i = 0; i < cfg->njobs; i++) {
		const struct tfj_tfconfig_job *jb = &cfg->jobs[i];

		arr = jb->sparse ? cJSON_AddObjectToObject(cluster, jb->name) :
				   cJSON_AddArrayToObject(cluster, jb->name);
		if (!arr)
			goto out;
		for (j = 0; j < jb->nhosts; j++) {
			char key[16];

			if (!(s = cJSON_CreateString(jb->hosts[j])))
				goto out;
			if (!jb->sparse) {
				cJSON_AddItemToArray(arr, s);
				continue;
			}
			snprintf(key, sizeof(key), "%d", jb->indexes[j]);
			cJSON_AddItemToObject(arr, key, s);
		}
	}
	if (cfg->has_task) {
		if (!(task = cJSON_AddObjectToObject(root, "task")) ||
		    !cJSON_AddStringToObject(task, "type", cfg->task_type) ||
		    !cJSON_AddNumberToObject(task, "index", cfg->task_index))
			goto out;
	}
	if (cfg->environment && !cJSON_AddStringToObject(root, "environment", cfg->environment))
		goto out;
	if (cfg->rpc_layer && !cJSON_AddStringToObject(root, "rpc_layer", cfg->rpc_layer))
		goto out;
	rc = tfj_json_print(out, root);
	if (!rc && strlen(*out) > TFJ_TFCONFIG_MAX_BYTES) {
		free(*out);
		*out = NULL;
		rc = tfj_err_set(TFJ_ETOOBIG, "encoded TF_CONFIG exceeds %u bytes",
				 TFJ_TFCONFIG_MAX_BYTES);
	}
out:
	if (rc == TFJ_ENOMEM)
		tfj_err_set(rc, "building TF_CONFIG");
	cJSON_Delete(root);
	return rc;
}
