#!/usr/bin/env bash
# docs/metrics.md is `gpuledger metrics --format markdown`: fails, with the difference and the
# command that regenerates it, when the page and the binary's metric table disagree.
# Usage: metrics_reference_test.sh BIN DOC
set -euo pipefail
bin=$1
doc=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$bin" metrics --format markdown >"$generated"
if ! diff -u "$doc" "$generated"; then
  echo "FAIL: $doc differs from the metric table (src/prometheus/metric_table.h). Regenerate it:"
  echo "  ./build/src/cmd/gpuledger metrics --format markdown > docs/metrics.md"
  exit 1
fi
echo "ok: $doc is the metric table's reference"
