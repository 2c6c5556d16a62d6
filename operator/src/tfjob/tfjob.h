/*
 * tfjob.h - the TFJob resource (kubeflow.org/v1) as the operator sees it.
 *
 * tfj_tfjob_decode() turns the JSON the API server sends into a struct
 * tfj_tfjob. Decoding has two levels of failure:
 *
 *  - The object itself is unusable (not JSON, too big, too deep, no
 *    metadata.name/namespace/uid, wrong kind): the decoder returns a negative
 *    code and the caller logs it and drops the object. Nothing can be done
 *    for an object we cannot even name.
 *  - The object is a TFJob but its spec is invalid (unknown replica type,
 *    two chiefs, replicas out of range, no `tensorflow` container, ...):
 *    the decoder returns 0 with job->spec_valid == 0 and job->spec_error
 *    explaining why. The planner then marks the job Failed with reason
 *    InvalidSpec, so the user sees the problem in `kubectl describe` instead
 *    of the operator silently ignoring the job.
 *
 * Ownership: the struct owns `doc` (the whole parsed object). Every `const
 * char *` and `const cJSON *` in it points into `doc` and lives until
 * tfj_tfjob_free().
 */
#ifndef TFJ_TFJOB_H
#define TFJ_TFJOB_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "tfjob/jobstatus.h"

/* Largest TFJob object accepted, in bytes of JSON (the API server's own cap is 3 MiB). */
#define TFJ_TFJOB_MAX_BYTES (3u << 20)

/*
 * Largest spec the operator serves, in bytes of compact JSON. Every pod of
 * the job is built from its replica's template, and a parsed template costs
 * ten times its text or more (a node and two allocations per field), so the
 * spec's size bounds what one job may cost a reconcile. A TFJob over it is
 * Failed with InvalidSpec before any pod body is built, and its spec is not
 * kept in memory (docs/reliability.md).
 */
#define TFJ_TFJOB_MAX_SPEC_BYTES (256u << 10)
/*
 * Where the informer's cached copy of a TFJob whose spec is over that size
 * says so: the spec is dropped and this top-level member holds its size (at
 * least TFJ_TFJOB_MAX_SPEC_BYTES + 1). The API server prunes unknown fields,
 * so no stored TFJob carries it.
 */
#define TFJ_TFJOB_OVERSIZE_KEY "tfjobOperatorOversizeSpecBytes"

/*
 * Replicas per replica type: 0..TFJ_TFJOB_MAX_REPLICAS. The same number is
 * TFJ_TFCONFIG_MAX_HOSTS (hosts per task type in TF_CONFIG) and the CRD's
 * `maximum` on replicas, so admission, decoder and codec agree. The sum over
 * all types is capped by the same number, because every pod's TF_CONFIG
 * lists the whole cluster.
 */
#define TFJ_TFJOB_MAX_REPLICAS 4096

/*
 * Longest job name the decoder accepts (it is a label value on every
 * child). The CRD is stricter: it requires `<name>-<type>-<last index>` to
 * fit 63 characters for the types the job has, so names are readable;
 * longer names that reach us anyway get hashed child names (names.h).
 */
#define TFJ_TFJOB_MAX_NAME 63

/* The API group/version and kind written into ownerReferences. */
#define TFJ_TFJOB_API_VERSION "kubeflow.org/v1"
#define TFJ_TFJOB_KIND "TFJob"
/* The API root of TFJob paths (kube/apipath.h). */
#define TFJ_TFJOB_API_PATH "/apis/" TFJ_TFJOB_API_VERSION
/* runPolicy.managedBy value that means "this operator" (the reference's value). */
#define TFJ_TFJOB_MANAGER "kubeflow.org/training-operator"

/*
 * Replica types in a fixed order (the order children are planned in).
 * Master is the legacy name of Chief; both are chief-role types and a job may
 * have only one of them.
 */
enum tfj_rtype {
	TFJ_RT_CHIEF = 0,
	TFJ_RT_MASTER,
	TFJ_RT_PS,
	TFJ_RT_WORKER,
	TFJ_RT_EVALUATOR,
	TFJ_RT_COUNT
};

enum tfj_restart {
	TFJ_RESTART_NEVER = 0, /* the default */
	TFJ_RESTART_ONFAILURE,
	TFJ_RESTART_ALWAYS,
	TFJ_RESTART_EXITCODE
};

enum tfj_cleanpod {
	TFJ_CLEAN_NONE = 0, /* the default, as Kubeflow v1.9 (tensorflow_defaults.go): keep pods */
	TFJ_CLEAN_RUNNING,  /* delete pods still running or pending at the end */
	TFJ_CLEAN_ALL
};

enum tfj_success {
	TFJ_SUCCESS_DEFAULT = 0, /* chief succeeded, or worker 0 when there is no chief */
	TFJ_SUCCESS_ALLWORKERS
};

struct tfj_replica_spec {
	int present;              /* the type appears in spec.tfReplicaSpecs */
	int replicas;             /* 0..TFJ_TFJOB_MAX_REPLICAS, default 1 */
	enum tfj_restart restart;
	const cJSON *tmpl;        /* the PodTemplateSpec object (never NULL when present) */
	int port;                 /* tfjob-port of the tensorflow container, or 0 if none */
	int has_command;          /* the tensorflow container sets a non-empty command */
};

/*
 * Agent injection (docs/agent.md), chosen per TFJob by the annotation
 * `tfjob.kubeflow.org/agent`: "inject" or "none"; absent = the operator's
 * --agent-inject-default. "inject" needs a `command` on every tensorflow
 * container (the image's entrypoint is unknown to us, so there is nothing
 * to wrap otherwise): the decoder refuses the spec without one.
 * `tfjob.kubeflow.org/progress-regex` is the injected agent's
 * --progress-regex (at most TFJ_TFJOB_MAX_REGEX bytes).
 */
#define TFJ_TFJOB_ANN_AGENT "tfjob.kubeflow.org/agent"
#define TFJ_TFJOB_ANN_PROGRESS_REGEX "tfjob.kubeflow.org/progress-regex"
#define TFJ_TFJOB_MAX_REGEX 1024

enum tfj_agent_mode {
	TFJ_AGENT_DEFAULT = 0, /* no annotation: the operator's default */
	TFJ_AGENT_INJECT,
	TFJ_AGENT_NONE
};

struct tfj_run_policy {
	enum tfj_cleanpod clean_pod;
	int has_ttl;
	int64_t ttl_seconds;             /* ttlSecondsAfterFinished, >= 0 */
	int has_deadline;
	int64_t active_deadline_seconds; /* activeDeadlineSeconds, >= 1 */
	int has_backoff;
	int64_t backoff_limit;           /* backoffLimit, >= 0 */
	int has_progress_deadline;
	int64_t progress_deadline_seconds; /* progressDeadlineSeconds, >= 1: hang detection */
	int suspend;
	const char *managed_by;          /* NULL when absent */
	const cJSON *scheduling_policy;  /* NULL when absent; kept, mostly unused */
	const char *priority_class;      /* schedulingPolicy.priorityClass or NULL */
};

struct tfj_tfjob {
	cJSON *doc;                  /* owned: the whole object */

	/* metadata */
	const char *name;
	const char *ns;
	const char *uid;
	const char *resource_version; /* may be "" */
	int64_t generation;
	int deleting;                /* metadata.deletionTimestamp is set */

	/* spec */
	int spec_valid;
	char spec_error[256];        /* why !spec_valid */
	struct tfj_replica_spec rs[TFJ_RT_COUNT];
	struct tfj_run_policy run;
	enum tfj_success success_policy;
	int dynamic_worker;          /* enableDynamicWorker: sparse TF_CONFIG, failed workers tolerated */
	int total_replicas;          /* sum of rs[].replicas */
	enum tfj_agent_mode agent;   /* annotation tfjob.kubeflow.org/agent */
	const char *progress_regex;  /* annotation tfjob.kubeflow.org/progress-regex or NULL */

	/* status as last written (empty when absent or unreadable); its
	 * ps_secret only when status.psSecretName is a name this job's Secret
	 * can have (tfjob/pssecret.h's tfj_pssecret_name_check) */
	struct tfj_job_status status;
	char ps_secret_ignored[224]; /* why a recorded psSecretName is not used; "" = it is */
	const cJSON *status_json;    /* the raw .status object, or NULL */
};

/* "Chief", "Master", "PS", "Worker", "Evaluator": the canonical spec key. */
const char *tfj_tfjob_type_name(enum tfj_rtype t);
/* "chief", "master", "ps", "worker", "evaluator": labels, names, TF_CONFIG. */
const char *tfj_tfjob_type_lower(enum tfj_rtype t);
/* Case-insensitive lookup of a replica type key; TFJ_EINVAL if unknown. */
int tfj_tfjob_type_parse(enum tfj_rtype *out, const char *s);
/* 1 for Chief and Master. */
int tfj_tfjob_type_is_chief(enum tfj_rtype t);
/* The chief-role type the job has (Chief or Master), or -1 when none. */
int tfj_tfjob_chief_type(const struct tfj_tfjob *job);

/*
 * Decodes `len` bytes of TFJob JSON. On success *out owns the parsed tree.
 * On failure *out is left zeroed (safe to tfj_tfjob_free()). A spec over
 * TFJ_TFJOB_MAX_SPEC_BYTES is never parsed: the tree holds everything else,
 * and the job is invalid (spec_valid 0).
 */
int tfj_tfjob_decode(struct tfj_tfjob *out, const char *text, size_t len);

/*
 * The same from an already-parsed object (for example an informer cache
 * entry). The object is copied; the caller keeps ownership of `obj`.
 */
int tfj_tfjob_from_json(struct tfj_tfjob *out, const cJSON *obj);

/* Releases the document and zeroes the struct. Accepts NULL. */
void tfj_tfjob_free(struct tfj_tfjob *job);

/*
 * Pure. 1 when the TFJob object's spec is over TFJ_TFJOB_MAX_SPEC_BYTES
 * (*bytes gets the counted size, at most the cap + 1), else 0. Costs at most
 * the cap's worth of counting, whatever the spec's size.
 */
int tfj_tfjob_spec_oversize(size_t *bytes, const cJSON *obj);

#endif
