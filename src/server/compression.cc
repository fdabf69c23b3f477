#include "server/compression.h"

#include <zlib.h>

#include <cstdlib>
#include <stdexcept>

namespace compatlab {
namespace {

constexpr size_t kMinGzipBytes = 256;  // smaller answers gain nothing

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const size_t semicolon = item.find(';');
    const std::string_view coding = TrimHttpSpace(item.substr(0, semicolon));
    if (!EqualsIgnoringCase(coding, "gzip") && coding != "*") continue;
    if (semicolon == std::string_view::npos) return true;
    std::string_view param = TrimHttpSpace(item.substr(semicolon + 1));
    if (!param.starts_with("q=")) return true;
    const std::string quality(param.substr(2));
    char* end = nullptr;
    const double q = std::strtod(quality.c_str(), &end);
    return end != quality.c_str() && q > 0;
  }
  return false;
}

bool IsCompressibleType(std::string_view content_type) {
  const std::string_view type = TrimHttpSpace(content_type.substr(0, content_type.find(';')));
  if (type.size() >= 5 && EqualsIgnoringCase(type.substr(0, 5), "text/")) {
    return !EqualsIgnoringCase(type, "text/event-stream");
  }
  for (std::string_view compressible :
       {"application/json", "application/javascript", "image/svg+xml", "application/xml",
        "application/xhtml+xml"}) {
    if (EqualsIgnoringCase(type, compressible)) return true;
  }
  return false;
}

std::string GzipBytes(std::string_view data) {
  z_stream stream{};
  constexpr int kGzipWindowBits = 15 + 16;  // 15: the largest window; +16: gzip framing
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  return out;
}

void GzipIfAccepted(const HttpRequest& request, HttpResponse& response) {
  if (response.body.size() < kMinGzipBytes || response.has_header("Content-Encoding")) return;
  if (!IsCompressibleType(response.get_header_value("Content-Type"))) return;
  response.set_header("Vary", "Accept-Encoding");
  if (!AcceptsGzip(request.header("Accept-Encoding"))) return;
  response.body = GzipBytes(response.body);
  response.set_header("Content-Encoding", "gzip");
}

}  // namespace compatlab
