/*
 * agent.c - ties the agent's modules together (see agent.h).
 */
#include "agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/log.h>
#include <tfj/tfconfig.h>

#include "config.h"
#include "peers.h"
#include "progress.h"
#include "install.h"
#include "progress_regex.h"
#include "reporter.h"
#include "supervisor.h"
#include "termmsg.h"

struct agent {
	struct tfj_agent_config cfg;
	struct tfj_tfconfig tfc;
	int have_tfc;
	struct tfj_progress_regex re;
	int have_re;
	struct tfj_progress_tracker tr;
	int have_tr;
	struct tfj_reporter *rep;
	char replica_type[64];
	int replica_index;
};

static void on_output(void *ctx, enum tfj_progress_stream s, const char *data, size_t len)
{
	struct agent *a = ctx;

	if (tfj_progress_tracker_feed(&a->tr, s, data, len))
		tfj_reporter_update(a->rep, &a->tr.state, 1);
}

/* Writes the termination message, sends Exit and returns `code`. */
static int finish(struct agent *a, int code, const char *reason, int sig, const char *message)
{
	struct tfj_termmsg m;
	struct tfj_reporter_exit e;
	char codebuf[16];

	memset(&m, 0, sizeof(m));
	m.reason = reason;
	m.exit_code = code;
	m.signal = sig;
	if (a->have_tr && (a->tr.state.have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP))) {
		m.has_last_step = 1;
		m.last_step = a->tr.state.step;
	}
	if (a->have_tr) {
		m.has_loss = !!(a->tr.state.have & TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS));
		m.loss = a->tr.state.loss;
		m.has_accuracy = !!(a->tr.state.have & TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY));
		m.accuracy = a->tr.state.accuracy;
	}
	m.message = message;
	if (a->cfg.termination_log && tfj_termmsg_write(a->cfg.termination_log, &m) < 0)
		tfj_log_warn("cannot write the termination message", "detail", tfj_err_detail());
	if (a->rep) {
		memset(&e, 0, sizeof(e));
		e.exit_code = code;
		e.reason = reason;
		e.has_last_step = m.has_last_step;
		e.last_step = m.last_step;
		e.message = message;
		e.signal = sig;
		tfj_reporter_update(a->rep, NULL, 0);
		tfj_reporter_finish(a->rep, &e);
	}
	snprintf(codebuf, sizeof(codebuf), "%d", code);
	tfj_log_info("agent exiting", "reason", reason, "exit_code", codebuf, "retryable",
		     tfj_exitcode_retryable(code) ? "true" : "false");
	return code;
}

static int setup_logging(const struct tfj_agent_config *c)
{
	enum tfj_log_level lvl;
	enum tfj_log_format fmt;

	tfj_log_set_component("agent");
	if (c->log_level) {
		if (tfj_log_parse_level(&lvl, c->log_level) < 0)
			return tfj_err_set(TFJ_EINVAL, "log level '%s'", c->log_level);
		tfj_log_set_level(lvl);
	}
	if (c->log_format) {
		if (tfj_log_parse_format(&fmt, c->log_format) < 0)
			return tfj_err_set(TFJ_EINVAL, "log format '%s'", c->log_format);
		tfj_log_set_format(fmt);
	}
	return 0;
}

static int setup_progress(struct agent *a)
{
	size_t i;
	int rc;

	if (a->cfg.progress_regex) {
		rc = tfj_progress_regex_compile(&a->re, a->cfg.progress_regex);
		if (rc < 0)
			return rc;
		a->have_re = 1;
		for (i = 0; i < a->cfg.nprogress_fields; i++) {
			rc = tfj_progress_regex_map_spec(&a->re, a->cfg.progress_fields[i]);
			if (rc < 0)
				return rc;
		}
		if ((rc = tfj_progress_regex_check(&a->re)) < 0)
			return rc;
	}
	return 0;
}

static void open_report(struct agent *a)
{
	struct tfj_reporter_opts o;
	struct tfj_reporter_ident id;

	if (!a->cfg.report || !a->cfg.report_addr)
		return;
	/*
	 * The bearer token travels with every report: it goes in plaintext
	 * only when asked for explicitly (docs/security.md).
	 */
	if (!a->cfg.report_ca_file && !a->cfg.report_insecure) {
		tfj_log_error("report channel off: no CA file (TFJOB_REPORT_CA_FILE) and "
			      "plaintext not allowed (--report-insecure)", "address",
			      a->cfg.report_addr);
		return;
	}
	if (!a->cfg.report_ca_file)
		tfj_log_warn("report channel in PLAINTEXT (--report-insecure): the pod's report "
			     "token can be read on the network", "address", a->cfg.report_addr);
	memset(&o, 0, sizeof(o));
	o.addr = a->cfg.report_addr;
	o.token_file = a->cfg.report_token_file;
	o.ca_file = a->cfg.report_ca_file;
	o.timeout_s = a->cfg.report_timeout_s;
	o.heartbeat_s = a->cfg.heartbeat_s;
	o.ack_wait_s = a->cfg.report_ack_wait_s;
	memset(&id, 0, sizeof(id));
	id.namespace_ = a->cfg.namespace_;
	id.job_name = a->cfg.job_name;
	id.job_uid = a->cfg.job_uid;
	id.replica_type = a->replica_type;
	id.replica_index = a->replica_index;
	id.pod_name = a->cfg.pod_name;
	if (tfj_reporter_open(&a->rep, &o, &id) < 0) {
		tfj_log_warn("report channel unusable, continuing without it", "detail",
			     tfj_err_detail());
		a->rep = NULL;
		return;
	}
	if (tfj_reporter_start(a->rep) < 0) {
		tfj_log_warn("report thread failed, continuing without it", "detail",
			     tfj_err_detail());
		tfj_reporter_close(a->rep);
		a->rep = NULL;
	}
}

/* Returns an exit code >= 0 to stop now, or -1 to go on. */
static int wait_peers(struct agent *a)
{
	struct tfj_peers peers;
	struct tfj_peers_wait_opts o;
	char detail[TFJ_ERR_DETAIL_MAX];
	int rc, sig = 0;

	if (!a->have_tfc || a->cfg.peer_mode == TFJ_PEERS_NONE)
		return -1;
	rc = tfj_peers_collect(&peers, &a->tfc, a->cfg.peer_types);
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "TF_CONFIG: %s", tfj_err_detail());
		tfj_log_error("bad cluster address", "detail", detail);
		return finish(a, TFJ_EXIT_USAGE, "InvalidTFConfig", 0, detail);
	}
	memset(&o, 0, sizeof(o));
	o.mode = a->cfg.peer_mode;
	o.timeout_s = a->cfg.peer_timeout_s;
	o.connect_timeout_s = a->cfg.peer_connect_timeout_s;
	o.cancel_fd = tfj_supervisor_cancel_fd();
	rc = tfj_peers_wait(&peers, &o, &sig);
	if (o.cancel_fd >= 0)
		close(o.cancel_fd);
	tfj_peers_free(&peers);
	if (rc == TFJ_ECANCELED) {
		if (sig <= 0)
			sig = SIGTERM;
		tfj_reporter_no_ack_wait(a->rep);
		return finish(a, 128 + sig, "TerminatedBeforeStart", 0,
			      "a signal stopped the agent while it waited for peers");
	}
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		tfj_log_error("peers did not appear", "detail", detail);
		return finish(a, rc == TFJ_ETIMEOUT ? TFJ_EXIT_UNAVAILABLE : TFJ_EXIT_IO,
			      rc == TFJ_ETIMEOUT ? "PeerWaitTimeout" : "AgentError", 0, detail);
	}
	return -1;
}

static const char *reason_of(const struct tfj_supervisor_result *r)
{
	if (r->exec_errno)
		return r->exec_errno == ENOENT ? "CommandNotFound" : "CommandNotExecutable";
	if (r->stopped)
		return "Stopped";
	if (r->exit_code == 0)
		return "Completed";
	if (r->killed)
		return "GracePeriodExpired";
	if (r->received)
		return "Terminated";
	if (r->signal)
		return "Signaled";
	return "Error";
}

static int supervise(struct agent *a)
{
	struct tfj_supervisor_opts o;
	struct tfj_supervisor_result r;
	char tail[TFJ_PROGRESS_TAIL + 1], msg[TFJ_PROGRESS_TAIL + 128];
	const char *reason;
	int rc;

	memset(&o, 0, sizeof(o));
	o.argv = a->cfg.command;
	o.grace_s = a->cfg.grace_s;
	o.drain_s = a->cfg.drain_s;
	o.out_fd = STDOUT_FILENO;
	o.err_fd = STDERR_FILENO;
	o.signal_group = a->cfg.signal_group;
	o.on_output = on_output;
	o.ctx = a;
	o.stop_fd = tfj_reporter_stop_fd(a->rep);
	o.use_stop_fd = o.stop_fd >= 0;
	tfj_reporter_update(a->rep, &a->tr.state, 1);
	tfj_log_info("starting command", "command", a->cfg.command[0]);
	rc = tfj_supervisor_run(&r, &o);
	tfj_progress_tracker_flush(&a->tr);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "%s", tfj_err_detail());
		tfj_log_error("supervisor failed", "detail", msg);
		return finish(a, rc == TFJ_ENOMEM ? TFJ_EXIT_NOMEM : TFJ_EXIT_IO,
			      "AgentError", 0, msg);
	}
	reason = reason_of(&r);
	if (r.stopped && !r.exec_errno) {
		/*
		 * The operator's stop (the job has succeeded): whatever the
		 * command made of SIGTERM, this replica's work is done, so the
		 * pod ends Succeeded with its logs.
		 */
		char why[128] = "";

		tfj_reporter_stop_requested(a->rep, why, sizeof(why));
		snprintf(msg, sizeof(msg), "stopped on the operator's request (%s); the command "
			 "ended with code %d%s", why, r.exit_code,
			 r.killed ? " after the grace period" : "");
		tfj_log_info("command stopped", "detail", msg);
		return finish(a, 0, reason, 0, msg);
	}
	if (r.exec_errno) {
		snprintf(msg, sizeof(msg), "%s: %s", a->cfg.command[0], strerror(r.exec_errno));
		tfj_log_error("cannot run the command", "detail", msg);
	} else {
		tfj_progress_tracker_tail(&a->tr, tail, sizeof(tail));
		snprintf(msg, sizeof(msg), "%s", r.exit_code ? tail : "");
	}
	/* Terminated by kubelet: the pod's grace period, not the ack wait, bounds the exit. */
	if (r.received)
		tfj_reporter_no_ack_wait(a->rep);
	return finish(a, r.exit_code, reason, r.signal, msg);
}

/* --install DIR: the injected agent's init container (install.h). */
static int install(struct agent *a)
{
	const char *src = getenv("TFJOB_AGENT_BUNDLE");
	char detail[TFJ_ERR_DETAIL_MAX];
	int n, rc;

	if (!src || !*src)
		src = TFJ_INSTALL_BUNDLE_DIR;
	rc = tfj_install_copy(&n, src, a->cfg.install_dir);
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "install: %s", tfj_err_detail());
		tfj_log_error("cannot install the agent", "detail", detail);
		return finish(a, TFJ_EXIT_IO, "AgentError", 0, detail);
	}
	snprintf(detail, sizeof(detail), "%d", n);
	tfj_log_info("agent installed", "from", src, "to", a->cfg.install_dir, "files", detail);
	return finish(a, 0, "Completed", 0, NULL);
}

int tfj_agent_main(int argc, char **argv)
{
	struct agent a;
	const char *tf;
	char detail[TFJ_ERR_DETAIL_MAX];
	int code, rc;

	/* Before any thread exists (gRPC starts some), see supervisor.h. */
	tfj_supervisor_block_signals();
	memset(&a, 0, sizeof(a));
	a.replica_index = -1;
	tfj_log_set_component("agent");
	rc = tfj_agent_config_parse(&a.cfg, argc, argv);
	if (rc == 0)
		rc = setup_logging(&a.cfg);
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		fprintf(stderr, "tfjob-agent: %s\n(see tfjob-agent --help)\n", detail);
		a.cfg.termination_log = tfj_agent_config_scan_termination_log(argc, argv);
		code = finish(&a, TFJ_EXIT_USAGE, "InvalidArguments", 0, detail);
		goto out;
	}
	if (a.cfg.help) {
		fputs(tfj_agent_config_usage(), stdout);
		code = 0;
		goto out;
	}
	if (a.cfg.version) {
		printf("tfjob-agent %s\n", TFJ_REPORTER_AGENT_VERSION);
		code = 0;
		goto out;
	}
	if (a.cfg.install_dir) {
		code = install(&a);
		goto out;
	}
	tf = getenv("TF_CONFIG");
	if (tf && *tf) {
		rc = tfj_tfconfig_decode(&a.tfc, tf, strlen(tf));
		if (rc < 0) {
			snprintf(detail, sizeof(detail), "TF_CONFIG: %s", tfj_err_detail());
			tfj_log_error("malformed TF_CONFIG", "detail", detail);
			code = finish(&a, TFJ_EXIT_USAGE, "InvalidTFConfig", 0, detail);
			goto out;
		}
		a.have_tfc = 1;
	}
	snprintf(a.replica_type, sizeof(a.replica_type), "%s",
		 a.cfg.replica_type ? a.cfg.replica_type
		 : a.have_tfc && a.tfc.has_task ? a.tfc.task_type : "");
	a.replica_index = a.cfg.replica_index >= 0 ? a.cfg.replica_index
			  : a.have_tfc && a.tfc.has_task ? a.tfc.task_index : 0;
	rc = setup_progress(&a);
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		tfj_log_error("bad progress options", "detail", detail);
		code = finish(&a, TFJ_EXIT_USAGE, "InvalidArguments", 0, detail);
		goto out;
	}
	rc = tfj_progress_tracker_init(&a.tr, a.cfg.line_max, a.have_re ? &a.re : NULL);
	if (rc < 0) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		code = finish(&a, TFJ_EXIT_NOMEM, "AgentError", 0, detail);
		goto out;
	}
	a.have_tr = 1;
	open_report(&a);
	code = wait_peers(&a);
	if (code >= 0)
		goto out;
	if (tfj_reporter_stop_requested(a.rep, NULL, 0)) {
		/* Told to stop while waiting: the job is over, nothing to start. */
		code = finish(&a, 0, "Stopped", 0, "stopped on the operator's request before the "
			      "command started");
		goto out;
	}
	code = supervise(&a);
out:
	if (a.have_tr)
		tfj_progress_tracker_free(&a.tr);
	if (a.have_re)
		tfj_progress_regex_free(&a.re);
	tfj_tfconfig_free(&a.tfc);
	tfj_agent_config_free(&a.cfg);
	if (a.rep) {
		/*
		 * Everything is said (termination message written, reports
		 * sent or given up), so the process ends here, without tearing
		 * gRPC down: with connection attempts still in flight on its
		 * background threads (an operator unreachable for the whole
		 * ack wait), channel destruction, grpc_shutdown and the static
		 * destructors of exit() raced them and the agent died of
		 * SIGSEGV after a completed run: exit code 139 instead of 0,
		 * and a restartPolicy Never job Failed (e2e chaos test). The
		 * kernel frees the rest; the exit code is what counts.
		 */
		fflush(NULL);
		_exit(code);
	}
	return code;
}
