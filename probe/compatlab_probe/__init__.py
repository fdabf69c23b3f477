"""compatlab probe: the Python side of compatlab.

The probe builds a model, runs one test kind in one mode on one target,
measures it and returns one result object. It never writes the store and never
decides a timeout (see doc/worker-protocol.md).

Packages, each importing only from those listed below it (`make lint` checks it:
.importlinter):
  worker    the processes: zygote (the fork server), run_one (one request on stdin),
            child (one test request in the current process, the test child T)
  repro     (a module) reproduction scripts embedding the probe's own files
  kinds     the test kinds (forward, generate, train, load on one phase skeleton; noop,
            fault kinds), the Context a kind gets, what generate and load share (decoding)
  models    model sources: factory (tiny models, reduction, checkpoints), reduction (the
            per-field reduction rules), heads, hub, code_model, inputs, catalog
  stacks    the stack under test: target (a profile in the child), compiler (torch.compile,
            caches, dynamo counters), lowering (mode export), audit (CPU fallbacks)
  measure   timing (steady phase, machine state, host memory), accuracy, memlimit
  protocol  the wire: request (parsed once, every default), result, stage_marks
  host      runtime (environment, stack facts), osutil (Linux process helpers),
            answer (a command's one-line JSON answer)
"""
