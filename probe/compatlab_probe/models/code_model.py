"""A team's own modelling code: `code:NAME@HASH` models (doc/probe.md, "Own code").

The request's model_path is "FILE.py:FUNCTION". FUNCTION is either
  - a callable returning a model, or (model, inputs), or {"model": ..., "inputs": ...}
    (inputs: {name: tensor}, on the CPU), called after torch.manual_seed(seed) with no
    arguments, except the test's shape (SHAPE_PARAMETERS) as keywords for those of them its
    signature names; or
  - a PreTrainedModel subclass, built here from its own config class's defaults, reduced as
    the factory reduces an architecture's default config, seeded.
The file is imported under a module name of its own, compatlab_code_<hash of its path> (never
one of sys.modules' usual names), so two code models in one zygote never share a module; it is
registered in sys.modules under that name, as an import would, since torch.compile looks a
traced function's module up there by its __name__ (a mask_mod reading a global of FILE); its
directory is first on sys.path (as for `python FILE.py`), so that FILE imports the modules
and packages beside it. Those,
transitively, are its code files (code_files): the id's hash covers all of them.

Checkpoints whose config.json names custom code (`auto_map`) are loaded here too, with
transformers' trust_remote_code, only when the request's kind_params say trust_remote_code.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
from typing import Any

from . import heads

# model_id prefix of code models.
PREFIX = "code:"
# Hex digits of the code files' hash (files_digest) kept in the model id.
ID_HASH_CHARS = 16
# The test's shape, passed to a FUNCTION whose signature names them (planning, which builds
# the model once without a test, passes none: the function's defaults).
SHAPE_PARAMETERS = ("batch_size", "seq_len")


def split_spec(spec: str) -> tuple[str, str]:
    """("FILE.py", "FUNCTION") of "FILE.py:FUNCTION"; ValueError when malformed."""
    path, sep, function = spec.rpartition(":")
    if not sep or not path or not function or not function.isidentifier():
        raise ValueError(f"--model-code {spec!r}: not FILE.py:FUNCTION")
    return path, function


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_object(spec: str) -> Any:
    """The object FUNCTION of FILE (imported fresh under a private module name)."""
    path, function = split_spec(spec)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"model code file {path} does not exist")
    name = "compatlab_code_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:  # FILE's own modules and packages, as `python FILE.py` finds them
        sys.path.insert(0, directory)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before it runs, as an import does: dynamo resolves the globals of a function
    # it inlines from FILE by importing its module's __name__ (a ModuleNotFoundError else).
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not hasattr(module, function):
        raise AttributeError(f"{path} defines no {function}")
    return getattr(module, function)


def registered_head(model_type: str, cls: type) -> tuple[str, str]:
    """(registered class name, head kind) of the first class in cls's MRO that transformers
    registers for `model_type`; (cls.__name__, "base") when none is."""
    for base in cls.__mro__:
        kind = heads.head_kind_of_class(model_type, base.__name__) if model_type else None
        if kind:
            return base.__name__, kind
    return cls.__name__, "base"


def stock_class(model_type: str, cls: type) -> type | None:
    """The class transformers itself registers for the model's architecture: the first class
    of cls's MRO that it registers for `model_type` (the baseline's code), else None."""
    from . import factory

    name, kind = registered_head(model_type, cls)
    if not model_type or heads.head_kind_of_class(model_type, name) is None:
        return None
    return factory.import_class(model_type, name)


def model_class(spec: str, model_type: str, seed: int) -> tuple[type, str]:
    """(class, head kind) of the code model `spec`: the class FUNCTION names, else the class
    of the model the function returns (built once, seeded, to see it)."""
    obj = load_object(spec)
    cls = obj if _is_model_class(obj) else type(build(spec, seed)[0])
    return cls, registered_head(model_type, cls)[1]


def _is_model_class(obj: Any) -> bool:
    try:
        from transformers import PreTrainedModel
    except ImportError:  # pragma: no cover - transformers is pinned
        return False
    return isinstance(obj, type) and issubclass(obj, PreTrainedModel)


def shape_arguments(function: Any, shape: dict[str, int] | None) -> dict[str, int]:
    """The entries of `shape` (SHAPE_PARAMETERS) that `function`'s signature names."""
    import inspect

    if not shape:
        return {}
    try:
        names = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return {}
    return {k: v for k, v in shape.items() if k in SHAPE_PARAMETERS and k in names}


def build(spec: str, seed: int, overrides_of=None,
          shape: dict[str, int] | None = None) -> tuple[Any, dict[str, Any] | None, Any]:
    """(model in eval mode, its inputs or None, the config it was built from or None);
    `shape`: the test's {"batch_size": B, "seq_len": S}, for a function that takes them."""
    import torch

    obj = load_object(spec)
    torch.manual_seed(seed)
    if _is_model_class(obj):
        from . import factory

        config_class = getattr(obj, "config_class", None)
        if config_class is None:
            raise TypeError(f"{spec}: {obj.__name__} has no config_class")
        model_type = getattr(config_class, "model_type", "") or ""
        overrides = (overrides_of or factory.model_overrides)(model_type) if model_type else {}
        config = factory.reduce_given_config(config_class(), overrides)
        return factory.build_model(obj, config, torch.float32, seed), None, config
    if not callable(obj):
        raise TypeError(f"{spec}: not a callable or a PreTrainedModel subclass")
    out = obj(**shape_arguments(obj, shape))
    inputs = None
    if isinstance(out, tuple) and len(out) == 2:
        out, inputs = out
    elif isinstance(out, dict) and "model" in out:
        out, inputs = out["model"], out.get("inputs")
    if not isinstance(out, torch.nn.Module):
        raise TypeError(f"{spec} returned {type(out).__name__}, not a torch.nn.Module "
                        "(or (model, inputs), or {'model': ..., 'inputs': ...})")
    if inputs is not None and (not isinstance(inputs, dict)
                               or not all(isinstance(v, torch.Tensor) for v in inputs.values())):
        raise TypeError(f"{spec}: its inputs must be a dict of tensors")
    return out.eval(), inputs, None


def describe(spec: str) -> dict[str, Any]:
    """{"code": {...}} for `compatlab_probe.models.catalog --model-code`: what planning needs."""
    path, function = split_spec(spec)
    files = code_files(path)
    model, inputs, _ = build(spec, 0)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", "") or ""
    head_class, head_kind = registered_head(model_type, type(model))
    return {"code": {"model_type": model_type, "model_class": type(model).__name__,
                     "head_class": head_class, "head_kind": head_kind,
                     "sha256": files_digest(files), "files": files,
                     "has_inputs": inputs is not None}}


# --------------------------------------------------------------------------- code files


def code_files(path: str) -> list[dict[str, str]]:
    """The code files of the code model FILE `path`, sorted by relative path: FILE and every
    Python module or package file it imports, transitively, from FILE's own directory tree
    (doc/probe.md, "Code files"): [{"path": absolute path, "rel": path relative to FILE's
    directory ("/"-separated), "sha256": its SHA-256}].

    Resolved statically, before any of the code runs: every `import` and `from ... import`
    statement of each file (at any depth: in functions, under `try`), absolute ones against
    FILE's directory (the first entry of sys.path while the code is built, as for
    `python FILE.py`), relative ones against the importing module's package, kept only where
    they land inside the tree. A package's `__init__.py` files count with its modules. Names
    of the standard library (sys.stdlib_module_names), and anything not found in the tree
    (site-packages: torch, transformers), are not code files. Imports by computed name
    (`importlib.import_module(name)`, `__import__`) are not followed."""
    path = os.path.abspath(path)
    root = os.path.dirname(path)
    found: dict[str, str | None] = {path: None}  # file -> its package directory (None: top level)
    queue = [path]
    while queue:
        current = queue.pop()
        for imported, package in _imports_of(root, current, found[current]):
            if imported not in found:
                found[imported] = package
                queue.append(imported)
    files = [{"path": f, "rel": os.path.relpath(f, root).replace(os.sep, "/"), "sha256": file_sha256(f)}
             for f in found]
    return sorted(files, key=lambda e: e["rel"])


def files_digest(files: list[dict[str, str]]) -> str:
    """The hash a code model's id keeps (its first ID_HASH_CHARS digits): FILE's own SHA-256
    when FILE imports no code file (the ids of earlier compatlab versions), else the SHA-256
    of the manifest: for each file by relative path, "REL\\nSHA256\\n"."""
    if len(files) == 1:
        return files[0]["sha256"]
    ordered = sorted(files, key=lambda e: e["rel"])
    return hashlib.sha256("".join(f"{e['rel']}\n{e['sha256']}\n" for e in ordered).encode()).hexdigest()


def _imports_of(root: str, path: str, package: str | None):
    """(file, its package directory or None) of each code file the file `path` imports."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, ValueError, OSError):
        return  # hashed all the same; the build reports the error
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _absolute(root, alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names if a.name != "*"]
            if node.level == 0 and node.module:
                base = node.module.split(".")
                yield from _absolute(root, base)
                for name in names:
                    yield from _absolute(root, [*base, name])
            elif node.level > 0 and package is not None:
                start = package
                for _ in range(node.level - 1):
                    start = os.path.dirname(start)
                if not _inside(root, start) or start == root:
                    continue  # above the tree's packages
                base = node.module.split(".") if node.module else []
                yield from _module_files(root, start, base)
                for name in names:
                    yield from _module_files(root, start, [*base, name])


def _absolute(root: str, parts: list[str]):
    if parts and parts[0] not in sys.stdlib_module_names:
        yield from _module_files(root, root, parts)


def _module_files(root: str, directory: str, parts: list[str]):
    """The files importing dotted `parts` from `directory` runs, as Python's path finder
    looks for them: a package's __init__.py, else a module FILE.py, else a namespace
    package's directory."""
    for i, part in enumerate(parts):
        if not part.isidentifier():
            return
        candidate = os.path.join(directory, part)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            yield os.path.join(candidate, "__init__.py"), candidate
            directory = candidate
        elif os.path.isfile(candidate + ".py"):
            yield candidate + ".py", (directory if directory != root else None)
            return  # a module has no submodules
        elif os.path.isdir(candidate) and i < len(parts) - 1:
            directory = candidate  # a namespace package
        else:
            return


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# --------------------------------------------------------------------------- remote code


def auto_map(path: str) -> dict[str, Any]:
    """The auto_map of a checkpoint's config.json ({} when none)."""
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return {}
    value = config.get("auto_map") if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


# auto_map keys by preference, with the head kind of each.
_AUTO_KEYS = (("AutoModelForCausalLM", "causal_lm"), ("AutoModelForSeq2SeqLM", "seq2seq_lm"),
              ("AutoModelForMaskedLM", "masked_lm"),
              ("AutoModelForSequenceClassification", "sequence_classification"), ("AutoModel", "base"))


def remote_class(path: str) -> tuple[type, str]:
    """(class, head kind) of a trusted checkpoint's auto_map: its own modelling code."""
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    mapping = auto_map(path)
    for key, kind in _AUTO_KEYS:
        ref = mapping.get(key)
        if isinstance(ref, (list, tuple)):
            ref = ref[0]
        if isinstance(ref, str) and ref:
            return get_class_from_dynamic_module(ref, path, local_files_only=True), kind
    raise LookupError(f"checkpoint {path}: its auto_map names no model class ({sorted(mapping)})")


def remote_head(path: str) -> tuple[str, str, str]:
    """(model_type, head class, head kind) of a trusted checkpoint with custom code."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path, local_files_only=True, trust_remote_code=True)
    cls, kind = remote_class(path)
    return config.model_type, cls.__name__, kind
