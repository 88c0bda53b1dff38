#!/usr/bin/env bash
# The differential test of gpuledger's exposition parser against Prometheus's own
# (model/textparse, from ../shared/peers): both read the same inputs, compare.py counts where
# they agree and shows where they do not.
#
#   fuzz/differential/run.sh EXPOSITION_CANON WORK_DIR INPUT_FILE_OR_DIR...
#
# Exit 0: no unexplained disagreement; 1: some; 77: Go or the peer code is not on this machine
# (ctest reports the test skipped; scripts/install-deps.sh test installs Go).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
canon="$1" work="$2"
shift 2
peers="$(realpath -m "$here/../../../shared/peers/go")"
if ! command -v go >/dev/null || [[ ! -d "$peers/src/github.com/prometheus/prometheus" ]]; then
  echo "differential: skipped: needs go (golang-go) and $peers" >&2
  exit 77
fi
mkdir -p "$work/go/src/promparsepeer" "$work/go/src/github.com/cespare/xxhash"
# textparse imports xxhash/v2; Debian ships it without the /v2 (../shared/peers/README.md).
ln -sfn /usr/share/gocode/src/github.com/cespare/xxhash "$work/go/src/github.com/cespare/xxhash/v2"
cp "$here/promparse_peer.go" "$work/go/src/promparsepeer/main.go"
(cd "$work/go/src/promparsepeer" &&
  GO111MODULE=off GOFLAGS= GOCACHE="$work/go-cache" \
    GOPATH="$work/go:$peers:/usr/share/gocode" go build -tags stringlabels -o "$work/promparse-peer" .)
files=()
for arg in "$@"; do
  if [[ -d "$arg" ]]; then
    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$arg" -type f -print0 | sort -z)
  else
    files+=("$arg")
  fi
done
# In batches: a fuzzer's corpus runs to thousands of files.
: >"$work/peer.txt"
: >"$work/ours.txt"
for ((i = 0; i < ${#files[@]}; i += 500)); do
  "$work/promparse-peer" "${files[@]:i:500}" >>"$work/peer.txt"
  "$canon" "${files[@]:i:500}" >>"$work/ours.txt"
done
python3 "$here/compare.py" "$work/peer.txt" "$work/ours.txt"
