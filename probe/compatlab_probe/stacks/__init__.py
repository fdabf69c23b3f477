"""The stack a test runs on: its target profile in the child (target), torch.compile with its
caches and counters (compiler), mode export's lowerings (lowering) and the CPU-fallback audit
(audit)."""
