// The outputs of `seam observe` besides JSONL: the terminal view and the HTML report.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "seam/observe.h"

namespace seam::cli {

// One JSONL object per event, schema v1 (docs/observe.md).
nlohmann::ordered_json event_json(const ObserveEvent& e);
// Dumps JSON with invalid UTF-8 (a token may split a character) replaced by U+FFFD.
std::string dump_json(const nlohmann::ordered_json& j);

// The text coloured by surprisal, interjections set apart, and a status line
// pinned to the bottom row of the terminal (a scroll region above it).
class TerminalView {
 public:
  // `colors`: 0 (NO_COLOR or not a terminal), 16 or 256. `tty`: draw the
  // status line (a terminal); otherwise plain text.
  TerminalView(std::FILE* out, int colors, bool tty);
  ~TerminalView();
  void show(const ObserveEvent& e);
  // Redraws the status line at most every 50 ms unless `force`.
  void status(const SummaryEvent& s, double z, bool force = false);

 private:
  std::FILE* out_;
  int colors_;
  bool tty_;
  int rows_ = 0;
  std::string carry_;  // bytes of a UTF-8 character split across tokens
  double last_draw_ = -1;
};

// Picks the colour depth from the environment: NO_COLOR, COLORTERM, TERM.
int terminal_colors();

// Collects events and writes one self-contained HTML page (inline CSS and JS).
class HtmlReport {
 public:
  void add(const ObserveEvent& e);
  // Throws Error(Io) when the file cannot be written.
  void write(const std::string& path, const std::string& title) const;

 private:
  nlohmann::json tokens_ = nlohmann::json::array();
  nlohmann::json vocab_ = nlohmann::json::object();  // id -> piece of the alternatives shown
  nlohmann::json triggers_ = nlohmann::json::array();
  nlohmann::json interjections_ = nlohmann::json::array();
  nlohmann::json rolls_ = nlohmann::json::array();
  nlohmann::json summary_ = nlohmann::json::object();
};

}  // namespace seam::cli
