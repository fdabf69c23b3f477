// The scrubber of a published export: the private text of the machine that
// exports (its host name, user names, home directory, compatlab checkout,
// virtual environment, caches) and of the machines whose runs it holds (home
// directories, site-packages prefixes, compile-cache paths) rewritten in every
// text field of a run, so that `export --publish` leaves none of it
// (doc/dataset.md, "Publishing").
#ifndef COMPATLAB_EXPORT_SCRUB_H_
#define COMPATLAB_EXPORT_SCRUB_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/records.h"

namespace compatlab {

// What the scrubber rewrites, and into what.
struct PrivateText {
  // Exact paths and their tokens ("<venv>", "<cache>", "<checkout>", "<home>"),
  // replaced longest first wherever the path is not followed by more of a
  // path component (/root never matches /rootfs).
  std::vector<std::pair<std::string, std::string>> paths;
  // Names replaced wherever they stand as a word (no letter, digit or '_' on
  // either side), exact case: user names as "<user>", host names as "<host>".
  std::vector<std::string> users;
  std::vector<std::string> hosts;
};

// This machine's private text: the host name (and its first label), the user
// name (passwd, $USER, $LOGNAME), $HOME, the checkout (ProjectHome()), the
// virtual environment ($VIRTUAL_ENV, <checkout>/.venv), the caches
// ($XDG_CACHE_HOME or ~/.cache, $HF_HOME, $HF_HUB_CACHE, $TORCHINDUCTOR_CACHE_DIR,
// $TRITON_CACHE_DIR); each path also as its canonical (symlink-free) form.
PrivateText ThisMachinesPrivateText();

// `text` with `p`'s paths and names rewritten, then the paths of any machine:
// a path's prefix up to `/site-packages` or `/dist-packages` becomes `<venv>`,
// up to a `compatlab-cache-*`, `compatlab-seed-*` or `torchinductor_*`
// directory `<cache>`, and `/home/NAME`, `/Users/NAME` and `/root` `<home>`.
std::string ScrubText(std::string_view text, const PrivateText& p);

// Scrubs every text field of `run` but run_id, sweep_id and test_id (the
// kind_params' keys and values included); a run whose test fields changed
// gets the test_id of its scrubbed fields. Returns whether anything changed.
bool ScrubRun(RunRecord& run, const PrivateText& p);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_SCRUB_H_
