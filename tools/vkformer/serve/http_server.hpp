// `vkformer serve`'s HTTP/1.1 server, on Boost.Beast's parser and Asio's
// asynchronous sockets: one I/O thread reads and writes every connection, so an
// idle or trickling client holds no thread; a request whose handler may wait for
// the engine runs on one of `threads` handler threads. Every request is bounded:
// header size and count, body size (any transfer encoding, chunked included),
// and one deadline for the whole request to arrive. Keep-alive and pipelining
// (answered in order); SIGTERM / SIGINT drain what was accepted (docs/serving.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/http.hpp"

namespace vkf::tools::serve {

struct HttpLimits {
  size_t max_body_bytes = size_t(1) << 20;  ///< --max-body-kb: 413 beyond, any transfer encoding
  size_t max_header_bytes = 16 * 1024;      ///< request line and header fields together: 431 beyond
  unsigned max_headers = 100;               ///< header fields: 431 beyond
  /// --request-timeout-s: a request's line, headers and body must arrive within this
  /// (408 after it); also how long a kept-alive connection may wait idle, and a reply's write.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  unsigned threads = 16;                    ///< --threads: handler threads
  unsigned max_connections = 512;           ///< --max-connections: 503 and close beyond
};

/// Fills `res` with the JSON error reply for a request the server itself refuses
/// (400 malformed, 408 too slow, 413 body, 431 headers, 503 too many connections).
using ErrorReply = std::function<void(int status, const std::string& message, HttpResponse& res)>;

/// What `parse_requests` made of raw bytes: the requests in order, then the
/// status and message of the error that would end the connection (0: none).
struct ParsedBytes {
  std::vector<HttpRequest> requests;
  int error_status = 0;
  std::string error;
};
/// Parses `bytes` as the server parses a connection's bytes, with the same limits
/// and checks, without a socket (the fuzz target tests/fuzz/fuzz_http.cpp).
ParsedBytes parse_requests(std::string_view bytes, const HttpLimits& limits);

class HttpServer {
 public:
  HttpServer(const Router& router, HttpLimits limits, ErrorReply error_reply);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Listens on host:port (0: a free port); returns the port. @throws vkf::Error.
  int listen(const std::string& host, int port);
  /// Serves until SIGTERM or SIGINT, then stops accepting and returns once every
  /// accepted connection's request is answered (each step bounded by the deadlines).
  void run();

  struct Totals {
    uint64_t requests = 0;   ///< requests begun (a refused one too: it gets its error reply)
    uint64_t answered = 0;   ///< replies written whole
    uint64_t timed_out = 0;  ///< requests that did not arrive within the deadline (408)
    uint64_t abandoned = 0;  ///< replies not written whole: the client closed first
    uint64_t abandoned_since_signal = 0;  ///< those of requests in flight at the signal or after
    int signal = 0;          ///< the signal that stopped the server
  };
  Totals totals() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf::tools::serve
