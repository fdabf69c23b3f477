// Test helpers of the cache module: a temporary directory and a well-formed staged entry
// written as the probe writes one (probe/compatlab_probe/stacks/compile_store.py).
#ifndef COMPATLAB_CACHE_TESTING_H_
#define COMPATLAB_CACHE_TESTING_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab::cache::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "cache_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The key parts of a test entry: torch 2.13.0+cpu, inductor, test `test_id`.
inline std::map<std::string, std::string> TestKey(const std::string& test_id) {
  return {{"torch", "2.13.0+cpu"},
          {"backend", "inductor"},
          {"device", "cpu x86_64 avx512"},
          {"compile_options", R"({"dynamic": false})"},
          {"dtype", "float32"},
          {"test_id", test_id}};
}

// Graph details of one graph `key` with `lines`, as the child writes them.
inline std::string GraphDetailsText(const std::string& key, const std::vector<std::string>& lines) {
  return nlohmann::json{
      {"format", 1}, {"graphs", {{{"key", key}, {"lines", lines}}}}, {"truncated", ""}}
      .dump();
}

// Writes an entry of `key` into `dir` (made): key.json, artifacts.bin, one kernel, with
// `details` its fx_graph_details.json (none when empty), and the manifest. Returns its id.
inline std::string WriteEntry(const std::filesystem::path& dir,
                              const std::map<std::string, std::string>& key,
                              const std::string& artifacts = "bundle bytes",
                              const std::string& details = "") {
  std::filesystem::create_directories(dir / "kernels" / "ab");
  const std::string key_text = nlohmann::json(key).dump();
  const std::string kernel = "ELF kernel";
  EXPECT_TRUE(WriteFileAtomic(dir / "key.json", key_text).ok());
  EXPECT_TRUE(WriteFileAtomic(dir / "artifacts.bin", artifacts).ok());
  EXPECT_TRUE(WriteFileAtomic(dir / "kernels/ab/cabc.so", kernel).ok());
  nlohmann::json manifest = {
      {"format", 1},
      {"created_unix", 1764900000},
      {"artifacts", {{"inductor", 1}, {"aot_autograd", 1}}},
      {"files",
       {{{"path", "artifacts.bin"}, {"bytes", artifacts.size()}, {"sha256", Sha256Hex(artifacts)}},
        {{"path", "kernels/ab/cabc.so"},
         {"bytes", kernel.size()},
         {"sha256", Sha256Hex(kernel)}}}}};
  if (!details.empty()) {
    EXPECT_TRUE(WriteFileAtomic(dir / "fx_graph_details.json", details).ok());
    manifest["files"].push_back({{"path", "fx_graph_details.json"},
                                 {"bytes", details.size()},
                                 {"sha256", Sha256Hex(details)}});
  }
  EXPECT_TRUE(WriteFileAtomic(dir / "entry.json", manifest.dump()).ok());
  return Sha256Hex(key_text);
}

}  // namespace compatlab::cache::test

#endif  // COMPATLAB_CACHE_TESTING_H_
