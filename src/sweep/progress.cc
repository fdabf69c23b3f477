#include "sweep/progress.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "query/noise_mark.h"
#include "sweep/summary.h"
#include "util/time.h"

namespace compatlab {

std::string TestLabel(const TestSpec& spec) {
  if (spec.IsHarness()) {
    auto rep = spec.kind_params.find("rep");
    return rep == spec.kind_params.end() ? spec.kind : absl::StrCat(spec.kind, " #", rep->second);
  }
  std::string model = spec.model_type.empty() ? spec.model_id : spec.model_type;
  if (spec.model_id.starts_with("ckpt:")) model = spec.model_id.substr(0, 17);
  // A code model beside its baseline: its own id (the type is the baseline's too).
  if (spec.model_id.starts_with("code:")) model = spec.model_id;
  const std::string mode =
      spec.backend.empty() ? spec.mode : absl::StrCat(spec.mode, ":", spec.backend);
  std::string label = absl::StrCat(model, " ", spec.kind, " ", mode, " ", spec.target, " ",
                                   spec.dtype, " ", spec.batch_size, "x", spec.seq_len);
  // A dynamic test runs every shape of its own: they and the setting are its label.
  if (spec.IsDynamic()) {
    label = absl::StrCat(model, " ", spec.kind, " ", mode, " ", spec.target, " ", spec.dtype, " ",
                         spec.shapes, " dynamic=", spec.dynamic);
  }
  if (spec.ranks != 1) absl::StrAppend(&label, " ranks=", spec.ranks);
  for (const auto& [key, value] : spec.kind_params) absl::StrAppend(&label, " ", key, "=", value);
  return label;
}

Progress::Progress(FILE* out, bool live, int64_t total, int64_t already_done,
                   std::function<double()> clock)
    : out_(out),
      live_(live),
      total_(total),
      done_(already_done),
      clock_(std::move(clock)),
      start_(clock_()) {}

void Progress::Started(const std::string& run_id, const TestSpec& spec) {
  current_[run_id] = TestLabel(spec);
  started_at_[run_id] = clock_();
  if (live_) Draw();
}

void Progress::Finished(const std::string& run_id, const TestSpec& spec, const RunResult& result) {
  current_.erase(run_id);
  started_at_.erase(run_id);
  noted_long_.erase(run_id);
  ++done_;
  ++done_here_;
  if (result.status == TestStatus::kPass) ++passed_;
  if (result.status == TestStatus::kSkipped) ++skipped_;
  if (live_) {
    NoteNoise(spec, result);
    Draw();
    return;
  }
  std::string status(TestStatusName(result.status));
  if (!result.status_detail.empty() &&
      (result.status == TestStatus::kCrash || result.status == TestStatus::kSkipped)) {
    absl::StrAppend(&status, " (", result.status_detail, ")");
  }
  std::string line = absl::StrFormat("[%d/%d] %-13s %s  %.2f s", done_, total_, status,
                                     TestLabel(spec), result.wall_s);
  if (result.status != TestStatus::kPass && !result.error_message.empty()) {
    std::string msg = result.error_message.substr(0, 120);
    for (char& c : msg) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    absl::StrAppend(&line, "  ", msg);
  }
  if (!result.rerun_status.empty()) {  // the reduction rerun that decided the blame
    absl::StrAppend(&line, "  [rerun at ", result.rerun_size, " size: ", result.rerun_status,
                    "; blame ", result.blame, "]");
  }
  std::fprintf(out_, "%s\n", line.c_str());
  NoteNoise(spec, result);
  std::fflush(out_);
}

void Progress::NoteNoise(const TestSpec& spec, const RunResult& result) {
  if (!result.noisy.has_value() && !result.prepare_noisy.has_value()) return;  // no verdict
  if (!AnyNoisy(result)) {
    busy_ = false;
    return;
  }
  noisy_.push_back(TestLabel(spec));
  if (busy_) return;
  busy_ = true;
  const std::string line = BusySpellLine(NoisyReasonText(result), noisy_);
  std::fprintf(out_, "%s%s", live_ ? "\r\033[K" : "", line.c_str());
}

void Progress::Note(const std::string& line) {
  std::fprintf(out_, "%s%s", live_ ? "\r\033[K" : "", line.c_str());
  if (live_) Draw();
  std::fflush(out_);
}

void Progress::Remeasured(const RunRecord& record) {
  const RunResult& r = record.result;
  auto ms = [](std::optional<double> s, bool noisy) {
    return MarkedFigure(s ? absl::StrFormat("%.3f ms", *s * 1000) : "-", noisy);
  };
  // The other measurement was noisy (quiet, still_noisy) or failed (no figure).
  Note(absl::StrFormat("compatlab: measured again (%s): %s: steady %s, the other measurement %s\n",
                       r.remeasure_state, TestLabel(record.spec),
                       ms(r.steady_median_s, SteadyNoisy(r)),
                       ms(r.remeasure_other_steady_median_s, true)));
}

void Progress::ResetClock() { start_ = clock_(); }

void Progress::Tick() {
  if (live_) {
    Draw();
    return;
  }
  const double now = clock_();
  for (const auto& [id, label] : current_) {
    const double running = now - started_at_[id];
    if (running < kLongTestS || noted_long_.contains(id)) continue;
    noted_long_.insert(id);
    std::fprintf(out_, "[%lld/%lld] %-13s %s  %.0f s so far\n", static_cast<long long>(done_),
                 static_cast<long long>(total_), "running", label.c_str(), running);
    std::fflush(out_);
  }
}

void Progress::Draw() {
  double elapsed = clock_() - start_;
  std::string eta = "?";
  if (done_here_ > 0 && done_ < total_) {
    eta = HumanDuration(elapsed / static_cast<double>(done_here_) *
                        static_cast<double>(total_ - done_));
  } else if (done_ >= total_) {
    eta = "0 s";
  }
  std::string current;
  for (const auto& [id, label] : current_) {
    if (!current.empty()) current += ", ";
    current += label;
  }
  std::string line = absl::StrFormat("[%d/%d] pass %d  fail %d  skip %d  elapsed %s  eta %s  %s",
                                     done_, total_, passed_, done_here_ - passed_ - skipped_,
                                     skipped_, HumanDuration(elapsed), eta, current);
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  std::fprintf(out_, "\r\033[K%s", line.c_str());
  std::fflush(out_);
}

void Progress::Close() {
  if (live_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace compatlab
