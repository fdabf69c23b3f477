// The HTTP request and response as the server's handlers see them, apart from
// any HTTP library: the transport (http_transport.h) fills an HttpRequest from
// the wire and writes the HttpResponse back; routes, responses and static
// files work on these two types only.
#ifndef COMPATLAB_SERVER_HTTP_MESSAGE_H_
#define COMPATLAB_SERVER_HTTP_MESSAGE_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace compatlab {

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ... as sent
  std::string target;  // path and query string as sent, without a fragment
  std::string path;    // the target's path, percent-decoded
  std::multimap<std::string, std::string> params;            // the query's pairs, decoded
  std::vector<std::pair<std::string, std::string>> headers;  // in the order sent
  std::string body;

  // The first value of the header `name` (any case), "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // no Content-Length
  std::string body;

  // Sets `name` (any case) to `value`, replacing an earlier value.
  void set_header(std::string_view name, std::string value);
  // Sets `name` only when it is not set yet.
  void add_default_header(std::string_view name, std::string value);
  // The value of `name` (any case), "" when absent.
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // The body and its Content-Type.
  void set_content(std::string content, std::string content_type);
};

// The percent-decoded form of `text` (%XX, and %uXXXX as UTF-8); with
// `plus_is_space`, '+' is a space (query strings). A '%' not followed by hex
// digits is kept as it is.
std::string DecodeUrl(std::string_view text, bool plus_is_space);

// Splits a request target into its decoded path and query pairs: the fragment
// (from '#') is dropped, the path ends at the first '?', pairs are separated
// by '&' and split at their first '=' (a pair without '=' has the value "",
// empty pairs are skipped). InvalidArgument when the target does not start
// with '/' or holds a second '?'.
absl::Status ParseRequestTarget(std::string_view target, HttpRequest& request);

// Whether `a` and `b` are equal but for ASCII letter case (header names,
// tokens).
bool EqualsIgnoringCase(std::string_view a, std::string_view b);

// `text` without leading and trailing spaces and tabs.
std::string_view TrimHttpSpace(std::string_view text);

// The reason phrase of an HTTP status code ("Not Found"); "Unknown" for codes
// it does not know.
std::string_view HttpReason(int status);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_HTTP_MESSAGE_H_
