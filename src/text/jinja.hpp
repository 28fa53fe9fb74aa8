// The subset of Jinja2 that Hugging Face chat templates use, rendered the way
// transformers' apply_chat_template renders them (docs/chat-templates.md): an
// ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loop
// controls ({% break %}, {% continue %}), transformers' tojson filter and the
// raise_exception and strftime_now functions. Values follow Python: truthiness,
// int/float arithmetic, str() and repr() when printed.
//
// What is not implemented (macro, call and filter blocks, include, extends,
// import, block, unknown filters, tests, functions and methods) is refused with
// one line naming the feature and the line: syntax and unknown names when the
// template is constructed, the rest when it is rendered.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace vkf::jinja {

/// A parsed template: parse once, render many times (render is const and may run
/// on several threads at once).
class Template {
 public:
  /// @throws vkf::Error "<name>: line N: <what>" on a syntax error or an
  ///         unsupported feature.
  explicit Template(const std::string& source, const std::string& name = "chat_template");

  /// Renders with the top-level variables of `context` (a JSON object). An
  /// ordered_json context keeps its objects' key order, as Python's dicts do
  /// (it shows in tojson, items() and printed dicts); nlohmann::json sorts keys.
  /// @throws vkf::Error "<name>: line N: <what>", or
  ///         "<name>: raise_exception: <message>" when the template raises.
  std::string render(const nlohmann::json& context) const;
  std::string render(const nlohmann::ordered_json& context) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace vkf::jinja
