#include "observe/stats.h"

#include <cstdio>

namespace seam::observe {

bool TriggerGate::decide(std::uint64_t i, std::uint64_t scored_before, double z, std::string* why) {
  // Re-arming looks at every token, inside warm-up and cool-down too: the
  // passage that fired must have ended before the gate may fire again.
  if (!armed_ && z < c_.z_rearm) armed_ = true;
  const char* reason = nullptr;
  if (!(z > c_.z)) {
    reason = "below z";
  } else if (scored_before < c_.warmup) {
    reason = "warm-up";
  } else if (fired_ && i - last_ < c_.cooldown) {
    reason = "cool-down";
  } else if (!armed_) {
    reason = "not re-armed";
  }
  const bool fire = reason == nullptr;
  if (fire) {
    armed_ = false;
    fired_ = true;
    last_ = i;
  }
  if (why) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "gate i=%llu z=%.4f scored_before=%llu armed=%d -> %s",
                  static_cast<unsigned long long>(i), z,
                  static_cast<unsigned long long>(scored_before), armed_ ? 1 : 0,
                  fire ? "FIRE" : reason);
    *why = buf;
  }
  return fire;
}

}  // namespace seam::observe
