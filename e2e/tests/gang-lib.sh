# shellcheck shell=bash
# Helpers of the gang scheduling tests (sourced after lib.sh): the on-demand
# second scheduler, turning gang scheduling on in the installed operator
# for the length of one test, and CPU arithmetic on the one node.
GANG_SCHEDULER=scheduler-plugins
GANG_ON=0

# gang_scheduler_up: scheduler-plugins' scheduler and its PodGroup CRD
# (e2e/cluster/gang-scheduler: built once into the cache, idempotent).
gang_scheduler_up() {
	"$REPO/e2e/cluster/gang-scheduler" up >&2 || e2e_fail "e2e/cluster/gang-scheduler failed"
}

# gang_operator NAME: helm upgrade of the installed operator with only
# gangSchedulerName changed (every other value reused), then waits for the
# new operator pod. NAME "" turns it off again.
gang_operator() {
	helm upgrade "$OP_RELEASE" "$REPO/charts/tfjob-operator" -n "$OP_NS" --reuse-values \
		--set gangSchedulerName="$1" --wait --timeout 180s >/dev/null ||
		e2e_fail "helm upgrade gangSchedulerName=$1 failed"
	kubectl -n "$OP_NS" rollout status "deploy/$OP_RELEASE" --timeout=180s >/dev/null ||
		e2e_fail "operator not ready after gangSchedulerName=$1"
	e2e_need_operator
}

gang_on() {
	GANG_ON=1
	gang_operator "$GANG_SCHEDULER"
	e2e_log "operator upgraded: --gang-scheduler-name=$GANG_SCHEDULER"
}

# Exit trap: gang scheduling off again (the other tests run without it),
# then what the test names in GANG_EXTRA_CLEANUP (a command, e.g. a node to
# start again), then the namespace goes.
GANG_EXTRA_CLEANUP=:
gang_cleanup() {
	local rc=$?
	if [ "$GANG_ON" = 1 ]; then
		GANG_ON=0
		# In a subshell: a failed restore (e2e_fail exits) must not skip
		# the cleanup below and leave the namespace's pods on the bed.
		if (gang_operator ""); then
			e2e_log "operator restored: gang scheduling off"
		else
			e2e_log "WARN: could not restore the operator without gang scheduling"
			[ "$rc" != 0 ] || rc=1
		fi
	fi
	$GANG_EXTRA_CLEANUP || true
	e2e_cleanup
	exit $rc
}

# cpu_milli Q: a CPU quantity ("2", "1500m", "0.5") in millicores.
cpu_milli() {
	case $1 in
	"") echo 0 ;;
	*m) echo "${1%m}" ;;
	*.*) awk -v q="$1" 'BEGIN { printf "%d\n", q * 1000 + 0.999 }' ;;
	*) echo $(($1 * 1000)) ;;
	esac
}

# node_free_cpu: allocatable CPU of the node minus the CPU requests of every
# pod on it that is not finished, in millicores.
node_free_cpu() {
	local node alloc used=0 q
	node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
	alloc=$(cpu_milli "$(kubectl get node "$node" -o jsonpath='{.status.allocatable.cpu}')")
	for q in $(kubectl get pods -A --field-selector "spec.nodeName=$node,status.phase!=Succeeded,status.phase!=Failed" \
		-o jsonpath='{range .items[*].spec.containers[*]}{.resources.requests.cpu}{" "}{end}'); do
		used=$((used + $(cpu_milli "$q")))
	done
	echo $((alloc - used))
}

# pods_in_phase SELECTOR PHASE: how many pods match in that phase.
pods_in_phase() {
	kubectl -n "$E2E_NS" get pods -l "$1" --field-selector "status.phase=$2" --no-headers 2>/dev/null | wc -l
}

# Restricted Pod Security for the pause image (the sandbox image the test
# bed builds): a container that only holds its CPU request.
GANG_SC='securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}'
GANG_CSC='securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}'
GANG_IMAGE=$PAUSE_IMAGE
