#include "serve/server.hpp"

#include <signal.h>

#include <cstdio>
#include <filesystem>

#include "serve/http_server.hpp"
#include "serve/routes.hpp"
#include "usage_error.hpp"

namespace vkf::tools {
namespace {

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
                                                           {"--max-connections", o.max_connections},
                                                           {"--timeout-s", o.timeout_s}};
  for (const auto& [flag, v] : at_least_one)
    if (v == 0) throw UsageError(std::string(flag) + " must be at least 1, got 0");
  // Each thread holds a stack (8 MiB reserved) and a connection: 100,000 of
  // them exhausted the process before it answered anything.
  if (o.threads > kMaxHttpThreads)
    throw UsageError("--threads must be from 1 to " + std::to_string(kMaxHttpThreads) + ", got " +
                     std::to_string(o.threads));
  if (!(o.request_timeout_s >= 0.1 && o.request_timeout_s <= 3600))
    throw UsageError("--request-timeout-s must be from 0.1 to 3600, got " + std::to_string(o.request_timeout_s));
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

  Router http;
  Server s{engine, metrics, o};
  http.before([&](const HttpRequest& req, HttpResponse& res) {
    // With --api-key every route but the health checks needs "Authorization: Bearer KEY".
    if (o.api_key.empty() || req.path == "/health" || req.path.rfind("/v2/health/", 0) == 0) return false;
    if (req.header("Authorization") == "Bearer " + o.api_key) return false;
    reply(metrics, "auth", res, 401, openai_error("a valid API key is required (Authorization: Bearer KEY)", "authentication_error"));
    return true;
  });
  http.otherwise([&](const HttpRequest& req, HttpResponse& res, const std::string& allow) {
    if (allow.empty()) {
      reply(metrics, "error", res, 404, openai_error("no route " + req.method + " " + req.path, "invalid_request_error"));
      return;
    }
    res.set_header("Allow", allow);
    reply(metrics, "error", res, 405,
          openai_error("method " + req.method + " is not allowed on " + req.path + " (Allow: " + allow + ")",
                       "invalid_request_error"));
  });
  http.get("/health", [&](const HttpRequest&, HttpResponse& res) {
    reply(metrics, "/health", res, engine.ready() ? 200 : 503, {{"status", engine.ready() ? "ok" : "device lost"}});
  });
  http.get("/metrics", [&](const HttpRequest&, HttpResponse& res) {
    res.set_content(metrics.render(engine.ready()), "text/plain; version=0.0.4");
  });
  add_openai_routes(http, s);
  add_v2_routes(http, s);

  HttpLimits limits;
  limits.max_body_bytes = size_t(o.max_body_kb) * 1024;
  limits.request_timeout = std::chrono::milliseconds(uint64_t(o.request_timeout_s * 1000));
  limits.threads = o.threads;
  limits.max_connections = o.max_connections;
  // Requests the server refuses before any route (malformed, too slow, too large) get
  // OpenAI's error shape too.
  HttpServer server(http, limits, [&](int status, const std::string& message, HttpResponse& res) {
    reply(metrics, "error", res, status, openai_error(message, status == 408 ? "timeout" : "invalid_request_error"));
  });
  const int port = server.listen(o.host, o.port);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
  std::fprintf(stderr, "vkformer: serving %zu model(s) on http://%s:%d\n", engine.models().size(), o.host.c_str(), port);
  std::fflush(stderr);
  // SIGTERM / SIGINT: run() stops accepting and returns once every accepted
  // request is answered; then the engine runs what is still queued.
  server.run();
  engine.drain();
  const HttpServer::Totals t = server.totals();
  if (t.signal) {
    // Every request begun is answered or abandoned by the time run() returns.
    const uint64_t lost = t.abandoned_since_signal + (t.requests - std::min(t.requests, t.answered + t.abandoned));
    if (lost == 0)
      std::fprintf(stderr, "vkformer: stopped by signal %d; every request in flight was answered\n", t.signal);
    else
      std::fprintf(stderr,
                   "vkformer: stopped by signal %d; %llu request(s) in flight were not answered whole: their client "
                   "closed the connection or did not read the reply within --request-timeout-s\n",
                   t.signal, (unsigned long long)lost);
  }
  return 0;
}

}  // namespace vkf::tools
