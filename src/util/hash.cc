#include "util/hash.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <new>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace compatlab {
namespace {

std::string ToHex(const unsigned char* bytes, unsigned int len) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

// A libcrypto digest step that failed: with SHA-256 always available, only
// an allocation fails one, so it is reported as the std::bad_alloc it is,
// never as a wrong (empty) digest.
void CheckDigestStep(int ok) {
  if (ok != 1) throw std::bad_alloc();
}

}  // namespace

std::string RandomHex(int bytes) {
  static std::random_device rd;
  static std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                             static_cast<uint64_t>(getpid()));
  std::vector<unsigned char> raw(static_cast<size_t>(bytes));
  for (unsigned char& b : raw) b = static_cast<unsigned char>(gen() & 0xff);
  return ToHex(raw.data(), static_cast<unsigned int>(raw.size()));
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw std::bad_alloc();
  if (EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    throw std::bad_alloc();
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::Update(std::string_view data) {
  CheckDigestStep(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()));
}

std::string Sha256::FinalHex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CheckDigestStep(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len));
  return ToHex(md, len);
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.FinalHex();
}

absl::StatusOr<std::string> HashDirectory(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("not a directory: ", dir.string()));
  }
  // Symlinks to files are followed (a Hub cache's snapshot links to its blobs);
  // symlinks to directories are not entered, so `a -> .` and link loops end
  // and the walk does not depend on the order of the entries.
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code entry_error;
    if (it->is_regular_file(entry_error)) {
      files.push_back(it->path().lexically_relative(dir).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  Sha256 h;
  std::vector<char> buf(1 << 16);
  for (const std::string& rel : files) {
    h.Update(rel);
    h.Update(std::string_view("\0", 1));
    std::ifstream in(dir / rel, std::ios::binary);
    if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot read ", (dir / rel).string()));
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      h.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
    }
    h.Update(std::string_view("\0", 1));
  }
  return h.FinalHex();
}

}  // namespace compatlab
