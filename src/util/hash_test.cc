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

TEST(HashTest, DirectoryHashEndsAtSymlinkLoopsWithoutThrowing) {
  fs::path dir = fs::temp_directory_path() / ("hash_loop_test_" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "config.json") << "{}";
  std::ofstream(dir / "sub" / "w.bin") << "w";
  auto plain = HashDirectory(dir);
  ASSERT_TRUE(plain.ok()) << plain.status();
  fs::create_directory_symlink(".", dir / "self");         // a -> .
  fs::create_directory_symlink("..", dir / "sub" / "up");  // back to the top
  fs::create_symlink("loop_b", dir / "loop_a");            // a -> b -> a
  fs::create_symlink("loop_a", dir / "loop_b");
  auto looped = HashDirectory(dir);
  ASSERT_TRUE(looped.ok()) << looped.status();
  EXPECT_EQ(*looped, *plain);  // each directory and file counted once
  fs::remove_all(dir);
}

}  // namespace
}  // namespace compatlab
