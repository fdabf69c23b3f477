#include "export/scrub.h"

#include <string>

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::FullRun;

PrivateText Alice() {
  PrivateText p;
  p.paths = {{"/home/alice/.cache", "<cache>"},
             {"/home/alice/src/compatlab/.venv", "<venv>"},
             {"/home/alice/src/compatlab", "<checkout>"},
             {"/home/alice", "<home>"}};
  p.users = {"alice"};
  p.hosts = {"lab7"};
  return p;
}

TEST(ScrubTextTest, ThisMachinesPathsLongestFirst) {
  const PrivateText p = Alice();
  EXPECT_EQ(ScrubText("File \"/home/alice/src/compatlab/probe/x.py\", line 3", p),
            "File \"<checkout>/probe/x.py\", line 3");
  EXPECT_EQ(ScrubText("/home/alice/src/compatlab/.venv/bin/python", p), "<venv>/bin/python");
  EXPECT_EQ(ScrubText("/home/alice/src/compatlab/.venv/lib/python3.11/site-packages/t.py", p),
            "<venv>/lib/python3.11/site-packages/t.py");
  EXPECT_EQ(ScrubText("cache /home/alice/.cache/huggingface/hub", p),
            "cache <cache>/huggingface/hub");
  EXPECT_EQ(ScrubText("/home/alice", p), "<home>");
  // A longer component is another path: /home/alicexyz is scrubbed as any /home/NAME.
  EXPECT_EQ(ScrubText("/home/alicexyz/m", p), "<home>/m");
}

TEST(ScrubTextTest, AnyMachinesPrivatePaths) {
  const PrivateText none;
  EXPECT_EQ(ScrubText("/opt/conda/lib/python3.11/site-packages/torch/nn/a.py:12", none),
            "<venv>/lib/python3.11/site-packages/torch/nn/a.py:12");
  EXPECT_EQ(ScrubText("at /usr/lib/python3/dist-packages/x.py", none),
            "at <venv>/lib/python3/dist-packages/x.py");
  EXPECT_EQ(ScrubText("dir=/tmp/compatlab-cache-5f3a/run9/fx", none), "dir=<cache>/run9/fx");
  EXPECT_EQ(ScrubText("'/var/tmp/torchinductor_bob/ab/c.py'", none), "'<cache>/ab/c.py'");
  EXPECT_EQ(ScrubText("(/home/bob/w.bin)", none), "(<home>/w.bin)");
  EXPECT_EQ(ScrubText("/Users/bob", none), "<home>");
  EXPECT_EQ(ScrubText("file:///root/m/config.json", none), "file://<home>/m/config.json");
  // Not private: other paths, a division, /rootfs.
  for (const char* kept : {"/data/models/llama", "a/b and/or c", "/rootfs/x", "/home"}) {
    EXPECT_EQ(ScrubText(kept, none), kept);
  }
}

TEST(ScrubTextTest, NamesAsWordsOnly) {
  const PrivateText p = Alice();
  EXPECT_EQ(ScrubText("alice@lab7: alice's run on lab7.local", p),
            "<user>@<host>: <user>'s run on <host>.local");
  EXPECT_EQ(ScrubText("malice alice_x lab77 Alice", p), "malice alice_x lab77 Alice");
}

TEST(ScrubRunTest, EveryTextFieldAndTheTestIdFollows) {
  const PrivateText p = Alice();
  RunRecord run = FullRun("s1");
  const std::string run_id = run.run_id;
  const std::string test_id = run.test_id;
  run.spec.model_path = "/home/alice/models/m";
  run.result.error_message = "OSError: /home/alice/.cache/x missing on lab7";
  run.result.error_traceback = "File \"/home/alice/src/compatlab/probe/a.py\"";
  run.result.stdout_tail = "user alice";
  run.host = "lab7";
  EXPECT_TRUE(ScrubRun(run, p));
  EXPECT_EQ(run.spec.model_path, "<home>/models/m");
  EXPECT_EQ(run.result.error_message, "OSError: <cache>/x missing on <host>");
  EXPECT_EQ(run.result.error_traceback, "File \"<checkout>/probe/a.py\"");
  EXPECT_EQ(run.result.stdout_tail, "user <user>");
  EXPECT_EQ(run.host, "<host>");
  EXPECT_EQ(run.run_id, run_id);
  EXPECT_EQ(run.test_id, test_id);  // no test field changed
  EXPECT_FALSE(ScrubRun(run, p));

  run.spec.kind_params["weights"] = "/home/alice/w.safetensors";
  run.test_id = run.spec.TestId();
  EXPECT_TRUE(ScrubRun(run, p));
  EXPECT_EQ(run.spec.kind_params["weights"], "<home>/w.safetensors");
  EXPECT_EQ(run.test_id, run.spec.TestId());
}

TEST(ThisMachinesPrivateTextTest, NamesTheHomeAndTheHost) {
  const PrivateText p = ThisMachinesPrivateText();
  EXPECT_FALSE(p.hosts.empty());
  EXPECT_FALSE(p.users.empty());
  for (size_t i = 1; i < p.paths.size(); ++i) {
    EXPECT_GE(p.paths[i - 1].first.size(), p.paths[i].first.size());
  }
}

}  // namespace
}  // namespace compatlab
