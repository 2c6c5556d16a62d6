"""Process-tree monitor for the benchmarks: peak RSS and CPU time per task.

A thread samples /proc every `period` seconds and remembers, for every
descendant of the watched process, its label, the largest VmHWM (the
kernel's own peak-RSS high-water mark, so a sample shortly before exit still
sees the peak) and the largest utime+stime. Processes that live shorter than
one period can be missed; benchmark tasks live for seconds.
"""
import json
import os
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _parse_stat(s):
    """(ppid, CPU s) from the text of /proc/PID/stat."""
    rest = s[s.rfind(b")") + 2:].split()
    # fields after the comm: state(0) ppid(1) ... utime(11) stime(12)
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK


def _stat(pid):
    s = _read("/proc/%d/stat" % pid)
    return _parse_stat(s) if s else None


def _hwm_kib(pid):
    s = _read("/proc/%d/status" % pid)
    if not s:
        return 0
    for line in s.splitlines():
        if line.startswith(b"VmHWM:"):
            return int(line.split()[1])
    return 0


def label_of(pid):
    """ps:0 / worker:1 / evaluator:0 from TF_CONFIG or --job_name flags."""
    env = _read("/proc/%d/environ" % pid) or b""
    for kv in env.split(b"\0"):
        if kv.startswith(b"TF_CONFIG="):
            try:
                t = json.loads(kv[10:])["task"]
                return "%s:%s" % (t["type"], t["index"])
            except (ValueError, KeyError):
                pass
    argv = (_read("/proc/%d/cmdline" % pid) or b"").split(b"\0")
    argv = [a.decode(errors="replace") for a in argv]
    job = idx = None
    for i, a in enumerate(argv[:-1]):
        if a == "--job_name":
            job = argv[i + 1]
        elif a == "--task_index":
            idx = argv[i + 1]
    if job:
        return "%s:%s" % (job, idx or "0")
    return os.path.basename(argv[0]) if argv and argv[0] else "pid%d" % pid


class Monitor(threading.Thread):
    def __init__(self, root_pid, period=0.2):
        super().__init__(daemon=True)
        self.root, self.period = root_pid, period
        self.procs = {}  # pid -> dict(label, hwm_kib, cpu_s)
        self._halt = threading.Event()

    def sample(self):
        kids = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                st = _stat(int(d))
                if st:
                    kids.setdefault(st[0], []).append((int(d), st[1]))
        todo = [self.root]
        while todo:
            p = todo.pop()
            for c, cpu in kids.get(p, []):
                todo.append(c)
                e = self.procs.get(c)
                if e is None:
                    e = self.procs[c] = {"label": label_of(c), "hwm_kib": 0, "cpu_s": 0.0}
                e["hwm_kib"] = max(e["hwm_kib"], _hwm_kib(c))
                e["cpu_s"] = max(e["cpu_s"], cpu)

    def run(self):
        while not self._halt.is_set():
            self.sample()
            time.sleep(self.period)

    def stop(self):
        self.sample()
        self._halt.set()
        self.join()
        return self.summary()

    def summary(self):
        """label -> {rss_mib, cpu_s} (the largest process per label)."""
        out = {}
        for e in self.procs.values():
            if e["hwm_kib"] == 0:
                continue
            o = out.setdefault(e["label"], {"rss_mib": 0.0, "cpu_s": 0.0})
            o["rss_mib"] = max(o["rss_mib"], e["hwm_kib"] / 1024.0)
            o["cpu_s"] = max(o["cpu_s"], e["cpu_s"])
        return out


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


# The test bed's processes (their comm, which the kernel cuts at 15
# characters) whose CPU a scale run costs the cluster besides the operator's.
BED = ("kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kube-router",
       "kwok", "kubelet")


def bed_cpu():
    """utime+stime seconds of the test bed's processes, summed by comm."""
    out = dict.fromkeys(BED, 0.0)
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        s = _read("/proc/%s/stat" % d)
        if not s:
            continue
        comm = s[s.find(b"(") + 1:s.rfind(b")")].decode(errors="replace")
        if comm in out:
            out[comm] += _parse_stat(s)[1]
    return out
