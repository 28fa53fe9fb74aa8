// Regular expressions as `tokenizers` runs them (Oniguruma), on ICU's engine:
// Oniguruma's \s (which also takes \v and U+0085) is spelled out for ICU, and
// empty matches are stepped over as the onig crate's find_iter does.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/hf/json_node.hpp"

namespace vkf::text::hf {

/// Byte offsets [first, second) in a UTF-8 string.
using Span = std::pair<size_t, size_t>;

class Regex {
 public:
  /// Compiles `pattern` (Oniguruma syntax as far as ICU shares it), or with `literal`
  /// a pattern that matches exactly the text `pattern`.
  /// @throws vkf::Error "<where> "P" is not a valid regular expression (<ICU's reason>)".
  Regex(const std::string& pattern, const std::string& where, bool literal = false);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  /// Every match in `text` (valid UTF-8), left to right, non-overlapping.
  std::vector<Span> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `text` with every match of `re` replaced by `content` (the Replace normalizer and decoder);
/// check_growth() on the result.
std::string replace_matches(const Regex& re, const std::string& text, const std::string& content);

/// Member "pattern" of `j`: {"String": s} (literal) or {"Regex": r}, as Replace and Split hold it.
Regex pattern_regex(const JsonNode& j);

/// `pattern` with Oniguruma's \s and \S written out as ICU character classes.
std::string onig_to_icu(const std::string& pattern);

}  // namespace vkf::text::hf
