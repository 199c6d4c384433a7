#include "chat/tool_call_stream.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace seam::chat {
namespace {

using Json = nlohmann::ordered_json;

bool space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Where each format's calls can begin in the middle of an answer.
std::vector<std::string_view> markers(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes:
      return {"<tool_call>"};
    case ToolCallFormat::Llama3:
      return {"<|python_tag|>"};
    case ToolCallFormat::Mistral:
      return {"[TOOL_CALLS]"};
    case ToolCallFormat::Gemma:
      return {"```tool_code", "```tool_call", "```json"};
  }
  return {};
}

// Formats whose whole answer may be a bare JSON call.
bool bare_json(ToolCallFormat f) {
  return f == ToolCallFormat::Llama3 || f == ToolCallFormat::Gemma;
}

// What may stand before a JSON call, per format: openers (one must come
// since the last call) and separators (skipped). Longer tokens first.
struct Lead {
  std::vector<std::string_view> openers, separators;
  bool after_call_opens = false;  // a sequence of objects needs no opener between them
};
Lead lead(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes:
      return {{"<tool_call>"}, {"</tool_call>"}};
    case ToolCallFormat::Llama3:
      return {{"<|python_tag|>"}, {";"}, true};
    case ToolCallFormat::Mistral:
      return {{"[", ","}, {"[TOOL_CALLS]", "]"}};
    case ToolCallFormat::Gemma:
      return {{"```json"}, {"```"}};
  }
  return {};
}

ToolCallEvent content_event(std::string text) {
  ToolCallEvent e;
  e.text = std::move(text);
  return e;
}
ToolCallEvent begin_event(std::size_t index, std::string name, std::string id) {
  ToolCallEvent e;
  e.kind = ToolCallEvent::Kind::Begin;
  e.index = index;
  e.name = std::move(name);
  e.id = std::move(id);
  return e;
}
ToolCallEvent arguments_event(std::size_t index, std::string text) {
  ToolCallEvent e;
  e.kind = ToolCallEvent::Kind::Arguments;
  e.index = index;
  e.text = std::move(text);
  return e;
}

enum class Read { Ok, More, No };

// A JSON string literal starting at s[i] ('"'): its value and the index one
// past it.
Read read_string(std::string_view s, std::size_t i, std::string& value, std::size_t& end) {
  if (i >= s.size()) return Read::More;
  if (s[i] != '"') return Read::No;
  for (std::size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
    } else if (s[j] == '"') {
      const Json v = Json::parse(s.substr(i, j + 1 - i), nullptr, false);
      if (v.is_discarded() || !v.is_string()) return Read::No;
      value = v.get<std::string>();
      end = j + 1;
      return Read::Ok;
    }
  }
  return Read::More;
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && space(s[i])) ++i;
  return i;
}

// The end of a prefix of s that does not cut a UTF-8 character.
std::size_t whole_chars(std::string_view s, std::size_t begin, std::size_t end) {
  std::size_t lead = end;
  while (lead > begin && (static_cast<unsigned char>(s[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead == begin) return end;  // no lead byte in range: nothing to protect
  const unsigned char c = static_cast<unsigned char>(s[lead - 1]);
  const std::size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return end - (lead - 1) >= len ? end : lead - 1;
}

}  // namespace

std::vector<ToolCallEvent> ToolCallStream::feed(std::string_view text) {
  std::vector<ToolCallEvent> out;
  text_.append(text);
  advance(out);
  return out;
}

void ToolCallStream::advance(std::vector<ToolCallEvent>& out) {
  if (state_ == State::Content) release_content(out);
  for (;;) {
    bool moved = false;
    switch (state_) {
      case State::Content:
      case State::Held:
        return;
      case State::Seek:
        moved = seek_call(out);
        break;
      case State::Head:
        moved = read_head(out);
        break;
      case State::Args:
        moved = stream_args(out);
        break;
      case State::Tail:
        moved = end_object();
        break;
    }
    if (!moved) return;
  }
}

// Releases the text that cannot be the start of a call; moves to Seek at
// the first marker (or at a leading '{' where the answer may be bare JSON).
void ToolCallStream::release_content(std::vector<ToolCallEvent>& out) {
  // Space at the start, and before a call, is not content (the parser trims
  // it too); space inside the text is held until text follows it.
  if (!spoke_) sent_ = skip_space(text_, sent_);
  auto emit = [&](std::size_t end) {
    while (end > sent_ && space(text_[end - 1])) --end;
    if (end > sent_) {
      out.push_back(content_event(text_.substr(sent_, end - sent_)));
      spoke_ = true;
    }
    sent_ = std::max(sent_, end);
  };
  if (!decided_ && bare_json(format_)) {
    if (sent_ == text_.size()) return;  // only space so far: undecided
    decided_ = true;
    if (text_[sent_] == '{') {
      region_ = at_ = sent_;
      open_ = true;
      state_ = State::Seek;
      return;
    }
  }
  std::size_t hit = std::string::npos;
  for (std::string_view m : markers(format_)) hit = std::min(hit, text_.find(m, sent_));
  if (hit != std::string::npos) {
    emit(hit);
    region_ = at_ = hit;
    state_ = State::Seek;
    return;
  }
  // Hold back a tail that a marker may still grow from.
  std::size_t hold = 0;
  for (std::string_view m : markers(format_)) {
    for (std::size_t k = std::min(m.size() - 1, text_.size() - sent_); k > hold; --k) {
      if (std::string_view(text_).substr(text_.size() - k) == m.substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  emit(text_.size() - hold);
}

// Between calls: skips the format's wrappers up to the next '{', which is
// read as a call if an opener came before it.
bool ToolCallStream::seek_call(std::vector<ToolCallEvent>&) {
  const std::string_view s = text_;
  const Lead l = lead(format_);
  while (at_ < s.size()) {
    if (space(s[at_])) {
      ++at_;
      continue;
    }
    if (s[at_] == '{' && open_) {
      object_ = at_;
      open_ = false;
      state_ = State::Head;
      return true;
    }
    const std::string_view rest = s.substr(at_);
    bool skipped = false, partial = false;
    for (const auto* list : {&l.openers, &l.separators}) {
      for (std::string_view tok : *list) {
        if (rest.substr(0, tok.size()) == tok) {
          at_ += tok.size();
          open_ = open_ || list == &l.openers;
          skipped = true;
          break;
        }
        partial = partial || (rest.size() < tok.size() && tok.substr(0, rest.size()) == rest);
      }
      if (skipped) break;
    }
    if (skipped) continue;
    if (!partial) state_ = State::Held;  // not (or no longer) JSON calls: read at the end
    return false;
  }
  return false;
}

// The keys before the arguments: "name" (required), "id", other strings.
bool ToolCallStream::read_head(std::vector<ToolCallEvent>& out) {
  const std::string_view s = text_;
  std::string name, id;
  bool have_name = false;
  std::size_t i = skip_space(s, object_ + 1);
  for (;;) {
    std::string key;
    std::size_t end = 0;
    Read r = read_string(s, i, key, end);
    if (r == Read::More) return false;
    if (r == Read::No) break;
    i = skip_space(s, end);
    if (i >= s.size()) return false;
    if (s[i] != ':') break;
    i = skip_space(s, i + 1);
    if (i >= s.size()) return false;
    if (key == "arguments" || key == "parameters") {
      if (!have_name) break;
      out.push_back(begin_event(begun_++, name, id));
      value_ = at_ = i;
      depth_ = 0;
      in_string_ = escape_ = string_value_ = false;
      state_ = State::Args;
      return true;
    }
    std::string value;
    r = read_string(s, i, value, end);
    if (r == Read::More) return false;
    if (r == Read::No) break;
    if (key == "name") {
      name = value;
      have_name = !name.empty();
    } else if (key == "id") {
      id = value;
    }
    i = skip_space(s, end);
    if (i >= s.size()) return false;
    if (s[i] != ',') break;
    i = skip_space(s, i + 1);
  }
  state_ = State::Held;  // not a call shaped as we stream it: read at the end
  return false;
}

// Sends the arguments object as it arrives; a string (JSON inside a JSON
// string) or null is sent whole once complete.
bool ToolCallStream::stream_args(std::vector<ToolCallEvent>& out) {
  const std::string_view s = text_;
  const std::size_t index = begun_ - 1;
  auto fragment = [&](std::string text) {
    if (!text.empty()) out.push_back(arguments_event(index, std::move(text)));
  };
  if (at_ == value_ && at_ < s.size() && s[at_] != '{') {
    if (s[at_] == '"') {
      std::string v;
      std::size_t end = 0;
      const Read r = read_string(s, at_, v, end);
      if (r == Read::More) return false;
      if (r == Read::Ok) {
        fragment(std::move(v));
        at_ = end;
        return end_object();
      }
    } else if (s.substr(at_, 4) == "null") {
      fragment("{}");
      at_ += 4;
      return end_object();
    } else if (std::string_view("null").substr(0, s.size() - at_) == s.substr(at_)) {
      return false;
    }
    state_ = State::Held;
    return false;
  }
  const std::size_t from = at_;
  std::size_t i = at_;
  bool closed = false;
  for (; i < s.size() && !closed; ++i) {
    const char c = s[i];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      closed = --depth_ == 0;
    }
  }
  const std::size_t end = closed ? i : whole_chars(s, from, i);
  // The scan state covers up to i; a held-back partial character is
  // rescanned (it holds no quote or bracket, so the state is unchanged).
  fragment(std::string(s.substr(from, end - from)));
  at_ = end;
  if (!closed) return false;
  return end_object();
}

// After the arguments: finds the end of the call's object, then seeks the
// next call.
bool ToolCallStream::end_object() {
  const std::string_view s = text_;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = object_; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      at_ = i + 1;
      open_ = lead(format_).after_call_opens;
      state_ = State::Seek;
      return true;
    }
  }
  state_ = State::Tail;  // not closed yet: rescanned when more text comes
  return false;
}

std::vector<ToolCallEvent> ToolCallStream::finish() {
  std::vector<ToolCallEvent> out;
  if (state_ == State::Content) {
    std::size_t end = text_.size();
    while (end > sent_ && space(text_[end - 1])) --end;
    if (end > sent_) out.push_back(content_event(text_.substr(sent_, end - sent_)));
    sent_ = text_.size();
    state_ = State::Held;
    region_ = text_.size();
    return out;
  }
  const ParsedOutput parsed = parse_tool_calls(std::string_view(text_).substr(region_), format_);
  std::string content = parsed.content;
  // A call that could not be read stays visible as text, never dropped.
  for (const ToolCallError& e : parsed.errors) content += (content.empty() ? "" : "\n") + e.text;
  if (!content.empty()) out.push_back(content_event(std::move(content)));
  for (std::size_t i = begun_; i < parsed.calls.size(); ++i) {
    const ToolCall& c = parsed.calls[i];
    out.push_back(begin_event(i, c.name, c.id));
    out.push_back(
        arguments_event(i, c.arguments.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  begun_ = std::max(begun_, parsed.calls.size());
  state_ = State::Held;
  return out;
}

}  // namespace seam::chat
