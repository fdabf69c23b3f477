// The listing use cases of `compatlab targets` and `compatlab suites`: the
// shipped target profiles, the shipped suites, and one suite expanded into the
// tests a sweep of it would run (through LoadPlan, so the listing and the
// sweep never disagree).
#ifndef COMPATLAB_SWEEP_LISTING_H_
#define COMPATLAB_SWEEP_LISTING_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "sweep/resolve.h"

namespace compatlab {

// The profiles of <home>/targets as a terminal table. InvalidArgument when a
// profile does not load (its error).
absl::StatusOr<std::string> TargetsTable(const std::filesystem::path& home);

// The suites of <home>/suites as a terminal table. InvalidArgument when a
// suite does not load (its error).
absl::StatusOr<std::string> SuitesTable(const std::filesystem::path& home);

enum class ListingFormat { kTable, kJson };

// The tests a sweep of `request` plans, as a table (test_id prefix, model,
// target, mode, kind and its parameters, dtype, shape, timeout) or as a JSON
// array of test specs with their test_id. `*count` = the number of tests.
// Errors: LoadPlan's (InvalidArgument for bad input, Internal when the probe's
// catalog cannot be read).
absl::StatusOr<std::string> SuitePlanListing(const PlanRequest& request,
                                             const std::filesystem::path& home,
                                             ListingFormat format, size_t* count);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_LISTING_H_
