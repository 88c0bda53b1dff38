"""A CUDA process with a known memory footprint and duty cycle, for tests/gpu/check_nvml.sh.

Holds MEM_GIB of device memory and keeps the GPU busy DUTY of every second (matmul bursts timed
with CUDA events), for SECONDS. Prints one JSON line at the end: pid, the memory it allocated,
the GPU time its kernels took (CUDA events) and the wall time, so the check compares the agent
with what the process itself measured, not only with the intended duty.
"""
import json
import os
import sys
import time

import torch

mem_gib, duty, seconds = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
dev = torch.device("cuda")
hold = torch.empty(int(mem_gib * (1 << 30)), dtype=torch.uint8, device=dev)
a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
b = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
torch.cuda.synchronize()

busy_ms = 0.0
start = time.time()
while time.time() - start < seconds:
    second = time.time()
    target = duty
    while time.time() - second < target:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(8):
            a @ b
        e1.record()
        e1.synchronize()
        busy_ms += e0.elapsed_time(e1)
    rest = 1.0 - (time.time() - second)
    if rest > 0:
        time.sleep(rest)
wall = time.time() - start
print(json.dumps({"pid": os.getpid(), "mem_gib": mem_gib, "duty": duty,
                  "allocated_bytes": hold.numel(), "reserved_bytes": torch.cuda.memory_reserved(),
                  "gpu_busy_s": busy_ms / 1000.0, "wall_s": wall}), flush=True)
