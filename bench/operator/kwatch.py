"""Watches and samplers for the scale benchmark (bench_scale.py).

PodWatch and JobWatch follow one namespace through the API server's watch
(via `kubectl proxy`), so the figures come from the API server's own record
of what each operator did, the same for both: every pod name with every UID
it ever had (a name with two UIDs was created twice), when each was first
seen, and when each TFJob first showed Succeeded. ProcSampler samples the
operator process once a second: RSS, private memory (smaps_rollup
Private_Clean + Private_Dirty), CPU seconds, and the pods created so far,
for the plot.
"""
import http.client
import json
import os
import threading
import time


class _Watch(threading.Thread):
    """List, then watch from the list's resourceVersion; on a closed stream
    watch again from the last version seen; on an expired version list
    again (objects of the new list count as seen now)."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.path = port, path
        self.lock = threading.Lock()
        self.stop = False
        self.rv = None

    def _get(self, query, timeout):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("GET", self.path + query)
        return c, c.getresponse()

    def _list(self):
        # A list of 25,000 pods is ~200 MB of JSON: minutes on a loaded VM.
        c, r = self._get("", 900)
        body = json.loads(r.read())
        c.close()
        now = time.time()
        for o in body.get("items", []):
            self.seen("ADDED", o, now)
        self.rv = body["metadata"]["resourceVersion"]

    def run(self):
        while not self.stop:
            try:
                if self.rv is None:
                    self._list()
                c, r = self._get("?watch=1&allowWatchBookmarks=true&timeoutSeconds=600"
                                 "&resourceVersion=%s" % self.rv, 700)
                while not self.stop:
                    line = r.readline()
                    if not line:
                        break
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    o = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        self.rv = None  # 410 Gone: list again
                        break
                    self.rv = (o.get("metadata") or {}).get("resourceVersion", self.rv)
                    if ev.get("type") != "BOOKMARK":
                        self.seen(ev["type"], o, time.time())
                c.close()
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                time.sleep(0.5)


class PodWatch(_Watch):
    def __init__(self, port, ns):
        super().__init__(port, "/api/v1/namespaces/%s/pods" % ns)
        self.uids = {}     # name -> set of UIDs it ever had
        self.first = {}    # name -> time first seen
        self.live = set()  # UIDs not deleted
        self.times = []    # time of each first sighting, in order

    def seen(self, typ, o, now):
        md = o.get("metadata") or {}
        name, uid = md.get("name"), md.get("uid")
        with self.lock:
            if typ == "DELETED":
                self.live.discard(uid)
                return
            self.live.add(uid)
            s = self.uids.setdefault(name, set())
            if uid not in s:
                s.add(uid)
                if name not in self.first:
                    self.first[name] = now
                    self.times.append(now)

    def created(self):
        with self.lock:
            return len(self.first)

    def created_since(self, t):
        """First sighting of a pod name at or after t, or None."""
        with self.lock:
            later = [x for x in self.times if x >= t]
        return min(later) if later else None


class JobWatch(_Watch):
    def __init__(self, port, ns):
        super().__init__(port, "/apis/kubeflow.org/v1/namespaces/%s/tfjobs" % ns)
        self.done = {}  # name -> time first seen Succeeded

    def seen(self, typ, o, now):
        name = (o.get("metadata") or {}).get("name")
        for c in (o.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Succeeded" and c.get("status") == "True":
                with self.lock:
                    self.done.setdefault(name, now)

    def succeeded(self):
        with self.lock:
            return len(self.done)


def mem_kib(pid):
    """(RSS, private) KiB now: VmRSS, and Private_Clean + Private_Dirty of
    smaps_rollup (the process's own pages, shared libraries' untouched
    pages left out)."""
    rss = priv = 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Private_"):
                    priv += int(line.split()[1])
    except OSError:
        pass
    return rss, priv


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return 0.0
    rest = s[s.rfind(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


class ProcSampler(threading.Thread):
    """Once a second: [t - t0, pods created, RSS KiB, private KiB, CPU s]
    of the process being sampled (switchable, for the failover run)."""

    def __init__(self, pid, pods, t0, period=1.0):
        super().__init__(daemon=True)
        self.pid, self.pods, self.t0, self.period = pid, pods, t0, period
        self.series = []
        self.peak_rss = self.peak_priv = 0
        self.stop = False

    def run(self):
        while not self.stop:
            rss, priv = mem_kib(self.pid)
            self.peak_rss, self.peak_priv = max(self.peak_rss, rss), max(self.peak_priv, priv)
            self.series.append([round(time.time() - self.t0, 2), self.pods.created(), rss, priv,
                                cpu_s(self.pid)])
            time.sleep(self.period)


def smaps_top(pid, n=12):
    """The mappings holding the most resident memory, summed per backing
    file (anonymous ones as [anon], heap as [heap]): [name, Rss KiB,
    Private KiB], largest first. Where the RSS goes: libraries or heap."""
    sums = {}
    name = None
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                if "-" in parts[0] and not parts[0].endswith(":"):
                    name = parts[5] if len(parts) > 5 else "[anon]"
                    sums.setdefault(name, [0, 0])
                elif parts[0] == "Rss:":
                    sums[name][0] += int(parts[1])
                elif parts[0] in ("Private_Clean:", "Private_Dirty:"):
                    sums[name][1] += int(parts[1])
    except OSError:
        return []
    top = sorted(sums.items(), key=lambda kv: -kv[1][0])[:n]
    return [[os.path.basename(k) if k.startswith("/") else k, v[0], v[1]] for k, v in top]
