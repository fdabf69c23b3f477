#include "sweep/summary.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "query/noise_mark.h"
#include "query/runs_format.h"
#include "util/time.h"

namespace compatlab {

std::string SweepStartLine(const std::string& sweep_id, const std::string& suite, int64_t planned,
                           int jobs, const std::string& db,
                           const std::vector<std::string>& models) {
  const std::string what = models.empty()
                               ? absl::StrCat("suite ", suite)
                               : absl::StrCat("--models ", absl::StrJoin(models, ","), " (suite ",
                                              suite, ": the suite's other settings)");
  return absl::StrFormat("compatlab: sweep %s: %s, %d tests, --jobs %d, store %s\n", sweep_id, what,
                         planned, jobs, db);
}

std::string ResumeLine(const std::string& sweep_id, int64_t left, int64_t planned) {
  return absl::StrFormat("compatlab: resuming sweep %s: %d of %d tests left\n", sweep_id, left,
                         planned);
}

namespace {

// /proc/loadavg's 1-minute load average and the running tasks other than the reader.
struct LoadAvg {
  double load = 0;
  long others = 0;
};
std::optional<LoadAvg> ParseLoadAvg(std::string_view proc_loadavg) {
  const std::string text(proc_loadavg);
  LoadAvg l;
  long running = 0;
  long total = 0;
  if (std::sscanf(text.c_str(), "%lf %*f %*f %ld/%ld", &l.load, &running, &total) != 3) {
    return std::nullopt;
  }
  l.others = std::max(0L, running - 1);
  return l;
}

}  // namespace

bool MachineQuiet(std::string_view proc_loadavg) {
  const std::optional<LoadAvg> l = ParseLoadAvg(proc_loadavg);
  return l && l->others == 0;
}

bool QuietWatch::Poll(std::string_view proc_loadavg) {
  quiet_polls_ = MachineQuiet(proc_loadavg) ? quiet_polls_ + 1 : 0;
  return quiet_polls_ >= kPolls;
}

std::string BusyMachineLine(std::string_view proc_loadavg, int cores) {
  const std::optional<LoadAvg> l = ParseLoadAvg(proc_loadavg);
  if (cores < 1 || !l) return "";
  const double load = l->load;
  const long others = l->others;
  if (load <= cores && others < cores) return "";
  return absl::StrFormat(
      "compatlab: warning: the machine is busy before the sweep starts (load average %.2f on %d "
      "cores, %d other running tasks): its timings are likely to be marked noisy\n",
      load, cores, others);
}

std::string BusySpellLine(const std::string& reason, const std::vector<std::string>& noisy_tests) {
  constexpr size_t kNamed = 5;
  std::vector<std::string> named(noisy_tests.begin(),
                                 noisy_tests.begin() + std::min(kNamed, noisy_tests.size()));
  std::string list = absl::StrJoin(named, ", ");
  if (noisy_tests.size() > kNamed) {
    absl::StrAppend(&list, " and ", noisy_tests.size() - kNamed, " more");
  }
  return absl::StrFormat(
      "compatlab: warning: the machine turned busy during the sweep (%s): %d test%s timed noisy "
      "so far (%s); their figures are marked %s\n",
      reason, noisy_tests.size(), noisy_tests.size() == 1 ? "" : "s", list, kNoisyMark);
}

std::string ZygoteReadyLine(double seconds, size_t preloaded, size_t failed) {
  return absl::StrFormat("compatlab: zygote ready in %.1f s (%d modelling modules preloaded%s)\n",
                         seconds, preloaded,
                         failed == 0 ? "" : absl::StrFormat(", %d failed", failed));
}

std::string CompilerStartupLine(std::optional<double> seconds,
                                const std::map<std::string, double>& phases,
                                const std::string& error) {
  if (!seconds.has_value()) {
    return absl::StrFormat(
        "compatlab: warning: the calibration compile failed (%s); each compiled test starts "
        "the compiler itself and compiler_startup_s stays empty\n",
        error);
  }
  std::vector<std::string> parts;
  for (const auto& [name, s] : phases) parts.push_back(absl::StrFormat("%s %.1f s", name, s));
  return absl::StrFormat("compatlab: compiler start-up %.1f s, once for the sweep%s\n", *seconds,
                         parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"));
}

std::string InterruptedLine(const std::string& reason, int64_t done, int64_t planned,
                            const std::string& db, const std::string& sweep_id) {
  return absl::StrFormat(
      "compatlab: %s after %d of %d tests; resume with: compatlab sweep --db %s --resume %s\n",
      reason, done, planned, db, sweep_id);
}

std::string SweepSummaryTable(const std::vector<RunRecord>& records) {
  const std::string load = FormatLoadTable(records);
  return FormatSweepSummary(records) + (load.empty() ? "" : "\n" + load);
}

std::string SweepTimeLine(const SweepTimes& times, const std::vector<RunRecord>& records) {
  double build = 0, compile = 0, first = 0, steady = 0, reference = 0, warm = 0, walls = 0;
  for (const RunRecord& run : records) {
    const RunResult& r = run.result;
    build += r.build_s.value_or(0);
    (run.spec.mode == "eager" ? first : compile) += r.prepare_s.value_or(0);
    steady += r.steady_wall_s.value_or(0);
    reference += r.reference_s.value_or(0);
    warm += r.warm_prepare_s.value_or(0);
    walls += r.wall_s;
  }
  const double rest = std::max(0.0, walls - build - compile - first - steady - reference - warm);
  std::string zygote = "no zygote";
  if (times.zygote_s) {
    zygote = absl::StrFormat("zygote start %.1f s", *times.zygote_s);
    if (times.compiler_startup_s) {
      absl::StrAppend(
          &zygote, absl::StrFormat(" (compiler start-up %.1f s of it)", *times.compiler_startup_s));
    }
  }
  return absl::StrFormat(
      "compatlab: time: %s in all: %s, waiting for quiet %.1f s; in the tests (%d, summed): "
      "build %.1f s, compile %.1f s, first calls %.1f s, steady %.1f s, references %.1f s, warm "
      "reruns %.1f s, the rest %.1f s\n",
      HumanDuration(times.wall_s), zygote, times.quiet_wait_s, records.size(), build, compile,
      first, steady, reference, warm, rest);
}

std::string SweepFinishedLine(const std::string& sweep_id, size_t results, double wall_s,
                              size_t this_run, int zygote_restarts) {
  const double per_test = this_run == 0 ? 0.0 : wall_s * 1000 / static_cast<double>(this_run);
  return absl::StrFormat(
      "compatlab: sweep %s finished: %d results in %s (%d this run, %.1f ms per test)%s\n",
      sweep_id, results, HumanDuration(wall_s), this_run, per_test,
      zygote_restarts > 0 ? absl::StrFormat("; zygote restarted %dx", zygote_restarts) : "");
}

}  // namespace compatlab
