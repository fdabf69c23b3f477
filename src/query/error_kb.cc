#include "query/error_kb.h"

#include <set>
#include <utility>

#include "core/error_signature.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "util/fs.h"

namespace compatlab {
namespace {

using nlohmann::json;

bool IsComment(const std::string& key) { return !key.empty() && key[0] == '_'; }

bool IsValidId(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Reads the string members `required` (non-empty) and `optional` of `obj`
// into `out` (same order), refusing any other non-comment key.
absl::Status ReadStrings(const json& obj, const std::string& where,
                         const std::vector<std::pair<const char*, std::string*>>& required,
                         const std::vector<std::pair<const char*, std::string*>>& optional,
                         const std::set<std::string>& other_keys = {}) {
  if (!obj.is_object()) return absl::InvalidArgumentError(fmt::format("{}: not an object", where));
  std::set<std::string> known = other_keys;
  for (const auto& [key, out] : required) known.insert(key);
  for (const auto& [key, out] : optional) known.insert(key);
  for (const auto& [key, value] : obj.items()) {
    if (!IsComment(key) && !known.contains(key)) {
      return absl::InvalidArgumentError(fmt::format("{}: unknown key \"{}\"", where, key));
    }
  }
  auto read = [&](const char* key, std::string* out, bool needed) -> absl::Status {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (!needed) return absl::OkStatus();
      return absl::InvalidArgumentError(fmt::format("{}: missing \"{}\"", where, key));
    }
    if (!it->is_string()) {
      return absl::InvalidArgumentError(fmt::format("{}: \"{}\" is not a string", where, key));
    }
    *out = it->get<std::string>();
    if (needed && out->empty()) {
      return absl::InvalidArgumentError(fmt::format("{}: \"{}\" is empty", where, key));
    }
    return absl::OkStatus();
  };
  for (const auto& [key, out] : required) {
    if (absl::Status s = read(key, out, true); !s.ok()) return s;
  }
  for (const auto& [key, out] : optional) {
    if (absl::Status s = read(key, out, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

std::string MatchSubject(std::string_view status, std::string_view signature) {
  std::string subject(status);
  if (!signature.empty()) {
    subject += ' ';
    subject += signature;
  }
  if (subject.size() > kMaxSubjectBytes) subject.resize(kMaxSubjectBytes);
  return subject;
}

absl::StatusOr<ErrorKnowledgeBase> ErrorKnowledgeBase::Parse(std::string_view json_text,
                                                             const std::string& origin) {
  json root = json::parse(json_text, nullptr, false);
  if (root.is_discarded()) {
    return absl::InvalidArgumentError(fmt::format("{}: not valid JSON", origin));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(fmt::format("{}: not a JSON object", origin));
  }
  for (const auto& [key, value] : root.items()) {
    if (!IsComment(key) && key != "entries") {
      return absl::InvalidArgumentError(fmt::format("{}: unknown key \"{}\"", origin, key));
    }
  }
  auto entries = root.find("entries");
  if (entries == root.end() || !entries->is_array()) {
    return absl::InvalidArgumentError(fmt::format("{}: no \"entries\" array", origin));
  }
  ErrorKnowledgeBase kb;
  std::set<std::string> ids;
  for (size_t i = 0; i < entries->size(); ++i) {
    const json& item = (*entries)[i];
    KnownError entry;
    std::string where = fmt::format("{}: entry {}", origin, i);
    if (item.is_object() && item.contains("id") && item["id"].is_string()) {
      where = fmt::format("{}: entry \"{}\"", origin, item["id"].get<std::string>());
    }
    if (absl::Status s = ReadStrings(item, where,
                                     {{"id", &entry.id},
                                      {"pattern", &entry.pattern},
                                      {"explanation", &entry.explanation},
                                      {"cause", &entry.cause},
                                      {"workaround", &entry.workaround}},
                                     {}, {"observed"});
        !s.ok()) {
      return s;
    }
    if (!IsValidId(entry.id)) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the id must be lower-case letters, digits and '-'", where));
    }
    if (!ids.insert(entry.id).second) {
      return absl::InvalidArgumentError(fmt::format("{}: duplicate id", where));
    }
    auto observed = item.find("observed");
    if (observed == item.end() || !observed->is_array() || observed->empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: \"observed\" must be a non-empty array of observed failures", where));
    }
    for (size_t j = 0; j < observed->size(); ++j) {
      ObservedFailure o;
      const std::string owhere = fmt::format("{}: observed {}", where, j);
      if (absl::Status s = ReadStrings((*observed)[j], owhere,
                                       {{"model_type", &o.model_type},
                                        {"status", &o.status},
                                        {"signature", &o.signature},
                                        {"torch_version", &o.torch_version},
                                        {"transformers_version", &o.transformers_version}},
                                       {{"source", &o.source}});
          !s.ok()) {
        return s;
      }
      absl::StatusOr<TestStatus> status = ParseTestStatus(o.status);
      if (!status.ok() || *status == TestStatus::kPass || *status == TestStatus::kSkipped) {
        return absl::InvalidArgumentError(
            fmt::format("{}: \"{}\" is not a failure status", owhere, o.status));
      }
      entry.observed.push_back(std::move(o));
    }
    std::shared_ptr<const std::regex> pattern;
    try {
      pattern = std::make_shared<const std::regex>(entry.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the pattern does not compile: {}", where, e.what()));
    }
    kb.entries_.push_back(std::move(entry));
    kb.patterns_.push_back(std::move(pattern));
  }
  return kb;
}

absl::StatusOr<ErrorKnowledgeBase> ErrorKnowledgeBase::Load(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path.string());
}

const KnownError* ErrorKnowledgeBase::Match(std::string_view status,
                                            std::string_view signature) const {
  const std::string subject = MatchSubject(status, signature);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (std::regex_search(subject, *patterns_[i])) return &entries_[i];
  }
  return nullptr;
}

const KnownError* ErrorKnowledgeBase::MatchResult(const RunResult& result) const {
  return Match(TestStatusName(result.status), result.error_signature);
}

absl::Status ErrorKnowledgeBase::CheckObservedExamples() const {
  std::string problems;
  for (const KnownError& entry : entries_) {
    for (const ObservedFailure& o : entry.observed) {
      const KnownError* match = Match(o.status, o.signature);
      if (match == &entry) continue;
      problems +=
          fmt::format("{}entry \"{}\": its observed \"{}\" is {}", problems.empty() ? "" : "; ",
                      entry.id, MatchSubject(o.status, o.signature),
                      match == nullptr ? std::string("matched by no entry")
                                       : fmt::format("matched first by \"{}\"", match->id));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(problems);
}

std::filesystem::path DefaultKnowledgeBasePath() {
  return ProjectHome() / "knowledge" / "errors.json";
}

}  // namespace compatlab
