#include "query/search_hint.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace compatlab {
namespace {

bool LooksLikeHubId(const std::string& text) {
  std::string id = absl::StartsWith(text, "hub:") ? text.substr(4) : text;
  const size_t slash = id.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < id.size() &&
         id.find('/', slash + 1) == std::string::npos && id.find(' ') == std::string::npos;
}

}  // namespace

std::string RelatedModelStem(const std::string& searched) {
  std::string name = absl::StartsWith(searched, "hub:") ? searched.substr(4) : searched;
  if (absl::StartsWith(name, "hf:")) name = name.substr(3);
  if (const size_t slash = name.rfind('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  if (const size_t at = name.find('@'); at != std::string::npos) name = name.substr(0, at);
  std::string stem;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) break;
    stem += absl::ascii_tolower(static_cast<unsigned char>(c));
  }
  return stem;
}

std::string EmptySearchHint(const std::string& searched,
                            const std::vector<std::pair<std::string, int64_t>>& related) {
  std::string hint = absl::StrCat("no results for ", searched);
  std::vector<std::pair<std::string, int64_t>> named = related;
  std::stable_sort(named.begin(), named.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < named.size() && i < 3; ++i) {
    absl::StrAppend(&hint, "; ", named[i].first, " has ", named[i].second,
                    named[i].second == 1 ? " result" : " results");
  }
  std::string model = searched;
  if (LooksLikeHubId(searched) && !absl::StartsWith(searched, "hub:")) {
    model = absl::StrCat("hub:", searched);
  } else if (!LooksLikeHubId(searched)) {
    model = RelatedModelStem(searched);
  }
  if (!model.empty()) absl::StrAppend(&hint, "; run `compatlab sweep --models ", model, "`");
  return hint;
}

}  // namespace compatlab
