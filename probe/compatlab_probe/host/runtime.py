"""Environment set-up and software-stack facts.

`apply_env()` must run before torch is imported: OpenBLAS would otherwise start
a thread pool on import, and a process with more than one thread must not fork.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys

# Variables the zygote (and run_one) set before importing torch/transformers.
FORK_SAFE_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # pyarrow's bundled jemalloc starts a background purge thread when pyarrow loads;
    # transformers 5.17 loads it at import where scikit-learn and pandas are installed
    # (generation.candidate_generator imports sklearn, which imports pandas, then pyarrow).
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
}


def apply_env() -> None:
    """Sets FORK_SAFE_ENV in os.environ (overriding inherited values)."""
    os.environ.update(FORK_SAFE_ENV)


def stack_info() -> dict[str, str]:
    """The software stack as reported in `ready` and in every result object.

    Imports torch and transformers if they are not imported yet. The build facts
    (`build_info`) are read once per process and inherited by forked children.
    """
    import torch
    import transformers

    return {
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        **build_info(),
    }


_BUILD_INFO: dict[str, str] = {}


def build_info() -> dict[str, str]:
    """What the torch build is made of, beyond its version: `torch_build` (cpu,
    "cuda 13.0", "rocm 6.4"), `blas`, `openmp` and `cxx_compiler` (inductor's C++
    compiler on the CPU, with its version; empty until inductor's C++ builder is
    imported, as it is by a compile plan's calibration). Cached once complete."""
    if _BUILD_INFO.get("cxx_compiler"):
        return dict(_BUILD_INFO)
    import torch

    config = torch.__config__.show()
    _BUILD_INFO.update(torch_build=torch_build(torch.version.cuda, torch.version.hip),
                       blas=blas_of(config), openmp=openmp_of(config, _loaded_libraries()),
                       cxx_compiler=_inductor_compiler())
    return dict(_BUILD_INFO)


def torch_build(cuda: str | None, hip: str | None) -> str:
    """"cuda 13.0", "rocm 6.4.1" or "cpu": the accelerator a torch build was made for."""
    if cuda:
        return f"cuda {cuda}"
    if hip:
        return f"rocm {hip}"
    return "cpu"


_BLAS_INFO = re.compile(r"BLAS_INFO=([A-Za-z0-9_.+-]+)")
_MKL_VERSION = re.compile(r"Math Kernel Library Version ([0-9.]+)")
_OPENMP = re.compile(r"^\s*- OpenMP ([0-9]+)", re.MULTILINE)


def blas_of(config: str) -> str:
    """The BLAS of a build from `torch.__config__.show()`: "mkl 2024.2", "open"
    (OpenBLAS), ...; empty when the text names none."""
    match = _BLAS_INFO.search(config)
    if not match:
        return ""
    name = match.group(1)
    version = _MKL_VERSION.search(config) if name == "mkl" else None
    return f"{name} {version.group(1)}" if version else name


def openmp_of(config: str, libraries: list[str]) -> str:
    """"OpenMP 201511 libgomp": the OpenMP version a build names and the runtime
    library loaded in this process (libgomp, libiomp5, libomp); empty without OpenMP."""
    match = _OPENMP.search(config)
    if not match:
        return ""
    runtimes = sorted({name.split(".so")[0].split("-")[0] for name in libraries
                       if name.startswith(("libgomp", "libiomp", "libomp"))})
    return " ".join([f"OpenMP {match.group(1)}", *runtimes])


def _loaded_libraries() -> list[str]:
    """The file names of the shared libraries mapped into this process."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return sorted({os.path.basename(line.split()[-1]) for line in maps
                           if ".so" in line and "/" in line})
    except OSError:
        return []


def _inductor_compiler() -> str:
    """Inductor's C++ compiler and its version ("g++ (Debian 12.2.0-14) 12.2.0"),
    when inductor's C++ builder is already imported; else empty (importing it costs
    seconds, so an eager-only plan does not)."""
    builder = sys.modules.get("torch._inductor.cpp_builder")
    if builder is None:
        return ""
    try:
        compiler = builder.get_cpp_compiler()
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return f"unknown ({type(exc).__name__})"
    first = out.splitlines()[0].strip() if out.strip() else ""
    return first[:200] or str(compiler)[:200]
