"""Inductor's own cache-key details of a compile (doc/compile-cache.md, "Why a miss").

When inductor looks a graph up in its FX graph cache it computes the key from
`FxGraphHashDetails` (the graph, its inputs' metadata, inductor's configuration, torch's
and the system's versions, ...) and logs, at DEBUG on `torch._inductor.codecache`, "FX graph
cache hash details for key KEY:" and one line per part, "[HASH] NAME: VALUE" (torch 2.13,
`compiled_fx_graph_hash`); HASH is kept to its first 12 characters. The lines are made on every lookup whatever the log level; only
the record is dropped when DEBUG is off. A graph-level miss is explained by the lines that
differ between two compiles of the same test.

    with GraphDetailsTracker() as tracker:  # the first compiled call
        ...
    tracker.details()    # {"format": 1, "graphs": [{"key", "lines", "cut"}], "truncated"}: the entry's file
    tracker.run_form()   # the same, compacter: the run's fx_graph_details

The tracker attaches its handler to that logger for the call only, sets the logger to DEBUG
and stops its records from propagating (torch's own handler on `torch._inductor` would print
them on stderr); a record of the level the logger had before is handed on to its parent as
before. Everything kept is bounded (src/cache/graph_details.h checks the same bounds).
"""

from __future__ import annotations

import json
import logging
from typing import Any

LOGGER = "torch._inductor.codecache"
PREFIX = "FX graph cache hash details for key "
FORMAT = 1
# Bounds of the entry's file (src/cache/graph_details.h: 1 MiB, 32 graphs, 1,000 lines of at
# most 4,096 bytes); a line is cut past MAX_LINE_CHARS characters and marked.
MAX_GRAPHS = 32
MAX_LINES = 1000
MAX_LINE_CHARS = 1000
MAX_BYTES = 768 << 10
# The run's compact form (fx_graph_details): values cut shorter, fewer bytes. A cut line keeps
# its [HASH], so a comparison by hash still tells an equal value from a differing one.
RUN_LINE_CHARS = 160
RUN_BYTES = 64 << 10
# Inductor's hashes (52 characters) are kept to their first 12: a graph has some 600 lines.
HASH_CHARS = 12
CUT = " [cut]"


def _cut(line: str, chars: int) -> str:
    return line if len(line) <= chars else line[:chars] + CUT


def _lines_of(body: str) -> list[str]:
    """The debug lines of a record's body: a line not starting with "[" continues the one
    before it (a value holding a newline), joined with a visible \\n."""
    lines: list[list[str]] = []
    for raw in body.split("\n"):
        if raw.startswith("[") or not lines:
            if len(lines) > MAX_LINES:
                break
            lines.append([raw])
        elif sum(len(p) for p in lines[-1]) <= MAX_LINE_CHARS:
            lines[-1].append(raw)
    return [_cut(_short_hash("\\n".join(parts)), MAX_LINE_CHARS) for parts in lines]


def _short_hash(line: str) -> str:
    """"[HASH] NAME: VALUE" with HASH cut to HASH_CHARS (enough to tell two values apart)."""
    close = line.find("] ", 0, 100)
    return f"[{line[1:close][:HASH_CHARS]}{line[close:]}" if line.startswith("[") and close > 0 else line


def bounded(graphs: list[tuple[str, list[str]]], seen: int, line_chars: int, max_bytes: int) -> dict[str, Any]:
    """`graphs` ((key, lines) in compile order, of `seen` captured) as the JSON object the
    C++ side reads: each line cut past `line_chars`, at most MAX_LINES a graph, MAX_GRAPHS
    graphs and `max_bytes` of JSON; `truncated` says what was left out ("" when nothing)."""
    out: list[dict[str, Any]] = []
    notes = [f"{seen - len(graphs)} graphs past the first {len(graphs)} left out"] if seen > len(graphs) else []
    size = 1100  # the object around the graphs, truncated (at most 1,000 characters) included
    for key, lines in graphs:
        kept: list[str] = []
        size += len(json.dumps(key)) + 32
        for line in lines[:MAX_LINES]:
            line = _cut(line, line_chars)
            cost = len(json.dumps(line)) + 2
            if size + cost > max_bytes:
                break
            kept.append(line)
            size += cost
        out.append({"key": key, "lines": kept, "cut": len(kept) < len(lines)})
        if len(kept) < min(len(lines), MAX_LINES):  # the byte budget is spent
            notes.append(f"graph {len(out)}: {len(kept)} of {len(lines)} lines kept ({max_bytes >> 10} KiB in all)")
            break
        if len(lines) > MAX_LINES:
            notes.append(f"graph {len(out)}: its first {MAX_LINES} lines kept")
    if len(out) < len(graphs):
        notes.append(f"{len(graphs) - len(out)} later graphs left out")
    return {"format": FORMAT, "graphs": out, "truncated": "; ".join(notes)[:1000]}


class _Capture(logging.Handler):
    """Keeps the hash-details records; hands any other record of at least `forward_level`
    to `parent` (where it would have propagated)."""

    def __init__(self, tracker: GraphDetailsTracker, forward_level: int, parent: logging.Logger | None):
        super().__init__(logging.DEBUG)
        self._tracker, self._forward_level, self._parent = tracker, forward_level, parent

    def emit(self, record: logging.LogRecord) -> None:
        message = record.msg if isinstance(record.msg, str) and not record.args else None
        if message is not None and message.startswith(PREFIX):
            self._tracker.add(message)
        elif record.levelno >= self._forward_level and self._parent is not None:
            self._parent.handle(record)


class GraphDetailsTracker:
    """Captures inductor's FX graph cache-key details while it is entered (a context
    manager); the logger's level, propagation and handlers are restored on exit."""

    def __init__(self) -> None:
        self.graphs: list[tuple[str, list[str]]] = []
        self.seen = 0
        self._keys: set[str] = set()
        self._saved: tuple[int, bool] | None = None
        self._handler: _Capture | None = None

    def add(self, message: str) -> None:
        """One hash-details record: its graph's key and lines, once per key, within bounds."""
        head, _, body = message.partition("\n")
        key = head[len(PREFIX):].rstrip(":")[:200]
        if key in self._keys:
            return
        self._keys.add(key)
        self.seen += 1
        if len(self.graphs) < MAX_GRAPHS:
            self.graphs.append((key, _lines_of(body)))

    def __enter__(self) -> GraphDetailsTracker:
        logger = logging.getLogger(LOGGER)
        self._saved = (logger.level, logger.propagate)
        self._handler = _Capture(self, logger.getEffectiveLevel(), logger.parent)
        logger.addHandler(self._handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(LOGGER)
        logger.removeHandler(self._handler)
        logger.setLevel(self._saved[0])
        logger.propagate = self._saved[1]

    def details(self) -> dict[str, Any]:
        """The entry's form (its fx_graph_details.json)."""
        return bounded(self.graphs, self.seen, MAX_LINE_CHARS, MAX_BYTES)

    def run_form(self) -> str:
        """The run's compact form as JSON text (its fx_graph_details)."""
        return json.dumps(bounded(self.graphs, self.seen, RUN_LINE_CHARS, RUN_BYTES), separators=(",", ":"))
