#include "core/cpu_cores.h"

#include <sched.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>

namespace seam {

namespace {

int count_physical_cores() {
  const int logical = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return logical > 0 ? logical : 1;
  // CPUs of one core list the same siblings: count the distinct lists.
  std::set<std::string> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                    "/topology/thread_siblings_list");
    std::string siblings;
    if (!(f >> siblings)) return CPU_COUNT(&mask);  // no topology: the allowed logical CPUs
    cores.insert(siblings);
  }
  if (cores.empty()) return logical > 0 ? logical : 1;
  return static_cast<int>(cores.size());
}

}  // namespace

int core_count() {
  static const int n = count_physical_cores();
  return n;
}

}  // namespace seam
