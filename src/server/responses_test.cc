#include "server/responses.h"

#include "gtest/gtest.h"
#include "util/hash.h"

namespace compatlab {
namespace {

TEST(ResponsesTest, StatusCodesMapToHttpStatuses) {
  EXPECT_EQ(HttpStatusOf(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusOf(absl::FailedPreconditionError("harness test")), 400);
  EXPECT_EQ(HttpStatusOf(absl::NotFoundError("no run")), 404);
  EXPECT_EQ(HttpStatusOf(absl::UnavailableError("busy")), 503);
  EXPECT_EQ(HttpStatusOf(absl::UnimplementedError("no generator")), 501);
  EXPECT_EQ(HttpStatusOf(absl::InternalError("boom")), 500);
  EXPECT_EQ(HttpStatusOf(absl::DataLossError("damaged")), 500);
  const HttpError error = FromStatus(absl::NotFoundError("no run 'x'"));
  EXPECT_EQ(error.status, 404);
  EXPECT_EQ(error.message, "no run 'x'");
}

TEST(ResponsesTest, ErrorsAreJsonObjectsAndBadUtf8IsReplaced) {
  HttpResponse res;
  SendError(res, {400, "bad \xff byte"});
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, "{\"error\":\"bad \xEF\xBF\xBD byte\"}");
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(res.get_header_value("Content-Type"), "application/json");
}

TEST(ResponsesTest, ObjectWithRoomTakesItsMembersWithoutCopyingThem) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int i = 0; i < 100; ++i) rows.push_back({i, "a run's text"});
  const auto* rows_storage = rows.get_ref<nlohmann::ordered_json::array_t&>().data();
  nlohmann::ordered_json out = ObjectWithRoom(9);
  out["fields"] = nlohmann::ordered_json::array({"a", "b"});
  out["rows"] = std::move(rows);
  const auto* members = out.get_ref<nlohmann::ordered_json::object_t&>().data();
  for (const char* key : {"current", "limit", "total", "total_capped", "has_more", "next"}) {
    out[key] = nullptr;
  }
  out["hint"] = "x";
  // Nine members in the room made for them: never regrown, the rows never copied.
  EXPECT_EQ(out.get_ref<nlohmann::ordered_json::object_t&>().data(), members);
  EXPECT_EQ(out["rows"].get_ref<nlohmann::ordered_json::array_t&>().data(), rows_storage);
  EXPECT_EQ(out.size(), 9u);
  EXPECT_EQ(out["rows"].size(), 100u);
  EXPECT_EQ(out.begin().key(), "fields");  // in the order they came
}

TEST(ResponsesTest, ThePullCommandOfACompiledRunNamesItsEntryOnTheServedRemote) {
  RunRecord run;
  run.spec.mode = "compile";
  run.result.compile_key = R"({"test_id":"t","torch":"2.13.0+cpu"})";
  run.result.compile_entry = "kept 3f2a";
  const std::string id = Sha256Hex(run.result.compile_key);
  EXPECT_EQ(CachePullCommand(run, "hub:lab/compile-cache"),
            "compatlab cache pull hub:lab/compile-cache --key " + id);
  EXPECT_EQ(CachePullCommand(run, "/mnt/my cache"),
            "compatlab cache pull '/mnt/my cache' --key " + id);
  EXPECT_EQ(CachePullCommand(run, ""), "");
  run.result.compile_entry = "not kept: no cache artifacts";
  EXPECT_EQ(CachePullCommand(run, "/mnt/c"), "");
  run.result.cache_bundle = "hit";
  EXPECT_NE(CachePullCommand(run, "/mnt/c"), "");
  run.spec.mode = "eager";
  EXPECT_EQ(CachePullCommand(run, "/mnt/c"), "");
}

}  // namespace
}  // namespace compatlab
