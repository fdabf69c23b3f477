"""Function length and cyclomatic complexity of compatlab's own code (lizard, pinned).

`make lint` runs it: every function must stay within the ceiling of the tree it is in
(CEILINGS: the first prefix that matches a file's path). `--top N` prints the N longest
functions and the N most complex, the figures an issue's note quotes.

    .venv/bin/python scripts/complexity.py            # check the ceilings
    .venv/bin/python scripts/complexity.py --top 10   # and print the top lists
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from dataclasses import dataclass

import lizard

# What is measured: the C++ core, the probe and the test device. Tests and test-only
# fixtures are not (a test reads top to bottom; its length is its scenario).
ROOTS = ("src", "probe/compatlab_probe", "testdevice/csrc", "testdevice/compatlab_testdevice")
EXCLUDE = ("*_test.cc", "*/testing.h", "*/tests/*")


@dataclass(frozen=True)
class Ceiling:
    prefix: str
    max_length: int  # lines, the function's first to its last
    max_ccn: int  # lizard's cyclomatic complexity


# First match wins: planning, the sweep and the CLI are held to small steps, the probe to
# the ceiling its packages now meet, the rest of the tree to the ceiling it now meets; a
# ceiling is lowered when the code under it is, never raised to let a function grow.
CEILINGS = (
    Ceiling("src/plan/", 60, 15),
    Ceiling("src/sweep/", 60, 15),
    Ceiling("src/cli/", 60, 15),
    Ceiling("probe/", 90, 20),
    Ceiling("", 125, 36),
)

# Functions that are data, not logic, each with its reason: held to no length ceiling.
TABLES = {
    ("src/core/fields.cc", "compatlab::MakeResultFields"): "the result field table, one entry per field",
}


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    line: int
    length: int
    ccn: int


def _source_files(top: str) -> list[str]:
    files = []
    for root in ROOTS:
        for dirpath, _, names in os.walk(os.path.join(top, root)):
            for name in names:
                path = os.path.relpath(os.path.join(dirpath, name), top)
                if not name.endswith((".cc", ".h", ".cpp", ".py")):
                    continue
                if any(fnmatch.fnmatch(path, pattern) for pattern in EXCLUDE):
                    continue
                files.append(path)
    return sorted(files)


def measure(top: str) -> list[Function]:
    """Every function of the measured tree, in file order."""
    out = []
    cwd = os.getcwd()
    os.chdir(top)
    try:
        for info in lizard.analyze_files(_source_files(".")):
            for f in info.function_list:
                out.append(Function(info.filename, f.name, f.start_line, f.length,
                                    f.cyclomatic_complexity))
    finally:
        os.chdir(cwd)
    return out


def ceiling_of(path: str) -> Ceiling:
    return next(c for c in CEILINGS if path.startswith(c.prefix))


def violations(functions: list[Function]) -> list[str]:
    """One line per function over its ceiling."""
    lines = []
    for f in functions:
        c = ceiling_of(f.path)
        too_long = f.length > c.max_length and (f.path, f.name) not in TABLES
        if too_long or f.ccn > c.max_ccn:
            lines.append(f"{f.path}:{f.line}: {f.name}: {f.length} lines, CCN {f.ccn} "
                         f"(ceiling under '{c.prefix or '.'}': {c.max_length} lines, "
                         f"CCN {c.max_ccn})")
    return lines


def top_lists(functions: list[Function], n: int) -> str:
    def row(f: Function) -> str:
        return f"  {f.length:5d} lines  CCN {f.ccn:4d}  {f.path}:{f.line} {f.name}"

    longest = sorted(functions, key=lambda f: (-f.length, f.path, f.line))[:n]
    complex_ = sorted(functions, key=lambda f: (-f.ccn, f.path, f.line))[:n]
    return "\n".join([f"the {n} longest functions:", *map(row, longest),
                      f"the {n} most complex functions:", *map(row, complex_)])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=0, help="print the N longest and most complex")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args(argv)
    functions = measure(args.root)
    if args.top:
        print(top_lists(functions, args.top))
    bad = violations(functions)
    for line in bad:
        print(line, file=sys.stderr)
    ceilings = ", ".join(f"{c.prefix or 'elsewhere'} {c.max_length} lines/CCN {c.max_ccn}"
                         for c in CEILINGS)
    if bad:
        print(f"complexity: {len(bad)} function(s) over their ceiling ({ceilings})", file=sys.stderr)
        return 1
    print(f"complexity: {len(functions)} functions within their ceilings ({ceilings})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
