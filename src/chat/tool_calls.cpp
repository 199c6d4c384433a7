#include "chat/tool_calls.h"

#include <cctype>

#include "chat/js_text.h"
#include "core/utf8.h"

namespace seam::chat {
namespace {

using Json = nlohmann::ordered_json;

std::string_view trim_view(std::string_view s) { return js::trim(s); }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Index one past the JSON object/array that starts at s[start] ('{' or '['),
// found by bracket matching outside strings; npos when it never closes.
std::size_t json_end(std::string_view s, std::size_t start) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool parse_json(std::string_view text, Json& out, std::string& err) {
  out = Json::parse(text.begin(), text.end(), nullptr, false);
  if (out.is_discarded()) {
    err = "invalid JSON";
    return false;
  }
  return true;
}

// {"name": ..., "arguments"|"parameters": {...} or "<json>", "id": ...} -> ToolCall.
bool call_from_json(const Json& obj, ToolCall& call, std::string& err) {
  if (!obj.is_object()) {
    err = "a tool call must be a JSON object";
    return false;
  }
  const Json* fn = &obj;
  if (obj.contains("function") && obj["function"].is_object()) fn = &obj["function"];
  if (!fn->contains("name") || !(*fn)["name"].is_string() ||
      (*fn)["name"].get<std::string>().empty()) {
    err = "tool call has no \"name\"";
    return false;
  }
  call.name = (*fn)["name"].get<std::string>();
  const Json* args = nullptr;
  if (fn->contains("arguments")) {
    args = &(*fn)["arguments"];
  } else if (fn->contains("parameters")) {
    args = &(*fn)["parameters"];
  }
  if (!args || args->is_null()) {
    call.arguments = Json::object();
  } else if (args->is_object()) {
    call.arguments = *args;
  } else if (args->is_string()) {
    Json parsed;
    const std::string text = args->get<std::string>();
    if (!parse_json(text, parsed, err) || !parsed.is_object()) {
      err = "arguments of '" + call.name + "' are not a JSON object";
      return false;
    }
    call.arguments = std::move(parsed);
  } else {
    err = "arguments of '" + call.name + "' are not a JSON object";
    return false;
  }
  if (obj.contains("id") && obj["id"].is_string()) call.id = obj["id"].get<std::string>();
  return true;
}

// ---- Python-style calls: name(key=value, ...) with literal values -----------

class PyLiteral {
 public:
  explicit PyLiteral(std::string_view s) : s_(s) {}

  bool call(ToolCall& out, std::string& err) {
    skip_ws();
    const std::size_t start = i_;
    while (i_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.'))
      ++i_;
    std::string name(s_.substr(start, i_ - start));
    // Llama's built-in tools are written `brave_search.call(query="...")`.
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".call") == 0)
      name.resize(name.size() - 5);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
      err = "expected a function name";
      return false;
    }
    skip_ws();
    if (!eat('(')) {
      err = "expected '(' after '" + name + "'";
      return false;
    }
    out.name = name;
    out.arguments = Json::object();
    skip_ws();
    if (eat(')')) return finish(err);
    while (true) {
      skip_ws();
      const std::size_t key_start = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
        ++i_;
      const std::string key(s_.substr(key_start, i_ - key_start));
      skip_ws();
      if (key.empty() || !eat('=')) {
        err = "expected key=value arguments in the call to '" + name + "'";
        return false;
      }
      Json v;
      if (!value(v, err, 0)) return false;
      out.arguments[key] = std::move(v);
      skip_ws();
      if (eat(',')) continue;
      if (eat(')')) return finish(err);
      err = "expected ',' or ')' in the call to '" + name + "'";
      return false;
    }
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;

  bool finish(std::string& err) {
    skip_ws();
    if (i_ != s_.size()) {
      err = "unexpected text after the call";
      return false;
    }
    return true;
  }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  bool value(Json& out, std::string& err, int depth) {
    if (depth > 64) {
      err = "arguments are nested too deeply";
      return false;
    }
    skip_ws();
    if (i_ >= s_.size()) {
      err = "unexpected end of the call";
      return false;
    }
    const char c = s_[i_];
    if (c == '"' || c == '\'') return string(out, err);
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++i_;
      out = Json::array();
      skip_ws();
      if (eat(close)) return true;
      while (true) {
        Json v;
        if (!value(v, err, depth + 1)) return false;
        out.push_back(std::move(v));
        skip_ws();
        if (eat(',')) {
          skip_ws();
          if (eat(close)) return true;
          continue;
        }
        if (eat(close)) return true;
        err = "expected ',' or a closing bracket in a list";
        return false;
      }
    }
    if (c == '{') {
      ++i_;
      out = Json::object();
      skip_ws();
      if (eat('}')) return true;
      while (true) {
        Json k;
        if (!value(k, err, depth + 1)) return false;
        if (!k.is_string()) {
          err = "dict keys must be strings";
          return false;
        }
        skip_ws();
        if (!eat(':')) {
          err = "expected ':' in a dict";
          return false;
        }
        Json v;
        if (!value(v, err, depth + 1)) return false;
        out[k.get<std::string>()] = std::move(v);
        skip_ws();
        if (eat(',')) {
          skip_ws();
          if (eat('}')) return true;
          continue;
        }
        if (eat('}')) return true;
        err = "expected ',' or '}' in a dict";
        return false;
      }
    }
    if (word("True") || word("true")) {
      out = true;
      return true;
    }
    if (word("False") || word("false")) {
      out = false;
      return true;
    }
    if (word("None") || word("null")) {
      out = nullptr;
      return true;
    }
    const std::size_t start = i_;
    if (c == '-' || c == '+') ++i_;
    while (i_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
            s_[i_] == 'E' ||
            ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E'))))
      ++i_;
    Json num;
    std::string num_err;
    if (i_ > start && parse_json(s_.substr(start, i_ - start), num, num_err) && num.is_number()) {
      out = std::move(num);
      return true;
    }
    err = "unreadable argument value";
    return false;
  }

  bool string(Json& out, std::string& err) {
    const char q = s_[i_++];
    std::string v;
    while (i_ < s_.size() && s_[i_] != q) {
      char c = s_[i_++];
      if (c == '\\' && i_ < s_.size()) {
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case '\\':
            c = '\\';
            break;
          case '\'':
            c = '\'';
            break;
          case '"':
            c = '"';
            break;
          default:
            v += '\\';
            c = e;
        }
      }
      v += c;
    }
    if (!eat(q)) {
      err = "unterminated string argument";
      return false;
    }
    out = std::move(v);
    return true;
  }
};

bool parse_python_call(std::string_view text, ToolCall& call, std::string& err) {
  return PyLiteral(text).call(call, err);
}

void add_error(ParsedOutput& out, std::string message, std::string_view text) {
  out.errors.push_back({std::move(message), std::string(text)});
}

// One or more JSON objects separated by whitespace or ';'. Returns false (and
// leaves `out` untouched) when the text is not such a sequence at all.
bool parse_json_call_sequence(std::string_view body, ParsedOutput& out) {
  std::vector<ToolCall> calls;
  std::vector<ToolCallError> errors;
  std::size_t i = 0;
  while (true) {
    while (i < body.size() && (std::isspace(static_cast<unsigned char>(body[i])) || body[i] == ';'))
      ++i;
    if (i >= body.size()) break;
    if (body[i] != '{') return false;
    const std::size_t end = json_end(body, i);
    const std::string_view raw =
        body.substr(i, end == std::string_view::npos ? body.npos : end - i);
    Json obj;
    std::string err;
    ToolCall call;
    if (end == std::string_view::npos) {
      errors.push_back({"unterminated JSON tool call", std::string(raw)});
      break;
    }
    if (!parse_json(raw, obj, err)) {
      errors.push_back({err + " in tool call", std::string(raw)});
    } else if (!call_from_json(obj, call, err)) {
      errors.push_back({err, std::string(raw)});
    } else {
      calls.push_back(std::move(call));
    }
    i = end;
  }
  if (calls.empty() && errors.empty()) return false;
  for (auto& c : calls) out.calls.push_back(std::move(c));
  for (auto& e : errors) out.errors.push_back(std::move(e));
  return true;
}

// ---- Hermes / Qwen ----------------------------------------------------------

void parse_xml_function(std::string_view inner, std::string_view raw, ParsedOutput& out) {
  // <function=NAME> <parameter=P> VALUE </parameter> ... </function>
  std::size_t p = inner.find('>');
  if (p == std::string_view::npos) {
    add_error(out, "malformed <function=...> tag", raw);
    return;
  }
  ToolCall call;
  call.name = std::string(trim_view(inner.substr(10, p - 10)));
  if (call.name.empty()) {
    add_error(out, "tool call has no function name", raw);
    return;
  }
  std::size_t i = p + 1;
  while (true) {
    const std::size_t open = inner.find("<parameter=", i);
    if (open == std::string_view::npos) break;
    const std::size_t gt = inner.find('>', open);
    const std::size_t close = inner.find("</parameter>", open);
    if (gt == std::string_view::npos || close == std::string_view::npos || gt > close) {
      add_error(out, "unclosed <parameter=...> in call to '" + call.name + "'", raw);
      return;
    }
    const std::string key(trim_view(inner.substr(open + 11, gt - open - 11)));
    std::string_view value = inner.substr(gt + 1, close - gt - 1);
    if (starts_with(value, "\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    Json parsed;
    std::string err;
    // Numbers, booleans, objects and arrays arrive as JSON text; anything else is a string.
    if (parse_json(value, parsed, err) && !parsed.is_string()) {
      call.arguments[key] = std::move(parsed);
    } else {
      call.arguments[key] = std::string(value);
    }
    i = close + 12;
  }
  if (inner.find("</function>", i) == std::string_view::npos) {
    add_error(out, "unclosed <function=...> in call to '" + call.name + "'", raw);
    return;
  }
  out.calls.push_back(std::move(call));
}

ParsedOutput parse_hermes(std::string_view s) {
  ParsedOutput out;
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = s.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    out.content.append(s.substr(pos, open - pos));
    const std::size_t close = s.find(kClose, open + kOpen.size());
    const bool closed = close != std::string_view::npos;
    const std::size_t inner_end = closed ? close : s.size();
    const std::size_t end = closed ? close + kClose.size() : s.size();
    const std::string_view raw = s.substr(open, end - open);
    const std::string_view inner =
        trim_view(s.substr(open + kOpen.size(), inner_end - open - kOpen.size()));
    if (starts_with(inner, "<function=")) {
      parse_xml_function(inner, raw, out);
    } else {
      Json obj;
      std::string err;
      ToolCall call;
      if (!parse_json(inner, obj, err)) {
        add_error(
            out,
            closed ? "invalid JSON in <tool_call>" : "unclosed <tool_call> with incomplete JSON",
            raw);
      } else if (!call_from_json(obj, call, err)) {
        add_error(out, err, raw);
      } else {
        out.calls.push_back(std::move(call));
      }
    }
    pos = end;
  }
  out.content.append(s.substr(pos));
  return out;
}

// Splits python-style calls on ';' and newlines outside quotes and brackets.
std::vector<std::string_view> split_calls(std::string_view body) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= body.size(); ++i) {
    const char c = i < body.size() ? body[i] : ';';
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if ((c == ';' || c == '\n') && (depth <= 0 || i == body.size())) {
      const std::string_view part = trim_view(body.substr(start, i - start));
      if (!part.empty()) parts.push_back(part);
      start = i + 1;
    }
  }
  if (quote && start < body.size()) parts.push_back(trim_view(body.substr(start)));
  return parts;
}

// ---- Llama 3 ----------------------------------------------------------------

std::string_view strip_suffix_tokens(std::string_view s) {
  s = trim_view(s);
  for (std::string_view tok : {"<|eom_id|>", "<|eot_id|>"}) {
    if (s.size() >= tok.size() && s.substr(s.size() - tok.size()) == tok) {
      s.remove_suffix(tok.size());
      s = trim_view(s);
    }
  }
  return s;
}

ParsedOutput parse_llama3(std::string_view s) {
  ParsedOutput out;
  constexpr std::string_view kTag = "<|python_tag|>";
  const std::size_t tag = s.find(kTag);
  if (tag != std::string_view::npos) {
    out.content = std::string(s.substr(0, tag));
    const std::string_view body = strip_suffix_tokens(s.substr(tag + kTag.size()));
    if (starts_with(body, "{")) {
      if (!parse_json_call_sequence(body, out)) add_error(out, "unreadable tool call", body);
      return out;
    }
    // Built-in tools: one `name.call(...)` per line or separated by ';'.
    for (const std::string_view one : split_calls(body)) {
      ToolCall call;
      std::string err;
      if (parse_python_call(one, call, err)) {
        out.calls.push_back(std::move(call));
      } else {
        add_error(out, err, one);
      }
    }
    return out;
  }
  const std::string_view body = strip_suffix_tokens(s);
  if (starts_with(body, "{")) {
    ParsedOutput calls;
    if (parse_json_call_sequence(body, calls)) {
      // JSON that is not shaped like a call is an ordinary answer, unless it
      // tried to be one (it names a function) and failed.
      const bool looks_like_call = body.find("\"name\"") != std::string_view::npos;
      if (!calls.calls.empty() || looks_like_call) {
        calls.content.clear();
        return calls;
      }
    }
  }
  out.content = std::string(s);
  return out;
}

// ---- Mistral ----------------------------------------------------------------

ParsedOutput parse_mistral(std::string_view s) {
  ParsedOutput out;
  constexpr std::string_view kTag = "[TOOL_CALLS]";
  const std::size_t tag = s.find(kTag);
  if (tag == std::string_view::npos) {
    out.content = std::string(s);
    return out;
  }
  out.content = std::string(s.substr(0, tag));
  std::string_view rest = s.substr(tag + kTag.size());
  while (true) {
    rest = trim_view(rest);
    if (starts_with(rest, kTag)) rest = trim_view(rest.substr(kTag.size()));
    if (starts_with(rest, "</s>")) rest = trim_view(rest.substr(4));
    if (rest.empty()) break;
    if (rest[0] == '[') {
      const std::size_t end = json_end(rest, 0);
      const std::string_view raw = rest.substr(0, end == std::string_view::npos ? rest.npos : end);
      Json arr;
      std::string err;
      if (end == std::string_view::npos || !parse_json(raw, arr, err) || !arr.is_array()) {
        add_error(out, "invalid JSON array after [TOOL_CALLS]", raw);
        break;
      }
      for (const auto& item : arr) {
        ToolCall call;
        if (call_from_json(item, call, err)) {
          out.calls.push_back(std::move(call));
        } else {
          add_error(out, err, item.dump());
        }
      }
      rest = rest.substr(end);
      continue;
    }
    // Newer tokenizers: NAME[ARGS]{...} or NAME[CALL_ID]ID[ARGS]{...}
    const std::size_t args = rest.find("[ARGS]");
    if (args == std::string_view::npos) {
      add_error(out, "tool call after [TOOL_CALLS] has no [ARGS]", rest);
      break;
    }
    ToolCall call;
    std::string_view head = rest.substr(0, args);
    const std::size_t id = head.find("[CALL_ID]");
    if (id != std::string_view::npos) {
      call.id = std::string(trim_view(head.substr(id + 9)));
      head = head.substr(0, id);
    }
    call.name = std::string(trim_view(head));
    std::string_view after = trim_view(rest.substr(args + 6));
    const std::size_t end = starts_with(after, "{") ? json_end(after, 0) : std::string_view::npos;
    const std::string_view raw = rest.substr(
        0, (after.data() - rest.data()) + (end == std::string_view::npos ? after.size() : end));
    Json obj;
    std::string err;
    if (call.name.empty()) {
      add_error(out, "tool call has no name", raw);
    } else if (end == std::string_view::npos || !parse_json(after.substr(0, end), obj, err) ||
               !obj.is_object()) {
      add_error(out, "arguments of '" + call.name + "' are not a JSON object", raw);
    } else {
      call.arguments = std::move(obj);
      out.calls.push_back(std::move(call));
    }
    if (end == std::string_view::npos) break;
    rest = after.substr(end);
  }
  return out;
}

// ---- Gemma ------------------------------------------------------------------

ParsedOutput parse_gemma(std::string_view s) {
  ParsedOutput out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t fence = s.find("```", pos);
    if (fence == std::string_view::npos) break;
    const std::size_t line_end = s.find('\n', fence);
    const std::string_view lang = trim_view(s.substr(
        fence + 3, (line_end == std::string_view::npos ? s.size() : line_end) - fence - 3));
    const bool tool_code = lang == "tool_code" || lang == "tool_call";
    const bool json_block = lang == "json";
    if ((!tool_code && !json_block) || line_end == std::string_view::npos) {
      out.content.append(s.substr(pos, fence + 3 - pos));
      pos = fence + 3;
      continue;
    }
    const std::size_t close = s.find("```", line_end + 1);
    const bool closed = close != std::string_view::npos;
    const std::size_t end = closed ? close + 3 : s.size();
    const std::string_view body =
        trim_view(s.substr(line_end + 1, (closed ? close : s.size()) - line_end - 1));
    const std::string_view raw = s.substr(fence, end - fence);
    if (json_block) {
      // A JSON block is a call only if it is shaped like one; otherwise it is the answer.
      ParsedOutput calls;
      Json probe;
      std::string err;
      const bool call_shaped = parse_json(body, probe, err) && probe.is_object() &&
                               probe.contains("name") &&
                               (probe.contains("parameters") || probe.contains("arguments"));
      if (!call_shaped || !parse_json_call_sequence(body, calls)) {
        out.content.append(s.substr(pos, end - pos));
        pos = end;
        continue;
      }
      out.content.append(s.substr(pos, fence - pos));
      for (auto& c : calls.calls) out.calls.push_back(std::move(c));
      for (auto& e : calls.errors) out.errors.push_back(std::move(e));
      pos = end;
      continue;
    }
    out.content.append(s.substr(pos, fence - pos));
    if (!closed) add_error(out, "unclosed ```tool_code block", raw);
    std::size_t i = 0;
    while (closed && i < body.size()) {
      std::size_t nl = body.find('\n', i);
      if (nl == std::string_view::npos) nl = body.size();
      const std::string_view line = trim_view(body.substr(i, nl - i));
      if (!line.empty()) {
        ToolCall call;
        std::string err;
        if (parse_python_call(line, call, err)) {
          out.calls.push_back(std::move(call));
        } else {
          add_error(out, err, line);
        }
      }
      i = nl + 1;
    }
    pos = end;
  }
  out.content.append(s.substr(pos));
  if (out.calls.empty() && out.errors.empty()) {
    // Bare JSON reply shaped like a call.
    const std::string_view body = trim_view(s);
    Json probe;
    std::string err;
    if (starts_with(body, "{") && parse_json(body, probe, err) && probe.is_object() &&
        probe.contains("name") && (probe.contains("parameters") || probe.contains("arguments"))) {
      ParsedOutput calls;
      if (parse_json_call_sequence(body, calls)) return calls;
    }
  }
  return out;
}

// The same JSON with every string and key made valid UTF-8.
Json valid_utf8_json(const Json& j) {
  if (j.is_string()) return valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& e : j) out.push_back(valid_utf8_json(e));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[valid_utf8(it.key())] = valid_utf8_json(*it);
    return out;
  }
  return j;
}

}  // namespace

ParsedOutput parse_tool_calls(std::string_view output, ToolCallFormat format) {
  ParsedOutput out;
  switch (format) {
    case ToolCallFormat::Hermes:
      out = parse_hermes(output);
      break;
    case ToolCallFormat::Llama3:
      out = parse_llama3(output);
      break;
    case ToolCallFormat::Mistral:
      out = parse_mistral(output);
      break;
    case ToolCallFormat::Gemma:
      out = parse_gemma(output);
      break;
  }
  // Model output may hold any bytes; what callers get is valid UTF-8 (a
  // caller's json::dump() would throw on anything else).
  out.content = valid_utf8(trim_view(out.content));
  for (ToolCall& c : out.calls) {
    c.name = valid_utf8(c.name);
    c.id = valid_utf8(c.id);
    c.arguments = valid_utf8_json(c.arguments);
  }
  for (ToolCallError& e : out.errors) {
    e.message = valid_utf8(e.message);
    e.text = valid_utf8(e.text);
  }
  return out;
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view t) {
  if (t.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::Hermes;
  if (t.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFormat::Mistral;
  if (t.find("<|python_tag|>") != std::string_view::npos ||
      (t.find("<|start_header_id|>") != std::string_view::npos &&
       t.find("\"parameters\"") != std::string_view::npos))
    return ToolCallFormat::Llama3;
  if (t.find("tool_code") != std::string_view::npos ||
      (t.find("<start_of_turn>") != std::string_view::npos &&
       t.find("tools") != std::string_view::npos))
    return ToolCallFormat::Gemma;
  return std::nullopt;
}

}  // namespace seam::chat
