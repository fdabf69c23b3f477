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

// A reader of entries that hold no graph details.
absl::StatusOr<GraphDetails> NoDetails(const Entry&) {
  return absl::NotFoundError("the entry holds no fx_graph_details.json");
}

// A reader that gives every entry the graph details `text`.
DetailsReader DetailsOf(const std::string& text) {
  return [text](const Entry&) { return ParseGraphDetails(text); };
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
  absl::StatusOr<std::string> text = ExplainRun(CompiledRun(test::TestKey("hf:llama/forward")),
                                                entries, "the local store", NoDetails);
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
  absl::StatusOr<std::string> text = ExplainRun(CompiledRun(test::TestKey("hf:llama/forward")),
                                                entries, "the local store", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_LT(text->find("entry cccccccccccc: 2 parts differ"), text->find("entry bbbbbbbbbbbb"));
  EXPECT_THAT(*text, HasSubstr("compile_options: {\"dynamic\": false} here, {\"dynamic\": false, "
                               "\"mode\": \"max-autotune\"} in the entry"));
}

TEST(ExplainTest, SaysWhenAnEntryHasTheRunsVeryKey) {
  const KeyParts key = test::TestKey("hf:llama/forward");
  absl::StatusOr<std::string> text =
      ExplainRun(CompiledRun(key), {EntryOf(key, std::string(64, 'd'))}, "remote r", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("this run's very key"));
  EXPECT_THAT(*text, Not(HasSubstr("part differ")));
}

TEST(ExplainTest, NamesTheInductorConfigLineOfAGraphLevelMiss) {
  const KeyParts key = test::TestKey("hf:llama/forward");
  RunRecord run = CompiledRun(key);
  run.result.fx_graph_details = test::GraphDetailsText(
      "fhere", {"[c1] gm: graph code [cut]", "[a1] inductor_config[max_autotune]: False",
                "[t1] torch_version: <bytes>", "[e1] example_inputs[0]: TensorMetadata(1x8)"});
  const std::string there = test::GraphDetailsText(
      "fthere", {"[c1] gm: graph code, longer where the entry cut it later [cut]",
                 "[a2] inductor_config[max_autotune]: True", "[t1] torch_version: <bytes>",
                 "[x1] inductor_config[new_option]: 1"});
  absl::StatusOr<std::string> text =
      ExplainRun(run, {EntryOf(key, std::string(64, 'd'))}, "remote r", DetailsOf(there));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("this run's very key"));
  EXPECT_THAT(*text, HasSubstr("inductor's graph details (FxGraphHashDetails): 1 graph here, 1 "
                               "in the entry\n"
                               "    graph 1 here (key fhere) against the entry's graph 1 (key "
                               "fthere): 3 lines differ\n"
                               "      inductor_config[max_autotune]: False here, True in the "
                               "entry\n"
                               "      only here: example_inputs[0]: TensorMetadata(1x8)\n"
                               "      only in the entry: inductor_config[new_option]: 1\n"));
  EXPECT_THAT(*text, Not(HasSubstr("gm:")));  // the same hash: the same graph code, though cut
}

TEST(ExplainTest, ANameMissingFromASideWhoseLinesWereCutIsNotNamed) {
  GraphDetail here{"fhere", {"[a1] x: 1", "[b1] y: 2"}};
  GraphDetail there{"fthere", {"[a2] x: 3", "[c1] z: 4"}};
  EXPECT_EQ(DiffGraphLines(here, there).size(), 3u);
  here.cut = true;  // z may be among the run's lines left out
  std::vector<LineDiff> diffs = DiffGraphLines(here, there);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].name, "x");
  EXPECT_EQ(diffs[0].here, "1");
  EXPECT_EQ(diffs[0].there, "3");
  EXPECT_TRUE(diffs[1].only_here);
  EXPECT_EQ(diffs[1].name, "y");
  const DetailLine odd = SplitDetailLine("no shape at all");
  EXPECT_EQ(odd.name, "no shape at all");
  EXPECT_EQ(odd.hash, "no shape at all");
}

TEST(ExplainTest, CountsTheGraphsWhoseKeyTheEntryHas) {
  const KeyParts key = test::TestKey("hf:llama/forward");
  RunRecord run = CompiledRun(key);
  const std::string details = test::GraphDetailsText("fsame", {"[a1] x: 1"});
  run.result.fx_graph_details = details;
  absl::StatusOr<std::string> text =
      ExplainRun(run, {EntryOf(key, std::string(64, 'd'))}, "remote r", DetailsOf(details));
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("1 graph here with a key the entry has (the same graph)"));
  EXPECT_THAT(*text, Not(HasSubstr("against the entry's graph")));
}

TEST(ExplainTest, SaysPlainlyWhenGraphDetailsAreAbsentOnEitherSide) {
  const KeyParts key = test::TestKey("hf:llama/forward");
  const std::vector<Entry> entries = {EntryOf(key, std::string(64, 'd'))};
  absl::StatusOr<std::string> text = ExplainRun(CompiledRun(key), entries, "remote r", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("  inductor's graph details: none in the run (stored before "
                               "schema 30"));
  RunRecord run = CompiledRun(key);
  run.result.fx_graph_details = test::GraphDetailsText("fhere", {"[a1] x: 1"});
  text = ExplainRun(run, entries, "remote r", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("    inductor's graph details: none to compare in the entry (the "
                               "entry holds no fx_graph_details.json)\n"));
  run.result.fx_graph_details = "{not json";
  text = ExplainRun(run, entries, "remote r", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("inductor's graph details: the run's are malformed (not JSON)"));
  run.result.fx_graph_cache_misses = 0;  // no graph missed: nothing graph-level to explain
  text = ExplainRun(run, entries, "remote r", NoDetails);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, Not(HasSubstr("graph details")));
}

TEST(ExplainTest, RefusesARunThatWasNotCompiledOrHasNoKey) {
  RunRecord eager = CompiledRun(test::TestKey("t"));
  eager.spec.mode = "eager";
  EXPECT_FALSE(ExplainRun(eager, {}, "x", NoDetails).ok());
  RunRecord old = CompiledRun(test::TestKey("t"));
  old.result.compile_key.clear();
  EXPECT_THAT(ExplainRun(old, {}, "x", NoDetails).status().message(),
              HasSubstr("holds no compile key"));
}

}  // namespace
}  // namespace compatlab::cache
