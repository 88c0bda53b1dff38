#!/usr/bin/env bash
# The production gpuledger binary links no test fake (testing/: fake kubelet/CRI servers, the
# simulated node tool) and carries no path of the build tree it was built in (the NVML
# stand-in is named by the caller, never compiled in). Usage: production_binary_test.sh BIN DIR
set -euo pipefail
bin=$1
build_dir=$2
fail=0
fakes=$(nm -C --defined-only "$bin" | grep -E 'gpuledger::(fake|simnode)::' || true)
if [ -n "$fakes" ]; then
  echo "FAIL: $bin links test code from testing/:"
  echo "$fakes" | head -5
  fail=1
fi
# Read-only data holds the string literals; debug sections legitimately name source paths.
rodata=$(mktemp)
trap 'rm -f "$rodata"' EXIT
objcopy -O binary --only-section=.rodata "$bin" "$rodata"
if grep -a -o -F "$build_dir/" "$rodata" | head -3 | grep -q .; then
  echo "FAIL: $bin carries paths of the build tree $build_dir:"
  grep -a -o -E "$build_dir/[[:print:]]*" "$rodata" | head -5
  fail=1
fi
[ "$fail" -eq 0 ] && echo "ok: no test fake, no build-tree path in $bin"
exit "$fail"
