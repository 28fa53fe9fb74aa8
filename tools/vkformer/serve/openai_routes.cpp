// OpenAI's API, as its clients send it: GET /v1/models, POST /v1/embeddings,
// POST /v1/completions (with "stream": server-sent events ending in [DONE]).
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>

#include "encoder_input.hpp"
#include "model/json_text.hpp"
#include "serve/routes.hpp"
#include "text/text_stream.hpp"

namespace vkf::tools::serve {
namespace {

/// "input" / "prompt": a string, a list of strings, a list of token ids, or a list of id lists.
struct Inputs {
  std::vector<std::string> texts;
  std::vector<Ids> ids;
  size_t size() const { return texts.size() + ids.size(); }
};

bool is_id(const json& x) {
  return x.is_number_integer() && (x.is_number_unsigned() || x.get<int64_t>() >= 0) && x.get<uint64_t>() <= INT32_MAX;
}

Ids id_list(const json& v, const std::string& where) {
  Ids ids;
  for (const json& x : v) {
    if (!is_id(x)) throw HttpError(400, where + " must hold token ids (integers ≥ 0)");
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

Inputs read_inputs(const json& body, const char* key, unsigned max_inputs, bool empty_text_ok) {
  const std::string where = std::string("\"") + key + "\"";
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) throw HttpError(400, where + " is required");
  const json& v = *it;
  Inputs in;
  if (v.is_string()) {
    in.texts.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty() && is_id(v[0])) {
    in.ids.push_back(id_list(v, where));
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item = where + "[" + std::to_string(i) + "]";
      if (v[i].is_string()) in.texts.push_back(v[i].get<std::string>());
      else if (v[i].is_array() && !v[i].empty()) in.ids.push_back(id_list(v[i], item));
      else throw HttpError(400, item + " must be a string or a non-empty list of token ids");
    }
    if (!in.texts.empty() && !in.ids.empty()) throw HttpError(400, where + " mixes texts and token ids");
  } else {
    throw HttpError(400, where + " must be a string, a list of strings, or token ids");
  }
  if (in.size() > max_inputs)
    throw HttpError(400, where + " has " + std::to_string(in.size()) + " items, more than " +
                             std::to_string(max_inputs) + " (--max-inputs)");
  if (!empty_text_ok)
    for (size_t i = 0; i < in.texts.size(); ++i)
      if (in.texts[i].empty()) throw HttpError(400, where + (in.size() > 1 ? "[" + std::to_string(i) + "]" : "") + " is empty");
  return in;
}

std::string string_or(const json& body, const char* key, const std::string& fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw HttpError(400, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

/// A number field, when present and not null.
std::optional<double> number(const json& body, const char* key, double lo, double hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo || it->get<double>() > hi)
    throw HttpError(400, std::string("\"") + key + "\" must be a number from " + std::to_string(lo) + " to " +
                             std::to_string(hi) + ", got " + brief_json(*it));
  return it->get<double>();
}

std::optional<int64_t> integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi ||
      (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi)))
    throw HttpError(400, std::string("\"") + key + "\" must be an integer from " + std::to_string(lo) + " to " +
                             std::to_string(hi) + ", got " + brief_json(*it));
  return it->get<int64_t>();
}

/// Token ids checked against the model's limit before they are queued.
void check_lengths(const std::vector<Ids>& ids, uint32_t limit, const char* key) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (limit && ids[i].size() > limit)
      throw HttpError(400, std::string("\"") + key + "\" item " + std::to_string(i) + " has " +
                               std::to_string(ids[i].size()) + " tokens, more than the model's " + std::to_string(limit));
}

std::string base64(const float* data, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  const size_t len = n * sizeof(float);
  std::string out;
  for (size_t i = 0; i < len; i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < len ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < len ? b[i + 2] : 0);
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < len ? k[v >> 6 & 63] : '=';
    out += i + 2 < len ? k[v & 63] : '=';
  }
  return out;
}

void embeddings(Server& s, const httplib::Request& req, httplib::Response& res) {
  const json body = s.body(req);
  const ServedModel& m = s.model(string_or(body, "model", ""));
  if (!m.embeds) throw HttpError(400, "the model \"" + m.name + "\" does not make embeddings (model_type \"" +
                                          m.model->config().model_type + "\")");
  const std::string format = string_or(body, "encoding_format", "float");
  if (format != "float" && format != "base64")
    throw HttpError(400, "\"encoding_format\" must be \"float\" or \"base64\", got \"" + format + "\"");
  if (body.contains("dimensions") && !body["dimensions"].is_null() && body["dimensions"] != m.dim)
    throw HttpError(400, "\"dimensions\": the model \"" + m.name + "\" makes embeddings of " + std::to_string(m.dim));
  Inputs in = read_inputs(body, "input", s.options.max_inputs, false);
  if (!in.texts.empty()) {
    if (!m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send token ids");
    std::vector<bool> truncated;  // cut at the model's limit, as sentence-transformers does
    in.ids = encode_texts(*m.tok, m.info, in.texts, &truncated);
  } else {
    check_lengths(in.ids, m.max_tokens, "input");
  }
  auto f = s.engine.embed(m, in.ids);
  const EmbedOutput e = s.await(f);
  json data = json::array();
  uint64_t tokens = 0;
  for (uint32_t b = 0; b < e.batch; ++b) {
    const float* row = e.data.data() + size_t(b) * e.dim;
    json item = {{"object", "embedding"}, {"index", b}};
    if (format == "base64") item["embedding"] = base64(row, e.dim);
    else item["embedding"] = std::vector<float>(row, row + e.dim);
    data.push_back(std::move(item));
    tokens += e.lengths[b];
  }
  reply(s.metrics, "/v1/embeddings", res, 200,
        {{"object", "list"}, {"data", std::move(data)}, {"model", m.name},
         {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

/// One completion request's sequences as they are generated: the text of each
/// choice (stop strings cut), and the server-sent events not yet written.
struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TextStream> streams;
  std::deque<std::string> events;  ///< "data: {...}\n\n", streaming only
  std::atomic<bool> gone{false};   ///< the client closed the connection
};

void completions(Server& s, const httplib::Request& req, httplib::Response& res) {
  const json body = s.body(req);
  const ServedModel& m = s.model(string_or(body, "model", ""));
  if (!m.generates) throw HttpError(400, "the model \"" + m.name + "\" does not generate (model_type \"" +
                                             m.model->config().model_type + "\")");
  Inputs in = read_inputs(body, "prompt", s.options.max_inputs, true);
  if (!in.texts.empty() && !m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send token ids");
  for (const std::string& t : in.texts) in.ids.push_back(m.tok->encode(t));
  const auto n = uint32_t(integer(body, "n", 1, 16).value_or(1));
  const uint32_t prompts = uint32_t(in.ids.size());
  if (uint64_t(prompts) * n > s.options.max_inputs)
    throw HttpError(400, "prompts × n is " + std::to_string(uint64_t(prompts) * n) + ", more than " +
                             std::to_string(s.options.max_inputs) + " (--max-inputs)");
  if (body.contains("best_of") && body["best_of"] != 1 && !body["best_of"].is_null())
    throw HttpError(400, "\"best_of\" is not supported");
  if (body.contains("logprobs") && !body["logprobs"].is_null()) throw HttpError(400, "\"logprobs\" is not supported");
  if (body.contains("echo") && body["echo"] == true) throw HttpError(400, "\"echo\" is not supported");

  // The model's generation_config.json, then the request. Temperature 0 means
  // greedy; a temperature > 0 samples (top_k off unless given, as OpenAI has none).
  GenerateOptions g = m.gen_defaults;
  g.max_new_tokens = uint32_t(integer(body, "max_tokens", 0, s.options.max_tokens).value_or(16));
  if (auto t = number(body, "temperature", 0, 100)) {
    g.do_sample = *t > 0;
    if (g.do_sample) g.temperature = *t, g.top_k = 0;
  }
  if (auto p = number(body, "top_p", 0, 1)) g.top_p = *p;
  if (auto k = integer(body, "top_k", 0, INT32_MAX)) g.top_k = int32_t(*k);
  if (auto p = number(body, "min_p", 0, 1)) g.min_p = *p;
  if (auto p = number(body, "repetition_penalty", 0, 100)) g.repetition_penalty = *p;
  if (auto seed = integer(body, "seed", INT64_MIN, INT64_MAX)) g.seed = uint64_t(*seed);
  g.beam = 1;
  std::vector<std::string> stops;
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& st = body["stop"];
    if (st.is_string()) stops.push_back(st.get<std::string>());
    else if (st.is_array() && st.size() <= 4 && std::all_of(st.begin(), st.end(), [](const json& x) { return x.is_string(); }))
      for (const json& x : st) stops.push_back(x.get<std::string>());
    else throw HttpError(400, "\"stop\" must be a string or a list of up to 4 strings");
    if (!m.tok) throw HttpError(400, "\"stop\" needs a tokenizer; the model \"" + m.name + "\" has none");
  }
  try {
    validate(g);
  } catch (const Error& e) {
    throw HttpError(400, e.what());
  }
  const bool stream = body.value("stream", false);
  std::vector<Ids> sources;  // choice i = prompt i / n, draw i % n (source i has its own seed + i)
  for (const Ids& p : in.ids)
    for (uint32_t j = 0; j < n; ++j) sources.push_back(p);

  const std::string id = "cmpl-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto created = int64_t(std::time(nullptr));
  auto c = std::make_shared<Completion>();
  if (m.tok)
    for (size_t i = 0; i < sources.size(); ++i) c->streams.emplace_back(*m.tok, stops);
  auto chunk = [=, name = m.name](uint32_t index, const std::string& text, const json& finish) {
    return "data: " +
           json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", name},
                {"choices", {{{"text", text}, {"index", index}, {"logprobs", nullptr}, {"finish_reason", finish}}}}}
               .dump(-1, ' ', false, json::error_handler_t::replace) +
           "\n\n";
  };
  TokenSink sink = [c, stream, chunk](uint32_t b, int32_t token) {
    std::lock_guard<std::mutex> l(c->mu);
    if (c->gone) return false;
    if (c->streams.empty()) return true;
    const std::string piece = c->streams[b].push(token);
    if (stream && !piece.empty()) {
      c->events.push_back(chunk(b, piece, nullptr));
      c->cv.notify_all();
    }
    return !c->streams[b].stopped();
  };
  auto future = std::make_shared<std::future<std::vector<Ids>>>(s.engine.generate(m, sources, g, sink));

  // How each choice ended, and its rest of the text, once generation is over.
  auto finish = [c, g](const std::vector<Ids>& out, uint32_t b, std::string& rest) {
    const bool stopped = !c->streams.empty() && c->streams[b].stopped();
    if (!c->streams.empty()) rest = c->streams[b].finish();
    return !stopped && g.max_new_tokens > 0 && out[b].size() == g.max_new_tokens ? "length" : "stop";
  };
  uint64_t prompt_tokens = 0;
  for (const Ids& p : sources) prompt_tokens += p.size();

  if (!stream) {
    const std::vector<Ids> out = s.await(*future);
    json choices = json::array();
    uint64_t made = 0;
    for (uint32_t b = 0; b < out.size(); ++b) {
      std::string rest;
      const char* why = finish(out, b, rest);
      choices.push_back({{"text", c->streams.empty() ? std::string() : c->streams[b].text()},
                         {"index", b}, {"logprobs", nullptr}, {"finish_reason", why}, {"tokens", out[b]}});
      made += out[b].size();
    }
    reply(s.metrics, "/v1/completions", res, 200,
          {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", m.name}, {"choices", choices},
           {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", made},
                      {"total_tokens", prompt_tokens + made}}}});
    return;
  }
  // Streaming: the status is 200 once the request is queued; a later failure is an error event.
  s.metrics.request("/v1/completions", 200);
  const unsigned timeout_s = s.options.timeout_s;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [c, future, chunk, finish, timeout_s](size_t, httplib::DataSink& sink) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
        for (;;) {
          std::deque<std::string> ready;
          {
            std::unique_lock<std::mutex> l(c->mu);
            c->cv.wait_for(l, std::chrono::milliseconds(20), [&] { return !c->events.empty(); });
            ready.swap(c->events);
          }
          for (const std::string& e : ready)
            if (!sink.write(e.data(), e.size())) {
              c->gone = true;
              return false;
            }
          if (future->wait_for(std::chrono::seconds(0)) == std::future_status::ready) break;
          if (std::chrono::steady_clock::now() > deadline) {
            c->gone = true;
            break;
          }
        }
        std::string tail;
        try {
          const std::vector<Ids> out = future->get();
          std::lock_guard<std::mutex> l(c->mu);
          for (const std::string& e : c->events) tail += e;
          for (uint32_t b = 0; b < out.size(); ++b) {
            std::string rest;
            const char* why = finish(out, b, rest);
            if (!rest.empty()) tail += chunk(b, rest, nullptr);
            tail += chunk(b, "", why);
          }
        } catch (const std::exception& e) {
          tail += "data: " + openai_error(e.what(), "server_error").dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
        }
        tail += "data: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
}

}  // namespace

void add_openai_routes(httplib::Server& http, Server& s) {
  http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    for (const auto& m : s.engine.models())
      data.push_back({{"id", m->name}, {"object", "model"}, {"created", 0}, {"owned_by", "vkformer"},
                      {"model_type", m->model->config().model_type}, {"embeddings", m->embeds},
                      {"completions", m->generates}});
    reply(s.metrics, "/v1/models", res, 200, {{"object", "list"}, {"data", data}});
  });
  http.Post("/v1/embeddings", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(s.metrics, "/v1/embeddings", res, false, [&] { embeddings(s, req, res); });
  });
  http.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(s.metrics, "/v1/completions", res, false, [&] { completions(s, req, res); });
  });
}

}  // namespace vkf::tools::serve
