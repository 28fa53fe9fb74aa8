#include "npy.hpp"

#include "output_file.hpp"

namespace vkf::tools {

void write_npy(const std::string& path, const std::vector<uint64_t>& shape,
               const std::vector<float>& data, const std::string& option) {
  std::string dims;
  for (uint64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(3,)" keeps its comma
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  const uint16_t len = uint16_t(header.size());
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += char(len & 0xff);
  bytes += char(len >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size() * 4);
  write_output(path, option, bytes);
}

}  // namespace vkf::tools
