#include "runner/fake_launcher.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace compatlab {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Stands in for a compiled test: a cold run fills its cache directory, a warm
// run hits what the cold one left there. A cold run whose directory started
// with a file `seed/probe` (a seeded directory) says so in status_detail.
void CompileCacheChild(const LaunchRequest& req, int result_fd) {
  const std::string entry = req.compile_cache_dir + "/entry";
  const std::string seeded = req.compile_cache_dir + "/seed/probe";
  if (req.compile_cache_dir.empty() || access(req.compile_cache_dir.c_str(), W_OK) != 0) {
    WriteAll(result_fd, R"({"status":"harness_error","error_message":"no cache directory"})");
  } else if (req.cache_phase == kCachePhaseWarm && access(entry.c_str(), F_OK) == 0) {
    WriteAll(result_fd,
             R"({"status":"pass","metrics":{"prepare_s":1.0,"cache_hits":2,"cache_misses":0}})");
  } else if (req.cache_phase == kCachePhaseWarm) {
    WriteAll(result_fd,
             R"({"status":"pass","metrics":{"prepare_s":5.0,"cache_hits":0,"cache_misses":2}})");
  } else {
    const bool was_seeded = access(seeded.c_str(), F_OK) == 0;
    FILE* f = std::fopen(entry.c_str(), "w");
    if (f != nullptr) std::fclose(f);
    WriteAll(result_fd, std::string(R"({"status":"pass","status_detail":")") +
                            (was_seeded ? "seeded" : "") +
                            R"(","metrics":{"prepare_s":5.0,"cache_hits":0,"cache_misses":2}})");
  }
}

// Stands in for kind load in eager mode. The row of kind_params fake_fail's scenario
// fails. A single_stream row passes with the objectives load_slo_ttft_s = seq_len / 100
// and load_slo_itl_s = seq_len / 1000; an offline row with load_requests_per_s =
// seq_len / 8; a server row reports the base its request carried (load_base_source
// this_child and load_offline_requests_per_s -1 when none). Offline and server rows
// report the objective their request carried (load_slo_source single_stream_p50x3 and
// load_slo_ttft_s -1 when none).
void LoadChild(const LaunchRequest& req, int result_fd) {
  const std::map<std::string, std::string>& params = req.spec.kind_params;
  const std::string scenario = params.count("scenario") ? params.at("scenario") : "";
  if (params.count("fake_fail") && params.at("fake_fail") == scenario) {
    WriteAll(result_fd, R"({"status":"fail_to_run","stage":"steady","error_message":"boom"})");
    return;
  }
  const double seq_len = static_cast<double>(req.spec.seq_len);
  std::string metrics = R"("load_scenario":")" + scenario + R"(")";
  if (scenario == "single_stream") {
    metrics += R"(,"load_slo_source":"single_stream_p50x3","load_slo_ttft_s":)" +
               std::to_string(seq_len / 100) + R"(,"load_slo_itl_s":)" +
               std::to_string(seq_len / 1000);
  } else {
    const bool judged = req.load_slo.has_value();
    metrics += std::string(R"(,"load_slo_source":")") +
               (judged ? "single_stream_row" : "single_stream_p50x3") + R"(","load_slo_ttft_s":)" +
               std::to_string(judged ? req.load_slo->ttft_s : -1.0) + R"(,"load_slo_itl_s":)" +
               std::to_string(judged ? req.load_slo->itl_s : -1.0) + R"(,"load_slo_run_id":")" +
               (judged ? req.load_slo->run_id : "") + R"(")";
  }
  if (scenario == "offline") {
    metrics += R"(,"load_requests_per_s":)" + std::to_string(seq_len / 8);
  } else if (scenario == "server") {
    const bool based = req.load_base.has_value();
    metrics += R"(,"load_offline_requests_per_s":)" +
               std::to_string(based ? req.load_base->offline_requests_per_s : -1.0) +
               R"(,"load_base_source":")" + (based ? "offline_row" : "this_child") +
               R"(","load_base_run_id":")" + (based ? req.load_base->run_id : "") + R"(")";
  }
  WriteAll(result_fd, R"({"status":"pass","metrics":{)" + metrics + "}}");
}

// Stands in for a reduced model whose failure depends on its size (kind_params
// fake_reduction): "reduced-only" fails at the reduced size and passes at full
// size (kind_params size full), "always" fails the same way at every size. A
// full-size request with fit_bytes below kind_params fake_full_bytes (default
// 1000) runs at the milder reduction (reduced 1), else at full size (reduced 0).
void ReductionChild(const LaunchRequest& req, int result_fd) {
  const std::map<std::string, std::string>& params = req.spec.kind_params;
  const bool full = params.count("size") && params.at("size") == "full";
  const long long full_bytes =
      params.count("fake_full_bytes") ? std::stoll(params.at("fake_full_bytes")) : 1000;
  const bool milder =
      full && params.count("fit_bytes") && std::stoll(params.at("fit_bytes")) < full_bytes;
  const std::string size = !full    ? R"("reduced":1,"reduction":"reduced")"
                           : milder ? R"("reduced":1,"reduction":"milder reduction")"
                                    : R"("reduced":0,"reduction":"full size")";
  if (!full || params.at("fake_reduction") == "always") {
    WriteAll(result_fd, R"({"status":"fail_to_run","stage":"prepare","error_type":"RuntimeError",)"
                        R"("error_message":"hidden size )" +
                            std::string(full ? "768" : "64") + R"( too small","metrics":{)" + size +
                            "}}");
    return;
  }
  WriteAll(result_fd, R"({"status":"pass","metrics":{)" + size + "}}");
}

// Stands in for a test timed on a busy machine (kind_params fake_noisy): "always" noisy,
// "once" noisy on its test's first launch only (`nth`: earlier launches of the test). A
// noisy measurement reports steady 8 ms, a quiet one 4 ms.
void NoisyChild(const LaunchRequest& req, int nth, int result_fd) {
  const std::string& how = req.spec.kind_params.at("fake_noisy");
  const bool noisy = how == "always" || (how == "once" && nth == 0);
  WriteAll(result_fd, std::string(R"({"status":"pass","metrics":{"prepare_s":1.0,)") +
                          (noisy ? R"("steady_median_s":0.008,"noisy":1,"noisy_reason":"fake load")"
                                 : R"("steady_median_s":0.004,"noisy":0,"noisy_reason":"")") +
                          R"(,"prepare_noisy":0}})");
}

[[noreturn]] void ChildMain(const LaunchRequest& req, int nth, int result_fd) {
  const MemoryLimit* limit = req.limit;
  if (limit != nullptr && !limit->ProcsPath().empty()) {
    FILE* f = std::fopen(limit->ProcsPath().c_str(), "w");
    if (f != nullptr) {
      std::fprintf(f, "%d\n", getpid());
      std::fclose(f);
    }
  } else if (limit != nullptr) {
    rlimit rl = {static_cast<rlim_t>(limit->Bytes()), static_cast<rlim_t>(limit->Bytes())};
    setrlimit(RLIMIT_AS, &rl);
  }
  // A model test stands in as noop (eager) or compile-cache (compile mode).
  const std::string kind = req.spec.IsHarness()      ? req.spec.kind
                           : req.spec.IsCompiled()   ? std::string("compile-cache")
                           : req.spec.kind == "load" ? std::string("load")
                                                     : std::string("noop");
  const std::string pass = R"({"protocol":1,"status":"pass","metrics":{"build_s":0.5}})";
  if (kind == "noop" && req.spec.kind_params.count("fake_noisy")) {
    NoisyChild(req, nth, result_fd);
  } else if (kind == "noop" && req.spec.kind_params.count("fake_reduction")) {
    ReductionChild(req, result_fd);
  } else if (kind == "noop") {
    WriteAll(result_fd, pass);
  } else if (kind == "hang") {
    while (true) pause();
  } else if (kind == "hang-hard") {
    signal(SIGTERM, SIG_IGN);
    pid_t grandchild = fork();
    if (grandchild == 0) {
      while (true) pause();
    }
    WriteAll(1, "grandchild " + std::to_string(grandchild) + "\n");
    while (true) pause();
  } else if (kind == "segfault") {
    signal(SIGSEGV, SIG_DFL);  // a sanitizer's handler would turn it into an exit
    raise(SIGSEGV);
  } else if (kind == "abort") {
    signal(SIGABRT, SIG_DFL);
    abort();
  } else if (kind == "oom") {
    std::vector<char*> blocks;
    while (true) {
      char* p = static_cast<char*>(std::malloc(16 << 20));
      if (p == nullptr) {
        WriteAll(result_fd, R"({"status":"oom","stage":"run","error_type":"MemoryError"})");
        _exit(0);
      }
      std::memset(p, 1, 16 << 20);
      blocks.push_back(p);
    }
  } else if (kind == "flood") {
    size_t bytes = std::stoul(req.spec.kind_params.at("bytes"));
    std::string chunk(1 << 16, 'x');
    for (size_t done = 0; done < bytes; done += chunk.size()) {
      WriteAll(1, chunk);
      WriteAll(2, chunk);
    }
    WriteAll(1, "END-OF-FLOOD");
    WriteAll(result_fd, pass);
  } else if (kind == "load") {
    LoadChild(req, result_fd);
  } else if (kind == "compile-cache") {
    CompileCacheChild(req, result_fd);
  } else if (kind == "exit3") {
    _exit(3);
  } else if (kind == "bad-result") {
    WriteAll(result_fd, "{not json");
  } else if (kind == "fail") {
    WriteAll(result_fd, R"({"status":"fail_to_run","stage":"run","error_type":"RuntimeError",)"
                        R"("error_message":"boom","error_traceback":"Traceback: ..."})");
  }
  _exit(0);
}

}  // namespace

absl::StatusOr<pid_t> FakeLauncher::Launch(const LaunchRequest& request, int stdout_fd,
                                           int stderr_fd, int result_fd) {
  ++launches_;
  int nth = 0;  // earlier launches of this test
  for (const LaunchRequest& r : requests_) nth += r.spec.TestId() == request.spec.TestId() ? 1 : 0;
  requests_.push_back(request);
  requests_.back().limit = nullptr;  // not valid once the test is over
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    dup2(stdout_fd, 1);
    dup2(stderr_fd, 2);
    ChildMain(request, nth, result_fd);
  }
  setpgid(pid, pid);
  return pid;
}

}  // namespace compatlab
