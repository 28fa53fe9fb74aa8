// Parsing the JSON vkformer reads (configs, tokenizers, the tuning database,
// request bodies) with its nesting bounded: nlohmann copies and dumps a tree by
// recursion, so a 200,000-deep "[[[...]]]" request killed the server (issue 29).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace vkf {

/// How deeply the JSON vkformer reads (configs, tokenizers, the tuning
/// database, request bodies) may nest. Real files nest a handful of levels
/// (tokenizer.json's normalizer sequences, chat messages' content parts); a
/// 200,000-deep "[[[...]]]" is an attack on the stack, since nlohmann copies
/// and dumps a tree by recursion.
constexpr int kMaxJsonDepth = 64;

/// nlohmann::json::parse of `input` (text or a stream) that refuses an array
/// or object nested deeper than kMaxJsonDepth while parsing, before the deep
/// tree exists. @throws nlohmann::json::parse_error "parse error: JSON nested
/// deeper than 64 levels", besides nlohmann's own errors, so callers keep
/// their one catch (and json_error_text) for both.
template <typename Input>
nlohmann::json parse_json_bounded(Input&& input) {
  const nlohmann::json::parser_callback_t refuse_deep = [](int depth, nlohmann::json::parse_event_t event,
                                                           nlohmann::json&) {
    // depth counts the containers already open around this one.
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw nlohmann::json::parse_error::create(
          101, 0, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", nullptr);
    return true;
  };
  return nlohmann::json::parse(std::forward<Input>(input), refuse_deep);
}

}  // namespace vkf
