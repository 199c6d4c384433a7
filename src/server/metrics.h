// The server's counters, gauges and histograms, rendered in the Prometheus
// text exposition format (version 0.0.4) for GET /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace seam::server {

class Metrics {
 public:
  Metrics();

  void request(const std::string& route, int status);
  void tokens(std::uint64_t prompt, std::uint64_t cached, std::uint64_t generated);
  void finished(const std::string& reason);
  void ttft(double seconds);
  void inter_token(double seconds);
  void decode_call(std::uint32_t batch_tokens);
  void gauges(std::uint32_t waiting, std::uint32_t running, std::uint32_t slots_busy,
              std::uint32_t slots_total);

  std::string render() const;

 private:
  struct Histogram {
    std::vector<double> bounds;         // upper bounds, ascending (+Inf implied)
    std::vector<std::uint64_t> counts;  // [bounds.size() + 1], not cumulative
    double sum = 0;
    std::uint64_t count = 0;
    void observe(double v);
    void render(std::string& out, const std::string& name, const std::string& help) const;
  };

  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> finished_;
  std::uint64_t prompt_ = 0, cached_ = 0, generated_ = 0, decode_calls_ = 0, decode_tokens_ = 0;
  std::uint32_t waiting_ = 0, running_ = 0, busy_ = 0, slots_ = 0;
  Histogram ttft_, itl_, batch_;
};

}  // namespace seam::server
