#include "compute/dot.h"

namespace seam::dot {

const char* simd_name() {
#if SEAM_DOT_AVX2
  return "avx2";
#else
  return "scalar";
#endif
}

}  // namespace seam::dot
