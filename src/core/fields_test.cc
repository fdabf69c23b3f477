#include "core/fields.h"

#include <string>

#include "core/limits.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

const FieldDef& Field(std::string_view name) {
  const FieldDef* field = FindResultField(name);
  EXPECT_NE(field, nullptr) << name;
  return *field;
}

TEST(ListFieldsTest, TheCurvesAreDeclaredListsOfTheirKind) {
  EXPECT_EQ(Field("train_loss").list, ListKind::kReals);
  EXPECT_EQ(Field("train_eager_loss").list, ListKind::kReals);
  EXPECT_EQ(Field("gen_decode_curve").list, ListKind::kRealPoints);
  EXPECT_EQ(Field("gen_mem_curve").list, ListKind::kIntegerPoints);
  EXPECT_EQ(Field("graph_break_reasons").list, ListKind::kNone);
  for (const FieldDef& field : ResultFields()) {
    if (field.list != ListKind::kNone) {
      EXPECT_EQ(field.type, FieldType::kText) << field.name << ": the store keeps JSON text";
    }
  }
}

TEST(ListFieldsTest, TextParsesToItsCanonicalForm) {
  const FieldDef& loss = Field("train_loss");
  auto reals = ParseListText(loss, "[10.5, 10.25, NaN, -Infinity, 3]");
  ASSERT_TRUE(reals.ok()) << reals.status();
  EXPECT_EQ(ListSize(*reals), 5u);
  EXPECT_EQ(ListText(loss, *reals), "[10.5,10.25,null,null,3.0]");
  const FieldDef& memory = Field("gen_mem_curve");
  auto points = ParseListText(memory, "[[0, 0], [15, 4096]]");
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(ListText(memory, *points), "[[0,0],[15,4096]]");
  EXPECT_EQ(ListText(Field("gen_decode_curve"), *ParseListText(Field("gen_decode_curve"), "[]")),
            "[]");
}

TEST(ListFieldsTest, RejectsWhatIsNotTheListNamingTheField) {
  std::string long_list = "[0";
  for (size_t i = 0; i < kMaxListElements; ++i) long_list += ",0";
  long_list += "]";
  for (auto [name, text, why] :
       std::initializer_list<std::tuple<const char*, std::string, const char*>>{
           {"train_loss", "{}", "not a JSON array"},
           {"train_loss", "[1, \"x\"]", "element 1 is not a number or null"},
           {"train_loss", long_list, "4097 elements, over the limit of 4096 (doc/limits.md)"},
           {"gen_decode_curve", "[[1, 0.5], [2]]", "element 1 is not a [position, value] pair"},
           {"gen_decode_curve", "[[-1, 0.5]]", "element 0: the position is not an integer >= 0"},
           {"gen_decode_curve", "[[1.5, 0.5]]", "element 0: the position is not an integer >= 0"},
           {"gen_match_curve", "[[1, NaN]]", "not a JSON array"},  // NaN only in lists of reals
           {"gen_mem_curve", "[[1, 0.5]]", "element 0: the value is not an integer"},
       }) {
    auto parsed = ParseListText(Field(name), text);
    ASSERT_FALSE(parsed.ok()) << name << " " << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(parsed.status().message()), std::string("field ") + name + ": " + why);
  }
}

}  // namespace
}  // namespace compatlab
