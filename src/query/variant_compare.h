// `compatlab compare`: a variant against its baseline, test by test (doc/compare.md).
// Each side is a selector: a model id, a sweep or stack versions, or several of them
// ("model=code:attn.build@0123abcd,sweep=ID"). The runs of the two sides are paired and
// compared by diff's own code (query/diff.h, DiffRuns: pairing by key, current run per key,
// the per-field change rule), so that compare and diff never disagree on what is a change;
// when a side selects a model, tests pair across models: by everything but the model.
#ifndef COMPATLAB_QUERY_VARIANT_COMPARE_H_
#define COMPATLAB_QUERY_VARIANT_COMPARE_H_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "nlohmann/json.hpp"
#include "query/diff.h"

namespace compatlab {

// One side of a compare: diff's side (sweep, torch, transformers) and a model id.
struct CompareSide {
  DiffSide runs;
  std::string model_id;  // exact; "" = every model
  // The side given as one bare word ("llama", "20261130T022435Z-1a2b3c"), else "": the
  // sweep of that id when that sweep has runs, else the model of that type (ModelTypeSide);
  // `compare` and `/api/compare` resolve it alike.
  std::string bare_word;

  // "model=hf:llama,sweep=ID": the set members.
  std::string Describe() const;
};

// "hf:llama", "code:NAME@HASH", "hub:...", "ckpt:..." (a model id), a bare word (a sweep id
// or a model type: bare_word), or comma-separated key=value pairs with the keys of
// ParseDiffSide and model (model=llama is model=hf:llama). InvalidArgument as ParseDiffSide,
// or for model given twice.
absl::StatusOr<CompareSide> ParseCompareSide(std::string_view text);

// The side a bare word names when no sweep of that id has runs: the model of that type ("llama":
// model=hf:llama), its bare_word kept.
CompareSide ModelTypeSide(const CompareSide& bare);

// The key a test pairs by when the sides are different models: its test id with the
// model (id, type, class, path) and the model's loading settings (trust_remote_code)
// left out. Same shape, target, mode, kind, dtype and kind parameters: same key.
std::string CrossModelKey(const TestSpec& spec);

// One paired test: its current run on each side and diff's changes between them.
struct ComparedTest {
  RunRecord base;
  RunRecord head;
  std::vector<Change> changes;  // from DiffRuns; indices refer to the report's runs
};

struct VariantReport {
  std::string base_name;
  std::string head_name;
  bool cross_model = false;         // paired by CrossModelKey, not test_id
  std::vector<ComparedTest> tests;  // by key
  std::vector<RunRecord> only_in_base;
  std::vector<RunRecord> only_in_head;
  int64_t regressions = 0;   // diff's count over the paired tests
  int64_t improvements = 0;  // likewise
};

// Pairs `base_runs` with `head_runs` through DiffRuns (by CrossModelKey when
// `cross_model`, else by test_id) and keeps each pair's figures and changes.
VariantReport CompareVariant(std::vector<RunRecord> base_runs, std::vector<RunRecord> head_runs,
                             bool cross_model, const DiffThresholds& thresholds = {});

// head / base of two positive figures; nullopt when either is missing or not positive.
std::optional<double> Ratio(std::optional<double> base, std::optional<double> head);

// Where head / base lies given the two figures' intervals (diff's SteadyInterval or
// PrepareInterval, a noisy row's widened): [head.low / base.high, head.high / base.low];
// nullopt when either is missing or base's low end is not positive. The ratio is a
// change only where diff's rule says so (the intervals apart), never by this range alone.
std::optional<TimingInterval> RatioInterval(std::optional<TimingInterval> base,
                                            std::optional<TimingInterval> head);

// The report for people: one table of every paired test (statuses, the head's accuracy
// against its own reference and, for a code model, against its baseline's reference
// (baseline_max_abs_err / baseline_cosine), prepare and steady ratios head/base with the
// ranges their intervals allow (RatioInterval), tokens/s, graph
// breaks, fallback ops, memory, diff's changes), the unpaired tests, one summary line.
std::string FormatVariantReport(const VariantReport& report);
// The same as one JSON object (doc/compare.md): `compare --format json` (text ending in
// '\n') and serve's /api/compare.
nlohmann::ordered_json VariantReportToJson(const VariantReport& report);
std::string VariantReportJson(const VariantReport& report);

struct VariantCompareOptions {
  std::filesystem::path db;
  std::string base;  // a selector (ParseCompareSide)
  std::string head;
  bool json = false;
  DiffThresholds thresholds;
  // --profile: after the report, each paired test profiled on both sides with its
  // categories and the ops whose time changed most (query/profile_compare.h); JSON: the
  // report's "profiles" array.
  bool profile = false;
};

// The profile comparisons of `report`'s paired tests profiled on both sides: text (one
// block per test after a heading line) or, with `json`, the array of {target, mode, kind,
// dtype, shape, base_run_id, head_run_id, categories, ops}.
std::string FormatProfileComparisons(const VariantReport& report);
nlohmann::ordered_json ProfileComparisonsJson(const VariantReport& report);

// Reads both sides from the store and reports. Errors: InvalidArgument for a bad
// selector, an unknown sweep or a side without runs; FailedPrecondition when the store
// cannot be opened; Internal when it cannot be read.
absl::StatusOr<std::string> RunVariantCompare(const VariantCompareOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_VARIANT_COMPARE_H_
