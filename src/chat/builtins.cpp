#include "chat/builtins.h"

#include <cmath>
#include <ctime>

#include "chat/interpreter.h"
#include "chat/js_text.h"

namespace seam::chat {

// JavaScript truthiness of a raw payload (objects are always true).
bool raw_truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Array:
    case Kind::Tuple:
    case Kind::Object:
    case Kind::KwArgs:
      return true;
    default:
      return truthy(v);
  }
}

std::uint64_t walk_cost(const Array& items) {
  std::size_t bytes = 0;
  for (const Value& item : items)
    if (item.kind == Kind::String) bytes += item.s.size();
  return items.size() + bytes / kBytesPerStep;
}

// Copying a dict's keys or values out costs a step per entry and per 256 bytes.
static void charge_copy_of(const Value& obj) {
  std::size_t bytes = 0;
  for (const auto& [k, v] : obj.dict->items())
    bytes += k.size() + (v.kind == Kind::String ? v.s.size() : 0);
  charge(obj.dict->size());
  charge_bytes(bytes);
}

// Entry e's key as a template value: a string, or an integer from a dict literal.
static Value key_value(const Dict& d, std::size_t e) {
  const std::string& k = d.items()[e].first;
  return d.int_key(e) ? Value::integer(std::stoll(k)) : Value::string(k);
}

Value items_of(const Value& obj) {
  charge_copy_of(obj);
  Array out;
  for (std::size_t e = 0; e < obj.dict->size(); ++e)
    out.push_back(Value::array({key_value(*obj.dict, e), obj.dict->items()[e].second}));
  return Value::array(std::move(out));
}

Value keys_of(const Value& obj) {
  charge_copy_of(obj);
  Array out;
  for (std::size_t e = 0; e < obj.dict->size(); ++e) out.push_back(key_value(*obj.dict, e));
  return Value::array(std::move(out));
}

static Value values_of(const Value& obj) {
  charge_copy_of(obj);
  Array out;
  for (const auto& kv : obj.dict->items()) out.push_back(kv.second);
  return Value::array(std::move(out));
}

// compareRuntimeValues: numbers and booleans compare numerically, strings
// (optionally case-folded) compare with each other, anything else fails.
int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (a.kind == Kind::Null && b.kind == Kind::Null) return 0;
  if (a.kind == Kind::Null || b.kind == Kind::Null)
    fail("Cannot compare " + type_name(a) + " with " + type_name(b));
  if (a.kind == Kind::Undefined && b.kind == Kind::Undefined) return 0;
  if (a.kind == Kind::Undefined || b.kind == Kind::Undefined)
    fail("Cannot compare " + type_name(a) + " with " + type_name(b));
  if (numeric_like(a) && numeric_like(b)) {
    const double x = numeric_value(a), y = numeric_value(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.kind != b.kind)
    fail("Cannot compare different types: " + type_name(a) + " and " + type_name(b));
  if (a.kind != Kind::String) fail("Cannot compare type: " + type_name(a));
  if (case_sensitive) return a.s < b.s ? -1 : (a.s > b.s ? 1 : 0);
  const std::string x = js::to_lower(a.s), y = js::to_lower(b.s);
  return x < y ? -1 : (x > y ? 1 : 0);
}

Value get_attribute_value(const Value& item, const std::string& path) {
  Value cur = item;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (cur.is_attr_container()) {
      const Value* v = cur.dict->find(part);
      cur = v ? *v : Value::undefined();
    } else if (cur.is_array()) {
      double idx;
      if (js::parse_int(part, idx) && idx >= 0 && idx < static_cast<double>(cur.arr->size())) {
        cur = (*cur.arr)[static_cast<std::size_t>(idx)];
      } else {
        return Value::undefined();
      }
    } else {
      return Value::undefined();
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// String.prototype.at: UTF-16 indexing (negative from the end).
Value string_at(const std::string& s, std::int64_t index) {
  struct Unit {
    std::size_t start, len;
    bool second_half;
  };
  std::vector<Unit> units;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t cp = js::next_code_point(s, i);
    units.push_back({start, i - start, false});
    if (cp >= 0x10000) units.push_back({start, i - start, true});
  }
  const auto n = static_cast<std::int64_t>(units.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return Value::undefined();
  const Unit& u = units[static_cast<std::size_t>(index)];
  // Half of a surrogate pair has no UTF-8 form; U+FFFD stands in for it.
  if (u.second_half || (index + 1 < n && units[static_cast<std::size_t>(index + 1)].second_half))
    return Value::string("\xEF\xBF\xBD");
  return Value::string(s.substr(u.start, u.len));
}

std::vector<std::string> split_on(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s.find(sep, pos);
    if (hit == std::string::npos) break;
    out.push_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  out.push_back(s.substr(pos));
  return out;
}

static Value strings_to_array(const std::vector<std::string>& parts) {
  Array out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::array(std::move(out));
}

// Python str.split(sep=None, maxsplit=-1) as the reference implements it.
static Value string_split(const std::string& s, std::vector<Value>& args) {
  const Value sep = args.size() > 0 ? args[0] : Value::null();
  if (sep.kind != Kind::String && sep.kind != Kind::Null)
    fail("sep argument must be a string or null");
  const Value maxsplit_v = args.size() > 1 ? args[1] : Value::integer(-1);
  if (maxsplit_v.kind != Kind::Int) fail("maxsplit argument must be a number");
  const std::int64_t maxsplit = maxsplit_v.i;
  std::vector<std::string> result;
  if (sep.kind == Kind::Null) {
    const std::string_view text = js::trim_start(s);
    std::size_t i = 0;
    while (i < text.size()) {
      while (std::size_t n = js::space_at(text, i)) i += n;
      if (i >= text.size()) break;
      const std::size_t start = i;
      while (i < text.size() && !js::space_at(text, i)) js::next_code_point(text, i);
      if (maxsplit != -1 && static_cast<std::int64_t>(result.size()) >= maxsplit) {
        result.emplace_back(text.substr(start));
        break;
      }
      result.emplace_back(text.substr(start, i - start));
    }
  } else {
    if (sep.s.empty()) fail("empty separator");
    result = split_on(s, sep.s);
    if (maxsplit != -1 && static_cast<std::int64_t>(result.size()) > maxsplit) {
      const auto keep = static_cast<std::size_t>(std::max<std::int64_t>(maxsplit, 0));
      std::string rest;
      for (std::size_t k = keep; k < result.size(); ++k) {
        if (k > keep) rest += sep.s;
        rest += result[k];
      }
      result.resize(keep);
      result.push_back(std::move(rest));
    }
  }
  return strings_to_array(result);
}

Value string_replace(const std::string& s, std::vector<Value>& args) {
  if (args.size() < 2) fail("replace() requires at least two arguments");
  if (args[0].kind != Kind::String || args[1].kind != Kind::String)
    fail("replace() arguments must be strings");
  Value count = Value::null();
  if (args.size() > 2) {
    if (args[2].kind == Kind::KwArgs) {
      const Value* c = args[2].dict->find("count");
      count = c ? *c : Value::null();
    } else {
      count = args[2];
    }
  }
  if (count.kind != Kind::Int && count.kind != Kind::Null)
    fail("replace() count argument must be a number or null");
  if (args[1].s.size() > args[0].s.size()) {
    // The result grows by this much per replacement: bound it before building it.
    double hits = 0;
    if (args[0].s.empty()) {
      hits = static_cast<double>(s.size()) + 1;
    } else {
      for (std::size_t at = s.find(args[0].s); at != std::string::npos;
           at = s.find(args[0].s, at + args[0].s.size()))
        ++hits;
    }
    if (count.kind == Kind::Int && count.i >= 0)
      hits = std::min(hits, static_cast<double>(count.i));
    check_size(static_cast<double>(s.size()) +
               hits * static_cast<double>(args[1].s.size() - args[0].s.size()));
  }
  return Value::string(
      js::replace(s, args[0].s, args[1].s, count.kind == Kind::Null ? -1 : count.i));
}

static Value string_affix_test(const std::string& s, std::vector<Value>& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  if (args.empty()) fail(std::string(name) + "() requires at least one argument");
  auto matches = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0
                  : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  const Value& pat = args[0];
  if (pat.kind == Kind::String) return Value::boolean(matches(pat.s));
  if (pat.is_array()) {
    for (const auto& item : *pat.arr) {
      if (item.kind != Kind::String) fail(std::string(name) + "() tuple elements must be strings");
      if (matches(item.s)) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  fail(std::string(name) + "() argument must be a string or tuple of strings");
}

// The methods and properties a string exposes (`s.upper()`, `s.length`, ...).
Value string_member(const std::string& s, const std::string& name) {
  using Args = std::vector<Value>&;
  auto method = [](auto body) {
    return Value::function([body](Args args, const EnvPtr&) { return body(args); });
  };
  if (name == "length") return Value::integer(static_cast<std::int64_t>(js::utf16_length(s)));
  if (name == "upper") return method([s](Args) { return Value::string(js::to_upper(s)); });
  if (name == "lower") return method([s](Args) { return Value::string(js::to_lower(s)); });
  if (name == "strip") return method([s](Args) { return Value::string(std::string(js::trim(s))); });
  if (name == "lstrip")
    return method([s](Args) { return Value::string(std::string(js::trim_start(s))); });
  if (name == "rstrip")
    return method([s](Args) { return Value::string(std::string(js::trim_end(s))); });
  if (name == "title") return method([s](Args) { return Value::string(js::title_case(s)); });
  if (name == "capitalize") return method([s](Args) { return Value::string(js::capitalize(s)); });
  if (name == "startswith") return method([s](Args a) { return string_affix_test(s, a, true); });
  if (name == "endswith") return method([s](Args a) { return string_affix_test(s, a, false); });
  if (name == "split") return method([s](Args a) { return string_split(s, a); });
  if (name == "replace") return method([s](Args a) { return string_replace(s, a); });
  return Value::undefined();
}

static Value dictsort(const Value& obj, std::vector<Value>& args) {
  const Value* kw_case = nullptr;
  const Value* kw_by = nullptr;
  const Value* kw_rev = nullptr;
  std::vector<Value> pos;
  for (const auto& a : args) {
    if (a.kind == Kind::KwArgs) {
      kw_case = a.dict->find("case_sensitive");
      kw_by = a.dict->find("by");
      kw_rev = a.dict->find("reverse");
    } else {
      pos.push_back(a);
    }
  }
  const Value case_sensitive =
      pos.size() > 0 ? pos[0] : (kw_case ? *kw_case : Value::boolean(false));
  if (case_sensitive.kind != Kind::Bool) fail("case_sensitive must be a boolean");
  const Value by = pos.size() > 1 ? pos[1] : (kw_by ? *kw_by : Value::string("key"));
  if (by.kind != Kind::String) fail("by must be a string");
  if (by.s != "key" && by.s != "value") fail("by must be either 'key' or 'value'");
  const Value reverse = pos.size() > 2 ? pos[2] : (kw_rev ? *kw_rev : Value::boolean(false));
  if (reverse.kind != Kind::Bool) fail("reverse must be a boolean");
  Array items = *items_of(obj).arr;
  const std::size_t idx = by.s == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int r = compare_values((*a.arr)[idx], (*b.arr)[idx], case_sensitive.b);
    return (reverse.b ? -r : r) < 0;
  });
  return Value::array(std::move(items));
}

// The methods a dict exposes (`d.items()`, `d.get(k, default)`, ...).
Value object_member(const Value& obj, const std::string& name) {
  using Args = std::vector<Value>&;
  if (name == "get") {
    return Value::function([obj](Args args, const EnvPtr&) {
      if (args.empty() || (args[0].kind != Kind::String && args[0].kind != Kind::Int))
        fail("Object key must be a string: got " +
             (args.empty() ? std::string("UndefinedValue") : type_name(args[0])));
      const Value* v =
          args[0].kind == Kind::Int ? obj.dict->find_int(args[0].i) : obj.dict->find(args[0].s);
      if (v) return *v;
      return args.size() > 1 ? args[1] : Value::null();
    });
  }
  if (name == "items") return Value::function([obj](Args, const EnvPtr&) { return items_of(obj); });
  if (name == "keys") return Value::function([obj](Args, const EnvPtr&) { return keys_of(obj); });
  if (name == "values")
    return Value::function([obj](Args, const EnvPtr&) { return values_of(obj); });
  if (name == "dictsort")
    return Value::function([obj](Args args, const EnvPtr&) { return dictsort(obj, args); });
  return Value::undefined();
}

bool run_test(const std::string& name, const Value& v, const Value* arg) {
  if (name == "boolean") return v.kind == Kind::Bool;
  if (name == "callable") return v.kind == Kind::Function;
  if (name == "odd" || name == "even") {
    if (v.kind != Kind::Int && !v.big_int) fail("cannot " + name + " on " + type_name(v));
    const bool odd = v.big_int ? std::fmod(v.f, 2.0) != 0 : v.i % 2 != 0;
    return odd == (name == "odd");
  }
  if (name == "false") return v.kind == Kind::Bool && !v.b;
  if (name == "true") return v.kind == Kind::Bool && v.b;
  if (name == "none") return v.kind == Kind::Null;
  if (name == "string") return v.kind == Kind::String;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::Int || v.big_int;
  if (name == "iterable") return v.kind == Kind::Array || v.kind == Kind::String;
  if (name == "mapping") return v.is_object();
  if (name == "sequence") return v.is_array() || v.is_object() || v.kind == Kind::String;
  if (name == "lower") return v.kind == Kind::String && v.s == js::to_lower(v.s);
  if (name == "upper") return v.kind == Kind::String && v.s == js::to_upper(v.s);
  if (name == "defined") return v.kind != Kind::Undefined;
  if (name == "undefined") return v.kind == Kind::Undefined;
  if (name == "equalto" || name == "eq") {
    if (!arg) fail("the '" + name + "' test needs a value to compare with");
    return strict_equals(v, *arg);
  }
  fail("Unknown test: " + name);
}

bool is_known_test(const std::string& name) {
  static const char* const kTests[] = {"boolean",  "callable",  "odd",      "even",   "false",
                                       "true",     "none",      "string",   "number", "integer",
                                       "iterable", "mapping",   "sequence", "lower",  "upper",
                                       "defined",  "undefined", "equalto",  "eq"};
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
}

std::string strftime_py(const std::string& fmt, const TemplateTime& t) {
  std::tm tm{};
  tm.tm_year = t.year - 1900;
  tm.tm_mon = t.month - 1;
  tm.tm_mday = t.day;
  tm.tm_hour = t.hour;
  tm.tm_min = t.minute;
  tm.tm_sec = t.second;
  tm.tm_isdst = -1;
  // Normalise to fill in the weekday and day of the year.
  std::tm copy = tm;
  std::mktime(&copy);
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  if (fmt.empty()) return {};
  std::vector<char> buf(fmt.size() * 16 + 256);
  const std::size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  return std::string(buf.data(), n);
}

TemplateTime local_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  return {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
}

}  // namespace seam::chat
