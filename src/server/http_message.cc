#include "server/http_message.h"

namespace compatlab {
namespace {

// The value of hex digits text[pos, pos + count), or -1 when one is not a hex digit.
int HexValueAt(std::string_view text, size_t pos, size_t count) {
  if (pos + count > text.size()) return -1;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    const char c = text[i];
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

// Appends the UTF-8 form of a code point below 0x10000 (a lone surrogate is
// left out).
void AppendUtf8CodePoint(int code, std::string& out) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0xD800 || code > 0xDFFF) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

template <typename Headers>
auto FindHeader(Headers& headers, std::string_view name) {
  for (auto it = headers.begin(); it != headers.end(); ++it) {
    if (EqualsIgnoringCase(it->first, name)) return it;
  }
  return headers.end();
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  auto it = FindHeader(headers, name);
  return it == headers.end() ? std::string() : it->second;
}

void HttpResponse::set_header(std::string_view name, std::string value) {
  auto it = FindHeader(headers, name);
  if (it != headers.end()) {
    it->second = std::move(value);
  } else {
    headers.emplace_back(std::string(name), std::move(value));
  }
}

void HttpResponse::add_default_header(std::string_view name, std::string value) {
  if (!has_header(name)) headers.emplace_back(std::string(name), std::move(value));
}

std::string HttpResponse::get_header_value(std::string_view name) const {
  auto it = FindHeader(headers, name);
  return it == headers.end() ? std::string() : it->second;
}

bool HttpResponse::has_header(std::string_view name) const {
  return FindHeader(headers, name) != headers.end();
}

void HttpResponse::set_content(std::string content, std::string content_type) {
  body = std::move(content);
  set_header("Content-Type", std::move(content_type));
}

std::string DecodeUrl(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 1 < text.size() && text[i + 1] == 'u') {
      if (const int code = HexValueAt(text, i + 2, 4); code >= 0) {
        AppendUtf8CodePoint(code, out);
        i += 5;
        continue;
      }
    } else if (c == '%') {
      if (const int byte = HexValueAt(text, i + 1, 2); byte >= 0) {
        out += static_cast<char>(byte);
        i += 2;
        continue;
      }
    } else if (c == '+' && plus_is_space) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

absl::Status ParseRequestTarget(std::string_view target, HttpRequest& request) {
  if (const size_t hash = target.find('#'); hash != std::string_view::npos) {
    target = target.substr(0, hash);
  }
  if (target.empty() || target[0] != '/') {
    return absl::InvalidArgumentError("the request target is not a path");
  }
  request.target = std::string(target);
  const size_t question = target.find('?');
  request.path = DecodeUrl(target.substr(0, question), false);
  request.params.clear();
  if (question == std::string_view::npos) return absl::OkStatus();
  std::string_view query = target.substr(question + 1);
  if (query.find('?') != std::string_view::npos) {
    return absl::InvalidArgumentError("the request target holds two '?'");
  }
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string name = DecodeUrl(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : DecodeUrl(pair.substr(eq + 1), true);
    if (!name.empty()) request.params.emplace(std::move(name), std::move(value));
  }
  return absl::OkStatus();
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view TrimHttpSpace(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string_view HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

}  // namespace compatlab
