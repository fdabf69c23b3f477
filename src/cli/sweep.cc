#include "cli/sweep.h"

#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "runner/memlimit.h"
#include "sweep/sweep.h"
#include "util/fs.h"

namespace compatlab {
namespace {

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
  r.base.warm = f.warm;
  r.base.measure.max_time_s = f.max_measure_s.value_or(kDefaultMaxMeasureS);
  r.base.grace_s = flags.grace_s.value_or(2.0);
  r.base.mem_limit_bytes = mem_limit_bytes;
  r.base.mem_limit_method = f.mem_limit_method;
  r.allow_profile_paths = flags.allow_profile_paths;
  return r;
}

}  // namespace

int RunSweep(const SweepFlags& flags) {
  absl::StatusOr<int64_t> mem_limit = ParseByteSize(flags.mem_limit.value_or("8G"));
  if (!mem_limit.ok()) {
    return Fail(kExitBadInput, absl::StrCat("--mem-limit: ", mem_limit.status().message()));
  }
  if (flags.plan.max_measure_s.has_value() &&
      !(*flags.plan.max_measure_s >= 0 && *flags.plan.max_measure_s <= 86400)) {
    return Fail(kExitBadInput, "--max-measure-s: expected seconds from 0 to 86400");
  }
  SweepOptions options;
  options.db = flags.db;
  options.home = ProjectHome();
  options.jobs = flags.jobs;
  options.command_line = flags.command_line;
  options.rerun_reduced = !flags.no_rerun_reduced;
  options.resume = flags.resume;
  if (flags.resume) {
    options.resume_id = flags.resume_id;
    options.given = flags.plan;
    options.probe = ResolveProbeEnv(flags.plan.python);
    options.allow_stored_code = flags.allow_stored_code;
    if (!flags.plan.python.empty())
      options.given.python = ResolveProbeEnv(flags.plan.python).python;
    options.timeout_s = flags.timeout_s;
    options.grace_s = flags.grace_s;
    if (flags.mem_limit.has_value()) options.mem_limit_bytes = *mem_limit;
  } else {
    options.request = ToPlanRequest(flags, *mem_limit);
  }
  SweepOutcome outcome = Sweep(options);
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
