// What a search that found nothing says (doc/api.md, "Search"): what the store does have
// under a related name, and the command that tests what was asked for.
#ifndef COMPATLAB_QUERY_SEARCH_HINT_H_
#define COMPATLAB_QUERY_SEARCH_HINT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace compatlab {

// The name a search for `searched` relates to in the store: a Hub id's (hub:)ORG/NAME gives
// its NAME's leading letters and digits ("Qwen/Qwen3-0.6B" -> "qwen3"); any other text its
// own leading letters and digits, lower case. "" when there are none.
std::string RelatedModelStem(const std::string& searched);

// "no results for Qwen/Qwen3-0.6B; hf:qwen3 has 4 results; run `compatlab sweep --models
// hub:Qwen/Qwen3-0.6B`". `related`: (model id, runs) of the store's models matching the
// stem, most runs first (at most three are named); the command tests a Hub id when
// `searched` looks like one (ORG/NAME), else the model type.
std::string EmptySearchHint(const std::string& searched,
                            const std::vector<std::pair<std::string, int64_t>>& related);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_SEARCH_HINT_H_
