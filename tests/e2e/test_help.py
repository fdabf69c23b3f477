"""`compatlab --help` and every subcommand's help, byte for byte as in golden/help/.

A changed help line fails here; when the change is meant, rewrite the files with
`.venv/bin/python tests/e2e/test_help.py [BINARY]` and review the diff. The portable
binary (build/portable, no export, import or serve) has its own top-level help.
"""

import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "e2e" / "golden" / "help"
PORTABLE = REPO / "build" / "portable" / "compatlab"


def help_text(binary, *args):
    """`compatlab ARGS --help`'s stdout, run as `compatlab` (the usage line names argv[0])."""
    proc = subprocess.run(["compatlab", *args, "--help"], executable=binary,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", (args, proc.returncode, proc.stderr)
    return proc.stdout


def subcommands(top_help):
    """The subcommands a top-level help lists (its Subcommands section), without aliases."""
    section = top_help.split("Subcommands:", 1)[1]
    return re.findall(r"^\s{2}(\w[\w-]*)[,\s]", section, re.M)


def golden(name):
    return (GOLDEN / f"{name}.txt").read_text()


# The subcommands with a golden help: every file but the two top-level ones.
GOLDEN_SUBCOMMANDS = sorted(p.stem for p in GOLDEN.glob("*.txt")
                            if p.stem not in ("compatlab", "portable"))


def test_top_level_help_is_unchanged(compatlab_bin):
    assert help_text(compatlab_bin) == golden("compatlab")


def test_every_subcommand_has_a_golden_help(compatlab_bin):
    names = subcommands(help_text(compatlab_bin)) + ["runs"]  # `runs`: query's short form
    assert len(names) > 10 and {"sweep", "query", "serve"} <= set(names)
    assert GOLDEN_SUBCOMMANDS == sorted(names)


@pytest.mark.parametrize("name", GOLDEN_SUBCOMMANDS)
def test_subcommand_help_is_unchanged(compatlab_bin, name):
    assert help_text(compatlab_bin, name) == golden(name)


def test_portable_top_level_help_is_unchanged():
    assert PORTABLE.exists(), "no build/portable/compatlab: make build"
    assert help_text(PORTABLE) == golden("portable")


def write_goldens(binary):
    """Rewrites golden/help/ from `binary` (and build/portable's top-level help)."""
    top = help_text(binary)
    (GOLDEN / "compatlab.txt").write_text(top)
    for name in subcommands(top) + ["runs"]:
        (GOLDEN / f"{name}.txt").write_text(help_text(binary, name))
    (GOLDEN / "portable.txt").write_text(help_text(PORTABLE))


if __name__ == "__main__":
    write_goldens(sys.argv[1] if len(sys.argv) > 1 else str(REPO / "build" / "compatlab"))
