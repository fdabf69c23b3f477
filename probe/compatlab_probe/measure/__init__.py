"""What a test measures: time, machine state and host memory (timing), the accuracy verdicts
(accuracy) and the child's side of the memory limit (memlimit)."""
