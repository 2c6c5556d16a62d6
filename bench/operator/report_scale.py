"""Markdown tables of the scale part (bench_scale.py) in OUT
(scale-<label>-<N>-r<rep>.json): per N, each figure as the median over the
repetitions with the range (min-max), the ratio of the medians, and the
failover runs. Usage: report_scale.py OUT"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from medians import cell, median, values  # noqa: E402

out = sys.argv[1]
runs = {}
for p in sorted(glob.glob(os.path.join(out, "scale-*.json"))):
    with open(p) as f:
        r = json.load(f)
    runs.setdefault((r["label"], r["jobs"]), []).append(r)
KEYS = [("all_pods_s", "s until all pods exist", "%.1f"),
        ("all_succeeded_s", "s until all jobs Succeeded", "%.1f"),
        ("requests_per_job", "API requests per job (each operator's own counter)", "%.1f"),
        ("tfjob_events_per_job", "events on the TFJobs per job", "%.1f"),
        ("idle_req_per_s", "idle requests/s after the run", "%.2f"),
        ("rss_mib_ready", "RSS MiB when ready", "%.1f"),
        ("rss_mib_peak", "peak RSS MiB (VmHWM)", "%.1f"),
        ("priv_mib_ready", "private MiB when ready (smaps Private_*)", "%.1f"),
        ("priv_mib_peak", "peak private MiB (sampled 1/s)", "%.1f"),
        ("cpu_s_busy", "CPU s until all Succeeded", "%.1f"),
        ("cpu_s_total", "CPU s incl. the idle window", "%.1f"),
        ("bed_cpu_s_total", "test bed CPU s until all Succeeded (API server, etcd, "
         "controllers, scheduler, kube-router, kwok, kubelet)", "%.0f"),
        ("cached_pods", "pods in the namespace at the end", "%d"),
        ("rss_bytes_per_cached_pod", "RSS bytes per cached pod", "%.0f"),
        ("priv_bytes_per_cached_pod", "private bytes per cached pod", "%.0f"),
        ("pods_created_twice", "pods created twice", "%d"),
        ("pods_never_created", "pods never created", "%d"),
        ("starve_complete", "new jobs whose pods all came within the wait", "%d"),
        ("starve_p50_s", "new-job latency p50 s (finished jobs in place)", "%.2f"),
        ("starve_p99_s", "new-job latency p99 s", "%.2f"),
        ("ns_delete_s", "s to delete the namespace afterwards", "%.0f")]
FAILOVER = [("all_pods_s", "s until all pods exist", "%.1f"),
            ("all_succeeded_s", "s until all jobs Succeeded", "%.1f"),
            ("killed_at_pods", "pods when the leader was killed", "%d"),
            ("failover_takeover_s", "s from the kill until the other replica holds the Lease",
             "%.1f"),
            ("failover_recreate_s", "s from the kill to the new leader's first create", "%.1f"),
            ("pods_created_twice", "pods created twice", "%d"),
            ("pods_never_created", "pods never created", "%d")]


for n in sorted({k[1] for k in runs}):
    o, k = runs.get(("ours", n)), runs.get(("kubeflow", n))
    any_r = (o or k or [r for (lab, m), rs in runs.items() if m == n for r in rs])[0]
    if o or k:
        peer = ([r.get("peer_version") for r in k or [] if r.get("peer_version")] or ["?"])[0]
        print("N = %d TFJobs x (1 ps + 4 workers) on %s kwok nodes, QPS %s burst %s, "
              "repetitions: ours %d, Kubeflow %d; median (min-max)\n"
              % (n, any_r.get("kwok_nodes"), any_r["qps"], any_r["burst"], len(o or []),
                 len(k or [])))
        print("| figure | tfjob-operator | Kubeflow training-operator %s | ours/theirs |" % peer)
        print("|---|---|---|---|")
        for key, name, fmt in KEYS:
            a, b = median(o, key), median(k, key)
            ratio = "%.2f" % (a / b) if a is not None and b else "-"
            print("| %s | %s | %s | %s |" % (name, cell(o, key, fmt), cell(k, key, fmt), ratio))
        print()
    for (lab, m), rs in sorted(runs.items()):
        if m == n and rs[0].get("failover"):
            print("Failover (%s, 2 replicas, leader SIGKILLed at half the pods), %d run(s): %s\n"
                  % (lab, len(rs), ", ".join("%s %s" % (name, cell(rs, key, fmt))
                                             for key, name, fmt in FAILOVER)))
