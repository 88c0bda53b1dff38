#!/bin/sh
# The ledger read path at scale (issue 32), as `make bench` runs it: writes a 10,000-GPU,
# 30-day SQLite ledger once (bench/ledger_generator), then prints one markdown table row per
# figure: a fresh `gpuledger report` process per grouping (cold: read, price and sum), the same
# answers from a kept snapshot (warm, bench/read_path), plain SQL over the same columns, and the
# memory-bandwidth floor of the scan. Timings are measurements, never test assertions.
#
# Usage: bench/read_path.sh [BUILD_DIR]   (GPUS=10000 DAYS=30 BENCH_DIR=/var/tmp/gpuledger-bench)
set -eu
build=${1:-build}
gpus=${GPUS:-10000}
days=${DAYS:-30}
dir=${BENCH_DIR:-/var/tmp/gpuledger-bench}
db="$dir/ledger-${gpus}x${days}.db"
mkdir -p "$dir"
if [ ! -f "$db" ]; then
  echo "writing $db (once; about 5 minutes at 10,000 GPUs)" >&2
  "$build/bench/ledger_generator" --db "$db" --gpus "$gpus" --days "$days" >&2
fi

# "seconds peak-MiB" of a command, its output discarded.
measure() {
  /usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.2f s | %.0f MiB", $1, $2 / 1024}'
}

echo "| figure | time | peak memory |"
echo "|---|---|---|"
for by in namespace label:team controller; do
  echo "| cold \`gpuledger report --window all --by $by\` | $(measure "$build/src/cmd/gpuledger" report --db "$db" --window all --by "$by") |"
done
if command -v sqlite3 >/dev/null; then
  echo "| plain SQL: usage summed by namespace | $(measure sqlite3 "$db" 'SELECT namespace, SUM(allocated_us), SUM(compute_us) FROM usage_hours GROUP BY namespace') |"
  echo "| plain SQL: allocation cost by namespace (join to device prices) | $(measure sqlite3 "$db" 'SELECT u.namespace, SUM(d.price_nanos * u.allocated_us / d.metered_us) FROM usage_hours u JOIN device_hours d ON d.hour_us = u.hour_us AND d.gpu_uuid = u.gpu_uuid GROUP BY u.namespace') |"
fi
"$build/bench/read_path" --db "$db" | sed 's/^/    /'
