"""The torch build's facts beyond its version (host/runtime.py, build_info): schema 24."""

import json
import os
import subprocess
import sys

from compatlab_probe.host import runtime

# The lines of torch.__config__.show() that build_info reads, as torch 2.13.0+cpu prints them.
CONFIG_2_13_CPU = """PyTorch built with:
  - GCC 13.3
  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl, USE_OPENMP=ON,
"""
CONFIG_OPENBLAS_NO_OPENMP = """PyTorch built with:
  - Build settings: BLAS_INFO=open, BUILD_TYPE=Release, USE_OPENMP=OFF,
"""


def test_torch_build_names_the_hardware_a_build_was_made_for():
    assert runtime.torch_build(None, None) == "cpu"
    assert runtime.torch_build("13.0", None) == "cuda 13.0"
    assert runtime.torch_build(None, "6.4.43482") == "rocm 6.4.43482"


def test_blas_and_openmp_are_read_from_the_builds_own_config():
    assert runtime.blas_of(CONFIG_2_13_CPU) == "mkl 2024.2"
    assert runtime.blas_of(CONFIG_OPENBLAS_NO_OPENMP) == "open"
    assert runtime.blas_of("PyTorch built with:\n") == ""
    libs = ["libc.so.6", "libgomp-a34b3233.so.1", "libtorch_cpu.so"]
    assert runtime.openmp_of(CONFIG_2_13_CPU, libs) == "OpenMP 201511 libgomp"
    assert runtime.openmp_of(CONFIG_2_13_CPU, ["libiomp5.so"]) == "OpenMP 201511 libiomp5"
    assert runtime.openmp_of(CONFIG_OPENBLAS_NO_OPENMP, libs) == ""


def test_the_installed_build_is_described_and_the_compiler_only_once_inductor_is_loaded():
    # A fresh interpreter: this process may have imported inductor already.
    code = ("import json, sys; from compatlab_probe.host.runtime import build_info;"
            "a = build_info(); import torch._inductor.cpp_builder; b = build_info();"
            "import threading; print(json.dumps([a, b, threading.active_count()]))")
    probe_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=300, cwd=probe_dir).stdout
    before, after, threads = json.loads(out)
    assert before["torch_build"] == "cpu" and before["blas"].startswith("mkl ")
    assert before["openmp"].startswith("OpenMP ") and "libgomp" in before["openmp"]
    assert before["cxx_compiler"] == ""
    assert after["cxx_compiler"] and not after["cxx_compiler"].startswith("unknown"), after
    assert threads == 1
