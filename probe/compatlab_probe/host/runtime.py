"""Environment set-up and software-stack facts.

`apply_env()` must run before torch is imported: OpenBLAS would otherwise start
a thread pool on import, and a process with more than one thread must not fork.
"""

from __future__ import annotations

import os
import platform

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

    Imports torch and transformers if they are not imported yet.
    """
    import torch
    import transformers

    return {
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }
