#include "query/search_hint.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(SearchHintTest, AHubIdRelatesToItsNamesLeadingWord) {
  EXPECT_EQ(RelatedModelStem("Qwen/Qwen3-0.6B"), "qwen3");
  EXPECT_EQ(RelatedModelStem("hub:meta-llama/Llama-3.2-1B@main"), "llama");
  EXPECT_EQ(RelatedModelStem("hf:gpt2"), "gpt2");
  EXPECT_EQ(RelatedModelStem("---"), "");
}

TEST(SearchHintTest, NamesWhatTheStoreHasAndTheCommandToTestIt) {
  EXPECT_EQ(EmptySearchHint("Qwen/Qwen3-0.6B", {{"hf:qwen3_moe", 2}, {"hf:qwen3", 4}}),
            "no results for Qwen/Qwen3-0.6B; hf:qwen3 has 4 results; hf:qwen3_moe has 2 "
            "results; run `compatlab sweep --models hub:Qwen/Qwen3-0.6B`");
  EXPECT_EQ(EmptySearchHint("hub:a/b", {}),
            "no results for hub:a/b; run `compatlab sweep --models hub:a/b`");
  EXPECT_EQ(EmptySearchHint("Mistral", {{"hf:mistral", 1}}),
            "no results for Mistral; hf:mistral has 1 result; run `compatlab sweep --models "
            "mistral`");
}

}  // namespace
}  // namespace compatlab
