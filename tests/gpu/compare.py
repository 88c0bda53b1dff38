"""Compares the agent's /metrics with what the workers measured themselves (check_nvml.sh)."""
import glob
import json
import re
import sys

out = sys.argv[1]


def metrics(path):
    series = {}
    for line in open(path):
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return series


start, end = metrics(f"{out}/metrics-start.txt"), metrics(f"{out}/metrics-end.txt")
during = metrics(f"{out}/metrics-during.txt")


def total(series, name, **match):
    return sum(v for l, v in series.get(name, []) if all(l.get(k) == x for k, x in match.items()))


metered = total(end, "gpuledger_device_metered_seconds_total") - total(start, "gpuledger_device_metered_seconds_total")
busy = total(end, "gpuledger_device_busy_seconds_total") - total(start, "gpuledger_device_busy_seconds_total")
print(f"device: metered {metered:.1f} s, busy {busy:.1f} s ({100 * busy / max(metered, 1e-9):.1f}%)")
apps = {int(p): int(m) * (1 << 20) for p, m in (l.strip().split(", ") for l in open(f"{out}/nvidia-smi-apps.csv") if l.strip())}
print(f"{'worker':>8} {'duty':>5} {'own GPU s':>9} {'agent GPU s':>11} {'err vs own':>10} {'err vs duty':>11} {'mem agent':>12} {'mem smi':>12}")
for path in sorted(glob.glob(f"{out}/worker-*.json")):
    try:
        w = json.loads(open(path).read().strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"{path}: no result")
        continue
    uid = 61000 + int(re.search(r"worker-(\d+)", path).group(1))
    pod = f"user:{uid}"
    compute = total(end, "gpuledger_container_compute_gpu_seconds_total", pod=pod)
    mem_agent = total(during, "gpuledger_container_memory_used_bytes", pod=pod)
    own = w["gpu_busy_s"]
    duty_s = w["duty"] * w["wall_s"]
    print(f"{uid:>8} {w['duty']:>5.2f} {own:>9.1f} {compute:>11.1f} {100 * (compute - own) / own:>+9.1f}% "
          f"{100 * (compute - duty_s) / duty_s:>+10.1f}% {mem_agent:>12.0f} {apps.get(w['pid'], -1):>12}")
errors = total(end, "gpuledger_agent_source_errors_total")
print(f"source errors: {errors:.0f}")
for l, v in end.get("gpuledger_agent_source_errors_total", []):
    print(f"  {l} {v:.0f}")
