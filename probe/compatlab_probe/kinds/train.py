"""Kind `train`: K steps of forward, loss, backward and an AdamW step on seeded random data
with dropout off (doc/probe.md, "Kind train"; doc/accuracy.md, "train").

    steps       kind_params.steps (request.KindParams)
    optimizer   torch.optim.AdamW(lr=LR), its defaults otherwise (foreach as torch picks)
    data        the request's seeded inputs plus labels made for the head kind (LABELS)
    dropout     model.train(), every dropout probability 0: nn.Dropout modules' p, and
                float config/module attributes named like dropout, layerdrop, jitter noise
    mode compile the model is torch.compile'd with the request's backend and options
                (forward and backward compile; the optimizer step stays eager)

Phases: build; prepare = step 1 (compile included); steady = steps 2..K (compile mode:
in alternating blocks with as many eager steps of a copy of the model with its own optimizer).
Metrics: train_steps, train_first_step_s (= prepare_s), train_steady_step_s (= steady
median), train_loss (JSON array), tokens_per_s (batch * seq_len / steady step).

Accuracy: the same initial weights (a CPU copy taken before step 1) and data on the CPU in
eager float64 (float32 when float64 fails), K steps of the same optimizer: train_ref_loss,
train_grad_cosine (step 1's gradients, before any update, where both start from the same
weights), train_grad_cosine_last (step K's, informative); verdict accuracy.compare_train.

Learning run (steps >= accuracy.LEARNING_MIN_STEPS, doc/accuracy.md, "train: learning
equivalence"): the synthetic task of learning_inputs, AdamW at LEARN_LR, deterministic
algorithms; train_grad_norm / train_ref_grad_norm per step (every run), train_eager_loss (the
CPU eager run at the test's dtype, same child) and accuracy.compare_learning's verdict.

Skipped: a head kind that gives no loss from labels (base models, ...), a model whose
forward returns no loss; otherwise statuses and stages as kind forward. A code model whose
function gives its own inputs (doc/probe.md, "Own code") gets no labels: its inputs carry
what its loss needs, and its forward's `loss` is trained (none: skipped as above).
"""

from __future__ import annotations

import copy
import json
import math
import time
from typing import TYPE_CHECKING, Any

from ..measure import accuracy
from ..measure.timing import steady_figures
from ..models import code_model
from ..protocol.request import MeasureSettings, TestRequest
from ..protocol.result import Result
from ..stacks.compiler import compile_callable
from ..stacks.parallel import data_parallel, full
from . import common
from .common import stage
from .phases import ModelTest, per_second

if TYPE_CHECKING:
    from ..stacks.target import Target
    from .context import Context

LR = 1e-4
# A learning run (steps >= accuracy.LEARNING_MIN_STEPS): its learning rate and the period of
# the synthetic task's token rows (learning_inputs).
LEARN_LR = 1e-3
LEARN_PERIOD = 4
# Head kinds whose class computes a loss from labels; how the labels are made is in _labels.
LABELS = {
    "causal_lm": "labels = input_ids (the model shifts them)",
    "masked_lm": "labels = input_ids (every position)",
    "image_text_to_text": "labels = input_ids",
    "multimodal_lm": "labels = input_ids",
    "seq2seq_lm": "labels = decoder_input_ids (teacher forcing with the given decoder inputs)",
    "speech_seq2seq": "labels = decoder_input_ids",
    "sequence_classification": "labels: [batch] class ids (float values when num_labels == 1)",
    "image_classification": "labels: [batch] class ids",
    "audio_classification": "labels: [batch] class ids",
    "video_classification": "labels: [batch] class ids",
    "token_classification": "labels: [batch, seq_len] class ids",
    "question_answering": "start_positions, end_positions: [batch] positions",
}
# Heads whose loss picks its problem type from the labels (transformers' ForSequenceClassificationLoss).
_CLASSIFIERS = ("sequence_classification", "image_classification", "audio_classification", "video_classification")
# Float attributes (of configs and modules) that are dropout-like probabilities.
_DROPOUT_WORDS = ("dropout", "pdrop", "layerdrop", "drop_path", "drop_rate", "jitter_noise")


class _NoLoss(Exception):
    """The model returned no loss for the labels given."""


def not_applicable(head_kind: str) -> str | None:
    if head_kind not in LABELS:
        return (f"kind train does not apply to {head_kind} models: the head computes no loss from labels "
                "(no generic loss is made up)")
    return None


def _is_dropout_name(name):
    return any(word in name for word in _DROPOUT_WORDS)


def dropout_off(model: Any) -> int:
    """Sets every dropout probability of `model` (modules and config tree) to 0; returns how many."""
    import torch

    changed = 0
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p:
            module.p = 0.0
            changed += 1
        for name, value in list(vars(module).items()):
            if isinstance(value, float) and value and _is_dropout_name(name):
                setattr(module, name, 0.0)
                changed += 1

    def walk(cfg, depth):
        nonlocal changed
        if depth > 4:
            return
        for name, value in list(vars(cfg).items()):
            if hasattr(value, "to_dict") and hasattr(value, "model_type"):
                walk(value, depth + 1)
            elif isinstance(value, float) and value and _is_dropout_name(name):
                setattr(cfg, name, 0.0)
                changed += 1

    config = getattr(model, "config", None)
    if config is not None:  # a code model may have no config
        walk(config, 0)
    return changed


def labels_for(head_kind: str, config: Any, inputs: dict[str, Any], seed: int) -> dict[str, Any]:
    """{name: tensor} of the label arguments for `head_kind` (CPU tensors), from the inputs."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    ids = inputs.get("input_ids")
    batch = next(iter(inputs.values())).shape[0]
    if head_kind in ("causal_lm", "masked_lm", "image_text_to_text", "multimodal_lm"):
        if ids is None:
            raise ValueError(f"a {head_kind} model without input_ids")
        return {"labels": ids.clone()}
    if head_kind in ("seq2seq_lm", "speech_seq2seq"):
        dec = inputs.get("decoder_input_ids")
        if dec is None:
            raise ValueError(f"a {head_kind} model without decoder_input_ids")
        return {"labels": dec.clone()}
    num_labels = int(getattr(config, "num_labels", 2) or 2)
    if head_kind == "token_classification":
        return {"labels": torch.randint(0, num_labels, tuple(ids.shape), generator=gen)}
    if head_kind == "question_answering":
        length = ids.shape[1]
        return {"start_positions": torch.randint(0, length, (batch,), generator=gen),
                "end_positions": torch.randint(0, length, (batch,), generator=gen)}
    if num_labels == 1:
        return {"labels": torch.randn(batch, generator=gen)}
    return {"labels": torch.randint(0, num_labels, (batch,), generator=gen)}


def settle_problem_type(config: Any, labels: dict[str, Any]) -> None:
    """Sets a classifier config's problem_type as its loss would on the first call.

    transformers' classification losses write config.problem_type when it is None;
    left to the first step, that write fails a dynamo guard and step 2 recompiles.
    """
    target = labels.get("labels")
    if target is None or getattr(config, "problem_type", "unset") is not None:
        return
    num_labels = int(getattr(config, "num_labels", 2) or 2)
    if num_labels == 1:
        config.problem_type = "regression"
    elif not target.is_floating_point():
        config.problem_type = "single_label_classification"
    else:
        config.problem_type = "multi_label_classification"


def _loss(output):
    loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    if loss is None:
        raise _NoLoss()
    return loss


class _Trainer:
    """One model, its AdamW and the batch: step() runs one training step."""

    def __init__(self, model, batch, fwd=None, lr=LR):
        import torch

        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=lr)
        self.batch = batch
        self.fwd = fwd if fwd is not None else model
        self.losses = []
        # step number -> [grad tensors]: references kept during the timed step
        # (no copy inside the timing: optimizer.step does not change .grad and
        # zero_grad(set_to_none) gives the next step new tensors); cpu_grads()
        # copies them once timing is over.
        self.grads = {}
        # Each step's global gradient norm as a 0-d tensor on the device (no sync in the
        # timed step); grad_norm_curve() reads them once timing is over.
        self.norms = []

    def step(self, keep_grads=False):
        import torch

        self.optimizer.zero_grad(set_to_none=True)
        loss = _loss(self.fwd(**self.batch))
        loss.backward()
        with torch.no_grad():
            # Split over ranks (doc/ranks.md): a sharded gradient is gathered whole for the norm.
            grads = [full(p.grad.detach()) for p in self.params if p.grad is not None]
            self.norms.append(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)).double())
                              if grads else torch.zeros((), dtype=torch.float64))
        if keep_grads:
            self.grads[len(self.losses) + 1] = [None if p.grad is None else p.grad.detach()
                                                for p in self.params]
        self.optimizer.step()
        self.losses.append(float(loss.detach()))

    def grad_norm_curve(self) -> list[float | None]:
        """The global gradient norm (float64) of each step; None where it is not finite."""
        return [_finite_or_none(float(n)) for n in self.norms]


def _finite_or_none(value):
    return value if math.isfinite(value) else None


def curve_json(values: list[float | None]) -> str:
    """A curve as the store keeps it: a JSON array, null where a value is not finite (strict
    JSON; json.dumps would write NaN, which no JSON reader takes)."""
    return json.dumps([None if v is None else _finite_or_none(float(v)) for v in values])


def learning_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """The synthetic task of a learning run: each row of input_ids becomes its own first
    LEARN_PERIOD tokens repeated (seeded through the inputs, valid ids of the model), so the
    next token, and the token itself, is predictable; other inputs stay as made."""
    ids = inputs.get("input_ids")
    if ids is None or ids.dim() != 2 or ids.shape[1] <= LEARN_PERIOD:
        return dict(inputs)
    reps = -(-ids.shape[1] // LEARN_PERIOD)
    periodic = ids[:, :LEARN_PERIOD].repeat(1, reps)[:, :ids.shape[1]].contiguous()
    return dict(inputs, input_ids=periodic)


def cpu_grads(grads: list[Any]) -> list[Any]:
    """A step's kept gradients as CPU copies (after timing)."""
    return [None if g is None else full(g).to("cpu", copy=True) for g in grads]


def grad_cosine(a: list[Any], b: list[Any]) -> float | None:
    """Cosine of two gradient lists (same parameter order), as float64; None-grads count as zeros."""
    import torch

    dot = na = nb = 0.0
    for x, y in zip(a, b, strict=False):
        if x is None and y is None:
            continue
        x = torch.zeros(0, dtype=torch.float64) if x is None else x.to(torch.float64).reshape(-1)
        y = torch.zeros(0, dtype=torch.float64) if y is None else y.to(torch.float64).reshape(-1)
        if x.numel() != y.numel():
            x, y = (x, torch.zeros_like(x)) if y.numel() == 0 else (torch.zeros_like(y), y)
        dot += float(torch.dot(x, y))
        na += float(torch.dot(x, x))
        nb += float(torch.dot(y, y))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    value = dot / math.sqrt(na * nb)
    return value if math.isfinite(value) else None


def _timed_step(trainer, target, keep_grads=False):
    start = time.perf_counter()
    trainer.step(keep_grads)
    target.sync()
    return time.perf_counter() - start


def run(request: TestRequest, result: Result, context: Context | None = None) -> None:
    """The kind: fills `result`; a failed phase ends it with StageFailed (child.run_test)."""
    test = ModelTest(request, result)
    target, compiling, dtype = test.target, test.compiling, test.dtype
    steps = request.kind_params.steps
    learning = steps >= accuracy.LEARNING_MIN_STEPS
    lr = LEARN_LR if learning else LR
    result.metrics["train_steps"] = steps

    cls, head_kind = common.resolve_class(request, result)
    reason = not_applicable(head_kind)
    own_code = request.model_id.startswith(code_model.PREFIX)
    if reason and not own_code:
        test.skip(reason)
    built = test.build()
    model = built.model
    own_loss = own_code and built.own_inputs  # the code's inputs carry what its loss needs
    if reason and not own_loss:
        test.skip(reason)

    def prepare_data():
        cpu_inputs = learning_inputs(built.cpu_inputs) if learning else built.cpu_inputs
        labels = {} if own_loss else labels_for(head_kind, model.config, cpu_inputs, built.seed)
        if "labels" in labels and labels["labels"].is_floating_point():
            labels["labels"] = labels["labels"].to(dtype)
        cpu_batch = dict(cpu_inputs, **labels)
        if head_kind in _CLASSIFIERS:
            settle_problem_type(model.config, labels)
        dropout_off(model)
        model.train()
        if learning:
            import torch

            torch.use_deterministic_algorithms(True, warn_only=True)
        return cpu_batch, {k: v.to(target.device) for k, v in cpu_batch.items()}

    cpu_batch, batch = stage(result, "build", "fail_to_load", prepare_data)
    initial = stage(result, "build", "fail_to_load", lambda: common.cpu_copy(model))  # the reference's start
    module = model
    if request.in_group and request.kind_params.given.get("parallel") == "dp":  # doc/ranks.md
        module = stage(result, "split", "fail_to_load", lambda: data_parallel(model))
    fwd = stage(result, "compile", "harness_error", lambda: compile_callable(module, request, target)) \
        if compiling else module
    trainer = _Trainer(model, batch, fwd, lr)

    with test.first_call():
        try:
            trainer.step(keep_grads=True)
            target.sync()
        except _NoLoss:
            given = "its own inputs" if own_loss else f"the labels given ({LABELS.get(head_kind, head_kind)})"
            test.skip(f"kind train: {cls.__name__} returned no loss for {given}")
    result.metrics["train_first_step_s"] = result.metrics["prepare_s"]
    # Memory through step 1 (optimizer state included), before compile mode's eager copy.
    test.read_memory()

    with test.steady():
        if steps > 1:
            _steady(result, trainer, steps, compiling, initial, target, lr)
    median = result.metrics.get("steady_median_s")
    result.metrics["train_steady_step_s"] = median
    result.metrics["tokens_per_s"] = per_second(built.tokens_per_call, median)
    result.metrics["train_loss"] = curve_json(trainer.losses)
    result.metrics["train_grad_norm"] = curve_json(trainer.grad_norm_curve())
    test.audit(lambda: _Trainer(initial_copy(initial, target), trainer.batch, lr=lr).step())
    # Steps of a fresh copy: the trained model's own state and losses stay as measured.
    profiled = _Trainer(initial_copy(initial, target), trainer.batch, lr=lr) \
        if request.profile.mode == "steady" else None
    test.profile(lambda: profiled.step())
    _compare(test, trainer, initial, cpu_batch, steps, dtype, lr, learning)


def _steady(result: Result, trainer: _Trainer, steps: int, compiling: bool, initial: Any, target: Target,
            lr: float) -> None:
    """Steps 2..K: their times (compile mode: alternated with an eager copy's steps)."""
    last = steps

    def compiled_step():
        trainer.step(keep_grads=len(trainer.losses) + 1 == last)

    if compiling:
        eager_model = initial_copy(initial, target)
        eager = _Trainer(eager_model, trainer.batch, lr=lr)
        eager.step()  # its own first step (optimizer state), not timed
        target.sync()
        result.metrics.update(common.alternating_steady(
            compiled_step, eager.step, MeasureSettings(warmup=0, min_iters=steps - 1, min_time_s=0.0), target.sync,
            exact_calls=steps - 1))
        del eager, eager_model
        return
    times = [_timed_step(trainer, target, keep_grads=len(trainer.losses) + 1 == last)
             for _ in range(steps - 1)]
    result.metrics.update(steady_figures(times))


def initial_copy(initial: Any, target: Target | None, dtype: Any = None) -> Any:
    """A training copy of the initial weights on the target (or the CPU in `dtype`)."""
    model = copy.deepcopy(initial)
    model = model.to(dtype) if dtype is not None else model.to(target.device)
    dropout_off(model)
    return model.train()


def _reference_at(initial, cpu_batch, steps, dtype, lr=LR):
    """(losses, grads of step 1, grads of step K, gradient norms) of K steps on the CPU in `dtype`."""
    model = initial_copy(initial, None, dtype)
    trainer = _Trainer(model, common.reference_inputs(cpu_batch, dtype), lr=lr)
    for k in range(1, steps + 1):
        trainer.step(keep_grads=k in (1, steps))
    return trainer.losses, cpu_grads(trainer.grads[1]), cpu_grads(trainer.grads[steps]), trainer.grad_norm_curve()


def nonfinite_where_finite(target: list[Any], reference: list[Any]) -> int:
    """Values non-finite in `reference` where `target` is finite, over two lists of the same
    shape of floats or tensors (None entries skipped): a failed reference."""
    import torch

    count = 0
    for t, r in zip(target, reference, strict=False):
        if t is None or r is None:
            continue
        t = torch.as_tensor(t, dtype=torch.float64).reshape(-1)
        r = torch.as_tensor(r, dtype=torch.float64).reshape(-1)
        if t.numel() == r.numel():
            count += int((~torch.isfinite(r) & torch.isfinite(t)).sum())
    return count


def _compare(test: ModelTest, trainer: _Trainer, initial: Any, cpu_batch: dict[str, Any], steps: int,
             dtype: Any, lr: float = LR, learning: bool = False) -> None:
    """Loss trajectory and step-1 gradients against the CPU reference (float64, float32 when
    float64 fails or is non-finite where the target is not); CPU eager: the baseline. A
    learning run also trains the CPU eager copy at the test's dtype (train_eager_loss) and
    is judged by accuracy.compare_learning."""
    first = cpu_grads(trainer.grads.get(1, []))
    last = cpu_grads(trainer.grads[steps]) if steps in trainer.grads else []

    def bad_count(value):
        losses, ref_first, ref_last, _ = value
        return (nonfinite_where_finite(trainer.losses, losses) + nonfinite_where_finite(first, ref_first)
                + nonfinite_where_finite(last, ref_last))

    with test.reference():
        ref = accuracy.reference_with_fallback(lambda d: _reference_at(initial, cpu_batch, steps, d, lr), bad_count,
                                               test.reference_is_target)
        eager_losses = None
        if learning and ref["not_measured"] is None and not test.is_baseline:
            eager_losses = _reference_at(initial, cpu_batch, steps, dtype, lr)[0]
    if not test.use_reference(ref):
        return
    ref_losses, ref_first, ref_last, ref_norms = ref["value"]
    cos_first = grad_cosine(first, ref_first)
    cos_last = grad_cosine(last, ref_last) if last else None
    curves = {"train_ref_loss": curve_json(ref_losses), "train_ref_grad_norm": curve_json(ref_norms)}
    if eager_losses is not None:
        curves["train_eager_loss"] = curve_json(eager_losses)
    if learning:
        acc = accuracy.compare_learning(trainer.losses, ref_losses, eager_losses, cos_first, dtype,
                                        baseline=test.is_baseline)
        acc.update(curves, train_grad_cosine=cos_first, train_grad_cosine_last=cos_last,
                   acc_ref_dtype=ref["dtype"])
        test.verdict(acc, lambda a: accuracy.describe_learning(a, cos_first), acc.get("_detail", ""))
        return
    acc = accuracy.compare_train(trainer.losses, ref_losses, cos_first, dtype, baseline=test.is_baseline)
    acc.update(curves, train_grad_cosine=cos_first, train_grad_cosine_last=cos_last)
    test.verdict(acc, lambda a: accuracy.describe_train(a, trainer.losses, ref_losses, cos_first))
