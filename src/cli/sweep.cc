#include "cli/sweep.h"

#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "runner/memlimit.h"
#include "stack/stack.h"
#include "sweep/sweep.h"
#include "util/fs.h"

namespace compatlab {
namespace {

// The plan request of a new sweep: the suite (default smoke), the overrides, the probe.
PlanRequest ToPlanRequest(const SweepFlags& flags, int64_t mem_limit_bytes) {
  const PlanFlags& f = flags.plan;
  PlanRequest r;
  r.suite = f.suite.empty() ? "smoke" : f.suite;
  r.overrides.models = f.models;
  r.overrides.kinds = f.kinds;
  r.overrides.targets = f.targets;
  r.overrides.modes = f.modes;
  r.overrides.backend = f.backend;
  r.overrides.dtypes = f.dtypes;
  r.overrides.batch_sizes = f.batch_sizes;
  r.overrides.seq_lens = f.seq_lens;
  r.overrides.ranks = f.ranks;
  r.overrides.parallel = f.parallel;
  r.overrides.dynamic = f.dynamic;
  r.overrides.new_tokens = f.new_tokens;
  r.overrides.train_steps = f.train_steps;
  r.overrides.load_rates = f.load_rates;
  r.overrides.load_slo = f.load_slo;
  r.overrides.load_requests = f.load_requests;
  r.overrides.size = f.size;
  r.overrides.weights = f.weights;
  r.overrides.heads = f.heads;
  r.overrides.timeout_s = flags.timeout_s;
  r.model_path = f.model_path;
  r.model_code = f.model_code;
  r.overrides.trust_remote_code = f.trust_remote_code;
  r.overrides.baseline = f.baseline;
  ProbeEnv probe = ResolveProbeEnv(f.python);
  r.base.python = probe.python;
  r.base.probe_dir = probe.probe_dir;
  r.base.stack = DefaultStackOf(probe.python);
  r.base.warm = f.warm;
  r.base.profile = f.profile;
  r.base.measure.max_time_s = f.max_measure_s.value_or(kDefaultMaxMeasureS);
  r.base.grace_s = flags.grace_s.value_or(2.0);
  r.base.mem_limit_bytes = mem_limit_bytes;
  r.base.mem_limit_method = f.mem_limit_method;
  r.allow_profile_paths = flags.allow_profile_paths;
  return r;
}

// The options naming the models: which, at which size, with which heads and weights.
void AddSweepModelOptions(CLI::App& cmd, PlanFlags& plan) {
  cmd.add_option("--models", plan.models,
                 "model types and hub:ORG/NAME[@REVISION] ids, overriding the suite's list")
      ->delimiter(',');
  cmd.add_option("--size", plan.size,
                 "reduced (default: the config shrunk, its features kept) or full (the "
                 "real configuration, random weights)");
  cmd.add_option("--heads", plan.heads,
                 "rule (default: one head class per model), all (every head class the "
                 "type registers, each its own test) or class names")
      ->delimiter(',');
  cmd.add_flag("--weights", plan.weights,
               "hub: models with the repo's own weights (from the Hub cache or fetched)");
  cmd.add_option("--model-path", plan.model_path, "a local checkpoint directory as the model");
  cmd.add_option("--model-code", plan.model_code,
                 "FILE.py:FUNCTION, your own modelling code as the model (a function "
                 "returning a model, or (model, inputs); or a PreTrainedModel subclass "
                 "built from its config): model id code:NAME@HASH");
  cmd.add_flag("--trust-remote-code", plan.trust_remote_code,
               "let a --model-path checkpoint whose config.json names custom code "
               "(auto_map) import and run it");
  cmd.add_option("--baseline", plan.baseline,
                 "models (types or hub: ids) run beside the variant with the same targets, "
                 "modes, kinds, dtypes and shapes (then: compatlab compare)")
      ->delimiter(',');
}

// The test axes (kinds, targets, modes, dtypes, shapes) and each kind's parameters.
void AddSweepAxisOptions(CLI::App& cmd, PlanFlags& plan) {
  cmd.add_option("--kinds", plan.kinds, "test kinds (forward, generate, train, load)")
      ->delimiter(',');
  cmd.add_option("--targets", plan.targets,
                 "target profiles by name (targets/NAME.json) or file, overriding the "
                 "suite's")
      ->delimiter(',');
  cmd.add_option("--modes", plan.modes, "eager, compile, export")->delimiter(',');
  cmd.add_option("--backend", plan.backend,
                 "compile backend instead of the profile's (inductor, aot_eager, "
                 "or module:function)");
  cmd.add_option("--dtypes", plan.dtypes, "float32, bfloat16, float16, float64")->delimiter(',');
  cmd.add_option("--batch-sizes", plan.batch_sizes, "batch sizes, e.g. 1,4")->delimiter(',');
  cmd.add_option("--seq-lens", plan.seq_lens, "sequence lengths, e.g. 128,512,2048")
      ->delimiter(',');
  cmd.add_option("--ranks", plan.ranks,
                 "processes of one group per test, the model split over them "
                 "(doc/ranks.md), e.g. 1,2")
      ->delimiter(',');
  cmd.add_option("--parallel", plan.parallel,
                 "train over several ranks: tp (tensor parallel, default) or dp "
                 "(data parallel)");
  cmd.add_option("--dynamic", plan.dynamic,
                 "compile mode, kind forward: one test over every shape (batch sizes x "
                 "sequence lengths) on one compiled model: true (the default: "
                 "torch.compile(dynamic=True)), mark (mark_dynamic on the batch and sequence "
                 "dims), static (one test per shape), e.g. static,true (doc/probe.md)")
      ->expected(0, 3)
      ->default_str(std::string(kDynamicTrue))
      ->delimiter(',');
  cmd.add_option("--new-tokens", plan.new_tokens, "generate: new tokens (default 16)");
  cmd.add_option("--train-steps", plan.train_steps, "train: optimizer steps (default 3)");
  cmd.add_option("--rates", plan.load_rates,
                 "load: server arrival rates as multiples of the offline throughput "
                 "(default 0.5x,0.9x,1.5x)")
      ->delimiter(',');
  cmd.add_option("--slo", plan.load_slo,
                 "load: goodput objective ttft=SECONDS,itl=SECONDS (default: 3x the "
                 "p50s of the test's single_stream run)");
  cmd.add_option("--load-requests", plan.load_requests, "load: requests per test (default 32)");
  cmd.add_flag("--warm", plan.warm,
               "compile mode: rerun each compiled test in a second process on the same "
               "compile cache and record warm preparation");
}

// How each test runs: deadlines, budgets, limits, parallelism (`execution_policy`),
// interpreter.
void AddSweepRunOptions(CLI::App& cmd, SweepFlags& flags, bool execution_policy) {
  cmd.add_option("--timeout", flags.timeout_s, "per-test deadline in seconds");
  cmd.add_option("--max-measure-s", flags.plan.max_measure_s,
                 "measurement budget per test in seconds, from the first warm-up call: "
                 "steady calls repeat until the median's interval is tight, and none "
                 "starts once it is spent and one ran (default 2; 0: the minimums only; "
                 "doc/probe.md)");
  cmd.add_option("--profile", flags.plan.profile,
                 "torch.profiler over a window of each test: steady (the default: calls "
                 "after the measured ones) or prepare (the first call); a summary in the "
                 "row, the trace beside the store (doc/probe.md, \"Profile\")")
      ->expected(0, 1)
      ->default_str(std::string(kProfileSteady))
      ->check(CLI::IsMember({std::string(kProfileSteady), std::string(kProfilePrepare)}));
  cmd.add_option("--mem-limit", flags.mem_limit,
                 "per-test memory limit (e.g. 8G, 512M; default 8G)");
  cmd.add_option("--mem-limit-method", flags.plan.mem_limit_method,
                 "cgroup_v2, cgroup_v1 or rlimit (default: best available)");
  if (execution_policy) cmd.add_option("--jobs,-j", flags.jobs, "tests run at once (default 1)");
  cmd.add_option("--grace", flags.grace_s, "seconds between SIGTERM and SIGKILL (default 2)");
  if (execution_policy) {
    cmd.add_flag("--no-rerun-reduced", flags.no_rerun_reduced,
                 "do not rerun a reduced model's failure at full size (or the milder "
                 "reduction) to prove it is the reduction's (doc/results-schema.md, "
                 "\"Blame\"); such failures then stay the model's");
    cmd.add_option("--remeasure-noisy", flags.remeasure_noisy,
                   "measure up to N passing tests whose timing was noisy once more at the end, "
                   "once the machine is quiet; the quiet measurement becomes the row's "
                   "(doc/results-schema.md, \"Noise\"; default 3, 0: off)");
    cmd.add_option("--remeasure-wait-s", flags.remeasure_wait_s,
                   "how long the end of the sweep waits for a quiet machine before it keeps the "
                   "noisy figures as they are (default 60)");
    cmd.add_option("--cache-from", flags.cache_from,
                   "compile store remote (a directory, or hub:ORG/NAME): its entries of the "
                   "plan's tests are pulled into the local store first, and each cold compile "
                   "loads the entry of its key (prepare_state warm-remote; doc/compile-cache.md)");
    cmd.add_flag("--no-keep-compile", flags.no_keep_compile,
                 "keep no model-cold compile in the local compile store");
  }
  cmd.add_option("--python", flags.plan.python, "interpreter that runs the probe");
}

}  // namespace

void AddPlanOptions(CLI::App& cmd, SweepFlags& flags, bool execution_policy) {
  cmd.add_option("--suite", flags.plan.suite, "suite name or JSON file (default: smoke)");
  AddSweepModelOptions(cmd, flags.plan);
  AddSweepAxisOptions(cmd, flags.plan);
  AddSweepRunOptions(cmd, flags, execution_policy);
  cmd.add_flag("--allow-profile-paths", flags.allow_profile_paths,
               "let the suite file name target profiles by path (a profile runs Python "
               "in every test: trust the file first)");
}

absl::StatusOr<PlanRequest> PlanRequestOf(const SweepFlags& flags) {
  absl::StatusOr<int64_t> mem_limit = ParseByteSize(flags.mem_limit.value_or("8G"));
  if (!mem_limit.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--mem-limit: ", mem_limit.status().message()));
  }
  if (flags.plan.max_measure_s.has_value() &&
      !(*flags.plan.max_measure_s >= 0 && *flags.plan.max_measure_s <= 86400)) {
    return absl::InvalidArgumentError("--max-measure-s: expected seconds from 0 to 86400");
  }
  return ToPlanRequest(flags, *mem_limit);
}

CLI::App* AddSweepCommand(CLI::App& app, SweepFlags& flags) {
  CLI::App* cmd = app.add_subcommand("sweep", "Run a suite's tests and store every result");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  AddPlanOptions(*cmd, flags, /*execution_policy=*/true);
  cmd->add_option("--stacks", flags.stacks,
                  "run the plan on each of these stacks, one sweep (and zygote) each, every "
                  "run stored with its stack's name: default (the project's environment) and "
                  "names made by `compatlab stack add` (doc/stacks.md)")
      ->delimiter(',');
  cmd->add_flag("--allow-stored-code", flags.allow_stored_code,
                "with --resume or --plan: run the interpreter, probe, profiles and code the "
                "stored plan (or plan file) names even where they are not this "
                "installation's own (trust the store or file first; doc/suites.md)");
  cmd->add_option("--plan", flags.plan_file,
                  "run shard --shard of this plan file (compatlab plan --out) without "
                  "planning; run again, it resumes that shard's sweep in --db "
                  "(doc/plan-file.md)");
  cmd->add_option("--shard", flags.shard,
                  "I/N: run only shard I (from 0) of N: of the --plan file, else of the plan "
                  "resolved here, by a stable hash of the test ids");
  CLI::Option* resume = cmd->add_option("--resume", flags.resume_id,
                                        "continue a sweep (default: the latest unfinished)")
                            ->expected(0, 1);
  cmd->callback([&flags, resume] { flags.resume = resume->count() > 0; });
  return cmd;
}

namespace {

// The refusal of flags that do not go together, or "".
std::string ShardFlagsConflict(const SweepFlags& flags) {
  const bool plan = !flags.plan_file.empty();
  if (!flags.stacks.empty() && (flags.resume || plan || !flags.shard.empty())) {
    return "--stacks plans new sweeps (a stack's sweep resumes by its own --resume ID)";
  }
  if (!flags.stacks.empty() && !flags.plan.python.empty()) {
    return "--stacks names the interpreters itself: give --python or --stacks, not both";
  }
  if (flags.allow_stored_code && !flags.resume && !plan) {
    return "--allow-stored-code applies to --resume and --plan (a new sweep runs only this "
           "installation's own code)";
  }
  if (flags.resume && (plan || !flags.shard.empty())) {
    return "--resume takes no --plan or --shard (a shard of a plan file resumes when its "
           "sweep command runs again)";
  }
  if (plan && flags.shard.empty()) return "--plan needs --shard I/N (the shard of the plan to run)";
  return "";
}

// The interpreter of each named stack (stack/stack.h), in the order given, each name once.
absl::StatusOr<std::vector<NamedInterpreter>> StackInterpreters(
    const std::vector<std::string>& names) {
  const StackHome home = StackHomeOf(ProjectHome(), ResolveProbeEnv("").python);
  std::vector<NamedInterpreter> out;
  for (const std::string& name : names) {
    for (const NamedInterpreter& seen : out) {
      if (seen.stack == name)
        return absl::InvalidArgumentError("--stacks: " + name + " given twice");
    }
    absl::StatusOr<StackRecord> stack = FindStack(home, name);
    if (!stack.ok())
      return absl::InvalidArgumentError("--stacks: " + std::string(stack.status().message()));
    out.push_back({stack->name, stack->python.string()});
  }
  return out;
}

// The options of a sweep that replays a plan (--resume, --plan): what the command line
// gives, checked against the stored plan or the plan file.
void SetReplayOptions(const SweepFlags& flags, int64_t mem_limit, SweepOptions& options) {
  options.resume = flags.resume;
  options.resume_id = flags.resume_id;
  options.plan_file = flags.plan_file;
  options.given = flags.plan;
  options.probe = ResolveProbeEnv(flags.plan.python);
  options.allow_stored_code = flags.allow_stored_code;
  if (!flags.plan.python.empty()) options.given.python = options.probe.python;
  options.timeout_s = flags.timeout_s;
  options.grace_s = flags.grace_s;
  if (flags.mem_limit.has_value()) options.mem_limit_bytes = mem_limit;
}

}  // namespace

int RunSweep(const SweepFlags& flags) {
  absl::StatusOr<PlanRequest> request = PlanRequestOf(flags);
  if (!request.ok()) return Fail(kExitBadInput, request.status());
  if (std::string conflict = ShardFlagsConflict(flags); !conflict.empty()) {
    return Fail(kExitBadInput, conflict);
  }
  SweepOptions options;
  if (!flags.shard.empty()) {
    absl::StatusOr<ShardSpec> shard = ParseShardSpec(flags.shard);
    if (!shard.ok()) return Fail(kExitBadInput, shard.status());
    options.shard = *shard;
  }
  options.db = flags.db;
  options.home = ProjectHome();
  options.jobs = flags.jobs;
  options.command_line = flags.command_line;
  options.rerun_reduced = !flags.no_rerun_reduced;
  options.remeasure_noisy = flags.remeasure_noisy;
  options.remeasure_wait_s = flags.remeasure_wait_s;
  options.cache_from = flags.cache_from;
  options.no_keep_compile = flags.no_keep_compile;
  if (flags.resume || !flags.plan_file.empty()) {
    SetReplayOptions(flags, request->base.mem_limit_bytes, options);
  } else {
    options.request = *std::move(request);
  }
  SweepOutcome outcome;
  if (flags.stacks.empty()) {
    outcome = Sweep(options);
  } else {
    absl::StatusOr<std::vector<NamedInterpreter>> stacks = StackInterpreters(flags.stacks);
    if (!stacks.ok()) return Fail(ExitCodeOf(stacks.status()), stacks.status());
    outcome = SweepStacks(options, *stacks);
  }
  switch (outcome.end) {
    case SweepEnd::kDone:
      return kExitOk;
    case SweepEnd::kInterrupted:
      return kExitInterrupted;
    case SweepEnd::kBadInput:
      return Fail(kExitBadInput, outcome.status);
    case SweepEnd::kFailed:
      break;
  }
  return Fail(kExitFailure, outcome.status);
}

}  // namespace compatlab
