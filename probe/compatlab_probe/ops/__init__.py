"""Op coverage (`compatlab ops`, doc/ops.md): PyTorch's OpInfo database run on a target.

    opinfo    the installed torch's op_db: entries by exact (name, variant), the dtypes an
              entry supports on a device type, PyTorch's own skips and tolerances for it
    compare   a target's outputs against the CPU reference, with the error between them
    batch     a test child's batch of ops (request kind "ops"): one line per (op, dtype)
              on the result pipe as it finishes
    catalog   `python -m compatlab_probe.ops.catalog`: every entry, for the planner
"""
