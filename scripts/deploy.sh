#!/usr/bin/env bash
# Installs gpuledger on the cluster of kubectl's current context (docs/install.md):
#   scripts/deploy.sh [embedded|at-scale|DIR] [kubectl flags...]
#   scripts/deploy.sh --render [embedded|at-scale|DIR]      (prints what it would apply)
# DIR: an overlay of your own. IMAGE=REPOSITORY:TAG names the image every pod runs (the one you
# built and pushed: the project publishes none yet) in place of the one deploy/ names.
# Creates the namespace and, when missing, the API token Secret (a random token: the server
# wants one, and no token is ever committed), then applies the overlay. Running it again
# upgrades to what deploy/ now says and keeps the token.
set -euo pipefail
render_only=false
if [ "${1:-}" = "--render" ]; then
  render_only=true
  shift
fi
overlay=${1:-embedded}
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -d "$overlay" ] && [ -f "$overlay/kustomization.yaml" ]; then
  dir=$overlay
elif [ -d "$here/deploy/overlays/$overlay" ]; then
  dir=$here/deploy/overlays/$overlay
else
  echo "deploy.sh: no overlay '$overlay'; expected one of: $(ls "$here/deploy/overlays" | tr '\n' ' ')or a directory with a kustomization.yaml" >&2
  exit 2
fi
render() {
  # The image deploy/ names, whatever its tag, becomes IMAGE when one is given.
  if [ -n "${IMAGE:-}" ]; then
    kubectl kustomize "$dir" | sed -E "s#(image: *)ghcr\.io/gpuledger/gpuledger(:[^ \"]*)?\$#\1${IMAGE}#"
  else
    kubectl kustomize "$dir"
  fi
}
if $render_only; then
  render
  exit 0
fi
manifests=$(render)
kubectl "$@" create namespace gpuledger --dry-run=client -o yaml | kubectl "$@" apply -f -
if ! kubectl "$@" -n gpuledger get secret gpuledger-api-token >/dev/null 2>&1; then
  token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  kubectl "$@" -n gpuledger create secret generic gpuledger-api-token --from-literal=token="$token"
  echo "created Secret gpuledger/gpuledger-api-token (kubectl -n gpuledger get secret gpuledger-api-token -o jsonpath='{.data.token}' | base64 -d)"
fi
printf '%s\n' "$manifests" | kubectl "$@" apply -f -
