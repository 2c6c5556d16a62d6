/*
 * config.c - flag and environment parsing (see config.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/parse.h>

static const char usage[] =
	"usage: tfjob-agent [OPTIONS] [--] COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND as a child, forwards signals, reaps zombies, waits for the\n"
	"TF_CONFIG peers first, parses progress and reports it to the operator.\n"
	"\n"
	"  --grace-period SEC        SIGTERM to SIGKILL delay (25)\n"
	"  --drain-timeout SEC       read output this long after the child exits (2)\n"
	"  --signal-target T         group (default) or child\n"
	"  --peer-wait MODE          none, dns (default) or tcp\n"
	"  --skip-peer-wait          same as --peer-wait=none\n"
	"  --peer-types LIST         only wait for these task types (e.g. ps)\n"
	"  --peer-timeout SEC        give up waiting after this long (300)\n"
	"  --peer-connect-timeout SEC  one TCP connect attempt (2)\n"
	"  --termination-log PATH    termination message file (/dev/termination-log;\n"
	"                            'none' disables it)\n"
	"  --progress-regex RE       extended regex with (?<step>..), (?<loss>..),\n"
	"                            (?<accuracy>..), (?<examples_per_sec>..)\n"
	"  --progress-field F=N      map field F to capturing group N (repeatable)\n"
	"  --line-max BYTES          longest output line parsed (65536)\n"
	"  --report-addr HOST:PORT   report service (env TFJOB_REPORT_ADDR)\n"
	"  --report-token-file PATH  bearer token file (env TFJOB_REPORT_TOKEN_FILE)\n"
	"  --report-ca-file PATH     TLS roots for the report channel (env TFJOB_REPORT_CA_FILE)\n"
	"  --report-insecure         report in plaintext when no CA file is given\n"
	"                            (env TFJOB_REPORT_INSECURE=true); without either,\n"
	"                            the agent does not report\n"
	"  --report-timeout SEC      deadline of one report call (2)\n"
	"  --heartbeat-interval SEC  heartbeat period (10)\n"
	"  --report-ack-wait SEC     at exit, resend the last progress and the exit\n"
	"                            until the operator acks them, this long at most\n"
	"                            (120; 0 sends them once)\n"
	"  --no-report               never contact the operator\n"
	"  --log-level LEVEL         debug, info, warn, error, off (env TFJOB_LOG_LEVEL)\n"
	"  --log-format FMT          kv or json (env TFJOB_LOG_FORMAT)\n"
	"  --install DIR             copy the agent bundle (binary, libraries, loader)\n"
	"                            to DIR and exit: the injected agent's init container\n"
	"  -h, --help                this text\n"
	"  --version                 print the version\n";

const char *tfj_agent_config_usage(void)
{
	return usage;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int parse_size(size_t *out, const char *flag, const char *v, size_t min, size_t max)
{
	uint64_t n;
	int rc = tfj_parse_u64(&n, v, min, max, flag);

	if (rc == 0)
		*out = (size_t)n;
	return rc;
}

static void defaults(struct tfj_agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->grace_s = 25.0;
	c->drain_s = 2.0;
	c->signal_group = 1;
	c->peer_mode = TFJ_PEERS_DNS;
	c->peer_timeout_s = 300.0;
	c->peer_connect_timeout_s = 2.0;
	c->termination_log = "/dev/termination-log";
	c->line_max = TFJ_PROGRESS_LINE_DEFAULT;
	c->report = 1;
	c->report_addr = env_nonempty("TFJOB_REPORT_ADDR");
	c->report_token_file = env_nonempty("TFJOB_REPORT_TOKEN_FILE");
	c->report_ca_file = env_nonempty("TFJOB_REPORT_CA_FILE");
	c->report_timeout_s = 2.0;
	c->heartbeat_s = 10.0;
	c->report_ack_wait_s = 120.0;
	c->log_level = env_nonempty("TFJOB_LOG_LEVEL");
	c->log_format = env_nonempty("TFJOB_LOG_FORMAT");
	c->namespace_ = env_nonempty("TFJOB_JOB_NAMESPACE");
	c->job_name = env_nonempty("TFJOB_JOB_NAME");
	c->job_uid = env_nonempty("TFJOB_JOB_UID");
	c->pod_name = env_nonempty("POD_NAME");
	if (!c->pod_name)
		c->pod_name = env_nonempty("HOSTNAME");
	c->replica_type = env_nonempty("TFJOB_REPLICA_TYPE");
	c->replica_index = -1;
}

/* Options that take a value. */
static const char *const valued[] = {
	"grace-period", "drain-timeout", "signal-target", "peer-wait", "peer-types",
	"peer-timeout", "peer-connect-timeout", "termination-log", "progress-regex",
	"progress-field", "line-max", "report-addr", "report-token-file", "report-ca-file",
	"report-timeout", "heartbeat-interval", "report-ack-wait", "log-level", "log-format",
	"install", NULL
};

static int apply(struct tfj_agent_config *c, const char *name, const char *v)
{
	char flag[80];

	snprintf(flag, sizeof(flag), "--%s", name);
	if (strcmp(name, "grace-period") == 0)
		return tfj_parse_seconds(&c->grace_s, v, 0, 3600, flag);
	if (strcmp(name, "drain-timeout") == 0)
		return tfj_parse_seconds(&c->drain_s, v, 0, 60, flag);
	if (strcmp(name, "signal-target") == 0) {
		if (strcmp(v, "group") == 0)
			c->signal_group = 1;
		else if (strcmp(v, "child") == 0)
			c->signal_group = 0;
		else
			return tfj_err_set(TFJ_EINVAL, "%s '%s': expected group or child", flag, v);
		return 0;
	}
	if (strcmp(name, "peer-wait") == 0)
		return tfj_peers_parse_mode(&c->peer_mode, v);
	if (strcmp(name, "peer-types") == 0) {
		if (!*v)
			return tfj_err_set(TFJ_EINVAL, "%s: empty list", flag);
		c->peer_types = v;
		return 0;
	}
	if (strcmp(name, "peer-timeout") == 0)
		return tfj_parse_seconds(&c->peer_timeout_s, v, 0.1, 86400, flag);
	if (strcmp(name, "peer-connect-timeout") == 0)
		return tfj_parse_seconds(&c->peer_connect_timeout_s, v, 0.01, 60, flag);
	if (strcmp(name, "install") == 0) {
		if (!*v)
			return tfj_err_set(TFJ_EINVAL, "%s: empty path", flag);
		c->install_dir = v;
		return 0;
	}
	if (strcmp(name, "termination-log") == 0) {
		if (!*v)
			return tfj_err_set(TFJ_EINVAL, "%s: empty path", flag);
		c->termination_log = strcmp(v, "none") == 0 ? NULL : v;
		return 0;
	}
	if (strcmp(name, "progress-regex") == 0) {
		c->progress_regex = v;
		return 0;
	}
	if (strcmp(name, "progress-field") == 0) {
		if (c->nprogress_fields >= TFJ_AGENT_CONFIG_MAX_FIELDS)
			return tfj_err_set(TFJ_EINVAL, "%s: at most %d", flag, TFJ_AGENT_CONFIG_MAX_FIELDS);
		c->progress_fields[c->nprogress_fields++] = v;
		return 0;
	}
	if (strcmp(name, "line-max") == 0)
		return parse_size(&c->line_max, flag, v, TFJ_PROGRESS_LINE_MIN, TFJ_PROGRESS_LINE_MAX);
	if (strcmp(name, "report-addr") == 0) {
		c->report_addr = *v ? v : NULL;
		return 0;
	}
	if (strcmp(name, "report-token-file") == 0) {
		c->report_token_file = v;
		return 0;
	}
	if (strcmp(name, "report-ca-file") == 0) {
		c->report_ca_file = v;
		return 0;
	}
	if (strcmp(name, "report-timeout") == 0)
		return tfj_parse_seconds(&c->report_timeout_s, v, 0.05, 60, flag);
	if (strcmp(name, "heartbeat-interval") == 0)
		return tfj_parse_seconds(&c->heartbeat_s, v, 0.05, 3600, flag);
	if (strcmp(name, "report-ack-wait") == 0)
		return tfj_parse_seconds(&c->report_ack_wait_s, v, 0, 3600, flag);
	if (strcmp(name, "log-level") == 0) {
		c->log_level = v;
		return 0;
	}
	if (strcmp(name, "log-format") == 0) {
		c->log_format = v;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "unknown option %s", flag);
}

int tfj_agent_config_parse(struct tfj_agent_config *c, int argc, char **argv)
{
	const char *v;
	int i, rc;

	defaults(c);
	if ((v = env_nonempty("TFJOB_REPORT_INSECURE")) &&
	    (rc = tfj_parse_bool(&c->report_insecure, v, "TFJOB_REPORT_INSECURE")) < 0)
		return rc;
	if ((v = env_nonempty("TFJOB_REPLICA_INDEX")) &&
	    (rc = tfj_parse_int(&c->replica_index, v, 0, 1000000, "TFJOB_REPLICA_INDEX")) < 0)
		return rc;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		char name[64];
		const char *eq, *val = NULL;
		size_t nl, k;
		int takes = 0;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* the command */
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			c->help = 1;
			return 0;
		}
		if (strncmp(a, "--", 2) != 0)
			return tfj_err_set(TFJ_EINVAL, "unknown option %s", a);
		a += 2;
		eq = strchr(a, '=');
		nl = eq ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof(name))
			return tfj_err_set(TFJ_EINVAL, "unknown option --%.40s", a);
		memcpy(name, a, nl);
		name[nl] = '\0';
		if (strcmp(name, "version") == 0 && !eq) {
			c->version = 1;
			return 0;
		}
		if (strcmp(name, "skip-peer-wait") == 0 && !eq) {
			c->peer_mode = TFJ_PEERS_NONE;
			continue;
		}
		if (strcmp(name, "report-insecure") == 0 && !eq) {
			c->report_insecure = 1;
			continue;
		}
		if (strcmp(name, "no-report") == 0 && !eq) {
			c->report = 0;
			continue;
		}
		for (k = 0; valued[k]; k++)
			if (strcmp(valued[k], name) == 0)
				takes = 1;
		if (!takes)
			return tfj_err_set(TFJ_EINVAL, "unknown option --%s", name);
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return tfj_err_set(TFJ_EINVAL, "option --%s needs a value", name);
			val = argv[++i];
		}
		if ((rc = apply(c, name, val)) < 0)
			return rc;
	}
	if (i >= argc && c->install_dir)
		return 0; /* --install runs no command */
	if (i >= argc)
		return tfj_err_set(TFJ_EINVAL, "no command given (tfjob-agent [OPTIONS] -- COMMAND)");
	c->command = &argv[i];
	if (c->nprogress_fields > 0 && !c->progress_regex)
		return tfj_err_set(TFJ_EINVAL, "--progress-field needs --progress-regex");
	return 0;
}

const char *tfj_agent_config_scan_termination_log(int argc, char **argv)
{
	static const char opt[] = "--termination-log";
	const char *path = "/dev/termination-log";
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;

		if (strcmp(a, "--") == 0 || a[0] != '-')
			break;
		if (strcmp(a, opt) == 0 && i + 1 < argc)
			v = argv[++i];
		else if (strncmp(a, opt, sizeof(opt) - 1) == 0 && a[sizeof(opt) - 1] == '=')
			v = a + sizeof(opt);
		else if (strncmp(a, "--", 2) == 0 && !strchr(a, '=')) {
			size_t k;
			for (k = 0; valued[k]; k++)
				if (strcmp(a + 2, valued[k]) == 0)
					i++; /* skip its value */
		}
		if (v && *v)
			path = strcmp(v, "none") == 0 ? NULL : v;
	}
	return path;
}

void tfj_agent_config_free(struct tfj_agent_config *c)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
}
