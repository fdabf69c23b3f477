#include "query/text_table.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(TextTableTest, PadsColumnsAndAlignsNumbersRight) {
  TextTable table({{"name", TextTable::kLeft}, {"n", TextTable::kRight}, {"x", TextTable::kLeft}});
  table.AddRow({"llama", "1", ""});
  table.AddRow({"gpt2", "1234", "é"});
  table.AddSeparator();
  table.AddRow({"total", "1235", "z"});
  EXPECT_EQ(table.Render(),
            "name      n  x\n"
            "--------------\n"
            "llama     1\n"
            "gpt2   1234  é\n"
            "--------------\n"
            "total  1235  z\n");
}

TEST(TextTableTest, SanitizesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(SanitizeForTerminal("a\nb\tc\x1b[31md"), "a b c [31md");
  EXPECT_EQ(SanitizeForTerminal("\xc2\x9b"
                                "x"),
            " x");                                         // C1 CSI
  EXPECT_EQ(SanitizeForTerminal("ok \xff\xc3"), "ok ??");  // invalid, cut sequence
  EXPECT_EQ(SanitizeForTerminal("\xc0\xaf"), "??");        // overlong '/'
  EXPECT_EQ(SanitizeForTerminal("\xed\xa0\x80"), "???");   // surrogate
  EXPECT_EQ(SanitizeForTerminal("naïve ✓ 🙂"), "naïve ✓ 🙂");
  TextTable table({{"a", TextTable::kLeft}});
  table.AddRow({"x\ny"});
  EXPECT_EQ(table.Render(), "a\n---\nx y\n");
}

TEST(TextTableTest, TruncateCountsCharactersNotBytes) {
  EXPECT_EQ(Truncate("short", 10), "short");
  EXPECT_EQ(Truncate("exactly10!", 10), "exactly10!");
  EXPECT_EQ(Truncate("this is far too long", 10), "this is...");
  EXPECT_EQ(Truncate("ééééééééééé", 5), "éé...");
  EXPECT_EQ(DisplayWidth("éé..."), 5u);
  EXPECT_EQ(Truncate("line one\nline two", 12), "line one ...");
}

}  // namespace
}  // namespace compatlab
