#!/usr/bin/env bash
# Installs gpuledger on the cluster of kubectl's current context (docs/install.md):
#   scripts/deploy.sh [--platform gke|eks|aks|on-prem] [--with cri|read-environ]...
#                     [embedded|at-scale|DIR] [kubectl flags...]
#   scripts/deploy.sh --render [--platform P] [--with C]... [embedded|at-scale|DIR]
#                     (prints what it would apply)
#   scripts/deploy.sh --uninstall [--delete-ledger] [--render] [flags as above] [OVERLAY]
#                     (deletes what it applied but the namespace with the ledger's claim and
#                     the API token, unless --delete-ledger; --render: what it would delete)
# DIR: an overlay of your own. --platform adds deploy/components/platforms/P: where the agent
# finds the GPU nodes, NVML and the device nodes on that platform (docs/install.md). --with adds
# the opt-in component deploy/components/C, each a privilege the agent does not hold by default
# (deploy/privileges.yaml says which and why). IMAGE=REPOSITORY:TAG names the image every pod
# runs (the one you built and pushed: the project publishes none yet) in place of the one
# deploy/ names.
# Creates the namespace and, when missing, the API token Secret (a random token: the server
# wants one, and no token is ever committed), then applies the overlay. Running it again
# upgrades to what deploy/ now says and keeps the token.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
render_only=false
uninstall=false
delete_ledger=false
platform=
components=()
platforms=$(ls "$here/deploy/components/platforms" | tr '\n' ' ')
# Every component but the platforms' folder (cri, read-environ; monitoring, webhook too).
optional=$(ls "$here/deploy/components" | grep -vx platforms | tr '\n' ' ')
while [ $# -gt 0 ]; do
  case "$1" in
    --render) render_only=true; shift ;;
    --uninstall) uninstall=true; shift ;;
    --delete-ledger) delete_ledger=true; shift ;;
    --platform)
      platform=${2:?deploy.sh: --platform needs one of: $platforms}
      shift 2
      if [ ! -d "$here/deploy/components/platforms/$platform" ]; then
        echo "deploy.sh: no platform '$platform'; expected one of: $platforms" >&2
        exit 2
      fi ;;
    --with)
      component=${2:?deploy.sh: --with needs one of: $optional}
      shift 2
      if [ ! -f "$here/deploy/components/$component/kustomization.yaml" ] ||
          [ "$component" = platforms ]; then
        echo "deploy.sh: no component '$component'; expected one of: $optional" >&2
        exit 2
      fi
      components+=("$here/deploy/components/$component") ;;
    *) break ;;
  esac
done
[ -n "$platform" ] && components+=("$here/deploy/components/platforms/$platform")
overlay=${1:-embedded}
shift || true
if [ -d "$overlay" ] && [ -f "$overlay/kustomization.yaml" ]; then
  dir=$overlay
elif [ -d "$here/deploy/overlays/$overlay" ]; then
  dir=$here/deploy/overlays/$overlay
else
  echo "deploy.sh: no overlay '$overlay'; expected one of: $(ls "$here/deploy/overlays" | tr '\n' ' ')or a directory with a kustomization.yaml" >&2
  exit 2
fi
# The overlay, with the platform's and the opt-in components where named (an overlay of its own
# in a temporary directory: kustomize takes components from a kustomization only).
kustomized() {
  if [ ${#components[@]} -eq 0 ]; then
    kubectl kustomize "$dir"
    return
  fi
  local with c
  with=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-platform.XXXXXX")
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    echo "  - $(realpath --relative-to="$with" "$dir")"
    echo "components:"
    for c in "${components[@]}"; do echo "  - $(realpath --relative-to="$with" "$c")"; done
  } >"$with/kustomization.yaml"
  local rc=0
  kubectl kustomize "$with" || rc=$?
  rm -rf "$with"
  return $rc
}
render() {
  # The image deploy/ names, whatever its tag, becomes IMAGE when one is given.
  if [ -n "${IMAGE:-}" ]; then
    kustomized | sed -E "s#(image: *)ghcr\.io/gpuledger/gpuledger(:[^ \"]*)?\$#\1${IMAGE}#"
  else
    kustomized
  fi
}
# What an uninstall deletes: everything rendered but, unless --delete-ledger, the ledger's
# PersistentVolumeClaim and the Namespace (deleting it would delete the claim in it); the
# documents are kustomize's, separated by lines "---".
to_delete() {
  if $delete_ledger; then
    render
  else
    render | awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } !/(^|\n)kind: (PersistentVolumeClaim|Namespace)\n/'
  fi
}
if $uninstall; then
  if $render_only; then
    to_delete
    exit 0
  fi
  to_delete | kubectl "$@" delete --ignore-not-found -f -
  if $delete_ledger; then
    kubectl "$@" -n gpuledger delete --ignore-not-found secret gpuledger-api-token
  else
    echo "kept the namespace gpuledger with the ledger's claim gpuledger-ledger (if any) and the Secret gpuledger-api-token; --delete-ledger deletes them"
  fi
  exit 0
fi
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
