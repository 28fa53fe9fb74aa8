#include "serve/routes.hpp"

#include "model/json_parse.hpp"

namespace vkf::tools::serve {

json Server::body(std::string_view text) const {
  json j;
  try {
    j = parse_json_bounded(text);
  } catch (const json::exception& e) {
    throw HttpError(400, std::string("the request body is not valid JSON (UTF-8): ") + e.what());
  }
  if (!j.is_object()) throw HttpError(400, "the request body must be a JSON object");
  return j;
}

const ServedModel& Server::model(const std::string& name) const {
  if (name.empty()) {
    if (engine.models().size() == 1) return *engine.models()[0];
    throw HttpError(400, "\"model\" is required: this server serves " + std::to_string(engine.models().size()) +
                             " models (GET /v1/models lists them)");
  }
  const ServedModel* m = engine.find(name);
  if (!m) throw HttpError(404, "the model \"" + name + "\" does not exist (GET /v1/models lists them)", "model_not_found");
  return *m;
}

void reply(Metrics& m, const std::string& route, HttpResponse& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  m.request(route, status);
}

json openai_error(const std::string& message, const std::string& type) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

void guarded(Metrics& m, const std::string& route, HttpResponse& res, bool v2, const std::function<void()>& fn) {
  auto fail = [&](int status, const std::string& message, const std::string& type) {
    if (status == 503) res.set_header("Retry-After", "1");
    reply(m, route, res, status, v2 ? json{{"error", message}} : openai_error(message, type));
  };
  try {
    fn();
  } catch (const HttpError& e) {
    fail(e.status, e.what(), e.type);
  } catch (const Unavailable& e) {
    fail(503, e.what(), "server_unavailable");
  } catch (const Error& e) {  // the library's bad-input errors: too long, ids outside the vocabulary...
    fail(400, e.what(), "invalid_request_error");
  } catch (const std::exception& e) {
    fail(500, std::string("internal error: ") + e.what(), "server_error");
  }
}

}  // namespace vkf::tools::serve
