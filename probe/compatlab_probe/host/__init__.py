"""The process and its machine: environment set-up before torch is imported, the software
stack's versions (runtime) and Linux process helpers (osutil)."""
