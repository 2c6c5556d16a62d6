# shellcheck shell=bash disable=SC2034
# Shared settings for the test bed scripts (sourced, not executed).
# Paths are fixed and documented in docs/testbed.md.
TB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TB_DIR/versions.sh"
TB_CACHE=${TFJOB_CACHE:-/var/cache/tfjob}
TB_STATE=${TFJOB_STATE:-/var/lib/tfjob-testbed}
TB_LOGS=${TFJOB_LOGS:-/var/log/tfjob-testbed}
TB_RUN=$TB_STATE/run
TB_KUBECONFIG=$TB_STATE/kubeconfig
K8S_BIN=$TB_CACHE/kubernetes-$K8S_VERSION/bin
ETCD_BIN=$TB_CACHE/etcd-$ETCD_VERSION/bin
SCHED_PLUGINS_BIN=$TB_CACHE/scheduler-plugins-$SCHED_PLUGINS_VERSION/bin
COREDNS_BIN=$TB_CACHE/coredns-$COREDNS_VERSION/bin
HELM_BIN=$TB_CACHE/helm-$HELM_VERSION/bin
KUBE_ROUTER_BIN=$TB_CACHE/kube-router-$KUBE_ROUTER_VERSION/bin
KWOK_BIN=$TB_CACHE/kwok-$KWOK_VERSION/bin
PAUSE_DIR=$TB_CACHE/pause-$K8S_VERSION-$PAUSE_TAG
PAUSE_IMAGE=localhost/pause:$PAUSE_TAG
COREDNS_IMAGE=localhost/coredns:${COREDNS_VERSION#v}

# Addresses. Everything stays on this machine: the node address lives on a
# dummy interface of our own, pods on a bridge of our own.
TB_DUMMY=tfjob0
TB_NODE_IP=10.213.0.1
TB_BRIDGE=tfjbr0
TB_POD_CIDR=10.214.0.0/16
TB_SERVICE_CIDR=10.215.0.0/16
TB_API_SVC_IP=10.215.0.1
TB_DNS_IP=10.215.0.10
TB_CLUSTER_DOMAIN=cluster.local
TB_NODE_NAME=tfjob-node
TB_API_PORT=6443

tb_log() { printf '%s [testbed] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
tb_die() { tb_log "ERROR: $*"; exit 1; }

# Go settings for every build: the installed toolchain only, no cgo, modules
# resolved through the proxy.
tb_go_env() {
    export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
    # The checksum database mirror reachable here lags behind the newest
    # Kubernetes patch; the wrapper's committed go.sum pins its hashes.
    export GONOSUMDB=k8s.io/kubernetes
}

TB_CONTAINERD_SOCK=/run/tfjob-testbed/containerd/containerd.sock
TB_CONTAINERD_STATE=/run/tfjob-testbed/containerd
TB_PKI=$TB_STATE/pki
TB_CONF=$TB_STATE/config
# Start order; `down` stops them in reverse.
TB_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy
    kube-router)
# kube-router's health port (all interfaces: it has no address flag).
TB_KUBE_ROUTER_HEALTH_PORT=20244

tb_ctr() { ctr --address "$TB_CONTAINERD_SOCK" -n k8s.io "$@"; }

# tb_have_image NAME: the image is in the test bed's containerd. (The list is
# read whole first: `ctr ... | grep -q` fails under pipefail when grep stops
# reading early.)
tb_have_image() {
    local list
    list=$(tb_ctr images ls -q) || return 1
    grep -qxF -- "$1" <<<"$list"
}

# Binary path of a component (used to start it and to recognise its pid).
# An extra node's components are named COMPONENT@NODE (e2e/cluster/node).
tb_bin() {
    case ${1%@*} in
    etcd) echo "$ETCD_BIN/etcd" ;;
    containerd) echo /usr/bin/containerd ;;
    scheduler-plugins) echo "$SCHED_PLUGINS_BIN/scheduler" ;;
    kube-router) echo "$KUBE_ROUTER_BIN/kube-router" ;;
    prometheus) echo /usr/bin/prometheus ;;
    kwok) echo "$KWOK_BIN/kwok" ;;
    *) echo "$K8S_BIN/${1%@*}" ;;
    esac
}

# tb_pid NAME prints the recorded pid of NAME if that process is alive and
# still runs NAME's binary; otherwise prints nothing and fails.
tb_pid() {
    local f=$TB_RUN/$1.pid pid exe
    [ -f "$f" ] || return 1
    pid=$(cat "$f")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    [ "${exe% (deleted)}" = "$(tb_bin "$1")" ] || return 1
    echo "$pid"
}

tb_log_tail() {
    local name=$1
    echo "----- last 40 lines of $TB_LOGS/$name.log -----" >&2
    tail -n 40 "$TB_LOGS/$name.log" >&2 || true
    echo "-----" >&2
}

# Starting and waiting for a test bed process (up, gang-scheduler).
start() { # NAME ARGS... (binary from tb_bin)
    local name=$1
    shift
    if tb_pid "$name" >/dev/null; then return 0; fi
    local bin
    bin=$(tb_bin "$name")
    # Logs append across restarts; keep one older generation past 50 MiB.
    if [ "$(stat -c %s "$TB_LOGS/$name.log" 2>/dev/null || echo 0)" -gt 52428800 ]; then
        mv "$TB_LOGS/$name.log" "$TB_LOGS/$name.log.1"
    fi
    echo "=== $(date -u +%FT%TZ) starting $name" >>"$TB_LOGS/$name.log"
    # The daemon keeps no descriptor but 0-2: not this script's lock (fd 8),
    # nor a lock its caller holds (`flock FILE ctest ...` hands every child
    # the file's descriptor, and a daemon holding it holds the lock for as
    # long as it runs). The pid is written by the process that then execs
    # the binary: setsid forks when it is a process group leader, and the
    # pid of `$!` would then be gone.
    rm -f "$TB_RUN/$name.pid"
    # TB_NETNS: the component runs in that network namespace (an extra
    # node's); nsenter enters it and execs the binary under the same pid.
    local pre=()
    [ -z "${TB_NETNS:-}" ] || pre=(nsenter "--net=/run/netns/$TB_NETNS")
    # shellcheck disable=SC2016
    setsid bash -c 'for f in /proc/$$/fd/*; do fd=${f##*/}; [ "$fd" -gt 2 ] && exec {fd}>&-; done
        echo $$ >"$0"; exec "$@"' "$TB_RUN/$name.pid" "${pre[@]}" "$bin" "$@" \
        >>"$TB_LOGS/$name.log" 2>&1 </dev/null 8>&- &
    local pid=$!
    for _ in $(seq 1 50); do
        tb_pid "$name" >/dev/null && break
        sleep 0.1
    done
    pid=$(cat "$TB_RUN/$name.pid" 2>/dev/null || echo "$pid")
    tb_log "started $name (pid $pid)"
}

wait_for() { # NAME TIMEOUT_S CMD...
    local name=$1 limit=$2
    shift 2
    local deadline=$((SECONDS + limit))
    while ! "$@" >/dev/null 2>&1; do
        if ! tb_pid "$name" >/dev/null; then
            tb_log_tail "$name"
            tb_die "$name exited during start-up"
        fi
        if [ $SECONDS -ge $deadline ]; then
            tb_log_tail "$name"
            tb_die "$name not ready after $limit s"
        fi
        sleep 0.5
    done
}

curl_ok() { curl -sf --max-time 2 "$@"; }

# tb_alive PID: the process exists and is not a zombie (PID 1 on this kind of
# machine reaps orphans late, and kill -0 succeeds on zombies).
tb_alive() {
    local st
    st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}

# tb_stop NAME [SIGNAL]: SIGNAL (TERM), wait up to 15 s, then KILL.
tb_stop() {
    local name=$1 sig=${2:-TERM} pid
    pid=$(tb_pid "$name") || { rm -f "$TB_RUN/$name.pid"; return 0; }
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 75); do
        tb_alive "$pid" || break
        sleep 0.2
    done
    if tb_alive "$pid"; then
        tb_log "$name (pid $pid) did not stop; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 1 25); do tb_alive "$pid" || break; sleep 0.2; done
    fi
    rm -f "$TB_RUN/$name.pid"
    tb_log "stopped $name"
}

# tb_umount_under DIR: unmounts everything at or below DIR, deepest first.
tb_umount_under() {
    local m
    awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print $2 }' /proc/self/mounts |
        sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || tb_log "could not unmount $m"
    done
}

# tb_kill_shims SOCKET: containerd shims outlive their containerd by design;
# the ones bound to SOCKET (on their command line) are killed by pid.
tb_kill_shims() {
    local f pid
    for f in $(grep -lsF -- "$1" /proc/[0-9]*/cmdline || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        case $(readlink "/proc/$pid/exe" 2>/dev/null) in
        *containerd-shim*) kill -KILL "$pid" 2>/dev/null && tb_log "killed leftover shim $pid" ;;
        esac
    done
}

# Extra nodes (e2e/cluster/node, docs/testbed.md "Multi-node"): node I (2..9)
# is tfjob-node-I in network namespace tfjob-node-I, address 10.213.0.I on
# the namespace's end of a veth pair whose host end is tfjvI, pods in
# 10.214.(I-1).0/24 on a bridge of its own. Their taint keeps the pods of
# single-node tests off them; multi-node tests tolerate it.
TB_NODE_MAX=9
TB_EXTRA_TAINT_KEY=testbed.tfjob.io/extra-node
TB_NODES_DIR=$TB_STATE/nodes
tb_node_ip() { echo "${TB_NODE_IP%.*}.$1"; }
tb_node_pod_cidr() { local p=${TB_POD_CIDR%.*.*}; echo "$p.$(($1 - 1)).0/24"; }
tb_node_sock() { echo "/run/tfjob-testbed/$TB_NODE_NAME-$1/containerd/containerd.sock"; }
# tb_node_indexes: the indexes of the extra nodes that have state here.
tb_node_indexes() {
    local d
    for d in "$TB_NODES_DIR/$TB_NODE_NAME"-[2-9]; do
        [ -d "$d" ] && echo "${d##*-}"
    done
    return 0
}
