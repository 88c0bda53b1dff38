#!/usr/bin/env python3
"""Per-container GPU time under time-slicing from NVML alone: every candidate estimator on
every real capture (../shared/data/h200, README there), against the runs' truth.

Usage: bench/nvml_estimators.py [SHARED_DATA_DIR]   (default: ../shared/data beside the checkout)

Each estimator gives per-process weights from what NVML returned (per-process samples: pid,
timestamp, SM %, memory %; the 5 Hz device utilization samples); the device's busy time is then
split by those weights, as the agent splits it, and compared with each worker's true GPU time
(batches x seconds per batch measured alone; run 1: CUDA-event time, which overstates under
contention). Prints one markdown table: the error of each estimator on each worker of each
capture, and each estimator's worst and mean worst error; then a second: each estimator on 60
random phase sets of the window-owner model the simulator uses, to tell an edge that holds from
one fitted to the captures' phases. Standard library only.
"""
import bisect
import glob
import json
import os
import random
import sys

MAX_PERIOD_US = 2_000_000  # the agent's cap on the time one sample stands for


def load_raw(path):
    """nvml_probe.py's nvml-raw.jsonl: per-process and device samples, read once a second."""
    procs, device = {}, {}
    with open(path) as f:
        for i, line in enumerate(f):
            if i == 0:
                continue
            d = json.loads(line)["devices"][0]
            for ts, v in d["samples"]:
                device[ts] = v
            if isinstance(d["proc_util"], list):
                for s in d["proc_util"]:
                    procs[(s["pid"], s["ts"])] = (s["sm"], s["mem"])
    return procs, device


def load_polled(path):
    """probe_fast.py's p-<period>.jsonl."""
    procs, device = {}, {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if isinstance(d["p"], list):
                for pid, ts, sm, mem in d["p"]:
                    procs[(pid, ts)] = (sm, mem)
            if isinstance(d["d"], list):
                for ts, v in d["d"]:
                    device[ts] = v
    return procs, device


def counted_truth(run_dir, calibrations):
    per_batch = sum(json.load(open(os.path.join(run_dir, c)))["s_per_batch"]
                    for c in calibrations) / len(calibrations)
    truth = {}
    for f in sorted(glob.glob(os.path.join(run_dir, "w-*.json"))):
        w = json.load(open(f))
        truth[w["pid"]] = w["batches"] * per_batch
    return truth


def samples_of(procs, pids):
    return sorted((ts, pid, sm, mem) for (pid, ts), (sm, mem) in procs.items() if pid in pids)


def period_weighted(procs, device, pids):
    """Today's agent: SM % x the time since the previous distinct sample timestamp."""
    w = dict.fromkeys(pids, 0.0)
    previous = group = None
    period = 0
    for ts, pid, sm, _ in samples_of(procs, pids):
        if group is None or ts != group:
            previous, group = group, ts
            period = min(MAX_PERIOD_US, ts - previous) if previous else 1_000_000
        w[pid] += sm * period
    return w


def own_period(procs, device, pids):
    """SM % x the time since the same process's previous sample."""
    w, last = dict.fromkeys(pids, 0.0), {}
    for ts, pid, sm, _ in samples_of(procs, pids):
        w[pid] += sm * (min(MAX_PERIOD_US, ts - last[pid]) if pid in last else 1_000_000)
        last[pid] = ts
    return w


def field_sum(index):
    def estimate(procs, device, pids):
        w = dict.fromkeys(pids, 0.0)
        for sample in samples_of(procs, pids):
            w[sample[1]] += 1 if index is None else sample[index]
        return w
    return estimate


def device_presence(half_width_us):
    """Each 200 ms device sample's busy time, split among the processes with a sample within
    `half_width_us` of its window, by their SM %."""
    def estimate(procs, device, pids):
        samples = samples_of(procs, pids)
        keys = [s[0] for s in samples]
        times = sorted(device)
        w = dict.fromkeys(pids, 0.0)
        for a, b in zip(times, times[1:]):
            if device[b] == 0:
                continue
            present = {}
            lo = bisect.bisect_right(keys, a - half_width_us)
            hi = bisect.bisect_right(keys, b + half_width_us)
            for _, pid, sm, _ in samples[lo:hi]:
                present[pid] = max(present.get(pid, 0), sm)
            total = sum(present.values())
            if total == 0:
                continue
            for pid, sm in present.items():
                w[pid] += device[b] * (b - a) * sm / total
        return w
    return estimate


def even(procs, device, pids):
    return dict.fromkeys(pids, 1.0)


ESTIMATORS = [
    ("SM % x time since the previous sample (agent today)", period_weighted),
    ("SM % x time since the process's own previous sample", own_period),
    ("sample count (per-window presence)", field_sum(None)),
    ("sum of SM %", field_sum(2)),
    ("sum of memory-utilization %", field_sum(3)),
    ("device samples x presence, +-100 ms", device_presence(100_000)),
    ("device samples x presence, +-300 ms", device_presence(300_000)),
    ("device samples x presence, +-500 ms", device_presence(500_000)),
    ("device samples x presence, +-1 s", device_presence(1_000_000)),
    ("evenly", even),
]


def captures(h200):
    run2 = os.path.join(h200, "run2-timeslice-counted")
    run3 = os.path.join(h200, "run3-polling")
    run4 = os.path.join(h200, "run4-cupti")
    run1 = os.path.join(h200, "run1-timeslice-3users")
    t2 = counted_truth(run2, ["cal-before.json", "cal-after.json"])
    t3 = counted_truth(run3, ["cal.json"])
    t4 = counted_truth(run4, ["cal.json"])
    t1 = {}
    for f in glob.glob(os.path.join(run1, "worker-*.json")):
        w = json.load(open(f))
        t1[w["pid"]] = w["gpu_busy_s"]
    yield "run2 (1 s reads)", load_raw(os.path.join(run2, "nvml-raw.jsonl")), t2
    yield "run3 (1 s reads)", load_polled(os.path.join(run3, "p-1.jsonl")), t3
    yield "run3 (200 ms reads)", load_polled(os.path.join(run3, "p-0.2.jsonl")), t3
    yield "run4 (200 ms reads)", load_polled(os.path.join(run4, "p-0.2.jsonl")), t4
    yield "run1 (1 s reads; CUDA-event truth)", load_raw(os.path.join(run1, "nvml-raw.jsonl")), t1


def owner_model_capture(duties, phases_ms, rng, seconds=40, window_ms=200):
    """One run of the window-owner model the simulator uses (docs/scenarios.md, Observations):
    workers busy for `duty` of every second from their phase, time-sliced at 1 ms; each 200 ms
    window's device value goes whole to the worker running as it closes (the last that ran when
    none is). Returns what an every-window reader gets (per-process and device samples) and the
    truth (each worker's GPU seconds), in load_polled's form."""
    pids = [500 + i for i in range(len(duties))]
    truth = dict.fromkeys(pids, 0.0)
    procs, device = {}, {}
    last, busy_ms = None, 0
    for t in range(seconds * 1000):
        running = [i for i, d in enumerate(duties) if (t - phases_ms[i]) % 1000 < d * 1000]
        if running:
            busy_ms += 1
            for i in running:
                truth[pids[i]] += 0.001 / len(running)
            last = running[rng.randrange(len(running))]
        if (t + 1) % window_ms == 0:
            ts = (t + 1) * 1000
            device[ts] = round(100 * busy_ms / window_ms)
            if device[ts] > 0 and last is not None:
                procs[(pids[last], ts)] = (device[ts], 0)
            busy_ms = 0
    return (procs, device), truth


def model_table(runs=60, seed=5):
    """Each estimator's worst error over `runs` random phase sets of the 20/40/60% workers: does
    an estimator's edge on the five captures survive phases they did not have?"""
    rng = random.Random(seed)
    worst = {label: [] for label, _ in ESTIMATORS}
    for _ in range(runs):
        phases = [rng.randrange(1000) for _ in range(3)]
        (procs, device), truth = owner_model_capture([0.2, 0.4, 0.6], phases, rng)
        for label, estimate in ESTIMATORS:
            w = estimate(procs, device, set(truth))
            total_w, total_t = sum(w.values()), sum(truth.values())
            if total_w > 0:
                worst[label].append(max(abs(w[p] / total_w * total_t - truth[p]) / truth[p]
                                        for p in truth))
    print(f"\n| estimator | window-owner model, {runs} phase sets: mean worst | median worst "
          "| worst |")
    print("|---|---|---|---|")
    for label, v in worst.items():
        if not v:
            print(f"| {label} | n/a (the model has no memory %) | | |")
            continue
        v.sort()
        print(f"| {label} | {100 * sum(v) / len(v):.0f}% | {100 * v[len(v) // 2]:.0f}% "
              f"| {100 * v[-1]:.0f}% |")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "data")
    runs = list(captures(os.path.join(data, "h200")))
    header = "| estimator | " + " | ".join(name for name, _, _ in runs) + " | worst | mean worst |"
    print(header)
    print("|" + "---|" * (len(runs) + 3))
    for label, estimate in ESTIMATORS:
        cells, worst = [], []
        for _, (procs, device), truth in runs:
            w = estimate(procs, device, set(truth))
            total_w, total_t = sum(w.values()), sum(truth.values())
            errors = [100 * (w[p] / total_w * total_t - truth[p]) / truth[p] for p in sorted(truth)]
            cells.append(" / ".join(f"{e:+.0f}%" for e in errors))
            worst.append(max(abs(e) for e in errors))
        print(f"| {label} | " + " | ".join(cells) +
              f" | {max(worst):.0f}% | {sum(worst) / len(worst):.0f}% |")
    model_table()


if __name__ == "__main__":
    main()
