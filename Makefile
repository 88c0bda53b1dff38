# The two commands of the quick start. Each installs what is missing, builds, and runs.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test build deps clean bench

demo: build
	./$(BUILD)/src/cmd/gpuledger demo

# The PostgreSQL store tests run against GPULEDGER_TEST_POSTGRES when set, else against a
# throwaway server started for this run (GPULEDGER_TEST_POSTGRES=off skips them knowingly).
test: build
	./scripts/ci-postgres.sh run sh -c 'cd $(BUILD) && ctest --output-on-failure -j $(JOBS)'

# The `ci` preset (CMakePresets.json: Ninja, RelWithDebInfo, ccache when installed) in $(BUILD);
# contributors iterate faster with the `dev` preset (docs/development.md).
build: deps
	cmake --preset ci -B $(BUILD)
	cmake --build $(BUILD) -j $(JOBS)

# The read path at 10,000 GPUs x 30 days (docs/performance.md; minutes, and about 9 GB of disk).
bench: build
	./bench/read_path.sh $(BUILD)

deps:
	./scripts/install-deps.sh

clean:
	rm -rf $(BUILD) gpuledger-demo
