#!/usr/bin/env bash
# deploy_manifests_test: renders every overlay of deploy/ offline (`kubectl kustomize`, no
# cluster) and validates every object it gives (validate.mjs: schemas, unknown fields, our
# rules). Needs kubectl (1.27 or later, for kustomize components) and the checker's npm
# packages (`scripts/install-deps.sh test` installs them).
#   check_manifests.sh VERSION GPULEDGER
# VERSION: the image tag the manifests must name (the project's version); GPULEDGER: the built
# binary, whose `metrics --format names` lists the series queries may name.
set -euo pipefail
version=${1:?usage: check_manifests.sh VERSION GPULEDGER}
gpuledger=${2:?usage: check_manifests.sh VERSION GPULEDGER}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if ! command -v kubectl >/dev/null; then
  echo "kubectl not found: the manifests are rendered with kubectl kustomize" >&2
  exit 1
fi
if [ ! -d "$here/node_modules/kubernetes-models" ]; then
  echo "$here/node_modules is missing: run scripts/install-deps.sh test" >&2
  exit 1
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-manifests.XXXXXX")
trap 'rm -rf "$out"' EXIT
for overlay in "$root"/deploy/overlays/*/; do
  name=$(basename "$overlay")
  if ! kubectl kustomize "$overlay" >"$out/$name.yaml" 2>"$out/$name.err"; then
    echo "kubectl kustomize deploy/overlays/$name failed:" >&2
    cat "$out/$name.err" >&2
    exit 1
  fi
  echo "deploy/overlays/$name: $(grep -c '^kind:' "$out/$name.yaml") objects"
done
"$gpuledger" metrics --format names >"$out/metrics.txt"
node "$here/validate.mjs" --version "$version" --metrics "$out/metrics.txt" "$out"/*.yaml
