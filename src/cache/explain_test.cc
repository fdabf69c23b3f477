#include "cache/explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cache/testing.h"
#include "nlohmann/json.hpp"

namespace compatlab::cache {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

Entry EntryOf(const KeyParts& key, const std::string& id) {
  Entry e;
  e.id = id;
  e.key = key;
  return e;
}

RunRecord CompiledRun(const KeyParts& key) {
  RunRecord run;
  run.run_id = "r1";
  run.spec.model_id = "hf:llama";
  run.spec.mode = "compile";
  run.spec.kind = "forward";
  run.result.compile_key = nlohmann::json(key).dump();
  run.result.prepare_state = "model-cold";
  run.result.cache_bundle = "none: no entry for this key";
  run.result.fx_graph_cache_misses = 3;
  return run;
}

TEST(ExplainTest, NamesTheTorchVersionThatDiffers) {
  KeyParts entry_key = test::TestKey("hf:llama/forward");
  entry_key["torch"] = "2.14.1";
  const std::vector<Entry> entries = {EntryOf(entry_key, std::string(64, 'a'))};
  absl::StatusOr<std::string> text =
      ExplainRun(CompiledRun(test::TestKey("hf:llama/forward")), entries, "the local store");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("entry aaaaaaaaaaaa: 1 part differs\n"
                               "    torch: 2.13.0+cpu here, 2.14.1 in the entry\n"));
  EXPECT_THAT(*text, HasSubstr("FX graph cache - hits, 3 misses"));
}

TEST(ExplainTest, NamesACompileOptionAndPutsTheTestsOwnEntriesFirst) {
  KeyParts same_test = test::TestKey("hf:llama/forward");
  same_test["compile_options"] = R"({"dynamic": false, "mode": "max-autotune"})";
  same_test["dtype"] = "bfloat16";
  KeyParts other_test = test::TestKey("hf:gpt2/forward");
  const std::vector<Entry> entries = {EntryOf(other_test, std::string(64, 'b')),
                                      EntryOf(same_test, std::string(64, 'c'))};
  absl::StatusOr<std::string> text =
      ExplainRun(CompiledRun(test::TestKey("hf:llama/forward")), entries, "the local store");
  ASSERT_TRUE(text.ok());
  EXPECT_LT(text->find("entry cccccccccccc: 2 parts differ"), text->find("entry bbbbbbbbbbbb"));
  EXPECT_THAT(*text, HasSubstr("compile_options: {\"dynamic\": false} here, {\"dynamic\": false, "
                               "\"mode\": \"max-autotune\"} in the entry"));
}

TEST(ExplainTest, SaysWhenAnEntryHasTheRunsVeryKey) {
  const KeyParts key = test::TestKey("hf:llama/forward");
  absl::StatusOr<std::string> text =
      ExplainRun(CompiledRun(key), {EntryOf(key, std::string(64, 'd'))}, "remote r");
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("this run's very key"));
  EXPECT_THAT(*text, Not(HasSubstr("part differ")));
}

TEST(ExplainTest, RefusesARunThatWasNotCompiledOrHasNoKey) {
  RunRecord eager = CompiledRun(test::TestKey("t"));
  eager.spec.mode = "eager";
  EXPECT_FALSE(ExplainRun(eager, {}, "x").ok());
  RunRecord old = CompiledRun(test::TestKey("t"));
  old.result.compile_key.clear();
  EXPECT_THAT(ExplainRun(old, {}, "x").status().message(), HasSubstr("holds no compile key"));
}

}  // namespace
}  // namespace compatlab::cache
