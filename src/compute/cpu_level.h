// CPU kernel levels: detection from cpuid, the SEAM_CPU override, and the one
// level every kernel dispatch of this process uses.
#pragma once

#include <optional>
#include <string_view>

namespace seam {

// Ordered: a CPU that runs a level runs every level below it. Amx is the
// AVX-512 level plus AMX-INT8 tiles for the prefill GEMM (Intel Sapphire
// Rapids and later: every AMX CPU has AVX-512 VNNI); opt-in (SEAM_CPU=amx).
enum class CpuLevel { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3 };
inline constexpr int kNumCpuLevels = 4;

const char* cpu_level_name(CpuLevel l);
std::optional<CpuLevel> parse_cpu_level(std::string_view name);

// The best level this CPU and OS support (cpuid feature bits plus xgetbv for
// the register state the OS saves; for AMX, Linux must also grant this process
// the tile data state, which the first call requests).
CpuLevel detected_cpu_level();

// The level to run given SEAM_CPU's value (null or empty: the detected one,
// but at most Avx512: Amx is used only when SEAM_CPU=amx asks for it).
// Throws Error(InvalidArgument) for an unknown name or a level above `detected`.
CpuLevel choose_cpu_level(const char* seam_cpu, CpuLevel detected);

// choose_cpu_level(getenv("SEAM_CPU"), detected_cpu_level()), computed once.
CpuLevel active_cpu_level();

// Whether the CPU has AVX512_BF16 (vdpbf16ps) on top of the AVX-512 level:
// Zen 4 and Intel from Cooper Lake / Sapphire Rapids. Kernels that use it are
// chosen at run time inside the AVX-512 level; false below that level.
bool cpu_has_avx512_bf16();

}  // namespace seam
