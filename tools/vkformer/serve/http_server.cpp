#include "serve/http_server.hpp"

#include <signal.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <future>
#include <optional>
#include <set>

#include "vkformer/error.hpp"

namespace vkf::tools::serve {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Parser = http::request_parser<http::string_body>;

namespace {

/// How long a connection waiting for a request that has not begun may still wait
/// once the server is stopping (a client that connected just before SIGTERM).
constexpr std::chrono::milliseconds kStopGrace{1000};
/// After an error reply, the rest of the request is read and dropped for at most
/// this long, so that the client reads the reply rather than a reset.
constexpr std::chrono::milliseconds kLinger{2000};

void configure(Parser& p, const HttpLimits& limits) {
  p.header_limit(uint32_t(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
  p.body_limit(uint64_t(limits.max_body_bytes));
}

/// The reply to a request whose header is complete, when it is refused (0: none).
std::pair<int, std::string> check_header(const Parser& p, const HttpLimits& limits) {
  const auto& msg = p.get();
  const size_t fields = size_t(std::distance(msg.begin(), msg.end()));
  if (fields > limits.max_headers)
    return {431, "the request has " + std::to_string(fields) + " header fields, more than " +
                     std::to_string(limits.max_headers)};
  return {0, ""};
}

/// The reply to a request the parser refused.
std::pair<int, std::string> parse_error(const error_code& ec, const HttpLimits& limits) {
  if (ec == http::error::header_limit)
    return {431, "the request line and header fields are larger than " + std::to_string(limits.max_header_bytes / 1024) +
                     " KiB"};
  if (ec == http::error::body_limit)
    return {413, "the request body is larger than " + std::to_string(limits.max_body_bytes / 1024) + " KiB (--max-body-kb)"};
  return {400, "malformed HTTP request: " + ec.message()};
}

HttpRequest to_request(http::request<http::string_body>&& msg) {
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.path = target_path(req.target);
  for (const auto& f : msg) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  req.body = std::move(msg.body());
  return req;
}

/// A header value as written: no line breaks (a route's value must not split the header).
std::string header_safe(std::string v) {
  for (char& c : v)
    if (c == '\r' || c == '\n') c = ' ';
  return v;
}

/// The status line and header fields of `res`; `length`: Content-Length, or none for a chunked body.
std::string serialize_head(const HttpResponse& res, bool keep_alive, std::optional<size_t> length) {
  std::string reason(http::obsolete_reason(http::int_to_status(unsigned(res.status))));
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + (reason.empty() ? "Unknown" : reason) + "\r\n";
  out += "Server: vkformer\r\n";
  out += "Content-Type: " + header_safe(res.content_type) + "\r\n";
  for (const auto& [name, value] : res.headers) out += header_safe(name) + ": " + header_safe(value) + "\r\n";
  out += length ? "Content-Length: " + std::to_string(*length) + "\r\n" : std::string("Transfer-Encoding: chunked\r\n");
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

std::string chunk(std::string_view piece) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
  return size + std::string(piece) + "\r\n";
}

}  // namespace

ParsedBytes parse_requests(std::string_view bytes, const HttpLimits& limits) {
  ParsedBytes out;
  while (!bytes.empty()) {
    Parser p;
    configure(p, limits);
    p.eager(true);
    error_code ec;
    bool header_checked = false;
    while (!p.is_done()) {
      const size_t used = p.put(asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (!ec && p.is_header_done() && !header_checked) {
        header_checked = true;
        if (auto [status, message] = check_header(p, limits); status) {
          out.error_status = status, out.error = message;
          return out;
        }
      }
      // A request cut short: the server would wait for the rest (all there is was given).
      if (ec == http::error::need_more || (!ec && used == 0)) return out;
      if (ec) break;
    }
    if (ec) {
      std::tie(out.error_status, out.error) = parse_error(ec, limits);
      return out;
    }
    const bool keep_alive = p.get().keep_alive();
    out.requests.push_back(to_request(p.release()));
    if (!keep_alive) break;  // the server closes after this one
  }
  return out;
}

struct HttpServer::Impl {
  const Router& router;
  HttpLimits limits;
  ErrorReply error_reply;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io};
  asio::thread_pool pool;
  bool stopping = false;
  class Connection;
  std::set<std::shared_ptr<Connection>> connections;  ///< the I/O thread's only
  std::atomic<uint64_t> requests{0}, answered{0}, timed_out{0};
  /// Requests whose reply could not be written whole (the client closed first), in all
  /// and when the signal came.
  std::atomic<uint64_t> abandoned{0};
  uint64_t abandoned_at_stop = 0;
  int signal = 0;

  Impl(const Router& r, HttpLimits l, ErrorReply e)
      : router(r), limits(l), error_reply(std::move(e)), pool(std::max(1u, l.threads)) {}

  void accept();
  void start(tcp::socket socket);
  void stop(int sig);
  /// `fn`'s reply, whatever it throws (a route's errors are its own replies; this is the last resort).
  void answer(HttpRequest& req, HttpResponse& res) const {
    try {
      router.dispatch(req, res);
    } catch (const std::exception& e) {
      res = HttpResponse();
      error_reply(500, std::string("internal error: ") + e.what(), res);
    }
  }
};

/// One client connection: reads a request, answers it, and reads the next (keep-alive
/// and pipelining: one request at a time, answered in order). Lives on the I/O
/// thread; a blocking handler runs on a handler thread and posts its reply back.
class HttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& srv, tcp::socket socket)
      : srv_(srv), socket_(std::move(socket)), deadline_(srv.io), buffer_(srv.limits.max_header_bytes + 65536) {}

  void read_request() {
    state_ = State::waiting;
    timed_out_ = false;
    parser_.emplace();
    configure(*parser_, srv_.limits);
    arm(srv_.limits.request_timeout);
    if (srv_.stopping) stop_grace();
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  /// The server stops: a connection waiting for a request that has not begun gets a
  /// short grace for it to begin; every other one finishes what it is doing.
  void stop_grace() {
    if (state_ == State::waiting && !begun()) {
      if (deadline_.expiry() > std::chrono::steady_clock::now() + kStopGrace) arm(kStopGrace);
    }
  }

  void close() {
    if (state_ == State::closed) return;
    state_ = State::closed;
    deadline_.cancel();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    srv_.connections.erase(shared_from_this());
  }

 private:
  enum class State { waiting, reading, handling, writing, lingering, closed };

  bool begun() const { return buffer_.size() > 0 || (parser_ && parser_->got_some()); }

  /// Sets the one deadline of what the connection does now (a request's arrival, a
  /// reply's write); an older deadline that already fired is ignored by its number.
  void arm(std::chrono::milliseconds d) {
    deadline_.expires_after(d);
    deadline_.async_wait([weak = weak_from_this(), armed = ++armed_](error_code ec) {
      if (auto self = weak.lock(); self && !ec && armed == self->armed_) self->on_deadline();
    });
  }

  void on_deadline() {
    if (state_ == State::waiting || state_ == State::reading) {
      timed_out_ = true;  // the read ends with operation_aborted; on_read_error answers 408
      error_code ignored;
      socket_.cancel(ignored);
    } else if (state_ == State::writing || state_ == State::lingering) {
      close();  // a client that reads nothing of its reply, or a linger's end
    }
  }

  void on_header(error_code ec) {
    if (state_ == State::closed) return;
    if (ec) return on_read_error(ec);
    state_ = State::reading;
    if (auto [status, message] = check_header(*parser_, srv_.limits); status) return refuse(status, message);
    const auto& msg = parser_->get();
    const auto expect = msg[http::field::expect];
    if (!parser_->is_done() && beast::iequals(expect, "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue), [self = shared_from_this()](error_code ec, size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    if (parser_->is_done()) return on_request();
    read_body();
  }

  void read_body() {
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
      if (self->state_ == State::closed) return;
      if (ec) return self->on_read_error(ec);
      self->on_request();
    });
  }

  void on_read_error(error_code ec) {
    if (timed_out_) {
      if (!begun()) return close();  // an idle connection, not a request
      ++srv_.timed_out;
      return refuse(408, "the request did not arrive within " + seconds(srv_.limits.request_timeout) +
                             " (--request-timeout-s)");
    }
    // Closed or reset by the client: between requests, that is the end of the
    // connection; within one, nobody is left to read a reply.
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::broken_pipe || ec == asio::error::operation_aborted || ec == http::error::partial_message)
      return close();
    auto [status, message] = parse_error(ec, srv_.limits);
    refuse(status, message);
  }

  static std::string seconds(std::chrono::milliseconds d) {
    char s[32];
    std::snprintf(s, sizeof s, "%g s", double(d.count()) / 1000);
    return s;
  }

  /// Answers a refused request with its error, then closes (the rest of it is unread).
  void refuse(int status, const std::string& message) {
    ++srv_.requests;
    HttpResponse res;
    srv_.error_reply(status, message, res);
    keep_alive_ = false;
    write(std::move(res), false);
  }

  void on_request() {
    ++armed_;  // no deadline while the handler runs: --timeout-s bounds it
    keep_alive_ = parser_->get().keep_alive();
    HttpRequest req = to_request(parser_->release());
    ++srv_.requests;
    state_ = State::handling;
    const bool head = req.method == "HEAD";
    if (!srv_.router.blocking(req)) {
      HttpResponse res;
      srv_.answer(req, res);
      return write(std::move(res), head);
    }
    // The work guard keeps run() going until the handler has handed its reply back.
    asio::post(srv_.pool, [self = shared_from_this(), req = std::move(req), head,
                           guard = asio::make_work_guard(srv_.io)]() mutable {
      HttpResponse res;
      self->srv_.answer(req, res);
      if (res.stream) return self->stream(res);
      asio::post(self->srv_.io, [self, res = std::move(res), head]() mutable { self->write(std::move(res), head); });
    });
  }

  /// Whether the connection stays open after this reply: the client wants it, and
  /// the server is not stopping (unless the next request is already here: pipelined).
  bool keep_after_reply() const { return keep_alive_ && (!srv_.stopping || buffer_.size() > 0); }

  void write(HttpResponse res, bool head) {
    if (state_ == State::closed) {  // closed while the handler ran (a deadline, the client)
      ++srv_.abandoned;
      return;
    }
    state_ = State::writing;
    const bool keep = keep_after_reply();
    auto bytes = std::make_shared<std::string>(serialize_head(res, keep, res.body.size()));
    if (!head) *bytes += res.body;
    arm(srv_.limits.request_timeout);
    asio::async_write(socket_, asio::buffer(*bytes), [self = shared_from_this(), bytes, keep](error_code ec, size_t) {
      if (self->state_ == State::closed || ec) {
        ++self->srv_.abandoned;
        return self->close();
      }
      ++self->srv_.answered;
      self->after_reply(keep);
    });
  }

  void after_reply(bool keep) {
    if (keep) return read_request();
    if (state_ == State::handling || state_ == State::writing) {
      if (parser_ && !parser_->is_done()) return linger();
    }
    close();
  }

  /// After an error reply to a request not read whole: stop sending, and read and drop
  /// what the client still sends for a moment, so that it reads the reply, not a reset.
  void linger() {
    state_ = State::lingering;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    arm(kLinger);
    drain();
  }
  void drain() {
    static thread_local char sink[16384];
    socket_.async_read_some(asio::buffer(sink), [self = shared_from_this()](error_code ec, size_t) {
      if (self->state_ != State::lingering) return;
      if (ec) return self->close();
      self->drain();
    });
  }

  /// A streamed reply, on the handler thread: each piece is written by the I/O
  /// thread while this one waits, so a write that fails (the client gone) is seen.
  void stream(HttpResponse& res) {
    auto send = [self = shared_from_this()](std::string bytes) {
      auto done = std::make_shared<std::promise<bool>>();
      std::future<bool> ok = done->get_future();
      asio::post(self->srv_.io, [self, done, bytes = std::make_shared<std::string>(std::move(bytes))] {
        if (self->state_ == State::closed) return done->set_value(false);
        self->state_ = State::writing;
        self->arm(self->srv_.limits.request_timeout);
        asio::async_write(self->socket_, asio::buffer(*bytes), [self, done, bytes](error_code ec, size_t) {
          if (self->state_ != State::closed) self->state_ = State::handling;
          done->set_value(!ec && self->state_ != State::closed);
        });
      });
      return ok.get();
    };
    // Reads keep_alive_ off the I/O thread: nothing else touches it while the handler runs.
    auto keep = std::make_shared<bool>(false);
    {
      std::promise<bool> p;
      auto f = p.get_future();
      asio::post(srv_.io, [self = shared_from_this(), &p] { p.set_value(self->keep_after_reply()); });
      *keep = f.get();
    }
    bool ok = send(serialize_head(res, *keep, std::nullopt));
    if (ok) res.stream([&](std::string_view piece) { return piece.empty() ? ok : (ok = ok && send(chunk(piece))); });
    if (ok) ok = send("0\r\n\r\n");
    asio::post(srv_.io, [self = shared_from_this(), ok, keep] {
      if (self->state_ == State::closed || !ok) {
        ++self->srv_.abandoned;
        return self->close();
      }
      ++self->srv_.answered;
      self->after_reply(*keep);
    });
  }

  Impl& srv_;
  tcp::socket socket_;
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  State state_ = State::waiting;
  uint64_t armed_ = 0;  ///< how many deadlines were set
  bool timed_out_ = false;
  bool keep_alive_ = true;
};

void HttpServer::Impl::start(tcp::socket socket) {
  if (connections.size() >= limits.max_connections) {
    // Too many at once: a short 503, written without waiting (the socket's send buffer is empty).
    HttpResponse res;
    error_reply(503, "the server has " + std::to_string(limits.max_connections) + " connections open (--max-connections)", res);
    res.set_header("Retry-After", "1");
    const std::string bytes = serialize_head(res, false, res.body.size()) + res.body;
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.send(asio::buffer(bytes), 0, ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    return;
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto c = std::make_shared<Connection>(*this, std::move(socket));
  connections.insert(c);
  c->read_request();
}

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) {
    if (stopping) {
      if (!ec) start(std::move(socket));
      return;
    }
    if (!ec) {
      start(std::move(socket));
      return accept();
    }
    if (ec == asio::error::operation_aborted) return;
    // Out of descriptors (EMFILE) and the like: try again shortly rather than spin.
    auto retry = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
    retry->async_wait([this, retry](error_code) {
      if (!stopping) accept();
    });
  });
}

void HttpServer::Impl::stop(int sig) {
  if (stopping) return;
  stopping = true;
  signal = sig;
  abandoned_at_stop = abandoned;
  // Connections the kernel has accepted but the server has not taken yet are
  // served too: take them all, then close the listening socket.
  error_code ec;
  acceptor.cancel(ec);
  acceptor.non_blocking(true, ec);
  for (;;) {
    tcp::socket s(io);
    acceptor.accept(s, ec);
    if (ec) break;
    start(std::move(s));
  }
  acceptor.close(ec);
  for (const auto& c : std::vector<std::shared_ptr<Connection>>(connections.begin(), connections.end()))
    c->stop_grace();
}

HttpServer::HttpServer(const Router& router, HttpLimits limits, ErrorReply error_reply)
    : impl_(std::make_unique<Impl>(router, limits, std::move(error_reply))) {}

HttpServer::~HttpServer() {
  impl_->pool.join();
}

int HttpServer::listen(const std::string& host, int port) {
  error_code ec;
  const auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  const std::string where = host + ":" + std::to_string(port);
  if (ec) throw Error("cannot listen on " + where + ": not an IP address (" + ec.message() + ")");
  tcp::endpoint endpoint(address, uint16_t(port));
  auto& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(SOMAXCONN, ec);
  if (ec) throw Error("cannot listen on " + where + " (" + ec.message() + ")");
  return a.local_endpoint().port();
}

void HttpServer::run() {
  Impl& s = *impl_;
  s.signals.add(SIGTERM);
  s.signals.add(SIGINT);
  s.signals.async_wait([&s](error_code ec, int sig) {
    if (!ec) s.stop(sig);
  });
  s.accept();
  // Returns once nothing is left: the listening socket closed (by stop) and every
  // connection done. The signal wait is the last thing while serving; stop ends it.
  s.io.run();
  s.pool.join();
}

HttpServer::Totals HttpServer::totals() const {
  const uint64_t abandoned = impl_->abandoned;
  return {impl_->requests.load(), impl_->answered.load(), impl_->timed_out.load(), abandoned,
          abandoned - std::min(abandoned, impl_->abandoned_at_stop), impl_->signal};
}

}  // namespace vkf::tools::serve
