#include "npy.hpp"

#include <cstdio>
#include <fstream>

#include "vkformer/tensor.hpp"

namespace vkf::tools {

void write_npy(const std::string& path, const std::vector<uint64_t>& shape,
               const std::vector<float>& data) {
  std::string dims;
  for (uint64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(3,)" keeps its comma
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw Error("cannot write " + path + ": the directory does not exist or is not writable");
    const uint16_t len = uint16_t(header.size());
    out.write("\x93NUMPY\x01\x00", 8);
    const char le[2] = {char(len & 0xff), char(len >> 8)};
    out.write(le, 2);
    out.write(header.data(), std::streamsize(header.size()));
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * 4));
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error("cannot write " + path + " (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot move " + tmp + " to " + path);
  }
}

}  // namespace vkf::tools
