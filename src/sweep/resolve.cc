#include "sweep/resolve.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/hash.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// True when the model tests of `plan` have more than one shape.
bool HasSeveralShapes(const std::vector<TestSpec>& plan) {
  std::set<std::pair<int64_t, int64_t>> shapes;
  for (const TestSpec& s : plan) {
    if (!s.IsHarness()) shapes.insert({s.batch_size, s.seq_len});
  }
  return shapes.size() > 1;
}

// The local checkpoint of `model_path` into `overrides`.
absl::Status AddCheckpoint(const std::string& model_path, const ProbeEnv& probe,
                           PlanOverrides* overrides) {
  std::error_code ec;
  fs::path dir = fs::absolute(model_path, ec);
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--model-path: not a directory: ", model_path));
  }
  absl::StatusOr<std::string> hash = HashDirectory(dir);
  if (!hash.ok()) return hash.status();
  absl::StatusOr<CheckpointInfo> info = InspectCheckpoint(probe, dir.string());
  if (!info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-path ", model_path, ": ", info.status().message()));
  }
  overrides->checkpoint_dir = dir.string();
  overrides->checkpoint_hash = *hash;
  overrides->checkpoint = *info;
  return absl::OkStatus();
}

// Distinct values of `get` over the model tests of `plan`, sorted.
template <typename T, typename Get>
std::vector<T> Distinct(const std::vector<ResolvedTest>& plan, Get get) {
  std::set<T> values;
  for (const ResolvedTest& t : plan) {
    if (t.spec.IsHarness()) continue;
    if (std::optional<T> v = get(t); v.has_value()) values.insert(*v);
  }
  return std::vector<T>(values.begin(), values.end());
}

template <typename T>
std::string Join(const std::vector<T>& values) {
  return values.empty() ? "none" : absl::StrJoin(values, ",");
}

// InvalidArgument naming `flag` unless the given values (as a set) are `stored`.
template <typename T>
absl::Status Same(const std::string& flag, std::vector<T> given, const std::vector<T>& stored) {
  std::sort(given.begin(), given.end());
  given.erase(std::unique(given.begin(), given.end()), given.end());
  if (given == stored) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--resume: ", flag, " ", Join(given),
                                                 " differs from the stored plan (", flag, " ",
                                                 Join(stored), ")"));
}

std::optional<std::string> KindParam(const ResolvedTest& t, const std::string& kind,
                                     const std::string& key) {
  if (t.spec.kind != kind) return std::nullopt;
  auto it = t.spec.kind_params.find(key);
  if (it == t.spec.kind_params.end()) return std::nullopt;
  return it->second;
}

std::string TargetName(const std::string& name_or_path) {
  fs::path p(name_or_path);
  return p.extension() == ".json" ? p.stem().string() : name_or_path;
}

// The flags that say what is tested (models, shapes, ...).
absl::Status CheckMatrixFlags(const PlanFlags& f, const std::vector<ResolvedTest>& plan) {
  using Strings = std::vector<std::string>;
  auto spec_field = [&](auto member) {
    return Distinct<std::string>(
        plan, [&](const ResolvedTest& t) { return std::optional<std::string>(t.spec.*member); });
  };
  // --models: model types against the stored hf: tests' types, hub: ids against the stored
  // hub: tests' ids (hub:ORG/NAME matches every commit).
  Strings given_types, stored_types;
  for (const std::string& m : f.models) {
    if (!IsHubId(m)) {
      given_types.push_back(m);
      continue;
    }
    const bool found = std::any_of(plan.begin(), plan.end(), [&](const ResolvedTest& t) {
      return HubIdMatches(m, t.spec.model_id) ||
             (IsHubId(t.spec.model_id) && HubIdMatches(t.spec.model_id, m));
    });
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume: --models ", m, " is not in the stored plan"));
    }
  }
  for (const ResolvedTest& t : plan) {
    if (!t.spec.IsHarness() && !IsHubId(t.spec.model_id)) stored_types.push_back(t.spec.model_type);
  }
  std::sort(stored_types.begin(), stored_types.end());
  stored_types.erase(std::unique(stored_types.begin(), stored_types.end()), stored_types.end());
  std::vector<std::pair<std::string, std::pair<Strings, Strings>>> text_flags = {
      {"--models", {given_types, stored_types}},
      {"--kinds", {f.kinds, spec_field(&TestSpec::kind)}},
      {"--modes", {f.modes, spec_field(&TestSpec::mode)}},
      {"--dtypes", {f.dtypes, spec_field(&TestSpec::dtype)}},
  };
  Strings targets;
  for (const std::string& t : f.targets) targets.push_back(TargetName(t));
  text_flags.push_back({"--targets", {targets, spec_field(&TestSpec::target)}});
  for (const auto& [flag, values] : text_flags) {
    if (values.first.empty()) continue;
    if (absl::Status s = Same(flag, values.first, values.second); !s.ok()) return s;
  }
  auto int_field = [&](auto member) {
    return Distinct<int64_t>(
        plan, [&](const ResolvedTest& t) { return std::optional<int64_t>(t.spec.*member); });
  };
  if (!f.batch_sizes.empty()) {
    if (absl::Status s = Same("--batch-sizes", f.batch_sizes, int_field(&TestSpec::batch_size));
        !s.ok()) {
      return s;
    }
  }
  if (!f.seq_lens.empty()) {
    return Same("--seq-lens", f.seq_lens, int_field(&TestSpec::seq_len));
  }
  return absl::OkStatus();
}

// The flags that set one value (backend, kind parameters, paths, ...).
absl::Status CheckValueFlags(const PlanFlags& f, const std::vector<ResolvedTest>& plan) {
  auto one = [](const std::string& value) {
    return value.empty() ? std::vector<std::string>{} : std::vector<std::string>{value};
  };
  auto param = [&](const std::string& kind, const std::string& key) {
    return Distinct<std::string>(plan,
                                 [&](const ResolvedTest& t) { return KindParam(t, kind, key); });
  };
  auto field = [&](auto get) { return Distinct<std::string>(plan, get); };
  std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> checks;
  checks.emplace_back("--backend", one(f.backend), field([](const ResolvedTest& t) {
                        return t.spec.IsCompiled() ? std::optional(t.spec.backend) : std::nullopt;
                      }));
  if (f.new_tokens) {
    // generate and load tests take --new-tokens.
    checks.emplace_back("--new-tokens", one(std::to_string(*f.new_tokens)),
                        Distinct<std::string>(plan, [](const ResolvedTest& t) {
                          std::optional<std::string> v = KindParam(t, "generate", "new_tokens");
                          return v ? v : KindParam(t, "load", "new_tokens");
                        }));
  }
  if (!f.size.empty() || f.weights) {
    auto of = [](const ResolvedTest& t, const std::string& key,
                 const std::string& absent) -> std::optional<std::string> {
      if (t.spec.IsHarness()) return std::nullopt;
      auto it = t.spec.kind_params.find(key);
      return it == t.spec.kind_params.end() ? absent : it->second;
    };
    if (!f.size.empty()) {
      checks.emplace_back("--size", one(f.size),
                          field([&](const ResolvedTest& t) { return of(t, "size", "reduced"); }));
    }
    if (f.weights) {
      checks.emplace_back("--weights", one("pretrained"),
                          field([&](const ResolvedTest& t) { return of(t, "weights", "random"); }));
    }
  }
  if (f.train_steps) {
    checks.emplace_back("--train-steps", one(std::to_string(*f.train_steps)),
                        param("train", "steps"));
  }
  if (!f.load_rates.empty() || !f.load_slo.empty() || f.load_requests) {
    PlanOverrides load;
    load.load_rates = f.load_rates;
    load.load_slo = f.load_slo;
    load.load_requests = f.load_requests;
    absl::StatusOr<std::vector<std::map<std::string, std::string>>> variants =
        KindParamVariants("load", load);
    if (!variants.ok()) return variants.status();
    auto given = [&](const std::string& key) {
      std::vector<std::string> values;
      for (const auto& v : *variants) {
        if (auto it = v.find(key); it != v.end()) values.push_back(it->second);
      }
      return values;
    };
    if (!f.load_rates.empty()) checks.emplace_back("--rates", given("rate"), param("load", "rate"));
    if (!f.load_slo.empty()) checks.emplace_back("--slo", given("slo"), param("load", "slo"));
    if (f.load_requests) {
      checks.emplace_back("--load-requests", one(std::to_string(*f.load_requests)),
                          param("load", "requests"));
    }
  }
  std::error_code ec;
  checks.emplace_back(
      "--model-path", one(f.model_path.empty() ? "" : fs::absolute(f.model_path, ec).string()),
      field([](const ResolvedTest& t) { return std::optional(t.spec.model_path); }));
  checks.emplace_back("--python", one(f.python), field([](const ResolvedTest& t) {
                        return std::optional(t.execution->python);
                      }));
  checks.emplace_back(
      "--mem-limit-method", one(f.mem_limit_method),
      field([](const ResolvedTest& t) { return std::optional(t.execution->mem_limit_method); }));
  for (const auto& [flag, given, stored] : checks) {
    if (given.empty()) continue;
    if (absl::Status s = Same(flag, given, stored); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResolvedPlan> ResolvePlan(const Suite& suite, const PlanOverrides& overrides,
                                         const TestExecution& base, const ModelCatalog* catalog,
                                         const std::map<std::string, TargetProfile>& profiles) {
  absl::StatusOr<std::vector<TestSpec>> specs = ExpandPlan(suite, overrides, catalog, profiles);
  if (!specs.ok()) return specs.status();
  const bool static_shapes = HasSeveralShapes(*specs);
  ResolvedPlan plan;
  // --models replaces the suite's models: the stored name and the banner say so.
  plan.suite = overrides.models.empty() ? suite.name : suite.name + std::string(kModelsSuffix);
  plan.tests.reserve(specs->size());
  for (TestSpec& spec : *specs) {
    TestExecution execution = base;
    if (auto it = profiles.find(spec.target); it != profiles.end() && !spec.IsHarness()) {
      execution.target_profile_json = it->second.json;
      if (spec.IsCompiled()) {
        execution.compile_options_json = static_shapes
                                             ? WithStaticShapes(it->second.compile_options_json)
                                             : it->second.compile_options_json;
      }
    }
    plan.tests.push_back({std::move(spec), std::move(execution)});
  }
  return plan;
}

absl::StatusOr<ResolvedPlan> LoadPlan(const PlanRequest& request, const fs::path& home) {
  absl::StatusOr<Suite> suite = LoadSuite(request.suite, home / "suites");
  if (!suite.ok()) return suite.status();
  PlanOverrides overrides = request.overrides;
  if (overrides.targets.empty() && !request.allow_profile_paths) {
    for (const std::string& target : suite->targets) {
      if (IsTargetProfilePath(target)) {
        return absl::InvalidArgumentError(
            absl::StrCat(request.suite, ": 'targets' names the profile file '", target,
                         "' by path; a profile runs Python in every test (doc/targets.md): pass "
                         "--allow-profile-paths to trust it, or name a profile of targets/"));
      }
    }
  }
  overrides.targets = PlanTargets(*suite, overrides);
  auto profiles = LoadTargetProfiles(&overrides.targets, home / "targets");
  if (!profiles.ok()) return profiles.status();
  const ProbeEnv probe{request.base.python, request.base.probe_dir};
  if (!request.model_path.empty()) {
    if (absl::Status s = AddCheckpoint(request.model_path, probe, &overrides); !s.ok()) return s;
  }
  // A backend the plan's profiles name is theirs; any other is checked with the probe's torch.
  const bool profile_backend =
      std::any_of(profiles->begin(), profiles->end(),
                  [&](const auto& entry) { return entry.second.backend == overrides.backend; });
  if (!overrides.backend.empty() && !profile_backend) {
    // The child imports the backend with its profile's pythonpath first on the path.
    std::vector<std::string> pythonpath;
    for (const auto& [name, profile] : *profiles) {
      for (const std::string& entry : profile.pythonpath) {
        const fs::path dir(entry);
        pythonpath.push_back(dir.is_absolute() ? entry : (home / dir).string());
      }
    }
    if (absl::Status s = CheckCompileBackend(probe, overrides.backend, pythonpath); !s.ok()) {
      return s;
    }
  }
  if (const std::vector<std::string> hub = PlanHubModels(*suite, overrides); !hub.empty()) {
    for (const std::string& id : hub) {
      if (absl::Status s = CheckHubId(id); !s.ok()) return s;
    }
    absl::StatusOr<std::map<std::string, HubModelInfo>> resolved =
        ResolveHubModels(probe, hub, overrides.weights);
    if (!resolved.ok()) return resolved.status();
    overrides.hub_models = *std::move(resolved);
  }
  std::optional<ModelCatalog> catalog;
  if (PlanNeedsCatalog(*suite, overrides)) {
    absl::StatusOr<ModelCatalog> loaded = LoadCatalog(probe);
    if (!loaded.ok()) return absl::InternalError(loaded.status().message());
    catalog = *std::move(loaded);
  }
  return ResolvePlan(*suite, overrides, request.base, catalog ? &*catalog : nullptr, *profiles);
}

absl::Status CheckResumeFlags(const PlanFlags& flags, const std::string& suite,
                              const std::vector<ResolvedTest>& plan) {
  std::string_view stored = suite;
  if (stored.ends_with(kModelsSuffix)) stored.remove_suffix(kModelsSuffix.size());
  if (!flags.suite.empty() && fs::path(flags.suite).stem().string() != stored) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resume: --suite ", flags.suite, " differs from the stored plan (--suite ", suite, ")"));
  }
  if (absl::Status s = CheckMatrixFlags(flags, plan); !s.ok()) return s;
  if (absl::Status s = CheckValueFlags(flags, plan); !s.ok()) return s;
  if (flags.max_measure_s && !std::all_of(plan.begin(), plan.end(), [&](const ResolvedTest& t) {
        return t.execution->measure.max_measure_s == *flags.max_measure_s;
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("--resume: --max-measure-s differs from the stored plan (--max-measure-s ",
                     plan.empty() ? 0.0 : plan.front().execution->measure.max_measure_s, ")"));
  }
  if (flags.warm && !std::all_of(plan.begin(), plan.end(),
                                 [](const ResolvedTest& t) { return t.execution->warm; })) {
    return absl::InvalidArgumentError(
        "--resume: --warm differs from the stored plan (planned without --warm)");
  }
  return absl::OkStatus();
}

}  // namespace compatlab
