#include "compute/quantize_fit.h"

#include <algorithm>
#include <cmath>

#include "compute/quant_blocks.h"
#include "compute/round.h"

// Last: every product from here on rounded on its own, as ggml's quantizers do.
#include "compute/no_fp_contraction.h"

namespace seam::quant {

namespace {

// The value of largest magnitude, the first of equals (ggml's max search).
float largest_magnitude(int n, const float* x) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  return vmax;
}

// The symmetric fits' levels of x at inverse scale iscale, in [-nmax, nmax),
// into L, and the sums they weigh them by (w = x^2): sum w x l and sum w l^2.
void sym_levels(int n, int nmax, const float* x, float iscale, std::int8_t* L, float& sumlx,
                float& suml2) {
  sumlx = suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<std::int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
}

// The symmetric fits' start: the value of largest magnitude and the levels
// that map it onto -nmax, with their sums. False for a group below kGroupEps
// (L all zero): its scale is 0.
bool sym_start(int n, int nmax, const float* x, std::int8_t* L, float& vmax, float& sumlx,
               float& suml2) {
  vmax = largest_magnitude(n, x);
  if (std::fabs(vmax) < kGroupEps) {
    std::fill(L, L + n, 0);
    return false;
  }
  sym_levels(n, nmax, x, -nmax / vmax, L, sumlx, suml2);
  return true;
}

}  // namespace

float fit_scale_min(int n, int nmax, const float* x, const float* w, std::uint8_t* L,
                    float* min_out, float rmin, float rdelta, int nstep, bool abs_error) {
  auto cost = [abs_error](float diff) { return abs_error ? std::fabs(diff) : diff * diff; };
  float lo = x[0], hi = x[0];
  float sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  // The offset only shifts down: a group of positive values still decodes 0 exactly.
  if (lo > 0) lo = 0;
  if (hi == lo) {
    std::fill(L, L + n, 0);
    *min_out = -lo;
    return 0.f;
  }
  float iscale = nmax / (hi - lo);
  float scale = 1.f / iscale;
  float best = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax);
    L[i] = static_cast<std::uint8_t>(l);
    best += w[i] * cost(scale * l + lo - x[i]);
  }
  std::uint8_t aux[32];  // n <= 32
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * step + nmax) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax);
      aux[i] = static_cast<std::uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float s = (sum_w * sum_xl - sum_x * sum_l) / det;
    float m = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (m > 0) {  // keep the offset non-positive, as the format's "- dmin * mn" requires
      m = 0;
      s = sum_xl / sum_l2;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) err += w[i] * cost(s * aux[i] + m - x[i]);
    if (err < best) {
      std::copy(aux, aux + n, L);
      best = err;
      scale = s;
      lo = m;
    }
  }
  *min_out = -lo;
  return scale;
}

float fit_scale_sym(int n, int nmax, const float* x, std::int8_t* L) {
  float vmax, sumlx, suml2;
  if (!sym_start(n, nmax, x, L, vmax, sumlx, suml2)) return 0.f;
  float scale = suml2 > 0 ? sumlx / suml2 : 0.f;
  float best = scale * sumlx;
  std::int8_t aux[32];  // n <= 32
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    sym_levels(n, nmax, x, -(nmax + 0.1f * k) / vmax, aux, sumlx, suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      std::copy(aux, aux + n, L);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_scale_sym_refined(int n, int nmax, const float* x, std::int8_t* L) {
  float vmax, sumlx, suml2;
  if (!sym_start(n, nmax, x, L, vmax, sumlx, suml2)) return 0.f;
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      const int l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      slx += w * x[i] * l;
      sl2 += w * l * l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<std::int8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(L[i] + nmax);
  return suml2 > 0 ? sumlx / suml2 : 0.f;
}

int nearest_iq4_code(float v) {
  const std::int8_t* c = kIQ4Values;
  if (v <= c[0]) return 0;
  if (v >= c[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < c[mid] ? hi : lo) = mid;
  }
  return v - c[hi - 1] < c[hi] - v ? hi - 1 : hi;
}

float fit_scale_iq4(const float* x) {
  const float vmax = largest_magnitude(32, x);
  if (std::fabs(vmax) < kGroupEps) return 0.f;
  auto energy = [x](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIQ4Values[nearest_iq4_code(id * x[j])];
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  float sumqx, sumq2;
  energy(1.f / (-vmax / kIQ4Values[0]), sumqx, sumq2);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int k = -7; k <= 7; ++k) {
    energy((k + kIQ4Values[0]) / vmax, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

namespace {

// Four lanes, one group each: GCC's vector extensions give lane-wise IEEE
// operations; at 16 bytes they map onto SSE2's, which every x86-64 build has
// (at 32 bytes, without AVX, GCC splits comparisons into scalar code).
using F4 = float __attribute__((vector_size(16)));
using I4 = std::int32_t __attribute__((vector_size(16)));

// std::clamp(nearest_int(v), lo, hi) as a float, lane by lane, for integer
// bounds lo <= 0 <= hi: NaN -> 0 as nearest_int gives, clamped (the same
// result as clamping the rounded value), then rounded to even by adding and
// taking away 1.5 * 2^23. No integer lanes, whose min and max SSE2 lacks.
[[gnu::always_inline]] inline F4 round_clamped_x4(F4 v, float lo, float hi) {
  if (lo < 0) v = v == v ? v : F4{};  // for lo = 0 the next line maps NaN to 0
  v = v > lo ? v : lo + F4{};
  v = v < hi ? v : hi + F4{};
  return (v + 12582912.0f) - 12582912.0f;
}

// The codebook value nearest_iq4_code picks, lane by lane: below the lowest
// code lo and hi stay code 0 and 1; past each code k <= v they move to codes
// k and k + 1 (the last to 15 and 15), and the nearer of the two wins, the
// higher on a tie, by nearest_iq4_code's own comparison.
[[gnu::always_inline]] inline F4 nearest_iq4_value_x4(F4 v) {
  F4 lo = kIQ4Values[0] + F4{}, hi = kIQ4Values[1] + F4{};
  for (int k = 1; k < 16; ++k) {
    const F4 code = kIQ4Values[k] + F4{};
    const auto past = ~(v < code);  // code <= v, and NaN runs to 15 as in the search
    lo = past ? code : lo;
    hi = past ? kIQ4Values[std::min(k + 1, 15)] + F4{} : hi;
  }
  return v - lo < hi - v ? lo : hi;
}

[[gnu::always_inline]] inline F4 fabs_x4(F4 v) {  // clears the sign bit
  return reinterpret_cast<F4>(reinterpret_cast<I4>(v) & 0x7fffffff);
}

// largest_magnitude, lane by lane, of xt[0..n).
F4 largest_magnitude_x4(int n, const F4* xt) {
  F4 amax{}, vmax{};
  for (int i = 0; i < n; ++i) {
    const F4 a = fabs_x4(xt[i]);
    const auto larger = a > amax;
    amax = larger ? a : amax;
    vmax = larger ? xt[i] : vmax;
  }
  return vmax;
}

// The symmetric searches' choice, lane by lane: a candidate's least-squares
// scale sumqx / sumq2 replaces the best so far where it explains more energy
// (sumqx^2 / sumq2), as fit_scale_sym and fit_scale_iq4 decide. (Their sums
// stay apart: they multiply in different orders.)
[[gnu::always_inline]] inline void keep_if_better_x4(F4 sumqx, F4 sumq2, F4& scale, F4& best) {
  const auto better = (sumq2 > 0) & (sumqx * sumqx > best * sumq2);
  const F4 s = sumqx / sumq2;
  scale = better ? s : scale;
  best = better ? s * sumqx : best;
}

// in[n*g + i] -> out[i][g].
void transpose_x4(int n, const float* in, F4* out) {
  for (int i = 0; i < n; ++i) {
    F4 v{};
    for (int g = 0; g < 4; ++g) v[g] = in[n * g + i];
    out[i] = v;
  }
}

}  // namespace

// Each lane runs fit_scale_min's statements in its order; where fit_scale_min
// branches, the lanes select. std::min(lo, x) is (x < lo ? x : lo), and so on.
void fit_scale_min_x4(int n, int nmax, const float* x, const float* w, float* scale, float* min_out,
                      float rmin, float rdelta, int nstep, bool abs_error, std::uint8_t* L) {
  F4 xt[32] = {}, wt[32] = {};  // [i][group]; n <= 32 of them used
  transpose_x4(n, x, xt);
  transpose_x4(n, w, wt);
  auto cost = [abs_error](F4 diff) {  // fabs clears the sign bit
    return abs_error ? fabs_x4(diff) : diff * diff;
  };
  const auto fmax = static_cast<float>(nmax);
  F4 lo = xt[0], hi = xt[0];
  F4 sum_w = wt[0], sum_x = wt[0] * xt[0];
  for (int i = 1; i < n; ++i) {
    lo = xt[i] < lo ? xt[i] : lo;
    hi = hi < xt[i] ? xt[i] : hi;
    sum_w += wt[i];
    sum_x += wt[i] * xt[i];
  }
  lo = lo > 0 ? F4{} : lo;
  const auto flat = hi == lo;  // fit_scale_min returns early for these
  const F4 flat_min = -lo;
  F4 iscale = fmax / (hi - lo);
  F4 best_scale = 1.f / iscale;
  F4 best{};
  F4 levels[32];  // the best candidate's, where L asks for them
  for (int i = 0; i < n; ++i) {
    const F4 l = round_clamped_x4(iscale * (xt[i] - lo), 0.f, fmax);
    levels[i] = l;
    best += wt[i] * cost(best_scale * l + lo - xt[i]);
  }
  F4 aux[32];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + fmax) / (hi - lo);
    F4 sum_l{}, sum_l2{}, sum_xl{};
    for (int i = 0; i < n; ++i) {
      const F4 l = round_clamped_x4(iscale * (xt[i] - lo), 0.f, fmax);
      aux[i] = l;
      sum_l += wt[i] * l;
      sum_l2 += wt[i] * l * l;
      sum_xl += wt[i] * l * xt[i];
    }
    const F4 det = sum_w * sum_l2 - sum_l * sum_l;
    F4 s = (sum_w * sum_xl - sum_x * sum_l) / det;
    F4 m = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    const auto positive = m > 0;
    s = positive ? sum_xl / sum_l2 : s;
    m = positive ? F4{} : m;
    F4 err{};
    for (int i = 0; i < n; ++i) err += wt[i] * cost(s * aux[i] + m - xt[i]);
    const auto better = ~(det <= 0) & (err < best);
    best = better ? err : best;
    best_scale = better ? s : best_scale;
    lo = better ? m : lo;
    if (L) {
      for (int i = 0; i < n; ++i) levels[i] = better ? aux[i] : levels[i];
    }
  }
  for (int g = 0; g < 4; ++g) {
    scale[g] = flat[g] ? 0.f : best_scale[g];
    min_out[g] = flat[g] ? flat_min[g] : -lo[g];
    if (!L) continue;
    for (int i = 0; i < n; ++i)
      L[n * g + i] = flat[g] ? 0 : static_cast<std::uint8_t>(levels[i][g]);
  }
}

// As fit_scale_min_x4, fit_scale_sym's statements lane by lane.
void fit_scale_sym_x4(int n, int nmax, const float* x, float* scale) {
  F4 xt[32] = {};
  transpose_x4(n, x, xt);
  const F4 vmax = largest_magnitude_x4(n, xt);
  const auto flat = fabs_x4(vmax) < kGroupEps;
  const auto fmax = static_cast<float>(nmax);
  auto sums = [&](F4 iscale, F4& sumlx, F4& suml2) {
    sumlx = suml2 = F4{};
    for (int i = 0; i < n; ++i) {
      const F4 l = round_clamped_x4(iscale * xt[i], -fmax, fmax - 1);
      const F4 w = xt[i] * xt[i];
      sumlx += w * xt[i] * l;
      suml2 += w * l * l;
    }
  };
  F4 sumlx, suml2;
  sums(-fmax / vmax, sumlx, suml2);
  F4 best_scale = suml2 > 0 ? sumlx / suml2 : F4{};
  F4 best = best_scale * sumlx;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    sums(-(fmax + 0.1f * static_cast<float>(k)) / vmax, sumlx, suml2);
    keep_if_better_x4(sumlx, suml2, best_scale, best);
  }
  for (int g = 0; g < 4; ++g) scale[g] = flat[g] ? 0.f : best_scale[g];
}

// As fit_scale_sym_x4, fit_scale_iq4's statements lane by lane.
void fit_scale_iq4_x4(const float* x, float* scale) {
  F4 xt[32] = {};
  transpose_x4(32, x, xt);
  const F4 vmax = largest_magnitude_x4(32, xt);
  const auto flat = fabs_x4(vmax) < kGroupEps;
  auto energy = [&xt](F4 id, F4& sumqx, F4& sumq2) {
    sumqx = sumq2 = F4{};
    for (int j = 0; j < 32; ++j) {
      const F4 q = nearest_iq4_value_x4(id * xt[j]);
      const F4 w = xt[j] * xt[j];
      sumqx += w * q * xt[j];
      sumq2 += w * q * q;
    }
  };
  F4 sumqx, sumq2;
  energy(1.f / (-vmax / static_cast<float>(kIQ4Values[0])), sumqx, sumq2);
  F4 d = sumq2 > 0 ? sumqx / sumq2 : F4{};
  F4 best = d * sumqx;
  for (int k = -7; k <= 7; ++k) {
    energy(static_cast<float>(k + kIQ4Values[0]) / vmax, sumqx, sumq2);
    keep_if_better_x4(sumqx, sumq2, d, best);
  }
  for (int g = 0; g < 4; ++g) scale[g] = flat[g] ? 0.f : d[g];
}

void nearest_iq4_values_x4(const float* v, float* out) {
  F4 lanes;
  for (int g = 0; g < 4; ++g) lanes[g] = v[g];
  const F4 q = nearest_iq4_value_x4(lanes);
  for (int g = 0; g < 4; ++g) out[g] = q[g];
}

}  // namespace seam::quant
