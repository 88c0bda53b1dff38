#!/usr/bin/env python3
"""`make bench` (issue 32): the ledger read path over 10,000 GPUs x 30 days in one table.

Writes the ledger once (bench/ledger_generator; SQLite, and PostgreSQL with PG_URL), then
measures, one after the other on an otherwise idle machine:
  - ours, cold: a fresh `gpuledger report` process per grouping (the first sums and keeps each
    day, src/ledger/day_rollup.h; the others read the kept days), time and peak memory;
  - ours, warm: bench/read_path in one process (the kept snapshot's scan, and the same answers
    from the held days), and the one-core memory-bandwidth floor of the scan;
  - plain SQL: sqlite3 reading every hour record once (the figures are inside the records);
  - PromQL: the same usage as per-container counters in a real VictoriaMetrics, and a real
    Prometheus where its backfill is affordable (bench/promql_compare.py), `sum by`, cold and
    warm (best of three);
and prints one markdown table: figure, ours (SQLite, PostgreSQL), plain SQL, Prometheus,
VictoriaMetrics, ratio, target. Timings are measurements, never test assertions; ratios are
taken within the run, never across machines or sessions.

Usage: bench/bench_table.py [BUILD_DIR]
  GPUS=10000 DAYS=30 BENCH_DIR=/var/tmp/gpuledger-bench  the ledger and its PromQL copy
  PG_URL=postgres://...  the same figures on PostgreSQL (an empty database is written once)
  PROMETHEUS=1  backfill Prometheus too (default only up to 1,008 GPUs: promtool takes minutes
                per million samples); PROMQL=0 skips PromQL
Standard-library Python.
"""
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import promql_compare

GROUPINGS = ["namespace", "label:team", "controller"]
TARGET_WARM_S, TARGET_COLD_S, TARGET_MIB, TARGET_PROMQL_X, TARGET_FLOOR_X = 1, 5, 1024, 20, 10
# Rightsizing a month (issue 59): the server warm, the CLI cold.
TARGET_RIGHTSIZE_WARM_S, TARGET_RIGHTSIZE_COLD_S = 2, 10


def timed(cmd):
    """(seconds, peak MiB, stdout) of a command, its stderr passed through."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return time.monotonic() - t0, usage.ru_maxrss / 1024, out


def ensure_ledger(build, spec, gpus, days, present):
    if present:
        return
    print(f"writing {spec} (once; 5-9 minutes at 10,000 GPUs)", file=sys.stderr, flush=True)
    subprocess.run([f"{build}/bench/ledger_generator", "--db", spec, "--gpus", str(gpus),
                    "--days", str(days)], check=True, stdout=sys.stderr)


def ours(build, spec, forget_kept_days):
    """The cold and warm figures of one ledger: {"cold_first": (s, MiB), "cold": {by: (s, MiB)},
    "held": {query: s}, "snapshot": {query: s}, "floor_s": s, "peak_mib": MiB, "server": ...}."""
    forget_kept_days()  # so the first report is the one that sums and keeps each day
    gpuledger = f"{build}/src/cmd/gpuledger"
    report = [gpuledger, "report", "--db", spec, "--window", "all", "--by"]
    first_s, first_mib, _ = timed(report + ["namespace"])
    cold = {}
    for by in GROUPINGS:
        s, mib, _ = timed(report + [by])
        cold[by] = (s, mib)
    _, _, text = timed([f"{build}/bench/read_path", "--db", spec])
    held, snapshot = {}, {}
    for name, seconds, source in re.findall(r"^warm (.+?)\s{2,}([\d.]+) s\s+\(\d+ rows, (.+)\)$",
                                            text, re.M):
        (held if source == "from held days" else snapshot)[name] = float(seconds)
    floor = re.search(r"^memory floor: .* = ([\d.]+) s$", text, re.M)
    peaks = re.findall(r"^peak RSS (\d+) MiB$", text, re.M)
    rightsize_s, rightsize_mib, _ = timed([gpuledger, "rightsize", "--db", spec, "--window", "30d",
                                           "--format", "json"])
    return {"cold_first": (first_s, first_mib), "cold": cold, "held": held,
            "rightsize_cold": (rightsize_s, rightsize_mib),
            "snapshot": snapshot, "floor_s": float(floor.group(1)) if floor else None,
            "peak_mib": max(map(int, peaks)) if peaks else None,
            "server": server(build, spec)}


SERVER_QUERIES = [(by, f"/api/v1/report?window=all&aggregate={by}") for by in GROUPINGS] + [
    ("allocation", "/api/v1/allocation?window=30d&aggregate=namespace&step=1d")]
# Asked twice (tens of seconds each), the second answer timed.
SLOW_SERVER_QUERIES = [("recommendations", "/api/v1/recommendations?window=30d")]


def server(build, spec, settle_s=40, asks=5):
    """`gpuledger server` with its defaults over HTTP, as a dashboard asks: {"medians": {query:
    s}, "peak_mib": MiB}, each the median of `asks` answers after a first, read whole."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([f"{build}/src/cmd/gpuledger", "server", "--ledger", spec,
                             "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        promql_compare.wait_ready(f"{base}/healthz")
        urllib.request.urlopen(base + SERVER_QUERIES[0][1], timeout=600).read()
        time.sleep(settle_s)  # the start's loads: the kept rows, then each GPU's days
        medians = {}
        for name, path in SERVER_QUERIES:
            times = []
            for _ in range(asks + 1):
                t0 = time.monotonic()
                urllib.request.urlopen(base + path, timeout=600).read()
                times.append(time.monotonic() - t0)
            medians[name] = statistics.median(times[1:])  # the first works a grouping's keys
        for name, path in SLOW_SERVER_QUERIES:
            for _ in range(2):
                t0 = time.monotonic()
                urllib.request.urlopen(base + path, timeout=600).read()
            medians[name] = time.monotonic() - t0
        with open(f"/proc/{proc.pid}/status") as status:
            peak = re.search(r"^VmHWM:\s+(\d+) kB", status.read(), re.M)
        return {"medians": medians, "peak_mib": int(peak.group(1)) / 1024 if peak else None}
    finally:
        proc.terminate()
        proc.wait()


def promql(db, work, gpus, new_ledger):
    """{engine: {grouping: (groups, cold s, warm s)}}, or {} without VictoriaMetrics."""
    if os.environ.get("PROMQL") == "0" or not shutil.which("victoria-metrics"):
        return {}
    prometheus = (shutil.which("prometheus") and shutil.which("promtool")
                  and (gpus <= 1008 or os.environ.get("PROMETHEUS") == "1"))
    reuse = not new_ledger and os.path.isdir(os.path.join(work, "vm-data"))
    print("PromQL: " + ("querying the import of an earlier run" if reuse else
                        "writing the counters and importing them (minutes)"),
          file=sys.stderr, flush=True)
    with contextlib.redirect_stdout(sys.stderr):  # its progress, not the table
        return promql_compare.measure(db, work, prometheus=bool(prometheus), queries_only=reuse)


def seconds(s):
    return "—" if s is None else f"{s:.3f} s" if s < 1 else f"{s:.2f} s"


def mib(value):
    return "—" if value is None else f"{value:.0f} MiB"


def cold_cell(figure):
    return "—" if figure is None else f"{figure[0]:.2f} s, {figure[1]:.0f} MiB"


def table(sqlite, pg, engines):
    def engine_cell(engine, by, which):
        result = engines.get(engine, {}).get(by)
        return "—" if result is None else seconds(result[2 if which == "warm" else 1])

    def ratio(by, which, ours_s):
        parts = []
        for engine in ("Prometheus", "VictoriaMetrics"):
            result = engines.get(engine, {}).get(by)
            if result and ours_s:
                x = result[2 if which == "warm" else 1] / ours_s
                parts.append(f"{x:.1f}x {engine}" if x < 10 else f"{x:.0f}x {engine}")
        return ", ".join(parts) or "—"

    rows = []
    for by in GROUPINGS:
        s = sqlite["server"]["medians"][by]
        rows.append([f"`/api/v1/report?window=all&aggregate={by}`, the server over HTTP (median)",
                     seconds(s), seconds(pg["server"]["medians"][by]) if pg else "—", "—",
                     engine_cell("Prometheus", by, "warm"),
                     engine_cell("VictoriaMetrics", by, "warm"), ratio(by, "warm", s),
                     f"≤ {TARGET_WARM_S} s; ≥ {TARGET_PROMQL_X}x PromQL"])
    rows.append(["`/api/v1/allocation?window=30d&aggregate=namespace&step=1d`, over HTTP (median)",
                 seconds(sqlite["server"]["medians"]["allocation"]),
                 seconds(pg["server"]["medians"]["allocation"]) if pg else "—", "—", "—", "—",
                 "—", f"≤ {TARGET_WARM_S} s"])
    rows.append(["`/api/v1/recommendations?window=30d`, over HTTP (the second ask)",
                 seconds(sqlite["server"]["medians"]["recommendations"]),
                 seconds(pg["server"]["medians"]["recommendations"]) if pg else "—", "—", "—",
                 "—", "—", f"≤ {TARGET_RIGHTSIZE_WARM_S} s"])
    rows.append(["`rightsize --window 30d`, cold (a fresh process)",
                 cold_cell(sqlite["rightsize_cold"]),
                 cold_cell(pg["rightsize_cold"]) if pg else "—", "—", "—", "—", "—",
                 f"≤ {TARGET_RIGHTSIZE_COLD_S} s, ≤ {TARGET_MIB} MiB"])
    rows.append(["the server's peak memory, defaults, after these",
                 mib(sqlite["server"]["peak_mib"]), mib(pg["server"]["peak_mib"]) if pg else "—",
                 "—", "—", "—", "—", f"≤ {TARGET_MIB} MiB"])
    for by in GROUPINGS:
        query = f"report --by {by}"
        s = sqlite["held"].get(query)
        rows.append([f"`{query}`, warm in one process (held days)", seconds(s),
                     seconds(pg["held"].get(query)) if pg else "—", "—",
                     engine_cell("Prometheus", by, "warm"),
                     engine_cell("VictoriaMetrics", by, "warm"), ratio(by, "warm", s),
                     f"≤ {TARGET_WARM_S} s; ≥ {TARGET_PROMQL_X}x PromQL"])
    for query in ("allocation aggregate=namespace step=1d",
                  "allocation aggregate=controller filter=ns-001"):
        rows.append([f"`{query}`, warm in one process (held days)",
                     seconds(sqlite["held"].get(query)),
                     seconds(pg["held"].get(query)) if pg else "—", "—", "—", "—", "—",
                     f"≤ {TARGET_WARM_S} s"])
    rows.append(["first report, cold: sums and keeps each day", cold_cell(sqlite["cold_first"]),
                 cold_cell(pg["cold_first"]) if pg else "—", "—", "—", "—", "—",
                 "once per ledger"])
    for by in GROUPINGS:
        s = sqlite["cold"][by]
        rows.append([f"`report --by {by}`, cold (a fresh process, days kept)", cold_cell(s),
                     cold_cell(pg["cold"][by]) if pg else "—", "—",
                     engine_cell("Prometheus", by, "cold"),
                     engine_cell("VictoriaMetrics", by, "cold"), ratio(by, "cold", s[0]),
                     f"≤ {TARGET_COLD_S} s, ≤ {TARGET_MIB} MiB"])
    scan = sqlite["snapshot"].get("report --by namespace")
    held = sqlite["held"].get("report --by namespace")
    floor = sqlite["floor_s"]
    rows.append(["scan of the kept snapshot (`--by namespace`, warm) vs the memory floor",
                 seconds(scan), seconds(pg["snapshot"].get("report --by namespace")) if pg else
                 "—", seconds(sqlite.get("plain_sql_s")), "—", "—",
                 f"{scan / floor:.1f}x the floor ({seconds(floor)}); held days {held / floor:.1f}x"
                 if scan and floor and held else "—",
                 f"≤ {TARGET_FLOOR_X}x the floor"])
    rows.append(["peak memory of bench/read_path (every row of the window kept, days held)",
                 mib(sqlite["peak_mib"]), mib(pg["peak_mib"]) if pg else "—", "—", "—", "—", "—",
                 "the server's is above"])
    header = ["figure", "ours, SQLite", "ours, PostgreSQL", "plain SQL (read every record)",
              "Prometheus", "VictoriaMetrics", "ratio", "target"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    gpus, days = int(os.environ.get("GPUS", 10000)), int(os.environ.get("DAYS", 30))
    bench_dir = os.environ.get("BENCH_DIR", "/var/tmp/gpuledger-bench")
    os.makedirs(bench_dir, exist_ok=True)
    db = os.path.join(bench_dir, f"ledger-{gpus}x{days}.db")
    work = os.path.join(bench_dir, f"promql-{gpus}x{days}")
    new_ledger = not os.path.exists(db)
    ensure_ledger(build, db, gpus, days, present=not new_ledger)
    if new_ledger:  # a new ledger: an earlier run's PromQL import is of another one
        shutil.rmtree(work, ignore_errors=True)

    def forget_sqlite():
        if shutil.which("sqlite3"):
            subprocess.run(["sqlite3", db, "DELETE FROM day_rollups"], check=False,
                           stderr=subprocess.DEVNULL)

    sqlite = ours(build, db, forget_sqlite)
    if shutil.which("sqlite3"):
        # Since schema 8 (issue 37) a usage row's figures are inside its hour's record, which
        # SQL cannot open: the plain-SQL floor is reading every record once.
        sqlite["plain_sql_s"] = timed(["sqlite3", db,
                                       "SELECT count(*), sum(length(record)) FROM hours"])[0]
    pg = None
    pg_url = os.environ.get("PG_URL")
    if pg_url:
        hours = subprocess.run(["psql", pg_url, "-Atc", "SELECT count(*) FROM hours"],
                               capture_output=True, text=True).stdout.strip()
        ensure_ledger(build, pg_url, gpus, days, present=hours not in ("", "0"))
        pg = ours(build, pg_url, lambda: subprocess.run(
            ["psql", pg_url, "-qc", "DELETE FROM day_rollups"], check=False,
            capture_output=True))
    engines = promql(db, work, gpus, new_ledger)
    print(f"\n{gpus:,} GPUs x {days} days ({db}); PromQL: "
          + (", ".join(engines) if engines else "not run (victoria-metrics not installed or "
             "PROMQL=0)") + "\n")
    table(sqlite, pg, engines)


if __name__ == "__main__":
    main()
