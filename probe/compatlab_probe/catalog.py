"""`python -m compatlab_probe.catalog`: the model types the installed transformers registers.

Prints one JSON object:
  {"transformers_version", "torch_version",
   "models": {model_type: {"config_class", "head_class", "head_kind", "modality"}}}
With --model-path DIR it describes a local checkpoint instead:
  {"checkpoint": {"model_type", "head_class", "head_kind"}}, or {"error": ...} and exit 2.

No model is built and no modelling module is imported: only the auto tables' names.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .runtime import apply_env


def catalog() -> dict[str, Any]:
    """The catalog object for every registered model type."""
    import torch
    import transformers

    from . import heads

    models = {}
    for model_type in heads.registered_model_types():
        head_class, head_kind = heads.head_for(model_type)
        models[model_type] = {
            "config_class": heads.config_class_name(model_type),
            "head_class": head_class,
            "head_kind": head_kind,
            "modality": heads.modality(model_type),
        }
    return {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "models": models,
    }


def describe_checkpoint(path: str) -> dict[str, Any]:
    """{"checkpoint": {...}} for a local checkpoint directory; raises on a bad one."""
    from .factory import checkpoint_head

    model_type, head_class, head_kind = checkpoint_head(path)
    return {"checkpoint": {"model_type": model_type, "head_class": head_class, "head_kind": head_kind}}


def main(argv: list[str] | None = None) -> int:
    apply_env()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", help="describe this local checkpoint directory")
    args = parser.parse_args(argv)
    if args.model_path:
        try:
            out = describe_checkpoint(args.model_path)
        except Exception as exc:  # any failure to read the checkpoint is reported, not raised
            json.dump({"error": f"{type(exc).__name__}: {exc}"}, sys.stdout)
            sys.stdout.write("\n")
            return 2
    else:
        out = catalog()
    json.dump(out, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
