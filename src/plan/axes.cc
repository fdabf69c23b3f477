#include "plan/axes.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/limits.h"

namespace compatlab {
namespace {

// The axes of the test matrix, the first varying slowest (models vary slower still): a new
// axis is one step and one line here.
constexpr AxisStep kAxisSteps[] = {
    TargetAxis,     // --targets
    ModeAxis,       // --modes (after the targets: compile takes its target's backend)
    KindAxis,       // --kinds
    DtypeAxis,      // --dtypes
    DynamicAxis,    // --dynamic (before the shapes: a dynamic test takes them all)
    BatchSizeAxis,  // --batch-sizes
    SeqLenAxis,     // --seq-lens
    RanksAxis,      // --ranks (after the kinds: a train test over ranks takes --parallel)
    KindParamAxis,  // each kind's parameters (after the kinds)
};

const std::set<std::string> kModes = {std::string(kModeEager), std::string(kModeCompile),
                                      std::string(kModeExport)};
const std::set<std::string> kDtypes = {"float32", "bfloat16", "float16", "float64"};

// An axis setting one field of a test to each of `values` in turn.
template <typename T>
Axis FieldAxis(std::vector<T> values, std::function<void(TestSpec&, const T&)> set) {
  return [values = std::move(values), set = std::move(set)](const TestSpec& partial) {
    std::vector<TestSpec> out;
    for (const T& value : values) {
      out.push_back(partial);
      set(out.back(), value);
    }
    return out;
  };
}

// InvalidArgument "unknown WHAT 'VALUE' (KNOWN)" for the first of `values` not in `known`.
absl::Status CheckKnown(const std::vector<std::string>& values, const std::set<std::string>& known,
                        const char* what, const char* known_text) {
  for (const std::string& v : values) {
    if (!known.count(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", what, " '", v, "' (", known_text, ")"));
    }
  }
  return absl::OkStatus();
}

// FieldAxis of batch sizes or sequence lengths, each from 1 to 1048576.
absl::StatusOr<Axis> ShapeAxis(const std::vector<int64_t>& values,
                               void (*set)(TestSpec&, const int64_t&)) {
  for (int64_t v : values) {
    if (v < 1 || v > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch sizes and sequence lengths must be from 1 to 1048576, not ", v));
    }
  }
  Axis each = FieldAxis<int64_t>(values, set);
  // A dynamic test holds every shape already (DynamicAxis).
  return [each = std::move(each)](const TestSpec& partial) {
    return partial.IsDynamic() ? std::vector<TestSpec>{partial} : each(partial);
  };
}

// --dynamic's values and what each sets TestSpec::dynamic to.
const std::map<std::string, std::string> kDynamicValues = {
    {"static", ""}, {"true", std::string(kDynamicTrue)}, {"mark", std::string(kDynamicMark)}};

// The shapes of a dynamic test of `in`'s plan: each batch size, then each sequence length.
absl::StatusOr<std::vector<Shape>> DynamicShapes(const PlanInput& in) {
  std::vector<Shape> shapes;
  for (int64_t b : Either(in.overrides.batch_sizes, in.suite.batch_sizes)) {
    for (int64_t s : Either(in.overrides.seq_lens, in.suite.seq_lens)) {
      if (std::find(shapes.begin(), shapes.end(), Shape{b, s}) == shapes.end()) {
        shapes.push_back({b, s});
      }
    }
  }
  if (shapes.empty() || shapes.size() > kMaxDynamicShapes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dynamic: a dynamic test takes 1 to ", kMaxDynamicShapes,
                     " shapes (batch sizes x sequence lengths), not ", shapes.size()));
  }
  return shapes;
}

// A positive finite number of at most `max` from `text`, else nullopt.
std::optional<double> ParsePositive(const std::string& text, double max) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value <= 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

// "0.90x" -> "0.9x": a multiple of the offline throughput, canonical.
absl::StatusOr<std::string> CanonicalLoadRate(const std::string& rate) {
  std::optional<double> value;
  if (rate.size() > 1 && rate.back() == 'x') {
    value = ParsePositive(rate.substr(0, rate.size() - 1), 1000);
  }
  if (!value) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rates: '", rate,
                     "' is not a multiple of the offline throughput above 0 and at most "
                     "1000 followed by x (like 0.9x)"));
  }
  return absl::StrCat(*value, "x");
}

// "itl=0.05,ttft=0.5" -> "ttft=0.5,itl=0.05": both objectives in seconds, canonical.
absl::StatusOr<std::string> CanonicalLoadSlo(const std::string& slo) {
  std::map<std::string, double> parts;
  const std::vector<std::string> given = absl::StrSplit(slo, ',');
  for (const std::string& part : given) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    std::optional<double> value = ParsePositive(kv.second, 604800);
    if ((kv.first != "ttft" && kv.first != "itl") || !value || parts.count(kv.first)) {
      parts.clear();
      break;
    }
    parts[kv.first] = *value;
  }
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slo: '", slo, "' is not ttft=SECONDS,itl=SECONDS (both above 0)"));
  }
  return absl::StrCat("ttft=", parts["ttft"], ",itl=", parts["itl"]);
}

using KindParams = std::map<std::string, std::string>;

// Kind load's rows: single_stream, offline, then one server row per distinct rate, each
// with `base`'s parameters.
absl::StatusOr<std::vector<KindParams>> LoadVariants(const KindParams& base,
                                                     const PlanOverrides& overrides) {
  std::vector<KindParams> variants;
  for (const char* scenario : {"single_stream", "offline"}) {
    variants.push_back(base);
    variants.back()["scenario"] = scenario;
  }
  std::set<std::string> seen;
  for (const std::string& given :
       overrides.load_rates.empty() ? kDefaultLoadRates : overrides.load_rates) {
    absl::StatusOr<std::string> rate = CanonicalLoadRate(given);
    if (!rate.ok()) return rate.status();
    if (!seen.insert(*rate).second) continue;  // --rates 0.5x,0.50x
    variants.push_back(base);
    variants.back()["scenario"] = "server";
    variants.back()["rate"] = *rate;
  }
  return variants;
}

}  // namespace

absl::StatusOr<Axis> TargetAxis(const PlanInput& in) {
  const std::vector<std::string>& targets = Either(in.overrides.targets, in.suite.targets);
  for (const std::string& t : targets) {
    if (!in.profiles.count(t)) {
      return absl::InternalError(absl::StrCat("no profile for target ", t));
    }
  }
  return FieldAxis<std::string>(targets, [](TestSpec& s, const std::string& t) { s.target = t; });
}

absl::StatusOr<Axis> ModeAxis(const PlanInput& in) {
  const std::vector<std::string>& modes = Either(in.overrides.modes, in.suite.modes);
  if (absl::Status s = CheckKnown(modes, kModes, "mode", "eager, compile, export"); !s.ok()) {
    return s;
  }
  std::map<std::string, std::string> backend_of;  // by target
  for (const auto& [name, profile] : in.profiles) {
    backend_of[name] = in.overrides.backend.empty() ? profile.backend : in.overrides.backend;
  }
  return FieldAxis<std::string>(modes, [backend_of](TestSpec& s, const std::string& mode) {
    s.mode = mode;
    if (mode == kModeCompile) s.backend = backend_of.at(s.target);
  });
}

absl::StatusOr<Axis> KindAxis(const PlanInput& in) {
  const std::vector<std::string>& kinds = Either(in.overrides.kinds, in.suite.kinds);
  for (const std::string& k : kinds) {
    if (!IsModelKind(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", k, "' is not a model kind (forward, generate, train, load)"));
    }
  }
  return FieldAxis<std::string>(kinds, [](TestSpec& s, const std::string& k) { s.kind = k; });
}

absl::StatusOr<Axis> DtypeAxis(const PlanInput& in) {
  const std::vector<std::string>& dtypes = Either(in.overrides.dtypes, in.suite.dtypes);
  if (absl::Status s = CheckKnown(dtypes, kDtypes, "dtype", "float32, bfloat16, float16, float64");
      !s.ok()) {
    return s;
  }
  return FieldAxis<std::string>(dtypes, [](TestSpec& s, const std::string& d) { s.dtype = d; });
}

absl::StatusOr<Axis> DynamicAxis(const PlanInput& in) {
  const std::vector<std::string>& values = Either(in.overrides.dynamic, in.suite.dynamic);
  std::vector<std::string> dynamic;  // TestSpec::dynamic of each value
  for (const std::string& v : values) {
    auto it = kDynamicValues.find(v);
    if (it == kDynamicValues.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown --dynamic '", v, "' (static, true, mark)"));
    }
    if (std::find(dynamic.begin(), dynamic.end(), it->second) != dynamic.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--dynamic names '", v, "' twice"));
    }
    dynamic.push_back(it->second);
  }
  const bool any =
      std::any_of(dynamic.begin(), dynamic.end(), [](const std::string& d) { return !d.empty(); });
  const std::vector<std::string>& modes = Either(in.overrides.modes, in.suite.modes);
  const std::vector<std::string>& kinds = Either(in.overrides.kinds, in.suite.kinds);
  if (any && (std::find(modes.begin(), modes.end(), kModeCompile) == modes.end() ||
              std::find(kinds.begin(), kinds.end(), "forward") == kinds.end())) {
    return absl::InvalidArgumentError(
        "--dynamic true or mark applies to mode compile's forward tests: the plan has none "
        "(--modes compile --kinds forward)");
  }
  absl::StatusOr<std::vector<Shape>> shapes = DynamicShapes(in);
  if (any && !shapes.ok()) return shapes.status();
  const std::string text = shapes.ok() ? ShapesText(*shapes) : "";
  const Shape first = shapes.ok() ? shapes->front() : Shape{};
  return [dynamic, text, first](const TestSpec& partial) {
    // Only a compiled forward test has dynamic shapes; every other test is static, once.
    if (!partial.IsCompiled() || partial.kind != "forward") return std::vector<TestSpec>{partial};
    std::vector<TestSpec> out;
    for (const std::string& d : dynamic) {
      out.push_back(partial);
      if (d.empty()) continue;
      out.back().dynamic = d;
      out.back().shapes = text;
      out.back().batch_size = first.batch_size;
      out.back().seq_len = first.seq_len;
    }
    return out;
  };
}

absl::StatusOr<Axis> BatchSizeAxis(const PlanInput& in) {
  return ShapeAxis(Either(in.overrides.batch_sizes, in.suite.batch_sizes),
                   [](TestSpec& s, const int64_t& v) { s.batch_size = v; });
}

absl::StatusOr<Axis> SeqLenAxis(const PlanInput& in) {
  return ShapeAxis(Either(in.overrides.seq_lens, in.suite.seq_lens),
                   [](TestSpec& s, const int64_t& v) { s.seq_len = v; });
}

absl::StatusOr<Axis> RanksAxis(const PlanInput& in) {
  const std::vector<int64_t>& ranks = Either(in.overrides.ranks, in.suite.ranks);
  for (int64_t r : ranks) {
    if (r < 1 || r > kMaxRanks) {
      return absl::InvalidArgumentError(
          absl::StrCat("ranks must be from 1 to ", kMaxRanks, ", not ", r));
    }
  }
  const std::string parallel = in.overrides.parallel.empty() ? "tp" : in.overrides.parallel;
  if (parallel != "tp" && parallel != "dp") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --parallel '", parallel, "' (tp, dp)"));
  }
  // --parallel given with one rank: a process group of one (the backend's path, no split).
  const bool group_of_one = !in.overrides.parallel.empty();
  return FieldAxis<int64_t>(ranks, [parallel, group_of_one](TestSpec& s, const int64_t& r) {
    s.ranks = r;
    if ((r > 1 && s.kind == "train") || (r == 1 && group_of_one)) {
      s.kind_params["parallel"] = parallel;
    }
  });
}

absl::StatusOr<Axis> KindParamAxis(const PlanInput& in) {
  std::map<std::string, std::vector<KindParams>> variants;  // by kind
  for (const std::string& k : Either(in.overrides.kinds, in.suite.kinds)) {
    absl::StatusOr<std::vector<KindParams>> v = KindParamVariants(k, in.overrides);
    if (!v.ok()) return v.status();
    variants[k] = *std::move(v);
  }
  return [variants](const TestSpec& partial) {
    std::vector<TestSpec> out;
    for (const KindParams& params : variants.at(partial.kind)) {
      out.push_back(partial);
      out.back().kind_params.insert(params.begin(), params.end());
    }
    return out;
  };
}

absl::StatusOr<std::vector<Axis>> PlanAxes(const PlanInput& in) {
  std::vector<Axis> axes;
  for (AxisStep step : kAxisSteps) {
    absl::StatusOr<Axis> axis = step(in);
    if (!axis.ok()) return axis.status();
    axes.push_back(*std::move(axis));
  }
  return axes;
}

std::vector<TestSpec> AxisProduct(std::vector<TestSpec> partials, const std::vector<Axis>& axes) {
  for (const Axis& axis : axes) {
    std::vector<TestSpec> next;
    for (const TestSpec& partial : partials) {
      std::vector<TestSpec> along = axis(partial);
      next.insert(next.end(), std::make_move_iterator(along.begin()),
                  std::make_move_iterator(along.end()));
    }
    partials = std::move(next);
  }
  return partials;
}

absl::StatusOr<std::vector<KindParams>> KindParamVariants(const std::string& kind,
                                                          const PlanOverrides& overrides) {
  const std::string new_tokens = std::to_string(overrides.new_tokens.value_or(kDefaultNewTokens));
  if (kind == "generate") return std::vector<KindParams>{{{"new_tokens", new_tokens}}};
  if (kind == "train") {
    return std::vector<KindParams>{
        {{"steps", std::to_string(overrides.train_steps.value_or(kDefaultTrainSteps))}}};
  }
  if (kind != "load") return std::vector<KindParams>(1);
  const int64_t requests = overrides.load_requests.value_or(kDefaultLoadRequests);
  if (requests < 1 || requests > 4096) {
    return absl::InvalidArgumentError("--load-requests must be from 1 to 4096");
  }
  KindParams base = {{"new_tokens", new_tokens}, {"requests", std::to_string(requests)}};
  if (!overrides.load_slo.empty()) {
    absl::StatusOr<std::string> slo = CanonicalLoadSlo(overrides.load_slo);
    if (!slo.ok()) return slo.status();
    base["slo"] = *slo;
  }
  return LoadVariants(base, overrides);
}

}  // namespace compatlab
