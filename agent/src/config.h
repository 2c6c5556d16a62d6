/*
 * config.h - the agent's flags and environment.
 *
 * Command line: tfjob-agent [OPTIONS] [--] COMMAND [ARGS...]
 * Options take `--name VALUE` or `--name=VALUE`; the first argument that is
 * not an option (or everything after `--`) is the command. docs/agent.md
 * lists every flag and environment variable.
 *
 * Ownership: the config borrows argv strings and getenv() results (both
 * live for the whole process); tfj_agent_config_free() releases the rest.
 *
 * Names carry "agent_": the operator has a config module of its own
 * (struct tfj_config), and a name means one thing across the binaries.
 */
#ifndef TFJ_AGENT_CONFIG_H
#define TFJ_AGENT_CONFIG_H

#include <stddef.h>

#include "peers.h"
#include "progress.h"

#define TFJ_AGENT_CONFIG_MAX_FIELDS 8

struct tfj_agent_config {
	char *const *command;          /* NULL-terminated, points into argv */
	double grace_s;
	double drain_s;
	int signal_group;

	enum tfj_peers_mode peer_mode;
	const char *peer_types;        /* NULL = all */
	double peer_timeout_s;
	double peer_connect_timeout_s;

	const char *termination_log;   /* NULL = do not write one */

	const char *progress_regex;
	const char *progress_fields[TFJ_AGENT_CONFIG_MAX_FIELDS];
	size_t nprogress_fields;
	size_t line_max;

	int report;                    /* 0 = no report channel */
	const char *report_addr;       /* NULL = none configured */
	const char *report_token_file;
	const char *report_ca_file;
	int report_insecure;           /* plaintext allowed (no CA file): --report-insecure */
	double report_timeout_s;
	double report_ack_wait_s;      /* at exit: resend until acked, this long at most */
	double heartbeat_s;

	const char *log_level;
	const char *log_format;

	/* Identity for reports (environment, see docs/agent.md). */
	const char *namespace_;
	const char *job_name;
	const char *job_uid;
	const char *pod_name;
	const char *replica_type;      /* NULL = from TF_CONFIG */
	int replica_index;             /* -1 = from TF_CONFIG */

	const char *install_dir;       /* --install: copy the bundle there and exit */
	int help;
	int version;
};

/* Defaults, then environment, then flags. TFJ_EINVAL with a detail naming the flag. */
int tfj_agent_config_parse(struct tfj_agent_config *out, int argc, char **argv);

/*
 * The termination log path the flags ask for, found without a full parse
 * (for reporting a parse error): the last --termination-log before the
 * command, the default otherwise, NULL for 'none'.
 */
const char *tfj_agent_config_scan_termination_log(int argc, char **argv);

/* Usage text for --help and errors. */
const char *tfj_agent_config_usage(void);

void tfj_agent_config_free(struct tfj_agent_config *c);

#endif
