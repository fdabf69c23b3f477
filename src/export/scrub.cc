#include "export/scrub.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/fields.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kVenvToken = "<venv>";
constexpr std::string_view kCacheToken = "<cache>";
constexpr std::string_view kHomeToken = "<home>";
constexpr std::string_view kCheckoutToken = "<checkout>";

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// A byte that may continue a path component (a path ends before any other).
bool IsComponentChar(char c) { return IsWordChar(c) || c == '.' || c == '-' || c == '+'; }

// A byte that ends a path token: whitespace, quotes, brackets, separators.
bool EndsPath(char c) {
  return static_cast<unsigned char>(c) <= ' ' ||
         std::string_view("\"'`()[]{}<>,;:|=").find(c) != std::string_view::npos;
}

// `text` with every occurrence of `path` that is not followed by more of a
// path component replaced by `token`.
std::string ReplacePath(std::string_view text, std::string_view path, std::string_view token) {
  std::string out;
  size_t from = 0;
  while (true) {
    size_t at = text.find(path, from);
    while (at != std::string_view::npos && at + path.size() < text.size() &&
           IsComponentChar(text[at + path.size()])) {
      at = text.find(path, at + 1);
    }
    if (at == std::string_view::npos) break;
    out.append(text.substr(from, at - from)).append(token);
    from = at + path.size();
  }
  out.append(text.substr(from));
  return out;
}

// `text` with every occurrence of `name` standing as a word replaced by
// `token`; an occurrence that is a token itself ("<user>") is left alone.
std::string ReplaceWord(std::string_view text, std::string_view name, std::string_view token) {
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const size_t end = at + name.size();
    const bool starts = at == 0 || !IsWordChar(text[at - 1]);
    const bool ends = end == text.size() || !IsWordChar(text[end]);
    const bool is_token = at > 0 && text[at - 1] == '<' && end < text.size() && text[end] == '>';
    if (!starts || !ends || is_token || at < from) continue;
    out.append(text.substr(from, at - from)).append(token);
    from = end;
  }
  out.append(text.substr(from));
  return out;
}

// The end of the path component that starts at `start` of `path`.
size_t ComponentEnd(std::string_view path, size_t start) {
  const size_t slash = path.find('/', start);
  return slash == std::string_view::npos ? path.size() : slash;
}

// `path` (one path token) with any machine's private prefix rewritten:
// site-packages, a compile cache, a home directory.
std::string ScrubPathToken(std::string_view path) {
  for (std::string_view packages : {"/site-packages", "/dist-packages"}) {
    const size_t at = path.find(packages);
    if (at == std::string_view::npos) continue;
    if (at + packages.size() < path.size() && path[at + packages.size()] != '/') continue;
    const size_t lib = path.rfind("/lib/python", at);
    return std::string(kVenvToken) + std::string(path.substr(lib != path.npos ? lib : at));
  }
  for (std::string_view cache : {"/compatlab-cache-", "/compatlab-seed-", "/torchinductor_"}) {
    const size_t at = path.find(cache);
    if (at == std::string_view::npos) continue;
    return std::string(kCacheToken) + std::string(path.substr(ComponentEnd(path, at + 1)));
  }
  const size_t first = path.find_first_not_of('/');
  if (first == std::string_view::npos || first == 0) return std::string(path);
  const std::string_view rest = path.substr(first - 1);  // from the last leading '/'
  for (std::string_view home : {"/home/", "/Users/"}) {
    if (rest.starts_with(home) && rest.size() > home.size()) {
      return std::string(path.substr(0, first - 1)) + std::string(kHomeToken) +
             std::string(rest.substr(ComponentEnd(rest, home.size())));
    }
  }
  if (rest == "/root" || rest.starts_with("/root/")) {
    return std::string(path.substr(0, first - 1)) + std::string(kHomeToken) +
           std::string(rest.substr(5));
  }
  return std::string(path);
}

// Whether text[0, end) ends with a token the scrubber wrote ("<venv>", ...):
// the path after it is already scrubbed.
bool EndsWithToken(std::string_view text, size_t end) {
  const std::string_view before = text.substr(0, end);
  for (std::string_view token : {kVenvToken, kCacheToken, kHomeToken, kCheckoutToken}) {
    if (before.ends_with(token)) return true;
  }
  return false;
}

// `text` with every path token ('/' after a byte that ends a path, not
// after a token) scrubbed.
std::string ScrubPathTokens(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '/' || (i > 0 && (!EndsPath(text[i - 1]) || EndsWithToken(text, i)))) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && !EndsPath(text[end])) ++end;
    out += ScrubPathToken(text.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string EnvOr(const char* name, std::string fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// Adds `path` and its canonical form (when they differ) under `token`.
void AddPath(PrivateText& p, const std::string& path, std::string_view token) {
  if (path.empty()) return;
  std::set<std::string> forms = {fs::path(path).lexically_normal().string()};
  std::error_code error;
  const fs::path canonical = fs::canonical(path, error);
  if (!error) forms.insert(canonical.string());
  for (std::string form : forms) {
    while (form.size() > 1 && form.back() == '/') form.pop_back();
    if (form.size() > 1) p.paths.emplace_back(form, std::string(token));
  }
}

}  // namespace

PrivateText ThisMachinesPrivateText() {
  PrivateText p;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0 && host[0] != '\0') {
    const std::string name(host.data());
    p.hosts.push_back(name);
    if (const size_t dot = name.find('.'); dot != std::string::npos && dot > 0) {
      p.hosts.push_back(name.substr(0, dot));
    }
  }
  const passwd* entry = getpwuid(geteuid());
  std::set<std::string> users;
  if (entry != nullptr && entry->pw_name != nullptr) users.insert(entry->pw_name);
  for (const char* name : {"USER", "LOGNAME"}) {
    if (std::string user = EnvOr(name); !user.empty()) users.insert(user);
  }
  p.users.assign(users.begin(), users.end());
  const std::string home = EnvOr("HOME");
  const std::string checkout = ProjectHome().string();
  AddPath(p, EnvOr("VIRTUAL_ENV"), kVenvToken);
  if (!checkout.empty()) AddPath(p, (fs::path(checkout) / ".venv").string(), kVenvToken);
  const std::string home_cache = home.empty() ? "" : home + "/.cache";
  for (const char* cache :
       {"HF_HOME", "HF_HUB_CACHE", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}) {
    AddPath(p, EnvOr(cache), kCacheToken);
  }
  AddPath(p, EnvOr("XDG_CACHE_HOME", home_cache), kCacheToken);
  AddPath(p, checkout, kCheckoutToken);
  AddPath(p, home, kHomeToken);
  if (entry != nullptr && entry->pw_dir != nullptr) AddPath(p, entry->pw_dir, kHomeToken);
  // Longest first: a cache under the home directory is a cache.
  std::stable_sort(p.paths.begin(), p.paths.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return p;
}

std::string ScrubText(std::string_view text, const PrivateText& p) {
  std::string out(text);
  for (const auto& [path, token] : p.paths) {
    if (out.find(path) != std::string::npos) out = ReplacePath(out, path, token);
  }
  out = ScrubPathTokens(out);
  for (const std::string& user : p.users) {
    if (!user.empty() && out.find(user) != std::string::npos)
      out = ReplaceWord(out, user, "<user>");
  }
  for (const std::string& host : p.hosts) {
    if (!host.empty() && out.find(host) != std::string::npos)
      out = ReplaceWord(out, host, "<host>");
  }
  return out;
}

bool ScrubRun(RunRecord& run, const PrivateText& p) {
  bool changed = false;
  for (const FieldDef& field : ResultFields()) {
    if (field.type != FieldType::kText || field.list != ListKind::kNone || field.name == "run_id" ||
        field.name == "sweep_id" || field.name == "test_id" || field.name == "kind_params") {
      continue;
    }
    const FieldValue value = field.get(run);
    const auto* text = std::get_if<std::string>(&value);
    if (text == nullptr) continue;
    std::string scrubbed = ScrubText(*text, p);
    if (scrubbed != *text && field.set(FieldValue(std::move(scrubbed)), run).ok()) changed = true;
  }
  std::map<std::string, std::string> params;
  for (const auto& [key, value] : run.spec.kind_params) {
    params.emplace(ScrubText(key, p), ScrubText(value, p));
  }
  if (params != run.spec.kind_params) {
    run.spec.kind_params = std::move(params);
    changed = true;
  }
  if (changed) run.test_id = run.spec.TestId();
  return changed;
}

}  // namespace compatlab
