#!/usr/bin/env bash
# deploy_render_test: what scripts/deploy.sh would apply (--render, no cluster): with IMAGE every
# pod runs that image (the project publishes none, so an install names the one it pushed), of
# our overlays and of an overlay of one's own given as a directory; without IMAGE the one
# deploy/ names.
#   deploy_render_test.sh VERSION
set -euo pipefail
version=${1:?usage: deploy_render_test.sh VERSION}
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "deploy_render_test: $*" >&2; exit 1; }

images() { grep -E '^ *image:' | sed -E 's/^ *image: *//' | sort -u; }

for overlay in embedded at-scale; do
  got=$("$root/scripts/deploy.sh" --render "$overlay" | images)
  [ "$got" = "ghcr.io/gpuledger/gpuledger:$version" ] || fail "$overlay without IMAGE: $got"
  got=$(IMAGE=registry.example.com/team/gpuledger:$version-rc1 \
          "$root/scripts/deploy.sh" --render "$overlay" | images)
  [ "$got" = "registry.example.com/team/gpuledger:$version-rc1" ] || fail "$overlay: $got"
done

own=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-own-overlay.XXXXXX")
trap 'rm -rf "$own"' EXIT
cat >"$own/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$own" "$root/deploy/overlays/embedded")
YAML
got=$(IMAGE=localhost:5000/gpuledger:dev "$root/scripts/deploy.sh" --render "$own" | images)
[ "$got" = "localhost:5000/gpuledger:dev" ] || fail "own overlay: $got"
if "$root/scripts/deploy.sh" --render no-such-overlay 2>/dev/null; then
  fail "an unknown overlay was rendered"
fi
# A platform's component on top of an overlay, the image still the one asked for.
rendered=$(IMAGE=localhost:5000/gpuledger:dev "$root/scripts/deploy.sh" --render --platform gke embedded)
got=$(printf '%s\n' "$rendered" | images)
[ "$got" = "localhost:5000/gpuledger:dev" ] || fail "embedded on gke: $got"
printf '%s\n' "$rendered" | grep -q 'cloud.google.com/gke-accelerator' || fail "gke's node label missing"
if "$root/scripts/deploy.sh" --render --platform no-such-platform embedded 2>/dev/null; then
  fail "an unknown platform was rendered"
fi
# An uninstall deletes all it applied but the ledger's claim, unless asked.
kinds() { grep -E '^kind:' | sort | uniq -c | tr -s ' '; }
all=$("$root/scripts/deploy.sh" --render embedded | kinds)
kept=$("$root/scripts/deploy.sh" --uninstall --render embedded | kinds)
dropped=$("$root/scripts/deploy.sh" --uninstall --delete-ledger --render embedded | kinds)
printf '%s\n' "$all" | grep -q 'PersistentVolumeClaim' || fail "embedded has no ledger claim"
[ "$kept" = "$(printf '%s\n' "$all" | grep -vE 'PersistentVolumeClaim|Namespace')" ] ||
  fail "--uninstall would delete: $kept"
[ "$dropped" = "$all" ] || fail "--uninstall --delete-ledger would delete: $dropped"
echo "deploy.sh renders every pod with the image asked for, and keeps the ledger on uninstall"
