"""The process and its machine: environment set-up before torch is imported, the software
stack's versions (runtime), Linux process helpers (osutil) and a command's one-line
JSON answer (answer)."""
