#include "util/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Test, ValidTextIsUnchanged) {
  for (std::string text :
       {std::string(""), std::string("plain ascii"),
        std::string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string("nul\0inside", 10)}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(ToValidUtf8(text), text);
  }
}

TEST(Utf8Test, ReplacesIllFormedSequences) {
  // A lone continuation byte, an invalid lead byte, a truncated sequence.
  EXPECT_FALSE(IsValidUtf8("a\x80z"));
  EXPECT_EQ(ToValidUtf8("a\x80z"), std::string("a") + std::string(kReplacement) + "z");
  EXPECT_EQ(ToValidUtf8("\xFF\xFE"), std::string(kReplacement) + std::string(kReplacement));
  // One replacement for the maximal subpart "\xE2\x82" of a cut 3-byte sequence.
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), std::string("x") + std::string(kReplacement));
  EXPECT_EQ(ToValidUtf8("\xE2\x82y"), std::string(kReplacement) + "y");
}

TEST(Utf8Test, RejectsOverlongSurrogatesAndOutOfRange) {
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800, a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\xC0\xAF\xED\xA0\x80\xF4\x90")));
}

TEST(Utf8Test, EscapeControlsMakesTerminalControlsVisible) {
  using std::string_literals::operator""s;
  EXPECT_EQ(EscapeControls("a\x1b[2Jb\x07\0c"s, false), "a\\x1b[2Jb\\x07\\x00c");
  EXPECT_EQ(EscapeControls("tab\tok", false), "tab\tok");
  EXPECT_EQ(EscapeControls("x\ny\r", false), "x\\x0ay\\x0d");
  EXPECT_EQ(EscapeControls("x\ny\r", true), "x\ny\r");
  EXPECT_EQ(EscapeControls("csi \xc2\x9b end, \xc3\xa9 stays", false),
            "csi \\u009b end, \xc3\xa9 stays");
  EXPECT_EQ(EscapeControls("del\x7f", false), "del\\x7f");
}

}  // namespace
}  // namespace compatlab
