// Included last by the weight and activation quantizers: no FP contraction
// from here to the end of the file. An opt-in -march=native build (SEAM_NATIVE)
// would let the compiler fuse a*b+c into one FMA (x * id + 8.5f, the 1.5 * 2^23
// rounding trick, the scale searches' sums), rounding once where ggml's
// reference quantizers (built without FMA) and the numpy ports in tools/ round
// twice; on a product at a rounding boundary the two give a different quant or
// resolve a near-tie of the scale search the other way. Every product after
// this header is rounded on its own (quant_quantize_test and quantize_k_test
// check such inputs bit for bit).
#pragma once

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
