// Which CPU kernel level this process runs, and how many cores it has.
#pragma once

namespace seam {

// The name of the kernel level chosen at start-up: "scalar", "avx2" (AVX2 + FMA
// + F16C), "avx512" (AVX-512 F/BW/VL/VNNI) or "amx" (avx512 plus AMX-INT8
// tiles for the prefill GEMM). It is the best level up to avx512 the CPU and
// operating system support, unless the environment variable SEAM_CPU names
// another (amx runs only when SEAM_CPU=amx asks for it). Throws Error(InvalidArgument) when
// SEAM_CPU names an unknown level or one this CPU lacks; every later call throws the same error.
const char* cpu_level();

// The number of physical cores among the CPUs this process may run on (two
// hyper-threads of one core count once: they share its vector units). It is
// the default thread count of a session and of the CLI; when the topology
// cannot be read it is the number of logical CPUs. At least 1.
int physical_cores();

}  // namespace seam
