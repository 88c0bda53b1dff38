#!/usr/bin/env bash
# Agent footprint for 8 GPUs and 200 containers on the NVML stand-in (issue: agent).
#   1. CPU per cycle outside NVML: bench/agent_footprint (Google Benchmark).
#   2. Peak RSS and CPU of the real `gpuledger agent` process against `gpuledger-sim-node`.
# Usage: bench/agent_footprint.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-30}
bin=$build/src/cmd/gpuledger
work=$(mktemp -d)
trap 'kill $node_pid $agent_pid 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== CPU per cycle outside NVML"
echo "\$ $build/bench/agent_footprint --benchmark_min_time=2"
"$build/bench/agent_footprint" --benchmark_min_time=2

# The same scenario as the benchmark: 8 H100s shared by fraction, 200 pods.
{
  printf 'name: footprint\nstart: "2026-11-23T00:00:00Z"\nduration: 24h\n'
  printf 'nodes:\n  - {name: big, gpu_model: H100-80GB, gpus: 8, sharing: fractional}\nworkloads:\n'
  for i in $(seq 0 199); do
    printf '  - {namespace: ns%d, name: w%d, fraction: 0.04, compute: {profile: constant, duty: 0.02}, memory: {bytes: 512MiB}}\n' $((i % 10)) "$i"
  done
} > "$work/scenario.yaml"

"$build/testing/sim_node/gpuledger-sim-node" --scenario "$work/scenario.yaml" --node big \
  --dir "$work/node" > "$work/node.out" 2>&1 &
node_pid=$!
for _ in $(seq 50); do grep -q '^GPULEDGER_NVML_SCENARIO' "$work/node.out" && break; sleep 0.2; done
cmd=$(grep '^GPULEDGER_NVML_SCENARIO' "$work/node.out" | sed 's/127.0.0.1:9400/127.0.0.1:0/')
echo
echo "== the real agent process, ${seconds}s at 1 cycle/s"
echo "\$ $cmd"
env ${cmd%% *} ${cmd#* } > "$work/agent.out" 2> "$work/agent.err" &
agent_pid=$!
sleep "$seconds"
hwm_kib=$(awk '/VmHWM/ {print $2}' /proc/$agent_pid/status)
rss_kib=$(awk '/VmRSS/ {print $2}' /proc/$agent_pid/status)
anon_kib=$(awk '/RssAnon/ {print $2}' /proc/$agent_pid/status)
file_kib=$(awk '/RssFile/ {print $2}' /proc/$agent_pid/status)
pss_kib=$(awk '/^Pss:/ {print $2}' /proc/$agent_pid/smaps_rollup)
standin_kib=$(awk -v lib=libnvidia-ml '/^[0-9a-f]+-/ {hit = index($6, lib) > 0} /^Rss:/ && hit {s += $2} END {print s + 0}' /proc/$agent_pid/smaps)
read -r utime stime < <(awk '{print $14, $15}' /proc/$agent_pid/stat)
ticks=$(getconf CLK_TCK)
port=$(grep -o 'http://[^ ]*/metrics' "$work/agent.out" | head -1)
cycles=$(curl -s "$port" | awk '/^gpuledger_agent_cycle_duration_seconds_count/ {print $2}')
containers=$(curl -s "$port" | grep -c '^gpuledger_container_allocated_gpu_seconds_total' || true)
awk -v hwm="$hwm_kib" -v rss="$rss_kib" -v anon="$anon_kib" -v file="$file_kib" -v pss="$pss_kib" -v standin="$standin_kib" -v u="$utime" -v s="$stime" -v t="$ticks" -v c="$cycles" -v n="$containers" 'BEGIN {
  cpu_ms = (u + s) / t * 1000 / c
  printf "containers exported: %d, cycles: %d\n", n, c
  printf "peak RSS: %.1f MiB (now %.1f MiB)   target < 16 MiB   dcgm-exporter ~400-500 MiB: %.0fx smaller\n", hwm / 1024, rss / 1024, 400 * 1024 / hwm
  printf "  of which private (anonymous) %.1f MiB, shared library pages %.1f MiB (NVML stand-in %.1f MiB); PSS %.1f MiB\n", anon / 1024, file / 1024, standin / 1024, pss / 1024
  printf "CPU per cycle, whole process incl. NVML stand-in: %.2f ms\n", cpu_ms
}'
