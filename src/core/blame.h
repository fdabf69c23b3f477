// Whose failure a run is (doc/results-schema.md, "Blame"): the model's, or
// compatlab's own (its CPU reference, the harness; its reduced configuration
// only once a rerun proves it). A run blamed on anything but the model is one
// compatlab could not test; a pass rate is passes over the runs blamed on the
// model.
#ifndef COMPATLAB_CORE_BLAME_H_
#define COMPATLAB_CORE_BLAME_H_

#include <string>
#include <string_view>

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
//   model      everything else, passes included (the default).
// "reduction" needs a proof this version does not run yet (a rerun at full size
// or a milder reduction that does not fail with the same signature; matching
// the error text is not proof), so no run is blamed on the reduction.
std::string Blame(const RunResult& result);

// True for the runs a pass rate counts: blame is empty (rows stored before
// schema version 6) or model.
bool BlamedOnModel(const RunResult& result);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_BLAME_H_
