// Whose failure a run is (doc/results-schema.md, "Blame"): the model's, or
// compatlab's own (its CPU reference, the harness; its reduced configuration
// only once a rerun proves it). A run blamed on anything but the model is one
// compatlab could not test; a pass rate is passes over the runs blamed on the
// model.
#ifndef COMPATLAB_CORE_BLAME_H_
#define COMPATLAB_CORE_BLAME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.h"

namespace compatlab {

inline constexpr std::string_view kBlameModel = "model";
inline constexpr std::string_view kBlameReduction = "reduction";
inline constexpr std::string_view kBlameReference = "reference";
inline constexpr std::string_view kBlameHarness = "harness";
inline constexpr std::string_view kBlameEnvironment = "environment";

// The packages a failure's error message says the environment lacks, in the
// order named, each once: "X" of transformers' "requires the X library but it
// was not found" (any sentence that goes on to say "not found": "library >= N
// it was not found", "library version >=N. That library was not found with this
// version"; non-ASCII and spaces at its ends dropped: "Datasets" of "🤗
// Datasets") and the top-level module of
// Python's "No module named 'X.y'" unless it is torch, transformers or
// compatlab_probe (a submodule missing from a package that is there is that
// package's own failure, not a missing package). Empty for a pass, a skip or
// a message that names none.
std::vector<std::string> MissingPackages(const RunResult& result);

// MissingPackages(result) as stored in RunResult::missing_packages: the names
// joined with ", " ("PIL, timm"); "" when there are none.
std::string MissingPackagesText(const RunResult& result);

// How a run blamed on the environment is shown where its status is (query's
// table, the web page's run badge): "not tested here: needs PIL, timm"; "" for
// any other blame.
std::string NotTestedHereText(const RunResult& result);

// For a row stored or exported before schema version 19 (read or imported):
// sets missing_packages from the stored error message when it is empty, and
// blame to environment when it names a package and the row was the model's.
// A no-op for every row this compatlab recorded.
void FillMissingPackages(RunResult* result);

// The blame of a finished run, from its stored facts, in this order:
//   harness    status harness_error (compatlab itself failed);
//   environment  a failure whose error message names a package the
//              environment lacks (MissingPackages not empty): compatlab's
//              environment could not run the model, the model did not fail;
//   reference  a failure at stage compare other than fail_accuracy (the CPU
//              reference, run after every measured phase, ran out of memory
//              or failed);
//   reduction  the sweep reran the reduced model's failure (NeedsReductionRerun)
//              at full size or a milder reduction (rerun_status set), the rerun
//              was conclusive (RerunIsConclusive) and its error signature is not
//              the run's (error_signature, already set): the reduction failed,
//              not the model. Matching the error text is not proof;
//   model      everything else, passes included (the default).
std::string Blame(const RunResult& result);

// True for a test whose model the plan builds reduced: an hf: or hub: model without
// kind_params size full or pretrained weights. Such a test is timed with one intra-op
// thread (sweep/execute.h) and its failure may be rerun (NeedsReductionRerun).
bool PlannedReduced(const TestSpec& spec);

// True for a run the sweep reruns once at full size or a milder reduction to
// decide whether its failure is the reduction's: an hf: or hub: model at the
// reduced size (kind_params size not full, weights not pretrained, the child did
// not report reduced 0) whose status is fail_to_load, fail_to_compile,
// fail_to_run, fail_accuracy or crash, not already blamed on compatlab's
// reference, harness or environment. Timeouts and oom are not rerun: a larger model only
// takes longer and more memory.
bool NeedsReductionRerun(const TestSpec& spec, const RunResult& result);

// True for a rerun status that says something about the model: every status
// but timeout, oom, skipped and harness_error (a rerun that could not finish
// proves nothing, so the run stays the model's).
bool RerunIsConclusive(TestStatus rerun_status);

// True for the runs blamed on the model: blame is empty (rows stored before
// schema version 6) or model.
bool BlamedOnModel(const RunResult& result);
// The same for a stored blame text.
bool BlamedOnModel(std::string_view blame);

// Where a run counts in a pass rate (PassRate): a test the model ran (pass or one
// of its failures), one compatlab could not test (blamed on its reduction,
// reference, harness or environment), or one that was never run (status skipped: no modelling
// class, a kind or mode the model or target does not take).
enum class PassRateRole { kModelRun, kNotModel, kSkipped };
PassRateRole PassRateRoleOf(TestStatus status, std::string_view blame);

// A pass rate: passes over the runs blamed on the model that were tested; the
// others (compatlab could not test them) and the skipped ones are counted apart.
// One rule for the summary, diff, expected-status files and serve.
struct PassRate {
  int64_t passes = 0;
  int64_t model_runs = 0;
  int64_t not_model = 0;
  int64_t skipped = 0;

  void Add(TestStatus status, std::string_view blame);
  void Add(const RunResult& result) { Add(result.status, result.blame); }
  // passes / model_runs; nullopt when no run is the model's.
  std::optional<double> Rate() const;
  // "50.0% (1 of 2 runs blamed on the model; 1 not the model's; 3 skipped)", or
  // "- (no run blamed on the model; N not the model's)"; a count of 0 is left out.
  std::string Describe() const;
};

// The pass rate of `runs`, one per test (e.g. the current run of each).
PassRate PassRateOf(const std::vector<RunRecord>& runs);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_BLAME_H_
