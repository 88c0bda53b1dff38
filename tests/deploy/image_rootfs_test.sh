#!/usr/bin/env bash
# image_rootfs_test: the container image's file system (scripts/image-rootfs.sh, the
# Dockerfile's last step) run as the image runs it, in a chroot with an empty environment: the
# binary starts with only the libraries copied beside it, as the image's user 65532, and
# simulates, writes and reads a ledger; nothing but gpuledger is there to run.
#   image_rootfs_test.sh BUILD_DIR VERSION
set -euo pipefail
build=${1:?usage: image_rootfs_test.sh BUILD_DIR VERSION}
version=${2:?usage: image_rootfs_test.sh BUILD_DIR VERSION}
root_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "image_rootfs_test: chroot needs root; skipped"
  exit 77
fi
# A sanitizer build (the asan and tsan presets) is never an image, and its runtime wants a /proc
# the image's root does not have.
# (ldd's output whole first: with pipefail, grep -q closing the pipe early fails the test.)
libraries=$(ldd "$build/src/cmd/gpuledger")
if grep -qE 'lib(a|t)san\.so' <<<"$libraries"; then
  echo "image_rootfs_test: $build is a sanitizer build; skipped"
  exit 77
fi
chroot=$(command -v chroot || echo /usr/sbin/chroot)
rootfs=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
fail() { echo "image_rootfs_test: $*" >&2; exit 1; }

"$root_dir/scripts/image-rootfs.sh" "$build" "$rootfs"
run() { env -i "$chroot" --userspec=65532:65532 "$rootfs" /usr/bin/gpuledger "$@"; }

# Nothing to run but gpuledger.
for tool in sh bash dash busybox apt dpkg ls cat; do
  for dir in bin usr/bin sbin usr/sbin; do
    [ ! -e "$rootfs/$dir/$tool" ] || fail "/$dir/$tool is in the image"
  done
done
[ "$(ls "$rootfs/usr/bin")" = gpuledger ] || fail "/usr/bin holds more than gpuledger: $(ls "$rootfs/usr/bin")"
[ -f "$rootfs/opt/gpuledger/lib/libgpuledger-kerneltime.so" ] || fail "no kernel-time tracer library"
[ -s "$rootfs/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA bundle"

got=$(run --version)
[ "$got" = "gpuledger $version" ] || fail "--version printed '$got', expected 'gpuledger $version'"
run demo --no-serve --hours 2 --out /tmp/demo >/dev/null || fail "demo failed in the image"
[ "$(stat -c %u "$rootfs/tmp/demo/gpuledger.db")" = 65532 ] || fail "the ledger is not the image user's"
report=$(run report --db /tmp/demo/gpuledger.db --format csv) || fail "report failed in the image"
rows=$(printf '%s\n' "$report" | wc -l)
[ "$rows" -gt 2 ] || fail "report gave $rows lines: $report"
echo "image_rootfs_test: $(du -sh "$rootfs" | cut -f1) image, gpuledger $version ran as 65532, report of $rows lines"
