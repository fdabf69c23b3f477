"""Dev tool: run `forward` (cpu; eager, or compiled with --mode compile) for every registered
model type and summarise.

    PYTHONPATH=probe .venv/bin/python probe/tools/scan.py --out /tmp/scan.json [--jobs 2] [--only a,b]
        [--mode compile --backend aot_eager]

Like the zygote, the scanner imports torch and transformers once and forks one
child per model type, which runs the same code as run_one (child.run_child)
under a timeout and an address-space rlimit; a child that dies or overruns is
recorded as crash/timeout. The summary separates reduction failures (import
and build stages: the factory could not make a tiny model) from model failures
(prepare and steady stages: the model was built but its forward failed).
"""

import argparse
import collections
import json
import os
import re
import select
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from compatlab_probe.host.runtime import apply_env  # noqa: E402

apply_env()

from compatlab_probe.kinds.context import Context  # noqa: E402
from compatlab_probe.models import heads  # noqa: E402
from compatlab_probe.worker.child import run_child  # noqa: E402

SCAN_MEASURE = {"warmup": 1, "min_iters": 2, "min_time_s": 0.0}
# Metrics kept in the scan's rows besides the status (accuracy verdict, compile counters).
SCAN_METRICS = ("acc_rule", "acc_cosine", "acc_max_abs_err", "graph_breaks", "unique_graphs", "speedup")


def request_for(model_type, args):
    return {
        "run_id": f"scan-{model_type}", "test_id": "", "model_id": f"hf:{model_type}",
        "model_type": model_type, "model_class": "", "model_path": "", "target": "cpu",
        "mode": args.mode, "backend": args.backend if args.mode == "compile" else "", "kind": "forward",
        "dtype": "float32",
        "batch_size": 1, "seq_len": args.seq_len, "kind_params": {}, "timeout_s": args.timeout,
        "torch_num_threads": 1,
        "memory_limit": {"method": "rlimit", "bytes": args.mem_gb << 30},
        "measure": SCAN_MEASURE,
    }


def start(model_type, args):
    """Forks a child running one request; returns (pid, result read end, start time)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            request = request_for(model_type, args)
            result = run_child(request, Context())
            data = json.dumps(result).encode()
            while data:
                data = data[os.write(write_end, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end, time.monotonic()


def scan(model_types, args, on_result):
    """Runs up to args.jobs children at once; calls on_result(model_type, result, seconds)."""
    pending = list(model_types)
    running = {}  # pid -> [model_type, read_end, started, chunks]
    while pending or running:
        while pending and len(running) < args.jobs:
            model_type = pending.pop(0)
            pid, read_end, started = start(model_type, args)
            running[pid] = [model_type, read_end, started, []]
        by_fd = {entry[1]: entry for entry in running.values()}
        readable, _, _ = select.select(list(by_fd), [], [], 0.05)
        for fd in readable:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                by_fd[fd][3].append(chunk)
        for pid, (model_type, read_end, started, chunks) in list(running.items()):
            elapsed = time.monotonic() - started
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and elapsed > args.timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                result = {"status": "timeout"}
            elif done:
                result = _result(read_end, chunks, status)
            else:
                continue
            os.close(read_end)
            del running[pid]
            on_result(model_type, result, elapsed)


def _result(read_end, chunks, status):
    """The result of a reaped child: its result object, or how it died."""
    os.set_blocking(read_end, False)
    try:
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    if os.WIFSIGNALED(status):
        return {"status": "crash", "status_detail": signal.Signals(os.WTERMSIG(status)).name}
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"status": "harness_error", "status_detail": f"exit {os.waitstatus_to_exitcode(status)}, no result"}


def normalise(message):
    """The start of an error message, whitespace folded and numbers blurred, to group similar failures."""
    message = " ".join((message or "").split())[:160]
    return re.sub(r"\d+", "N", message)


# Coarse causes, first match wins: (cause, pattern over "ErrorType: message").
CAUSES = (
    ("an optional library is not installed (timm, PIL, natten, detectron2, torchaudio)",
     r"requires the \w+ library|No module named"),
    ("the forward needs inputs the factory does not make",
     r"missing \d+ required positional argument|You have to specify|You must specify|cannot be `None`"
     r"|Exactly 1 of|is missing the required \"forward\"|must be a \d+D tensor"),
    ("a config validator refused the reduced sizes", r"[Vv]alidation error|must match|must equal"),
    ("tensor shapes disagree after reduction",
     r"size of tensor|shapes cannot be multiplied|normalized_shape|expected input|invalid for input of size"
     r"|Sizes of tensors|expanded size|Output size is too small|out of range"),
    ("the default config leaves a value the model uses unset", r"NoneType|has no attribute|object is not"),
)


def cause_of(row):
    text = f"{row.get('error_type', '')}: {row.get('error_message', '')}"
    for cause, pattern in CAUSES:
        if re.search(pattern, text):
            return cause
    return "other"


def summarise(rows, registered):
    with_head = [m for m in registered if heads.head_for(m)[0]]
    statuses = collections.Counter(r["status"] for r in rows.values())
    reduction = collections.Counter()
    model = collections.Counter()
    examples = collections.defaultdict(list)
    causes = collections.Counter()
    for model_type, r in sorted(rows.items()):
        if r["status"] in ("fail_to_load", "fail_to_run", "oom", "harness_error"):
            key = f"{r.get('error_type', '')}: {normalise(r.get('error_message', '') or r.get('status_detail', ''))}"
            (reduction if r.get("stage") in ("import", "build") else model)[key] += 1
            examples[key].append(model_type)
            stage = "reduction" if r.get("stage") in ("import", "build") else "model"
            causes[(cause_of(r), stage)] += 1
    return {
        "registered": len(registered),
        "with_head_class": len(with_head),
        "scanned": len(rows),
        "passed": statuses.get("pass", 0),
        "pass_rate_of_with_head_class": round(statuses.get("pass", 0) / max(1, len(with_head)), 4),
        "statuses": dict(statuses),
        "reduction_failures": sum(reduction.values()),
        "model_failures": sum(model.values()),
        "causes": sorted(([c, stage, n] for (c, stage), n in causes.items()), key=lambda x: -x[2]),
        "top_reduction_failures": [(k, n, examples[k][:4]) for k, n in reduction.most_common(25)],
        "top_model_failures": [(k, n, examples[k][:4]) for k, n in model.most_common(25)],
    }


def markdown_report(rows, registered, args):
    """SCAN_RESULTS.md: the figures, the top failure reasons, and every failing model type."""
    import torch
    import transformers

    summary = summarise(rows, registered)
    lines = [
        "# hf-all scan results (forward, eager, cpu)",
        "",
        f"Generated by `probe/tools/scan.py` on {time.strftime('%Y-%m-%d', time.gmtime())}: "
        f"transformers {transformers.__version__}, torch {torch.__version__}, batch 1, seq_len {args.seq_len}, "
        f"timeout {args.timeout:g} s, address-space limit {args.mem_gb} GiB, 1 torch thread, "
        f"measure {json.dumps(SCAN_MEASURE)}."
        + (" The model types that did not pass in an earlier full scan were rerun (`--resume`)."
           if getattr(args, "resume", False) else ""),
        "",
        "| figure | count |",
        "|---|---|",
        f"| registered model types (CONFIG_MAPPING_NAMES) | {summary['registered']} |",
        f"| with a head class (heads.py rule) | {summary['with_head_class']} |",
        f"| scanned | {summary['scanned']} |",
        f"| **pass** | **{summary['passed']}** ({100 * summary['pass_rate_of_with_head_class']:.1f}% of those with a head class) |",
        f"| reduction failures (import/build stage) | {summary['reduction_failures']} |",
        f"| model failures (prepare/steady stage) | {summary['model_failures']} |",
        "",
        "Statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())) + ".",
        "",
        "## Failures by coarse cause",
        "",
        "| cause | reduction failures | model failures |",
        "|---|---|---|",
        *[f"| {cause} | {_count(summary, cause, 'reduction')} | {_count(summary, cause, 'model')} |"
          for cause in dict.fromkeys(c for c, _, _ in summary["causes"])],
        "",
        "## Top reduction failures (the factory could not make a tiny model)",
        "",
        "| count | error (start, numbers blurred) | e.g. |",
        "|---|---|---|",
    ]
    lines += [f"| {n} | {_md(reason)} | {', '.join(ex)} |" for reason, n, ex in summary["top_reduction_failures"][:12]]
    lines += ["", "## Top model failures (built, but the forward failed)", "",
              "| count | error (start, numbers blurred) | e.g. |", "|---|---|---|"]
    lines += [f"| {n} | {_md(reason)} | {', '.join(ex)} |" for reason, n, ex in summary["top_model_failures"][:12]]
    lines += ["", "## Every model type that did not pass", "",
              "| model type | class | status | stage | error |", "|---|---|---|---|---|"]
    for model_type, row in sorted(rows.items()):
        if row["status"] != "pass":
            message = " ".join((row["error_message"] or row["status_detail"] or "").split())[:160]
            lines.append(f"| {model_type} | {row['model_class']} | {row['status']} | {row['stage']} | "
                         f"{_md(row['error_type'] + ': ' + message)} |")
    return "\n".join(lines) + "\n"


def _count(summary, cause, stage):
    return sum(n for c, st, n in summary["causes"] if c == cause and st == stage)


def _md(text):
    return text.replace("|", "\\|").replace("\n", " ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file (rows and summary); rewritten as it goes")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--mode", default="eager", choices=["eager", "compile"])
    parser.add_argument("--backend", default="aot_eager", help="compile backend of --mode compile")
    parser.add_argument("--mem-gb", type=int, default=8)
    parser.add_argument("--only", default="", help="comma-separated model types")
    parser.add_argument("--resume", action="store_true", help="keep rows already in --out; rerun failures")
    parser.add_argument("--report", help="also write a markdown report (SCAN_RESULTS.md) here")
    parser.add_argument("--report-only", action="store_true", help="write --report from --out; run nothing")
    args = parser.parse_args()
    if args.report_only:
        with open(args.out) as f:
            rows = json.load(f)["rows"]
        with open(args.report, "w") as f:
            f.write(markdown_report(rows, heads.registered_model_types(), args))
        return

    registered = heads.registered_model_types()
    targets = [m for m in registered if heads.head_for(m)[0]]
    if args.only:
        targets = [m for m in args.only.split(",") if m]
    rows = {}
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            rows = json.load(f)["rows"]
        targets = [m for m in targets if rows.get(m, {}).get("status") != "pass"]

    def on_result(model_type, result, elapsed):
        head_class, head_kind = heads.head_for(model_type)
        rows[model_type] = {
            "status": result.get("status"), "status_detail": result.get("status_detail", ""),
            "stage": result.get("stage", ""), "error_type": result.get("error_type", ""),
            "error_message": (result.get("error_message") or "")[:500],
            "model_class": result.get("model_class") or head_class, "head_kind": head_kind,
            "wall_s": round(elapsed, 2), "param_count": (result.get("metrics") or {}).get("param_count"),
            **{k: v for k, v in (result.get("metrics") or {}).items() if k in SCAN_METRICS},
        }
        print(f"{len(rows):4d} {model_type:40s} {rows[model_type]['status']:14s} {elapsed:6.1f}s "
              f"{rows[model_type]['stage']} {normalise(rows[model_type]['error_message'])[:120]}", flush=True)
        if len(rows) % 10 == 0:
            _write(args.out, rows, registered)

    scan(targets, args, on_result)
    _write(args.out, rows, registered)
    if args.report:
        with open(args.report, "w") as f:
            f.write(markdown_report(rows, registered, args))
    print(json.dumps(summarise(rows, registered), indent=1))


def _write(path, rows, registered):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"summary": summarise(rows, registered), "rows": rows}, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
