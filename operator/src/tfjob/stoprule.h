/*
 * stoprule.h - which replicas are stopped once a TFJob has succeeded.
 * Pure: reads the decoded job only.
 *
 * "Training done" ends processes, not pods. When a job has succeeded, the
 * replicas that would otherwise never exit are stopped by their tfjob-agent
 * (the operator answers their Heartbeat with `stop`; the agent ends its
 * command with SIGTERM, then SIGKILL after its grace period, and exits 0),
 * so each pod ends Succeeded with its logs and only cleanPodPolicy deletes
 * pods. Those replicas are:
 *  - ps and evaluator, always: they serve or watch until told otherwise;
 *  - workers when a chief (or master) coordinates them: TensorFlow 2's
 *    ParameterServerStrategy workers only serve and block forever, and
 *    the job's outcome is the chief's alone. Without a chief, workers end
 *    on their own and worker 0 decides success: they are left alone.
 * A replica whose pods have restartPolicy Always cannot complete: kubelet
 * restarts a container that exits 0. Its pods are deleted instead (the
 * planner, planprog.h), as the only way to end them.
 */
#ifndef TFJ_STOPRULE_H
#define TFJ_STOPRULE_H

#include "tfjob/tfjob.h"

enum tfj_stoprule {
	TFJ_STOP_NONE = 0,   /* ends on its own (or decided the job's success) */
	TFJ_STOP_AGENT,      /* its agent stops the command and exits 0 */
	TFJ_STOP_DELETE      /* restartPolicy Always: the operator deletes the pod */
};

/* What becomes of replica type `type` (enum tfj_rtype) once training is over. */
enum tfj_stoprule tfj_stoprule_of(const struct tfj_tfjob *job, int type);

/* 1 when the job's status says Succeeded (and not Failed). */
int tfj_stoprule_succeeded(const struct tfj_tfjob *job);

/*
 * The answer to a Heartbeat from a replica of type `type`: 1 when its agent
 * is to stop now (the job has succeeded and the replica is TFJ_STOP_AGENT).
 */
int tfj_stoprule_stop_now(const struct tfj_tfjob *job, int type);

#endif
