// The API's routing table: one handler per exact path, for GET (and HEAD).
#ifndef COMPATLAB_SERVER_HTTP_ROUTER_H_
#define COMPATLAB_SERVER_HTTP_ROUTER_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "server/http_message.h"

namespace compatlab {

class HttpRouter {
 public:
  using Handler = std::function<void(const HttpRequest& request, HttpResponse& response)>;

  // Routes GET and HEAD requests for exactly `path` to `handler`; a later
  // handler for the same path replaces the earlier one.
  void Get(std::string path, Handler handler) { get_[std::move(path)] = std::move(handler); }

  // The handler of `path`, null when none.
  const Handler* Find(std::string_view path) const {
    auto it = get_.find(path);
    return it == get_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Handler, std::less<>> get_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_HTTP_ROUTER_H_
