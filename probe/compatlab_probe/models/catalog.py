"""`python -m compatlab_probe.models.catalog`: the model types the installed transformers registers.

Prints one JSON object:
  {"transformers_version", "torch_version",
   "models": {model_type: {"config_class", "head_class", "head_kind", "head_classes", "modality"}}}
With --model-path DIR it describes a local checkpoint instead:
  {"checkpoint": {"model_type", "head_class", "head_kind"}}, or {"error": ...} and exit 2.
  A checkpoint whose config.json has an auto_map (custom code) is refused unless
  --trust-remote-code is given; then its own code is imported to name its class.
With --model-code FILE.py:FUNCTION it builds that code model once (code_model.py) and
describes it: {"code": {"model_type", "model_class", "head_class", "head_kind", "sha256" (the
id's hash of its code files), "files" (code_model.code_files), "has_inputs"}}, or
{"error": ...} and exit 2.
With --backend NAME it checks a torch.compile backend instead: {"backend": NAME} when
torch registers NAME (torch._dynamo.list_backends, every tag) or NAME is "module:function"
naming a callable that imports; else {"error": ...} and exit 2.

No model is built and no modelling module is imported: only the auto tables' names.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..host.answer import answer, refuse
from ..host.runtime import apply_env


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
            "head_classes": heads.head_classes(model_type),
            "modality": heads.modality(model_type),
        }
    return {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "models": models,
    }


def describe_checkpoint(path: str, trust_remote_code: bool = False) -> dict[str, Any]:
    """{"checkpoint": {...}} for a local checkpoint directory; raises on a bad one."""
    from . import code_model
    from .factory import checkpoint_head

    if code_model.auto_map(path):
        if not trust_remote_code:
            raise PermissionError(f"checkpoint {path} names custom code (config.json auto_map: "
                                  f"{', '.join(sorted(code_model.auto_map(path)))}); "
                                  "pass --trust-remote-code to run it")
        model_type, head_class, head_kind = code_model.remote_head(path)
        return {"checkpoint": {"model_type": model_type, "head_class": head_class, "head_kind": head_kind,
                               "custom_code": True}}
    else:
        model_type, head_class, head_kind = checkpoint_head(path)
    return {"checkpoint": {"model_type": model_type, "head_class": head_class, "head_kind": head_kind,
                           "custom_code": bool(code_model.auto_map(path))}}


def check_backend(name: str) -> dict[str, Any]:
    """{"backend": name} for a usable compile backend; raises ValueError naming the known ones."""
    if ":" in name:
        from ..stacks.target import resolve

        try:
            backend = resolve(name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"--backend {name}: does not import ({type(exc).__name__}: {exc})") from None
        if not callable(backend):
            raise ValueError(f"--backend {name}: not a callable")
        return {"backend": name}
    import torch._dynamo

    registered = sorted(torch._dynamo.list_backends(exclude_tags=()))
    if name not in registered:
        raise ValueError(f"--backend {name}: not a compile backend of torch {torch.__version__} "
                         f"(registered: {', '.join(registered)}; or module:function)")
    return {"backend": name}


def main(argv: list[str] | None = None) -> int:
    apply_env()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", help="describe this local checkpoint directory")
    parser.add_argument("--backend", help="check this torch.compile backend")
    parser.add_argument("--model-code", action="append", default=[],
                        help="describe this code model (FILE.py:FUNCTION); once per model with --several")
    parser.add_argument("--several", action="store_true",
                        help='with --model-code: answer {"codes": [one "code" object per model, in order]}')
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="with --model-path: a checkpoint's own code (auto_map) may be imported")
    args = parser.parse_args(argv)
    if args.backend:
        try:
            out = check_backend(args.backend)
        except ValueError as exc:
            return refuse(str(exc), 2)
    elif args.model_code:
        try:
            import contextlib

            from .code_model import describe

            spec = args.model_code[0]
            with contextlib.redirect_stdout(sys.stderr):  # the code's own prints stay off the answer
                codes = []
                for spec in args.model_code:
                    codes.append(describe(spec)["code"])
            out = {"codes": codes} if args.several else {"code": codes[0]}
        except BaseException as exc:  # the team's code may raise anything, SystemExit included
            return refuse(f"{spec}: {type(exc).__name__}: {exc}", 2)
    elif args.model_path:
        try:
            out = describe_checkpoint(args.model_path, args.trust_remote_code)
        except Exception as exc:  # any failure to read the checkpoint is reported, not raised
            return refuse(f"{type(exc).__name__}: {exc}", 2)
    else:
        out = catalog()
    return answer(out)


if __name__ == "__main__":
    sys.exit(main())
