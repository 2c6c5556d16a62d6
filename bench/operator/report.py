"""Markdown table of the operator benchmark results in OUT (operator-*.json)."""
import glob
import json
import os
import sys

out = sys.argv[1]
rows = {}
for p in sorted(glob.glob(os.path.join(out, "operator-*.json"))):
    with open(p) as f:
        r = json.load(f)
    rows[(r.get("label", r["impl"]), r["jobs"])] = r
KEYS = [("all_pods_s", "s until all pods exist", "%.1f"),
        ("all_succeeded_s", "s until all jobs Succeeded", "%.1f"),
        ("requests_per_job", "API requests per job", "%.1f"),
        ("idle_req_per_s", "idle requests/s (after all finished)", "%.2f"),
        ("rss_mib_peak", "peak RSS MiB (VmHWM)", "%.1f"),
        ("cpu_s_busy", "CPU s until all Succeeded", "%.2f"),
        ("cpu_s_idle", "CPU s during the idle window", "%.2f")]
for n in sorted({k[1] for k in rows}):
    o, k = rows.get(("ours", n)), rows.get(("kubeflow", n))
    print("N = %d TFJobs x (1 ps + 4 workers), QPS %s burst %s\n" % (
        n, (o or k)["qps"], (o or k)["burst"]))
    print("| metric | tfjob-operator | Kubeflow training-operator v1.8.1 | ours/theirs |")
    print("|---|---|---|---|")
    for key, name, fmt in KEYS:
        a = o.get(key) if o else None
        b = k.get(key) if k else None
        ratio = "%.2f" % (a / b) if a is not None and b else "-"
        print("| %s | %s | %s | %s |" % (name, fmt % a if a is not None else "-",
                                         fmt % b if b is not None else "-", ratio))
    extra = [r for (lab, m), r in rows.items() if m == n and lab not in ("ours", "kubeflow")]
    for r in extra:
        print("\nVariant %s (%s): %s" % (r["label"], r["command"].split(" ", 1)[0], ", ".join(
            "%s %s" % (name, fmt % r[key]) for key, name, fmt in KEYS if r.get(key) is not None)))
    for r in [o, k] + extra:
        if r:
            print("\n%s: load %s at start, %s at end" % (r["label"] if "label" in r else r["impl"],
                                                        r["load_start"], r["load_end"]))
    print()
