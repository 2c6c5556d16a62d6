/*
 * tfconfig.h - the one TF_CONFIG codec.
 *
 * TF_CONFIG is the JSON document TensorFlow reads to learn its cluster:
 *   {"cluster": {"ps": ["h:2222"], "worker": [...]},
 *    "task": {"type": "worker", "index": 0},
 *    "environment": "cloud", "rpc_layer": "grpc"}
 * The operator encodes it, the agent and the runtime decode it. Both sides
 * validate with the same rules (tfj_tfconfig_validate), so a document the
 * operator writes is always one the runtime accepts.
 *
 * Ownership: a struct tfj_tfconfig owns every string and array it points to;
 * tfj_tfconfig_free() releases them (and accepts NULL).
 */
#ifndef TFJ_TFCONFIG_H
#define TFJ_TFCONFIG_H

#include <stddef.h>

#define TFJ_TFCONFIG_MAX_BYTES   (1u << 20) /* whole document */
#define TFJ_TFCONFIG_MAX_JOBS    8          /* task types in "cluster" */
#define TFJ_TFCONFIG_MAX_HOSTS   4096       /* hosts per task type */
#define TFJ_TFCONFIG_MAX_HOSTLEN 512        /* one "host:port" */
#define TFJ_TFCONFIG_MAX_STRLEN  256        /* environment, rpc_layer */
#define TFJ_TFCONFIG_MAX_INDEX   0x7fffffff /* a sparse job's task index (int32) */

/*
 * A job is a list of hosts (task i is hosts[i]) or, in the sparse form
 * TensorFlow's ClusterSpec also takes, an object {"<task index>": host}
 * that names only some tasks. Kubeflow's enableDynamicWorker writes the
 * sparse form for "worker" (a worker sees only itself).
 */
struct tfj_tfconfig_job {
	char *name;      /* task type: chief, master, worker, ps or evaluator */
	char **hosts;    /* nhosts "host:port" strings */
	size_t nhosts;
	int sparse;      /* the {"<index>": host} form */
	int *indexes;    /* sparse only: the task index of hosts[k] */
};

struct tfj_tfconfig {
	struct tfj_tfconfig_job *jobs; /* in document order */
	size_t njobs;
	int has_task;
	char *task_type;               /* NULL when !has_task */
	int task_index;
	char *environment;             /* NULL when absent */
	char *rpc_layer;               /* NULL when absent */
};

/* 1 if `type` is one of the task types TensorFlow knows (lowercase). */
int tfj_tfconfig_known_type(const char *type);

/*
 * Checks the rules shared by encoder and decoder: known task types, no
 * duplicate job, at most one chief/master host, non-empty bounded strings
 * that are valid UTF-8 (any other character, quotes and control characters
 * included, is carried faithfully and escaped on output), the task type
 * present in the cluster (an evaluator may stand outside it, and any task
 * in a config with a sparse job: Kubeflow's enableDynamicWorker gives chief
 * and evaluator an empty cluster) and 0 <= index < its host count (sparse:
 * one of its indexes; indexes unique, 0..TFJ_TFCONFIG_MAX_INDEX).
 */
int tfj_tfconfig_validate(const struct tfj_tfconfig *cfg);

/* Decodes `len` bytes of JSON. On failure *out is left empty. */
int tfj_tfconfig_decode(struct tfj_tfconfig *out, const char *text, size_t len);

/* Encodes a valid config as compact JSON; *out is malloc'd, caller frees. */
int tfj_tfconfig_encode(char **out, const struct tfj_tfconfig *cfg);

/* Builders: add a job (task type) then hosts to it, and set the task. */
int tfj_tfconfig_add_job(struct tfj_tfconfig *cfg, const char *name);
int tfj_tfconfig_add_host(struct tfj_tfconfig *cfg, const char *job, const char *host);
/* The sparse form: add a job written as an object, then task `index`'s host. */
int tfj_tfconfig_add_sparse_job(struct tfj_tfconfig *cfg, const char *name);
int tfj_tfconfig_add_host_at(struct tfj_tfconfig *cfg, const char *job, int index,
			     const char *host);
int tfj_tfconfig_set_task(struct tfj_tfconfig *cfg, const char *type, int index);
int tfj_tfconfig_set_environment(struct tfj_tfconfig *cfg, const char *env);
int tfj_tfconfig_set_rpc_layer(struct tfj_tfconfig *cfg, const char *rpc_layer);

/* The job named `name`, or NULL. Points into cfg. */
const struct tfj_tfconfig_job *tfj_tfconfig_find_job(const struct tfj_tfconfig *cfg,
						     const char *name);

/* The task index of j->hosts[k]: k, or the sparse job's index. */
int tfj_tfconfig_host_index(const struct tfj_tfconfig_job *j, size_t k);

/* 1 if both configs hold the same jobs (same order), hosts, task and strings. */
int tfj_tfconfig_equal(const struct tfj_tfconfig *a, const struct tfj_tfconfig *b);

/* Releases everything cfg owns and zeroes it. Accepts NULL. */
void tfj_tfconfig_free(struct tfj_tfconfig *cfg);

#endif
