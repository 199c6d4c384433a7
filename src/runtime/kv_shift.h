// Moving cached keys to other positions (Session::drop_positions) without a
// new prefill: RoPE's rotation of pair i at position p is by the angle
// p * w_i, linear in p, so rotating a cached key by delta * w_i gives the key
// as if it had been computed at p + delta.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "compute/backend.h"
#include "model/loader.h"
#include "runtime/kv_cache.h"

namespace seam {

// Why this model's cached keys cannot be moved exactly, or "" when they can.
std::string key_shift_refusal(const ModelSpec& spec);

// Rotates the K rows of `cells` in every layer by `delta` positions (negative:
// back) with that layer's RoPE (base, scaling, YaRN ramp, frequency factors,
// neox or adjacent pairs). The attention factor (YaRN, LongRoPE) scaled each
// key once when it was stored and a rotation keeps lengths, so the shift
// rotates with factor 1. V rows carry no position and stay as they are. The
// rotation is the backend's (ComputeBackend::shift_keys).
void shift_keys(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be, KvCache& kv,
                std::span<const std::uint32_t> cells, std::int32_t delta);

}  // namespace seam
