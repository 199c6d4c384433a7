// The scale searches of the K-quant and IQ4 weight quantizers: the asymmetric
// scale and min of Q2_K, Q4_K and Q5_K (ggml's make_qkx2_quants), the symmetric
// scale of Q6_K (make_qx_quants) and of Q3_K (make_q3_quants), and IQ4_NL /
// IQ4_XS's codebook scale. Those the common mixes spend their time in also
// come for four groups side by side, with the same operations in the same
// order (each SIMD lane one group): the same bits, several times faster, since
// a search is a chain of dependent float additions per group.
#pragma once

#include <cstdint>

namespace seam::quant {

// Below this every value of a group is taken as zero (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupEps = 1e-15f;

// Asymmetric fit x ~= scale * q - min_out, q in [0, nmax], weighted by w.
// Starts from the plain min/max mapping, then tries nstep stretched grids
// (iscale = (nmax + rmin + rdelta*k) / range) and for each solves the weighted
// least-squares scale and offset for the rounded levels; keeps the best by
// weighted squared error, or by weighted absolute error when `abs_error` (Q2_K,
// whose four levels make the squared error favour the extremes too much).
// L[0..n) receives the levels. Returns scale; *min_out is the positive offset.
float fit_scale_min(int n, int nmax, const float* x, const float* w, std::uint8_t* L,
                    float* min_out, float rmin, float rdelta, int nstep, bool abs_error = false);

// fit_scale_min for the four groups x[n*g .. n*g + n) (weights w likewise),
// g = 0..3, n <= 32: scale[g] and min_out[g] are the bits fit_scale_min gives
// for group g, and L[n*g .. n*g + n) its levels where L is given.
void fit_scale_min_x4(int n, int nmax, const float* x, const float* w, float* scale, float* min_out,
                      float rmin, float rdelta, int nstep, bool abs_error = false,
                      std::uint8_t* L = nullptr);

// Symmetric fit x ~= scale * (L - nmax), levels in [0, 2*nmax), weighted by x^2 so
// that large values (which dominate a matmul) are reproduced best. Tries
// iscale = -(nmax + 0.1k) / max for k in [-9, 9] and keeps the largest
// explained energy sum(w*x*l)^2 / sum(w*l^2). L[0..n) receives the levels
// in [-nmax, nmax). Returns the scale.
float fit_scale_sym(int n, int nmax, const float* x, std::int8_t* L);

// fit_scale_sym for the four groups x[n*g .. n*g + n), g = 0..3, n <= 32,
// without the levels: scale[g] is the bits fit_scale_sym gives for group g.
void fit_scale_sym_x4(int n, int nmax, const float* x, float* scale);

// Symmetric fit for Q3_K, x ~= scale * (L - nmax) with L - nmax in [-nmax, nmax),
// weighted by x^2: start from the max mapping, then up to five passes that move
// one level at a time to its best value given the others, keeping a move when
// the explained energy sum(w*x*l)^2 / sum(w*l^2) grows (ggml's make_q3_quants
// with rmse). L[0..n) receives L in [0, 2*nmax). Returns the scale.
float fit_scale_sym_refined(int n, int nmax, const float* x, std::int8_t* L);

// The IQ4_NL / IQ4_XS codebook (kIQ4Values) index nearest to v, the higher one
// on a tie (as ggml's best_index_int8).
int nearest_iq4_code(float v);
// kIQ4Values[nearest_iq4_code(v[g])] for g = 0..3, as the four-lane fit finds it.
void nearest_iq4_values_x4(const float* v, float* out);

// The best scale for 32 values x ~= d * kIQ4Values[L], weighted by x^2: the
// scale that maps the extreme value onto the codebook's extreme, refined by
// least squares, then 15 neighbouring inverse scales ((k + code[0]) / max, k in
// -7..7), keeping the one with the largest explained energy.
float fit_scale_iq4(const float* x);

// fit_scale_iq4 for the four blocks x[32*g .. 32*g + 32), g = 0..3: scale[g]
// is the bits fit_scale_iq4 gives for block g.
void fit_scale_iq4_x4(const float* x, float* scale);

}  // namespace seam::quant
