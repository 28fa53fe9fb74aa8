// The one door to a Context's or Recorder's inside, for vkformer's own code
// (ops, the loader, Session) and white-box tests of the runtime. Not part of
// the public API: tools and applications use the public methods.
#pragma once

#include "vkformer/context.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

struct InternalAccess {
  static Context::Impl& of(Context& c) { return *c.impl_; }
  static Recorder::Impl& of(Recorder& r) { return *r.impl_; }
};

inline Context::Impl& internals(Context& c) { return InternalAccess::of(c); }
inline Recorder::Impl& internals(Recorder& r) { return InternalAccess::of(r); }

}  // namespace vkf
