# shellcheck shell=bash
# Helpers for the chaos tests (sourced after lib.sh): the operator's HTTP
# endpoint (metrics port, reached at the pod's IP: the test bed is this
# machine), its caches against a fresh LIST, and restoring what a test broke.

OP_SELECTOR="app.kubernetes.io/name=tfjob-operator,app.kubernetes.io/component=controller"
OP_METRICS_PORT=${TFJOB_E2E_METRICS_PORT:-8080}
# The loopback /debug/informers port (chart debug.informersPort; the fixture
# setup-operator turns it on).
OP_DEBUG_PORT=${TFJOB_E2E_DEBUG_PORT:-8082}

# op_ip: the IP of a Running operator pod that is not being deleted.
op_ip() {
	kubectl -n "$OP_NS" get pods -l "$OP_SELECTOR" \
		-o jsonpath='{range .items[*]}{.status.phase} {.status.podIP} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null |
		awk '$1 == "Running" && NF == 2 { print $2; exit }'
}

# op_pod: the name of a Running operator pod that is not being deleted.
op_pod() {
	kubectl -n "$OP_NS" get pods -l "$OP_SELECTOR" \
		-o jsonpath='{range .items[*]}{.status.phase} {.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null |
		awk '$1 == "Running" && NF == 2 { print $2; exit }'
}

# op_debug_get PATH: the body of GET PATH on the operator's debug listener,
# which listens on 127.0.0.1 in the pod only: through kubectl port-forward,
# for the length of one request.
op_debug_get() {
	local pod pf lport rc=1 i
	pod=$(op_pod)
	[ -n "$pod" ] || return 1
	lport=$((20000 + RANDOM % 20000))
	kubectl -n "$OP_NS" port-forward "pod/$pod" "$lport:$OP_DEBUG_PORT" >/dev/null 2>&1 &
	pf=$!
	for i in $(seq 1 100); do
		if curl -sf --max-time 5 "http://127.0.0.1:$lport$1"; then
			rc=0
			break
		fi
		kill -0 "$pf" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pf" 2>/dev/null
	wait "$pf" 2>/dev/null
	return $rc
}

# op_get PATH: the body of GET PATH on the operator's metrics port.
op_get() {
	local ip
	ip=$(op_ip)
	[ -n "$ip" ] || return 1
	curl -sf --max-time 5 "http://$ip:$OP_METRICS_PORT$1"
}

# op_code PATH: the HTTP status of GET PATH (000 when unreachable).
op_code() {
	local ip
	ip=$(op_ip)
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://${ip:-0.0.0.0}:$OP_METRICS_PORT$1" || true
}

# op_metric NAME_WITH_LABELS: one sample's value (0 when absent).
op_metric() {
	op_get /metrics | awk -v m="$1" '$1 == m { print $2; found = 1 } END { if (!found) print 0 }'
}

# wait_operator_ready LIMIT_S: a Running operator pod answers /readyz 200.
wait_operator_ready() {
	local deadline=$((SECONDS + $1))
	until [ "$(op_code /readyz)" = 200 ]; do
		[ $SECONDS -lt $deadline ] || e2e_fail "operator not ready within $1 s"
		sleep 1
	done
}

# list_keys RESOURCE [SELECTOR]: "<ns>/<name> <resourceVersion>" of a fresh
# LIST in all namespaces, sorted (C collation, as the operator sorts).
list_keys() {
	kubectl get "$1" -A ${2:+-l "$2"} \
		-o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' |
		LC_ALL=C sort
}

# cache_keys INFORMER: the same lines from the operator's cache.
cache_keys() {
	op_debug_get /debug/informers | awk -v i="$1" '$1 == i { print $2, $3 }' | LC_ALL=C sort
}

# caches_equal_list LIMIT_S: each informer's cache (keys and resourceVersions)
# equals a fresh LIST; retried until LIMIT_S since a LIST may be newer than
# the watch event in flight. Prints the object counts.
caches_equal_list() {
	local deadline=$((SECONDS + $1)) sel=training.kubeflow.org/job-name ok a b
	while :; do
		ok=1
		for r in tfjobs pods services; do
			case $r in tfjobs) a=$(list_keys tfjobs.kubeflow.org) ;; *) a=$(list_keys "$r" "$sel") ;; esac
			b=$(cache_keys "$r") || b="(unreachable)"
			[ "$a" = "$b" ] || { ok=0; break; }
		done
		if [ $ok = 1 ]; then
			e2e_log "caches equal a fresh LIST: tfjobs $(list_keys tfjobs.kubeflow.org | grep -c . || true)," \
				"pods $(list_keys pods "$sel" | grep -c . || true), services $(list_keys services "$sel" | grep -c . || true)"
			return 0
		fi
		if [ $SECONDS -ge $deadline ]; then
			e2e_log "informer $r differs from a fresh LIST:"
			diff <(echo "$a") <(echo "$b") | head -n 20 || true
			e2e_fail "the operator's $r cache does not equal a fresh LIST after $1 s"
		fi
		sleep 1
	done
}

# creates_once JOB: every pod of JOB was created once (no duplicate creates):
# the SuccessfulCreatePod events, counted with their repeat counts, equal the
# number of distinct pod names. Prints the count.
creates_once() {
	local names total
	names=$(created_pods "$1" | wc -w)
	total=$(kubectl -n "$E2E_NS" get events --field-selector "involvedObject.name=$1,reason=SuccessfulCreatePod" \
		-o jsonpath='{range .items[*]}{.count}{"\n"}{end}' | awk '{ s += ($1 == "" ? 1 : $1) } END { print s + 0 }')
	[ "$names" -gt 0 ] && [ "$total" = "$names" ] || e2e_fail "$1: $total pod creates for $names pods"
	echo "$names"
}

# ---- the API server ----
# The test bed runs kube-apiserver as a plain process (e2e/cluster/up);
# `up` is idempotent and starts whatever component is not running.

api_up() { kubectl get --raw /readyz >/dev/null 2>&1; }

# api_kill: SIGKILLs kube-apiserver and waits until it no longer answers.
api_kill() {
	local pid
	pid=$(. "$E2E_DIR/../cluster/common.sh" && tb_pid kube-apiserver) ||
		e2e_fail "kube-apiserver is not running"
	e2e_log "kill -KILL kube-apiserver (pid $pid)"
	kill -KILL "$pid"
	local deadline=$((SECONDS + 60))
	while api_up; do
		[ $SECONDS -lt $deadline ] || e2e_fail "kube-apiserver still answers 60 s after SIGKILL"
		sleep 0.2
	done
	# Gone from the process table too: until then `up` takes it for running.
	while [ -e "/proc/$pid/exe" ] && readlink "/proc/$pid/exe" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || e2e_fail "kube-apiserver (pid $pid) still exists 60 s after SIGKILL"
		sleep 0.2
	done
}

# no_lock_fds CMD...: runs CMD with no descriptor of the test-bed lock open.
# Tests run under `flock /tmp/tfjob-testbed.lock ctest ...`, whose descriptor
# every child inherits; a daemon started from here (the restarted
# kube-apiserver) would keep it, and with it the lock, for everyone.
no_lock_fds() {
	(
		for f in /proc/$BASHPID/fd/*; do
			fd=${f##*/}
			[ "$fd" -gt 2 ] 2>/dev/null || continue
			case $(readlink "$f" 2>/dev/null) in */tfjob-testbed*.lock) eval "exec $fd>&-" ;; esac
		done
		exec "$@"
	)
}

# api_start: starts it again through e2e/cluster/up (waits for /readyz).
api_start() {
	# One more try: a start that races the old process's last moments fails
	# once ("exited during start-up") and succeeds the next time.
	no_lock_fds "$E2E_DIR/../cluster/up" >/dev/null 2>&1 ||
		no_lock_fds "$E2E_DIR/../cluster/up" >/dev/null 2>&1 ||
		e2e_fail "e2e/cluster/up could not restart the test bed"
	api_up || e2e_fail "kube-apiserver not ready after e2e/cluster/up"
}

# restore_testbed: for traps. Whatever a chaos test cut, the API server is
# running again when it exits.
restore_testbed() {
	api_up || no_lock_fds "$E2E_DIR/../cluster/up" >/dev/null 2>&1 || true
}

# etcd_compact: compacts etcd's history up to its current revision (what the
# API server's own compaction does every 5 minutes); prints the revision.
etcd_compact() {
	(
		. "$E2E_DIR/../cluster/common.sh"
		ec() {
			"$ETCD_BIN/etcdctl" --endpoints https://127.0.0.1:2379 --cacert "$TB_PKI/ca.crt" \
				--cert "$TB_PKI/apiserver-etcd-client.crt" --key "$TB_PKI/apiserver-etcd-client.key" "$@"
		}
		rev=$(ec endpoint status -w json | grep -o '"revision":[0-9]*' | head -n 1 | cut -d: -f2)
		[ -n "$rev" ] || exit 1
		ec compact "$rev" --physical >/dev/null || exit 1
		echo "$rev"
	)
}

# example_as NAME FILE: deploy/examples/FILE applied under another name.
example_as() {
	sed "s/^  name: .*/  name: $1/" "$REPO/deploy/examples/$2" | kubectl -n "$E2E_NS" apply -f - >/dev/null ||
		e2e_fail "apply $2 as $1 failed"
	e2e_log "applied deploy/examples/$2 as $1"
}

# op_leader_election true|false: reinstalls the operator (helm upgrade
# --reuse-values) with leader election on or off. Scaled to 0 first, so two
# replicas never act at once during the rollout. A leader that cannot renew
# its Lease for 10 s exits by design (docs/operator.md), so a test that needs
# the same process to live through a long cut turns election off.
op_leader_election() {
	kubectl -n "$OP_NS" scale "deploy/$OP_RELEASE" --replicas=0 >/dev/null || return 1
	kubectl -n "$OP_NS" wait --for=delete pod -l "$OP_SELECTOR" --timeout=120s >/dev/null 2>&1 || true
	no_lock_fds helm upgrade "$OP_RELEASE" "$REPO/charts/tfjob-operator" -n "$OP_NS" --reuse-values \
		--set "leaderElection.enabled=$1" --wait --timeout 180s >/dev/null || return 1
	kubectl -n "$OP_NS" rollout status "deploy/$OP_RELEASE" --timeout=180s >/dev/null
}

# op_restarts: "<pod uid> <restartCount>" of the operator pod, to tell whether
# the process lived through a fault.
op_restarts() {
	kubectl -n "$OP_NS" get pods -l "$OP_SELECTOR" \
		-o jsonpath='{range .items[*]}{.metadata.uid} {.status.containerStatuses[0].restartCount}{"\n"}{end}' | head -n 1
}
