#!/usr/bin/env bash
# The web UI's browser test (ui_test.mjs) against a real server: writes the demo ledger, serves
# it with `gpuledger server` on a free port (and again behind a bearer token, and an empty
# ledger beside them), and drives the page in Debian's chromium.
# Skips (77), saying why, only where the browser or playwright-core is not installed
# (scripts/install-deps.sh installs both).
#   run_ui_test.sh GPULEDGER_BIN OUT_DIR
set -euo pipefail
bin=$1
out=$2
here="$(cd "$(dirname "$0")" && pwd)"
chromium="${CHROMIUM:-$(command -v chromium || true)}"
if [ -z "$chromium" ]; then
  echo "SKIP: no chromium to drive the UI in (apt-get install chromium; scripts/install-deps.sh does)"
  exit 77
fi
if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "SKIP: playwright-core is not installed (npm ci in tests/ui; scripts/install-deps.sh does)"
  exit 77
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-ui.XXXXXX")"
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
"$bin" demo --no-serve --out "$work/demo" >"$work/demo.log" 2>&1 || {
  cat "$work/demo.log"
  exit 1
}
# Serves the ledger file $1 with the given extra flags; sets `served` to the server's address.
# (Not in a subshell: the server must stay this shell's child, for cleanup to stop it.)
serve() {
  local ledger=$1
  shift
  local log="$work/server-${#servers[@]}.log"
  "$bin" server --ledger "sqlite:$ledger" --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  servers+=($!)
  served=""
  for _ in $(seq 1 100); do
    served="$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -n1 || true)"
    [ -n "$served" ] && return 0
    kill -0 "${servers[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: the server did not say where it listens"
  cat "$log"
  exit 1
}
serve "$work/demo/gpuledger.db"
url="$served"
printf 'ui-test-token\n' >"$work/token"
serve "$work/demo/gpuledger.db" --token-file "$work/token"
guarded="$served"
# A fresh install: the server makes its ledger and has recorded nothing yet (its one agent is
# not up: port 1 answers nothing).
serve "$work/empty.db" --source scrape --targets 127.0.0.1:1
empty="$served"
# Two clusters in one ledger (issue 64): the demo's, and a small one's collections replayed into a
# copy of it as cluster us-infer.
cat >"$work/us-infer.yaml" <<'YAML'
name: us-infer
cluster: us-infer
start: "2026-11-23T00:00:00Z"
duration: 12h
nodes:
  - {name: h200-mig-0, gpu_model: H200-141GB, gpus: 1, sharing: mig, mig_layout: [3g.71gb, 2g.35gb]}
workloads:
  - {namespace: serving, name: chat, mig_profile: 3g.71gb, compute: {profile: constant, duty: 0.5}, memory: {bytes: 30GiB}}
YAML
cp "$work/demo/gpuledger.db" "$work/multi.db"
{ "$bin" demo --no-serve --scenario "$work/us-infer.yaml" --out "$work/us-infer" \
    --expositions "$work/us-infer-x" &&
  "$bin" server --source "files=$work/us-infer-x" --cluster us-infer \
    --ledger "sqlite:$work/multi.db" --backfill-only; } >"$work/multi.log" 2>&1 || {
  cat "$work/multi.log"
  exit 1
}
serve "$work/multi.db"
multi="$served"
"$bin" report --db "$work/demo/gpuledger.db" --by namespace --window 7d --format json \
  >"$work/cli-namespace.json"
mkdir -p "$out"
DEMO_LOG="$work/demo.log" CLI_REPORT="$work/cli-namespace.json" MULTI_URL="$multi" \
  CHROMIUM="$chromium" node "$here/ui_test.mjs" "$url" "$out" "$guarded" ui-test-token "$empty"
