#include "runner/memlimit.h"

#include <unistd.h>

#include <filesystem>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(ParseByteSizeTest, AcceptsBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("1G"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("512M"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
}

TEST(ParseByteSizeTest, RejectsGarbage) {
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("lots").ok());
  EXPECT_FALSE(ParseByteSize("12X").ok());
  EXPECT_FALSE(ParseByteSize("0").ok());
  EXPECT_FALSE(ParseByteSize("-5G").ok());
}

TEST(MemoryLimiterTest, RlimitIsAlwaysAvailable) {
  auto limiter = MakeMemoryLimiter("rlimit");
  ASSERT_TRUE(limiter.ok());
  auto limit = (*limiter)->Create("x", 1 << 30);
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ((*limit)->Method(), "rlimit");
  EXPECT_EQ((*limit)->ProcsPath(), "");
  EXPECT_EQ((*limit)->OomKills(), 0);
}

TEST(MemoryLimiterTest, UnknownMethodIsRejected) {
  EXPECT_EQ(MakeMemoryLimiter("magic").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MemoryLimiterTest, CgroupLimitIsCreatedAndRemoved) {
  auto limiter = MakeMemoryLimiter("");
  ASSERT_TRUE(limiter.ok());
  if ((*limiter)->Method() == "rlimit") GTEST_SKIP() << "no writable memory cgroup here";
  std::string dir;
  {
    auto limit =
        (*limiter)->Create("compatlab-memlimit-test-" + std::to_string(getpid()), 64 << 20);
    ASSERT_TRUE(limit.ok()) << limit.status();
    dir = (*limit)->Dir();
    EXPECT_TRUE(std::filesystem::exists(dir));
    EXPECT_EQ((*limit)->OomKills(), 0);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace compatlab
