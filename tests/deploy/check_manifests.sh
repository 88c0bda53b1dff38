#!/usr/bin/env bash
# deploy_manifests_test: renders every overlay of deploy/ offline (`kubectl kustomize`, no
# cluster), alone and on every platform (deploy/components/platforms/, through
# `scripts/deploy.sh --render --platform`), and validates every object it gives (validate.mjs:
# schemas, unknown fields, our rules, the agent's privileges against deploy/privileges.yaml). Needs kubectl (1.27 or later, for kustomize components) and the checker's npm
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
  for platform in "" $(ls "$root/deploy/components/platforms"); do
    file=$name${platform:++$platform}
    if ! "$root/scripts/deploy.sh" --render ${platform:+--platform "$platform"} "$name" \
        >"$out/$file.yaml" 2>"$out/$file.err"; then
      echo "rendering deploy/overlays/$name${platform:+ on $platform} failed:" >&2
      cat "$out/$file.err" >&2
      exit 1
    fi
    echo "deploy/overlays/$name${platform:+ on $platform}: $(grep -c '^kind:' "$out/$file.yaml") objects"
  done
done
# The opt-in components (deploy/components/cri, read-environ), alone and on a platform.
for platform in "" gke; do
  file=embedded${platform:++$platform}+with-cri+with-read-environ
  if ! "$root/scripts/deploy.sh" --render ${platform:+--platform "$platform"} --with cri \
      --with read-environ embedded >"$out/$file.yaml" 2>"$out/$file.err"; then
    echo "rendering deploy/overlays/embedded with cri and read-environ failed:" >&2
    cat "$out/$file.err" >&2
    exit 1
  fi
  echo "deploy/overlays/embedded${platform:+ on $platform} with cri, read-environ: $(grep -c '^kind:' "$out/$file.yaml") objects"
done
"$gpuledger" metrics --format names >"$out/metrics.txt"
node "$here/validate.mjs" --version "$version" --metrics "$out/metrics.txt" \
  --privileges "$root/deploy/privileges.yaml" "$out"/*.yaml

# The privilege check catches what is not on the list: GKE's rendering read as another
# platform's, the opt-in components' privileges in a rendering without them, and a capability
# nobody listed.
mkdir "$out/catch"
cp "$out/embedded+gke.yaml" "$out/catch/embedded+eks.yaml"
cp "$out/embedded+with-cri+with-read-environ.yaml" "$out/catch/embedded.yaml"
sed 's/- SYS_PTRACE/- SYS_ADMIN/' "$out/embedded+with-cri+with-read-environ.yaml" \
  >"$out/catch/embedded+with-read-environ.yaml"
if node "$here/validate.mjs" --version "$version" --metrics "$out/metrics.txt" \
    --privileges "$root/deploy/privileges.yaml" "$out"/catch/*.yaml >"$out/catch.txt" 2>&1; then
  echo "validate.mjs passed privileges that deploy/privileges.yaml does not list" >&2
  exit 1
fi
for expected in "privileged, which deploy/privileges.yaml allows only on gke" \
    "hostPath /home/kubernetes/bin/nvidia is not in deploy/privileges.yaml" \
    "capability SYS_ADMIN is not in deploy/privileges.yaml" \
    "capability SYS_PTRACE is not in deploy/privileges.yaml" \
    "hostPath /run/containerd/containerd.sock is not in deploy/privileges.yaml"; do
  if ! grep -qF "$expected" "$out/catch.txt"; then
    echo "validate.mjs did not say: $expected" >&2
    cat "$out/catch.txt" >&2
    exit 1
  fi
done
echo "the privilege check refuses what deploy/privileges.yaml does not list"
