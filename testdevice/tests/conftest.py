"""pytest set-up for the ctest device tests: import path, one load per session."""

import os
import sys

import pytest

TESTDEVICE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTDEVICE_DIR not in sys.path:
    sys.path.insert(0, TESTDEVICE_DIR)

import compatlab_testdevice as ctest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def loaded():
    ctest.load()  # FileNotFoundError with the fix when the library is not built
    return ctest


@pytest.fixture(autouse=True)
def clean_counters():
    ctest.reset_fallback_counts()
    yield
