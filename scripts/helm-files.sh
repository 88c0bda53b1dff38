#!/usr/bin/env bash
# Copies deploy/'s manifests into the Helm chart (deploy/helm/gpuledger/files/), which renders
# them with the same patches as kustomize applies (templates/_kustomize.tpl): one set of
# manifests for both installs. Run it after editing deploy/base, deploy/overlays or
# deploy/components; deploy_manifests_test fails while the copies differ.
#   scripts/helm-files.sh           (copies)
#   scripts/helm-files.sh --check   (exit 1 and name the files that differ)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
files=$root/deploy/helm/gpuledger/files
if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$root/deploy/base" "$files/base" >/dev/null ||
      ! diff -r "$root/deploy/overlays" "$files/overlays" >/dev/null ||
      ! diff -r "$root/deploy/components" "$files/components" >/dev/null; then
    diff -rq "$root/deploy/base" "$files/base" || true
    diff -rq "$root/deploy/overlays" "$files/overlays" || true
    diff -rq "$root/deploy/components" "$files/components" || true
    echo "deploy/helm/gpuledger/files differs from deploy/: run scripts/helm-files.sh" >&2
    exit 1
  fi
  exit 0
fi
rm -rf "$files"
mkdir -p "$files"
cp -r "$root/deploy/base" "$root/deploy/overlays" "$root/deploy/components" "$files/"
