#include "serve/server.hpp"

#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>

#include "serve/routes.hpp"
#include "usage_error.hpp"

namespace vkf::tools {
namespace {

std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) { g_signal = sig; }

/// The methods a known route takes ("" for an unknown path): a 404 of cpp-httplib on
/// a known path is a 405 with an Allow header.
std::string allowed_methods(const std::string& path) {
  static const std::pair<std::regex, const char*> routes[] = {
      {std::regex("/health|/metrics|/v1/models|/v2|/v2/health/(live|ready)"), "GET, HEAD"},
      {std::regex("/v2/models/[^/]+(/versions/1)?(/ready)?"), "GET, HEAD"},
      {std::regex("/v1/(embeddings|completions|chat/completions)"), "POST"},
      {std::regex("/v2/models/[^/]+(/versions/1)?/infer"), "POST"}};
  for (const auto& [re, methods] : routes)
    if (std::regex_match(path, re)) return methods;
  return "";
}

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

int run_serve(const ContextOptions& ctx_opts, const ServeOptions& o) {
  using namespace serve;
  // Usage errors (exit 2), as every other option's range.
  if (o.models.empty()) throw UsageError("give at least one --model DIR (or NAME=DIR)");
  if (o.port < 0 || o.port > 65535)
    throw UsageError("--port must be from 0 to 65535, got " + std::to_string(o.port));
  const std::pair<const char*, unsigned> at_least_one[] = {{"--max-queue", o.max_queue},
                                                           {"--max-batch", o.max_batch},
                                                           {"--max-inputs", o.max_inputs},
                                                           {"--threads", o.threads},
                                                           {"--timeout-s", o.timeout_s}};
  for (const auto& [flag, v] : at_least_one)
    if (v == 0) throw UsageError(std::string(flag) + " must be at least 1, got 0");
  // Each thread holds a stack (8 MiB reserved) and a connection: 100,000 of
  // them exhausted the process before it answered anything.
  if (o.threads > kMaxHttpThreads)
    throw UsageError("--threads must be from 1 to " + std::to_string(kMaxHttpThreads) + ", got " +
                     std::to_string(o.threads));
  if (!loopback(o.host) && o.api_key.empty())
    std::fprintf(stderr, "vkformer: warning: serving on %s without --api-key: anyone who reaches it may use it\n",
                 o.host.c_str());

  const KvCacheType kv_cache = parse_kv_cache_type(o.kv_cache, "--kv-cache");
  Context ctx(ctx_opts);
  Metrics metrics;
  Engine engine(ctx, {o.max_queue, o.max_batch, o.batch_window_ms, o.max_decode_batch}, metrics);
  for (const std::string& spec : o.models) {
    const size_t eq = spec.find('=');
    std::string dir = eq == std::string::npos ? spec : spec.substr(eq + 1);
    std::string name = eq == std::string::npos ? std::filesystem::path(dir).lexically_normal().filename().string()
                                               : spec.substr(0, eq);
    if (name.empty()) name = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
    if (name.empty() || dir.empty()) throw Error("--model " + spec + ": expected DIR or NAME=DIR");
    engine.add_model(name, dir, o.precision, kv_cache);
  }

  httplib::Server http;
  Server s{engine, metrics, o};
  http.new_task_queue = [&o] { return new httplib::ThreadPool(o.threads); };
  http.set_payload_max_length(size_t(o.max_body_kb) * 1024);
  http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    // With --api-key every route but the health checks needs "Authorization: Bearer KEY".
    if (o.api_key.empty() || req.path == "/health" || req.path.rfind("/v2/health/", 0) == 0)
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + o.api_key) return httplib::Server::HandlerResponse::Unhandled;
    reply(metrics, "auth", res, 401, openai_error("a valid API key is required (Authorization: Bearer KEY)", "authentication_error"));
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a route's own error reply
    const std::string allow = res.status == 404 ? allowed_methods(req.path) : "";
    if (!allow.empty()) {
      res.status = 405;
      res.set_header("Allow", allow);
      reply(metrics, "error", res, 405,
            openai_error("method " + req.method + " is not allowed on " + req.path + " (Allow: " + allow + ")",
                         "invalid_request_error"));
      return;
    }
    // cpp-httplib caps a body sent as a form (curl -d's default type) at 8 KiB, whatever --max-body-kb says.
    const bool form = req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
    const std::string what = res.status == 413 && form
                                 ? "a body sent as a form (Content-Type: application/x-www-form-urlencoded, curl -d's "
                                   "default) may be at most 8 KiB: send Content-Type: application/json"
                             : res.status == 413 ? "the request body is larger than " + std::to_string(o.max_body_kb) + " KiB (--max-body-kb)"
                             : res.status == 404 ? "no route " + req.method + " " + req.path
                                                 : "HTTP " + std::to_string(res.status);
    reply(metrics, "error", res, res.status, openai_error(what, "invalid_request_error"));
  });
  http.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    reply(metrics, "/health", res, engine.ready() ? 200 : 503, {{"status", engine.ready() ? "ok" : "device lost"}});
  });
  http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(engine.ready()), "text/plain; version=0.0.4");
  });
  add_openai_routes(http, s);
  add_v2_routes(http, s);

  // Debian's cpp-httplib listens with a backlog of 5: a burst of clients would
  // wait for SYN retries (1 s and more). Linux takes a second listen() as the new backlog.
  int listen_fd = -1;
  http.set_socket_options([&listen_fd](socket_t fd) {
    httplib::default_socket_options(fd);
    listen_fd = fd;
  });
  const int port = o.port == 0 ? http.bind_to_any_port(o.host) : (http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address here)");
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);

  // SIGTERM / SIGINT: stop accepting; listen_after_bind() returns once the
  // requests in flight are answered, then the engine runs what is queued.
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done && g_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    http.stop();
  });
  std::fprintf(stderr, "vkformer: serving %zu model(s) on http://%s:%d\n", engine.models().size(), o.host.c_str(), port);
  std::fflush(stderr);
  const bool ok = http.listen_after_bind();
  done = true;
  watcher.join();
  engine.drain();
  if (g_signal) std::fprintf(stderr, "vkformer: stopped by signal %d; every request in flight was answered\n", int(g_signal));
  return ok || g_signal ? 0 : 1;
}

}  // namespace vkf::tools
