// Where a command's texts come from: its arguments, --input FILE, or stdin.
#pragma once

#include <string>
#include <vector>

namespace vkf::tools {

/// The texts of `input` (a file, a pipe such as <(cmd), or "-" for stdin)
/// followed by `args`, where an argument "-" stands for the texts of stdin;
/// with neither, stdin when it is not a terminal. A file whose first non-blank
/// character is '[' is a JSON array of strings; any other file holds one text
/// per line (a trailing "\r" is dropped, an empty last line is not a text).
/// @throws vkf::Error naming the file (or stdin) and what is wrong: unreadable,
/// a directory or device, not valid JSON, an element that is not a string.
std::vector<std::string> read_texts(const std::vector<std::string>& args, const std::string& input);

}  // namespace vkf::tools
