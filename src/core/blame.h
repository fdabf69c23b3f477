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

// The blame of a finished run, from its stored facts, in this order:
//   harness    status harness_error (compatlab itself failed);
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

// True for a run the sweep reruns once at full size or a milder reduction to
// decide whether its failure is the reduction's: an hf: or hub: model at the
// reduced size (kind_params size not full, weights not pretrained, the child did
// not report reduced 0) whose status is fail_to_load, fail_to_compile,
// fail_to_run, fail_accuracy or crash, not already blamed on compatlab's
// reference or harness. Timeouts and oom are not rerun: a larger model only
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
// reference or harness), or one that was never run (status skipped: no modelling
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
