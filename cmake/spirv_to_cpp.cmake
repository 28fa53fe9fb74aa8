# Turns one .spv file into a .cpp defining its SPIR-V words, so the library
# carries its shaders and never reads a shader file at run time.
# Inputs: SPV (path), OUT (path), NAME (C identifier suffix).
file(READ "${SPV}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0 OR n EQUAL 0)
  message(FATAL_ERROR "${SPV}: size is not a whole number of 32-bit words")
endif()
# SPIR-V is little-endian words: bytes b0 b1 b2 b3 -> 0xb3b2b1b0.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x........u,){8})" "\\1\n" words "${words}")
math(EXPR count "${n} / 8")
file(WRITE "${OUT}" "// Generated from ${SPV} by cmake/spirv_to_cpp.cmake. Do not edit.
#include <cstddef>
#include <cstdint>
extern const uint32_t vkf_spv_${NAME}[] = {
${words}
};
extern const size_t vkf_spv_${NAME}_words = ${count};
")
