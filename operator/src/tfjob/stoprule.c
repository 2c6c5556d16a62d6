/*
 * stoprule.c - which replicas are stopped once a TFJob has succeeded (see
 * stoprule.h).
 */
#include "tfjob/stoprule.h"

#include "tfjob/jobstatus.h"

enum tfj_stoprule tfj_stoprule_of(const struct tfj_tfjob *job, int type)
{
	int stops;

	if (!job || type < 0 || type >= TFJ_RT_COUNT || !job->rs[type].present)
		return TFJ_STOP_NONE;
	stops = type == TFJ_RT_PS || type == TFJ_RT_EVALUATOR ||
		(type == TFJ_RT_WORKER && tfj_tfjob_chief_type(job) >= 0);
	if (!stops)
		return TFJ_STOP_NONE;
	/* ExitCode, Never and OnFailure pods keep a container that exited 0. */
	return job->rs[type].restart == TFJ_RESTART_ALWAYS ? TFJ_STOP_DELETE : TFJ_STOP_AGENT;
}

int tfj_stoprule_succeeded(const struct tfj_tfjob *job)
{
	return job && tfj_jobstatus_is(&job->status, TFJ_COND_SUCCEEDED) &&
	       !tfj_jobstatus_is(&job->status, TFJ_COND_FAILED);
}

int tfj_stoprule_stop_now(const struct tfj_tfjob *job, int type)
{
	return tfj_stoprule_succeeded(job) && tfj_stoprule_of(job, type) == TFJ_STOP_AGENT;
}
