// The Open Inference Protocol v2 (REST), as KServe and Triton define it:
// health, server and model metadata, readiness, and infer. Embedding models
// take "text" (BYTES) or "input_ids" (INT64) and give "embedding" (FP32);
// generative models give "text_output" (BYTES) and "output_ids" (INT64).
#include "encoder_input.hpp"
#include "model/json_text.hpp"
#include "serve/routes.hpp"

namespace vkf::tools::serve {
namespace {

json tensor_meta(const char* name, const char* type, std::vector<int64_t> shape) {
  return {{"name", name}, {"datatype", type}, {"shape", shape}};
}

json metadata(const ServedModel& m) {
  json inputs = {tensor_meta("text", "BYTES", {-1}), tensor_meta("input_ids", "INT64", {-1, -1})};
  json outputs = m.embeds ? json{tensor_meta("embedding", "FP32", {-1, int64_t(m.dim)})}
                          : json{tensor_meta("text_output", "BYTES", {-1}), tensor_meta("output_ids", "INT64", {-1, -1})};
  return {{"name", m.name}, {"versions", {"1"}}, {"platform", "vkformer"}, {"inputs", inputs}, {"outputs", outputs}};
}

/// The one input of an infer request, as texts or as id rows.
void read_input(const json& body, const ServedModel& m, std::vector<std::string>& texts, std::vector<Ids>& ids) {
  if (!body.contains("inputs") || !body["inputs"].is_array() || body["inputs"].size() != 1)
    throw HttpError(400, "\"inputs\" must be a list of one tensor (\"text\" BYTES or \"input_ids\" INT64)");
  const json& t = body["inputs"][0];
  if (!t.is_object() || !t.contains("name") || !t.contains("datatype") || !t.contains("shape") || !t.contains("data"))
    throw HttpError(400, "an input tensor needs \"name\", \"datatype\", \"shape\" and \"data\"");
  const json &name = t["name"], &type = t["datatype"], &shape = t["shape"], &data = t["data"];
  if (!shape.is_array() || shape.empty() || shape.size() > 2 ||
      !std::all_of(shape.begin(), shape.end(), [](const json& x) { return x.is_number_unsigned() && x.get<uint64_t>() > 0; }))
    throw HttpError(400, "\"shape\" must be [n] or [n, len] of positive integers, got " + brief_json(shape));
  uint64_t count = 1;
  for (const json& x : shape) count *= std::min<uint64_t>(x.get<uint64_t>(), uint64_t(1) << 31);
  if (!data.is_array()) throw HttpError(400, "\"data\" must be a list");
  json flat = json::array();
  for (const json& x : data) {  // row-major data may come nested, one level (copying deeper would recurse)
    if (!x.is_array()) {
      if (x.is_structured()) throw HttpError(400, "\"data\" holds values or rows of values, got " + brief_json(x));
      flat.push_back(x);
      continue;
    }
    for (const json& y : x)
      if (y.is_structured()) throw HttpError(400, "\"data\" nests at most one level (rows of values), got " + brief_json(x));
    flat.insert(flat.end(), x.begin(), x.end());
  }
  if (flat.size() != count)
    throw HttpError(400, "\"data\" has " + std::to_string(flat.size()) + " elements; \"shape\" " + brief_json(shape) +
                             " needs " + std::to_string(count));
  if (name == "text" && type == "BYTES" && shape.size() == 1) {
    for (const json& x : flat) {
      if (!x.is_string() || x.get<std::string>().empty()) throw HttpError(400, "\"text\" elements must be non-empty strings");
      texts.push_back(x.get<std::string>());
    }
    if (!m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send \"input_ids\"");
  } else if (name == "input_ids" && type == "INT64" && shape.size() == 2) {
    const uint64_t rows = shape[0].get<uint64_t>(), len = shape[1].get<uint64_t>();
    for (uint64_t r = 0; r < rows; ++r) {
      Ids row;
      for (uint64_t i = 0; i < len; ++i) {
        const json& x = flat[r * len + i];
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
          throw HttpError(400, "\"input_ids\" elements must be token ids (integers ≥ 0)");
        row.push_back(x.get<int32_t>());
      }
      ids.push_back(std::move(row));
    }
  } else {
    throw HttpError(400, "the input must be \"text\" (BYTES, shape [n]) or \"input_ids\" (INT64, shape [n, len])");
  }
}

void infer(Server& s, const ServedModel& m, const HttpRequest& req, HttpResponse& res) {
  const json body = s.body(req);
  std::vector<std::string> texts;
  std::vector<Ids> ids;
  read_input(body, m, texts, ids);
  if (texts.size() + ids.size() > s.options.max_inputs)
    throw HttpError(400, "the input has " + std::to_string(texts.size() + ids.size()) + " rows, more than " +
                             std::to_string(s.options.max_inputs) + " (--max-inputs)");
  json out = {{"model_name", m.name}, {"model_version", "1"}};
  if (body.contains("id")) out["id"] = body["id"];
  if (m.embeds) {
    std::vector<bool> truncated;  // cut at the model's limit, as sentence-transformers does
    if (!texts.empty()) ids = encode_texts(*m.tok, m.info, texts, &truncated);
    // Ids are never cut: longer than the model's limit (max_seq_length, as /v1/embeddings) is refused.
    for (size_t i = 0; i < ids.size() && texts.empty(); ++i)
      if (m.max_tokens && ids[i].size() > m.max_tokens)
        throw HttpError(400, "\"input_ids\" row " + std::to_string(i) + " has " + std::to_string(ids[i].size()) +
                                 " tokens, more than the model's " + std::to_string(m.max_tokens));
    auto f = s.engine.embed(m, ids);
    const EmbedOutput e = s.await(f);
    out["outputs"] = {{{"name", "embedding"}, {"datatype", "FP32"}, {"shape", {e.batch, e.dim}}, {"data", e.data}}};
  } else {
    for (const std::string& t : texts) ids.push_back(m.tok->encode(t));
    GenerateOptions g = m.gen_defaults;
    const json params = body.value("parameters", json::object());
    if (params.contains("max_tokens")) {
      const json& v = params["max_tokens"];
      if (!v.is_number_unsigned() || v.get<uint64_t>() > s.options.max_tokens)
        throw HttpError(400, "\"parameters\".\"max_tokens\" must be an integer from 0 to " + std::to_string(s.options.max_tokens));
      g.max_new_tokens = v.get<uint32_t>();
    }
    g.max_new_tokens = std::min<uint32_t>(g.max_new_tokens, s.options.max_tokens);
    auto f = s.engine.generate(m, ids, g, {});
    const std::vector<Ids> gen = s.await(f);
    json text_out = json::array(), flat = json::array();
    size_t width = 0;
    for (const Ids& o : gen) width = std::max(width, o.size());
    for (const Ids& o : gen) {  // rows padded with -1 to the longest
      text_out.push_back(m.tok ? m.tok->decode(o) : std::string());
      for (size_t i = 0; i < width; ++i) flat.push_back(i < o.size() ? int64_t(o[i]) : int64_t(-1));
    }
    out["outputs"] = {{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", {gen.size()}}, {"data", text_out}},
                      {{"name", "output_ids"}, {"datatype", "INT64"}, {"shape", {gen.size(), width}}, {"data", flat}}};
  }
  reply(s.metrics, "/v2/models/infer", res, 200, out);
}

}  // namespace

void add_v2_routes(Router& http, Server& s) {
  http.get("/v2/health/live", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2/health/live", res, 200, {{"live", true}});
  });
  http.get("/v2/health/ready", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2/health/ready", res, s.engine.ready() ? 200 : 503, {{"ready", s.engine.ready()}});
  });
  http.get("/v2", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2", res, 200, {{"name", "vkformer"}, {"version", VKF_VERSION}, {"extensions", json::array()}});
  });
  http.get(R"(/v2/models/([^/]+)(?:/versions/1)?)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models", res, true, [&] { reply(s.metrics, "/v2/models", res, 200, metadata(s.model(req.matches[1]))); });
  });
  http.get(R"(/v2/models/([^/]+)(?:/versions/1)?/ready)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models/ready", res, true, [&] {
      s.model(req.matches[1]);
      reply(s.metrics, "/v2/models/ready", res, s.engine.ready() ? 200 : 503, {{"name", std::string(req.matches[1])}, {"ready", s.engine.ready()}});
    });
  });
  http.post(R"(/v2/models/([^/]+)(?:/versions/1)?/infer)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models/infer", res, true, [&] { infer(s, s.model(req.matches[1]), req, res); });
  });
}

}  // namespace vkf::tools::serve
