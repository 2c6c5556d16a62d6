/*
 * rtconfig.h - configuration of one runtime task: who am I in which
 * cluster, and how do we train.
 *
 * The cluster comes either from TF_CONFIG (decoded by the shared codec,
 * <tfj/tfconfig.h>) or from the classic flags --job_name --task_index
 * --ps_hosts --worker_hosts [--chief_host --evaluator_hosts]; both end up in
 * the same struct tfj_tfconfig, so everything downstream has one source of
 * truth. Flags always win over TF_CONFIG for the training settings; giving a
 * cluster both ways is an error, since silently preferring one hides
 * mistakes.
 *
 * Every task of a job gets the same training flags (model, optimizer, sync,
 * placement); the parameter servers derive their shards from them and every
 * request carries a fingerprint (tfj_rtconfig_layout_hash in trainer code)
 * so a task started with different flags is refused instead of corrupting
 * the model.
 *
 * Ownership: a struct tfj_rtconfig owns its strings and its cluster;
 * tfj_rtconfig_free() releases them.
 */
#ifndef TFJ_RTCONFIG_H
#define TFJ_RTCONFIG_H

#include <stddef.h>
#include <stdint.h>

/* The number helpers (tfj_parse_i64, ...) that launch and the tests use. */
#include <tfj/parse.h>
#include <tfj/tfconfig.h>

#include "compute/model.h"
#include "compute/optim.h"
#include "task/placement.h"

#define TFJ_RT_MAX_ARGS 256       /* argv entries accepted */
#define TFJ_RT_MAX_ARGLEN 4096    /* bytes of one argument */
#define TFJ_RT_MAX_TASKS 256      /* tasks of one type */
#define TFJ_RT_PATH_MAX 1024
#define TFJ_RT_PUSH_PART_KIB 4096 /* --push-part-kib default */
#define TFJ_RT_TOWERS_MAX 16      /* --towers; worker/towers.h TFJ_TOWERS_MAX */

enum tfj_role { TFJ_ROLE_PS = 0, TFJ_ROLE_WORKER, TFJ_ROLE_CHIEF, TFJ_ROLE_EVALUATOR };

/*
 * --overlap (async only; overlap.h): off, step (push and pull one step
 * ahead, parameters one step staler; the bare flag) or push (each layer's
 * gradients pushed as the backward pass finishes them, pull after).
 */
enum tfj_overlap_mode { TFJ_OVERLAP_OFF = 0, TFJ_OVERLAP_STEP = 1, TFJ_OVERLAP_PUSH = 2 };

struct tfj_rtconfig {
	/* Who. */
	enum tfj_role role;
	int index;                   /* task index within its type */
	struct tfj_tfconfig cluster; /* the whole cluster, task set */
	size_t nps, nworkers;        /* hosts of type ps and worker */
	int has_chief;               /* a chief (or master) task exists */
	int is_coordinator;          /* chief, or worker 0 without a chief */
	int replica;                 /* training replica (-1 for ps/evaluator) */
	int nreplicas;               /* chief + workers */
	char bind[TFJ_TFCONFIG_MAX_HOSTLEN]; /* ps: address to listen on */

	/* Model and data. */
	char model[16];              /* "softmax" or "mlp" */
	char hidden[128];            /* "256" or "256,128" */
	struct tfj_model_spec spec;
	char dataset[32];            /* fashion-mnist, mnist, synthetic */
	char data_dir[TFJ_RT_PATH_MAX];
	size_t train_limit;          /* use the first N training examples (0 = all) */
	size_t synthetic_examples;
	char device[8];              /* cpu, gpu, auto */

	/* Training. */
	size_t batch_size;           /* per replica and step */
	double epochs;
	int64_t max_steps;           /* derived from epochs unless given */
	enum tfj_optim_kind optim;
	struct tfj_optim_hparams hp;
	int sync;
	int overlap;                 /* async: enum tfj_overlap_mode (--overlap) */
	int replicas_to_aggregate;   /* sync: k of nreplicas */
	int lr_cosine;               /* lr * (1 + cos(pi * step / max_steps)) / 2 */
	enum tfj_place_kind placement;
	size_t min_slice;            /* balanced placement: smallest split piece */
	uint64_t seed;

	/* Checkpoints, evaluation, progress. */
	char checkpoint_dir[TFJ_RT_PATH_MAX];
	int64_t checkpoint_steps;    /* 0 = off */
	double checkpoint_secs;      /* 0 = off */
	double eval_secs;            /* evaluator period */
	int64_t progress_steps;      /* a TFJ_PROGRESS line every N local steps */
	int64_t towers;              /* in-graph replicas per worker (worker/towers.h) */
	char logdir[TFJ_RT_PATH_MAX]; /* TensorBoard event files (summary/); "" = none */

	/* Transport. */
	double peer_timeout_s;       /* give up on an unreachable peer after this */
	double rpc_timeout_s;        /* deadline of one call */
	size_t max_message_bytes;    /* gRPC send/receive cap */
	size_t push_part_kib;        /* async: cut pushes into parts of this size (0 = whole) */
	double ps_linger_s;          /* ps: keep serving this long after Finish */
	double fail_after_s;         /* test hook: exit 138 after this long (0 = off) */
	int64_t inject_nan_at;       /* test hook: poison the local copy at this local step */
};

/*
 * Parses `argc` arguments (after the subcommand) plus the TF_CONFIG text
 * (may be NULL or empty when flags give the cluster). Unknown flags, bad
 * values and inconsistent clusters are TFJ_EINVAL/TFJ_EPARSE with a detail
 * naming the flag; on failure *out is freed.
 */
int tfj_rtconfig_parse(struct tfj_rtconfig *out, int argc, char *const *argv,
		       const char *tf_config);

/* Fills the defaults (called by parse; exposed for tests and launch). */
void tfj_rtconfig_defaults(struct tfj_rtconfig *cfg);

/* Releases what cfg owns; accepts NULL. */
void tfj_rtconfig_free(struct tfj_rtconfig *cfg);

/* "ps", "worker", "chief", "evaluator". */
const char *tfj_role_name(enum tfj_role role);

/* Host of task `index` of type `type` ("ps", "worker", ...), or NULL. */
const char *tfj_rtconfig_host(const struct tfj_rtconfig *cfg, const char *type, size_t index);

/*
 * Global steps for `epochs` over `train_n` examples: each step consumes
 * batch_size examples (async) or replicas_to_aggregate * batch_size (sync).
 */
int64_t tfj_rtconfig_steps_for(const struct tfj_rtconfig *cfg, size_t train_n);

/* Usage text of the train flags. */
const char *tfj_rtconfig_usage(void);

#endif
