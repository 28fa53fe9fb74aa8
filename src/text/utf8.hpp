// UTF-8 decoding shared by the tokenizers: strict (RFC 3629), so every tokenizer
// refuses the same inputs with the same message.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

/// Code points of `s`. Refuses truncated sequences, stray continuation bytes,
/// overlong forms, surrogates and values above U+10FFFF.
/// @throws vkf::Error "<what>: invalid UTF-8 at byte offset N (...)" ("invalid UTF-8 ..."
///         if `what` is empty).
std::vector<uint32_t> decode_utf8(std::string_view s, const std::string& what);

/// Appends the UTF-8 bytes of code point `cp` (a valid scalar value) to `out`.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace vkf::text
