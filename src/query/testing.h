// Data for tests of what reads the knowledge base. Test-only.
#ifndef COMPATLAB_QUERY_TESTING_H_
#define COMPATLAB_QUERY_TESTING_H_

namespace compatlab::test {

// A knowledge file with one entry, "mat1-shapes", explaining fail_to_run
// failures whose signature holds "RuntimeError: mat1".
inline constexpr const char* kMat1KnowledgeFile = R"({"entries": [
  {"id": "mat1-shapes", "pattern": "RuntimeError: mat1", "explanation": "the layers disagree",
   "cause": "C", "workaround": "W",
   "observed": [{"model_type": "b", "status": "fail_to_run", "signature": "RuntimeError: mat1",
                 "torch_version": "t", "transformers_version": "v"}]}]})";

}  // namespace compatlab::test

#endif  // COMPATLAB_QUERY_TESTING_H_
