"""Issue 40, item 4: inductor's own cache-key details (FxGraphHashDetails' debug lines)
captured during a compile, bounded, and nothing of inductor's logging shown meanwhile
(stacks/graph_details.py; doc/compile-cache.md, "Why a miss")."""

import json
import logging
import re

from compatlab_probe.stacks import graph_details
from compatlab_probe.stacks.graph_details import CUT, RUN_LINE_CHARS, GraphDetailsTracker, bounded


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_an_inductor_compile_under_the_tracker_keeps_its_key_details_and_shows_nothing(capfd):
    """The lines are kept per graph key; no record of the codecache logger reaches inductor's
    own handlers (torch's stderr handler on torch._inductor) while the tracker runs; the
    logger is as it was afterwards, and a warning of it still reaches its parent."""
    import torch
    from torch._inductor.utils import fresh_cache

    logger = logging.getLogger(graph_details.LOGGER)
    before = (logger.level, logger.propagate, list(logger.handlers))
    parent = _Records()
    logger.parent.addHandler(parent)
    try:
        torch._dynamo.reset()
        with fresh_cache(), GraphDetailsTracker() as tracker:
            torch.compile(lambda x: x.t(), backend="inductor")(torch.ones(2, 3))
            logger.warning("a warning of inductor's cache")
    finally:
        logger.parent.removeHandler(parent)
        torch._dynamo.reset()
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
    assert [r.getMessage() for r in parent.records if r.name == graph_details.LOGGER] == \
        ["a warning of inductor's cache"]
    assert "hash details" not in capfd.readouterr().err
    (graph,) = tracker.details()["graphs"]
    assert graph["key"] and tracker.details()["truncated"] == ""
    assert any(line.startswith("[") and "] inductor_config[" in line for line in graph["lines"]), graph["lines"]
    assert any("] gm: " in line for line in graph["lines"])
    run = json.loads(tracker.run_form())
    assert run["graphs"][0]["key"] == graph["key"]
    assert len(run["graphs"][0]["lines"]) == len(graph["lines"])
    assert max(len(line) for line in run["graphs"][0]["lines"]) <= RUN_LINE_CHARS + len(CUT)
    # What cache explain names (tests/e2e/test_compile_startup.py plants another value of it).
    assert any(line.endswith("] inductor_config[max_autotune]: False") for line in run["graphs"][0]["lines"])


def test_the_kept_details_are_bounded_and_say_what_was_left_out():
    graphs = [(f"f{i}", [f"[h{j}] inductor_config[o{j}]: {'x' * 300}" for j in range(50)]) for i in range(3)]
    form = bounded(graphs, seen=40, line_chars=100, max_bytes=8 << 10)
    assert all(len(line) <= 100 + len(CUT) and line.endswith(CUT) for g in form["graphs"] for line in g["lines"])
    assert len(json.dumps(form)) <= 8 << 10
    assert re.fullmatch(r"37 graphs past the first 3 left out; graph 2: \d+ of 50 lines kept \(8 KiB in all\); "
                        r"1 later graphs left out", form["truncated"]), form["truncated"]
    assert len(form["graphs"]) == 2 and len(form["graphs"][0]["lines"]) == 50
    whole = bounded(graphs[:1], seen=1, line_chars=1000, max_bytes=1 << 20)
    assert whole["truncated"] == "" and len(whole["graphs"][0]["lines"]) == 50


def test_a_value_holding_a_newline_stays_on_its_line():
    tracker = GraphDetailsTracker()
    tracker.add(graph_details.PREFIX + "fk1:\n[a] x: 1\n[b] code: line one\nline two\n[c] y: 2")
    tracker.add(graph_details.PREFIX + "fk1:\n[a] x: 1")  # the same graph looked up again
    assert tracker.graphs == [("fk1", ["[a] x: 1", "[b] code: line one\\nline two", "[c] y: 2"])]
