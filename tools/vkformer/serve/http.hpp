// The HTTP request and response the routes see, and the router that picks a
// route's handler: small types of our own, so that the route code is not tied
// to the HTTP library (http_server.cpp, on Boost.Beast, fills and sends them).
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkf::tools::serve {

struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: path and query
  std::string path;    ///< the target's path, percent-decoded, without the query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::vector<std::string> matches;  ///< the route pattern's groups; [0] is the whole path

  /// The first header named `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

/// Writes one piece of a streamed body; false once the client is gone.
using ChunkWriter = std::function<bool(std::string_view)>;

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "text/plain", body;
  /// Set for a streamed body (chunked transfer encoding): called once the status
  /// line and headers are sent, on a handler thread; writes through its argument.
  std::function<void(const ChunkWriter&)> stream;

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
  void set_content(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
};

using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;

/// Routes by method and path (a regular expression over the whole path).
class Router {
 public:
  /// `blocking`: the handler may wait (for the engine): it runs on a handler
  /// thread; others (health, metrics, metadata) answer at once on the I/O thread.
  void get(const std::string& pattern, Handler h) { add("GET", pattern, std::move(h), false); }
  void post(const std::string& pattern, Handler h) { add("POST", pattern, std::move(h), true); }
  /// Runs before every route; returns true when it answered itself (the API key check).
  void before(std::function<bool(const HttpRequest&, HttpResponse&)> f) { before_ = std::move(f); }
  /// Answers a path no route matches (`allow` empty), or a known path with another
  /// method (`allow`: the methods it takes).
  void otherwise(std::function<void(const HttpRequest&, HttpResponse&, const std::string& allow)> f) {
    otherwise_ = std::move(f);
  }

  /// Whether `req` goes to a blocking handler (and so to a handler thread).
  bool blocking(const HttpRequest& req) const;
  /// Answers `req` (sets its matches). HEAD runs the GET route; the server drops the body.
  void dispatch(HttpRequest& req, HttpResponse& res) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
    bool blocking;
  };
  void add(const char* method, const std::string& pattern, Handler h, bool blocking) {
    routes_.push_back({method, std::regex(pattern), std::move(h), blocking});
  }
  const Route* find(const HttpRequest& req, std::smatch* m) const;

  std::vector<Route> routes_;
  std::function<bool(const HttpRequest&, HttpResponse&)> before_;
  std::function<void(const HttpRequest&, HttpResponse&, const std::string&)> otherwise_;
};

/// The path of a request target: up to '?' or '#', percent-decoded ("%2F" stays "/").
std::string target_path(std::string_view target);

}  // namespace vkf::tools::serve
