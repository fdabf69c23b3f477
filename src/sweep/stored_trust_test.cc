#include "sweep/stored_trust.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "util/hash.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// A planned test with a plan's default limits.
ResolvedTest OwnTest() {
  ResolvedTest t;
  t.spec.model_id = "hf:gpt2";
  t.spec.model_type = "gpt2";
  t.execution = TestExecution{};
  return t;
}

TEST(StoredTrustTest, TemporaryPathsAreMadeOnlyFromCheckedSweepIds) {
  absl::StatusOr<fs::path> ok = SweepTempPath("compatlab-cache-", "20261205T141500Z-abc123");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->parent_path(), fs::temp_directory_path());
  for (const std::string& id :
       std::vector<std::string>{"x/../../victim", "..", "a/b", "", std::string(129, 'a')}) {
    absl::StatusOr<fs::path> bad = SweepTempPath("compatlab-cache-", id);
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << id;
  }
}

TEST(StoredTrustTest, StoredLimitsOutOfTheirFlagsRangesAreRefusedByField) {
  EXPECT_TRUE(CheckStoredLimits({OwnTest()}, {}).ok());
  auto expect_refused = [](const ResolvedTest& t, const std::string& field,
                           const std::string& flag) {
    absl::Status s = CheckStoredLimits({OwnTest(), t}, {});
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find(absl::StrCat("its stored ", field, " is out of range")),
              std::string::npos)
        << s;
    EXPECT_NE(s.message().find(t.spec.TestId()), std::string::npos) << s;
    EXPECT_NE(s.message().find(absl::StrCat("pass ", flag)), std::string::npos) << s;
  };
  for (double timeout : {1e300, -1.0, 0.0, std::nan("")}) {
    ResolvedTest t = OwnTest();
    t.spec.timeout_s = timeout;
    expect_refused(t, "timeout_s", "--timeout");
  }
  for (double grace : {1e300, -1.0, std::numeric_limits<double>::infinity()}) {
    ResolvedTest t = OwnTest();
    t.execution->grace_s = grace;
    expect_refused(t, "grace_s", "--grace");
  }
  for (int64_t bytes : {int64_t{0}, int64_t{-1}, int64_t{1} << 20}) {
    ResolvedTest t = OwnTest();
    t.execution->mem_limit_bytes = bytes;
    expect_refused(t, "mem_limit_bytes", "--mem-limit");
  }
}

TEST(StoredTrustTest, AStoredLimitReplacedOnTheResumeIsNotChecked) {
  ResolvedTest t = OwnTest();
  t.spec.timeout_s = 1e300;
  t.execution->grace_s = -1;
  t.execution->mem_limit_bytes = 0;
  EXPECT_TRUE(CheckStoredLimits({t}, {.timeout = true, .grace = true, .mem_limit = true}).ok());
  EXPECT_FALSE(CheckStoredLimits({t}, {.timeout = true, .grace = true}).ok());
}

}  // namespace
}  // namespace compatlab
