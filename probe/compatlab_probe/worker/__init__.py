"""The probe's processes: the fork server (zygote, `python -m compatlab_probe.worker.zygote`),
one request on stdin (run_one) and a test child's whole work (child)."""
