#include "store/artifacts.h"

#include <string>

#include "gtest/gtest.h"
#include "store/testing.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {
namespace {

const std::string kGzip = std::string("\x1f\x8b\x08\x00", 4) + "trace bytes";

TEST(ArtifactsTest, StoresByDigestOnceAndRefusesWhatIsNotGzipOrTooLarge) {
  test::ScopedTempDir dir;
  const std::filesystem::path artifacts = ArtifactDir(dir.path() / "store.db");
  EXPECT_EQ(artifacts.filename(), "store.db.artifacts");
  absl::StatusOr<KeptArtifact> kept = StoreArtifact(artifacts, kGzip, 1024);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->sha256, Sha256Hex(kGzip));
  EXPECT_EQ(kept->bytes, static_cast<int64_t>(kGzip.size()));
  absl::StatusOr<std::filesystem::path> path = ArtifactPath(artifacts, kept->sha256);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*ReadFile(*path), kGzip);
  EXPECT_TRUE(StoreArtifact(artifacts, kGzip, 1024).ok());  // the same content again: kept

  EXPECT_EQ(StoreArtifact(artifacts, "{\"traceEvents\": []}", 1024).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StoreArtifact(artifacts, kGzip, 4).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArtifactsTest, KeepingAFileRemovesItAndATooLargeOneIsNotRead) {
  test::ScopedTempDir dir;
  const std::filesystem::path file = dir.path() / "run.json.gz";
  ASSERT_TRUE(WriteFileAtomic(file, kGzip).ok());
  EXPECT_TRUE(KeepArtifactFile(dir.path() / "a", file, 1024).ok());
  EXPECT_FALSE(std::filesystem::exists(file));
  ASSERT_TRUE(WriteFileAtomic(file, kGzip).ok());
  EXPECT_EQ(KeepArtifactFile(dir.path() / "a", file, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(KeepArtifactFile(dir.path() / "a", file, 1024).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ArtifactsTest, AStoredDigestIsAPathOnlyWhenItIsHex) {
  for (std::string_view bad : {std::string_view("../../etc/passwd"), std::string_view(""),
                               std::string_view("ABCDEF"), std::string_view("a/b")}) {
    EXPECT_FALSE(ArtifactPath("/x", bad).ok()) << bad;
  }
  EXPECT_FALSE(ArtifactPath("/x", std::string(63, 'a') + "/").ok());
  EXPECT_TRUE(ArtifactPath("/x", std::string(64, 'f')).ok());
}

}  // namespace
}  // namespace compatlab
