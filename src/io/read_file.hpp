// Reading the files users name (configs, tokenizers, weights, text inputs, the
// pipeline cache) so that a wrong kind of path is one clear error instead of a
// hang or a stream exception: a directory, a FIFO, a socket or a device where a
// regular file was expected is refused before a byte is read, and the FIFO is
// opened without blocking so that a writer that never comes cannot hang us.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace vkf::io {

/// Why a path cannot be read as a regular file, or "" when it can: "is a
/// directory", "is a FIFO (named pipe)", "does not exist", ... Never blocks.
std::string not_a_regular_file(const std::string& path);

/// Reads the whole regular file at `path`. `what` names it in errors
/// ("the model config", "tokenizer.json"). @throws vkf::Error
/// "PATH: cannot open WHAT: REASON" when the path is missing or unreadable, and
/// "PATH: cannot read WHAT: REASON" when it is not a regular file, is larger
/// than `max_bytes` or a read fails.
std::string read_file(const std::string& path, const std::string& what,
                      uint64_t max_bytes = std::numeric_limits<uint64_t>::max());

/// Opens the regular file at `path` read-only (never blocking on a FIFO) and
/// returns its descriptor, which the caller closes, and its size in `*size`.
/// @throws vkf::Error as read_file does.
int open_regular_file(const std::string& path, const std::string& what, uint64_t* size);

/// Whether anything (a file, a directory, a FIFO, a dangling symlink's target
/// excepted) is at `path`. Never blocks.
bool exists(const std::string& path);

/// read_file for an optional file: nullopt when nothing is at `path`, the
/// same errors as read_file when something is there but cannot be read (a
/// directory where a JSON file should be is a mistake to report, not a file
/// to skip).
std::optional<std::string> read_file_if_present(const std::string& path, const std::string& what,
                                                uint64_t max_bytes = std::numeric_limits<uint64_t>::max());

/// A regular file mapped read-only (the weight files: safetensors, GGUF).
struct MappedFile {
  std::shared_ptr<const void> storage;  ///< owns the mapping; null for an empty file
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};
/// Maps the regular file at `path` (opened as open_regular_file does). @throws
/// vkf::Error "PATH: cannot map WHAT (N bytes): REASON", or as read_file does.
MappedFile map_file(const std::string& path, const std::string& what);
/// Drops the whole pages inside [p, p + bytes) of a mapping from memory (the file
/// keeps them): a tensor read once need not stay resident.
void drop_pages(const uint8_t* p, uint64_t bytes);

}  // namespace vkf::io
