/*
 * agent.h - the agent as a whole: config, peer wait, supervised command,
 * progress, reports, termination message and exit code.
 *
 * Exit codes (docs/agent.md has the table; the values and the retryable
 * rule are common's tfj/exitcode.h, shared with tfjob-runtime and the
 * operator): the command's own code, or 128 + N when signal N killed it;
 * TFJ_EXIT_NOEXEC/TFJ_EXIT_NOTFOUND (126/127) when it cannot be executed or
 * found; TFJ_EXIT_USAGE (2, permanent) for bad flags or a malformed
 * TF_CONFIG; TFJ_EXIT_UNAVAILABLE (138, retryable) when the peers did not
 * appear in time; TFJ_EXIT_IO (140, retryable) when the agent itself failed
 * (pipe, fork); TFJ_EXIT_NOMEM (142, retryable) when it ran out of memory;
 * 128 + N when signal N stopped the agent before the command started.
 */
#ifndef TFJ_AGENT_H
#define TFJ_AGENT_H

/*
 * Runs the whole agent and returns the process exit code. Blocks the
 * handled signals first, so it must run before any thread is created.
 */
int tfj_agent_main(int argc, char **argv);

#endif
