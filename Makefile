# compatlab: two entry points.
#   make sweep   the main job: the smoke suite on the CPU into ./compatlab.db
#   make test    every test (C++ unit tests, the same under ASan/UBSan, Python and end-to-end)
# Each installs what it needs itself (Debian packages, .venv, the CMake build).

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
SWEEP_ARGS ?=
PYTEST := .venv/bin/python -m pytest
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: all deps debian python build build-asan testdevice sweep test test-cpp test-asan test-python bench clean

all: build

debian:
	@scripts/setup-debian.sh

.stamps/python: requirements.lock scripts/setup-python.sh
	@scripts/setup-python.sh
	@mkdir -p .stamps && touch $@

python: debian .stamps/python

deps: debian python

# Configuring needs the venv: Arrow/Parquet C++ come from its pyarrow wheel (src/export).
$(BUILD)/build.ninja: CMakeLists.txt | debian python
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOMPATLAB_WERROR=ON >/dev/null

$(ASAN_BUILD)/build.ninja: CMakeLists.txt | debian python
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCOMPATLAB_WERROR=ON -DCOMPATLAB_SANITIZE=ON >/dev/null

build: python $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-asan: python $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The ctest test device (doc/test-device.md): a PrivateUse1 library built against
# the venv's torch; ninja recompiles only what changed.
TESTDEVICE_LIB := build/testdevice/compatlab_testdevice.so
$(TESTDEVICE_LIB): $(wildcard testdevice/csrc/*) testdevice/build.py .stamps/python | debian
	MAX_JOBS=$(JOBS) .venv/bin/python testdevice/build.py $(@D)
	@touch $@

testdevice: python $(TESTDEVICE_LIB)

sweep: build python
	$(BUILD)/compatlab sweep --suite smoke --db compatlab.db $(SWEEP_ARGS)

test-cpp: build python
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j $(JOBS)

test-asan: build-asan python
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 ctest --test-dir $(ASAN_BUILD) --output-on-failure --no-tests=error -j $(JOBS)

# pytest's exit code 5 (nothing collected) fails the target like any other failure.
test-python: build python testdevice
	$(PYTEST) -q probe/tests tests/e2e testdevice/tests

test: test-cpp test-asan test-python

bench: build python
	bench/overhead

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build/testdevice .stamps
