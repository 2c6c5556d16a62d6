# shellcheck shell=bash
# Helpers for the smoke tests (sourced). Each test makes its own namespace,
# removes it on exit, waits with bounded timeouts and prints diagnostics on
# failure.
set -euo pipefail
SMOKE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$SMOKE_DIR/../cluster/env"
# The tag names what is inside: busybox from Debian, this kubectl, and the
# probe (bump the suffix when e2e/smoke/image or e2e/smoke/probe change).
SMOKE_IMAGE=localhost/tfjob-smoke:${K8S_VERSION}-2
SMOKE_NS=""

smoke_log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S)" "${SMOKE_NAME:-smoke}" "$*"; }

smoke_fail() {
    smoke_log "FAIL: $*"
    if [ -n "$SMOKE_NS" ]; then
        echo "--- pods in $SMOKE_NS" && kubectl -n "$SMOKE_NS" get pods -o wide 2>&1 || true
        echo "--- events in $SMOKE_NS" &&
            kubectl -n "$SMOKE_NS" get events --sort-by=.lastTimestamp 2>&1 | tail -n 30 || true
    fi
    exit 1
}

smoke_cleanup() {
    [ -n "$SMOKE_NS" ] && kubectl delete namespace "$SMOKE_NS" --wait=false >/dev/null 2>&1 || true
}

# smoke_ns NAME [LABEL...]: creates a fresh namespace and arranges its removal.
smoke_ns() {
    local name=$1
    shift
    SMOKE_NS=smoke-$name-$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
    kubectl create namespace "$SMOKE_NS" >/dev/null || smoke_fail "cannot create namespace"
    trap smoke_cleanup EXIT
    [ $# -eq 0 ] || kubectl label namespace "$SMOKE_NS" "$@" >/dev/null
    smoke_log "namespace $SMOKE_NS"
}

# smoke_image: builds and loads the smoke image once (flock serialises
# parallel tests).
smoke_image() {
    exec 9>"$TB_STATE/smoke-image.lock"
    flock -w 600 9 || smoke_fail "timed out waiting for the image lock"
    if ! tb_have_image "$SMOKE_IMAGE"; then
        local ctx
        ctx=$(mktemp -d)
        cp /bin/busybox "$ctx/busybox"
        cp "$K8S_BIN/kubectl" "$ctx/kubectl"
        (cd "$SMOKE_DIR/probe" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" \
            go build -trimpath -ldflags '-s -w' -o "$ctx/probe" .) ||
            { rm -rf "$ctx"; smoke_fail "could not build the probe"; }
        "$SMOKE_DIR/../cluster/image" "$SMOKE_IMAGE" "$SMOKE_DIR/image/Dockerfile" "$ctx" ||
            { rm -rf "$ctx"; smoke_fail "could not build $SMOKE_IMAGE"; }
        rm -rf "$ctx"
    fi
    exec 9>&-
}

# wait_phase POD PHASE TIMEOUT_S: waits for a pod phase; fails early when the
# pod reaches a terminal phase other than the one wanted.
wait_phase() {
    local pod=$1 want=$2 limit=$3 phase deadline=$((SECONDS + $3))
    while :; do
        phase=$(kubectl -n "$SMOKE_NS" get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null || true)
        [ "$phase" = "$want" ] && return 0
        case $phase in Succeeded | Failed)
            echo "--- logs of $pod" && kubectl -n "$SMOKE_NS" logs "$pod" --all-containers 2>&1 | tail -n 40
            smoke_fail "pod $pod is $phase, wanted $want" ;;
        esac
        if [ $SECONDS -ge $deadline ]; then
            kubectl -n "$SMOKE_NS" describe pod "$pod" 2>&1 | tail -n 30
            smoke_fail "pod $pod still '${phase:-unknown}' after $limit s, wanted $want"
        fi
        sleep 0.5
    done
}

# restricted_sc: a container securityContext that passes Pod Security "restricted".
restricted_sc() {
    cat <<'EOS'
    securityContext:
      runAsNonRoot: true
      runAsUser: 65534
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
EOS
}
