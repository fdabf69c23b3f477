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
    assert {"pillow", "librosa", "soundfile"} <= set(pins)  # transformers' optional packages (doc/dependencies.md)
    wrong = {}
    for name, version in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"pinned vs installed: {wrong}"


def test_transformers_optional_packages_load_beside_the_cpu_torch():
    # What transformers' models need beyond torch and that has a build for it (doc/dependencies.md).
    import librosa
    import numpy
    from PIL import Image
    from transformers.utils import is_librosa_available, is_vision_available

    assert is_vision_available() and is_librosa_available()
    assert Image.fromarray(numpy.zeros((4, 6, 3), dtype=numpy.uint8)).size == (6, 4)
    mel = librosa.feature.melspectrogram(y=numpy.zeros(4000, dtype=numpy.float32), sr=16000, n_fft=512, n_mels=8)
    assert mel.shape[0] == 8
    assert torch.__version__ == "2.13.0+cpu"
