# The two commands of the quick start. Each installs what is missing, builds, and runs.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test test-asan test-tsan fuzz build binary deps deps-build clean bench deploy undeploy image install ui

# The demo needs the binary alone: build dependencies only, one target. Its --out is its own
# folder, so each run replaces the last one's ledger (--force).
demo: binary
	./$(BUILD)/src/cmd/gpuledger demo --force

# The PostgreSQL store tests run against GPULEDGER_TEST_POSTGRES when set, else against a
# throwaway server started for this run (GPULEDGER_TEST_POSTGRES=off skips them knowingly).
test: build
	./scripts/ci-postgres.sh run sh -c 'cd $(BUILD) && ctest --output-on-failure -j $(JOBS)'

# The suite again under AddressSanitizer and UndefinedBehaviorSanitizer, in build-asan/
# (docs/reliability.md): any report fails its test. cli_test stays out: its simulated weeks
# take over ten minutes instrumented (the same code runs under the other tests).
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1
test-asan: deps
	cmake --preset asan
	cmake --build build-asan -j $(JOBS)
	$(SANITIZER_ENV) ./scripts/ci-postgres.sh run sh -c \
	  'cd build-asan && ctest --output-on-failure -j $(JOBS) -E "^cli_test$$"'

# And under ThreadSanitizer, in build-tsan/ (about 12 minutes of tests on 2 cores). Races inside
# Debian's uninstrumented gRPC, abseil, protobuf and cpp-httplib are suppressed
# (tests/tsan.supp says why); a report anywhere else fails its test.
test-tsan: deps
	cmake --preset tsan
	cmake --build build-tsan -j $(JOBS)
	TSAN_OPTIONS=suppressions=$(CURDIR)/tests/tsan.supp:second_deadlock_stack=1 \
	  ./scripts/ci-postgres.sh run sh -c \
	  'cd build-tsan && ctest --output-on-failure -j $(JOBS) -E "^cli_test$$"'

# Every fuzz target (fuzz/) under libFuzzer for FUZZ_SECONDS each, in build-fuzz/ (clang; the
# findings and how to keep them: scripts/fuzz.sh, docs/reliability.md). CI runs a fixed number
# of inputs instead: FUZZ_RUNS=20000 scripts/fuzz.sh.
FUZZ_SECONDS ?= 30
fuzz: deps
	./scripts/fuzz.sh $(FUZZ_SECONDS)

# The `ci` preset (CMakePresets.json: Ninja, RelWithDebInfo, ccache when installed) in $(BUILD),
# with the tests; contributors iterate faster with the `dev` preset (docs/development.md).
build: deps
	cmake --preset ci -B $(BUILD) -DGPULEDGER_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)

# The binary alone. The tests are configured in only where GoogleTest is already installed.
binary: deps-build
	cmake --preset ci -B $(BUILD)
	cmake --build $(BUILD) -j $(JOBS) --target gpuledger

# The read path at 10,000 GPUs x 30 days (docs/performance.md; minutes, and about 9 GB of disk).
bench: build
	python3 bench/bench_table.py $(BUILD)

# gpuledger in $(PREFIX)/bin, and the kubectl plugin: kubectl-gpuledger, a link to it, so that
# `kubectl gpuledger report|audit|rightsize` read through the current context (docs/install.md).
PREFIX ?= /usr/local
install: binary
	install -D -m 0755 $(BUILD)/src/cmd/gpuledger $(DESTDIR)$(PREFIX)/bin/gpuledger
	ln -sf gpuledger $(DESTDIR)$(PREFIX)/bin/kubectl-gpuledger

# The container image (Dockerfile), tagged as deploy/ names it: the project's version.
VERSION := $(shell sed -n '/^project/s/.*VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
IMAGE ?= ghcr.io/gpuledger/gpuledger:$(VERSION)
# Docker when its engine answers, else Podman (a Docker client alone cannot build).
CONTAINER ?= $(shell (docker info >/dev/null 2>&1 && echo docker) || command -v podman || echo docker)
image:
	@test -n "$(CONTAINER)" || { echo "make image: needs docker or podman" >&2; exit 1; }
	$(CONTAINER) build -t $(IMAGE) .

# gpuledger on the cluster of kubectl's current context: OVERLAY=embedded (the server scrapes the
# agents, SQLite), at-scale (Prometheus and PostgreSQL) or a directory of your own overlay; its
# pods run IMAGE (the one `make image` built and you pushed); docs/install.md.
OVERLAY ?= embedded
deploy:
	IMAGE=$(IMAGE) ./scripts/deploy.sh $(if $(PLATFORM),--platform $(PLATFORM)) $(OVERLAY)

# And away again, the namespace with the ledger's claim and the API token kept (DELETE_LEDGER=1
# deletes them too).
undeploy:
	./scripts/deploy.sh --uninstall $(if $(DELETE_LEDGER),--delete-ledger) \
	  $(if $(PLATFORM),--platform $(PLATFORM)) $(OVERLAY)

deps:
	./scripts/install-deps.sh test

deps-build:
	./scripts/install-deps.sh build

clean:
	rm -rf $(BUILD) gpuledger-demo

# The web UI's files from npm packages (ui/vendor, committed; the binary embeds it with ui/src)
# rebuilt from the versions ui/package-lock.json pins (docs/ui.md).
ui:
	cd ui && npm ci --no-audit --no-fund && npm run build
