#include "stack/stack.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <system_error>

#include "nlohmann/json.hpp"
#include "util/fs.h"
#include "util/hash.h"
#include "util/subprocess.h"
#include "util/time.h"

namespace compatlab {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxStackNameChars = 40;
constexpr size_t kMaxPackageNameChars = 100;
constexpr size_t kMaxVersionChars = 64;
constexpr size_t kEnvIdChars = 16;
constexpr double kPipTimeoutS = 3600;
constexpr double kCheckTimeoutS = 600;

// The parts (anything a std::string_view takes) joined: Debian's abseil has its own
// string_view, so absl::StrCat takes no std::string_view.
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// `text` without leading and trailing ASCII white space.
std::string_view Strip(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// The lines of `text` (without their '\n'), empty ones included.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// PEP 503's normal form: lower case, every run of '-', '_' and '.' one '-'.
std::string NormalizePackageName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool IsPackageName(std::string_view name) {
  if (name.empty() || name.size() > kMaxPackageNameChars) return false;
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsVersion(std::string_view version) {
  if (version.empty() || version.size() > kMaxVersionChars || !IsAlnum(version.front())) {
    return false;
  }
  return std::all_of(version.begin(), version.end(), [](char c) {
    return IsAlnum(c) || c == '.' || c == '+' || c == '!' || c == '_' || c == '-';
  });
}

bool IsEnvId(std::string_view id) {
  return id.size() == kEnvIdChars && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

fs::path EnvsDir(const StackHome& home) { return home.dir / "envs"; }
fs::path NamesDir(const StackHome& home) { return home.dir / "names"; }
fs::path RecordPath(const StackHome& home, std::string_view name) {
  return NamesDir(home) / Cat(name, ".json");
}
fs::path EnvPython(const fs::path& env) { return env / "bin" / "python"; }

// The site-packages directory of the venv or installation whose interpreter is `python`
// (<prefix>/bin/python → <prefix>/lib/python3.X/site-packages), or "" when there is none.
fs::path SitePackagesOf(const fs::path& python) {
  const fs::path lib = python.parent_path().parent_path() / "lib";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(lib, ec)) {
    const std::string dir = entry.path().filename().string();
    if (dir.rfind("python", 0) == 0 && fs::is_directory(entry.path() / "site-packages", ec)) {
      return entry.path() / "site-packages";
    }
  }
  return {};
}

// "torch 2.13.0" asked of a torch reporting "2.13.0+cpu": the release matches.
bool VersionMatches(std::string_view asked, std::string_view got) {
  if (asked == got) return true;
  return asked.find('+') == std::string_view::npos && got.substr(0, got.find('+')) == asked;
}

std::string PinText(const PackagePin& pin) { return Cat(pin.name, "==", pin.version); }

const PackagePin* FindPin(const std::vector<PackagePin>& pins, std::string_view name) {
  auto it = std::find_if(pins.begin(), pins.end(),
                         [name](const PackagePin& p) { return p.name == name; });
  return it == pins.end() ? nullptr : &*it;
}

// The last line of pip's stderr that says something.
std::string LastLine(std::string_view text) {
  std::string_view last;
  for (std::string_view line : Lines(text)) {
    if (!Strip(line).empty()) last = Strip(line);
  }
  return last.empty() ? std::string("no output") : std::string(last);
}

// pip's refusal as one line: NotFound naming the package pip could not find, else Internal.
absl::Status PipFailure(const CommandResult& result) {
  for (std::string_view marker : {"No matching distribution found for ",
                                  "Could not find a version that satisfies the requirement "}) {
    size_t at = result.stderr_text.find(marker);
    if (at == std::string::npos) continue;
    std::string_view rest = std::string_view(result.stderr_text).substr(at + marker.size());
    std::string_view what = rest.substr(0, rest.find_first_of(" \n"));
    return absl::NotFoundError(
        Cat("cannot install ", what, ": no such release in the package registries"));
  }
  return absl::InternalError(Cat("pip failed: ", LastLine(result.stderr_text)));
}

// pip of the default environment installing `args` into the venv of `env_python`.
absl::Status PipInstall(const StackHome& home, const fs::path& env_python,
                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {home.default_python.string(),
                                   "-m",
                                   "pip",
                                   "--python",
                                   env_python.string(),
                                   "install",
                                   "--disable-pip-version-check",
                                   "--no-input",
                                   "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> result = RunCommand(argv, {}, kPipTimeoutS);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) return PipFailure(*result);
  return absl::OkStatus();
}

// The default environment's facts a stack is made against.
struct DefaultEnv {
  fs::path site_packages;
  std::map<std::string, std::string> packages;
};

absl::StatusOr<DefaultEnv> ReadDefaultEnv(const StackHome& home) {
  DefaultEnv env;
  env.site_packages = SitePackagesOf(home.default_python);
  if (env.site_packages.empty()) {
    return absl::FailedPreconditionError(
        Cat("cannot find the site-packages of the default environment's ",
            home.default_python.string(), " (run `make python`)"));
  }
  env.packages = InstalledPackages(env.site_packages);
  return env;
}

// Whether `request` takes the default environment's torch (then it is an overlay).
bool SameTorch(const StackRequest& request, const DefaultEnv& env) {
  const PackagePin* torch = FindPin(request.pins, "torch");
  auto have = env.packages.find("torch");
  return torch != nullptr && have != env.packages.end() &&
         VersionMatches(torch->version, have->second);
}

std::vector<std::string> PinTexts(const std::vector<PackagePin>& pins, bool with_torch) {
  std::vector<std::string> out;
  for (const PackagePin& pin : pins) {
    if (with_torch || pin.name != "torch") out.push_back(PinText(pin));
  }
  return out;
}

// The overlay: the asked packages but torch, --no-deps, and a .pth that puts the default
// environment's site-packages after the venv's own.
absl::Status MakeOverlay(const StackHome& home, const StackRequest& request, const DefaultEnv& env,
                         const fs::path& venv) {
  std::vector<std::string> args = {"--no-deps"};
  for (const std::string& pin : PinTexts(request.pins, false)) args.push_back(pin);
  if (absl::Status s = PipInstall(home, EnvPython(venv), args); !s.ok()) return s;
  const fs::path site = SitePackagesOf(EnvPython(venv));
  if (site.empty()) return absl::InternalError("the new venv has no site-packages");
  return WriteFileAtomic(site / "zz_compatlab_default.pth", env.site_packages.string() + "\n");
}

// The full environment: the lock's probe packages and the asked ones (--no-deps), then
// torch with its own dependencies, the others held at their pins by a constraints file.
absl::Status MakeFull(const StackHome& home, const StackRequest& request, const fs::path& work,
                      const fs::path& venv, const std::function<void(const std::string&)>& note) {
  absl::StatusOr<std::string> lock = ReadFile(home.lock);
  if (!lock.ok()) return lock.status();
  std::vector<std::string> asked = {"torch"};
  for (const PackagePin& pin : request.pins) asked.push_back(pin.name);
  std::string pins_text;
  for (const PackagePin& pin : LockProbePins(*lock, asked)) pins_text += PinText(pin) + "\n";
  for (const std::string& pin : PinTexts(request.pins, false)) pins_text += pin + "\n";
  const fs::path pins_file = work / "pins.txt";
  if (absl::Status s = WriteFileAtomic(pins_file, pins_text); !s.ok()) return s;
  note("installing the probe's packages as requirements.lock pins them (--no-deps)");
  if (absl::Status s = PipInstall(home, EnvPython(venv), {"--no-deps", "-r", pins_file.string()});
      !s.ok()) {
    return s;
  }
  note(Cat("installing ", PinText(*FindPin(request.pins, "torch")), " with its own dependencies"));
  return PipInstall(home, EnvPython(venv),
                    {"-c", pins_file.string(), PinText(*FindPin(request.pins, "torch"))});
}

// The new interpreter imports torch and transformers at the asked versions.
absl::Status CheckImports(const fs::path& python, const StackRequest& request) {
  absl::StatusOr<CommandResult> result = RunCommand(
      {python.string(), "-c",
       "import torch, transformers; print(torch.__version__); print(transformers.__version__)"},
      {}, kCheckTimeoutS);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return absl::InternalError(
        Cat("the new environment cannot import torch and "
            "transformers: ",
            LastLine(result->stderr_text)));
  }
  std::vector<std::string> got;
  for (std::string_view line : Lines(result->stdout_text)) {
    if (!Strip(line).empty()) got.emplace_back(Strip(line));
  }
  const PackagePin* torch = FindPin(request.pins, "torch");
  const PackagePin* transformers = FindPin(request.pins, "transformers");
  if (got.size() != 2 || !VersionMatches(torch->version, got[0]) ||
      !VersionMatches(transformers->version, got[1])) {
    return absl::InternalError(Cat("the new environment imports torch and transformers ",
                                   got.empty() ? "nothing" : got.front(), " and ",
                                   got.size() > 1 ? got[1] : "nothing", ", not the asked ",
                                   torch->version, " and ", transformers->version));
  }
  return absl::OkStatus();
}

// Moves the made venv to envs/<id> (or drops it when that environment exists already)
// and returns the id.
absl::StatusOr<std::string> Settle(const StackHome& home, const fs::path& venv,
                                   const std::string& layout,
                                   const std::map<std::string, std::string>& resolved) {
  const std::string id = Sha256Hex(StackContentText(layout, resolved)).substr(0, kEnvIdChars);
  const fs::path target = EnvsDir(home) / id;
  std::error_code ec;
  if (fs::exists(EnvPython(target), ec)) return id;
  fs::create_directories(EnvsDir(home), ec);
  fs::rename(venv, target, ec);
  if (ec) return absl::InternalError(Cat("cannot move the new environment: ", ec.message()));
  return id;
}

// The resolved package set of a made venv: its own packages, then (an overlay) the default
// environment's that it does not shadow.
std::map<std::string, std::string> ResolvedOf(const fs::path& venv, bool overlay,
                                              const DefaultEnv& env) {
  std::map<std::string, std::string> resolved = InstalledPackages(SitePackagesOf(EnvPython(venv)));
  if (overlay) resolved.insert(env.packages.begin(), env.packages.end());  // keeps the venv's
  return resolved;
}

// Makes the venv in `work`/env and settles it; the record without its name's file.
absl::StatusOr<StackRecord> MakeStack(const StackHome& home, const StackRequest& request,
                                      const fs::path& work,
                                      const std::function<void(const std::string&)>& note) {
  absl::StatusOr<DefaultEnv> env = ReadDefaultEnv(home);
  if (!env.ok()) return env.status();
  const fs::path venv = work / "env";
  absl::StatusOr<CommandResult> made = RunCommand(
      {home.default_python.string(), "-m", "venv", "--without-pip", venv.string()}, {}, 120);
  if (!made.ok()) return made.status();
  if (made->exit_code != 0) {
    return absl::InternalError(Cat("cannot make a venv: ", LastLine(made->stderr_text)));
  }
  const bool overlay = SameTorch(request, *env);
  if (overlay) {
    note(Cat("same torch as default: installing ",
             std::to_string(PinTexts(request.pins, false).size()),
             " package(s) over the default environment (--no-deps)"));
  }
  absl::Status installed =
      overlay ? MakeOverlay(home, request, *env, venv) : MakeFull(home, request, work, venv, note);
  if (!installed.ok()) return installed;
  note("checking that the new environment imports torch and transformers");
  if (absl::Status s = CheckImports(EnvPython(venv), request); !s.ok()) return s;
  StackRecord record;
  record.name = request.name;
  record.layout = overlay ? Cat("overlay ", env->site_packages.string()) : "full";
  record.requested = PinTexts(request.pins, true);
  record.resolved = ResolvedOf(venv, overlay, *env);
  absl::StatusOr<std::string> id = Settle(home, venv, record.layout, record.resolved);
  if (!id.ok()) return id.status();
  record.env_id = *id;
  record.created_at = UtcNowIso8601();
  record.python = EnvPython(EnvsDir(home) / record.env_id);
  return record;
}

absl::StatusOr<StackRecord> ReadRecord(const StackHome& home, const fs::path& path) {
  std::error_code ec;
  if (fs::file_size(path, ec) > kMaxStackRecordBytes || ec) {
    return absl::InvalidArgumentError(Cat(path.string(), ": not a stack record"));
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<StackRecord> record = ParseStackRecord(*text);
  if (!record.ok()) {
    return absl::InvalidArgumentError(
        Cat(path.string(), ": ", std::string(record.status().message())));
  }
  record->python = EnvPython(EnvsDir(home) / record->env_id);
  return record;
}

StackRecord DefaultRecord(const StackHome& home) {
  StackRecord record;
  record.name = std::string(kDefaultStack);
  record.layout = "project";
  record.python = home.default_python;
  fs::path site = SitePackagesOf(home.default_python);
  if (!site.empty()) record.resolved = InstalledPackages(site);
  return record;
}

}  // namespace

StackHome StackHomeOf(const fs::path& project_home, const fs::path& default_python) {
  StackHome home;
  const char* dir = std::getenv("COMPATLAB_STACKS");
  home.dir = dir != nullptr && *dir != '\0' ? fs::path(dir) : project_home / "stacks";
  home.default_python = default_python;
  home.lock = project_home / "requirements.lock";
  return home;
}

absl::StatusOr<PackagePin> ParsePackagePin(std::string_view text) {
  size_t at = text.find("==");
  if (at == std::string_view::npos || !IsPackageName(text.substr(0, at)) ||
      !IsVersion(text.substr(at + 2))) {
    return absl::InvalidArgumentError(Cat(
        "'", text.substr(0, 120), "' is not a pinned package (NAME==VERSION, e.g. torch==2.14.1)"));
  }
  return PackagePin{NormalizePackageName(text.substr(0, at)), std::string(text.substr(at + 2))};
}

absl::Status CheckStackName(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= kMaxStackNameChars &&
                  (std::islower(static_cast<unsigned char>(name[0])) ||
                   std::isdigit(static_cast<unsigned char>(name[0]))) &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::islower(static_cast<unsigned char>(c)) ||
                           std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                           c == '-';
                  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      Cat("'", name.substr(0, 60),
          "' is not a stack name (1 to 40 of a-z, 0-9, '.', '_', '-', starting with a "
          "letter or digit)"));
}

absl::StatusOr<StackRequest> ParseStackRequest(std::string_view name,
                                               const std::vector<std::string>& specs) {
  if (absl::Status s = CheckStackName(name); !s.ok()) return s;
  if (name == kDefaultStack) {
    return absl::InvalidArgumentError("'default' is the project's own environment");
  }
  StackRequest request{std::string(name), {}};
  for (const std::string& spec : specs) {
    absl::StatusOr<PackagePin> pin = ParsePackagePin(spec);
    if (!pin.ok()) return pin.status();
    if (FindPin(request.pins, pin->name) != nullptr) {
      return absl::InvalidArgumentError(Cat(pin->name, " is pinned twice"));
    }
    request.pins.push_back(*std::move(pin));
  }
  for (std::string_view needed : {"torch", "transformers"}) {
    if (FindPin(request.pins, needed) == nullptr) {
      return absl::InvalidArgumentError(
          Cat("a stack pins ", needed, " (e.g. ", needed, "==VERSION)"));
    }
  }
  return request;
}

std::string StackContentText(std::string_view layout,
                             const std::map<std::string, std::string>& resolved) {
  std::string text = Cat("layout ", layout, "\n");
  for (const auto& [name, version] : resolved) text += Cat(name, "==", version, "\n");
  return text;
}

std::map<std::string, std::string> InstalledPackages(const fs::path& site_packages) {
  std::map<std::string, std::string> packages;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(site_packages, ec)) {
    const std::string dir = entry.path().filename().string();
    std::string_view stem = dir;
    if (!stem.ends_with(".dist-info")) continue;
    stem.remove_suffix(std::string_view(".dist-info").size());
    size_t dash = stem.find('-');
    if (dash == std::string_view::npos) continue;
    packages.emplace(NormalizePackageName(stem.substr(0, dash)),
                     std::string(stem.substr(dash + 1)));
  }
  return packages;
}

std::vector<PackagePin> LockProbePins(std::string_view lock_text,
                                      const std::vector<std::string>& exclude) {
  std::vector<PackagePin> pins;
  bool seen_pin = false;
  for (std::string_view line : Lines(lock_text)) {
    line = Strip(line);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (seen_pin) break;
      continue;
    }
    seen_pin = true;
    absl::StatusOr<PackagePin> pin = ParsePackagePin(line);
    if (!pin.ok()) continue;
    if (std::find(exclude.begin(), exclude.end(), pin->name) != exclude.end()) continue;
    pins.push_back(*std::move(pin));
  }
  return pins;
}

std::string StackRecordJson(const StackRecord& record) {
  nlohmann::ordered_json json = {{"name", record.name},         {"env", record.env_id},
                                 {"layout", record.layout},     {"requested", record.requested},
                                 {"resolved", record.resolved}, {"created_at", record.created_at}};
  return json.dump(2) + "\n";
}

absl::StatusOr<StackRecord> ParseStackRecord(std::string_view text) {
  if (text.size() > kMaxStackRecordBytes) return absl::InvalidArgumentError("record too large");
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || json.size() != 6) {
    return absl::InvalidArgumentError("not a stack record (a JSON object of 6 keys)");
  }
  StackRecord record;
  try {
    record.name = json.at("name").get<std::string>();
    record.env_id = json.at("env").get<std::string>();
    record.layout = json.at("layout").get<std::string>();
    record.requested = json.at("requested").get<std::vector<std::string>>();
    record.resolved = json.at("resolved").get<std::map<std::string, std::string>>();
    record.created_at = json.at("created_at").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(Cat("bad stack record: ", e.what()));
  }
  if (absl::Status s = CheckStackName(record.name); !s.ok()) return s;
  if (!IsEnvId(record.env_id)) return absl::InvalidArgumentError("bad env id");
  return record;
}

absl::StatusOr<StackRecord> AddStack(const StackHome& home, const StackRequest& request,
                                     const std::function<void(const std::string&)>& note) {
  std::error_code ec;
  if (fs::exists(RecordPath(home, request.name), ec)) {
    return absl::AlreadyExistsError(
        Cat("stack ", request.name, " exists (stack rm ", request.name, " first)"));
  }
  const fs::path work = home.dir / "tmp" / RandomHex(8);
  fs::create_directories(work, ec);
  fs::create_directories(NamesDir(home), ec);
  if (ec) return absl::InternalError(Cat("cannot create ", work.string(), ": ", ec.message()));
  absl::StatusOr<StackRecord> record = MakeStack(home, request, work, note);
  fs::remove_all(work, ec);
  if (!record.ok()) return record.status();
  if (fs::exists(RecordPath(home, request.name), ec)) {
    return absl::AlreadyExistsError(Cat("stack ", request.name, " was made meanwhile"));
  }
  if (absl::Status s = WriteFileAtomic(RecordPath(home, request.name), StackRecordJson(*record));
      !s.ok()) {
    return s;
  }
  return record;
}

absl::StatusOr<std::vector<StackRecord>> ListStacks(const StackHome& home) {
  std::vector<StackRecord> stacks = {DefaultRecord(home)};
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(NamesDir(home), ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    absl::StatusOr<StackRecord> record = ReadRecord(home, file);
    if (!record.ok()) return record.status();
    stacks.push_back(*std::move(record));
  }
  return stacks;
}

absl::StatusOr<StackRecord> FindStack(const StackHome& home, std::string_view name) {
  if (name == kDefaultStack) return DefaultRecord(home);
  if (absl::Status s = CheckStackName(name); !s.ok()) return s;
  std::error_code ec;
  const fs::path path = RecordPath(home, name);
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(Cat("no stack named ", name, " (stack ls lists them)"));
  }
  absl::StatusOr<StackRecord> record = ReadRecord(home, path);
  if (!record.ok()) return record.status();
  if (record->name != name) {
    return absl::InvalidArgumentError(Cat(path.string(), " names another stack"));
  }
  return record;
}

absl::Status RemoveStack(const StackHome& home, std::string_view name) {
  if (name == kDefaultStack) {
    return absl::InvalidArgumentError("'default' is the project's own environment");
  }
  absl::StatusOr<StackRecord> record = FindStack(home, name);
  if (!record.ok()) return record.status();
  std::error_code ec;
  fs::remove(RecordPath(home, name), ec);
  if (ec) return absl::InternalError(Cat("cannot remove the record: ", ec.message()));
  absl::StatusOr<std::vector<StackRecord>> rest = ListStacks(home);
  if (!rest.ok()) return rest.status();
  const bool shared = std::any_of(rest->begin(), rest->end(),
                                  [&](const StackRecord& r) { return r.env_id == record->env_id; });
  if (!shared) fs::remove_all(EnvsDir(home) / record->env_id, ec);
  return absl::OkStatus();
}

}  // namespace compatlab
