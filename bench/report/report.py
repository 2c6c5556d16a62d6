"""Markdown table of the report-load results in OUT (report-load-r<rep>.json,
tfj-bench-reportload's output): each figure as the median over the
repetitions with the range (min-max)."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
runs = []
for p in sorted(glob.glob(os.path.join(out, "report-load-r*.json"))):
    with open(p) as f:
        try:
            runs.append(json.load(f))
        except ValueError:
            pass
if not runs:
    sys.exit(0)


def get(r, key):
    v = r
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return v


def refused_forged(r):
    return r["clients"]["forged_calls"] - r["clients"]["forged_by_status"].get("0", 0)


ROWS = [("clients.valid_calls", "valid Heartbeats sent", "%d"),
        ("clients.valid_refused", "valid Heartbeats refused", "%d"),
        ("tokenreviews_total", "TokenReviews sent, whole run", "%d"),
        ("tokenreviews_steady", "TokenReviews sent, steady phase", "%d"),
        ("auth_local_ok_steady", "tokens verified with the keys, steady phase (cache misses)", "%d"),
        ("operator_cpu_pct_of_core", "operator CPU, % of one core (steady)", "%.1f"),
        ("clients.latency_ms.p50", "report latency p50, ms", "%.2f"),
        ("clients.latency_ms.p99", "report latency p99, ms", "%.2f"),
        ("clients.latency_ms.max", "report latency max, ms", "%.2f"),
        ("clients.started_over_100ms_late", "calls started > 100 ms late", "%d"),
        ("clients.forged_calls", "forged calls", "%d"),
        (refused_forged, "forged calls refused", "%d"),
        ("forged_refused_signature", "of which: signature checked and refused", "%d"),
        ("peer_limited", "of which: refused per peer (peer_limited)", "%d")]
r0 = runs[0]
print("%d tokens, each one Heartbeat per %d s (%.0f/s), %d forgers at %g/s each, "
      "%d s (steady phase: after %d s); %d repetition(s), median (min-max)."
      % (r0["tokens"], r0["period_s"], r0["tokens"] / r0["period_s"], r0["forgers"],
         r0["forger_qps"], r0["seconds"], r0["warmup_s"], len(runs)))
print()
print("| figure | value |")
print("|---|---|")
for key, label, fmt in ROWS:
    v = [key(r) if callable(key) else get(r, key) for r in runs]
    v = [x for x in v if x is not None]
    if not v:
        continue
    cell = fmt % statistics.median(v)
    if len(v) > 1:
        cell += " (%s-%s)" % (fmt % min(v), fmt % max(v))
    print("| %s | %s |" % (label, cell))
