"""`python -m compatlab_probe.ops.catalog --device-type TYPE`: every op_db entry of the
installed torch as one JSON object on stdout: {"torch_version", "python_version", "ops":
[{"key", "op", "variant", "dtypes"}]} (dtypes: those the entry declares for TYPE). The
planner's input."""

from __future__ import annotations

import argparse
import json
import platform
import sys

from . import opinfo


def catalog(device_type: str) -> dict:
    import torch

    ops = [{"key": opinfo.key_of(op), "op": op.name, "variant": op.variant_test_name,
            "dtypes": opinfo.supported_dtypes(op, device_type)} for op in opinfo.op_db()]
    return {"torch_version": torch.__version__, "python_version": platform.python_version(), "ops": ops}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compatlab_probe.ops.catalog")
    parser.add_argument("--device-type", default="cpu")
    args = parser.parse_args(argv)
    json.dump(catalog(args.device_type), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
