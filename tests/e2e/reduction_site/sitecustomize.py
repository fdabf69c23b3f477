"""Installs tests/e2e/reduction_model.py in every interpreter started with this directory on
PYTHONPATH (test-only: tests/e2e/test_reduction_rerun.py)."""

import reduction_model

reduction_model.install()
