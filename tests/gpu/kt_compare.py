"""Sums up tests/gpu/check_kernel_time.sh: the tracer's kernel time against counted work.

For each group of concurrent workers: truth_i = batches_i x seconds per batch alone (calibrated);
kernel_i = the tracer's busy time over the worker's window. "raw" compares kernel_i with truth_i
(kernel time leaves out the launch gaps inside a batch, so a few % under is expected); "split"
is what attribution does: the group's time (here the sum of the truths, the device's busy time)
split by kernel_i / sum(kernel), against truth_i. Target: |split| <= 2% per worker.
"""
import json
import os
import sys

out = sys.argv[1]
TARGET = 0.02


def load(name):
    try:
        lines = open(os.path.join(out, name + ".json")).read().strip().splitlines()
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def pct(x):
    return f"{100 * x:+.1f}%"


report = {"groups": {}, "overhead": {}, "profiler": {}}
calibrate = load("calibrate")
lines = []
if not calibrate:
    print("no calibration: nothing to compare (see calibrate.err)")
    sys.exit(1)
lines.append(f"calibrate: {calibrate['s_per_batch'] * 1000:.4f} ms per batch alone")

plain = [w for w in (load("tiny-plain"), load("tiny-plain-2")) if w]
traced = [w for w in (load("tiny-traced"), load("tiny-traced-2")) if w]
if plain and traced:
    rate_plain = sum(w["kernels_per_s"] for w in plain) / len(plain)
    rate_traced = sum(w["kernels_per_s"] for w in traced) / len(traced)
    wall_plain = sum(w["wall_s"] for w in plain) / len(plain)
    wall_traced = sum(w["wall_s"] for w in traced) / len(traced)
    counted = [w.get("tracer", {}) or {} for w in traced]
    kernels = [sum(d["kernels"] for d in c.get("devices", {}).values()) for c in counted]
    report["overhead"] = {"kernels_per_s_plain": rate_plain, "kernels_per_s_traced": rate_traced,
                          "wall_s_plain": wall_plain, "wall_s_traced": wall_traced,
                          "wall_overhead": wall_traced / wall_plain - 1, "tracer_kernels": kernels}
    lines.append(f"overhead: {rate_plain:,.0f} kernels/s plain, {rate_traced:,.0f} traced; "
                 f"wall {wall_plain:.3f} s -> {wall_traced:.3f} s ({pct(wall_traced / wall_plain - 1)}); "
                 f"tracer counted {kernels} of 200,000 (+ warm-up) kernels")


def group(title, names, unit_of):
    workers = [(n, load(n)) for n in names]
    workers = [(n, w) for n, w in workers if w and "batches" in w]
    if not workers:
        lines.append(f"{title}: no results")
        return
    truths = {n: w["batches"] * unit_of(n) for n, w in workers}
    kernels = {n: w["kernel_s"] for n, w in workers}
    total_truth, total_kernel = sum(truths.values()), sum(kernels.values())
    rows = {}
    lines.append(f"{title}: device time (sum of truths) {total_truth:.3f} s, kernel time {total_kernel:.3f} s")
    lines.append(f"  {'worker':>8} {'duty':>5} {'truth s':>8} {'kernel s':>8} {'raw':>7} {'split':>7} {'flags':>5} {'errors':>6}")
    for n, w in workers:
        raw = kernels[n] / truths[n] - 1 if truths[n] else float("nan")
        split = (kernels[n] / total_kernel * total_truth) / truths[n] - 1 if total_kernel and truths[n] else float("nan")
        after = w.get("tracer_after") or {}
        rows[n] = {"duty": w["duty"], "truth_s": truths[n], "kernel_s": kernels[n], "raw": raw,
                   "split": split, "flags": after.get("flags"), "errors": after.get("errors"),
                   "within_target": abs(split) <= TARGET}
        lines.append(f"  {n:>8} {w['duty']:>5} {truths[n]:>8.3f} {kernels[n]:>8.3f} {pct(raw):>7} "
                     f"{pct(split):>7} {after.get('flags', '-'):>5} {after.get('errors', '-'):>6}")
    report["groups"][title] = rows


unit = calibrate["s_per_batch"]
group("time-slicing", ["ts-0", "ts-1", "ts-2"], lambda n: unit)
mps_units = {f"mps-{i}": (load(f"mps-cal-{i}") or {}).get("s_per_batch") for i in (0, 1)}
if all(mps_units.values()):
    group("mps", ["mps-0", "mps-1"], lambda n: mps_units[n])
else:
    lines.append("mps: not run or not calibrated (mps.log)")

prof = load("profiler")
if prof:
    after = prof.get("tracer_after") or {}
    report["profiler"] = {"profiler_kernels": prof.get("profiler_kernels"), "flags": after.get("flags"),
                          "errors": after.get("errors"), "kernel_s": prof.get("kernel_s")}
    lines.append(f"profiler: PyTorch's profiler saw {prof.get('profiler_kernels')} kernels; tracer flags "
                 f"{after.get('flags')} (2 = stood aside), errors {after.get('errors')}, kernel s {prof.get('kernel_s'):.3f}")
else:
    lines.append("profiler: no result (profiler.err)")
exits = open(os.path.join(out, "exits.txt")).read() if os.path.exists(os.path.join(out, "exits.txt")) else ""
bad = [l for l in exits.splitlines() if not l.endswith(" exit 0")]
lines.append("exits: all 0" if not bad else "exits not 0: " + "; ".join(bad))
report["exits_not_zero"] = bad
print("\n".join(lines))
json.dump(report, open(os.path.join(out, "report.json"), "w"), indent=1)
