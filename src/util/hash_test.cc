#include "util/hash.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

TEST(HashTest, Sha256MatchesKnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(HashTest, DirectoryHashDependsOnContentAndNames) {
  fs::path dir = fs::temp_directory_path() / ("hash_test_" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "a.txt") << "one";
  std::ofstream(dir / "sub" / "b.txt") << "two";
  auto h1 = HashDirectory(dir);
  ASSERT_TRUE(h1.ok()) << h1.status();
  EXPECT_EQ(*HashDirectory(dir), *h1);
  std::ofstream(dir / "a.txt") << "one!";
  EXPECT_NE(*HashDirectory(dir), *h1);
  fs::remove_all(dir);
  EXPECT_FALSE(HashDirectory(dir).ok());
}

}  // namespace
}  // namespace compatlab
