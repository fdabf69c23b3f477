"""A probe command's one-line answer (compatlab_probe.host.answer), as compile_hub and
hub_dataset write it."""

import json

from compatlab_probe.host.answer import answer, failure_reason, refuse


class OwnError(Exception):
    pass


def test_an_answer_is_one_sorted_line_and_exit_0(capsys):
    assert answer({"b": 1, "a": [2]}) == 0
    out = capsys.readouterr().out
    assert out == '{"a": [2], "b": 1}\n' and json.loads(out) == {"a": [2], "b": 1}


def test_a_refusal_is_one_error_line_with_its_exit_code(capsys):
    assert refuse("bad repo", 2) == 2
    assert capsys.readouterr().out == '{"error": "bad repo"}\n'


def test_a_failure_reason_is_one_line():
    assert failure_reason(OwnError("the Hub is offline"), OwnError) == "the Hub is offline"
    assert failure_reason(OSError("refused\nat line 2"), OwnError) == "OSError: refused"
    assert failure_reason(KeyError(), OwnError) == "KeyError: KeyError"
