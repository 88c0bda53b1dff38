#!/usr/bin/env bash
# The NVML path on a real NVIDIA GPU (issues: agent item 9, H200 validation). Not run in CI:
# it needs a GPU, its driver and PyTorch. Never changes GPU settings (no MIG/MPS changes, no
# resets). Usage: tests/gpu/check_nvml.sh BUILD_DIR OUT_DIR [SECONDS]
#
# 1. inventory: `nvidia-smi -q -x` beside what our NVML source reads (agent /metrics);
# 2. three concurrent CUDA processes (8/16/24 GiB, 20/40/60% duty) under the agent, each as its
#    own Unix user so the agent (without a kubelet) attributes them separately; compares memory
#    (must be exact) and compute share (error against each process's own CUDA-event time and
#    the intended duty, and against the device's utilization);
# 3. churn: short processes starting and ending during the run;
# 4. the cost of each NVML call (bench/nvml_latency) and the agent's CPU per cycle.
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
seconds=${3:-60}
bin=$build/src/cmd/gpuledger
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

nvidia-smi -q -x > "$out/nvidia-smi-before.xml"
nvidia-smi --query-gpu=uuid,name,memory.total,mig.mode.current,power.draw,enforced.power.limit \
  --format=csv > "$out/nvidia-smi-inventory.csv"

"$bin" agent --node-name gpu-check --listen 127.0.0.1:9400 --interval 1s \
  --pod-resources-socket /nonexistent/kubelet.sock --cri-socket /nonexistent/cri.sock \
  > "$out/agent.out" 2> "$out/agent.err" &
agent=$!
sleep 3
curl -s 127.0.0.1:9400/metrics > "$out/metrics-start.txt"

# Three workers, each its own uid so the agent keeps them apart as user:<uid>.
pids=()
i=0
for spec in "8 0.2" "16 0.4" "24 0.6"; do
  uid=$((61000 + i))
  setpriv --reuid=$uid --regid=$uid --clear-groups env HOME=/tmp \
    python3 "$here/worker.py" $spec "$seconds" > "$out/worker-$i.json" 2> "$out/worker-$i.err" &
  pids+=($!)
  i=$((i + 1))
done

# Churn: short-lived processes while the three run (as their own uid, 61010+).
for k in 1 2 3; do
  sleep $((seconds / 4))
  setpriv --reuid=$((61010 + k)) --regid=$((61010 + k)) --clear-groups env HOME=/tmp \
    python3 "$here/worker.py" 1 0.5 5 > "$out/churn-$k.json" 2>&1 &
done
sleep 5
nvidia-smi -q -x > "$out/nvidia-smi-during.xml"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits > "$out/nvidia-smi-apps.csv"
curl -s 127.0.0.1:9400/metrics > "$out/metrics-during.txt"
wait "${pids[@]}"
sleep 2
curl -s 127.0.0.1:9400/metrics > "$out/metrics-end.txt"
read -r utime stime < <(awk '{print $14, $15}' /proc/$agent/stat)
echo "agent_cpu_seconds $(( (utime + stime) ))/$(getconf CLK_TCK)" > "$out/agent-cpu.txt"
kill $agent
wait $agent 2>/dev/null

if [ -x "$build/bench/nvml_latency" ]; then
  "$build/bench/nvml_latency" > "$out/nvml-latency.txt" 2>&1
fi
python3 "$here/compare.py" "$out" | tee "$out/report.txt"
