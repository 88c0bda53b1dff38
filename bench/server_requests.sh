#!/bin/bash
# A server's answers and memory over a large ledger (issue 32), as a dashboard asks: starts
# `gpuledger server` on LEDGER (with any further server flags), waits for its start's loads,
# then asks each request by curl (5 times; 3 for the slow ones) and prints the times, the
# answer's size and the server's RSS after each, and at the end its peak (VmHWM). Timings are
# measurements, never test assertions; this machine's noise moves them by a third run to run.
#
# Usage: bench/server_requests.sh LEDGER [SERVER FLAGS...]   (BUILD=build PORT=18099 SETTLE=40)
set -eu
ledger=$1
shift
build=${BUILD:-build}
port=${PORT:-18099}
base=http://127.0.0.1:$port
"$build/src/cmd/gpuledger" server --ledger "$ledger" --listen "127.0.0.1:$port" "$@" \
  >/tmp/gpuledger-server-requests.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 1 300); do curl -sf "$base/healthz" >/dev/null 2>&1 && break; sleep 1; done
rss() { awk '/^VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status"; }
ask() {  # NAME PATH [TIMES]
  local times=()
  for _ in $(seq 1 "${3:-5}"); do
    times+=("$(curl -s -o /tmp/gpuledger-server-answer -w '%{time_total}' "$base$2")")
  done
  printf '| %s | %s s | %s bytes | %s |\n' "$1" "${times[*]}" \
    "$(stat -c %s /tmp/gpuledger-server-answer)" "$(rss)"
}
echo "| request | times | answer | RSS after |"
echo "|---|---|---|---|"
ask "first report (the days held first)" "/api/v1/report?window=all&aggregate=namespace" 1
sleep "${SETTLE:-40}"  # the start's loads: the kept rows, then each GPU's days
echo "| started, loads done | | | $(rss) |"
ask "report by namespace" "/api/v1/report?window=all&aggregate=namespace"
ask "report by label:team" "/api/v1/report?window=all&aggregate=label:team"
ask "report by controller" "/api/v1/report?window=all&aggregate=controller"
ask "allocation 30d step=1d" "/api/v1/allocation?window=30d&aggregate=namespace&step=1d"
ask "allocation 30d filtered" \
  "/api/v1/allocation?window=30d&aggregate=controller&filter=namespace:ns-001"
ask "devices all" "/api/v1/devices?window=all" 3
ask "report 7d step=6h" "/api/v1/report?window=7d&aggregate=namespace&step=6h" 3
ask "allocation 720h step=1d" "/api/v1/allocation?window=720h&aggregate=namespace&step=1d" 1
ask "findings 24h" "/api/v1/findings?window=24h" 3
ask "findings 7d" "/api/v1/findings?window=7d" 1
ask "findings 30d" "/api/v1/findings?window=30d" 1
ask "recommendations 24h" "/api/v1/recommendations?window=24h" 3
ask "recommendations 7d" "/api/v1/recommendations?window=7d" 1
ask "recommendations 30d" "/api/v1/recommendations?window=30d" 1
echo "| peak | | | $(awk '/^VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status") |"
