"""compatlab probe: the Python side of compatlab.

The probe builds a model, runs one test kind in one mode on one target,
measures it and returns one result object. It never writes the store and never
decides a timeout (see doc/worker-protocol.md).

Modules:
  runtime   environment variables and software-stack facts
  osutil    Linux process helpers (prctl, threads, memory high-water mark)
  request   the test request, parsed once into typed parts (every default in one place)
  result    the result object of doc/worker-protocol.md
  child     runs one test request in the current process (the test child T)
  kinds     the test kinds (forward, generate, train on one phase skeleton; noop, fault kinds)
  target    a target profile in the child; compiler: torch.compile, caches, dynamo counters
  heads     the head-class rule (which class a model type is tested with)
  factory   tiny models from default configs, or local checkpoints
  inputs    seeded inputs for a built model
  measure   timing and memory measurement
  zygote    the fork server
  run_one   one request on stdin, its result on stdout
  catalog   the model types the installed transformers registers
"""

PROTOCOL_VERSION = 1
