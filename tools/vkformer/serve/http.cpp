#include "serve/http.hpp"

#include <strings.h>

namespace vkf::tools::serve {
namespace {

/// Paths longer than this match no route: libstdc++'s regex recurses once per
/// character, and no route's path comes near it.
constexpr size_t kMaxRoutedPath = 1024;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0) return value;
  return "";
}

std::string target_path(std::string_view target) {
  target = target.substr(0, target.find_first_of("?#"));
  std::string path;
  path.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    const int hi = target[i] == '%' && i + 2 < target.size() ? hex_value(target[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_value(target[i + 2]) : -1;
    if (lo >= 0 && !(hi == 2 && lo == 0xf)) {  // "%2F" stays: a decoded '/' would split a segment
      path += char(hi * 16 + lo);
      i += 2;
    } else {
      path += target[i];
    }
  }
  return path;
}

const Router::Route* Router::find(const HttpRequest& req, std::smatch* m) const {
  if (req.path.size() > kMaxRoutedPath) return nullptr;
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  for (const Route& r : routes_)
    if (r.method == method && std::regex_match(req.path, *m, r.pattern)) return &r;
  return nullptr;
}

bool Router::blocking(const HttpRequest& req) const {
  std::smatch m;
  const Route* r = find(req, &m);
  return r && r->blocking;
}

void Router::dispatch(HttpRequest& req, HttpResponse& res) const {
  if (before_ && before_(req, res)) return;
  std::smatch m;
  if (const Route* r = find(req, &m)) {
    req.matches.assign(m.begin(), m.end());
    r->handler(req, res);
    return;
  }
  // A known path with another method is 405 with the methods it takes.
  std::string allow;
  if (req.path.size() <= kMaxRoutedPath)
    for (const Route& r : routes_) {
      const std::string methods = r.method == "GET" ? "GET, HEAD" : r.method;
      if (allow.find(methods) == std::string::npos && std::regex_match(req.path, m, r.pattern))
        allow += (allow.empty() ? "" : ", ") + methods;
    }
  if (otherwise_) otherwise_(req, res, allow);
  else res.status = allow.empty() ? 404 : 405;
}

}  // namespace vkf::tools::serve
