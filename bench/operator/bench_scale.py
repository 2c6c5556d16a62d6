"""bench/operator, scale part (issue #30): N TFJobs of 1 ps + 4 workers on the
kwok scale test bed (e2e/cluster/kwok up 200), ours or Kubeflow's
training-operator, one operator at a time, on the test bed's API server.

Unlike bench_operator.py nothing here plays the kubelet: the pods select and
tolerate the fake nodes, and kwok takes them through Pending, Running and,
for the workers, an exit 0 after --run-for (pod annotations, docs/testbed.md
"Scale test bed"); the ps runs until the operator deletes it
(cleanPodPolicy Running). Measured from the API server's side (watches, see
kwatch.py), the same for both operators:
  - seconds from the first TFJob create until all N*5 pods exist and until
    all N jobs are Succeeded; pods created twice (a name with two UIDs) or
    never;
  - API requests per job and idle requests/s over --idle-s after the run
    (each operator's own client counter, as bench_operator.py);
  - peak RSS (VmHWM), peak private memory (smaps_rollup Private_*, sampled
    once a second), CPU seconds;
  - operator memory per cached pod: (RSS after the idle window - RSS when
    ready) / pods still in the namespace then (the ones its informers hold);
    the same with private memory;
  - starvation (--starve M): with the N finished jobs left in place, M new
    TFJobs created one a second; per job the seconds from its create until
    all its 5 pods exist, p50 and p99;
  - failover (--failover, ours only): 2 replicas with leader election; the
    leader is SIGKILLed once half the pods exist; pods created twice or
    never, and seconds from the kill until the new leader creates a pod.
A time series (pods created, RSS, private memory, CPU) goes into the JSON
for plot_scale.py.

Usage: bench_scale.py --impl ours|kubeflow --bin PATH --jobs N --out FILE
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_operator as bo  # noqa: E402
import kwatch  # noqa: E402
import procmon  # noqa: E402

LEASE = "tfjob-bench-leader"
TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Equal", "value": "fake",
              "effect": "NoSchedule"}
# At N = 5,000 this 2-core VM's kwok renews its 200 nodes' leases late and
# they go NotReady for moments; with the test bed's 30 s not-ready
# toleration the taint manager then evicts their pods, which the operator
# rightly recreates (run sc-5: 219 pods). The scale runs measure the
# operators, not that: their pods stay on a fake node that flaps.
STAY = [{"key": k, "operator": "Exists", "effect": "NoExecute"}
        for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


def tfjob(name, ns, workers, managed_by, run_for):
    def tmpl(annotations):
        return {"metadata": {"annotations": annotations},
                "spec": {"nodeSelector": {"type": "kwok"}, "tolerations": [TOLERATION] + STAY,
                         "containers": [{"name": "tensorflow", "image": "localhost/tfjob-bench:1"}]}}
    run = {"cleanPodPolicy": "Running"}
    if managed_by:
        run["managedBy"] = managed_by
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runPolicy": run, "tfReplicaSpecs": {
                "PS": {"replicas": 1, "restartPolicy": "Never", "template": tmpl({})},
                "Worker": {"replicas": workers, "restartPolicy": "OnFailure",
                           "template": tmpl({"kwok.tfjob/exit-code": "0",
                                             "kwok.tfjob/run-for": run_for})}}}}


def pod_names(job, workers):
    return ["%s-ps-0" % job] + ["%s-worker-%d" % (job, i) for i in range(workers)]


def op_command(a, kc, ns, mport, hport, replica):
    if a.impl == "ours":
        cmd = [a.bin, "--kubeconfig", kc, "--namespace", ns, "--qps", a.qps, "--burst", a.burst,
               "--metrics-addr", "127.0.0.1:%d" % mport, "--workers", a.threads,
               "--log-level", "warn", "--managed-by", a.managed_by]
        if a.failover:
            cmd += ["--leader-elect", "--leader-elect-namespace", ns,
                    "--leader-elect-name", LEASE]
        if a.debug_port:
            cmd += ["--debug-addr", "127.0.0.1:%d" % (a.debug_port + replica)]
        return cmd, os.environ, "http://127.0.0.1:%d/readyz" % mport
    cmd = [a.bin, "--kubeconfig", kc, "--namespace", ns, "--enable-scheme", "tfjob",
           "--controller-threads", a.threads, "--kube-api-qps", a.qps, "--kube-api-burst", a.burst,
           "--metrics-bind-address", "127.0.0.1:%d" % mport,
           "--health-probe-bind-address", "127.0.0.1:%d" % hport,
           "--webhook-server-port", str(bo.free_port()), "--zap-log-level", "error"]
    return cmd, dict(os.environ, MY_POD_NAMESPACE=ns), "http://127.0.0.1:%d/readyz" % hport


def kubeflow_prepare(api, ns):
    """As bench_operator.py: an empty webhook Secret and a configuration
    without webhooks satisfy its certificate rotator."""
    api.req("POST", "/api/v1/namespaces/%s/secrets" % ns, {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "training-operator-webhook-cert", "namespace": ns}})
    api.req("DELETE", bo.VWC_PATH)
    api.req("POST", bo.VWC_PATH.rsplit("/", 1)[0], {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": bo.VWC_NAME}, "webhooks": []})


def wait_ready(a, api, ns, ops, urls):
    certs = a.impl != "kubeflow"
    t0 = time.time()
    while True:
        if not certs:
            certs = bo.mount_webhook_certs(api, ns)
        for op, log, _ in ops:
            if op.poll() is not None:
                raise SystemExit("operator exited with %d; see %s" % (op.returncode, log))
        ok = 0
        for u in urls:
            try:
                ok += urllib.request.urlopen(u, timeout=2).status == 200
            except OSError:
                pass
        # With leader election: both replicas serving and one of them leading.
        if ok == len(urls) and (not a.failover or leader(api, ns, ops) is not None):
            return time.time() - t0
        if time.time() - t0 > 180:
            raise SystemExit("operator not ready after 180 s")
        time.sleep(0.2)


def identity(url):
    """The leader-election identity a replica of ours shows on /metrics
    (tfjob_operator_identity_info), or None."""
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return None
    m = re.search(r'^tfjob_operator_identity_info\{identity="([^"]*)"\}', text, re.M)
    return m.group(1) if m else None


def leader(api, ns, ops):
    """The replica (index into ops) the Lease names, or None."""
    st, ls = api.req("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (ns, LEASE))
    holder = ((ls or {}).get("spec") or {}).get("holderIdentity") if st == 200 else None
    for i, (op, _, metrics) in enumerate(ops):
        if holder and op.poll() is None and identity(metrics) == holder:
            return i
    return None


def create_jobs(api, ns, names, a):
    path = "/apis/kubeflow.org/v1/namespaces/%s/tfjobs" % ns
    with ThreadPoolExecutor(4) as ex:
        codes = list(ex.map(lambda n: api.req("POST", path, tfjob(n, ns, a.workers, a.managed_by,
                                                                  a.run_for))[0], names))
    if any(c not in (200, 201) for c in codes):
        raise SystemExit("TFJob create failed: %s" % sorted(set(codes)))


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))] if v else None


def starvation(api, ns, a, pods):
    """M new TFJobs one a second; seconds from each create until all its pods
    exist (None where they never did within --starve-timeout; starve_complete
    counts the ones that did, the percentiles are of those)."""
    created, failed = {}, 0
    path = "/apis/kubeflow.org/v1/namespaces/%s/tfjobs" % ns
    for i in range(a.starve):
        name = "new-%03d" % i
        t = time.time()
        # A create the loaded API server refuses is counted, not fatal: the
        # run's figures are already taken.
        try:
            st, _ = api.req("POST", path, tfjob(name, ns, a.workers, a.managed_by, a.run_for))
        except RuntimeError:
            st = 0
        if st in (200, 201):
            created[name] = t
        else:
            failed += 1
        time.sleep(max(0.0, t + 1.0 - time.time()))
    deadline = time.time() + (a.starve_timeout or a.timeout)
    lat = {}
    while time.time() < deadline and len(lat) < len(created):
        with pods.lock:
            for name, t in created.items():
                ts = [pods.first.get(p) for p in pod_names(name, a.workers)]
                if name not in lat and all(ts):
                    lat[name] = max(ts) - t
        time.sleep(0.5)
    v = list(lat.values())
    return {"starve_jobs": a.starve, "starve_create_failed": failed, "starve_complete": len(v),
            "starve_p50_s": pct(v, 50), "starve_p99_s": pct(v, 99),
            "starve_max_s": max(v) if v else None}


def counts(pods, a):
    """Pod names created twice (more than one UID) and expected ones never
    created."""
    want = [p for j in range(a.jobs) for p in pod_names("job-%05d" % j, a.workers)]
    with pods.lock:
        twice = sorted(n for n, u in pods.uids.items() if len(u) > 1)
        never = [n for n in want if n not in pods.uids]
    return twice, never


def own_metrics(url):
    """Ours: the lines of /metrics about the informer caches and the heap
    (bytes in use and free, trims), or [] when it cannot be read."""
    try:
        text = urllib.request.urlopen(url, timeout=10).read().decode()
    except OSError:
        return []
    return [ln for ln in text.splitlines()
            if ln.startswith(("tfjob_operator_informer_", "tfjob_operator_heap_"))]


def run(a, api, ns, kc, logdir, r):
    mport = [bo.free_port() for _ in range(2)]
    ops, urls = [], []
    if a.impl == "kubeflow":
        kubeflow_prepare(api, ns)
    # The test bed's own operator ignores ours' jobs (managedBy) but would
    # cache and decode their pods, on the same 2 cores: paused for both.
    r["restore"] = bo.pause_testbed_operator(api)
    for i in range(2 if a.failover else 1):
        cmd, env, url = op_command(a, kc, ns, mport[i], bo.free_port(), i)
        log = os.path.join(logdir, "scale-%s-%d-r%d-%d.log" % (r["label"], a.jobs, a.rep, i))
        ops.append((subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                     env=env), log, "http://127.0.0.1:%d/metrics" % mport[i]))
        urls.append(url)
    r["command"] = " ".join(cmd)
    r["_ops"] = ops
    r["ready_s"] = wait_ready(a, api, ns, ops, urls)
    lead = leader(api, ns, ops) if a.failover else 0
    if lead is None:
        raise SystemExit("no replica holds the Lease")
    pid = ops[lead][0].pid
    metrics = "http://127.0.0.1:%d/metrics" % mport[lead]
    req0 = bo.scrape(metrics, a.impl)
    r["rss_mib_ready"], cpu0 = bo.proc_figures(pid)
    rss_ready, priv_ready = kwatch.mem_kib(pid)
    r["smaps_top_ready"] = kwatch.smaps_top(pid)
    r["priv_mib_ready"] = priv_ready / 1024.0
    if a.impl == "ours":
        r["own_metrics_ready"] = own_metrics(metrics)
    r["load_start"] = procmon.loadavg()

    pods, jobs = r["_watch"]
    want = a.jobs * (1 + a.workers)
    t0 = time.time()
    samp = kwatch.ProcSampler(pid, pods, t0)
    samp.start()
    bed0 = procmon.bed_cpu()
    create_jobs(api, ns, ["job-%05d" % j for j in range(a.jobs)], a)
    r["create_s"] = time.time() - t0
    t_kill = t_lead = None
    last, t_last = None, time.time()
    while time.time() - t0 < a.timeout:
        if a.failover and t_kill is None and pods.created() >= want // 2:
            os.kill(pid, signal.SIGKILL)
            t_kill = time.time()
            r["killed_at_pods"] = pods.created()
            samp.stop = True
        if t_kill and t_lead is None and leader(api, ns, ops) not in (None, lead):
            t_lead = time.time()
        if pods.created() >= want and jobs.succeeded() >= a.jobs:
            break
        # A stuck run (jobs that never get their pods) ends after --stall-s
        # without progress rather than at --timeout.
        now = (pods.created(), jobs.succeeded())
        if now != last:
            last, t_last = now, time.time()
        elif time.time() - t_last > a.stall_s:
            r["stalled"] = True
            r["stalled_at"] = {"s": time.time() - t0, "pods": now[0], "succeeded": now[1]}
            break
        time.sleep(0.5)
    # What the run cost the cluster: the API server, etcd, the controllers,
    # the scheduler, the NetworkPolicy engine and kwok, up to this point.
    bed1 = procmon.bed_cpu()
    r["bed_cpu_s"] = {c: bed1[c] - bed0[c] for c in bed0}
    r["bed_cpu_s_total"] = sum(r["bed_cpu_s"].values())
    with pods.lock:
        times = sorted(pods.times)
    r["all_pods_s"] = times[want - 1] - t0 if len(times) >= want else None
    with jobs.lock:
        done = sorted(jobs.done.values())
    r["all_succeeded_s"] = done[a.jobs - 1] - t0 if len(done) >= a.jobs else None
    r["pods_created"] = len(times)
    twice, never = counts(pods, a)
    r["pods_created_twice"], r["pods_never_created"] = len(twice), len(never)
    r["pods_twice_names"], r["pods_never_names"] = twice[:20], never[:20]
    if a.failover:
        samp.stop = True
        r["failover_kill_s"] = t_kill - t0 if t_kill else None
        # Creates the killed leader had in flight land just after the kill:
        # the new leader's first create is the first pod seen after it holds
        # the Lease (polled every 0.5 s, so up to 0.5 s late).
        r["failover_takeover_s"] = t_lead - t_kill if t_lead else None
        later = pods.created_since(t_lead) if t_lead else None
        r["failover_recreate_s"] = later - t_kill if later else None
        return
    req1 = bo.scrape(metrics, a.impl)
    r["requests_per_job"] = (req1 - req0) / a.jobs
    r["cpu_s_busy"] = bo.proc_figures(pid)[1] - cpu0
    t_idle = time.time()
    time.sleep(a.idle_s)
    r["idle_req_per_s"] = (bo.scrape(metrics, a.impl) - req1) / (time.time() - t_idle)
    rss_end, priv_end = kwatch.mem_kib(pid)
    with pods.lock:
        cached = len(pods.live)
    r["cached_pods"] = cached
    r["rss_mib_end"], r["priv_mib_end"] = rss_end / 1024.0, priv_end / 1024.0
    if cached:
        r["rss_bytes_per_cached_pod"] = (rss_end - rss_ready) * 1024.0 / cached
        r["priv_bytes_per_cached_pod"] = (priv_end - priv_ready) * 1024.0 / cached
    r["rss_mib_peak"], cpu_end = bo.proc_figures(pid)
    r["smaps_top_end"] = kwatch.smaps_top(pid)
    if a.impl == "ours":
        # What each informer's cache holds (objects, bytes) and what the
        # heap holds (in use, free, trimmed): where the per-pod memory goes.
        r["informer_metrics"] = own_metrics(metrics)
    if a.debug_port and a.impl == "ours":
        # What the informers hold, for the memory reading (docs/benchmarks.md).
        try:
            r["debug_informers"] = urllib.request.urlopen(
                "http://127.0.0.1:%d/debug/informers" % a.debug_port, timeout=10).read().decode()[:20000]
        except OSError as e:
            r["debug_informers"] = "unavailable: %s" % e
    r["cpu_s_total"] = cpu_end - cpu0
    if a.starve:
        r.update(starvation(api, ns, a, pods))
    samp.stop = True
    r["rss_mib_peak"] = bo.proc_figures(pid)[0]
    r["priv_mib_peak"] = samp.peak_priv / 1024.0
    r["load_end"] = procmon.loadavg()
    ev = bo.tfjob_events(api, ns)
    if ev is not None:
        r["tfjob_events_per_job"] = ev / a.jobs
    r["series"] = samp.series


def cleanup(api, ns, r, a_jobs):
    for op, _, _ in r.pop("_ops", []):
        if op.poll() is None:
            op.send_signal(signal.SIGTERM)
            try:
                op.wait(15)
            except subprocess.TimeoutExpired:
                op.kill()
                op.wait()
    try:
        if r["impl"] == "kubeflow":
            api.req("DELETE", bo.VWC_PATH)
        # The operator is stopped: its pods are force-deleted so that the
        # namespace's deletion need not wait for kwok to finish each of them
        # (minutes at N = 5,000), as the next run would then start on a
        # loaded API server. One collection delete ends at the API server's
        # 60 s request limit (~2,500 pods a minute here) with what it
        # deleted so far: repeated until the pods are gone, at most 20 min.
        t = time.time()
        while time.time() - t < 1200:
            try:
                st, _ = api.req("DELETE", "/api/v1/namespaces/%s/pods" % ns,
                                {"apiVersion": "v1", "kind": "DeleteOptions",
                                 "gracePeriodSeconds": 0})
            except (RuntimeError, ValueError):
                st = 0
            if st == 200:
                break
        api.req("DELETE", "/api/v1/namespaces/" + ns)
        while time.time() - t < max(600, a_jobs) and api.req("GET", "/api/v1/namespaces/" + ns)[0] != 404:
            time.sleep(2)
        r["ns_delete_s"] = time.time() - t
    except (RuntimeError, ValueError) as e:  # ValueError: a reply that is not JSON
        r["cleanup_error"] = repr(e)
    # Only once the namespace is gone: Kubeflow's jobs carry no managedBy.
    if r.get("restore") is not None:
        api.req("PATCH", bo.TESTBED_OP, {"spec": {"replicas": r["restore"]}},
                "application/merge-patch+json")


def dump(r, path):
    with open(path, "w") as f:
        json.dump({k: v for k, v in r.items() if not k.startswith("_")}, f, indent=1,
                  default=repr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["ours", "kubeflow"], required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--qps", default="20")
    ap.add_argument("--burst", default="30")
    ap.add_argument("--threads", default="4")
    ap.add_argument("--run-for", default="2s", help="workers' run time on kwok (Go duration)")
    ap.add_argument("--idle-s", type=float, default=30)
    ap.add_argument("--starve", type=int, default=50, help="new jobs after the run, 1/s; 0: off")
    ap.add_argument("--starve-timeout", type=float, default=0,
                    help="s to wait for the new jobs' pods (default: --timeout)")
    ap.add_argument("--failover", action="store_true", help="ours: 2 replicas, leader killed")
    ap.add_argument("--debug-port", type=int, default=0, help="ours: --debug-addr port")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--stall-s", type=float, default=300, help="end a run without progress")
    ap.add_argument("--label", default="")
    ap.add_argument("--managed-by", default="tfjob-bench.example.com/operator")
    ap.add_argument("--rep", type=int, default=0)
    ap.add_argument("--peer_version", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    # A timeout's SIGTERM still cleans up (namespace, test bed operator) and
    # writes what was measured.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.impl == "kubeflow":
        a.managed_by = ""
        if a.failover:
            raise SystemExit("--failover: ours only")
    kc = os.environ["KUBECONFIG"]
    ns = "tfjob-scale-%s-%d" % (a.impl, int(time.time()))
    pport = bo.free_port()
    proxy = subprocess.Popen(["kubectl", "proxy", "--address", "127.0.0.1", "--port", str(pport),
                              "--accept-hosts", "^127\\.0\\.0\\.1$"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = bo.Api(pport)
    label = a.label or (a.impl + ("-failover" if a.failover else ""))
    r = {"impl": a.impl, "label": label, "jobs": a.jobs, "workers_per_job": a.workers,
         "namespace": ns, "qps": a.qps, "burst": a.burst, "rep": a.rep, "run_for": a.run_for,
         "failover": a.failover, "peer_version": a.peer_version}
    try:
        for _ in range(50):
            try:
                if api.req("GET", "/version")[0] == 200:
                    break
            except RuntimeError:
                pass
            time.sleep(0.2)
        st, nodes = api.req("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")
        r["kwok_nodes"] = len((nodes or {}).get("items", []))
        if not r["kwok_nodes"]:
            raise SystemExit("no kwok nodes: e2e/cluster/kwok up 200 first")
        st, _ = api.req("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if st not in (200, 201):
            raise SystemExit("cannot create namespace %s: HTTP %d" % (ns, st))
        pods, jobs = kwatch.PodWatch(pport, ns), kwatch.JobWatch(pport, ns)
        pods.start()
        jobs.start()
        r["_watch"] = (pods, jobs)
        run(a, api, ns, kc, os.path.dirname(os.path.abspath(a.out)), r)
    finally:
        w = r.pop("_watch", None)
        if w:
            w[0].stop = w[1].stop = True
        # What was measured is written before the cleanup, which talks to a
        # loaded API server, and again after it (its own figures).
        dump(r, a.out)
        try:
            cleanup(api, ns, r, a.jobs)
        except Exception as e:  # noqa: BLE001 - any failure here is reported, not fatal
            r["cleanup_error"] = repr(e)
        proxy.terminate()
        proxy.wait()
        dump(r, a.out)
    print(json.dumps({k: v for k, v in r.items() if k != "series"}))


if __name__ == "__main__":
    main()
