#include "sweep/resolve.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/fs.h"
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
  absl::StatusOr<CheckpointInfo> info =
      InspectCheckpoint(probe, dir.string(), overrides->trust_remote_code);
  if (!info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-path ", model_path, ": ", info.status().message()));
  }
  overrides->checkpoint_dir = dir.string();
  overrides->checkpoint_hash = *hash;
  overrides->checkpoint = *info;
  return absl::OkStatus();
}

// The code model the probe described as `info` (FILE `file`, FUNCTION `function`), checked:
// every code file it lists lies under FILE's directory and hashes here as the probe said, and
// the id's hash computed here agrees with the probe's. Errors start with `what`.
absl::StatusOr<PlannedCodeModel> CheckedCodeModel(const std::string& what, const fs::path& file,
                                                  const std::string& function,
                                                  const CodeModelInfo& info) {
  // The probe names the files by normalised absolute paths under FILE's directory.
  const fs::path dir = file.parent_path().lexically_normal();
  bool has_file = false;
  for (const CodeFile& f : info.files) {
    const fs::path path = (dir / f.rel).lexically_normal();
    if (path != fs::path(f.path).lexically_normal() ||
        !path.string().starts_with(dir.string() + "/")) {
      return absl::InternalError(
          absl::StrCat(what, ": the probe listed ", f.path, " as code outside ", dir.string()));
    }
    has_file = has_file || path == file.lexically_normal();
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    if (Sha256Hex(*text) != f.sha256) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": its code file ", f.rel, " changed while it was planned"));
    }
  }
  const std::string sha = CodeFilesDigest(info.files);
  if (!has_file || info.sha256 != sha) {
    return absl::InternalError(
        absl::StrCat(what, ": the probe's code files disagree with the file or their hash (",
                     info.sha256, " against ", sha, ")"));
  }
  return PlannedCodeModel{CodeModelId(file.string(), function, sha),
                          absl::StrCat(file.string(), ":", function), info};
}

// The code model of `spec` (FILE.py:FUNCTION) into `overrides`: the model built once by the
// probe, which lists FILE and the code files it imports from FILE's directory tree; each of
// them hashed here again (CheckedCodeModel).
absl::Status AddCodeModel(const std::string& spec, const ProbeEnv& probe,
                          PlanOverrides* overrides) {
  absl::StatusOr<std::pair<std::string, std::string>> parts = SplitModelCode(spec);
  if (!parts.ok()) return parts.status();
  std::error_code ec;
  fs::path file = fs::absolute(parts->first, ec);
  if (!fs::is_regular_file(file, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-code ", spec, ": no such file: ", parts->first));
  }
  const std::string full = absl::StrCat(file.string(), ":", parts->second);
  absl::StatusOr<CodeModelInfo> info = InspectCodeModel(probe, full);
  if (!info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-code ", spec, ": ", info.status().message()));
  }
  absl::StatusOr<PlannedCodeModel> planned =
      CheckedCodeModel(absl::StrCat("--model-code ", spec), file, parts->second, *info);
  if (!planned.ok()) return planned.status();
  overrides->code_model_id = planned->id;
  overrides->code_model_spec = planned->spec;
  overrides->code_model = planned->info;
  return absl::OkStatus();
}

// The file of a suite's code model entry `spec` ("FILE.py:FUNCTION", FILE relative to the
// suite's directory): a regular file inside that directory once symbolic links are
// resolved; InvalidArgument naming the suite and the entry otherwise.
absl::StatusOr<fs::path> SuiteCodeFile(const Suite& suite, const std::string& spec,
                                       const std::string& file) {
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(suite.dir, ec);
  const fs::path path = fs::weakly_canonical(suite.dir / file, ec);
  const std::string inside = dir.string() + "/";
  if (ec || !fs::is_regular_file(path, ec) || !path.string().starts_with(inside)) {
    return absl::InvalidArgumentError(
        absl::StrCat(suite.name, ": 'code_models' ", spec, ": not a file inside ", dir.string()));
  }
  return path;
}

// The suite's own code models (`code_models`) into `overrides`, all built once in one probe
// process, unless an own model or --models replaces the suite's models. Only a shipped suite
// (suites/NAME.json, this installation's own code) may name code: a suite file given by path
// that does is InvalidArgument.
absl::Status AddSuiteCodeModels(const Suite& suite, const ProbeEnv& probe,
                                PlanOverrides* overrides) {
  if (suite.code_models.empty() || !PlansSuiteCodeModels(*overrides)) return absl::OkStatus();
  if (!suite.shipped) {
    return absl::InvalidArgumentError(absl::StrCat(
        suite.name,
        ": 'code_models' runs code in every test; only a suite of this compatlab's "
        "suites/ may name it (sweep your own code with --model-code FILE.py:FUNCTION)"));
  }
  std::vector<std::pair<fs::path, std::string>> files;
  std::vector<std::string> specs;
  for (const std::string& spec : suite.code_models) {
    absl::StatusOr<std::pair<std::string, std::string>> parts = SplitModelCode(spec);
    if (!parts.ok()) return parts.status();
    absl::StatusOr<fs::path> file = SuiteCodeFile(suite, spec, parts->first);
    if (!file.ok()) return file.status();
    files.emplace_back(*file, parts->second);
    specs.push_back(absl::StrCat(file->string(), ":", parts->second));
  }
  absl::StatusOr<std::vector<CodeModelInfo>> infos = InspectCodeModels(probe, specs);
  if (!infos.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(suite.name, ": 'code_models': ", infos.status().message()));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StatusOr<PlannedCodeModel> planned =
        CheckedCodeModel(absl::StrCat(suite.name, ": 'code_models' ", suite.code_models[i]),
                         files[i].first, files[i].second, (*infos)[i]);
    if (!planned.ok()) return planned.status();
    overrides->suite_code_models.push_back(*std::move(planned));
  }
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

// `values` comma-separated, "none" when there are none.
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

// Kind parameter `key` of a `kind` test, nullopt for other tests or without it.
std::optional<std::string> KindParam(const ResolvedTest& t, const std::string& kind,
                                     const std::string& key) {
  if (t.spec.kind != kind) return std::nullopt;
  auto it = t.spec.kind_params.find(key);
  if (it == t.spec.kind_params.end()) return std::nullopt;
  return it->second;
}

// The profile name a --targets entry names: a .json path's stem, else the entry.
std::string TargetName(const std::string& name_or_path) {
  fs::path p(name_or_path);
  return p.extension() == ".json" ? p.stem().string() : name_or_path;
}

// InvalidArgument unless each hub: id of --models matches a stored test's model (hub:ORG/NAME
// matches every commit); the model types it names ("llama" or "hf:llama") otherwise.
absl::StatusOr<std::vector<std::string>> GivenModelTypes(const std::vector<std::string>& models,
                                                         const std::vector<ResolvedTest>& plan) {
  std::vector<std::string> types;
  for (const std::string& m : models) {
    if (!IsHubId(m)) {
      types.push_back(HfModelType(m));
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
  return types;
}

// InvalidArgument naming the first --baseline model (a type, an hf: or a hub: id) that no
// stored test has.
absl::Status CheckBaselineFlag(const std::vector<std::string>& baseline,
                               const std::vector<ResolvedTest>& plan) {
  for (const std::string& m : baseline) {
    const bool found = std::any_of(plan.begin(), plan.end(), [&](const ResolvedTest& t) {
      return IsHubId(m) ? HubIdMatches(m, t.spec.model_id)
                        : t.spec.model_id == "hf:" + HfModelType(m);
    });
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume: --baseline ", m, " is not in the stored plan"));
    }
  }
  return absl::OkStatus();
}

// The distinct model types of the stored model tests that are not hub: models, sorted.
std::vector<std::string> StoredModelTypes(const std::vector<ResolvedTest>& plan) {
  return Distinct<std::string>(plan, [](const ResolvedTest& t) {
    return IsHubId(t.spec.model_id) ? std::nullopt : std::optional(t.spec.model_type);
  });
}

// The distinct values of a string field of the stored model tests, sorted.
std::vector<std::string> SpecField(const std::vector<ResolvedTest>& plan,
                                   std::string TestSpec::*member) {
  return Distinct<std::string>(
      plan, [&](const ResolvedTest& t) { return std::optional<std::string>(t.spec.*member); });
}

// The distinct values of an integer field of the stored model tests, sorted.
std::vector<int64_t> SpecField(const std::vector<ResolvedTest>& plan, int64_t TestSpec::*member) {
  return Distinct<int64_t>(
      plan, [&](const ResolvedTest& t) { return std::optional<int64_t>(t.spec.*member); });
}

// The distinct values of a dimension of the stored model tests' shapes, sorted: a static
// test's own, every shape of a dynamic test's (TestSpec::shapes, checked when stored).
std::vector<int64_t> StoredShapeField(const std::vector<ResolvedTest>& plan,
                                      int64_t Shape::*member) {
  std::set<int64_t> values;
  for (const ResolvedTest& t : plan) {
    if (t.spec.IsHarness()) continue;
    values.insert(Shape{t.spec.batch_size, t.spec.seq_len}.*member);
    if (!t.spec.IsDynamic()) continue;
    absl::StatusOr<std::vector<Shape>> shapes = ParseShapesText(t.spec.shapes);
    for (const Shape& shape : shapes.ok() ? *shapes : std::vector<Shape>{}) {
      values.insert(shape.*member);
    }
  }
  return std::vector<int64_t>(values.begin(), values.end());
}

// --dynamic's values of the stored compiled forward tests (static for ""), sorted.
std::vector<std::string> StoredDynamic(const std::vector<ResolvedTest>& plan) {
  return Distinct<std::string>(plan, [](const ResolvedTest& t) -> std::optional<std::string> {
    if (!t.spec.IsCompiled() || t.spec.kind != "forward") return std::nullopt;
    return t.spec.IsDynamic() ? t.spec.dynamic : "static";
  });
}

// The flags that say what is tested (models, kinds, modes, dtypes, targets, shapes), each
// given one against the stored values; InvalidArgument naming the first that differs.
absl::Status CheckMatrixFlags(const PlanFlags& f, const std::vector<ResolvedTest>& plan) {
  using Strings = std::vector<std::string>;
  absl::StatusOr<Strings> given_types = GivenModelTypes(f.models, plan);
  if (!given_types.ok()) return given_types.status();
  if (!given_types->empty()) {  // the stored types hold the baseline's beside them
    for (const std::string& m : f.baseline) {
      if (!IsHubId(m)) given_types->push_back(HfModelType(m));
    }
  }
  if (absl::Status s = CheckBaselineFlag(f.baseline, plan); !s.ok()) return s;
  Strings targets;
  for (const std::string& t : f.targets) targets.push_back(TargetName(t));
  const std::vector<std::tuple<std::string, Strings, Strings>> text_flags = {
      {"--models", *given_types, StoredModelTypes(plan)},
      {"--kinds", f.kinds, SpecField(plan, &TestSpec::kind)},
      {"--modes", f.modes, SpecField(plan, &TestSpec::mode)},
      {"--dtypes", f.dtypes, SpecField(plan, &TestSpec::dtype)},
      {"--targets", targets, SpecField(plan, &TestSpec::target)},
      {"--dynamic", f.dynamic, StoredDynamic(plan)},
  };
  for (const auto& [flag, given, stored] : text_flags) {
    if (given.empty()) continue;
    if (absl::Status s = Same(flag, given, stored); !s.ok()) return s;
  }
  const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>> int_flags =
      {
          {"--batch-sizes", f.batch_sizes, StoredShapeField(plan, &Shape::batch_size)},
          {"--seq-lens", f.seq_lens, StoredShapeField(plan, &Shape::seq_len)},
          {"--ranks", f.ranks, SpecField(plan, &TestSpec::ranks)},
      };
  for (const auto& [flag, given, stored] : int_flags) {
    if (given.empty()) continue;
    if (absl::Status s = Same(flag, given, stored); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// --heads against the head classes the stored plan runs per model id. A list
// of classes must be the plan's classes; `rule` plans one class per model; `all`
// is told apart from `rule` where some model has several classes (where every
// model has one, the two cannot be told apart without the catalog: refused,
// with the way out).
absl::Status CheckHeadsFlag(const std::vector<std::string>& heads,
                            const std::vector<ResolvedTest>& plan) {
  if (heads.empty()) return absl::OkStatus();
  std::map<std::string, std::set<std::string>> classes;  // by model id
  for (const ResolvedTest& t : plan) {
    // A Hub repo that could not be had plans one row with no class.
    if (!t.spec.IsHarness() && !t.spec.model_class.empty()) {
      classes[t.spec.model_id].insert(t.spec.model_class);
    }
  }
  auto several = [&] {
    return std::find_if(classes.begin(), classes.end(),
                        [](const auto& m) { return m.second.size() > 1; });
  };
  const std::string given = absl::StrJoin(heads, ",");
  if (heads == std::vector<std::string>{"rule"}) {
    auto it = several();
    if (it == classes.end()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("--resume: --heads rule differs from the stored plan (", it->first, " runs ",
                     it->second.size(), " head classes: ", absl::StrJoin(it->second, ","), ")"));
  }
  if (heads == std::vector<std::string>{"all"}) {
    if (several() != classes.end()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "--resume: --heads all cannot be checked against a stored plan of one head class per "
        "model (rule and all plan the same there); resume without --heads");
  }
  std::set<std::string> stored;
  for (const auto& [id, c] : classes) stored.insert(c.begin(), c.end());
  if (std::set<std::string>(heads.begin(), heads.end()) == stored) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--resume: --heads ", given,
                                                 " differs from the stored plan (head classes ",
                                                 absl::StrJoin(stored, ","), ")"));
}

// One flag's check: its name, the values given (none: not given) and the stored ones.
using FlagCheck = std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>;

// `value` as the one value given, or none when it is empty.
std::vector<std::string> OneValue(const std::string& value) {
  return value.empty() ? std::vector<std::string>{} : std::vector<std::string>{value};
}

// The distinct values of kind parameter `key` of the stored `kind` tests.
std::vector<std::string> StoredParam(const std::vector<ResolvedTest>& plan, const std::string& kind,
                                     const std::string& key) {
  return Distinct<std::string>(plan,
                               [&](const ResolvedTest& t) { return KindParam(t, kind, key); });
}

// A model test's kind parameter `key`, `absent` when it has none; nullopt for harness tests.
std::optional<std::string> BuildSetting(const ResolvedTest& t, const std::string& key,
                                        const std::string& absent) {
  if (t.spec.IsHarness()) return std::nullopt;
  auto it = t.spec.kind_params.find(key);
  return it == t.spec.kind_params.end() ? absent : it->second;
}

// The checks of --backend, --new-tokens, --size, --weights and --train-steps, in that order.
void AddKindParamChecks(const PlanFlags& f, const std::vector<ResolvedTest>& plan,
                        std::vector<FlagCheck>* checks) {
  checks->emplace_back("--backend", OneValue(f.backend),
                       Distinct<std::string>(plan, [](const ResolvedTest& t) {
                         return t.spec.IsCompiled() ? std::optional(t.spec.backend) : std::nullopt;
                       }));
  if (f.new_tokens) {
    // generate and load tests take --new-tokens.
    checks->emplace_back("--new-tokens", OneValue(std::to_string(*f.new_tokens)),
                         Distinct<std::string>(plan, [](const ResolvedTest& t) {
                           std::optional<std::string> v = KindParam(t, "generate", "new_tokens");
                           return v ? v : KindParam(t, "load", "new_tokens");
                         }));
  }
  if (!f.size.empty()) {
    checks->emplace_back("--size", OneValue(f.size),
                         Distinct<std::string>(plan, [](const ResolvedTest& t) {
                           return BuildSetting(t, "size", "reduced");
                         }));
  }
  if (f.weights) {
    checks->emplace_back("--weights", OneValue("pretrained"),
                         Distinct<std::string>(plan, [](const ResolvedTest& t) {
                           return BuildSetting(t, "weights", "random");
                         }));
  }
  if (f.train_steps) {
    checks->emplace_back("--train-steps", OneValue(std::to_string(*f.train_steps)),
                         StoredParam(plan, "train", "steps"));
  }
}

// The checks of --rates, --slo and --load-requests, compared in their canonical form
// (KindParamVariants); its InvalidArgument for a malformed one.
absl::Status AddLoadChecks(const PlanFlags& f, const std::vector<ResolvedTest>& plan,
                           std::vector<FlagCheck>* checks) {
  if (f.load_rates.empty() && f.load_slo.empty() && !f.load_requests) return absl::OkStatus();
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
  if (!f.load_rates.empty()) {
    checks->emplace_back("--rates", given("rate"), StoredParam(plan, "load", "rate"));
  }
  if (!f.load_slo.empty()) {
    checks->emplace_back("--slo", given("slo"), StoredParam(plan, "load", "slo"));
  }
  if (f.load_requests) {
    checks->emplace_back("--load-requests", OneValue(std::to_string(*f.load_requests)),
                         StoredParam(plan, "load", "requests"));
  }
  return absl::OkStatus();
}

// The checks of --model-path and --model-code (each by its absolute path), --python and
// --mem-limit-method; SplitModelCode's InvalidArgument for a malformed --model-code.
absl::Status AddPathChecks(const PlanFlags& f, const std::vector<ResolvedTest>& plan,
                           std::vector<FlagCheck>* checks) {
  std::error_code ec;
  checks->emplace_back(
      "--model-path", OneValue(f.model_path.empty() ? "" : fs::absolute(f.model_path, ec).string()),
      Distinct<std::string>(plan, [](const ResolvedTest& t) {
        return t.spec.model_id.starts_with("ckpt:") ? std::optional(t.spec.model_path)
                                                    : std::nullopt;
      }));
  std::string code;
  if (!f.model_code.empty()) {
    absl::StatusOr<std::pair<std::string, std::string>> parts = SplitModelCode(f.model_code);
    if (!parts.ok()) return parts.status();
    code = absl::StrCat(fs::absolute(parts->first, ec).string(), ":", parts->second);
  }
  checks->emplace_back(
      "--model-code", OneValue(code), Distinct<std::string>(plan, [](const ResolvedTest& t) {
        return IsCodeModelId(t.spec.model_id) ? std::optional(t.spec.model_path) : std::nullopt;
      }));
  std::set<std::string> pythons;  // harness tests run on it too
  for (const ResolvedTest& t : plan) pythons.insert(t.execution->python);
  checks->emplace_back("--python", OneValue(f.python),
                       std::vector<std::string>(pythons.begin(), pythons.end()));
  checks->emplace_back("--mem-limit-method", OneValue(f.mem_limit_method),
                       Distinct<std::string>(plan, [](const ResolvedTest& t) {
                         return std::optional(t.execution->mem_limit_method);
                       }));
  return absl::OkStatus();
}

// --parallel: how the tests in a process group split (kind_params parallel, doc/ranks.md).
void AddParallelCheck(const PlanFlags& f, const std::vector<ResolvedTest>& plan,
                      std::vector<FlagCheck>* checks) {
  checks->emplace_back("--parallel", OneValue(f.parallel),
                       Distinct<std::string>(plan, [](const ResolvedTest& t) {
                         auto it = t.spec.kind_params.find("parallel");
                         if (it == t.spec.kind_params.end()) return std::optional<std::string>();
                         return std::optional(it->second);
                       }));
}

// The flags that set one value (backend, kind parameters, paths, ...), each given one
// against the stored values; InvalidArgument naming the first that differs or is malformed.
absl::Status CheckValueFlags(const PlanFlags& f, const std::vector<ResolvedTest>& plan) {
  std::vector<FlagCheck> checks;
  AddKindParamChecks(f, plan, &checks);
  AddParallelCheck(f, plan, &checks);
  if (absl::Status s = AddLoadChecks(f, plan, &checks); !s.ok()) return s;
  if (absl::Status s = AddPathChecks(f, plan, &checks); !s.ok()) return s;
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
    if (spec.IsHarness()) execution.profile.clear();  // a harness kind runs no model
    if (auto it = profiles.find(spec.target); it != profiles.end() && !spec.IsHarness()) {
      execution.target_profile_json = it->second.json;
      if (execution.profile.empty()) execution.profile = it->second.profile;
      if (spec.IsCompiled()) {
        execution.compile_options_json =
            CompileOptionsFor(spec, it->second.compile_options_json, static_shapes);
      }
    }
    plan.tests.push_back({std::move(spec), std::move(execution)});
  }
  return plan;
}

namespace {

// InvalidArgument when the suite names a profile file by path and --allow-profile-paths
// is not given (a profile runs Python in every test); --targets replaces the suite's.
absl::Status CheckSuiteProfilePaths(const PlanRequest& request, const Suite& suite) {
  if (!request.overrides.targets.empty() || request.allow_profile_paths) return absl::OkStatus();
  for (const std::string& target : suite.targets) {
    if (IsTargetProfilePath(target)) {
      return absl::InvalidArgumentError(
          absl::StrCat(request.suite, ": 'targets' names the profile file '", target,
                       "' by path; a profile runs Python in every test (doc/targets.md): pass "
                       "--allow-profile-paths to trust it, or name a profile of targets/"));
    }
  }
  return absl::OkStatus();
}

// The checkpoint (--model-path) or the code model (--model-code) into `overrides`, each
// inspected by the probe; InvalidArgument for both, or for --model-code beside --models.
absl::Status AddOwnModel(const PlanRequest& request, const ProbeEnv& probe,
                         PlanOverrides* overrides) {
  if (!request.model_code.empty() && !request.overrides.models.empty()) {
    return absl::InvalidArgumentError(
        "--model-code replaces the suite's models; name the model to compare with by --baseline, "
        "not --models");
  }
  if (!request.model_path.empty() && !request.model_code.empty()) {
    return absl::InvalidArgumentError(
        "--model-path and --model-code each name the model: give one");
  }
  if (!request.model_path.empty()) return AddCheckpoint(request.model_path, probe, overrides);
  if (!request.model_code.empty()) return AddCodeModel(request.model_code, probe, overrides);
  return absl::OkStatus();
}

// OK for no --backend or one of the plan's profiles' backends; any other is imported by the
// probe's torch with the profiles' pythonpath (relative entries under `home`) first.
absl::Status CheckBackendFlag(const std::string& backend,
                              const std::map<std::string, TargetProfile>& profiles,
                              const fs::path& home, const ProbeEnv& probe) {
  const bool profile_backend = std::any_of(
      profiles.begin(), profiles.end(), [&](const auto& e) { return e.second.backend == backend; });
  if (backend.empty() || profile_backend) return absl::OkStatus();
  std::vector<std::string> pythonpath;
  for (const auto& [name, profile] : profiles) {
    for (const std::string& entry : profile.pythonpath) {
      const fs::path dir(entry);
      pythonpath.push_back(dir.is_absolute() ? entry : (home / dir).string());
    }
  }
  return CheckCompileBackend(probe, backend, pythonpath);
}

// What the Hub resolver answers for the plan's hub: models into `overrides` (none asked
// when there are none); InvalidArgument for a malformed id.
absl::Status AddHubModels(const Suite& suite, const ProbeEnv& probe, PlanOverrides* overrides) {
  const std::vector<std::string> hub = PlanHubModels(suite, *overrides);
  if (hub.empty()) return absl::OkStatus();
  for (const std::string& id : hub) {
    if (absl::Status s = CheckHubId(id); !s.ok()) return s;
  }
  absl::StatusOr<std::map<std::string, HubModelInfo>> resolved =
      ResolveHubModels(probe, hub, overrides->weights);
  if (!resolved.ok()) return resolved.status();
  overrides->hub_models = *std::move(resolved);
  return absl::OkStatus();
}

// The probe's model catalog when the plan needs it, else nullopt; Internal when the probe
// cannot answer.
absl::StatusOr<std::optional<ModelCatalog>> CatalogIfNeeded(const Suite& suite,
                                                            const PlanOverrides& overrides,
                                                            const ProbeEnv& probe) {
  if (!PlanNeedsCatalog(suite, overrides)) return std::nullopt;
  absl::StatusOr<ModelCatalog> loaded = LoadCatalog(probe);
  if (!loaded.ok()) return absl::InternalError(loaded.status().message());
  return std::optional<ModelCatalog>(*std::move(loaded));
}

}  // namespace

absl::StatusOr<ResolvedPlan> LoadPlan(const PlanRequest& request, const fs::path& home) {
  absl::StatusOr<Suite> suite = LoadSuite(request.suite, home / "suites");
  if (!suite.ok()) return suite.status();
  if (absl::Status s = CheckSuiteProfilePaths(request, *suite); !s.ok()) return s;
  PlanOverrides overrides = request.overrides;
  overrides.targets = PlanTargets(*suite, overrides);
  auto profiles = LoadTargetProfiles(&overrides.targets, home / "targets");
  if (!profiles.ok()) return profiles.status();
  const ProbeEnv probe{request.base.python, request.base.probe_dir};
  if (absl::Status s = AddOwnModel(request, probe, &overrides); !s.ok()) return s;
  if (absl::Status s = AddSuiteCodeModels(*suite, probe, &overrides); !s.ok()) return s;
  if (absl::Status s = CheckBackendFlag(overrides.backend, *profiles, home, probe); !s.ok()) {
    return s;
  }
  if (absl::Status s = AddHubModels(*suite, probe, &overrides); !s.ok()) return s;
  absl::StatusOr<std::optional<ModelCatalog>> catalog = CatalogIfNeeded(*suite, overrides, probe);
  if (!catalog.ok()) return catalog.status();
  return ResolvePlan(*suite, overrides, request.base, *catalog ? &**catalog : nullptr, *profiles);
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
  if (absl::Status s = CheckHeadsFlag(flags.heads, plan); !s.ok()) return s;
  if (flags.max_measure_s.has_value()) {
    for (const ResolvedTest& t : plan) {
      if (t.execution->measure.max_time_s != *flags.max_measure_s) {
        return absl::InvalidArgumentError(
            absl::StrCat("--resume: --max-measure-s ", *flags.max_measure_s,
                         " differs from the stored plan (--max-measure-s ",
                         t.execution->measure.max_time_s, ")"));
      }
    }
  }
  if (!flags.profile.empty() && !std::all_of(plan.begin(), plan.end(), [&](const ResolvedTest& t) {
        return t.spec.IsHarness() || t.execution->profile == flags.profile;
      })) {
    return absl::InvalidArgumentError(
        "--resume: --profile differs from the stored plan (give the resume no --profile: the "
        "stored tests keep their own)");
  }
  if (flags.warm && !std::all_of(plan.begin(), plan.end(),
                                 [](const ResolvedTest& t) { return t.execution->warm; })) {
    return absl::InvalidArgumentError(
        "--resume: --warm differs from the stored plan (planned without --warm)");
  }
  return absl::OkStatus();
}

}  // namespace compatlab
