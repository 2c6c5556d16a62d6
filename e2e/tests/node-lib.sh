# shellcheck shell=bash disable=SC2015
# Helpers of the multi-node failure tests (sourced after lib.sh, after
# e2e_ns): a checkpoint volume shared by every node, the job's training
# steps from its coordinator's log, and a watch that no replica ever runs
# twice at once. Every extra node of the test bed is a network namespace on
# this machine (docs/testbed.md, "Multi-node"), so a hostPath volume is the
# same directory on every node (shared storage, as NFS would be), and every
# node's processes are visible in this machine's /proc.
NODE_CKPT_DIR=""
NODE_CKPT_PV=""
NODE_WATCH_PID=""
NODE_WATCH_FILE=""

# node_ckpt_volume: a directory here and a ReadWriteMany PersistentVolume
# of it, bound in advance to the claim "ckpt" of the test namespace, which
# this makes too. The pods run as a non-root user, hence mode 1777.
node_ckpt_volume() {
	local class
	NODE_CKPT_DIR=$(mktemp -d "/tmp/tfjob-e2e-$E2E_NAME-XXXXXX")
	chmod 1777 "$NODE_CKPT_DIR"
	NODE_CKPT_PV=$E2E_NS-ckpt
	class=$(kubectl get storageclass -o jsonpath='{range .items[?(@.metadata.annotations.storageclass\.kubernetes\.io/is-default-class=="true")]}{.metadata.name}{end}')
	kubectl apply -f - >/dev/null <<YAML || e2e_fail "cannot create the checkpoint volume"
apiVersion: v1
kind: PersistentVolume
metadata: {name: $NODE_CKPT_PV}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: "$class"
  claimRef: {namespace: $E2E_NS, name: ckpt}
  hostPath: {path: $NODE_CKPT_DIR, type: Directory}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ckpt, namespace: $E2E_NS}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: "$class"
  resources: {requests: {storage: 1Gi}}
YAML
}

# node_lib_cleanup: stops the watch, removes the volume and its directory.
node_lib_cleanup() {
	if [ -n "$NODE_WATCH_PID" ]; then
		kill "$NODE_WATCH_PID" 2>/dev/null || true
		wait "$NODE_WATCH_PID" 2>/dev/null || true
		NODE_WATCH_PID=""
	fi
	[ -z "$NODE_WATCH_FILE" ] || rm -f "$NODE_WATCH_FILE"
	[ -z "$NODE_CKPT_PV" ] || kubectl delete pv "$NODE_CKPT_PV" --wait=false >/dev/null 2>&1 || true
	[ -z "$NODE_CKPT_DIR" ] || rm -rf "$NODE_CKPT_DIR"
}

# latest_ckpt: the global step of the newest checkpoint (model-<step>.tfjc),
# or nothing.
latest_ckpt() {
	find "$NODE_CKPT_DIR" -maxdepth 1 -name 'model-*.tfjc' -printf '%f\n' 2>/dev/null |
		sed -n 's/^model-\([0-9]*\)\.tfjc$/\1/p' | sort -n | tail -n 1
}

# log_steps POD: the global steps of the pod's TFJ_PROGRESS records, one a
# line, in the order printed (the coordinator prints one every 100 steps).
log_steps() {
	kubectl -n "$E2E_NS" logs "$1" -c tensorflow 2>/dev/null |
		sed -n 's/^TFJ_PROGRESS .*"step":\([0-9]*\).*/\1/p'
}

# wait_ckpt_after STEP LIMIT_S: waits for a checkpoint of a step above STEP
# and sets CKPT to its step.
wait_ckpt_after() {
	local deadline=$((SECONDS + $2))
	while :; do
		CKPT=$(latest_ckpt)
		[ -n "$CKPT" ] && [ "$CKPT" -gt "$1" ] && return 0
		[ $SECONDS -lt $deadline ] || e2e_fail "no checkpoint after step $1 within $2 s"
		sleep 0.5
	done
}

# replica_copies JOB TYPE INDEX: how many tfjob-runtime processes of that
# replica run now, on any node. The operator gives every container the
# replica's identity in its environment (TFJOB_JOB_NAMESPACE, TFJOB_JOB_NAME,
# TFJOB_REPLICA_TYPE, TFJOB_REPLICA_INDEX), and the trainer inherits it. A
# process being reaped has no readable environment and is not counted.
replica_copies() {
	local p env n=0
	for p in $(pgrep -x tfjob-runtime || true); do
		env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
		grep -qx "TFJOB_JOB_NAMESPACE=$E2E_NS" <<<"$env" &&
			grep -qx "TFJOB_JOB_NAME=$1" <<<"$env" &&
			grep -qx "TFJOB_REPLICA_TYPE=$2" <<<"$env" &&
			grep -qx "TFJOB_REPLICA_INDEX=$3" <<<"$env" && n=$((n + 1))
	done
	echo "$n"
}

# twice_watch_start JOB TYPE:INDEX...: samples replica_copies of each
# replica twice a second in the background for the rest of the test and
# writes a line for every sample that found a replica running twice.
# twice_watch_check says whether one did.
twice_watch_start() {
	local job=$1
	shift
	NODE_WATCH_FILE=$(mktemp "/tmp/tfjob-e2e-$E2E_NAME-twice-XXXXXX")
	(
		trap - EXIT
		local r n
		while :; do
			for r in "$@"; do
				n=$(replica_copies "$job" "${r%:*}" "${r#*:}")
				[ "$n" -le 1 ] || echo "$(date -u +%H:%M:%S) $r: $n copies" >>"$NODE_WATCH_FILE"
			done
			sleep 0.5
		done
	) &
	NODE_WATCH_PID=$!
}

# wait_one_copy JOB TYPE INDEX LIMIT_S: waits until exactly one trainer of
# the replica runs (its container has started), so the watch above is seen
# to find what it counts.
wait_one_copy() {
	local n deadline=$((SECONDS + $4))
	while :; do
		n=$(replica_copies "$1" "$2" "$3")
		[ "$n" = 1 ] && return 0
		[ $SECONDS -lt $deadline ] || e2e_fail "$2 $3 of $1: $n trainer processes after $4 s, wanted 1"
		sleep 0.5
	done
}

# twice_watch_check WHAT: fails when the watch saw a replica run twice.
twice_watch_check() {
	[ -s "$NODE_WATCH_FILE" ] && e2e_fail "$1: a replica ran twice at once: $(head -n 3 "$NODE_WATCH_FILE")"
	kill -0 "$NODE_WATCH_PID" 2>/dev/null || e2e_fail "$1: the watch for replicas running twice stopped"
	return 0
}

pod_field() { kubectl -n "$E2E_NS" get pod "$1" -o jsonpath="$2" 2>/dev/null || true; }

# wait_replaced POD OLD_UID LIMIT_S: waits for a pod of that name with
# another uid and sets NEW_UID to it.
wait_replaced() {
	local deadline=$((SECONDS + $3))
	while :; do
		NEW_UID=$(pod_field "$1" '{.metadata.uid}')
		[ -n "$NEW_UID" ] && [ "$NEW_UID" != "$2" ] && return 0
		[ $SECONDS -lt $deadline ] || e2e_fail "$1 not replaced within $3 s"
		sleep 1
	done
}

# wait_deleting POD LIMIT_S: waits for the pod's deletionTimestamp.
wait_deleting() {
	local deadline=$((SECONDS + $2))
	until [ -n "$(pod_field "$1" '{.metadata.deletionTimestamp}')" ]; do
		[ $SECONDS -lt $deadline ] || e2e_fail "$1 not deleted (evicted) within $2 s"
		sleep 1
	done
}

# wait_progress POD LIMIT_S: waits for a TFJ_PROGRESS record in its log.
wait_progress() {
	local deadline=$((SECONDS + $2))
	until [ -n "$(log_steps "$1" | head -n 1)" ]; do
		[ $SECONDS -lt $deadline ] || e2e_fail "$1 printed no progress in $2 s"
		sleep 0.5
	done
}

# job_restarts JOB: "PS/Worker" restarts counted in the status (0 when unset).
job_restarts() {
	local p w
	p=$(kubectl -n "$E2E_NS" get tfjob "$1" -o jsonpath='{.status.replicaStatuses.PS.restarts}')
	w=$(kubectl -n "$E2E_NS" get tfjob "$1" -o jsonpath='{.status.replicaStatuses.Worker.restarts}')
	echo "${p:-0}/${w:-0}"
}

# node_replica TYPE POD-LINES [MORE-FLAGS]: a restricted replica of the mlp
# trainer that checkpoints into the shared volume every 200 steps (the
# coordinator writes, a restarted ps restores its shard from it); POD-LINES
# go into the pod spec (placement), MORE-FLAGS (each starting with ", ")
# after the trainer's flags.
NODE_SC='securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}'
NODE_CSC='securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}'
node_replica() {
	cat <<EOR
    $1:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          $NODE_SC
$2
          volumes: [{name: ckpt, persistentVolumeClaim: {claimName: ckpt}}]
          containers:
            - name: tensorflow
              image: localhost/tfjob-agent:dev
              imagePullPolicy: IfNotPresent
              command: ["tfjob-agent", "--", "tfjob-runtime", "train",
                        "--model", "mlp", "--batch-size", "64",
                        "--checkpoint-dir", "/ckpt", "--checkpoint-steps", "200"$3]
              volumeMounts: [{name: ckpt, mountPath: /ckpt}]
              resources:
                requests: {cpu: 100m, memory: 64Mi}
                limits: {memory: 512Mi}
              $NODE_CSC
EOR
}

# node_placement REQUIRED-NODES PREFERRED-NODE [MORE-TOLERATIONS]: the
# template lines that allow only REQUIRED-NODES (comma-separated) and prefer
# one of them, with the extra nodes' taint tolerated (and MORE-TOLERATIONS,
# each starting with ", ").
node_placement() {
	cat <<EOP
          tolerations: [{key: $TB_EXTRA_TAINT_KEY, operator: Exists, effect: NoSchedule}${3:-}]
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                  - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$1]}]
              preferredDuringSchedulingIgnoredDuringExecution:
                - weight: 100
                  preference: {matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$2]}]}
EOP
}
