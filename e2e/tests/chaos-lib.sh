# shellcheck shell=bash
# Helpers of the operator chaos tests (chaos-operator-kill,
# chaos-leader-failover; sourced after lib.sh and e2e_ns): small PS+worker
# jobs, a pod watch that proves no job ever had more pods than replicas,
# SIGKILL of an operator process from the node, and the Lease.
. "$E2E_DIR/../cluster/common.sh"
OP_SEL=app.kubernetes.io/name=tfjob-operator,app.kubernetes.io/instance=$OP_RELEASE
# Steps per job: with 50m of CPU per pod a job trains for a minute or so
# on the test bed (its ps traffic is TLS); the tests key on state (a job
# that ends while kills remain is replaced), so any speed works.
CHAOS_STEPS=${TFJOB_CHAOS_STEPS:-14000}
# CPU limit of every pod: a test with few jobs may give each more, so that
# its jobs (whose ps traffic is TLS, see docs/security.md) finish sooner.
CHAOS_CPU_LIMIT=${CHAOS_CPU_LIMIT:-50m}
# runPolicy.progressDeadlineSeconds of the jobs ("" = none): hang detection
# on, so a pod wrongly judged hung would be restarted (and seen).
CHAOS_PROGRESS_DEADLINE=${CHAOS_PROGRESS_DEADLINE:-}
chaos_work=$(mktemp -d)
chaos_watch_pid=""
chaos_unacked=0

# chaos_job_yaml NAME: 1 ps + 1 worker, async, CHAOS_STEPS steps of a small
# model (softmax, synthetic data), cleanPodPolicy None (so only "training
# done" stops the ps).
chaos_job_yaml() {
	local name=$1 t
	t=$(cat <<EOF
        spec:
          securityContext:
            runAsNonRoot: true
            runAsUser: 65532
            seccompProfile: {type: RuntimeDefault}
          containers:
            - name: tensorflow
              image: localhost/tfjob-agent:dev
              imagePullPolicy: IfNotPresent
              command: ["tfjob-agent", "--", "tfjob-runtime", "train", "--model", "softmax",
                        "--dataset", "synthetic", "--synthetic-examples", "4000",
                        "--batch-size", "32", "--max-steps", "$CHAOS_STEPS",
                        "--progress-steps", "2000"]
              # 20 pods at most share the 2-core test bed with the control
              # plane: a CPU limit keeps the API server responsive.
              resources:
                requests: {cpu: 10m, memory: 32Mi}
                limits: {cpu: $CHAOS_CPU_LIMIT, memory: 256Mi}
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                capabilities: {drop: [ALL]}
EOF
)
	cat <<EOF
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: $name
spec:
  runPolicy:
    cleanPodPolicy: None
    backoffLimit: 6${CHAOS_PROGRESS_DEADLINE:+
    progressDeadlineSeconds: $CHAOS_PROGRESS_DEADLINE}
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: Never
      template:
$t
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
$t
EOF
}

chaos_new_job() {
	chaos_job_yaml "$1" | kubectl -n "$E2E_NS" apply -f - >/dev/null || e2e_fail "cannot create $1"
}

# "name step" of every job, sorted (step empty before the first report).
chaos_steps() {
	kubectl -n "$E2E_NS" get tfjobs -o jsonpath='{range .items[*]}{.metadata.name} {.status.progress.globalStep}{"\n"}{end}' 2>/dev/null | sort
}

# The pod watch of the test namespace: one line per event; restarted (with
# a RESYNC mark, after which the listing rebuilds the set) if it ends.
chaos_watch_start() {
	(
		while :; do
			echo RESYNC
			kubectl -n "$E2E_NS" get pods --watch --output-watch-events \
				-o jsonpath='{.type} {.object.metadata.name} {.object.metadata.labels.training\.kubeflow\.org/job-name}{"\n"}' 2>/dev/null || true
			sleep 1
		done
	) >"$chaos_work/watch.log" &
	chaos_watch_pid=$!
}

# The loop's kubectl goes too: left running, it would outlive the test with
# every descriptor the test had (a caller's test-bed lock among them).
chaos_watch_stop() {
	local kids
	if [ -n "$chaos_watch_pid" ]; then
		kids=$(pgrep -P "$chaos_watch_pid" || true)
		kill "$chaos_watch_pid" 2>/dev/null || true
		# shellcheck disable=SC2086
		[ -n "$kids" ] && kill $kids 2>/dev/null || true
	fi
	chaos_watch_pid=""
}

# Fails when a job ever had more than 2 pods at once, or a pod not named
# <job>-ps-0 / <job>-worker-0. Sets chaos_watch_events (events seen).
chaos_watch_check() {
	local bad
	chaos_watch_stop
	bad=$(awk '
		$1 == "RESYNC" { delete live; delete count; next }
		NF < 3 { next }
		{
			name = $2; job = $3
			if (name !~ ("^" job "-(ps|worker)-0$")) { print "unexpected pod " name; next }
			if ($1 == "DELETED") { if (name in live) { delete live[name]; count[job]-- }; next }
			if (!(name in live)) { live[name] = 1; count[job]++ }
			if (count[job] > 2) print job " had " count[job] " pods"
		}' "$chaos_work/watch.log" | sort -u)
	[ -z "$bad" ] || e2e_fail "pod watch: $bad"
	chaos_watch_events=$(grep -c -E '^(ADDED|MODIFIED|DELETED) ' "$chaos_work/watch.log" || true)
}

# chaos_check_final JOB: Succeeded, its status.progress that of worker 0's
# final record (step and test accuracy).
chaos_check_final() {
	local job=$1 log rec want_step want_acc got_step got_acc
	log=$(kubectl -n "$E2E_NS" logs "$job-worker-0" 2>/dev/null || true)
	rec=$(grep '"final":true' <<<"$log" | tail -n 1 || true)
	# A final record its agent never got acknowledged: the status has it
	# from the termination message (counted, shown in the figures).
	if grep -q 'msg="report not acknowledged"' <<<"$log"; then
		chaos_unacked=$((chaos_unacked + 1))
		e2e_log "$job: $(grep 'msg="report not acknowledged"' <<<"$log" | head -n 1 | sed 's/.*call=//')"
	fi
	[ -n "$rec" ] || e2e_fail "$job-worker-0 logged no final record"
	want_step=$(sed -n 's/.*"step":\([0-9]*\).*/\1/p' <<<"$rec")
	want_acc=$(sed -n 's/.*"test_accuracy":\([0-9.e+-]*\).*/\1/p' <<<"$rec")
	read -r got_step got_acc < <(kubectl -n "$E2E_NS" get tfjob "$job" -o jsonpath='{.status.progress.globalStep} {.status.progress.accuracy}{"\n"}')
	if [ "${got_step:-}" != "$want_step" ]; then
		chaos_dump_reports "$job"
		e2e_fail "$job: status.progress.globalStep '${got_step:-}', final record step '$want_step'"
	fi
	if ! awk -v a="${got_acc:-x}" -v b="$want_acc" 'BEGIN { exit !(a != "x" && (a - b) < 1e-6 && (b - a) < 1e-6) }'; then
		chaos_dump_reports "$job"
		e2e_fail "$job: status.progress.accuracy '${got_acc:-}', final record '$want_acc'"
	fi
}

# chaos_dump_reports JOB: what its worker's agent said about the report
# channel, and what the operator logged about the job (for a failure).
chaos_dump_reports() {
	local job=$1
	echo "--- $job-worker-0: agent lines other than progress records"
	kubectl -n "$E2E_NS" logs "$job-worker-0" 2>&1 | grep -v '"step":' | tail -n 40 || true
	echo "--- operator log lines naming $job"
	kubectl -n "$OP_NS" logs -l "$OP_SEL" --tail=-1 2>&1 | grep -F "$job" | tail -n 40 || true
}

# No ps pod Running or Pending in the namespace (waits for terminating ones).
chaos_check_no_ps_left() {
	local left deadline=$((SECONDS + 120))
	while :; do
		left=$(kubectl -n "$E2E_NS" get pods -l training.kubeflow.org/replica-type=ps \
			-o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{" "}{end}' | tr ' ' '\n' |
			grep -E '=(Running|Pending)$' || true)
		[ -z "$left" ] && return 0
		[ $SECONDS -lt $deadline ] || e2e_fail "ps pods still running after their jobs finished: $left"
		sleep 2
	done
}

# Running operator pods not being deleted, one name a line.
chaos_op_pods() {
	kubectl -n "$OP_NS" get pods -l "$OP_SEL" \
		-o jsonpath='{range .items[*]}{.metadata.name}|{.metadata.deletionTimestamp}|{.status.phase}{"\n"}{end}' 2>/dev/null |
		awk -F'|' '$2 == "" && $3 == "Running" { print $1 }'
}

# The Lease: "holder renewTime acquireTime".
chaos_lease() {
	kubectl -n "$OP_NS" get lease tfjob-operator \
		-o jsonpath='{.spec.holderIdentity} {.spec.renewTime} {.spec.acquireTime}{"\n"}' 2>/dev/null || true
}

# chaos_sigkill POD: SIGKILLs the operator process of POD from the node (the
# image has no shell), and waits until it is gone.
chaos_sigkill() {
	local pod=$1 cid pid
	cid=$(kubectl -n "$OP_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
	cid=${cid#containerd://}
	pid=$(tb_ctr -n k8s.io task ls 2>/dev/null | awk -v c="$cid" '$1 == c {print $2}')
	[ -n "$pid" ] || e2e_fail "no task for the operator container $cid of $pod"
	kill -KILL "$pid"
	while [ -e "/proc/$pid" ]; do sleep 0.1; done
}

chaos_cleanup() {
	chaos_watch_stop
	rm -rf "$chaos_work"
}
