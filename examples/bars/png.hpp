// A minimal PNG writer: 8-bit RGBA, no filtering, stored (uncompressed) deflate
// blocks, so it needs no zlib. Enough for checking a rendered frame.
#pragma once

#include <cstdint>
#include <string>

namespace bars {

/// Writes `rgba` (width·height·4 bytes, rows top to bottom) as a PNG file.
/// Returns false (errno set) when the file cannot be written.
bool write_png(const std::string& path, const uint8_t* rgba, uint32_t width, uint32_t height);

}  // namespace bars
