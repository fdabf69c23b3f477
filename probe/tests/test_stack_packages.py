"""The venv holds requirements.lock exactly, the deployment stacks included, and the torch
stayed the CPU build on disk (scripts/setup-python.sh installs the lock with --no-deps)."""

import importlib.metadata
import pathlib
import re

import torch

LOCK = pathlib.Path(__file__).resolve().parents[2] / "requirements.lock"


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def test_torch_is_the_pinned_cpu_build():
    assert torch.__version__ == "2.13.0+cpu"


def test_every_pin_of_the_lock_is_installed_at_its_version():
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_canonical(name)] = version
    assert {"onnxruntime", "onnxscript", "onnx", "openvino", "executorch", "torchao"} <= set(pins)
    wrong = {}
    for name, version in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"pinned vs installed: {wrong}"
