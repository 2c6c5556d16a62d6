"""Markdown tables of the operator benchmark results in OUT
(operator-<label>-<N>-r<rep>.json): per N, each metric as the median over
the repetitions with the range (min-max), and the ratio of the medians."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from medians import cell, median, values  # noqa: E402

out = sys.argv[1]
runs = {}
for p in sorted(glob.glob(os.path.join(out, "operator-*.json"))):
    with open(p) as f:
        r = json.load(f)
    # The cost per job: how far the peak rose above the idle operator.
    if r.get("rss_mib_peak") is not None and r.get("rss_mib_ready") is not None:
        r["rss_kib_per_job"] = (r["rss_mib_peak"] - r["rss_mib_ready"]) * 1024.0 / r["jobs"]
    runs.setdefault((r.get("label", r["impl"]), r["jobs"]), []).append(r)
KEYS = [("all_pods_s", "s until all pods exist", "%.1f"),
        ("all_succeeded_s", "s until all jobs Succeeded", "%.1f"),
        ("requests_per_job", "API requests per job (each operator's own counter)", "%.1f"),
        ("tfjob_events_per_job", "events on the TFJobs per job (counted in the API server)", "%.1f"),
        ("idle_req_per_s", "idle requests/s (after all finished)", "%.2f"),
        ("rss_mib_ready", "RSS MiB when ready, no jobs (VmHWM)", "%.1f"),
        ("rss_mib_peak", "peak RSS MiB (VmHWM)", "%.1f"),
        ("rss_kib_per_job", "peak RSS above ready, KiB per job", "%.1f"),
        ("rss_anon_mib_ready", "private RSS MiB when ready", "%.1f"),
        ("rss_anon_mib_peak", "peak private (anonymous) RSS MiB, sampled", "%.1f"),
        ("rss_anon_mib_end", "private RSS MiB after the idle window", "%.1f"),
        ("cpu_s_busy", "CPU s until all Succeeded", "%.2f"),
        ("cpu_s_idle", "CPU s during the idle window", "%.2f")]


# The RSS of an empty program linked against the operator's libraries
# (bench/operator/libfloor.c): what the libraries cost before main().
if os.path.exists(os.path.join(out, "libfloor.json")):
    with open(os.path.join(out, "libfloor.json")) as f:
        floor = json.load(f)
    print("Library floor (an empty program linked against the operator's libraries): "
          "RSS %.1f MiB, of which %.1f MiB file-backed (library pages) and %.1f MiB "
          "private.\n" % (floor["rss_mib"], floor["rss_file_mib"], floor["rss_anon_mib"]))

for n in sorted({k[1] for k in runs}):
    o, k = runs.get(("ours", n)), runs.get(("kubeflow", n))
    any_r = (o or k or [r for (lab, m), rs in runs.items() if m == n for r in rs])[0]
    print("N = %d TFJobs x (1 ps + 4 workers), QPS %s burst %s, repetitions: ours %d, "
          "Kubeflow %d; median (min-max)\n" % (n, any_r["qps"], any_r["burst"],
                                               len(o or []), len(k or [])))
    peer = ([r.get("peer_version") for r in k or [] if r.get("peer_version")] or ["?"])[0]
    print("| metric | tfjob-operator | Kubeflow training-operator %s | ours/theirs (medians) |"
          % peer)
    print("|---|---|---|---|")
    for key, name, fmt in KEYS:
        a, b = median(o, key), median(k, key)
        ratio = "%.2f" % (a / b) if a is not None and b else "-"
        print("| %s | %s | %s | %s |" % (name, cell(o, key, fmt), cell(k, key, fmt), ratio))
    extra = {lab: rs for (lab, m), rs in runs.items() if m == n and lab not in ("ours", "kubeflow")}
    for lab, rs in sorted(extra.items()):
        print("\nVariant %s (%s): %s" % (lab, rs[0]["command"].split(" ", 1)[0], ", ".join(
            "%s %s" % (name, cell(rs, key, fmt)) for key, name, fmt in KEYS
            if values(rs, key))))
    print("\nLoad (1-minute average) at the start of each run:")
    for lab, rs in sorted(((lab, rs) for (lab, m), rs in runs.items() if m == n)):
        print("- %s: %s" % (lab, ", ".join("r%d %.1f" % (r.get("rep", 0), r["load_start"][0])
                                          for r in sorted(rs, key=lambda r: r.get("rep", 0))
                                          if r.get("load_start"))))
    print()
