#!/usr/bin/env python3
"""The same aggregation by PromQL (issue 32): a ledger's usage rows as the counters a platform
team would keep in Prometheus -- one series per container and GPU, its allocated GPU-seconds
summed hour by hour -- loaded into a real Prometheus (promtool backfill) and a real
VictoriaMetrics (import API), then `sum by (LABEL) (increase(...[WINDOW]))` timed on each,
cold (first query after start) and warm (best of three). Standard-library Python.

Usage: bench/promql_compare.py LEDGER.db [WORKDIR] [--skip-prometheus] [--queries-only]
Prints markdown table rows: figure | time; `make bench` (bench/bench_table.py) calls measure(). VictoriaMetrics runs with its result cache off, so
every query is computed (as each of ours is); promtool's backfill takes minutes per million
samples, hence --skip-prometheus for the largest ledgers. --queries-only times the queries again
on what an earlier run left in WORKDIR (its series and VictoriaMetrics' data): the writing and
the import take minutes at 10,000 GPUs, and the queries must run on an otherwise idle machine.
"""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request

METRIC = "gpuledger_bench_allocated_gpu_seconds_total"
GROUPINGS = [("namespace", "namespace"), ("label:team", "team"), ("controller", "controller")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def usage_rows(con):
    """(namespace, pod, uid, container, owner kind, owner name, gpu, hour_us, allocated_us) of
    every usage row, read from the compact hours (schema 8): the record layout is the one
    src/store/hour_record.h documents (varints, signed ones zigzag)."""
    consumers = {i: rest for i, *rest in con.execute(
        "SELECT id, namespace, pod, pod_uid, container, owner_kind, owner_name FROM consumers")}
    gpus = dict(con.execute("SELECT id, uuid FROM gpus"))

    def varint(b, pos):
        v = shift = 0
        while True:
            byte = b[pos]
            pos += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return v, pos

    def signed(b, pos):
        v, pos = varint(b, pos)
        return (v >> 1) ^ -(v & 1), pos

    for hour, gpu, record in con.execute("SELECT hour, gpu, record FROM hours"):
        if record[0] != 1:
            raise SystemExit(f"hour record format {record[0]}: this script reads format 1")
        pos = 1
        for _ in range(13):  # the device-hour's figures
            _, pos = signed(record, pos)
        count, pos = varint(record, pos)
        for _ in range(count):
            consumer, pos = varint(record, pos)
            _, pos = varint(record, pos)  # context
            parts, pos = varint(record, pos)
            allocated_us, pos = signed(record, pos)
            for _ in range(4 + (4 if parts & 1 else 0) + (10 if parts & 2 else 0)):
                _, pos = signed(record, pos)
            yield (*consumers[consumer], gpus[gpu], hour * 3_600_000_000, allocated_us)


def write_series(db, openmetrics_path, import_path):
    """Both files in one pass: OpenMetrics (seconds) for promtool, text with ms for VM."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    labels = {}
    # Each consumer carries its namespace's labels as written (schema 11); the generator's
    # never change.
    for ns, text in con.execute(
            "SELECT DISTINCT namespace, namespace_labels FROM consumers WHERE namespace_labels != ''"):
        team = json.loads(text).get("team")
        if team is not None:
            labels[ns] = team
    # One series' samples must be consecutive and in time order.
    rows = sorted(usage_rows(con), key=lambda r: (r[0], r[1], r[2], r[3], r[6], r[7]))
    first = last = None
    samples = 0
    with open(openmetrics_path, "w") as om, open(import_path, "w") as vm:
        om.write(f"# TYPE {METRIC[:-6]} counter\n")
        series, total = None, 0
        for ns, pod, uid, container, kind, owner, gpu, hour_us, allocated_us in rows:
            key = (ns, pod, uid, container, gpu)
            if key != series:
                series, total = key, 0
            total += allocated_us / 1e6
            controller = f"{ns}/{kind or 'Pod'}/{owner or pod}"
            lab = (f'namespace="{ns}",pod="{pod}",container="{container}",gpu="{gpu}",'
                   f'team="{labels.get(ns, "unlabelled")}",controller="{controller}"')
            end_s = (hour_us + 3_600_000_000) // 1_000_000
            om.write(f"{METRIC}{{{lab}}} {total:.6f} {end_s}\n")
            vm.write(f"{METRIC}{{{lab}}} {total:.6f} {end_s * 1000}\n")
            first = end_s if first is None else min(first, end_s)
            last = end_s if last is None else max(last, end_s)
            samples += 1
        om.write("# EOF\n")
    return samples, first, last


def wait_ready(url, seconds=600):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.5)
    raise SystemExit(f"not ready: {url}")


def timed_query(base, promql, at):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": at})
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=3600) as r:
        body = json.load(r)
    took = time.monotonic() - t0
    if body.get("status") != "success":
        raise SystemExit(f"query failed: {body}")
    return took, len(body["data"]["result"])


def compare(base, window_s, at):
    """{grouping: (groups, cold s, warm s)}, the grouping as gpuledger names it."""
    out = {}
    for by, label in GROUPINGS:
        promql = f"sum by ({label}) (increase({METRIC}[{window_s}s]))"
        cold, groups = timed_query(base, promql, at)
        warm = min(timed_query(base, promql, at)[0] for _ in range(3))
        out[by] = (groups, cold, warm)
    return out


def series_window(vm_text):
    """The first and last sample times (seconds) of a series file write_series wrote."""
    first = last = None
    with open(vm_text) as f:
        for line in f:
            end_s = int(line.rsplit(" ", 1)[1]) // 1000
            first = end_s if first is None else min(first, end_s)
            last = end_s if last is None else max(last, end_s)
    return first, last


def measure(db, work, prometheus=True, queries_only=False):
    """{engine: {grouping: (groups, cold s, warm s)}}: the ledger's usage written as counters
    into WORKDIR and imported (or, queries_only, what an earlier run left there), then queried."""
    om, vm_text = os.path.join(work, "series.om"), os.path.join(work, "series.prom")
    if queries_only:
        first, last = series_window(vm_text)
        window_s, at = last - first + 3600, last
        out = {}
        if prometheus and os.path.isdir(os.path.join(work, "prom-data")):
            out["Prometheus"] = run_prometheus(work, None, window_s, at)
        out["VictoriaMetrics"] = run_victoria_metrics(work, None, window_s, at)
        return out
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.monotonic()
    samples, first, last = write_series(db, om, vm_text)
    print(f"<!-- {samples} samples written in {time.monotonic() - t0:.0f} s -->", flush=True)
    window_s, at = last - first + 3600, last
    out = {}
    if prometheus:
        out["Prometheus"] = run_prometheus(work, om, window_s, at)
    out["VictoriaMetrics"] = run_victoria_metrics(work, vm_text, window_s, at)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    results = measure(args[0], args[1] if len(args) > 1 else "/var/tmp/gpuledger-promql",
                      prometheus="--skip-prometheus" not in sys.argv,
                      queries_only="--queries-only" in sys.argv)
    for engine, groupings in results.items():
        for by, (groups, cold, warm) in groupings.items():
            label = dict(GROUPINGS)[by]
            print(f"| {engine} `sum by ({label}) (increase(...[30d]))` ({groups} groups) | "
                  f"{cold:.2f} s cold, {warm:.2f} s warm |")


def run_prometheus(work, om, window_s, at):
    prom_data = os.path.join(work, "prom-data")
    if om is not None:  # else backfilled by an earlier run
        t0 = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, prom_data],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"<!-- promtool backfill {time.monotonic() - t0:.0f} s -->", flush=True)
    port = free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1h}\n")
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={work}/prometheus.yml",
         f"--storage.tsdb.path={prom_data}", "--storage.tsdb.retention.time=100y",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
         "--query.timeout=1h", "--query.max-samples=1000000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(f"http://127.0.0.1:{port}/-/ready")
        return compare(f"http://127.0.0.1:{port}", window_s, at)
    finally:
        prom.terminate()
        prom.wait()



def run_victoria_metrics(work, vm_text, window_s, at):
    port = free_port()
    vm = subprocess.Popen(
        ["victoria-metrics", f"-storageDataPath={work}/vm-data", "-retentionPeriod=100y",
         f"-httpListenAddr=127.0.0.1:{port}", "-loggerLevel=WARN", "-search.latencyOffset=0s",
         "-search.maxSamplesPerQuery=1000000000", "-search.maxUniqueTimeseries=100000000",
         "-search.maxQueryDuration=1h", "-search.disableCache"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/health")
        if vm_text is not None:  # else imported by an earlier run
            t0 = time.monotonic()
            with open(vm_text, "rb") as f:
                req = urllib.request.Request(f"{base}/api/v1/import/prometheus", data=f,
                                             method="POST")
                req.add_header("Content-Length", str(os.path.getsize(vm_text)))
                urllib.request.urlopen(req, timeout=3600).read()
            urllib.request.urlopen(f"{base}/internal/force_flush", timeout=600).read()
            print(f"<!-- VictoriaMetrics import {time.monotonic() - t0:.0f} s -->", flush=True)
        return compare(base, window_s, at)
    finally:
        vm.terminate()
        vm.wait()


if __name__ == "__main__":
    main()
