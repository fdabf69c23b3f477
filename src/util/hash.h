// Content hashing. SHA-256 through OpenSSL's libcrypto.
#ifndef COMPATLAB_UTIL_HASH_H_
#define COMPATLAB_UTIL_HASH_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace compatlab {

// Lower-case hex SHA-256 of `data` (64 chars); std::bad_alloc as Sha256.
std::string Sha256Hex(std::string_view data);

// `bytes` random bytes as lowercase hex (run and sweep ids; not for secrets).
std::string RandomHex(int bytes);

// Incremental SHA-256. Not thread-safe; one instance per digest. Throws
// std::bad_alloc when libcrypto cannot allocate (never an empty digest).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  // REQUIRES: called once; the object is spent afterwards.
  std::string FinalHex();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

// Hash of a directory's content: every regular file's relative path and bytes,
// in sorted path order. Symlinks to files are followed; symlinks to
// directories are not entered (a link loop or `a -> .` ends there); never
// throws. Used for `ckpt:<hash>` model ids.
absl::StatusOr<std::string> HashDirectory(const std::filesystem::path& dir);

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_HASH_H_
