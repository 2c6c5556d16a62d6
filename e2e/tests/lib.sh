# shellcheck shell=bash disable=SC1091,SC2015
# Helpers for the TFJob end-to-end tests (sourced). Each test makes its own
# namespace (Pod Security "restricted" enforced), removes it on exit, waits
# with bounded timeouts and dumps the TFJob, its pods' descriptions and logs
# and the operator's log on failure.
set -euo pipefail
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$E2E_DIR/../.." && pwd)
. "$E2E_DIR/../cluster/env"
OP_NS=${TFJOB_E2E_OPERATOR_NS:-tfjob-system}
OP_RELEASE=tfjob-operator
E2E_NS=""

e2e_log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S)" "${E2E_NAME:-e2e}" "$*"; }

e2e_dump() {
	local ns=${E2E_NS:-default}
	echo "--- tfjobs in $ns" && kubectl -n "$ns" get tfjobs -o wide 2>&1 || true
	local j
	for j in $(kubectl -n "$ns" get tfjobs -o name 2>/dev/null); do
		echo "--- describe $j" && kubectl -n "$ns" describe "$j" 2>&1 | tail -n 40
	done
	echo "--- pods in $ns" && kubectl -n "$ns" get pods -o wide 2>&1 || true
	local p
	for p in $(kubectl -n "$ns" get pods -o name 2>/dev/null); do
		echo "--- describe $p (tail)" && kubectl -n "$ns" describe "$p" 2>&1 | tail -n 15
		echo "--- logs $p (tail)" && kubectl -n "$ns" logs "$p" --all-containers 2>&1 | tail -n 15
	done
	echo "--- events in $ns" && kubectl -n "$ns" get events --sort-by=.lastTimestamp 2>&1 | tail -n 30 || true
	echo "--- operator log (tail)" &&
		kubectl -n "$OP_NS" logs "deploy/$OP_RELEASE" --tail=40 2>&1 || true
}

e2e_fail() {
	e2e_log "FAIL: $*"
	e2e_dump
	exit 1
}

e2e_cleanup() {
	[ -n "$E2E_NS" ] && kubectl delete namespace "$E2E_NS" --wait=false >/dev/null 2>&1 || true
}

# e2e_ns NAME: a fresh namespace enforcing Pod Security "restricted".
e2e_ns() {
	E2E_NS=e2e-$1-$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
	kubectl create namespace "$E2E_NS" >/dev/null || e2e_fail "cannot create namespace"
	trap e2e_cleanup EXIT
	kubectl label namespace "$E2E_NS" pod-security.kubernetes.io/enforce=restricted \
		pod-security.kubernetes.io/enforce-version=latest >/dev/null
	e2e_log "namespace $E2E_NS (enforce=restricted)"
}

# e2e_need_operator: the fixture (setup-operator) must have installed it.
# Another user of the shared test bed may have scaled it down (bench/run
# does, for its measurements, and restores it afterwards): wait a while.
e2e_need_operator() {
	local ready deadline=$((SECONDS + ${TFJOB_E2E_OPERATOR_WAIT:-300}))
	kubectl -n "$OP_NS" get deploy "$OP_RELEASE" >/dev/null 2>&1 ||
		{ e2e_log "FAIL: operator not installed in $OP_NS (fixture e2e_operator_install)"; exit 1; }
	while :; do
		ready=$(kubectl -n "$OP_NS" get deploy "$OP_RELEASE" -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true)
		[ "${ready:-0}" -ge 1 ] && return 0
		[ $SECONDS -lt $deadline ] || {
			e2e_log "FAIL: operator $OP_NS/$OP_RELEASE has no ready replica (spec.replicas=$(kubectl -n "$OP_NS" get deploy "$OP_RELEASE" -o jsonpath='{.spec.replicas}'); scaled down by another user of the test bed?)"
			exit 1
		}
		sleep 2
	done
}

job_phase() { kubectl -n "$E2E_NS" get tfjob "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true; }

# wait_job JOB PHASE LIMIT_S: waits for the TFJob phase; fails early on the
# other terminal phase. Prints the printer columns when they change.
wait_job() {
	local job=$1 want=$2 limit=$3 phase last="" cur deadline=$((SECONDS + $3))
	while :; do
		phase=$(job_phase "$job")
		cur=$(kubectl -n "$E2E_NS" get tfjob "$job" --no-headers 2>/dev/null | awk '{$NF=""; print}' || true)
		[ "$cur" != "$last" ] && { e2e_log "tfjob: $cur"; last=$cur; }
		[ "$phase" = "$want" ] && return 0
		case $phase in Succeeded | Failed) e2e_fail "$job is $phase, wanted $want" ;; esac
		[ $SECONDS -lt $deadline ] || e2e_fail "$job still '${phase:-none}' after $limit s, wanted $want"
		sleep 1
	done
}

# wait_pod_running POD LIMIT_S
wait_pod_running() {
	local pod=$1 limit=$2 phase deadline=$((SECONDS + $2))
	while :; do
		phase=$(kubectl -n "$E2E_NS" get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null || true)
		[ "$phase" = Running ] && return 0
		[ $SECONDS -lt $deadline ] || e2e_fail "pod $pod still '${phase:-absent}' after $limit s"
		sleep 0.5
	done
}

# event_messages JOB REASON PATTERN [SECONDS]: the messages of JOB's REASON
# events once one matches the grep pattern, or nothing after SECONDS (10).
# The operator posts events from a queue of its own (docs/operator.md,
# "Events"), so one may land a moment after the change it reports.
event_messages() {
	local deadline=$((SECONDS + ${4:-10})) msg
	while :; do
		msg=$(kubectl -n "$E2E_NS" get events --field-selector "involvedObject.name=$1,reason=$2" \
			-o jsonpath='{.items[*].message}' 2>/dev/null || true)
		grep -q "$3" <<<"$msg" && { printf '%s\n' "$msg"; return 0; }
		[ $SECONDS -lt $deadline ] || return 0
		sleep 0.5
	done
}

# created_pods JOB: names from the operator's SuccessfulCreatePod events
# (pods may already be cleaned up when the job ends), sorted, unique.
created_pods() {
	kubectl -n "$E2E_NS" get events --field-selector "involvedObject.name=$1,reason=SuccessfulCreatePod" \
		-o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | sed -n 's/^Created pod: //p' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
created_services() {
	kubectl -n "$E2E_NS" get events --field-selector "involvedObject.name=$1,reason=SuccessfulCreateService" \
		-o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | sed -n 's/^Created service: //p' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

pod_tfconfig() {
	kubectl -n "$E2E_NS" get pod "$1" -o jsonpath='{.spec.containers[?(@.name=="tensorflow")].env[?(@.name=="TF_CONFIG")].value}'
}

# final_accuracy POD: test accuracy of the runtime's final record.
final_accuracy() {
	kubectl -n "$E2E_NS" logs "$1" 2>/dev/null | grep '"final":true' | tail -n 1 |
		sed -n 's/.*"test_accuracy":\([0-9.]*\).*/\1/p'
}

# apply_example FILE [EPOCHS]: the example in the test namespace; with
# EPOCHS, its trainers' --epochs replaced (a test that faults a replica
# needs the job still training after the fault, at any runtime speed).
apply_example() {
	local f="$REPO/deploy/examples/$1"
	if [ -n "${2:-}" ]; then
		grep -q '"--epochs", "[0-9]*"' "$f" || e2e_fail "$1 has no --epochs to replace"
		sed "s/\"--epochs\", \"[0-9]*\"/\"--epochs\", \"$2\"/" "$f" |
			kubectl -n "$E2E_NS" apply -f - >/dev/null || e2e_fail "apply $1 failed"
		e2e_log "applied deploy/examples/$1 (--epochs $2)"
		return
	fi
	kubectl -n "$E2E_NS" apply -f "$f" >/dev/null || e2e_fail "apply $1 failed"
	e2e_log "applied deploy/examples/$1"
}

# apply_example_edited FILE CHECK SED-ARGS...: the example in the test
# namespace, edited by sed with SED-ARGS; CHECK (a fixed string) must be in
# the result, so an example that changed shape fails here, not later.
apply_example_edited() {
	local f="$REPO/deploy/examples/$1" check=$2 tmp="${TMPDIR:-/tmp}/$E2E_NS.yaml"
	shift 2
	sed "$@" "$f" >"$tmp" || e2e_fail "could not edit $f"
	if ! grep -qF -- "$check" "$tmp"; then
		rm -f "$tmp"
		e2e_fail "could not edit $f: no '$check' after the edit"
	fi
	kubectl -n "$E2E_NS" apply -f "$tmp" >/dev/null || { rm -f "$tmp"; e2e_fail "apply $1 failed"; }
	rm -f "$tmp"
}

# ps_linger_sed SECONDS: the sed expression that gives the PS section's
# command of async-ps-worker.yaml --ps-linger SECONDS (the workers' stays).
ps_linger_sed() {
	printf '%s' "/^    PS:/,/^    Worker:/ s/\"--batch-size\", \"64\"\\]/\"--batch-size\", \"64\", \"--ps-linger\", \"$1\"]/"
}

# kill_tf_child POD SIGNAL: kills the command (tfjob-runtime) that tfjob-agent
# supervises in the pod's tensorflow container, from the node (the image has
# no shell or kill). The test bed is this machine, so the container's
# processes are visible here.
kill_tf_child() {
	local pod=$1 sig=$2 cid pid child
	. "$E2E_DIR/../cluster/common.sh"
	cid=$(kubectl -n "$E2E_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[?(@.name=="tensorflow")].containerID}')
	cid=${cid#containerd://}
	[ -n "$cid" ] || e2e_fail "no container id for $pod"
	pid=$(tb_ctr -n k8s.io task ls 2>/dev/null | awk -v c="$cid" '$1 == c {print $2}')
	[ -n "$pid" ] || e2e_fail "no task for container $cid of $pod"
	child=$(pgrep -P "$pid" | head -n 1)
	[ -n "$child" ] || e2e_fail "tfjob-agent (pid $pid) of $pod has no child"
	e2e_log "kill -$sig $child ($(tr '\0' ' ' </proc/"$child"/cmdline | cut -c1-60)) in $pod"
	kill -"$sig" "$child"
}

# progress_sample JOB PHASE: reads the PROGRESS and ETA columns once
# (status.progress.progressPercentage and .estimatedRemainingSeconds) with
# the job's PHASE as read just before, and updates PROG_MID (the last
# PROGRESS strictly between 0 and 100 seen before Succeeded), PROG_LAST,
# ETA_TOP (the largest ETA seen before Succeeded) and ETA_FELL (1 once a
# later ETA was below ETA_TOP). Prints `kubectl get tfjob JOB` when either
# column changes. Call it from a polling loop; check_progress_eta judges.
progress_sample() {
	local job=$1 phase=$2 row prog eta
	row=$(kubectl -n "$E2E_NS" get tfjob "$job" --no-headers \
		-o custom-columns=P:.status.progress.progressPercentage,E:.status.progress.estimatedRemainingSeconds 2>/dev/null || true)
	read -r prog eta <<<"$row"
	case $prog in '' | '<none>') prog= ;; *[!0-9]*) e2e_fail "PROGRESS not an integer: '$prog'" ;; esac
	case $eta in '' | '<none>') eta= ;; *[!0-9]*) e2e_fail "ETA not an integer: '$eta'" ;; esac
	[ -z "$prog" ] || [ "$prog" -le 100 ] || e2e_fail "PROGRESS $prog above 100"
	if [ "$prog/$eta" != "${PROG_SEEN:-}" ]; then
		PROG_SEEN=$prog/$eta
		e2e_log "PROGRESS ${prog:-none} ETA ${eta:-none} (phase ${phase:-none}):"
		kubectl -n "$E2E_NS" get tfjob "$job" 2>/dev/null || true
	fi
	[ -n "$prog" ] && PROG_LAST=$prog
	[ "$phase" = Succeeded ] || {
		[ -n "$prog" ] && [ "$prog" -gt 0 ] && [ "$prog" -lt 100 ] && PROG_MID=$prog
		[ -n "$eta" ] && [ "$eta" -gt "${ETA_TOP:-0}" ] && ETA_TOP=$eta
	}
	[ -n "$eta" ] && [ -n "${ETA_TOP:-}" ] && [ "$eta" -lt "$ETA_TOP" ] && ETA_FELL=1
	return 0
}

# check_progress_eta JOB: after the job Succeeded, PROGRESS was seen between
# 0 and 100 while it ran and reaches 100 (the status is written at most
# every 5 s, so the last report may land after Succeeded), and an ETA seen
# while it ran was later followed by a smaller one.
check_progress_eta() {
	local job=$1 deadline=$((SECONDS + 30))
	while [ "${PROG_LAST:-}" != 100 ]; do
		[ $SECONDS -lt $deadline ] ||
			e2e_fail "PROGRESS '${PROG_LAST:-}' 30 s after Succeeded, wanted 100 (status.progress: $(kubectl -n "$E2E_NS" get tfjob "$job" -o jsonpath='{.status.progress}'))"
		sleep 1
		progress_sample "$job" Succeeded
	done
	[ -n "${PROG_MID:-}" ] || e2e_fail "no PROGRESS between 0 and 100 seen while $job ran"
	[ "${ETA_TOP:-0}" -gt 0 ] || e2e_fail "no ETA above 0 seen while $job ran"
	[ "${ETA_FELL:-0}" = 1 ] || e2e_fail "ETA never fell below its high of $ETA_TOP s"
	e2e_log "PROGRESS $PROG_MID while running -> $PROG_LAST; ETA fell from $ETA_TOP s"
}
