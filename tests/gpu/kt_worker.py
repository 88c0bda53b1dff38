"""A CUDA process for tests/gpu/check_kernel_time.sh that counts its own work and reads what the
injected kernel-time tracer (libgpuledger-kerneltime.so) published about it.

Usage:
  kt_worker.py calibrate SECONDS      alone on the GPU: seconds per batch (the truth's unit)
  kt_worker.py duty DUTY SECONDS      busy DUTY of every second; batches counted
  kt_worker.py tiny KERNELS           KERNELS tiny kernels back to back: kernels/s (overhead)
  kt_worker.py profiler SECONDS       as `duty 0.5`, under PyTorch's own profiler (CUPTI's one
                                      subscriber): the profiler must still see its kernels

Truth (worker2.py of the H200 captures): batches done x the uncontended seconds per batch from a
calibrate run alone, since the GPU's own timers under time-slicing also count slices other
contexts held. The tracer's figure is the difference of its published busy time over the same
window, read from $GPULEDGER_KERNELTIME_DIR/<pid> (layout: src/sources/kerneltime/publication.h).
Prints one JSON line.
"""
import json
import os
import struct
import sys
import time

import torch

HEADER = struct.Struct("=8sIIQqQIIqq")  # magic .. updated_unix_ns: 64 bytes
DEVICE = struct.Struct("=96sQQQQ")      # uuid, busy_ns, kernels, clipped_ns, reserved
FILE_BYTES = HEADER.size + 16 * DEVICE.size + 8


def published():
    """The tracer's file for this process: flags, errors and per-device figures; None if absent."""
    folder = os.environ.get("GPULEDGER_KERNELTIME_DIR")
    if not folder:
        return None
    path = os.path.join(folder, str(os.getpid()))
    for _ in range(100):
        try:
            raw = open(path, "rb").read()
        except OSError:
            return None
        if len(raw) != FILE_BYTES:
            return {"error": f"{len(raw)} bytes"}
        (magic, version, count, seq_begin, pid, errors, flags, _, started, updated) = HEADER.unpack_from(raw)
        (seq_end,) = struct.unpack_from("=Q", raw, FILE_BYTES - 8)
        if seq_begin != seq_end or seq_begin % 2:
            time.sleep(0.001)
            continue
        devices = {}
        for i in range(count):
            uuid, busy, kernels, clipped, _ = DEVICE.unpack_from(raw, HEADER.size + i * DEVICE.size)
            devices[uuid.split(b"\0")[0].decode()] = {"busy_ns": busy, "kernels": kernels, "clipped_ns": clipped}
        return {"magic": magic.rstrip(b"\0").decode(), "version": version, "pid": pid,
                "errors": errors, "flags": flags, "devices": devices}
    return {"error": "torn 100 times"}


def busy_ns(p):
    return sum(d["busy_ns"] for d in (p or {}).get("devices", {}).values())


def settled():
    """Reads the file once the tracer has flushed what ran so far (it flushes every 100 ms)."""
    torch.cuda.synchronize()
    time.sleep(0.35)
    return published()


mode = sys.argv[1]
dev = torch.device("cuda")
a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
b = torch.randn(4096, 4096, device=dev, dtype=torch.float16)


def batch():
    for _ in range(8):
        a @ b


for _ in range(20):
    batch()
torch.cuda.synchronize()
result = {"pid": os.getpid(), "mode": mode}

if mode == "calibrate":
    seconds = float(sys.argv[2])
    n, t0 = 0, time.time()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    while time.time() - t0 < seconds:
        for _ in range(50):
            batch()
        n += 50
        torch.cuda.synchronize()
    e1.record()
    e1.synchronize()
    result.update(batches=n, gpu_s=e0.elapsed_time(e1) / 1000, s_per_batch=e0.elapsed_time(e1) / 1000 / n)
elif mode == "tiny":
    kernels = int(sys.argv[2])
    x = torch.zeros(256, device=dev)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(kernels):
        x.add_(1.0)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    result.update(kernels=kernels, wall_s=wall, kernels_per_s=kernels / wall, tracer=settled())
elif mode in ("duty", "profiler"):
    duty = float(sys.argv[2]) if mode == "duty" else 0.5
    seconds = float(sys.argv[3] if mode == "duty" else sys.argv[2])
    profiler = None
    if mode == "profiler":
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
        profiler.__enter__()
    before = settled()
    n, start = 0, time.time()
    while time.time() - start < seconds:
        second = time.time()
        while time.time() - second < duty:
            batch()
            torch.cuda.synchronize()
            n += 1
        rest = 1.0 - (time.time() - second)
        if rest > 0:
            time.sleep(rest)
    wall = time.time() - start
    after = settled()
    result.update(duty=duty, batches=n, wall_s=wall, tracer_before=before, tracer_after=after,
                  kernel_s=(busy_ns(after) - busy_ns(before)) / 1e9)
    if profiler is not None:
        profiler.__exit__(None, None, None)
        result["profiler_kernels"] = sum(1 for e in profiler.events() if str(getattr(e, "device_type", "")).endswith("CUDA"))
else:
    sys.exit(f"unknown mode {mode}")
print(json.dumps(result), flush=True)
