// The physical cores this process may run on: the default thread count (two
// hyper-threads of one core share its vector units, so a second thread there
// gains little on compute-bound kernels and contends with the first).
#pragma once

namespace seam {

// Distinct physical cores (by the kernel's thread-sibling lists) among the
// CPUs in this process's affinity mask; the logical CPU count when the
// topology cannot be read. At least 1; computed once. seam::physical_cores()
// (seam/cpu.h) is this for the public API.
int core_count();

}  // namespace seam
