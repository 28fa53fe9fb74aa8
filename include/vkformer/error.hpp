// The one exception type of the library, in a header of its own so that the
// layers below the Vulkan code (file reading, tokenizers) need nothing else.
#pragma once

#include <stdexcept>

namespace vkf {

/// Every vkformer failure: the message names the file, tensor, field or
/// Vulkan call that failed and what was expected.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vkf
