// The sweep's lines for people on stderr (start, resume, zygote, interrupted,
// finished) and its end-of-sweep table on stdout. Pure text.
#ifndef COMPATLAB_SWEEP_SUMMARY_H_
#define COMPATLAB_SWEEP_SUMMARY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.h"

namespace compatlab {

// "compatlab: sweep ID: suite S, N tests, --jobs J, store DB\n"; with `models`
// (--models): "... sweep ID: --models a,b (suite S+models: the suite's other settings), ..."
std::string SweepStartLine(const std::string& sweep_id, const std::string& suite, int64_t planned,
                           int jobs, const std::string& db,
                           const std::vector<std::string>& models = {});

// "compatlab: resuming sweep ID: L of N tests left\n"
std::string ResumeLine(const std::string& sweep_id, int64_t left, int64_t planned);

// The warning printed once before a sweep's tests start when the machine is
// busy (doc/results-schema.md, "Noise"): `proc_loadavg` is /proc/loadavg's
// text ("5.65 2.65 2.03 3/456 12345": the 1-minute load average, then
// running/total tasks, the reader itself among the running), `cores` the
// usable CPUs. Busy: the load average above the cores, or as many other
// running tasks as cores. "" when quiet or the text does not parse.
//   "compatlab: warning: the machine is busy before the sweep starts (load
//    average 5.65 on 2 cores, 2 other running tasks): its timings are likely
//    to be marked noisy\n"
std::string BusyMachineLine(std::string_view proc_loadavg, int cores);

// Whether /proc/loadavg's text says the machine is quiet to measure on at this instant:
// no running task but the reader (the noisy rule's runnable others, doc/results-schema.md,
// "Noise"; the 1-minute load average, which lags a busy minute by tens of seconds, is not
// looked at). False when the text does not parse.
bool MachineQuiet(std::string_view proc_loadavg);

// The wait before noisy tests are measured again (ExecuteOptions::machine_quiet, polled
// twice a second): quiet once MachineQuiet held at kPolls consecutive polls (about 2 s),
// so that one idle instant of a job that runs in bursts does not count.
class QuietWatch {
 public:
  static constexpr int kPolls = 4;
  // One poll of /proc/loadavg's text: whether the machine has now been quiet kPolls polls
  // running.
  bool Poll(std::string_view proc_loadavg);

 private:
  int quiet_polls_ = 0;
};

// The line printed once per busy spell during a sweep, when a finished test's
// timing was noisy (doc/results-schema.md, "Noise") after quiet ones or at the
// start: `reason` the test's NoisyReasonText, `noisy_tests` the labels of every
// test timed noisy so far (at most 5 named, then a count):
//   "compatlab: warning: the machine turned busy during the sweep (steady: load
//    average 3.10 > 2 cores): 2 tests timed noisy so far (llama ..., gpt2 ...);
//    their figures are marked ~\n"
std::string BusySpellLine(const std::string& reason, const std::vector<std::string>& noisy_tests);

// "compatlab: zygote ready in 1.2 s (3 modelling modules preloaded[, F failed])\n"
std::string ZygoteReadyLine(double seconds, size_t preloaded, size_t failed);
// The calibration compile's line: its seconds and phases ("compatlab: compiler
// start-up 9.8 s, once for the sweep (compile 5.2 s, imports 3.1 s, ...)"), or,
// without seconds, a warning naming `error`.
std::string CompilerStartupLine(std::optional<double> seconds,
                                const std::map<std::string, double>& phases,
                                const std::string& error);

// "compatlab: interrupted by SIGINT after D of N tests; resume with:
// compatlab sweep --db DB --resume ID\n"
std::string InterruptedLine(const std::string& reason, int64_t done, int64_t planned,
                            const std::string& db, const std::string& sweep_id);

// The end of a sweep: the summary table of its records (then, when it ran kind
// load, FormatLoadTable of them), for stdout.
std::string SweepSummaryTable(const std::vector<RunRecord>& records);

// Where a sweep's wall time went (issue 46): the zygote's start (the compiler's start-up,
// the calibration compile, is part of it), the wait for quiet before noisy tests were
// measured again, and the tests' own phases summed over `records` (build_s; prepare_s of
// compile and export mode: compile; of eager mode: first calls; steady_wall_s;
// reference_s; warm reruns' warm_prepare_s; the rest of their wall_s: process start,
// imports, audit, memory), with --jobs above 1 summed over tests that overlapped:
//   "compatlab: time: 5 min 2 s in all: zygote start 12.0 s (compiler start-up 9.8 s of
//    it), waiting for quiet 0.0 s; in the tests (32, summed): build 3.2 s, compile
//    80.1 s, first calls 1.0 s, steady 40.2 s, references 10.0 s, warm reruns 0.0 s,
//    the rest 30.0 s\n"
struct SweepTimes {
  double wall_s = 0;
  std::optional<double> zygote_s;            // unset: no zygote started (nothing to run)
  std::optional<double> compiler_startup_s;  // the calibration compile, when it ran
  double quiet_wait_s = 0;
};
std::string SweepTimeLine(const SweepTimes& times, const std::vector<RunRecord>& records);

// "compatlab: sweep ID finished: R results in 2.0 s (T this run, 12.3 ms per
// test)[; zygote restarted Kx]\n"
std::string SweepFinishedLine(const std::string& sweep_id, size_t results, double wall_s,
                              size_t this_run, int zygote_restarts);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_SUMMARY_H_
