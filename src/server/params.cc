#include "server/params.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace compatlab {

absl::StatusOr<Params> Params::Parse(std::string_view target,
                                     const std::multimap<std::string, std::string>& values,
                                     const std::set<std::string>& allowed) {
  Params params;
  // The HTTP library splits "a=b=c" its own way: refuse it rather than guess.
  const size_t query_start = target.find('?');
  if (query_start != std::string::npos) {
    const std::string query(target.substr(query_start + 1));
    const std::vector<std::string> items = absl::StrSplit(query, '&');
    for (const std::string& item : items) {
      if (std::count(item.begin(), item.end(), '=') > 1) {
        return absl::InvalidArgumentError("a parameter value holds '=': percent-encode it as %3D");
      }
    }
  }
  for (const auto& [name, value] : values) {
    if (!allowed.contains(name)) {
      return absl::InvalidArgumentError(fmt::format("unknown parameter '{}'", name.substr(0, 64)));
    }
    if (params.values_.contains(name)) {
      return absl::InvalidArgumentError(fmt::format("parameter '{}' given twice", name));
    }
    if (value.size() > kMaxParamBytes) {
      return absl::InvalidArgumentError(
          fmt::format("parameter '{}' is longer than {} bytes", name, kMaxParamBytes));
    }
    for (unsigned char c : value) {
      if (c < 0x20 || c == 0x7f) {
        return absl::InvalidArgumentError(
            fmt::format("parameter '{}' holds a control character", name));
      }
    }
    params.values_[name] = value;
  }
  return params;
}

std::string Params::Canonical() const {
  std::string text;
  for (const auto& [name, value] : values_) text += name + "=" + value + "&";
  return text;
}

std::string Params::Get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

absl::StatusOr<int64_t> Params::Int(const std::string& name, int64_t fallback, int64_t min,
                                    int64_t max) const {
  const std::string text = Get(name);
  if (text.empty()) return fallback;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return absl::InvalidArgumentError(
        fmt::format("parameter '{}' must be a whole number from {} to {}", name, min, max));
  }
  return value;
}

const std::vector<std::string>& FilterNames() {
  static const std::vector<std::string> kNames = {
      "model", "model_id", "sweep_id", "target",        "mode",
      "kind",  "status",   "dtype",    "torch_version", "transformers_version"};
  return kNames;
}

std::set<std::string> Allowed(std::initializer_list<std::string> extra) {
  std::set<std::string> names(FilterNames().begin(), FilterNames().end());
  names.insert(extra.begin(), extra.end());
  return names;
}

absl::StatusOr<IndexQuery> ToIndexQuery(const Params& params) {
  IndexQuery query;
  RunFilter& f = query.filter;
  f.model = params.Get("model");
  query.model_id = params.Get("model_id");
  f.sweep_id = params.Get("sweep_id");
  f.target = params.Get("target");
  f.mode = params.Get("mode");
  f.kind = params.Get("kind");
  f.dtype = params.Get("dtype");
  f.torch_version = params.Get("torch_version");
  f.transformers_version = params.Get("transformers_version");
  if (const std::string status = params.Get("status"); !status.empty()) {
    absl::StatusOr<TestStatus> parsed = ParseTestStatus(status);
    if (!parsed.ok()) return absl::InvalidArgumentError(std::string(parsed.status().message()));
    f.status = *parsed;
  }
  return query;
}

absl::StatusOr<StackSelection> ToMatrixSelection(const Params& params) {
  const std::string stack = params.Get("stack");
  const std::string stacks = params.Get("stacks");
  if (!stack.empty() && !stacks.empty()) {
    return absl::InvalidArgumentError("parameters 'stack' and 'stacks' cannot both be given");
  }
  const bool named = !stacks.empty();
  absl::StatusOr<StackSelection> selection =
      named ? ParseNamedStacks(stacks) : ParseStackSelection(stack.empty() ? "newest" : stack);
  if (!selection.ok()) {
    std::string message(selection.status().message());
    if (message.starts_with("--stacks: ")) message.erase(0, 10);  // the CLI's flag
    return absl::InvalidArgumentError(
        fmt::format("parameter '{}': {}", named ? "stacks" : "stack", message));
  }
  return selection;
}

}  // namespace compatlab
