#!/usr/bin/env bash
# Creates .venv with the pinned Python packages (requirements.lock). Idempotent.
# The lock names every package (the deployment stacks' included), so it installs with
# --no-deps: nothing outside it comes in, never another torch; `pip check` then proves
# the lock complete and the torch the CPU build on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || { echo "setup: cannot create a virtual environment with $PY" >&2; exit 1; }
fi
if ! .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r requirements.lock >/tmp/compatlab-pip.log 2>&1; then
  if grep -qiE "could not find|connection|network|resolve|Max retries" /tmp/compatlab-pip.log; then
    echo "setup: cannot reach the Python package registry (see /tmp/compatlab-pip.log)" >&2
  else
    echo "setup: pip install -r requirements.lock failed (see /tmp/compatlab-pip.log)" >&2
  fi
  exit 1
fi
if ! .venv/bin/python -m pip check >>/tmp/compatlab-pip.log 2>&1; then
  echo "setup: requirements.lock is incomplete: pip check failed (see /tmp/compatlab-pip.log)" >&2
  exit 1
fi
TORCH=$(.venv/bin/python -c 'import torch; print(torch.__version__)' 2>>/tmp/compatlab-pip.log) || TORCH=none
if [ "$TORCH" != "2.13.0+cpu" ]; then
  echo "setup: .venv has torch $TORCH, not the pinned 2.13.0+cpu" >&2
  exit 1
fi
# The wheels tests/e2e/test_stacks.py makes its second stack from (tests/e2e/stack_wheels.txt),
# fetched here from the registries so that the test itself installs with --no-index from
# this directory and reaches no registry.
if ! .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps -d .stamps/wheels \
    -r tests/e2e/stack_wheels.txt >>/tmp/compatlab-pip.log 2>&1; then
  echo "setup: cannot fetch the wheels of tests/e2e/stack_wheels.txt (see /tmp/compatlab-pip.log)" >&2
  exit 1
fi
