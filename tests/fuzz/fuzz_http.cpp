// `vkformer serve`'s HTTP layer without a socket: any bytes a client may send are
// parsed as the server parses a connection (Boost.Beast's parser with the server's
// limits and checks, tools/vkformer/serve/http_server.cpp), and each request they
// hold is routed through a Router with the server's route patterns, whose handlers
// parse the body as the routes do. A parse either yields requests or one of the
// server's refusals (400, 413, 431); routing yields a status with a body, and 405
// names the methods allowed. Anything else (a crash, a sanitizer report, an
// exception, libstdc++'s regex recursing on a long path) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/json_parse.hpp"
#include "serve/http_server.hpp"

namespace {

using namespace vkf::tools::serve;

/// The server's routes (server.cpp, openai_routes.cpp, v2_routes.cpp); each answers with
/// the JSON body it was sent, or 400 as Server::body does.
Router make_router() {
  Router r;
  auto get = [](const HttpRequest& req, HttpResponse& res) { res.set_content("{\"path\": \"" + req.path + "\"}", "application/json"); };
  auto post = [](const HttpRequest& req, HttpResponse& res) {
    try {
      const auto j = vkf::parse_json_bounded(req.body);
      res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
    } catch (const nlohmann::json::exception& e) {
      res.status = 400;
      res.set_content(e.what(), "text/plain");
    }
  };
  for (const char* p : {"/health", "/metrics", "/v1/models", "/v2", "/v2/health/live", "/v2/health/ready",
                        R"(/v2/models/([^/]+)(?:/versions/1)?)", R"(/v2/models/([^/]+)(?:/versions/1)?/ready)"})
    r.get(p, get);
  for (const char* p : {"/v1/embeddings", "/v1/completions", "/v1/chat/completions",
                        R"(/v2/models/([^/]+)(?:/versions/1)?/infer)"})
    r.post(p, post);
  r.before([](const HttpRequest& req, HttpResponse& res) {
    if (req.header("Authorization") != "Bearer fuzz-key-refused") return false;
    res.status = 401;
    return true;
  });
  r.otherwise([](const HttpRequest&, HttpResponse& res, const std::string& allow) {
    res.status = allow.empty() ? 404 : 405;
    if (!allow.empty()) res.set_header("Allow", allow);
  });
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Router router = make_router();
  HttpLimits limits;  // small, so that the fuzzer reaches them
  limits.max_body_bytes = 4096;
  limits.max_header_bytes = 2048;
  limits.max_headers = 16;
  const ParsedBytes parsed = parse_requests(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (parsed.error_status != 0 && parsed.error_status != 400 && parsed.error_status != 413 && parsed.error_status != 431)
    std::abort();
  if (parsed.error_status != 0 && parsed.error.empty()) std::abort();
  for (HttpRequest req : parsed.requests) {
    if (req.body.size() > limits.max_body_bytes || req.headers.size() > limits.max_headers) std::abort();
    HttpResponse res;
    router.dispatch(req, res);
    if (res.status < 200 || res.status > 599) std::abort();
    if (res.status == 405) {
      bool allow = false;
      for (const auto& [name, value] : res.headers) allow |= name == "Allow" && !value.empty();
      if (!allow) std::abort();
    }
  }
  return 0;
}
