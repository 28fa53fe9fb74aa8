// Shared by the kernel tests: one validated context per test file, seeded
// random data, and the check that no test leaves a validation message behind.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"
#include "ops/op_case.hpp"
#include "vk/context_impl.hpp"
#include "vkformer/reference.hpp"

namespace vkf::test {

/// Error bounds, as max|got − want| / max|want| against a double-precision
/// reference computed from the same (fp16-rounded, where stored as fp16) inputs.
/// The bounds are equal: both measure the kernel's fp32 arithmetic, and fp16
/// storage only changes the inputs, which the reference rounds the same way.
constexpr double kF32Bound = 1e-5;
constexpr double kF16Bound = 1e-5;

/// n seeded values in [lo, hi); what a tensor of `dtype` holds after uploading v
/// (the op cases' helpers, src/ops/op_case.hpp).
using cases::random_vector;
using cases::as_stored;

class DeviceTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    ContextOptions o;
    o.validation = 1;  // always: a validation message fails the test
    o.verbose = false;
    ctx_ = std::make_unique<Context>(o);
  }
  static void TearDownTestSuite() {
    if (ctx_) {
      EXPECT_EQ(ctx_->validation_messages(), 0u) << ctx_->last_validation_message();
    }
    ctx_.reset();
  }

 protected:
  void SetUp() override { start_messages_ = ctx_->validation_messages(); }
  void TearDown() override {
    EXPECT_EQ(ctx_->validation_messages(), start_messages_)
        << "validation layer: " << ctx_->last_validation_message();
  }
  Context& ctx() { return *ctx_; }
  bool has_f16() const { return ctx_->caps().f16_tensors(); }  // natively or packed

  static std::unique_ptr<Context> ctx_;
  uint64_t start_messages_ = 0;
};

inline std::unique_ptr<Context> DeviceTest::ctx_;

/// Changes the shared context's capabilities for one scope and restores them
/// after, even when the test fails or skips: `ScopedCaps caps(ctx()); caps->device_type = "discrete";`
class ScopedCaps {
 public:
  explicit ScopedCaps(Context& ctx) : caps_(internals(ctx).caps), saved_(caps_) {}
  ~ScopedCaps() { caps_ = saved_; }
  ScopedCaps(const ScopedCaps&) = delete;
  ScopedCaps& operator=(const ScopedCaps&) = delete;
  Capabilities* operator->() { return &caps_; }

 private:
  Capabilities& caps_;
  Capabilities saved_;
};

inline std::vector<DType> weight_dtypes() { return {DType::F32, DType::F16}; }

/// A number for a test property: 1.23e-06.
inline std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// Expects call() to throw vkf::Error with `needle` in its message.
template <class F>
void expect_error(F&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace vkf::test
