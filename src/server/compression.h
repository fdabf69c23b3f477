// gzip answers for clients that accept them (text, JSON, JavaScript, SVG,
// XML), as the page's browsers do.
#ifndef COMPATLAB_SERVER_COMPRESSION_H_
#define COMPATLAB_SERVER_COMPRESSION_H_

#include <string>
#include <string_view>

#include "server/http_message.h"

namespace compatlab {

// Whether an Accept-Encoding header value accepts gzip ("gzip" or "*", with a
// q-value other than 0).
bool AcceptsGzip(std::string_view accept_encoding);

// Whether answers of this Content-Type are worth compressing: text/* (but
// text/event-stream), JSON, JavaScript, SVG, XML, XHTML.
bool IsCompressibleType(std::string_view content_type);

// The gzip stream (RFC 1952) of `data`.
std::string GzipBytes(std::string_view data);

// Replaces the body of `response` by its gzip stream, with Content-Encoding
// gzip and Vary: Accept-Encoding, when `request` accepts gzip, the type is
// compressible and the body has at least 256 bytes; leaves it otherwise.
void GzipIfAccepted(const HttpRequest& request, HttpResponse& response);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_COMPRESSION_H_
