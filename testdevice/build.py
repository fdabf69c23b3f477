"""Builds the ctest backend library (doc/test-device.md).

    .venv/bin/python testdevice/build.py [BUILD_DIR]

Compiles testdevice/csrc/*.cpp against the venv's torch with
torch.utils.cpp_extension (ninja) into BUILD_DIR (default build/testdevice)
as compatlab_testdevice.so. ninja rebuilds only what changed. MAX_JOBS
bounds the parallel compiles; VERBOSE=1 shows the compiler commands.
"""
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def main(argv):
    out = pathlib.Path(argv[1]) if len(argv) > 1 else ROOT / "build" / "testdevice"
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(p) for p in (HERE / "csrc").glob("*.cpp"))
    started = time.monotonic()
    from torch.utils import cpp_extension

    cpp_extension.load(
        name="compatlab_testdevice",
        sources=sources,
        extra_cflags=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        build_directory=str(out),
        is_python_module=False,
        verbose=bool(os.environ.get("VERBOSE")),
    )
    print(f"testdevice: {out / 'compatlab_testdevice.so'} ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main(sys.argv)
