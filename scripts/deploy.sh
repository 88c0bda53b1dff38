#!/usr/bin/env bash
# Installs gpuledger on the cluster of kubectl's current context (docs/install.md):
#   scripts/deploy.sh [embedded|at-scale] [kubectl flags...]
# Creates the namespace and, when missing, the API token Secret (a random token: the server
# wants one, and no token is ever committed), then applies the overlay. Running it again
# upgrades to what deploy/ now says and keeps the token.
set -euo pipefail
overlay=${1:-embedded}
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$here/deploy/overlays/$overlay" ]; then
  echo "deploy.sh: no overlay '$overlay'; expected one of: $(ls "$here/deploy/overlays" | tr '\n' ' ')" >&2
  exit 2
fi
kubectl "$@" create namespace gpuledger --dry-run=client -o yaml | kubectl "$@" apply -f -
if ! kubectl "$@" -n gpuledger get secret gpuledger-api-token >/dev/null 2>&1; then
  token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  kubectl "$@" -n gpuledger create secret generic gpuledger-api-token --from-literal=token="$token"
  echo "created Secret gpuledger/gpuledger-api-token (kubectl -n gpuledger get secret gpuledger-api-token -o jsonpath='{.data.token}' | base64 -d)"
fi
kubectl "$@" apply -k "$here/deploy/overlays/$overlay"
