#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace seam::server {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Prometheus label values escape backslash, double quote and newline.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double v) {
  header(out, name, type, help);
  out += std::string(name) + " " + num(v) + "\n";
}

}  // namespace

void Metrics::Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), v);
  ++counts[static_cast<std::size_t>(it - bounds.begin())];
  sum += v;
  ++count;
}

void Metrics::Histogram::render(std::string& out, const std::string& name,
                                const std::string& help) const {
  header(out, name.c_str(), "histogram", help.c_str());
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cum += counts[i];
    out += name + "_bucket{le=\"" + num(bounds[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + num(sum) + "\n";
  out += name + "_count " + std::to_string(count) + "\n";
}

Metrics::Metrics() {
  ttft_.bounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  itl_.bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  batch_.bounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  for (Histogram* h : {&ttft_, &itl_, &batch_}) h->counts.assign(h->bounds.size() + 1, 0);
}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard lock(m_);
  ++requests_[{route, status}];
}

void Metrics::tokens(std::uint64_t prompt, std::uint64_t cached, std::uint64_t generated) {
  std::lock_guard lock(m_);
  prompt_ += prompt;
  cached_ += cached;
  generated_ += generated;
}

void Metrics::finished(const std::string& reason) {
  std::lock_guard lock(m_);
  ++finished_[reason];
}

void Metrics::ttft(double s) {
  std::lock_guard lock(m_);
  ttft_.observe(s);
}

void Metrics::inter_token(double s) {
  std::lock_guard lock(m_);
  itl_.observe(s);
}

void Metrics::decode_call(std::uint32_t n) {
  std::lock_guard lock(m_);
  ++decode_calls_;
  decode_tokens_ += n;
  batch_.observe(n);
}

void Metrics::gauges(std::uint32_t waiting, std::uint32_t running, std::uint32_t busy,
                     std::uint32_t slots) {
  std::lock_guard lock(m_);
  waiting_ = waiting;
  running_ = running;
  busy_ = busy;
  slots_ = slots;
}

std::string Metrics::render() const {
  std::lock_guard lock(m_);
  std::string out;
  header(out, "seam_requests_total", "counter", "HTTP requests answered, by route and status.");
  for (const auto& [key, n] : requests_)
    out += "seam_requests_total{route=\"" + label(key.first) + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  header(out, "seam_requests_finished_total", "counter",
         "Generations finished, by reason (stop, length, timeout, cancelled, error).");
  for (const auto& [reason, n] : finished_)
    out += "seam_requests_finished_total{reason=\"" + label(reason) + "\"} " + std::to_string(n) +
           "\n";
  scalar(out, "seam_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         static_cast<double>(prompt_));
  scalar(out, "seam_prompt_tokens_cached_total", "counter",
         "Prompt tokens reused from the KV cache instead of recomputed.",
         static_cast<double>(cached_));
  scalar(out, "seam_generated_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(generated_));
  scalar(out, "seam_requests_waiting", "gauge", "Requests queued for a slot.", waiting_);
  scalar(out, "seam_requests_running", "gauge", "Requests holding a slot.", running_);
  scalar(out, "seam_slots_busy", "gauge", "Slots generating.", busy_);
  scalar(out, "seam_slots_total", "gauge", "Slots (--parallel).", slots_);
  scalar(out, "seam_decode_calls_total", "counter", "Session::decode calls.",
         static_cast<double>(decode_calls_));
  scalar(out, "seam_decode_tokens_total", "counter", "Tokens run through decode calls.",
         static_cast<double>(decode_tokens_));
  batch_.render(out, "seam_decode_batch_tokens", "Tokens per decode call.");
  ttft_.render(out, "seam_time_to_first_token_seconds",
               "From the request's arrival to its first generated token.");
  itl_.render(out, "seam_inter_token_latency_seconds", "Between consecutive generated tokens.");
  return out;
}

}  // namespace seam::server
