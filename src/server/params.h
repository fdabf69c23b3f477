// The query parameters of an API request (doc/api.md): parsed and checked once,
// before any endpoint runs, and turned into the run index's query.
#ifndef COMPATLAB_SERVER_PARAMS_H_
#define COMPATLAB_SERVER_PARAMS_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/run_index.h"

namespace compatlab {

inline constexpr size_t kMaxParamBytes = 256;  // the longest parameter value taken

class Params {
 public:
  // The parameters of a request for `target` (path and query string, as sent)
  // whose decoded values are `values`. Only `allowed` names, each at most
  // once, at most kMaxParamBytes, without control characters; a value holding
  // '=' (undecoded) is refused too. InvalidArgument naming the parameter
  // otherwise.
  static absl::StatusOr<Params> Parse(std::string_view target,
                                      const std::multimap<std::string, std::string>& values,
                                      const std::set<std::string>& allowed);

  // "name=value&..." in name order: the same parameters give the same text.
  std::string Canonical() const;

  // The value of `name`, "" when absent.
  std::string Get(const std::string& name) const;

  // A whole number in [min, max]; `fallback` when absent. InvalidArgument
  // naming the parameter and the range otherwise.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback, int64_t min,
                              int64_t max) const;

 private:
  std::map<std::string, std::string> values_;
};

// The filter parameters every run selection takes (names of doc/results-schema.md).
const std::vector<std::string>& FilterNames();

// FilterNames() plus `extra`.
std::set<std::string> Allowed(std::initializer_list<std::string> extra);

// The run index's query for the filter parameters of `params`; InvalidArgument
// for an unknown status.
absl::StatusOr<IndexQuery> ToIndexQuery(const Params& params);

// The matrix's stack selection of `params` (doc/api.md, /api/matrix): `stack` (newest when
// absent: ParseStackSelection) or `stacks` (named stacks side by side, at most
// kMaxNamedStacks: ParseNamedStacks), not both. InvalidArgument naming the parameter otherwise.
absl::StatusOr<StackSelection> ToMatrixSelection(const Params& params);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_PARAMS_H_
