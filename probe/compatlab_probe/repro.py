"""`python -m compatlab_probe.repro`: a standalone reproduction script for one stored test.

Input (on standard input, never the command line): one JSON object
  {"request":  the test request of doc/worker-protocol.md, without the
               supervisor's plumbing (memory_limit, supervisor_pid),
   "recorded": what the store holds about the run (run_id, status, stage,
               error_type, error_message, signature, stack, figures, ...),
   "known_error": the knowledge-base entry matching the run, or null,
   "trusted":  true only for a run this store's own sweep planned and ran; absent or
               false (a run that came through `compatlab import`): the request is
               untrusted data, see UNTRUSTED below}
Output: the script, on standard output (`compatlab repro RUN_ID` prints it).

The script needs only torch and transformers. It embeds, verbatim, the source of
every module of this package that a test child runs (PROBE_FILES: every *.py
and *.json here except the harness's entry points in NOT_EMBEDDED), writes them
to a temporary directory under another package name, and runs the request
through the same call as `run_one` (worker/child.py: run_child).
The configuration reduction, seeded weights and inputs, the kind and the
measurement are therefore the probe's own code, not a copy that could drift:
a change to the probe is in the next script generated. doc/repro.md.

Nothing here imports torch or transformers: generating a script is fast.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pprint
import re
import sys
from collections.abc import Mapping
from typing import Any

from .protocol.request import TestRequest, parse_request

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Entry points of the harness (fork server, command lines, this generator):
# a test child never runs them, so the script does not need them.
NOT_EMBEDDED = {"worker/zygote.py", "worker/run_one.py", "models/catalog.py", "repro.py"}
# The embedded copy is imported under this name, so that the script can never
# pick up an installed compatlab_probe by accident.
EMBEDDED_PACKAGE = "compatlab_probe_embedded"
# Request keys that are the supervisor's plumbing, not part of the test.
PLUMBING = {"memory_limit", "supervisor_pid"}

# UNTRUSTED: what an imported run's request keeps. A dataset from elsewhere must
# not run code on the machine of whoever runs its script, so only these are kept;
# anything else that can name code is left out of REQUEST and written into the
# script as a commented-out line under a warning (doc/repro.md):
# torch.compile keywords with their types (bool is checked exactly, not as an int)...
SAFE_COMPILE_KWARGS = {"dynamic": (bool, type(None)), "fullgraph": (bool,), "mode": (str,)}
SAFE_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# ...the inductor options (compile_options["options"]) the shipped profiles
# (targets/*.json) use, with their types: none today, and never a string (a
# string-valued inductor option can name a program, e.g. cpp.cxx)...
SAFE_INDUCTOR_OPTIONS: dict[str, tuple[type, ...]] = {}
# ...a backend only by its registered name (never "module:function"), no model_path,
# and none of a target profile's keys that run Python in the child.
_BACKEND_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PROFILE_CODE_KEYS = ("pythonpath", "import", "setup")


def probe_files(package_dir: str = PACKAGE_DIR) -> dict[str, str]:
    """{relative path: text} of every file a test child needs, sorted by path."""
    files = {}
    for root, dirs, names in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(root, name), package_dir)
            if not name.endswith((".py", ".json")) or rel in NOT_EMBEDDED:
                continue
            with open(os.path.join(root, name), encoding="utf-8", newline="") as f:
                files[rel.replace(os.sep, "/")] = f.read()
    return dict(sorted(files.items()))


def _safe_compile_value(key: str, value: Any) -> bool:
    types = SAFE_COMPILE_KWARGS.get(key)
    if types is None or type(value) not in types:
        return False
    return key != "mode" or value in SAFE_COMPILE_MODES


def untrusted_request(request: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """An imported run's request with every setting that could run code taken out.

    Returns (the request to run, [(where, value) left out]): `where` is the Python
    subscript of REQUEST the value came from (e.g. '["compile_options"]["options"]["cpp.cxx"]').
    """
    kept = json.loads(json.dumps(request))  # a deep copy of plain JSON data
    left_out: list[tuple[str, Any]] = []
    options = kept.get("compile_options")
    if isinstance(options, dict):
        for key in list(options):
            value = options[key]
            if key == "options" and isinstance(value, dict):
                for name in list(value):
                    types = SAFE_INDUCTOR_OPTIONS.get(name)
                    if types is None or type(value[name]) not in types or isinstance(value[name], str):
                        left_out.append((f"[\"compile_options\"][\"options\"][{name!r}]", value.pop(name)))
            elif not _safe_compile_value(key, value):
                left_out.append((f"[\"compile_options\"][{key!r}]", options.pop(key)))
    elif options is not None:
        left_out.append(('["compile_options"]', kept.pop("compile_options")))
    backend = kept.get("backend")
    if backend and not (isinstance(backend, str) and _BACKEND_NAME.match(backend)):
        left_out.append(('["backend"]', backend))
        kept["backend"] = ""
    if kept.get("model_path"):
        left_out.append(('["model_path"]', kept["model_path"]))
        kept["model_path"] = ""
    profile = kept.get("target_profile")
    if isinstance(profile, dict):
        for key in PROFILE_CODE_KEYS:
            if profile.get(key):
                left_out.append((f"[\"target_profile\"][{key!r}]", profile[key]))
                profile[key] = "" if key == "setup" else []
    return kept, left_out


def _untrusted_block(left_out: list[tuple[str, Any]]) -> list[str]:
    """The warning and the commented-out settings of an imported run's script."""
    if not left_out:
        return []
    lines = ["# " + "=" * 94,
             "# WARNING: this run came through `compatlab import`: its request is untrusted data.",
             "# These settings could run code (a program, a module, a path) and were LEFT OUT of",
             "# REQUEST below. Read them; uncomment a line only if you trust what it names.",
             "# (A run without its model_path, or on another backend, may not reproduce.)"]
    for where, value in left_out:
        lines.append(_printable(f"# REQUEST{where} = {value!r}"))
    lines.append("# " + "=" * 94)
    return lines


def _printable(text: str) -> str:
    """`text` with every character that is not printable (NUL, ESC, BEL, line and
    paragraph separators, surrogates, ...) as a visible escape: one comment line stays one."""
    out = []
    for ch in str(text):
        if ch == " " or ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                       else f"\\U{code:08x}")
    return "".join(out)


def _literal(text):
    """`text` as a triple-quoted Python string literal that keeps its lines readable."""
    body = text.replace("\\", "\\\\").replace("'''", "\\'\\'\\'").replace("\r", "\\r")
    if body.endswith("'"):
        body = body[:-1] + "\\'"
    return "'''" + body + "'''"


def _comment(text, width=96):
    """`text` as '# ' lines (wrapped at spaces), for the script's header."""
    lines = []
    for paragraph in [_printable(line) for line in str(text).split("\n")] or [""]:
        words, line = paragraph.split(" "), ""
        for word in words:
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "\n".join(f"#   {line}".rstrip() for line in lines)


def _describe(request: TestRequest) -> str:
    """One line naming the test: model, class, kind, mode, target, dtype, shape, parameters."""
    model = request.model_id or request.model_type or "?"
    cls = request.model_class
    params = " ".join(f"{k}={v}" for k, v in sorted(request.kind_params.given.items()))
    return (f"{model}{f' ({cls})' if cls else ''}: {request.kind}, "
            f"{request.mode} on {request.target}, {request.dtype}, "
            f"batch {request.batch_size} x seq {request.seq_len}"
            f"{f', {params}' if params else ''}")


def files_digest(files: Mapping[str, str]) -> str:
    """SHA-256 (hex) of the embedded files: names and contents, in order."""
    digest = hashlib.sha256()
    for rel, text in files.items():
        digest.update(rel.encode() + b"\0" + text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _header(request: TestRequest, recorded: Mapping[str, Any], known: Mapping[str, Any] | None,
            files: Mapping[str, str]) -> str:
    """The comment block at the top of the script: the test, what was recorded, what is known."""
    out = ["#!/usr/bin/env python3",
           "# compatlab reproduction script: reruns one stored test with torch and transformers only.",
           f"# Probe code: {len(files)} files, sha256 {files_digest(files)[:16]} (PROBE_FILES below).",
           "#",
           "# Test:",
           _comment(_describe(request))]
    if recorded:
        where = ", ".join(x for x in (f"run {recorded.get('run_id', '?')}", recorded.get("started_at", ""),
                                      f"host {recorded['host']}" if recorded.get("host") else "") if x)
        status = recorded.get("status", "?")
        if recorded.get("status_detail"):
            status += f" ({recorded['status_detail']})"
        if recorded.get("stage"):
            status += f" at stage {recorded['stage']}"
        out += ["# Recorded:", _comment(f"{status}; {where}")]
        if recorded.get("signature"):
            out.append(_comment(recorded["signature"]))
        stack = ", ".join(f"{name} {recorded[key]}" for name, key in (
            ("torch", "torch_version"), ("transformers", "transformers_version"),
            ("python", "python_version")) if recorded.get(key))
        if stack:
            out.append(_comment(stack))
        if recorded.get("mem_limit_bytes"):
            out.append(_comment(f"under a memory limit of {recorded['mem_limit_bytes']} bytes "
                                f"({recorded.get('mem_limit_method') or 'unknown method'}); this script "
                                "applies none (run it under `ulimit -v` or a memory cgroup to reproduce an oom)"))
    if known:
        out += ["# Known error (compatlab errors knowledge base, entry " + known.get("id", "?") + "):",
                _comment(known.get("explanation", ""))]
        if known.get("cause"):
            out += ["# Likely cause:", _comment(known["cause"])]
        if known.get("workaround"):
            out += ["# Workaround:", _comment(known["workaround"])]
    out += [
        "#",
        "# Usage:",
        "#   python repro.py           prints `status: ...` and the figures; exit 0 when the recorded",
        "#                             status (and error type) is reproduced and, on the recorded",
        "#                             cpu_model and stack, steady_median_s within its interval",
        "#                             (else 'figures not comparable here'), 1 when not",
        "#   python repro.py --json    prints the probe's whole result object instead",
        "#   python repro.py --timeout S   deadline in seconds (default: the test's timeout_s; 0 = none)",
        "#",
        "# How: PROBE_FILES below is the compatlab probe's own code (the modules a test child runs,",
        "# verbatim). They are written to a temporary directory, imported as",
        f"# {EMBEDDED_PACKAGE}, and REQUEST is run through worker.child.run_child, as",
        "# `python -m compatlab_probe.worker.run_one` does: the same reduced",
        "# configuration, seeded weights and inputs, kind and measurement as the recorded run.",
    ]
    return "\n".join(out)


_MAIN = r'''
import argparse
import hashlib
import importlib
import json
import os
import sys
import tempfile
import threading

PACKAGE = "@PACKAGE@"
FIGURES = ("build_s", "prepare_s", "steady_median_s", "steady_p90_s", "steady_iters", "param_count",
           "host_peak_rss_bytes", "memory_method", "torch_num_threads", "steady_ci_low_s", "steady_ci_high_s",
           "noisy", "noisy_reason")
STACK = ("torch_version", "transformers_version", "python_version")
# diff's rule (doc/dataset.md, "Diff"): a noisy row's interval widened by NOISY_WIDENING on
# both sides; a change needs the intervals apart and the medians STEADY_THRESHOLD apart.
NOISY_WIDENING = 2.0
STEADY_THRESHOLD = 0.05


def _cpu_model():
    """The 'model name' of /proc/cpuinfo, as compatlab stores it in cpu_model."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _interval(figures):
    """(low, high) of a steady median: the stored interval, widened when noisy; None without it."""
    median, low, high = (figures.get(k) for k in ("steady_median_s", "steady_ci_low_s", "steady_ci_high_s"))
    if median is None or low is None or high is None:
        return None
    low, high = min(low, median), max(high, median)
    if figures.get("noisy"):
        low, high = low / NOISY_WIDENING, high * NOISY_WIDENING
    return low, high


def _figures_verdict(metrics, stack):
    """(comparable, same, line): the rerun's steady median against the recorded one by
    diff's rule when cpu_model and the stack match the recorded row."""
    here = {"cpu_model": _cpu_model(), **{k: stack.get(k, "") for k in STACK},
            "stack_versions": stack.get("stack_versions", "")}
    differs = [k for k, v in here.items() if (RECORDED.get(k) or "") != (v or "")]
    if differs:
        return False, True, "figures not comparable here (" + ", ".join(
            f"{k} {RECORDED.get(k) or '(none)'} recorded, {here[k] or '(none)'} here" for k in differs) + ")"
    was, now = _interval(RECORDED), _interval(metrics)
    if was is None or now is None:
        return False, True, "figures not comparable here (no steady interval on both sides)"
    base, head = RECORDED["steady_median_s"], metrics["steady_median_s"]
    apart = (now[0] > was[1] and head > base * (1 + STEADY_THRESHOLD)) or \
            (now[1] < was[0] and base > head * (1 + STEADY_THRESHOLD))
    same = not apart and base > 0 and head > 0
    return True, same, (f"figures: steady_median_s {head:.6g} in [{now[0]:.6g}, {now[1]:.6g}], recorded "
                        f"{base:.6g} in [{was[0]:.6g}, {was[1]:.6g}]: " + ("within" if same else "apart"))


def _report(result, as_json):
    """Prints the result; returns the exit code (0 when the recorded outcome is reproduced)."""
    recorded = RECORDED.get("status")
    same = result.get("status") == recorded
    if same and RECORDED.get("error_type"):
        same = result.get("error_type") == RECORDED["error_type"]
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0 if same or not recorded else 1
    print(f"status: {result.get('status', '')}")
    for key in ("status_detail", "stage", "model_class"):
        if result.get(key):
            print(f"{key}: {result[key]}")
    if result.get("error_type") or result.get("error_message"):
        first = (result.get("error_message") or "").strip().splitlines()
        print(f"error: {result.get('error_type', '')}: {first[0] if first else ''}")
    metrics = result.get("metrics") or {}
    for key in FIGURES:
        if metrics.get(key) is not None:
            value = metrics[key]
            print(f"{key}: {value:.6g}" if isinstance(value, float) else f"{key}: {value}")
    stack = result.get("stack") or {}
    for key in STACK:
        if stack.get(key):
            print(f"{key}: {stack[key]}")
    if not recorded:
        return 0
    differs = [f"{key} {RECORDED[key]}" for key in STACK if RECORDED.get(key) and RECORDED[key] != stack.get(key)]
    if differs:
        print("note: recorded on another stack: " + ", ".join(differs))
    said = [recorded]
    if RECORDED.get("error_type"):
        said.append(f"{RECORDED['error_type']}: {RECORDED.get('error_message', '')}")
    figures = [f"{key} {RECORDED[key]:.6g}" if isinstance(RECORDED[key], float) else f"{key} {RECORDED[key]}"
               for key in FIGURES[:6] if RECORDED.get(key) is not None]
    if figures:
        said.append(", ".join(figures))
    print("recorded: " + "; ".join(said))
    comparable, figures_same, line = _figures_verdict(metrics, stack)
    print(line)
    if comparable and not figures_same:
        same = False
    print(f"reproduced: {'yes' if same else 'no'}")
    return 0 if same else 1


def _load_probe(directory):
    """Writes PROBE_FILES under directory/PACKAGE and imports the package's worker.child module."""
    for rel, text in PROBE_FILES.items():
        path = os.path.join(directory, PACKAGE, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    sys.path.insert(0, directory)
    runtime = importlib.import_module(PACKAGE + ".host.runtime")
    runtime.apply_env()  # before torch is imported: offline hub, one OpenBLAS thread
    return importlib.import_module(PACKAGE + ".worker.child")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Reruns one compatlab test (see the comments at the top).")
    parser.add_argument("--json", action="store_true", help="print the probe's result object as JSON")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                        help="deadline in seconds; 0 for none (default: the test's timeout_s)")
    args = parser.parse_args(argv)
    if LEFT_OUT:
        print(f"warning: {LEFT_OUT} untrusted settings of this imported run were left out of REQUEST; "
              "see the WARNING at the top of this script", file=sys.stderr)
    for path, expected in CODE_FILES:  # a code model reruns only on the code it ran
        try:
            with open(path, "rb") as f:
                actual = hashlib.sha256(f.read()).hexdigest()
        except OSError as exc:
            print(f"refused: the model code {path} is not readable ({exc}); this run needs it (recorded "
                  f"sha256 {expected[:16]})", file=sys.stderr)
            return 2
        if not actual.startswith(expected):
            print(f"refused: the model code {path} changed since the run (sha256 {actual[:16]}, recorded "
                  f"{expected[:16]}): it is another model; sweep it again", file=sys.stderr)
            return 2
    watchdog = None
    if args.timeout > 0:  # the supervisor's deadline, kept here by a watchdog thread
        def expire():
            sys.stdout.flush()
            code = _report({"status": "timeout", "status_detail": f"no result after {args.timeout:g} s"},
                           args.json)
            sys.stdout.flush()
            os._exit(code)

        watchdog = threading.Timer(args.timeout, expire)
        watchdog.daemon = True
        watchdog.start()
    with tempfile.TemporaryDirectory(prefix="compatlab-repro-") as directory:
        child = _load_probe(directory)
        out = os.dup(1)
        sys.stdout.flush()
        os.dup2(2, 1)  # whatever the model prints goes to stderr, as in run_one
        try:
            result = child.run_child(REQUEST)  # a fresh kinds.context.Context, as run_one's
        finally:
            if watchdog is not None:
                watchdog.cancel()
            sys.stdout.flush()
            os.dup2(out, 1)
            os.close(out)
    return _report(result, args.json)
'''


def code_files(request: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[list[str]]:
    """[[path, sha256 or its prefix]] of a code model's files (recorded code_files, else the
    model_path's file with the id's hash prefix); [] for other models."""
    model_id = request.get("model_id") or ""
    if not isinstance(model_id, str) or not model_id.startswith("code:"):
        return []
    stored = recorded.get("code_files") or ""
    try:
        entries = json.loads(stored) if isinstance(stored, str) and stored else []
    except ValueError:
        entries = []
    files = [[e["path"], e["sha256"]] for e in entries
             if isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("sha256"), str)]
    if not files:  # a run that ended before its child read its code
        path = str(request.get("model_path") or "").rpartition(":")[0]
        files = [[path, model_id.rpartition("@")[2]]]
    return files


def script(request: Mapping[str, Any], recorded: Mapping[str, Any] | None = None,
           known_error: Mapping[str, Any] | None = None, trusted: bool = False) -> str:
    """The reproduction script (text) of one test request; BadRequest (a ValueError) if it is malformed.

    Unless `trusted` (a run this store's own sweep made), the request is an imported run's:
    untrusted_request() takes out what could run code and the script shows it commented out."""
    request = {k: v for k, v in request.items() if k not in PLUMBING}
    left_out: list[tuple[str, Any]] = []
    code = code_files(request, recorded or {})
    if code and not trusted:
        raise ValueError(f"run of {request.get('model_id')} came through `compatlab import`: its modelling "
                         "code is not ours to run, so it has no reproduction script")
    if not trusted:
        request, left_out = untrusted_request(request)
    parsed = parse_request(request)
    files = probe_files()
    parts = [
        _header(parsed, recorded or {}, known_error, files),
        *_untrusted_block(left_out),
        "",
        "# The test, as the supervisor sent it to the probe (doc/worker-protocol.md).",
        "REQUEST = " + pprint.pformat(request, width=100, sort_dicts=False),
        f"TIMEOUT_S = {parsed.timeout_s!r}  # the test's deadline (REQUEST's timeout_s)",
        f"LEFT_OUT = {len(left_out)}  # untrusted settings left out of REQUEST (see the warning above)",
        "# A code: model's files and their SHA-256 (or its prefix): checked before the run.",
        "CODE_FILES = " + pprint.pformat(code, width=100),
        "",
        "# What the store recorded for this run.",
        "RECORDED = " + pprint.pformat(recorded or {}, width=100, sort_dicts=True),
        _MAIN.replace("@PACKAGE@", EMBEDDED_PACKAGE),
        "",
        "# The compatlab probe's code: every module a test child runs, verbatim.",
        "PROBE_FILES = {",
    ]
    for rel, text in files.items():
        parts.append(f"    {rel!r}: {_literal(text)},")
    parts += ["}", "", "", 'if __name__ == "__main__":', "    sys.exit(main())", ""]
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] + " The input is read on standard input.")
    parser.parse_args(argv)
    try:
        data = json.loads(sys.stdin.read())
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            raise ValueError("the input must be an object with a \"request\" object")
        trusted = data.get("trusted") is True
        text = script(data["request"], data.get("recorded") or {}, data.get("known_error"), trusted=trusted)
        if not trusted:
            _, left_out = untrusted_request({k: v for k, v in data["request"].items() if k not in PLUMBING})
            if left_out:
                print(f"compatlab_probe.repro: warning: an imported run: {len(left_out)} settings that could "
                      "run code are left out of the script's REQUEST and shown commented out at its top",
                      file=sys.stderr)
    except (ValueError, OSError) as exc:
        print(f"compatlab_probe.repro: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
