#include "compute/cpu_level.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/cpu_cores.h"
#include "seam/cpu.h"
#include "seam/error.h"

namespace seam {
namespace {

constexpr const char* kNames[kNumCpuLevels] = {"scalar", "avx2", "avx512", "amx"};

// XCR0: which register states the OS saves on a context switch. A CPU's AVX
// bits mean nothing unless the OS saves the YMM (and, for AVX-512, opmask and
// ZMM) state; cpuid alone cannot tell.
std::uint64_t xcr0() {
  std::uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// Linux (5.16+) hands out the 8 KiB AMX tile state only to processes that ask
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); the grant covers
// every thread of the process. Without it the first tile instruction faults.
bool request_tile_data() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuLevel detect() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return CpuLevel::Scalar;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!osxsave || !avx || !fma || !f16c) return CpuLevel::Scalar;
  const std::uint64_t xcr = xcr0();
  if ((xcr & 0x6) != 0x6) return CpuLevel::Scalar;  // SSE + YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return CpuLevel::Scalar;
  if (!(b & (1u << 5))) return CpuLevel::Scalar;  // AVX2
  const bool avx512f = b & (1u << 16), avx512bw = b & (1u << 30), avx512vl = b & (1u << 31),
             vnni = c & (1u << 11);
  const bool zmm_state = (xcr & 0xe0) == 0xe0;  // opmask, ZMM0-15 high halves, ZMM16-31
  if (!(avx512f && avx512bw && avx512vl && vnni && zmm_state)) return CpuLevel::Avx2;
  const bool amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25);
  const bool tile_state = (xcr & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  if (amx_tile && amx_int8 && tile_state && request_tile_data()) return CpuLevel::Amx;
  return CpuLevel::Avx512;
}

}  // namespace

const char* cpu_level_name(CpuLevel l) { return kNames[static_cast<int>(l)]; }

std::optional<CpuLevel> parse_cpu_level(std::string_view name) {
  for (int i = 0; i < kNumCpuLevels; ++i) {
    if (name == kNames[i]) return static_cast<CpuLevel>(i);
  }
  return std::nullopt;
}

CpuLevel detected_cpu_level() {
  static const CpuLevel level = detect();
  return level;
}

CpuLevel choose_cpu_level(const char* seam_cpu, CpuLevel detected) {
  // AMX is opt-in: its GEMM measured slower than the AVX-512 VNNI one in a
  // whole prefill (docs/performance.md), so the default stops at avx512.
  if (!seam_cpu || !*seam_cpu) return std::min(detected, CpuLevel::Avx512);
  const std::optional<CpuLevel> want = parse_cpu_level(seam_cpu);
  if (!want) {
    throw Error(Errc::InvalidArgument, std::string("SEAM_CPU=") + seam_cpu +
                                           " is not a CPU level; use scalar, avx2, avx512 or amx, "
                                           "or unset it for this CPU's default (" +
                                           cpu_level_name(std::min(detected, CpuLevel::Avx512)) +
                                           ")");
  }
  if (*want > detected) {
    throw Error(Errc::InvalidArgument, std::string("SEAM_CPU=") + seam_cpu +
                                           " asks for kernels this CPU cannot run (it supports " +
                                           "up to " + cpu_level_name(detected) +
                                           "); unset SEAM_CPU or pick a lower level");
  }
  return *want;
}

CpuLevel active_cpu_level() {
  static const CpuLevel level = choose_cpu_level(std::getenv("SEAM_CPU"), detected_cpu_level());
  return level;
}

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    if (detected_cpu_level() < CpuLevel::Avx512) return false;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a & (1u << 5)) != 0;  // CPUID.(7,1):EAX bit 5, AVX512_BF16
  }();
  return has;
}

const char* cpu_level() { return cpu_level_name(active_cpu_level()); }

int physical_cores() { return core_count(); }

}  // namespace seam
