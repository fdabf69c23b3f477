// `compatlab errors`: stored failures grouped by error signature, with the
// models and stacks they affect and the knowledge base's explanation
// (error_kb.h). Also the footer of `query`'s table: the explanations of the
// errors it shows.
#ifndef COMPATLAB_QUERY_ERRORS_REPORT_H_
#define COMPATLAB_QUERY_ERRORS_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/records.h"
#include "nlohmann/json.hpp"
#include "query/error_kb.h"

namespace compatlab {

// The failures of one (status, error_signature) pair; `errors` groups the
// statuses of IsFailureStatus (core/error_signature.h).
struct ErrorGroup {
  TestStatus status = TestStatus::kHarnessError;
  std::string signature;  // the runs' stored error_signature; may be empty
  int64_t runs = 0;
  std::vector<std::string> model_ids;    // distinct, sorted
  std::vector<std::string> model_types;  // distinct, sorted, without ""
  std::vector<std::string> stages;       // distinct, sorted, without ""
  struct Stack {
    std::string torch_version;
    std::string transformers_version;
    int64_t runs = 0;
  };
  std::vector<Stack> stacks;          // sorted by (torch, transformers)
  std::string first_seen;             // least started_at
  std::string last_seen;              // greatest started_at
  std::string example_run_id;         // the run of last_seen (then the greatest run_id)
  const KnownError* known = nullptr;  // the knowledge base's entry, if any
  // GroupErrors with by_blame: the runs' blame (core/blame.h; "model" for a row
  // stored without one) and the packages their missing_packages name (distinct,
  // sorted); both empty otherwise.
  std::string blame;
  std::vector<std::string> missing_packages;
};

// Groups the failures among `runs` (pass and skipped are left out) by
// (status, signature), most runs first (then most models, status, signature).
// `kb` may be null (no explanations); the groups' `known` point into it.
// With `by_blame` (errors --blame) by (blame, status, signature) instead, the
// blames in the order model, environment, harness, reference, reduction (then
// any other), each blame's groups in the order above.
std::vector<ErrorGroup> GroupErrors(const std::vector<RunRecord>& runs,
                                    const ErrorKnowledgeBase* kb, bool by_blame = false);

// One block per group, then a summary line:
//
//   [1] fail_to_run, 6 runs, 4 models: RuntimeError: mat1 and mat2 shapes ...
//       models   hf:align, hf:lilt, hf:sam, hf:zoedepth, +2 more
//       stage    prepare
//       stacks   torch 2.13.0+cpu, transformers 5.23.0 (6 runs)
//       seen     2026-11-30T03:50:37.123Z .. 2026-11-30T04:01:02.000Z
//       example  compatlab repro RUN_ID
//       known    [kb-id] explanation
//       cause    likely cause
//       fix      workaround
//
// A knowledge-base entry is shown in full once; later groups it explains
// say "known    [kb-id] as in [1]". Groups made by_blame are headed, where the
// blame changes, by
//
//   blame environment: 3 failures in 2 signatures (not the model's: not in the pass rate)
//
// and a group blamed on the environment has a line "needs    PIL, timm".
//
//   summary: 9 failures in 3 signatures; 2 signatures (8 failures) explained by the knowledge base
//
// `kb_origin` names the knowledge base in the summary ("" when none was
// loaded). Text is sanitized for the terminal; "no failures\n" when empty.
std::string FormatErrorsText(const std::vector<ErrorGroup>& groups, const std::string& kb_origin);

// {"knowledge_base": origin, "summary": {...}, "groups": [{status, signature,
// runs, models, model_ids, model_types, stages, stacks: [{torch_version,
// transformers_version, runs}], first_seen, last_seen, example_run_id,
// known: {id, explanation, cause, workaround} or null}]}; groups made
// by_blame add "blame" and "missing_packages" to each group and "blames":
// [{blame, failures, signatures}] (in the groups' order) to the summary. Ends
// in '\n'.
std::string FormatErrorsJson(const std::vector<ErrorGroup>& groups, const std::string& kb_origin);
// The same object as a JSON value (for serve's /api/errors, which adds to it).
// With `max_text_bytes` > 0 every text taken from the runs (signature, model
// ids and types, stages, versions, run id) is cut to that many bytes with
// TruncateForDisplay's marker: stored text may come from an import and be
// long (doc/limits.md); 0 keeps it whole.
nlohmann::ordered_json ErrorsJson(const std::vector<ErrorGroup>& groups,
                                  const std::string& kb_origin, size_t max_text_bytes = 0);

// A knowledge-base entry as every JSON answer shows it: {id, explanation,
// cause, workaround}, or null for nullptr.
nlohmann::ordered_json KnownErrorJson(const KnownError* known);

// For `query`'s table: the knowledge base's entries matching the failures
// among `runs`, one block each, in order of first appearance:
//
//   known errors (knowledge/errors.json):
//     [kb-id] hf:lilt, hf:align: explanation
//             workaround: ...
//
// "" when none matches.
std::string FormatKnownErrorsFooter(const std::vector<RunRecord>& runs,
                                    const ErrorKnowledgeBase& kb, const std::string& kb_origin);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_ERRORS_REPORT_H_
