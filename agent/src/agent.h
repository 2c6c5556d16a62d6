/*
 * agent.h - the agent as a whole: config, peer wait, supervised command,
 * progress, reports, termination message and exit code.
 *
 * Exit codes (docs/agent.md has the table): the command's own code, or
 * 128 + N when signal N killed it; 126/127 when it cannot be executed or
 * found; TFJ_AGENT_EXIT_USAGE (2, permanent) for bad flags or a malformed
 * TF_CONFIG; TFJ_AGENT_EXIT_UNAVAILABLE (138, retryable) when the peers did
 * not appear in time; TFJ_AGENT_EXIT_IO (140, retryable) when the agent
 * itself failed (pipe, fork); 128 + N when signal N stopped the agent
 * before the command started.
 */
#ifndef TFJ_AGENT_H
#define TFJ_AGENT_H

/* Same values as tfjob-runtime's exit codes, so one table serves both. */
#define TFJ_AGENT_EXIT_USAGE 2
#define TFJ_AGENT_EXIT_NOEXEC 126
#define TFJ_AGENT_EXIT_NOTFOUND 127
#define TFJ_AGENT_EXIT_UNAVAILABLE 138
#define TFJ_AGENT_EXIT_IO 140
#define TFJ_AGENT_EXIT_NOMEM 142

/*
 * Runs the whole agent and returns the process exit code. Blocks the
 * handled signals first, so it must run before any thread is created.
 */
int tfj_agent_main(int argc, char **argv);

#endif
