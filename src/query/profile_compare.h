// `compatlab compare --profile`: where two profiled runs of one test spend their time
// differently (doc/compare.md, "Profiles"): the time-by-category fields and the top ops
// (profile_top_ops, doc/results-schema.md, "Profile") aligned by op name and input shapes,
// ordered by how much their time per call changed.
#ifndef COMPATLAB_QUERY_PROFILE_COMPARE_H_
#define COMPATLAB_QUERY_PROFILE_COMPARE_H_

#include <optional>
#include <string>
#include <vector>

#include "core/records.h"
#include "nlohmann/json.hpp"

namespace compatlab {

// One aligned row: a category ("compute", ...) or an op with its input shapes, and its
// seconds per call on each side (nullopt: not measured there, or an op outside that
// side's top ops).
struct ProfileDelta {
  std::string name;
  std::string shapes;  // ops only
  std::optional<double> base_s;
  std::optional<double> head_s;
  // head_s - base_s where both are known, else the known side's value (signed: + for an
  // op only the head's top ops hold, - for one only the base's hold).
  double Delta() const;
};

struct ProfileComparison {
  std::vector<ProfileDelta> categories;  // in the fields' order
  std::vector<ProfileDelta> ops;         // by |Delta()|, largest first
};

// Whether `result` holds a profile summary (profile_calls set).
bool HasProfile(const RunResult& result);

// The categories of both results and their top ops aligned by (name, shapes), at most
// `max_ops` op rows. A profile_top_ops text that is not the documented JSON array (a row
// from outside) contributes no ops.
ProfileComparison CompareProfiles(const RunResult& base, const RunResult& head,
                                  size_t max_ops = 10);

// The comparison for people: an indented block of lines (categories, then ops), each
// "name  base  head  change".
std::string FormatProfileComparison(const ProfileComparison& comparison);
// {"categories": [{name, base_s, head_s, delta_s}], "ops": [{name, shapes, ...}]}.
nlohmann::ordered_json ProfileComparisonJson(const ProfileComparison& comparison);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_PROFILE_COMPARE_H_
