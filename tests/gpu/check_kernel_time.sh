#!/usr/bin/env bash
# The kernel-time tracer on a real NVIDIA GPU (issue 31). Not run in CI: it needs a GPU, its
# driver and PyTorch (whose own libcupti the tracer uses). Never changes GPU settings (the MPS
# daemon of phase 4 is a process, stopped at the end). About 4 minutes at SECONDS=25.
# Usage: tests/gpu/check_kernel_time.sh LIBGPULEDGER_KERNELTIME_SO OUT_DIR [SECONDS]
#
# 1. calibrate: one worker alone, seconds per batch (the truth's unit);
# 2. overhead: 200,000 tiny kernels back to back, without and with the tracer (kernels/s, wall);
# 3. time-slicing: three workers at 20/40/60% duty with the tracer; each one's kernel time over
#    its window against its counted work, and the device's time split by kernel time;
# 4. MPS: two clients (30% / 60% active threads, 50% / 30% duty), each calibrated alone under
#    MPS first, the same comparison;
# 5. a worker under PyTorch's profiler: the profiler still sees its kernels (the tracer steps
#    aside or shares), and the application exits 0.
# report.txt and report.json in OUT_DIR say the errors; every worker's JSON line is kept.
set -uo pipefail
lib=$(realpath "${1:?path to libgpuledger-kerneltime.so}")
out=${2:?output dir}
seconds=${3:-25}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1

{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  # The CUPTI PyTorch brings: used by the tracer when the process has it loaded; named
  # explicitly below when it is not loaded by the time CUDA initializes.
  python3 - <<'EOF'
import glob, os, torch
cands = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cuda_cupti", "lib", "libcupti.so*"))
print("cupti", " ".join(sorted(cands)) or "none beside torch")
EOF
  ldd "$lib" | sed 's/^/ldd /'
} > "$out/env.txt" 2>&1
cupti=$(python3 - <<'EOF' 2>/dev/null
import glob, os, torch
c = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cuda_cupti", "lib", "libcupti.so*")))
print(os.path.realpath(c[-1]) if c else "")
EOF
)

# Runs kt_worker.py with the tracer injected; its publish directory is $out/kt/<name>.
traced() {
  local name=$1; shift
  mkdir -p "$out/kt/$name"
  env CUDA_INJECTION64_PATH="$lib" GPULEDGER_KERNELTIME_DIR="$out/kt/$name" \
    ${cupti:+GPULEDGER_CUPTI_PATH="$cupti"} \
    timeout $((seconds * 3 + 60)) python3 "$here/kt_worker.py" "$@" \
    > "$out/$name.json" 2> "$out/$name.err"
  echo "$name exit $?" >> "$out/exits.txt"
}
plain() {
  local name=$1; shift
  timeout $((seconds * 3 + 60)) python3 "$here/kt_worker.py" "$@" > "$out/$name.json" 2> "$out/$name.err"
  echo "$name exit $?" >> "$out/exits.txt"
}

# 1. The truth's unit, alone on the GPU.
plain calibrate calibrate 5

# 2. Overhead on the launch path.
plain tiny-plain tiny 200000
traced tiny-traced tiny 200000
plain tiny-plain-2 tiny 200000
traced tiny-traced-2 tiny 200000

# 3. Time-slicing: three processes contend; the default compute mode time-slices them.
i=0
for duty in 0.2 0.4 0.6; do
  traced "ts-$i" duty "$duty" "$seconds" &
  i=$((i + 1))
done
wait

# 4. MPS: a control daemon of our own (pipe and log directories under $out), two clients.
mps=$(command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin/nvidia-cuda-mps-control 2>/dev/null)
if [ -n "$mps" ]; then
  export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  timeout 10 "$mps" -d > "$out/mps.log" 2>&1
  echo "mps start $?" >> "$out/mps.log"
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 plain mps-cal-0 calibrate 5
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60 plain mps-cal-1 calibrate 5
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 traced mps-0 duty 0.5 "$seconds" &
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60 traced mps-1 duty 0.3 "$seconds" &
  wait
  echo quit | timeout 10 "$mps" >> "$out/mps.log" 2>&1
  echo "mps quit $?" >> "$out/mps.log"
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  echo "no nvidia-cuda-mps-control: MPS not checked" > "$out/mps.log"
fi

# 5. A profiler in the same process.
traced profiler profiler 10

python3 "$here/kt_compare.py" "$out" | tee "$out/report.txt"
