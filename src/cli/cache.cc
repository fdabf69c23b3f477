#include "cli/cache.h"

#include <functional>
#include <iostream>
#include <memory>

#include "cache/explain.h"
#include "cache/remote.h"
#include "cli/common.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "runner/memlimit.h"
#include "store/store.h"
#include "util/hash.h"

namespace compatlab {
namespace fs = std::filesystem;

namespace {

fs::path LocalStore(const CacheFlags& flags) {
  return flags.store.empty() ? cache::LocalStoreDir() : fs::path(flags.store);
}

cache::HubHelper HelperOf(const CacheFlags& flags) {
  const ProbeEnv env = ResolveProbeEnv(flags.python);
  return {env.python, env.probe_dir};
}

std::string KeyLine(const cache::KeyParts& key) {
  auto at = [&](const char* part) {
    auto it = key.find(part);
    return it == key.end() ? std::string("-") : TruncateForDisplay(it->second, 120);
  };
  return fmt::format("{}  torch {}  {} {}  {}  {}  {}", at("test_id"), at("torch"), at("backend"),
                     at("compile_options"), at("device"), at("dtype"), at("shapes"));
}

void PrintProblems(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    std::cerr << "compatlab: warning: " << TruncateForDisplay(p, 400) << "\n";
  }
}

// The entries of the remote (--remote) or of the local store, with where they are; `root`
// (may be null) is set to the store that holds them whole (empty for a Hub remote, whose
// listing holds each entry's key and manifest only).
absl::StatusOr<std::vector<cache::Entry>> EntriesOf(const CacheFlags& flags, std::string* where,
                                                    std::vector<std::string>* problems,
                                                    fs::path* root = nullptr) {
  if (flags.remote.empty()) {
    *where = fmt::format("the local store ({})", LocalStore(flags).string());
    if (root != nullptr) *root = LocalStore(flags);
    return cache::ListEntries(LocalStore(flags), problems);
  }
  absl::StatusOr<cache::Remote> remote = cache::ParseRemote(flags.remote);
  if (!remote.ok()) return remote.status();
  *where = fmt::format("remote {}", cache::RemoteName(*remote));
  if (root != nullptr && remote->kind == cache::Remote::Kind::kDirectory) {
    *root = remote->location;
  }
  const fs::path scratch = LocalStore(flags) / "staging" / fmt::format("keys.{}", RandomHex(6));
  absl::StatusOr<std::vector<cache::Entry>> entries =
      cache::RemoteEntries(*remote, HelperOf(flags), scratch, problems);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return entries;
}

int RunLs(const CacheFlags& flags) {
  std::string where;
  std::vector<std::string> problems;
  absl::StatusOr<std::vector<cache::Entry>> entries = EntriesOf(flags, &where, &problems);
  if (!entries.ok()) return Fail(ExitCodeOf(entries.status()), entries.status());
  int64_t bytes = 0;
  for (const cache::Entry& e : *entries) {
    bytes += e.bytes;
    std::cout << fmt::format("{}  {:>8.1f} MiB  {}\n", e.id.substr(0, 12),
                             static_cast<double>(e.bytes) / (1 << 20), KeyLine(e.key));
  }
  std::cout << fmt::format("{} entries, {:.1f} MiB in {}\n", entries->size(),
                           static_cast<double>(bytes) / (1 << 20), where);
  PrintProblems(problems);
  return kExitOk;
}

int RunTransfer(const CacheFlags& flags, bool push) {
  absl::StatusOr<cache::Remote> remote = cache::ParseRemote(flags.remote);
  if (!remote.ok()) return Fail(kExitBadInput, remote.status());
  if (!flags.key.empty() && !cache::IsEntryId(flags.key)) {
    return Fail(kExitBadInput, "--key: an entry's id is 64 lower-case hex digits");
  }
  std::function<bool(const cache::Entry&)> want;
  if (!flags.key.empty()) want = [&](const cache::Entry& e) { return e.id == flags.key; };
  absl::StatusOr<cache::CopyReport> report =
      push ? cache::Push(LocalStore(flags), *remote, HelperOf(flags), want)
           : cache::Pull(*remote, LocalStore(flags), HelperOf(flags), want);
  if (!report.ok()) return Fail(ExitCodeOf(report.status()), report.status());
  std::cout << fmt::format("{} {} entries {} {}, {} there already, {} refused\n",
                           push ? "pushed" : "pulled", report->copied.size(), push ? "to" : "from",
                           cache::RemoteName(*remote), report->present.size(),
                           report->refused.size());
  for (const std::string& r : report->refused) {
    std::cout << "refused: " << TruncateForDisplay(r, 400) << "\n";
  }
  return report->refused.empty() ? kExitOk : kExitFailure;
}

int RunExplain(const CacheFlags& flags) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(flags.db, OpenMode::kReadOnly);
  if (!store.ok()) return Fail(ExitCodeOf(store.status()), store.status());
  RunFilter filter;
  filter.run_id = flags.run_id;
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(filter);
  if (!runs.ok()) return Fail(ExitCodeOf(runs.status()), runs.status());
  if (runs->empty()) {
    return Fail(kExitBadInput,
                fmt::format("no run {} in {}", TruncateForDisplay(flags.run_id, 200), flags.db));
  }
  std::string where;
  std::vector<std::string> problems;
  fs::path root;
  absl::StatusOr<std::vector<cache::Entry>> entries = EntriesOf(flags, &where, &problems, &root);
  if (!entries.ok()) return Fail(ExitCodeOf(entries.status()), entries.status());
  auto read = [&](const cache::Entry& e) -> absl::StatusOr<cache::GraphDetails> {
    if (root.empty()) {
      return absl::NotFoundError(fmt::format(
          "a Hub remote's listing holds key and manifest only: cache pull --key {} first", e.id));
    }
    return cache::ReadGraphDetails(cache::EntriesDir(root) / e.id, e);
  };
  absl::StatusOr<std::string> text = cache::ExplainRun(runs->front(), *entries, where, read);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  PrintProblems(problems);
  return kExitOk;
}

int RunGc(const CacheFlags& flags) {
  absl::StatusOr<int64_t> max_bytes = ParseByteSize(flags.max_size);
  if (!max_bytes.ok())
    return Fail(kExitBadInput, "--max-size: " + std::string(max_bytes.status().message()));
  const cache::GcReport report = cache::Collect(LocalStore(flags), *max_bytes);
  std::cout << fmt::format(
      "removed {} leftovers and malformed entries, evicted {} least recently used; {} entries, "
      "{:.1f} MiB left in {}\n",
      report.removed, report.evicted, report.entries, static_cast<double>(report.bytes) / (1 << 20),
      LocalStore(flags).string());
  return kExitOk;
}

}  // namespace

CLI::App* AddCacheCommand(CLI::App& app, CacheFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "cache",
      "The compile store: list, push, pull, explain a miss, collect (doc/compile-cache.md)");
  cmd->require_subcommand(1);
  cmd->add_option("--store", flags.store,
                  "the local compile store (default: $COMPATLAB_COMPILE_STORE, else "
                  ".compile-store in the project's home)");
  cmd->add_option("--python", flags.python, "interpreter that runs the Hub helper");
  flags.ls = cmd->add_subcommand("ls", "List the entries of the local store or of a remote");
  flags.ls->add_option("--remote", flags.remote, "a directory or hub:ORG/NAME");
  flags.push = cmd->add_subcommand("push", "Copy the local entries a remote lacks to it");
  flags.push->add_option("remote", flags.remote, "a directory or hub:ORG/NAME")->required();
  flags.push->add_option("--key", flags.key, "that entry only (its id: the key's SHA-256)");
  flags.pull =
      cmd->add_subcommand("pull", "Copy a remote's entries the local store lacks, checked");
  flags.pull->add_option("remote", flags.remote, "a directory or hub:ORG/NAME")->required();
  flags.pull->add_option("--key", flags.key,
                         "that entry only (its id: the SHA-256 of a run's compile_key)");
  flags.explain = cmd->add_subcommand(
      "explain", "Why a compiled run did not hit: its key against the nearest entries'");
  flags.explain->add_option("run_id", flags.run_id, "a stored run's id")->required();
  flags.explain->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  flags.explain->add_option("--remote", flags.remote,
                            "compare with a remote's entries (a directory or hub:ORG/NAME)");
  flags.gc = cmd->add_subcommand(
      "gc", "Remove leftovers and malformed entries, evict least recently used past a size");
  flags.gc->add_option("--max-size", flags.max_size, "the store's bound (e.g. 20G, 512M)")
      ->capture_default_str();
  return cmd;
}

int RunCache(const CacheFlags& flags) {
  if (flags.ls->parsed()) return RunLs(flags);
  if (flags.push->parsed()) return RunTransfer(flags, /*push=*/true);
  if (flags.pull->parsed()) return RunTransfer(flags, /*push=*/false);
  if (flags.explain->parsed()) return RunExplain(flags);
  return RunGc(flags);
}

}  // namespace compatlab
