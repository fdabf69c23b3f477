#include "query/runs_format.h"

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/schema.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::FullRun;
using test::MakeRun;
using test::MakeSpec;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(RunsFormatTest, TableShowsOneAlignedLinePerRun) {
  RunRecord pass = MakeRun("s1", MakeSpec("llama"));
  pass.result.build_s = 0.25;
  pass.result.prepare_s = 1.5;
  pass.result.steady_median_s = 0.0042;
  pass.result.host_peak_rss_bytes = int64_t{300} << 20;
  pass.result.wall_s = 2.0;
  RunRecord crash = FullRun("s1");
  crash.result.error_message = std::string(100, 'x') + "\nsecond line";

  const std::string text = FormatRunsTable({pass, crash});
  const std::vector<std::string> lines = Lines(text);
  ASSERT_EQ(lines.size(), 6u) << text;  // FullRun is noisy: the footnote's two lines
  EXPECT_EQ(lines[4].rfind("~ noisy: ", 0), 0u) << text;
  EXPECT_EQ(lines[0].rfind("model", 0), 0u);
  EXPECT_NE(lines[0].find("steady_ms"), std::string::npos);
  EXPECT_NE(lines[2].find("hf:llama"), std::string::npos);
  EXPECT_NE(lines[2].find("pass"), std::string::npos);
  EXPECT_NE(lines[2].find("0.250"), std::string::npos);
  EXPECT_NE(lines[2].find("4.200"), std::string::npos);  // ms
  EXPECT_NE(lines[2].find("300"), std::string::npos);    // MiB
  EXPECT_NE(lines[3].find("crash(SIGSEGV)"), std::string::npos);
  EXPECT_NE(lines[3].find(std::string(57, 'x') + "..."), std::string::npos);
  EXPECT_EQ(lines[3].find("second line"), std::string::npos);
  // Unmeasured metrics are dashes; columns line up.
  const std::vector<std::string> sparse = Lines(FormatRunsTable({MakeRun("s1", MakeSpec("a"))}));
  EXPECT_NE(sparse[2].find("  -  "), std::string::npos) << sparse[2];
  EXPECT_EQ(lines[2].find("pass"), lines[0].find("status"));
  EXPECT_EQ(lines[3].find("crash"), lines[0].find("status"));
}

TEST(RunsFormatTest, LoadTableShowsThePassingLoadRunsFigures) {
  RunRecord server = FullRun("s1");
  server.spec.kind = "load";
  server.spec.kind_params = {{"scenario", "server"}, {"rate", "0.9x"}};
  server.result.status = TestStatus::kPass;
  server.result.load_slo_source = "single_stream_row";
  RunRecord offline = server;
  offline.spec.kind_params = {{"scenario", "offline"}};
  offline.result.load_scenario = "offline";
  offline.result.load_recompiles.reset();
  offline.result.load_warmup_s.reset();
  offline.result.load_warmup_recompiles.reset();
  RunRecord failed = server;
  failed.result.status = TestStatus::kFailToRun;
  EXPECT_EQ(FormatLoadTable({MakeRun("s1", MakeSpec("llama"))}), "");
  const std::vector<std::string> lines = Lines(FormatLoadTable({server, offline, failed}));
  ASSERT_EQ(lines.size(), 4u);  // header, rule, two passing rows
  EXPECT_NE(lines[0].find("goodput_s"), std::string::npos);
  EXPECT_NE(lines[0].find("mem_mib"), std::string::npos);  // a header for every cell
  EXPECT_NE(lines[2].find("server"), std::string::npos);
  EXPECT_NE(lines[2].find("0.9x=18.4/s"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("11.20"), std::string::npos);  // goodput
  EXPECT_NE(lines[2].find("72.0"), std::string::npos);   // TTFT p99 in ms
  EXPECT_NE(lines[0].find("recomp  warmup_s  warmup_recomp"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find(" 3      12.5              9 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("offline"), std::string::npos);
  EXPECT_NE(lines[3].find(" - "), std::string::npos);  // no recompiles in eager mode
  EXPECT_EQ(lines[2].find("/s*"), std::string::npos);  // the shared base: no mark

  RunRecord own = server;
  own.result.load_base_source = "this_child";
  const std::vector<std::string> marked = Lines(FormatLoadTable({own}));
  ASSERT_EQ(marked.size(), 4u);  // header, rule, the row, the footnote
  EXPECT_NE(marked[2].find("0.9x=18.4/s*"), std::string::npos) << marked[2];
  EXPECT_EQ(marked[3].rfind("* the rate's base was measured in the row's own process", 0), 0u);
  EXPECT_EQ(lines[2].find("11.20^"), std::string::npos);  // the group's objective: no mark

  RunRecord own_slo = server;
  own_slo.result.load_slo_source = "single_stream_p50x3";
  RunRecord single = own_slo;  // a single_stream row's objective is always its own: no mark
  single.spec.kind_params = {{"scenario", "single_stream"}};
  const std::vector<std::string> judged = Lines(FormatLoadTable({own_slo, single}));
  ASSERT_EQ(judged.size(), 5u);  // header, rule, the rows, the footnote
  EXPECT_NE(judged[2].find("11.20^"), std::string::npos) << judged[2];
  EXPECT_EQ(judged[3].find('^'), std::string::npos) << judged[3];
  EXPECT_EQ(judged[4].rfind("^ the goodput objective was calibrated in the row's own process", 0),
            0u);
}

TEST(RunsFormatTest, JsonHasEverySchemaFieldWithTypedValues) {
  RunRecord sparse = MakeRun("s1", MakeSpec("gpt2"), TestStatus::kSkipped);
  const std::string text = FormatRunsJson({FullRun("s1"), sparse});
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(text);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 2u);
  for (const auto& object : json) {
    ASSERT_EQ(object.size(), ResultFields().size());
    size_t i = 0;
    for (const auto& [key, value] : object.items()) {
      const FieldDef& field = ResultFields()[i++];
      EXPECT_EQ(key, field.name);
      if (field.list != ListKind::kNone) {
        // Curves are JSON arrays, null when not measured.
        EXPECT_TRUE(value.is_array() || value.is_null()) << key;
      } else if (value.is_null()) {
        EXPECT_TRUE(field.nullable) << key;
      } else if (field.type == FieldType::kText) {
        EXPECT_TRUE(value.is_string()) << key;
      } else if (field.type == FieldType::kInteger) {
        EXPECT_TRUE(value.is_number_integer()) << key;
      } else {
        EXPECT_TRUE(value.is_number()) << key;
      }
    }
  }
  EXPECT_EQ(json[0]["steady_median_s"], 0.00125);
  EXPECT_EQ(json[0]["host_peak_rss_bytes"], int64_t{5} << 33);
  EXPECT_EQ(json[0]["kind_params"], R"({"b":"x\"y","new_tokens":"16"})");
  EXPECT_EQ(json[0]["status"], "crash");
  EXPECT_EQ(json[0]["train_loss"], nlohmann::ordered_json::parse("[10.5,10.25,10.0]"));
  EXPECT_EQ(json[0]["gen_mem_curve"], nlohmann::ordered_json::parse("[[0,0],[15,4096]]"));
  EXPECT_TRUE(json[1]["train_loss"].is_null());
  EXPECT_TRUE(json[1]["build_s"].is_null());
  EXPECT_TRUE(json[1]["exit_code"].is_null());
  EXPECT_EQ(json[1]["status"], "skipped");
  // stderr_tail held invalid UTF-8; it is replaced, not an exception.
  EXPECT_NE(json[0]["stderr_tail"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(FormatRunsJson({}), "[]\n");
}

TEST(RunsFormatTest, SweepSummaryCountsModelTypeByStatus) {
  std::vector<RunRecord> runs = {
      MakeRun("s1", MakeSpec("llama")),
      MakeRun("s1", MakeSpec("llama", "train"), TestStatus::kOom),
      MakeRun("s1", MakeSpec("gpt2"), TestStatus::kCrash),
      MakeRun("s1", MakeSpec("gpt2", "train")),
      MakeRun("s1", MakeSpec("gpt2", "generate")),
  };
  // Figures of passing runs only: the oom row's are left out.
  for (RunRecord* r : {&runs[0], &runs[1], &runs[3], &runs[4]}) r->result.prepare_s = 2.0;
  runs[1].result.prepare_s = 99.0;
  runs[3].result.prepare_s = 1.0;
  runs[3].result.steady_median_s = 0.004;
  runs[3].result.speedup = 2.0;
  runs[4].result.speedup = 8.0;
  runs[2].result.blame = "harness";  // compatlab's failure: not in gpt2's pass rate
  TestSpec noop;
  noop.model_id = "none";
  noop.kind = "noop";
  const RunRecord harness = MakeRun("s1", noop);
  std::vector<RunRecord> all = runs;
  all.push_back(harness);
  EXPECT_EQ(
      FormatSweepSummary(all),
      "model_type  pass  crash  oom  total  not_model  pass_rate  noisy  prepare_s  steady_ms  "
      "speedup\n"
      "-----------------------------------------------------------------------------------------"
      "------\n"
      "gpt2           2      1    .      3          1     100.0%      .      1.500      4.000     "
      "4.00\n"
      "llama          1      .    1      2          .      50.0%      .      2.000          -     "
      "   -\n"
      "none           1      .    .      1          .     100.0%      .          -          -     "
      "   -\n"
      "-----------------------------------------------------------------------------------------"
      "------\n"
      "total          4      1    1      6          1      80.0%      .      2.000      4.000     "
      "4.00\n");
  EXPECT_EQ(FormatSweepSummary({}), "no runs\n");
}

// Issue 46: a noisy run's figures are counted, left out of the medians and the speedup,
// and said so with the reason; a type with only noisy runs shows theirs marked.
TEST(RunsFormatTest, SweepSummaryLeavesNoisyFiguresOutAndSaysSo) {
  std::vector<RunRecord> runs = {
      MakeRun("s1", MakeSpec("qwen3")),
      MakeRun("s1", MakeSpec("gpt2")),
      MakeRun("s1", MakeSpec("gpt2", "train")),
  };
  runs[0].result.steady_median_s = 0.3038;  // noisy: shown marked, its type has no quiet run
  runs[0].result.speedup = 0.20;
  runs[0].result.prepare_s = 37.5;
  runs[0].result.noisy = 1;
  runs[0].result.noisy_reason = "1.4 other runnable tasks > 0 free cores";
  runs[0].result.prepare_noisy = 0;
  runs[1].result.steady_median_s = 0.002;
  runs[1].result.speedup = 1.5;
  runs[1].result.prepare_s = 4.0;
  runs[2].result.steady_median_s = 0.100;  // noisy: left out of gpt2's and the total's figures
  runs[2].result.speedup = 0.1;
  runs[2].result.prepare_s = 8.0;
  runs[2].result.noisy = 1;
  const std::string text = FormatSweepSummary(runs);
  EXPECT_NE(
      text.find(
          "qwen3          1      1          .     100.0%      1     37.500   ~303.800    ~0.20\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "gpt2           2      2          .     100.0%      1      4.000      2.000     1.50\n"),
      std::string::npos)
      << text;
  // The total: qwen3's quiet first call counts; no noisy steady figure or speedup does.
  EXPECT_NE(
      text.find("total          3      3          .     100.0%      2     20.750      2.000     "
                "1.50\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("leave the noisy runs' figures out (~ marks a type's figure when all its "
                      "runs were noisy)\n~ noisy: timed while the machine was busy"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", 2 of 3 runs: "), std::string::npos) << text;
  EXPECT_NE(
      text.find("  hf:qwen3 cpu eager forward, sweep s1: steady: 1.4 other runnable tasks > 0 "
                "free cores\n"),
      std::string::npos)
      << text;
}

// Issue 46: query's table marks a noisy run's timing figures, each phase by its own verdict.
TEST(RunsFormatTest, RunsTableMarksNoisyFiguresWithTheirReason) {
  std::vector<RunRecord> runs = {MakeRun("s1", MakeSpec("llama")), MakeRun("s1", MakeSpec("gpt2"))};
  for (RunRecord& r : runs) {
    r.result.prepare_s = 1.25;
    r.result.steady_median_s = 0.002;
  }
  runs[0].result.noisy = 1;
  runs[0].result.noisy_reason = "load average 3.00 > 2 cores";
  runs[0].result.prepare_noisy = 0;
  const std::string text = FormatRunsTable(runs);
  EXPECT_NE(text.find("1.250"), std::string::npos) << text;
  EXPECT_EQ(text.find("~1.250"), std::string::npos) << text;  // its first call was quiet
  EXPECT_NE(text.find("~2.000"), std::string::npos) << text;
  EXPECT_NE(text.find("  hf:llama cpu eager forward, sweep s1: steady: load average 3.00 > 2 "
                      "cores\n"),
            std::string::npos)
      << text;
  runs[0].result.noisy = 0;
  EXPECT_EQ(FormatRunsTable(runs).find('~'), std::string::npos);
}

TEST(RunsFormatTest, SummaryPassRateLeavesOutReductionAndReferenceFailures) {
  std::vector<RunRecord> runs = {
      MakeRun("s1", MakeSpec("lilt")),
      MakeRun("s1", MakeSpec("lilt", "train"), TestStatus::kFailToRun),
      MakeRun("s1", MakeSpec("lilt", "generate"), TestStatus::kFailAccuracy),
  };
  runs[1].result.blame = "reduction";  // a rerun at full size passed
  runs[2].result.blame = "reference";  // the CPU reference failed
  const std::string text = FormatSweepSummary(runs);
  EXPECT_NE(text.find("lilt"), std::string::npos);
  // 1 of 1 run blamed on the model passed; 2 are not the model's.
  EXPECT_NE(text.find("3          2     100.0%"), std::string::npos) << text;
}

// hf-all's configuration-only types are skipped ("no modelling class"): never run, so
// their row has no rate ("-", not 0.0%) and the total leaves them out.
TEST(RunsFormatTest, SummaryPassRateLeavesOutSkippedRuns) {
  std::vector<RunRecord> runs = {
      MakeRun("s1", MakeSpec("bert")),
      MakeRun("s1", MakeSpec("bert", "train"), TestStatus::kFailToRun),
      MakeRun("s1", MakeSpec("EvollaModel"), TestStatus::kSkipped),
  };
  const std::string text = FormatSweepSummary(runs);
  EXPECT_NE(text.find("EvollaModel     .            .        1      1          .          -"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("total           1            1        1      3          .      50.0%"),
            std::string::npos)
      << text;
}

TEST(RunsFormatTest, CsvFieldQuotesPerRfc4180) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvField(" padded "), "\" padded \"");
}

TEST(RunsFormatTest, CsvHasEverySchemaFieldAndOneRecordPerRun) {
  RunRecord full = FullRun("s1");
  RunRecord minimal = MakeRun("s1", MakeSpec("gpt2"));
  const std::string csv = FormatRunsCsv({full, minimal});
  std::string header;
  for (const FieldDef& f : ResultFields())
    header += (header.empty() ? "" : ",") + std::string(f.name);
  ASSERT_EQ(csv.substr(0, header.size() + 2), header + "\r\n");
  // kind_params JSON is quoted with its quotes doubled; the model path too.
  EXPECT_NE(csv.find("\"{\"\"b\"\":\"\"x\\\"\"y\"\",\"\"new_tokens\"\":\"\"16\"\"}\""),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",\"/models/it's \"\"quoted\"\"\","), std::string::npos);
  // A metric: shortest round-trip text; NULL: empty.
  EXPECT_NE(csv.find(",0.00125,"), std::string::npos);
  EXPECT_NE(csv.find(",,"), std::string::npos);
  // The tail with bytes that are not UTF-8 holds U+FFFD instead.
  EXPECT_NE(csv.find("err\xEF\xBF\xBD\xEF\xBF\xBD bytes"), std::string::npos);
  // Three records: the stderr tail holds no line break, so every CRLF ends one.
  size_t records = 0;
  for (size_t at = csv.find("\r\n"); at != std::string::npos; at = csv.find("\r\n", at + 2)) {
    ++records;
  }
  EXPECT_EQ(records, 3u);
}

}  // namespace
}  // namespace compatlab
