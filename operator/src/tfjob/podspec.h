/*
 * podspec.h - the pod and headless service of one replica.
 *
 * Both are named `<job>-<type>-<index>` (tfj_names_replica) and carry the
 * labels
 *   training.kubeflow.org/job-name       <job>
 *   training.kubeflow.org/replica-type   chief|master|ps|worker|evaluator
 *   training.kubeflow.org/replica-index  <index>
 *   training.kubeflow.org/operator-name  <operator>
 *   training.kubeflow.org/job-role       master   (chief/master, or worker 0
 *                                                  when the job has no chief)
 * and an ownerReference to the TFJob (controller, blockOwnerDeletion).
 *
 * The pod is the replica's template with: labels and annotations kept (ours
 * win on conflict), spec.restartPolicy from the ReplicaSpec (ExitCode ->
 * Never), a `tfjob-port` container port on the `tensorflow` container unless
 * one is there, and TF_CONFIG in that container's env (replacing any
 * TF_CONFIG the template set) unless the job has a single replica in all.
 * schedulingPolicy.priorityClass is not put on pods (it is the PodGroup's).
 * The tensorflow container also gets the job's ps secret (pssecret.h)
 * named in opts (ps_secret_name).
 * The service publishes every named port of the `tensorflow` container,
 * tfjob-port included.
 *
 * With enableDynamicWorker TF_CONFIG is Kubeflow's sparse form: a worker
 * sees itself and the ps, a ps the ps, chief and evaluator nothing.
 *
 * TF_CONFIG cluster: training tasks (chief/master, ps, worker) see only the
 * training tasks; the evaluator sees the training tasks plus itself. This is
 * TensorFlow's own rule: a training cluster that lists an evaluator makes
 * ParameterServerStrategy wait for it forever.
 *
 * Ownership: *out is a new cJSON tree the caller deletes.
 */
#ifndef TFJ_PODSPEC_H
#define TFJ_PODSPEC_H

#include <cjson/cJSON.h>

#include "tfjob/tfjob.h"

struct tfj_gang;

#define TFJ_PODSPEC_DEFAULT_PORT 2222
#define TFJ_PODSPEC_PORT_NAME "tfjob-port"
#define TFJ_PODSPEC_CONTAINER "tensorflow"
#define TFJ_PODSPEC_DEFAULT_OPERATOR "tfjob-controller"

#define TFJ_LABEL_JOB_NAME "training.kubeflow.org/job-name"
#define TFJ_LABEL_REPLICA_TYPE "training.kubeflow.org/replica-type"
#define TFJ_LABEL_REPLICA_INDEX "training.kubeflow.org/replica-index"
#define TFJ_LABEL_OPERATOR "training.kubeflow.org/operator-name"
#define TFJ_LABEL_JOB_ROLE "training.kubeflow.org/job-role"

struct tfj_podspec_opts {
	const char *operator_name;  /* NULL = TFJ_PODSPEC_DEFAULT_OPERATOR */
	const char *report_ca_configmap; /* NULL = tfj_podspec_report_ca_name(operator_name) */
	const char *cluster_domain; /* NULL or "" = short host form */
	int default_port;           /* 0 = TFJ_PODSPEC_DEFAULT_PORT */
	const char *report_addr;    /* operator's report service; NULL or "" = none */
	const char *report_audience;/* NULL = TFJ_PODSPEC_REPORT_AUDIENCE */
	int report_insecure;        /* plaintext report channel: no CA, TFJOB_REPORT_INSECURE */
	const struct tfj_gang *gang;/* gang scheduling (podgroup.h); NULL = off */
	const char *agent_image;    /* image of the injected agent (inject.h); NULL = none */
	int agent_inject_default;   /* inject into jobs without the agent annotation */
	int kueue_pod_groups;       /* Kueue's pod-group marks on the pods of jobs with a queue (kueue.h) */
	const char *ps_secret_name; /* the job's ps Secret the pods mount (pssecret.h):
				     * its recorded status.psSecretName; NULL or "" =
				     * none (a caller that manages no Secret) */
};

/*
 * The report channel (only with report_addr): a projected volume
 * `tfjob-report-token` (serviceAccountToken {audience, expirationSeconds
 * 3600, path token}) mounted read-only at /var/run/secrets/tfjob in the
 * tensorflow container, and in its env TFJOB_REPORT_ADDR,
 * TFJOB_REPORT_TOKEN_FILE, TFJOB_JOB_NAMESPACE, TFJOB_JOB_NAME,
 * TFJOB_JOB_UID, TFJOB_REPLICA_TYPE, TFJOB_REPLICA_INDEX and POD_NAME
 * (downward API). Variables of the same name the template set are replaced.
 * The channel is TLS: the same projected volume holds `ca.crt` from the
 * ConfigMap `<operator name>-report-ca` of the job's namespace
 * (tfj_podspec_report_ca_name: one per install, so two installs that run
 * jobs in one namespace each keep their own CA; the operator publishes it
 * there before it creates pods, report/capublish.h)
 * and TFJOB_REPORT_CA_FILE points at it; with report_insecure instead
 * TFJOB_REPORT_INSECURE=true and no CA.
 */
#define TFJ_PODSPEC_REPORT_AUDIENCE "tfjob-report"
#define TFJ_PODSPEC_REPORT_VOLUME "tfjob-report-token"
#define TFJ_PODSPEC_REPORT_DIR "/var/run/secrets/tfjob"
#define TFJ_PODSPEC_REPORT_TOKEN_FILE "/var/run/secrets/tfjob/token"
#define TFJ_PODSPEC_REPORT_TOKEN_TTL 3600
#define TFJ_PODSPEC_REPORT_CA_SUFFIX "-report-ca"
#define TFJ_PODSPEC_REPORT_CA_KEY "ca.crt"
#define TFJ_PODSPEC_REPORT_CA_FILE "/var/run/secrets/tfjob/ca.crt"

/*
 * Replaces meta.ownerReferences with the one every child of the job carries:
 * {kubeflow.org/v1, TFJob, name, uid, controller, blockOwnerDeletion}.
 */
int tfj_podspec_owner_ref(cJSON *meta, const struct tfj_tfjob *job);

/* The port replicas of type t listen on (tfjob-port or the default). */
int tfj_podspec_port(const struct tfj_tfjob *job, enum tfj_rtype t,
		     const struct tfj_podspec_opts *o);

/*
 * The TF_CONFIG document for one task; *out is NULL (and 0 returned) when
 * the job has a single replica in all and gets no TF_CONFIG.
 */
int tfj_podspec_tfconfig(char **out, const struct tfj_tfjob *job, enum tfj_rtype t,
			 int index, const struct tfj_podspec_opts *o);

/* The pod for replica (t, index) of a valid job. */
int tfj_podspec_pod(cJSON **out, const struct tfj_tfjob *job, enum tfj_rtype t,
		    int index, const struct tfj_podspec_opts *o);

/* Removes every item of array arr whose "name" is `name`. */
void tfj_podspec_drop_named(cJSON *arr, const char *name);
/* obj[key] as an array, replacing whatever non-array was there; NULL = no memory. */
cJSON *tfj_podspec_ensure_array(cJSON *obj, const char *key);

/*
 * A new object {apiVersion, kind, metadata {name, namespace: job's, labels
 * job-name and operator-name (NULL: the default), the owner reference}}
 * for a per-job object other than a pod or service; *meta gets its metadata.
 * NULL = no memory.
 */
cJSON *tfj_podspec_job_object(cJSON **meta, const char *api_version, const char *kind,
			      const char *name, const struct tfj_tfjob *job,
			      const char *operator_name);
/* A new volume {name} in pod spec `spec`, replacing one of that name; NULL = no memory. */
cJSON *tfj_podspec_volume(cJSON *spec, const char *name);
/* Adds to container ctr the volumeMount {name, path, readOnly when read_only},
 * replacing a mount of that name. TFJ_ENOMEM. */
int tfj_podspec_mount(cJSON *ctr, const char *name, const char *path, int read_only);
/* Sets name=value in container ctr's env, replacing a variable of that name. */
int tfj_podspec_env(cJSON *ctr, const char *name, const char *value);

/* The headless service for replica (t, index). */
int tfj_podspec_service(cJSON **out, const struct tfj_tfjob *job, enum tfj_rtype t,
			int index, const struct tfj_podspec_opts *o);

/*
 * The report CA ConfigMap's name for the install whose operator name is
 * operator_name (NULL = TFJ_PODSPEC_DEFAULT_OPERATOR): "<name>-report-ca".
 * TFJ_ETOOBIG when it does not fit outlen.
 */
int tfj_podspec_report_ca_name(char *out, size_t outlen, const char *operator_name);

#endif
