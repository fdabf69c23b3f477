"""Test kinds: what a test child does with its request.

Each kind is a function kind(request, result, context) that fills `result`
(a result.Result) from `request` (a request.TestRequest, parsed and checked for
malformed fields already). `check_request` decides, before any work, whether a
well-formed request is runnable, skipped (not supported yet) or bogus (harness_error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol.request import TestRequest
from ..protocol.result import Result
from ..stacks import lowering
from . import faults, forward, generate, load, train
from .common import StageFailed as StageFailed  # re-exported for child.run_test

Kind = Callable[[TestRequest, Result, Any], None]
# kind name -> function
KINDS: dict[str, Kind] = {
    "forward": forward.run,
    "generate": generate.run,
    "train": train.run,
    "load": load.run,
    "noop": faults.noop,
    "hang": faults.hang,
    "hang-hard": faults.hang_hard,
    "segfault": faults.segfault,
    "abort": faults.abort,
    "oom": faults.oom,
    "raise": faults.raise_,
    "flood": faults.flood,
    "kill-zygote": faults.kill_zygote,
}
# Kinds of the design that the probe does not run yet (until they are in KINDS).
LATER_KINDS: set[str] = set()
# Kinds that build a model and so care about mode, target and dtype.
MODEL_KINDS = {"forward", "generate", "train", "load"}
LATER_MODES: set[str] = set()
# Kinds mode export takes (the exported program of a forward call).
EXPORT_KINDS = {"forward"}


def kind_of(request: TestRequest) -> Kind:
    """The kind's function; over several ranks a fault kind faults in one rank only
    (faults.on_fault_rank), the others wait for it."""
    kind = KINDS[request.kind]
    if request.in_group and request.kind not in MODEL_KINDS:
        return faults.on_fault_rank(kind)
    return kind


def _one_rank_only(request: TestRequest) -> str:
    """Why a test in a process group cannot run (mode export, kind load), else ""."""
    if request.in_group and (request.mode == "export" or request.kind == "load"):
        return f"{'mode export' if request.mode == 'export' else 'kind load'} runs on one rank only (doc/ranks.md)"
    return ""


def check_request(request: TestRequest) -> tuple[str, str] | None:
    """None when the request can run; else (status, detail) with status skipped or harness_error."""
    kind = request.kind
    if kind in LATER_KINDS and kind not in KINDS:
        return "skipped", f"kind {kind} is not supported by the probe yet"
    if kind not in KINDS:
        return "harness_error", f"unknown kind {kind!r}"
    if kind not in MODEL_KINDS:
        return None
    if request.mode in LATER_MODES:
        return "skipped", f"mode {request.mode} is not supported by the probe yet"
    profile = request.target_profile
    if profile is not None and request.mode not in profile.modes:
        if tuple(profile.modes) == ("export",):
            return "skipped", "export-only target"
        return "skipped", f"target {profile.name} takes modes {', '.join(profile.modes)}, not {request.mode}"
    if one_rank_only := _one_rank_only(request):
        return "skipped", one_rank_only
    if request.mode == "export" and kind not in EXPORT_KINDS:
        return "skipped", f"mode export takes kind forward only (kind {kind} has no exported form)"
    if request.mode == "export" and profile is not None and profile.lowering not in lowering.LOWERINGS:
        return "harness_error", f"target {profile.name}: unknown lowering {profile.lowering!r}"
    # A hub: model the plan could not resolve has no model_type yet: the child meets its reason.
    if not request.model_type and not request.model_path and not request.model_id.startswith("hub:"):
        return "harness_error", f"a {kind} test needs model_type, model_path or a hub: model_id"
    return None
