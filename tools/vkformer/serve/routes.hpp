// What the route handlers share: the engine, the limits, the metrics, and the
// JSON replies in each API's error shape.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "serve/engine.hpp"
#include "serve/http.hpp"
#include "serve/server.hpp"

namespace vkf::tools::serve {

using json = nlohmann::json;

/// A request that cannot be served: its HTTP status and OpenAI's error type.
struct HttpError : Error {
  HttpError(int status, std::string message, std::string type = "invalid_request_error")
      : Error(std::move(message)), status(status), type(std::move(type)) {}
  int status;
  std::string type;
};

struct Server {
  Engine& engine;
  Metrics& metrics;
  const ServeOptions& options;

  /// The body as a JSON object. @throws HttpError 400.
  json body(const HttpRequest& req) const { return body(req.body); }
  json body(std::string_view text) const;
  /// The model a request names ("model"; optional when one is served). @throws HttpError 404/400.
  const ServedModel& model(const std::string& name) const;
  /// Waits for a job's result within the request timeout; maps its failure to an HttpError.
  template <class T>
  T await(std::future<T>& f) const;
};

/// Sends `j` with `status` (and counts it under `route`).
void reply(Metrics& m, const std::string& route, HttpResponse& res, int status, const json& j);
/// OpenAI's error object: {"error": {"message", "type", "param", "code"}}.
json openai_error(const std::string& message, const std::string& type);

/// Runs `fn`, turning what it throws into a reply in OpenAI's error shape
/// (v2: {"error": message}).
void guarded(Metrics& m, const std::string& route, HttpResponse& res, bool v2, const std::function<void()>& fn);

void add_openai_routes(Router& http, Server& s);
void add_v2_routes(Router& http, Server& s);

template <class T>
T Server::await(std::future<T>& f) const {
  if (f.wait_for(std::chrono::seconds(options.timeout_s)) != std::future_status::ready)
    throw HttpError(504, "the request did not finish within " + std::to_string(options.timeout_s) + " s (--timeout-s)",
                    "timeout");
  try {
    return f.get();
  } catch (const Unavailable& e) {
    throw HttpError(503, e.what(), "server_unavailable");
  }
}

}  // namespace vkf::tools::serve
