// GPT-2's byte-to-character table (ByteLevel pre-tokenizer and decoder): printable
// bytes stand for themselves, the 68 others for U+0100 upwards.
#pragma once

#include <cstdint>
#include <string>

namespace vkf::text::hf {

/// UTF-8 of the character that stands for byte `b`.
const std::string& byte_level_char(uint8_t b);
/// The byte that character `c` stands for, or -1.
int byte_level_byte(char32_t c);
/// GPT-2's pre-tokenization pattern.
extern const char* const kGpt2Pattern;

}  // namespace vkf::text::hf
