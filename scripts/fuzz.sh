#!/usr/bin/env bash
# Builds the fuzz targets (the `fuzz` preset: clang, libFuzzer, ASan+UBSan) and runs each for a
# bounded time over its corpus: the committed seeds and past findings (fuzz/corpus/<name>/),
# real inputs from ../shared/data when it is there, and what earlier runs here kept
# (build-fuzz/corpus/<name>/). Prints one markdown row a target (docs/reliability.md keeps
# them) and exits 1 when any target crashed, leaked, hung or ran out of memory; its input is
# then under build-fuzz/artifacts/<name>/ (add it to fuzz/corpus/<name>/ once fixed).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      (default 30 s, every target)
#   FUZZ_RUNS=N scripts/fuzz.sh                            (N inputs a target from seed 1: what
#                                                           CI runs, the same inputs every time)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
shared="$(realpath -m ../shared/data)"

cmake --preset fuzz >/dev/null
# The build's output is kept apart from the table; when it fails, its end is what CI shows.
if ! cmake --build build-fuzz --target fuzz_all -j "${JOBS:-2}" >build-fuzz/build.log 2>&1; then
  tail -n 40 build-fuzz/build.log >&2
  echo "fuzz: the fuzz targets did not build (clang; build-fuzz/build.log)" >&2
  exit 1
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in fuzz/*_fuzz.cc; do targets+=("$(basename "$f" _fuzz.cc)"); done
fi

# Real inputs of each kind from ../shared/data, never copied into the repository.
seed_shared() {
  local name="$1" into="$2"
  [[ -d "$shared" ]] || return 0
  case "$name" in
    exposition) find "$shared/h200" -name '*metrics*.txt' -exec cp -t "$into" {} + ;;
    dcgm_exporter) find "$shared/dcgm-exporter/samples" -type f -exec cp -t "$into" {} + ;;
    cgroup) find "$shared/cgroup" -name '*.txt' -exec cp -t "$into" {} + ;;
    focus_bill) find "$shared/pricing" -name '*.csv' -size -256k -exec cp -t "$into" {} + ;;
  esac
}

echo "| target | seconds | executions | per second | corpus | crashes |"
echo "|---|---|---|---|---|---|"
failed=0
for name in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$name"
  artifacts="build-fuzz/artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  cp -n fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
  seed_shared "$name" "$corpus"
  log="build-fuzz/fuzz-$name.log"
  status=0
  bound=(-max_total_time="$seconds")
  [[ -n "${FUZZ_RUNS:-}" ]] && bound=(-runs="$FUZZ_RUNS" -seed=1 -max_total_time=300)
  ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/fuzz_$name" "${bound[@]}" \
    -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  per_second="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)"
  crashes="$(find "$artifacts" -type f | wc -l)"
  echo "| $name | ${FUZZ_RUNS:+runs }${FUZZ_RUNS:-$seconds} | $runs | $per_second | $(find "$corpus" -type f | wc -l) | $crashes |"
  if [[ $status -ne 0 || $crashes -ne 0 ]]; then
    failed=1
    echo "fuzz: $name: exit $status; see $log and $artifacts/" >&2
  fi
done
exit "$failed"
