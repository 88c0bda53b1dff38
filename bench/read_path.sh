#!/bin/sh
# The ledger read path at scale (issue 32), as `make bench` runs it: writes a 10,000-GPU,
# 30-day SQLite ledger once (bench/ledger_generator), then prints one markdown table row per
# figure: a fresh `gpuledger report` process per grouping (cold: the first keeping each day
# summed, the others reading the kept days), the same
# answers from a kept snapshot (warm, bench/read_path), plain SQL reading the same records, and the
# memory-bandwidth floor of the scan. Timings are measurements, never test assertions.
#
# Usage: bench/read_path.sh [BUILD_DIR]   (GPUS=10000 DAYS=30 BENCH_DIR=/var/tmp/gpuledger-bench
#        PG_URL=postgres://...: the same figures on PostgreSQL too)
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
# The first report sums each day from its rows and keeps it (src/ledger/day_rollup.h); later
# ones read the kept days. Forget what an earlier run kept, so the first row is that first report.
if command -v sqlite3 >/dev/null; then
  sqlite3 "$db" 'DELETE FROM day_rollups' 2>/dev/null || true
fi
echo "| cold, first report: sums and keeps each day (\`--by namespace\`) | $(measure "$build/src/cmd/gpuledger" report --db "$db" --window all --by namespace) |"
for by in namespace label:team controller; do
  echo "| cold \`gpuledger report --window all --by $by\`, days kept | $(measure "$build/src/cmd/gpuledger" report --db "$db" --window all --by "$by") |"
done
if command -v sqlite3 >/dev/null; then
  # Since schema 8 (issue 37) a usage row's figures are inside its hour's record, which SQL
  # cannot open: the plain-SQL floor is reading every record once.
  echo "| plain SQL: read every hour record | $(measure sqlite3 "$db" 'SELECT count(*), sum(length(record)) FROM hours') |"
fi
"$build/bench/read_path" --db "$db" | sed 's/^/    /'

# The same figures on PostgreSQL, with PG_URL=postgres://... (an empty database is written once
# by the generator: about 9 minutes at 10,000 GPUs; scripts/ci-postgres.sh start DIR gives one).
if [ -n "${PG_URL:-}" ]; then
  hours=$(psql "$PG_URL" -Atc 'SELECT count(*) FROM hours' 2>/dev/null || echo 0)
  if [ "$hours" = 0 ]; then
    echo "writing the ledger into $PG_URL (once; about 9 minutes at 10,000 GPUs)" >&2
    "$build/bench/ledger_generator" --db "$PG_URL" --gpus "$gpus" --days "$days" >&2
  fi
  psql "$PG_URL" -qc 'DELETE FROM day_rollups' >/dev/null 2>&1 || true
  echo
  echo "PostgreSQL:"
  echo
  echo "| figure | time | peak memory |"
  echo "|---|---|---|"
  echo "| cold, first report: sums and keeps each day (\`--by namespace\`) | $(measure "$build/src/cmd/gpuledger" report --db "$PG_URL" --window all --by namespace) |"
  for by in namespace label:team controller; do
    echo "| cold \`gpuledger report --window all --by $by\`, days kept | $(measure "$build/src/cmd/gpuledger" report --db "$PG_URL" --window all --by "$by") |"
  done
  "$build/bench/read_path" --db "$PG_URL" | sed 's/^/    /'
fi
