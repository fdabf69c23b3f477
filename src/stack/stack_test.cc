#include "stack/stack.h"

#include <unistd.h>

#include <filesystem>

#include "gtest/gtest.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() : path_(fs::temp_directory_path() / ("stack_test_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(StackTest, ParsesAndNormalizesAPin) {
  absl::StatusOr<PackagePin> pin = ParsePackagePin("Typing_Extensions==4.16.0");
  ASSERT_TRUE(pin.ok()) << pin.status();
  EXPECT_EQ(pin->name, "typing-extensions");
  EXPECT_EQ(pin->version, "4.16.0");
  EXPECT_TRUE(ParsePackagePin("torch==2.13.0+cpu").ok());
}

TEST(StackTest, RefusesWhatIsNotAPin) {
  for (const char* bad : {"torch", "torch>=2.13", "torch==", "==2.13", "torch==2.13 ; rm -rf /",
                          "../x==1", "torch==2.13\n", "-e==1"}) {
    EXPECT_EQ(ParsePackagePin(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(StackTest, ARequestPinsTorchAndTransformersOnceAndIsNotDefault) {
  EXPECT_TRUE(ParseStackRequest("t5", {"torch==2.13.0", "transformers==5.18.0"}).ok());
  EXPECT_FALSE(ParseStackRequest("t5", {"torch==2.13.0"}).ok());
  EXPECT_FALSE(ParseStackRequest("t5", {"transformers==5.18.0"}).ok());
  EXPECT_FALSE(
      ParseStackRequest("t5", {"torch==2.13.0", "transformers==5.18.0", "Torch==2.14.1"}).ok());
  EXPECT_FALSE(ParseStackRequest("default", {"torch==2.13.0", "transformers==5.18.0"}).ok());
  for (const char* bad : {"", "../up", "a/b", "Upper", ".hidden", "x y",
                          "a-name-that-is-much-longer-than-forty-chars"}) {
    EXPECT_FALSE(ParseStackRequest(bad, {"torch==2.13.0", "transformers==5.18.0"}).ok()) << bad;
  }
}

TEST(StackTest, ReadsInstalledPackagesFromDistInfoDirectories) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "torch-2.13.0+cpu.dist-info");
  fs::create_directories(dir.path() / "typing_extensions-4.16.0.dist-info");
  fs::create_directories(dir.path() / "torch");
  std::map<std::string, std::string> packages = InstalledPackages(dir.path());
  EXPECT_EQ(packages, (std::map<std::string, std::string>{{"torch", "2.13.0+cpu"},
                                                          {"typing-extensions", "4.16.0"}}));
}

TEST(StackTest, TakesTheLockFirstBlockWithoutTheExcludedNames) {
  const std::string lock =
      "# header\n# more\nnumpy==2.4.6\ntorch==2.13.0+cpu\ntransformers==5.23.0\n"
      "# Deployment stacks\nonnx==1.23.2\n";
  std::vector<PackagePin> pins = LockProbePins(lock, {"torch", "transformers"});
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins[0], (PackagePin{"numpy", "2.4.6"}));
}

TEST(StackTest, ContentTextNamesLayoutAndEveryPackageInOrder) {
  EXPECT_EQ(StackContentText("full", {{"torch", "2.14.1"}, {"numpy", "2.4.6"}}),
            "layout full\nnumpy==2.4.6\ntorch==2.14.1\n");
}

TEST(StackTest, RecordRoundTripsAndRefusesABadEnvId) {
  StackRecord record;
  record.name = "t5";
  record.env_id = "0123456789abcdef";
  record.layout = "full";
  record.requested = {"torch==2.14.1", "transformers==5.23.0"};
  record.resolved = {{"torch", "2.14.1"}};
  record.created_at = "2026-12-05T20:00:00.000Z";
  absl::StatusOr<StackRecord> back = ParseStackRecord(StackRecordJson(record));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->env_id, record.env_id);
  EXPECT_EQ(back->resolved, record.resolved);
  record.env_id = "../../etc";
  EXPECT_FALSE(ParseStackRecord(StackRecordJson(record)).ok());
  EXPECT_FALSE(ParseStackRecord("[]").ok());
}

TEST(StackTest, ListsDefaultFirstAndRemovesAnEnvironmentOnlyWhenUnshared) {
  ScratchDir dir;
  StackHome home{dir.path() / "stacks", dir.path() / "venv" / "bin" / "python", {}};
  fs::create_directories(dir.path() / "venv" / "lib" / "python3.11" / "site-packages" /
                         "torch-2.13.0+cpu.dist-info");
  fs::create_directories(home.dir / "names");
  const fs::path env = home.dir / "envs" / "0123456789abcdef";
  fs::create_directories(env / "bin");
  for (const char* name : {"a", "b"}) {
    StackRecord r;
    r.name = name;
    r.env_id = "0123456789abcdef";
    r.layout = "full";
    ASSERT_TRUE(
        WriteFileAtomic(home.dir / "names" / (std::string(name) + ".json"), StackRecordJson(r))
            .ok());
  }
  absl::StatusOr<std::vector<StackRecord>> stacks = ListStacks(home);
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  ASSERT_EQ(stacks->size(), 3u);
  EXPECT_EQ((*stacks)[0].name, "default");
  EXPECT_EQ((*stacks)[0].resolved.at("torch"), "2.13.0+cpu");
  EXPECT_EQ((*stacks)[2].python, env / "bin" / "python");
  ASSERT_TRUE(RemoveStack(home, "a").ok());
  EXPECT_TRUE(fs::exists(env));
  ASSERT_TRUE(RemoveStack(home, "b").ok());
  EXPECT_FALSE(fs::exists(env));
  EXPECT_EQ(RemoveStack(home, "b").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(RemoveStack(home, "default").code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace compatlab
