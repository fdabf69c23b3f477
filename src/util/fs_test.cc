#include "util/fs.h"

#include <unistd.h>

#include <filesystem>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

TEST(FsTest, WriteFileAtomicReplacesContentAndLeavesNoTemporary) {
  fs::path dir = fs::temp_directory_path() / ("fs_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "out.txt";
  ASSERT_TRUE(WriteFileAtomic(file, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(file, "second").ok());
  EXPECT_EQ(*ReadFile(file), "second");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(FsTest, WriteFileAtomicFailsInMissingDirectory) {
  EXPECT_FALSE(WriteFileAtomic("/nonexistent-dir-compatlab/x", "data").ok());
}

TEST(FsTest, ReadFileOfMissingFileIsNotFound) {
  EXPECT_EQ(ReadFile("/nonexistent-compatlab").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace compatlab
