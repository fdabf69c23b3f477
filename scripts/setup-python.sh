#!/usr/bin/env bash
# Creates .venv with the pinned Python packages (requirements.lock). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || { echo "setup: cannot create a virtual environment with $PY" >&2; exit 1; }
fi
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.lock >/tmp/compatlab-pip.log 2>&1; then
  if grep -qiE "could not find|connection|network|resolve|Max retries" /tmp/compatlab-pip.log; then
    echo "setup: cannot reach the Python package registry (see /tmp/compatlab-pip.log)" >&2
  else
    echo "setup: pip install -r requirements.lock failed (see /tmp/compatlab-pip.log)" >&2
  fi
  exit 1
fi
