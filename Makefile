# compatlab: two entry points.
#   make sweep   the main job: the smoke suite on the CPU into ./compatlab.db
#   make test    lint, then every test (C++ unit tests, the same under ASan/UBSan, Python and end-to-end)
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

.PHONY: all deps debian python web-deps build build-asan testdevice sweep test lint complexity format test-cpp test-asan test-python test-slow test-web bench bench-compile bench-serve bench-shards bench-ops clean

all: build

debian:
	@scripts/setup-debian.sh

.stamps/python: requirements.lock scripts/setup-python.sh
	@scripts/setup-python.sh
	@mkdir -p .stamps && touch $@

python: debian .stamps/python

# The web page's charting library and the browser tests' driver (package-lock.json);
# never a browser download: the tests drive Debian's chromium.
.stamps/npm: package.json package-lock.json | debian
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@mkdir -p .stamps && touch $@

web-deps: .stamps/npm

deps: debian python web-deps

# Configuring needs the venv: Arrow/Parquet C++ come from its pyarrow wheel (src/export).
# -g1: line tables only (enough for backtraces and sanitizer reports), a third less
# compile time than full debug information.
$(BUILD)/build.ninja: CMakeLists.txt | debian python
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCOMPATLAB_WERROR=ON >/dev/null

$(ASAN_BUILD)/build.ninja: CMakeLists.txt | debian python
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
	  -DCOMPATLAB_WERROR=ON -DCOMPATLAB_SANITIZE=ON >/dev/null

build: python web-deps $(BUILD)/build.ninja
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

# clang-format (Debian's, .clang-format) over the C++ and ruff (pinned, ruff.toml) over the
# Python, the probe's import rules (import-linter, probe/pyproject.toml) and every function's
# length and complexity against its ceiling (scripts/complexity.py); `make format` applies
# the first two.
CXX_SOURCES = $(shell git ls-files --cached --others --exclude-standard 'src/*.cc' 'src/*.h' \
                'testdevice/csrc/*.cpp' 'testdevice/csrc/*.h')
lint: python
	@clang-format --dry-run -Werror $(CXX_SOURCES)
	@.venv/bin/ruff check --quiet .
	@out=$$(PYTHONPATH=probe .venv/bin/lint-imports --config probe/pyproject.toml --no-cache --no-logo 2>&1) || { echo "$$out"; exit 1; }  # the probe's import rules (probe/pyproject.toml)
	@.venv/bin/python scripts/complexity.py
	@echo "lint: clang-format and ruff clean ($(words $(CXX_SOURCES)) C++ files)"

# Function length and cyclomatic complexity (lizard, pinned) against the ceilings in
# scripts/complexity.py; `make complexity` also prints the ten longest and most complex.
complexity: python
	@.venv/bin/python scripts/complexity.py --top 10

format: python
	@clang-format -i $(CXX_SOURCES)
	@.venv/bin/ruff check --quiet --fix .

test-cpp: build python
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j $(JOBS)

test-asan: build-asan python
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 ctest --test-dir $(ASAN_BUILD) --output-on-failure --no-tests=error -j $(JOBS)

# pytest's exit code 5 (nothing collected) fails the target like any other failure.
# pytest-xdist runs $(JOBS) workers, each test file on one worker (its module fixtures
# built once); tests marked `slow` run in `make test-slow` only. The 30 slowest tests are
# listed at the end, to keep the budget in view.
PYTEST_DIRS := probe/tests tests/e2e testdevice/tests
test-python: build python testdevice
	$(PYTEST) -q -n $(JOBS) --dist loadfile --durations=30 -m "not slow" $(PYTEST_DIRS)

test-slow: build python testdevice
	$(PYTEST) -q -n $(JOBS) --dist loadfile -m slow $(PYTEST_DIRS)

# Browser tests of `compatlab serve` (tests/web, node's test runner); a run
# that reports no test fails.
test-web: build python web-deps
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 COMPATLAB_BIN=$(BUILD)/compatlab \
	  node --test --test-reporter=tap tests/web/ | tee $(BUILD)/web-tests.tap
	@grep -Eq '^# tests [1-9]' $(BUILD)/web-tests.tap || { echo "test-web: no test ran" >&2; exit 1; }

test: lint test-cpp test-asan test-python test-web

bench: build python
	bench/overhead

bench-compile: build python
	bench/compile

bench-serve: build python
	bench/serve

bench-shards: build python
	bench/shards

bench-ops: build python testdevice
	bench/ops

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build/testdevice .stamps node_modules
