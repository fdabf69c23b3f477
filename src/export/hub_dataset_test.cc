#include "export/hub_dataset.h"

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

TEST(CheckDatasetRepoTest, TakesWhatTheHubSpells) {
  EXPECT_TRUE(CheckDatasetRepo("org/results", "").ok());
  EXPECT_TRUE(CheckDatasetRepo("my-org/r.v2", "release/2026-12").ok());
  for (const char* bad : {"", "results", "org/../x", "/org/x", "org/x/y", "org/-x", "org x/y"}) {
    EXPECT_EQ(CheckDatasetRepo(bad, "").code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const char* bad : {"..", "a/../b", "-x", "a b", "a\nb"}) {
    EXPECT_EQ(CheckDatasetRepo("org/x", bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// A stand-in for the helper's Python: a script answering `answer` with exit `code`.
HubHelper ScriptAnswering(const std::filesystem::path& dir, const std::string& answer, int code) {
  const std::filesystem::path script = dir / "python";
  std::ofstream(script) << "#!/bin/sh\necho '" << answer << "'\nexit " << code << "\n";
  chmod(script.c_str(), 0755);
  return {script.string(), dir.string()};
}

TEST(HubDatasetTest, ErrorsOfTheHelperKeepTheirKind) {
  test::ScopedTempDir dir;
  std::ofstream(dir.path() / "README.md") << "---\n---\n";
  PublishOptions options{dir.path(), "org/results", "", {}};
  options.helper = ScriptAnswering(dir.path(), R"({"error": "the Hub cannot be reached: no"})", 1);
  absl::StatusOr<PublishedDataset> published = PublishDataset(options);
  EXPECT_EQ(published.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(published.status().message(), "the Hub cannot be reached: no");
  options.helper = ScriptAnswering(dir.path(), "Traceback", 1);
  EXPECT_EQ(PublishDataset(options).status().code(), absl::StatusCode::kInternal);
  options.dir = dir.path() / "nothing";
  EXPECT_EQ(PublishDataset(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HubDatasetTest, ADownloadIsADirectory) {
  test::ScopedTempDir dir;
  const std::string answer =
      R"({"repo_id": "org/r", "commit": "c0ffee", "path": ")" + dir.path().string() + R"("})";
  absl::StatusOr<DownloadedDataset> got =
      DownloadDataset("org/r@main", ScriptAnswering(dir.path(), answer, 0));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->path, dir.path());
  EXPECT_EQ(got->commit, "c0ffee");
  EXPECT_EQ(DownloadDataset("org/r", ScriptAnswering(dir.path(), R"({"path": "rel"})", 0))
                .status()
                .code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(DownloadDataset("org/r@", {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace compatlab
