"""Plot of the scale part (bench_scale.py): pods created and operator RSS
over time, ours against Kubeflow's, from the first repetition of each in
OUT (scale-<label>-<N>-r<rep>.json). Needs matplotlib (the bench venv).

Usage: plot_scale.py OUT N PNG
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, n, png = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {}
for p in sorted(glob.glob(os.path.join(out, "scale-*-%d-r*.json" % n))):
    with open(p) as f:
        r = json.load(f)
    if r.get("series") and not r.get("failover"):
        runs.setdefault(r["label"], r)
if not runs:
    raise SystemExit("no scale results for N=%d in %s" % (n, out))
fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
names = {"ours": "tfjob-operator", "kubeflow": "Kubeflow training-operator"}
colours = {"ours": "tab:blue", "kubeflow": "tab:orange"}
for label, r in sorted(runs.items()):
    c = colours.get(label)
    s = r["series"]
    t = [x[0] for x in s]
    name = names.get(label, label)
    if label == "kubeflow" and r.get("peer_version"):
        name += " " + r["peer_version"]
    ax1.plot(t, [x[1] for x in s], color=c, label=name)
    # A run whose memory was not sampled (sc-5's ours, rebuilt from the API
    # objects) has None there and its known RSS figures in rss_points.
    mem = [x for x in s if x[2] is not None]
    if mem:
        ax2.plot([x[0] for x in mem], [x[2] / 1024.0 for x in mem], color=c, label=name + ", RSS")
        ax2.plot([x[0] for x in mem], [x[3] / 1024.0 for x in mem], color=c, linestyle="--",
                 label=name + ", private")
    for i, (pt, kib) in enumerate(r.get("rss_points") or []):
        ax2.plot([pt], [kib / 1024.0], color=c, marker="o", linestyle="none",
                 label=name + ", RSS (/metrics)" if i == 0 else None)
ax1.set_ylabel("pods created")
ax1.set_title("%d TFJobs x 5 pods on %s kwok nodes, QPS %s" % (
    n, next(iter(runs.values())).get("kwok_nodes", "?"), next(iter(runs.values()))["qps"]))
ax1.legend(loc="lower right")
ax2.set_ylabel("operator memory, MiB")
ax2.set_xlabel("seconds since the first TFJob create")
ax2.legend(loc="upper left", fontsize="small")
fig.tight_layout()
fig.savefig(png, dpi=90)
