"""bench/operator (issues #4 and #8): N TFJobs of 1 ps + 4 workers against
the test bed's real kube-apiserver, with this program playing the kubelet.

The operator under test runs as a local process with the test bed's admin
kubeconfig, restricted to a dedicated namespace. The pods carry a
nodeSelector that matches no node, so the scheduler and the real kubelet
leave them alone and no node capacity limits the run; this program marks
every new pod Running and, one poll later, every worker pod Succeeded
through the status subresource (the same patches itest_operator.c sends).

Measured: seconds until all N*5 pods exist, seconds until all N jobs are
Succeeded, API requests the operator sent (its own client-side counters:
tfjob_operator_api_requests_total for ours, controller-runtime's
rest_client_requests_total for Kubeflow's training-operator) per job, idle
requests/s over 30 s after the last job finished, peak RSS (VmHWM) and CPU
seconds of the operator process.

Usage: bench_operator.py --impl ours|kubeflow --bin PATH --jobs N --out FILE
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import procmon  # noqa: E402

VWC_NAME = "validator.training-operator.kubeflow.org"
VWC_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + VWC_NAME
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # fixed in training-operator v1.8 and v1.9
# The test bed's own operator (helm install, all namespaces): paused while
# Kubeflow's runs, see pause_testbed_operator().
TESTBED_NS = "tfjob-system"
TESTBED_OP = "/apis/apps/v1/namespaces/%s/deployments/tfjob-operator" % TESTBED_NS
SEL = {"tfjob-bench/no-such-node": "true"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Api:
    """Plain HTTP to `kubectl proxy` on loopback (one connection per thread)."""

    def __init__(self, port):
        self.port = port
        self.local = threading.local()

    def req(self, method, path, body=None, ctype="application/json"):
        for attempt in range(5):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                data = json.dumps(body).encode() if body is not None else None
                c.request(method, path, body=data, headers={"Content-Type": ctype} if data else {})
                r = c.getresponse()
                out = r.read()
                return r.status, (json.loads(out) if out else None)
            except (OSError, http.client.HTTPException):
                self.local.c = None
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError("%s %s failed" % (method, path))


def tfjob(ns, name, workers, managed_by):
    tmpl = {"spec": {"nodeSelector": SEL, "containers": [
        {"name": "tensorflow", "image": "localhost/tfjob-bench:1"}]}}
    run = {"cleanPodPolicy": "Running"}
    if managed_by:
        run["managedBy"] = managed_by
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runPolicy": run, "tfReplicaSpecs": {
                "PS": {"replicas": 1, "restartPolicy": "Never", "template": tmpl},
                "Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": tmpl}}}}


RUNNING = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "tensorflow", "image": "localhost/tfjob-bench:1",
                                             "imageID": "", "ready": True, "restartCount": 0,
                                             "started": True, "state": {"running": {
                                                 "startedAt": "2026-01-01T00:00:00Z"}}}]}}
SUCCEEDED = {"status": {"phase": "Succeeded", "containerStatuses": [
    {"name": "tensorflow", "image": "localhost/tfjob-bench:1", "imageID": "", "ready": False,
     "restartCount": 0, "started": False, "state": {"terminated": {
         "exitCode": 0, "reason": "Completed", "startedAt": "2026-01-01T00:00:00Z",
         "finishedAt": "2026-01-01T00:01:00Z"}}}]}}


def mount_webhook_certs(api, ns):
    """Plays the kubelet's secret volume for Kubeflow's cert rotator: it
    waits until the certificates it put into the Secret appear in its
    certificate directory (in a cluster, a mounted volume)."""
    import base64
    st, sec = api.req("GET", "/api/v1/namespaces/%s/secrets/training-operator-webhook-cert" % ns)
    data = (sec or {}).get("data") or {}
    if st != 200 or not all(k in data for k in ("ca.crt", "tls.crt", "tls.key")):
        return False
    os.makedirs(CERT_DIR, exist_ok=True)
    for k in ("ca.crt", "tls.crt", "tls.key"):
        with open(os.path.join(CERT_DIR, k), "wb") as f:
            f.write(base64.b64decode(data[k]))
    return True


def pause_testbed_operator(api):
    """Kubeflow's operator (v1.9) acts only on TFJobs whose runPolicy.managedBy
    is unset or its own name, and so does the test bed's helm-installed
    tfjob-operator, which watches every namespace. For Kubeflow's runs the
    jobs carry no managedBy and the test bed's operator is scaled to 0 until
    the run ends. Returns the replica count to restore, or None."""
    st, d = api.req("GET", TESTBED_OP)
    if st != 200:
        return None
    n = (d.get("spec") or {}).get("replicas", 1)
    api.req("PATCH", TESTBED_OP, {"spec": {"replicas": 0}}, "application/merge-patch+json")
    t0 = time.time()
    while time.time() - t0 < 120:
        st, pl = api.req("GET", "/api/v1/namespaces/%s/pods" % TESTBED_NS)
        if st == 200 and not [p for p in pl.get("items", [])
                              if p["metadata"]["name"].startswith("tfjob-operator-")]:
            break
        time.sleep(1)
    return n


def scrape(url, impl):
    """Total API requests the operator has sent, from its /metrics."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    name = "tfjob_operator_api_requests_total" if impl == "ours" else "rest_client_requests_total"
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def tfjob_events(api, ns):
    """Events about the TFJobs of the namespace, as the API server stores
    them: the same source for both operators. Their request counters are
    not one: ours counts the event posts, while Kubeflow's client-go counter
    reported fewer requests per job than its creates and events add up to.
    Repeated events count with their `count`."""
    st, el = api.req("GET", "/api/v1/namespaces/%s/events?fieldSelector=involvedObject.kind%%3DTFJob"
                     % ns)
    if st != 200:
        return None
    return sum(e.get("count") or 1 for e in el.get("items", []))


def rss_anon_mib(pid):
    """Private (anonymous) resident memory now: the process's own heap and
    stacks, without the shared-library pages VmHWM also counts. The kernel
    keeps no high-water mark for it, so the benchmark samples it."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def proc_figures(pid):
    hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    rest = s[s.rfind(")") + 2:].split()
    cpu = (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    return hwm / 1024.0, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["ours", "kubeflow"], required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--workers", type=int, default=4)
    # The client rate limit of both operators (Kubeflow: --kube-api-qps and
    # --kube-api-burst, one token bucket shared by all its clients; ours:
    # --qps, --burst). 20/30 is Kubeflow's default.
    ap.add_argument("--qps", default="20")
    ap.add_argument("--burst", default="30")
    ap.add_argument("--threads", default="4")
    ap.add_argument("--idle_secs", type=float, default=30)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--label", default="", help="name of this variant in the report")
    # runPolicy.managedBy on every benchmark job, and --managed-by for ours:
    # a helm-installed tfjob-operator watching all namespaces then leaves
    # the jobs alone (it only acts on jobs managed by
    # kubeflow.org/training-operator). Kubeflow's own runs leave the field
    # out (v1.9 would skip the jobs otherwise) and pause the test bed's
    # operator instead. "" turns this off.
    ap.add_argument("--managed-by", default="tfjob-bench.example.com/operator")
    ap.add_argument("--rep", type=int, default=0, help="repetition number, for the report")
    ap.add_argument("--peer_version", default="", help="Kubeflow's version, for the report")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.impl == "kubeflow":
        a.managed_by = ""

    kc = os.environ["KUBECONFIG"]
    ns = "tfjob-bench-%s-%d" % (a.impl, int(time.time()))
    logdir = os.path.dirname(os.path.abspath(a.out))
    pport = free_port()
    proxy = subprocess.Popen(["kubectl", "proxy", "--address", "127.0.0.1", "--port", str(pport),
                              "--accept-hosts", "^127\\.0\\.0\\.1$"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = Api(pport)
    op = None
    restore = None
    result = {"impl": a.impl, "label": a.label or a.impl, "jobs": a.jobs,
              "workers_per_job": a.workers, "namespace": ns, "qps": a.qps, "burst": a.burst,
              "rep": a.rep, "managed_by": a.managed_by, "peer_version": a.peer_version}
    try:
        for _ in range(50):
            try:
                if api.req("GET", "/version")[0] == 200:
                    break
            except RuntimeError:
                pass
            time.sleep(0.2)
        st, _ = api.req("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if st not in (200, 201):
            raise SystemExit("cannot create namespace %s: HTTP %d" % (ns, st))
        mport, hport = free_port(), free_port()
        if a.impl == "ours":
            cmd = [a.bin, "--kubeconfig", kc, "--namespace", ns, "--qps", a.qps,
                   "--burst", a.burst, "--metrics-addr", "127.0.0.1:%d" % mport,
                   "--workers", a.threads, "--log-level", "warn"]
            if a.managed_by:
                cmd += ["--managed-by", a.managed_by]
            env = os.environ
            ready = "http://127.0.0.1:%d/readyz" % mport
        else:
            # Its webhook certificate rotator waits for a Secret in the
            # operator's namespace (MY_POD_NAMESPACE) and a
            # ValidatingWebhookConfiguration to inject its CA into before it
            # starts any controller: give it an empty Secret and a
            # configuration without webhooks, so the rotator is satisfied and
            # no admission webhook is actually called (webhooks disabled).
            api.req("POST", "/api/v1/namespaces/%s/secrets" % ns, {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "training-operator-webhook-cert", "namespace": ns}})
            api.req("DELETE", VWC_PATH)
            api.req("POST", VWC_PATH.rsplit("/", 1)[0], {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": VWC_NAME}, "webhooks": []})
            restore = pause_testbed_operator(api)
            env = dict(os.environ, MY_POD_NAMESPACE=ns)
            cmd = [a.bin, "--kubeconfig", kc, "--namespace", ns, "--enable-scheme", "tfjob",
                   "--controller-threads", a.threads,
                   "--kube-api-qps", a.qps, "--kube-api-burst", a.burst,
                   "--metrics-bind-address", "127.0.0.1:%d" % mport,
                   "--health-probe-bind-address", "127.0.0.1:%d" % hport,
                   "--webhook-server-port", str(free_port()),
                   "--zap-log-level", "error"]
            ready = "http://127.0.0.1:%d/readyz" % hport
        result["command"] = " ".join(cmd)
        oplog = open(os.path.join(logdir, "operator-%s-%d-%d.log" % (a.label or a.impl, a.jobs, a.rep)),
                     "w")
        op = subprocess.Popen(cmd, stdout=oplog, stderr=subprocess.STDOUT, env=env)
        t_ready0 = time.time()
        certs_written = a.impl != "kubeflow"
        while True:
            if not certs_written:
                certs_written = mount_webhook_certs(api, ns)
            if op.poll() is not None:
                raise SystemExit("operator exited with %d; see %s" % (op.returncode, oplog.name))
            try:
                if urllib.request.urlopen(ready, timeout=2).status == 200:
                    break
            except OSError:
                pass
            if time.time() - t_ready0 > 120:
                raise SystemExit("operator not ready after 120 s")
            time.sleep(0.2)
        result["ready_s"] = time.time() - t_ready0
        metrics = "http://127.0.0.1:%d/metrics" % mport
        req0 = scrape(metrics, a.impl)
        # Memory of the idle operator before any job exists: the base the
        # per-job cost adds to.
        result["rss_mib_ready"] = proc_figures(op.pid)[0]
        result["rss_anon_mib_ready"] = rss_anon_mib(op.pid)
        result["load_start"] = procmon.loadavg()

        t0 = time.time()
        path = "/apis/kubeflow.org/v1/namespaces/%s/tfjobs" % ns
        with ThreadPoolExecutor(4) as ex:
            codes = list(ex.map(lambda i: api.req("POST", path, tfjob(ns, "job-%04d" % i,
                                                                      a.workers, a.managed_by))[0],
                                range(a.jobs)))
        if any(c not in (200, 201) for c in codes):
            raise SystemExit("TFJob create failed: %s" % sorted(set(codes)))
        result["create_s"] = time.time() - t0
        want_pods = a.jobs * (1 + a.workers)
        patched_run, patched_done = set(), set()
        t_pods = t_done = None
        max_pods = 0
        seen = set()
        pods_path = "/api/v1/namespaces/%s/pods" % ns
        anon_peak = rss_anon_mib(op.pid)
        while time.time() - t0 < a.timeout:
            anon_peak = max(anon_peak, rss_anon_mib(op.pid))
            st, pl = api.req("GET", pods_path)
            items = pl["items"] if st == 200 else []
            max_pods = max(max_pods, len(items))
            # PS pods of finished jobs are deleted (cleanPodPolicy) while
            # later jobs are still being created, so count every pod name
            # ever seen: each pod lives at least until this loop patched it.
            seen.update(p["metadata"]["name"] for p in items)
            if t_pods is None and len(seen) >= want_pods:
                t_pods = time.time() - t0
            todo = []
            for p in items:
                name = p["metadata"]["name"]
                phase = p.get("status", {}).get("phase")
                if p["metadata"].get("deletionTimestamp"):
                    continue
                if phase == "Pending" and name not in patched_run:
                    todo.append((name, RUNNING))
                    patched_run.add(name)
                elif phase == "Running" and "-worker-" in name and name not in patched_done:
                    todo.append((name, SUCCEEDED))
                    patched_done.add(name)
            with ThreadPoolExecutor(4) as ex:
                list(ex.map(lambda t: api.req("PATCH", pods_path + "/" + t[0] + "/status", t[1],
                                              "application/strategic-merge-patch+json"), todo))
            st, jl = api.req("GET", path)
            done = 0
            for j in jl.get("items", []) if st == 200 else []:
                for c in j.get("status", {}).get("conditions", []) or []:
                    if c.get("type") == "Succeeded" and c.get("status") == "True":
                        done += 1
            if done >= a.jobs:
                t_done = time.time() - t0
                break
            time.sleep(0.5)
        result["max_pods_at_once"] = max_pods
        result["pods_seen"] = len(seen)
        result["all_pods_s"] = t_pods
        result["all_succeeded_s"] = t_done
        req1 = scrape(metrics, a.impl)
        result["requests"] = req1 - req0
        result["requests_per_job"] = (req1 - req0) / a.jobs
        rss, cpu = proc_figures(op.pid)
        result["rss_mib_peak"], result["cpu_s_busy"] = rss, cpu
        t_idle = time.time()
        while time.time() - t_idle < a.idle_secs:
            anon_peak = max(anon_peak, rss_anon_mib(op.pid))
            time.sleep(0.5)
        result["rss_anon_mib_peak"] = anon_peak
        result["rss_anon_mib_end"] = rss_anon_mib(op.pid)
        req2 = scrape(metrics, a.impl)
        result["idle_req_per_s"] = (req2 - req1) / a.idle_secs
        rss, cpu2 = proc_figures(op.pid)
        result["rss_mib_peak"], result["cpu_s_idle"] = rss, cpu2 - cpu
        result["load_end"] = procmon.loadavg()
        ev = tfjob_events(api, ns)
        if ev is not None:
            result["tfjob_events_per_job"] = ev / a.jobs
    finally:
        if op and op.poll() is None:
            op.send_signal(signal.SIGTERM)
            try:
                op.wait(15)
            except subprocess.TimeoutExpired:
                op.kill()
                op.wait()
        try:
            if a.impl == "kubeflow":
                api.req("DELETE", VWC_PATH)
            api.req("DELETE", "/api/v1/namespaces/" + ns)
            # The next run starts on a clean cluster: wait (bounded) until
            # the namespace controller has removed the jobs, pods, services
            # and events of this one.
            t_del = time.time()
            while time.time() - t_del < 300:
                if api.req("GET", "/api/v1/namespaces/" + ns)[0] == 404:
                    break
                time.sleep(1)
            result["ns_delete_s"] = time.time() - t_del
        except RuntimeError:
            pass
        # Only once the namespace is gone: the jobs carry no managedBy, so
        # the test bed's operator would otherwise take them up.
        if restore is not None:
            api.req("PATCH", TESTBED_OP, {"spec": {"replicas": restore}},
                    "application/merge-patch+json")
        proxy.terminate()
        proxy.wait()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
