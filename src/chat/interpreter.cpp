// Evaluation rules follow @huggingface/jinja 0.5.11 (the oracle for
// byte-identical prompts): its operator table, its filter set per operand
// type, its tests, its scoping (macros see the caller's scope) and its string
// conversions. Where that renderer fails (a filter it lacks, an operation on
// none), this one fails too, with a message naming the operation.
#include "chat/interpreter.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "chat/js_text.h"
#include "seam/error.h"

namespace seam::chat {

const Value* Env::lookup(const std::string& name) const {
  for (const Env* e = this; e; e = e->parent.get()) {
    const auto it = e->vars.find(name);
    if (it != e->vars.end()) return &it->second;
  }
  return nullptr;
}

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(Errc::Template, msg); }

std::string type_name(const Value& v) { return std::string(type_name_of(v)); }

struct BreakSignal {};
struct ContinueSignal {};

constexpr int kMaxCallDepth = 200;  // macro recursion bound
constexpr std::size_t kMaxRange = 1'000'000;
// A render's budget. Real chat templates take thousands of steps over a long
// conversation and produce kilobytes; nested loops or a doubled string can ask
// for hours or terabytes. Past these limits the render fails with a template
// error instead.
constexpr std::uint64_t kMaxSteps = 1'000'000;
constexpr std::size_t kMaxString = std::size_t{16} << 20;  // bytes, any string or the output

void check_size(double bytes) {
  if (bytes > static_cast<double>(kMaxString))
    fail("the template builds a string of more than " + std::to_string(kMaxString >> 20) +
         " MiB; a chat template never needs that much");
}

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

Value make_pair(const std::string& k, const Value& v) {
  return Value::array({Value::string(k), v});
}

Value items_of(const Value& obj) {
  Array out;
  for (const auto& [k, v] : obj.dict->items()) out.push_back(make_pair(k, v));
  return Value::array(std::move(out));
}

Value keys_of(const Value& obj) {
  Array out;
  for (const auto& kv : obj.dict->items()) out.push_back(Value::string(kv.first));
  return Value::array(std::move(out));
}

Value values_of(const Value& obj) {
  Array out;
  for (const auto& kv : obj.dict->items()) out.push_back(kv.second);
  return Value::array(std::move(out));
}

bool numeric_like(const Value& v) { return v.is_number() || v.kind == Kind::Bool; }
double numeric_value(const Value& v) { return v.kind == Kind::Bool ? (v.b ? 1 : 0) : v.num(); }

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

// Python-style array slicing with the reference's clamping rules.
template <typename T>
std::vector<T> slice_vec(const std::vector<T>& a, const Value& start_v, const Value& stop_v,
                         const Value& step_v) {
  const auto len = static_cast<std::int64_t>(a.size());
  const std::int64_t step = step_v.kind == Kind::Undefined ? 1 : step_v.i;
  const int dir = step > 0 ? 1 : (step < 0 ? -1 : 0);
  std::int64_t start, stop;
  if (dir >= 0) {
    start = start_v.kind == Kind::Undefined ? 0 : start_v.i;
    start = start < 0 ? std::max<std::int64_t>(len + start, 0) : std::min(start, len);
    stop = stop_v.kind == Kind::Undefined ? len : stop_v.i;
    stop = stop < 0 ? std::max<std::int64_t>(len + stop, 0) : std::min(stop, len);
  } else {
    start = start_v.kind == Kind::Undefined ? len - 1 : start_v.i;
    start = start < 0 ? std::max<std::int64_t>(len + start, -1) : std::min(start, len - 1);
    stop = stop_v.kind == Kind::Undefined ? -1 : stop_v.i;
    stop = stop < -1 ? std::max<std::int64_t>(len + stop, -1) : std::min(stop, len - 1);
  }
  std::vector<T> out;
  if (dir == 0) return out;
  // Stop as soon as the index leaves [0, len): a step near INT64_MAX (or
  // INT64_MIN) must not overflow `i += step` or `dir * i`.
  for (std::int64_t i = start; dir > 0 ? i < stop : i > stop;) {
    if (i >= 0 && i < len) out.push_back(a[static_cast<std::size_t>(i)]);
    if (dir > 0 ? step > stop - i : step < stop - i) break;  // the next index is past stop
    i += step;
  }
  return out;
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

Value strings_to_array(const std::vector<std::string>& parts) {
  Array out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::array(std::move(out));
}

// Python str.split(sep=None, maxsplit=-1) as the reference implements it.
Value string_split(const std::string& s, std::vector<Value>& args) {
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

Value string_affix_test(const std::string& s, std::vector<Value>& args, bool prefix) {
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

Value dictsort(const Value& obj, std::vector<Value>& args) {
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
  Array items = items_of(obj).arr ? *items_of(obj).arr : Array{};
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
      if (args.empty() || args[0].kind != Kind::String)
        fail("Object key must be a string: got " +
             (args.empty() ? std::string("UndefinedValue") : type_name(args[0])));
      if (const Value* v = obj.dict->find(args[0].s)) return *v;
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

class Interpreter {
 public:
  explicit Interpreter(const TemplateOptions& opts) : opts_(opts) {}
  // A namespace is the one mutable container a template has, so the only way
  // to build a reference cycle (`{% set ns.a = ns %}`). Emptying every
  // namespace of the render once it is over breaks any such cycle.
  ~Interpreter() {
    for (const auto& w : namespaces_)
      if (auto d = w.lock()) d->clear();
  }
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string run(const Program& program, const EnvPtr& global) {
    try {
      return eval_block(program.body, global);
    } catch (const BreakSignal&) {
      fail("'break' outside of a loop");
    } catch (const ContinueSignal&) {
      fail("'continue' outside of a loop");
    }
  }

  void install_globals(Env& env) {
    env.set("true", Value::boolean(true));
    env.set("false", Value::boolean(false));
    env.set("none", Value::null());
    env.set("True", Value::boolean(true));
    env.set("False", Value::boolean(false));
    env.set("None", Value::null());
    env.set("raise_exception",
            Value::function([](std::vector<Value>& args, const EnvPtr&) -> Value {
              std::string msg;
              // new Error(x.value): none and undefined both give an empty message.
              if (!args.empty() && args[0].kind != Kind::Undefined && args[0].kind != Kind::Null)
                msg = to_display(args[0]);
              throw Error(Errc::Template, msg);
            }));
    env.set("range", Value::function([](std::vector<Value>& args, const EnvPtr&) -> Value {
              std::vector<double> n;
              for (const auto& a : args) {
                if (!a.is_number()) fail("range() arguments must be numbers, got " + type_name(a));
                n.push_back(a.num());
              }
              if (n.empty() || n.size() > 3) fail("range() takes 1 to 3 arguments");
              double start = 0, stop = n[0], step = 1;
              if (n.size() >= 2) {
                start = n[0];
                stop = n[1];
              }
              if (n.size() == 3) step = n[2];
              if (step == 0) fail("range() step must not be zero");
              if ((stop - start) / step > static_cast<double>(kMaxRange))
                fail("range() is too large");
              Array out;
              for (double i = start; step > 0 ? i < stop : i > stop; i += step) {
                if (out.size() >= kMaxRange) fail("range() is too large");
                out.push_back(Value::number(i));
              }
              return Value::array(std::move(out));
            }));
    const TemplateOptions opts = opts_;
    env.set("strftime_now",
            Value::function([opts](std::vector<Value>& args, const EnvPtr&) -> Value {
              if (args.empty() || args[0].kind != Kind::String)
                fail("strftime_now() takes a format string");
              return Value::string(strftime_py(args[0].s, opts.now ? *opts.now : local_now()));
            }));
    env.set("namespace", Value::function([this](std::vector<Value>& args, const EnvPtr&) -> Value {
              std::vector<Value> pos = args;
              Value kwargs;
              if (!pos.empty() && pos.back().kind == Kind::KwArgs) {
                kwargs = pos.back();
                pos.pop_back();
              }
              if (pos.size() > 1)
                fail("namespace expected at most 1 argument, got " + std::to_string(pos.size()));
              Value ns = Value::object(Kind::Namespace);
              namespaces_.push_back(ns.dict);
              if (pos.size() == 1) {
                const Value& src = pos[0];
                if (src.is_object()) {
                  for (const auto& [k, v] : src.dict->items()) ns.dict->set(k, v);
                } else if (src.is_array()) {
                  for (const auto& pair : *src.arr) {
                    std::vector<Value> kv;
                    if (pair.is_array()) {
                      kv = *pair.arr;
                    } else if (pair.kind == Kind::String) {
                      for (auto& c : js::code_points(pair.s)) kv.push_back(Value::string(c));
                    }
                    if (kv.size() != 2)
                      fail("namespace expected an object or an iterable of [key, value] pairs");
                    if (kv[0].kind != Kind::String) fail("namespace keys must be strings");
                    ns.dict->set(kv[0].s, kv[1]);
                  }
                } else {
                  fail("'" + type_name(src) + "' object is not iterable");
                }
              }
              if (kwargs.kind == Kind::KwArgs)
                for (const auto& [k, v] : kwargs.dict->items()) ns.dict->set(k, v);
              return ns;
            }));
  }

 private:
  const TemplateOptions& opts_;
  int call_depth_ = 0;
  std::uint64_t steps_ = 0;
  std::vector<std::weak_ptr<Dict>> namespaces_;

  std::string eval_block(const NodeList& body, const EnvPtr& env) {
    std::string out;
    for (const auto& stmt : body) {
      const Value v = eval(*stmt, env);
      if (v.kind == Kind::Null || v.kind == Kind::Undefined) continue;
      if (v.kind == Kind::String) {
        out += v.s;
      } else {
        out += to_display(v);
      }
      check_size(static_cast<double>(out.size()));
    }
    return out;
  }

  // Every evaluation counts against the render's budget, and no string it
  // yields may exceed kMaxString.
  void tick(std::uint64_t n) {
    steps_ += n;
    if (steps_ > kMaxSteps)
      fail("the template ran for more than " + std::to_string(kMaxSteps) +
           " steps (nested loops too large?); stopped");
  }

  Value eval(const Node& n, const EnvPtr& env) {
    tick(1);
    Value v = eval_node(n, env);
    if (v.kind == Kind::String) check_size(static_cast<double>(v.s.size()));
    return v;
  }

  Value eval_node(const Node& n, const EnvPtr& env) {
    switch (n.kind) {
      case NodeKind::Text:
      case NodeKind::StrLit:
        return Value::string(n.str);
      case NodeKind::Comment:
        return Value::null();
      case NodeKind::IntLit:
        return Value::integer(n.i);
      case NodeKind::FloatLit:
        return Value::floating(n.f);
      case NodeKind::ArrayLit:
      case NodeKind::TupleLit: {
        Array items;
        for (const auto& e : n.list) items.push_back(eval(*e, env));
        return Value::array(std::move(items),
                            n.kind == NodeKind::TupleLit ? Kind::Tuple : Kind::Array);
      }
      case NodeKind::ObjectLit: {
        Value obj = Value::object();
        for (std::size_t k = 0; k < n.list.size(); ++k) {
          const Value key = eval(*n.list[k], env);
          if (key.kind != Kind::String) fail("Object keys must be strings: got " + type_name(key));
          obj.dict->set(key.s, eval(*n.list2[k], env));
        }
        return obj;
      }
      case NodeKind::Identifier: {
        const Value* v = env->lookup(n.str);
        return v ? *v : Value::undefined();
      }
      case NodeKind::Member:
        return eval_member(n, env);
      case NodeKind::Call:
        return eval_call(n, env);
      case NodeKind::Unary:
        return eval_unary(n, env);
      case NodeKind::Binary:
        return eval_binary(n, env);
      case NodeKind::Filter:
        return apply_filter(eval(*n.x, env), *n.y, env);
      case NodeKind::Test: {
        const Value v = eval(*n.x, env);
        if (!is_known_test(n.str)) fail("Unknown test: " + n.str);
        const bool r = run_test(n.str, v, nullptr);
        return Value::boolean(n.flag ? !r : r);
      }
      case NodeKind::Select: {
        if (!truthy(eval(*n.y, env))) return Value::undefined();
        return eval(*n.x, env);
      }
      case NodeKind::Ternary:
        return truthy(eval(*n.x, env)) ? eval(*n.y, env) : eval(*n.z, env);
      case NodeKind::If:
        return Value::string(eval_block(truthy(eval(*n.x, env)) ? n.list : n.list2, env));
      case NodeKind::For:
        return eval_for(n, env);
      case NodeKind::Break:
        throw BreakSignal{};
      case NodeKind::Continue:
        throw ContinueSignal{};
      case NodeKind::Set:
        return eval_set(n, env);
      case NodeKind::Macro:
        return eval_macro(n, env);
      case NodeKind::CallBlock:
        return eval_call_block(n, env);
      case NodeKind::FilterBlock:
        return apply_filter(Value::string(eval_block(n.list, env)), *n.x, env);
      case NodeKind::Slice:
      case NodeKind::KwArg:
      case NodeKind::Spread:
      case NodeKind::KwSpread:
        break;
    }
    fail("unexpected syntax in this position");
  }

  // Positional arguments (with *spread), then keyword arguments (with **spread).
  std::pair<std::vector<Value>, Value> eval_args(const NodeList& args, const EnvPtr& env) {
    std::vector<Value> pos;
    Value kw = Value::object(Kind::KwArgs);
    for (const auto& a : args) {
      if (a->kind == NodeKind::Spread) {
        const Value v = eval(*a->x, env);
        if (!v.is_array()) fail("Cannot unpack non-iterable type: " + type_name(v));
        for (const auto& item : *v.arr) pos.push_back(item);
      } else if (a->kind != NodeKind::KwArg && a->kind != NodeKind::KwSpread) {
        pos.push_back(eval(*a, env));
      }
    }
    auto add = [&](const std::string& k, Value v) {
      if (kw.dict->find(k)) fail("Got multiple values for keyword argument '" + k + "'");
      kw.dict->set(k, std::move(v));
    };
    for (const auto& a : args) {
      if (a->kind == NodeKind::KwArg) {
        add(a->str, eval(*a->x, env));
      } else if (a->kind == NodeKind::KwSpread) {
        const Value v = eval(*a->x, env);
        if (!v.is_object()) fail("Argument after ** must be a mapping, not " + type_name(v));
        for (const auto& [k, item] : v.dict->items()) add(k, item);
      }
    }
    return {std::move(pos), std::move(kw)};
  }

  Value call_function(const Value& fn, std::vector<Value>& args, const EnvPtr& env) {
    if (fn.kind != Kind::Function)
      fail("Cannot call something that is not a function: got " + type_name(fn));
    if (++call_depth_ > kMaxCallDepth) {
      --call_depth_;
      fail("macro calls are nested too deeply (recursion?)");
    }
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{call_depth_};
    return (*fn.fn)(args, env);
  }

  Value eval_call(const Node& n, const EnvPtr& env) {
    auto [args, kw] = eval_args(n.list, env);
    if (kw.dict->size() > 0) args.push_back(kw);
    const Value fn = eval(*n.x, env);
    return call_function(fn, args, env);
  }

  Value eval_member(const Node& n, const EnvPtr& env) {
    const Value obj = eval(*n.x, env);
    Value prop;
    if (n.flag) {
      if (n.y->kind == NodeKind::Slice) return eval_slice(obj, *n.y, env);
      prop = eval(*n.y, env);
    } else if (n.y->kind == NodeKind::IntLit) {
      prop = Value::integer(n.y->i);
    } else {
      prop = Value::string(n.y->str);
    }
    if (obj.is_attr_container()) {
      if (prop.kind != Kind::String)
        fail("Cannot access property with non-string: got " + type_name(prop));
      if (const Value* v = obj.dict->find(prop.s)) return *v;
      return obj.is_object() ? object_member(obj, prop.s) : Value::undefined();
    }
    if (obj.is_array() || obj.kind == Kind::String) {
      if (prop.kind == Kind::Int) {
        if (obj.kind == Kind::String) return string_at(obj.s, prop.i);
        auto idx = prop.i;
        const auto len = static_cast<std::int64_t>(obj.arr->size());
        if (idx < 0) idx += len;
        if (idx < 0 || idx >= len) return Value::undefined();
        return (*obj.arr)[static_cast<std::size_t>(idx)];
      }
      if (prop.kind == Kind::String) {
        if (obj.kind == Kind::String) return string_member(obj.s, prop.s);
        if (prop.s == "length") return Value::integer(static_cast<std::int64_t>(obj.arr->size()));
        return Value::undefined();
      }
      fail("Cannot access property with non-string/non-number: got " + type_name(prop));
    }
    if (prop.kind != Kind::String)
      fail("Cannot access property with non-string: got " + type_name(prop));
    return Value::undefined();
  }

  Value eval_slice(const Value& obj, const Node& s, const EnvPtr& env) {
    if (!obj.is_array() && obj.kind != Kind::String)
      fail("Slice object must be an array or string");
    auto part = [&](const NodePtr& p, const char* what) {
      const Value v = p ? eval(*p, env) : Value::undefined();
      if (v.kind != Kind::Int && v.kind != Kind::Undefined)
        fail(std::string("Slice ") + what + " must be numeric or undefined");
      return v;
    };
    const Value start = part(s.x, "start"), stop = part(s.y, "stop"), step = part(s.z, "step");
    if (obj.is_array()) return Value::array(slice_vec(*obj.arr, start, stop, step));
    std::string out;
    for (const auto& c : slice_vec(js::code_points(obj.s), start, stop, step)) out += c;
    return Value::string(std::move(out));
  }

  Value eval_unary(const Node& n, const EnvPtr& env) {
    const Value v = eval(*n.x, env);
    if (n.str == "not") return Value::boolean(!truthy(v));
    const int sign = n.str == "-" ? -1 : 1;
    if (v.big_int) return Value::number(sign * v.f);
    if (v.kind == Kind::Float) return Value::floating(sign * v.f);
    // -INT64_MIN has no int64 form; JS gives the double.
    if (v.kind == Kind::Int)
      return v.i == INT64_MIN && sign < 0 ? Value::number(-static_cast<double>(v.i))
                                          : Value::integer(sign * v.i);
    if (v.kind == Kind::Bool) return Value::integer(sign * (v.b ? 1 : 0));
    fail("Unknown operator \"" + n.str + "\" for " + type_name(v));
  }

  static Value arith(const std::string& op, const Value& l, const Value& r) {
    const bool is_float = l.is_float() || r.is_float();
    // Exact int64 arithmetic while both fit; big integers go through doubles, as in JS.
    const bool exact = l.kind == Kind::Int && r.kind == Kind::Int;
    const double a = l.num(), b = r.num();
    if (op == "+" || op == "-" || op == "*") {
      if (exact) {
        std::int64_t out;
        bool overflow = op == "+"   ? __builtin_add_overflow(l.i, r.i, &out)
                        : op == "-" ? __builtin_sub_overflow(l.i, r.i, &out)
                                    : __builtin_mul_overflow(l.i, r.i, &out);
        if (!overflow) return Value::integer(out);
      }
      const double res = op == "+" ? a + b : (op == "-" ? a - b : a * b);
      return is_float ? Value::floating(res) : Value::number(res);
    }
    if (op == "/") return Value::floating(a / b);
    if (op == "//") {
      // Integer division by zero gives the reference's Infinity / NaN, not an error.
      if (!is_float && b == 0) return Value::floating(std::floor(a / b));
      const double res = std::floor(a / b);
      return is_float ? Value::floating(res) : Value::number(res);
    }
    if (op == "%") {
      if (!exact && !is_float) return Value::number(std::fmod(a, b));
      if (!is_float) {
        if (r.i == 0) return Value::floating(NAN);
        if (r.i == -1) return Value::integer(0);
        return Value::integer(l.i % r.i);
      }
      return Value::floating(std::fmod(a, b));
    }
    if (op == "<") return Value::boolean(a < b);
    if (op == ">") return Value::boolean(a > b);
    if (op == "<=") return Value::boolean(a <= b);
    if (op == ">=") return Value::boolean(a >= b);
    return Value::undefined();  // not a numeric operator: fall through to the other rules
  }

  Value eval_binary(const Node& n, const EnvPtr& env) {
    const std::string& op = n.str;
    const Value l = eval(*n.x, env);
    if (op == "and") return truthy(l) ? eval(*n.y, env) : l;
    if (op == "or") return truthy(l) ? l : eval(*n.y, env);
    const Value r = eval(*n.y, env);
    if (op == "==") return Value::boolean(loose_equals(l, r));
    if (op == "!=") return Value::boolean(!loose_equals(l, r));
    const bool membership = op == "in" || op == "not in";
    if (l.kind == Kind::Undefined || r.kind == Kind::Undefined) {
      if (r.kind == Kind::Undefined && membership) return Value::boolean(op == "not in");
      fail("Cannot perform operation " + op + " on undefined values");
    }
    if (l.kind == Kind::Null || r.kind == Kind::Null)
      fail("Cannot perform operation " + op + " on null values");
    if (op == "~") return Value::string(to_js_string(l) + to_js_string(r));
    if (op == "**" && numeric_like(l) && numeric_like(r)) {
      const double a = numeric_value(l), b = numeric_value(r);
      if (a == 0 && b < 0) fail("0.0 cannot be raised to a negative power");
      const double res = std::pow(a, b);
      if (!std::isfinite(res)) fail("Exponentiation result is not a finite real number");
      const bool is_float = l.is_float() || r.is_float() || b < 0;
      return is_float ? Value::floating(res) : Value::number(res);
    }
    if (l.is_number() && r.is_number()) {
      Value v = arith(op, l, r);
      if (v.kind != Kind::Undefined) return v;
    } else if (l.is_array() && r.is_array()) {
      if (op == "+") {
        Array out = *l.arr;
        out.insert(out.end(), r.arr->begin(), r.arr->end());
        return Value::array(std::move(out));
      }
    } else if (r.is_array()) {
      if (membership) {
        bool found = false;
        for (const auto& item : *r.arr)
          if (strict_equals(item, l)) {
            found = true;
            break;
          }
        return Value::boolean(found == (op == "in"));
      }
    }
    if ((l.kind == Kind::String || r.kind == Kind::String) && op == "+")
      return Value::string(to_js_string(l) + to_js_string(r));
    if (l.kind == Kind::String && r.kind == Kind::String && membership)
      return Value::boolean((r.s.find(l.s) != std::string::npos) == (op == "in"));
    if (l.kind == Kind::String && r.is_object() && membership)
      return Value::boolean((r.dict->find(l.s) != nullptr) == (op == "in"));
    fail("Unknown operator \"" + op + "\" between " + type_name(l) + " and " + type_name(r));
  }

  Value eval_set(const Node& n, const EnvPtr& env) {
    const Value rhs = n.y ? eval(*n.y, env) : Value::string(eval_block(n.list, env));
    const Node& target = *n.x;
    if (target.kind == NodeKind::Identifier) {
      env->set(target.str, rhs);
    } else if (target.kind == NodeKind::TupleLit) {
      if (!rhs.is_array()) fail("Cannot unpack non-iterable type in set: " + type_name(rhs));
      if (rhs.arr->size() != target.list.size())
        fail(std::string("Too ") + (target.list.size() > rhs.arr->size() ? "few" : "many") +
             " items to unpack in set");
      for (std::size_t k = 0; k < target.list.size(); ++k) {
        if (target.list[k]->kind != NodeKind::Identifier)
          fail("Cannot unpack to non-identifier in set");
        env->set(target.list[k]->str, (*rhs.arr)[k]);
      }
    } else if (target.kind == NodeKind::Member) {
      const Value obj = eval(*target.x, env);
      if (obj.kind != Kind::Namespace) fail("cannot assign attribute on non-namespace object");
      if (target.y->kind != NodeKind::Identifier)
        fail("Cannot assign to member with non-identifier property");
      obj.dict->set(target.y->str, rhs);
    } else {
      fail("Invalid left-hand side of an assignment");
    }
    return Value::null();
  }

  Value eval_for(const Node& n, const EnvPtr& env) {
    auto scope = std::make_shared<Env>(env);
    const Node* iter_node = n.y.get();
    const Node* cond = nullptr;
    if (iter_node->kind == NodeKind::Select) {
      cond = iter_node->y.get();
      iter_node = iter_node->x.get();
    }
    Value iterable = eval(*iter_node, scope);
    if (!iterable.is_array() && !iterable.is_object())
      fail("Expected iterable or object type in for loop: got " + type_name(iterable));
    if (iterable.is_object()) iterable = keys_of(iterable);

    const Node& target = *n.x;
    auto bind = [&](Env& e, const Value& item) {
      if (target.kind == NodeKind::Identifier) {
        e.set(target.str, item);
        return;
      }
      if (item.kind != Kind::Array) fail("Cannot unpack non-iterable type: " + type_name(item));
      if (item.arr->size() != target.list.size())
        fail(std::string("Too ") + (target.list.size() > item.arr->size() ? "few" : "many") +
             " items to unpack");
      for (std::size_t k = 0; k < target.list.size(); ++k) {
        if (target.list[k]->kind != NodeKind::Identifier) fail("Cannot unpack non-identifier type");
        e.set(target.list[k]->str, (*item.arr)[k]);
      }
    };

    std::vector<Value> items;
    const Array source = *iterable.arr;  // the loop sees the list as it was when it started
    tick(source.size());                 // an empty body still costs its iterations
    for (const auto& item : source) {
      if (target.kind == NodeKind::TupleLit) {
        // Unpacking is checked for every item up front, as the reference does.
        if (item.kind != Kind::Array) fail("Cannot unpack non-iterable type: " + type_name(item));
        if (item.arr->size() != target.list.size())
          fail(std::string("Too ") + (target.list.size() > item.arr->size() ? "few" : "many") +
               " items to unpack");
      }
      if (cond) {
        auto test_scope = std::make_shared<Env>(scope);
        bind(*test_scope, item);
        if (!truthy(eval(*cond, test_scope))) continue;
      }
      items.push_back(item);
    }

    std::string out;
    bool no_iteration = true;
    const auto count = static_cast<std::int64_t>(items.size());
    for (std::int64_t k = 0; k < count; ++k) {
      Value loop = Value::object();
      Dict& d = *loop.dict;
      d.set("index", Value::integer(k + 1));
      d.set("index0", Value::integer(k));
      d.set("revindex", Value::integer(count - k));
      d.set("revindex0", Value::integer(count - k - 1));
      d.set("first", Value::boolean(k == 0));
      d.set("last", Value::boolean(k == count - 1));
      d.set("length", Value::integer(count));
      d.set("previtem", k > 0 ? items[static_cast<std::size_t>(k - 1)] : Value::undefined());
      d.set("nextitem",
            k < count - 1 ? items[static_cast<std::size_t>(k + 1)] : Value::undefined());
      scope->set("loop", std::move(loop));
      bind(*scope, items[static_cast<std::size_t>(k)]);
      try {
        out += eval_block(n.list, scope);
      } catch (const ContinueSignal&) {
        continue;
      } catch (const BreakSignal&) {
        break;
      }
      no_iteration = false;
    }
    if (no_iteration) out += eval_block(n.list2, scope);
    return Value::string(std::move(out));
  }

  // Which of the special names `kwargs` / `varargs` a macro body reads.
  static void find_special(const Node& n, bool& kwargs, bool& varargs) {
    if (n.kind == NodeKind::Identifier) {
      if (n.str == "kwargs") kwargs = true;
      if (n.str == "varargs") varargs = true;
      return;
    }
    if (n.kind == NodeKind::Member && !n.flag) {
      find_special(*n.x, kwargs, varargs);
      return;
    }
    if (n.kind == NodeKind::Macro) return;  // a nested macro has its own arguments
    for (const NodePtr* p : {&n.x, &n.y, &n.z})
      if (*p) find_special(**p, kwargs, varargs);
    for (const auto& c : n.list) find_special(*c, kwargs, varargs);
    for (const auto& c : n.list2) find_special(*c, kwargs, varargs);
  }

  struct MacroShape {
    bool kwargs = false, varargs = false;
  };

  static MacroShape macro_shape(const NodeList& params, const NodeList& body) {
    MacroShape s;
    for (const auto& b : body) find_special(*b, s.kwargs, s.varargs);
    for (const auto& p : params) {
      const std::string& name = p->str;
      if (name == "kwargs") s.kwargs = false;
      if (name == "varargs") s.varargs = false;
    }
    return s;
  }

  void bind_macro_args(const std::string& display, const NodeList& params, MacroShape shape,
                       const std::vector<Value>& args, const EnvPtr& scope) {
    std::vector<Value> pos = args;
    std::vector<std::pair<std::string, Value>> kw;
    if (!pos.empty() && pos.back().kind == Kind::KwArgs) {
      kw = pos.back().dict->items();
      pos.pop_back();
    }
    std::vector<const Node*> pending;
    for (std::size_t k = 0; k < params.size(); ++k) {
      const Node& p = *params[k];
      const std::string& name = p.str;
      bool have = k < pos.size();
      Value v = have ? pos[k] : Value::undefined();
      if (!have) {
        for (auto it = kw.begin(); it != kw.end(); ++it) {
          if (it->first == name) {
            v = it->second;
            kw.erase(it);
            have = true;
            break;
          }
        }
      }
      if (!have && p.kind == NodeKind::KwArg) pending.push_back(&p);
      scope->set(name, v);
    }
    if (shape.kwargs) {
      Value rest = Value::object();
      for (auto& [k, v] : kw) rest.dict->set(k, v);
      scope->set("kwargs", rest);
    } else if (!kw.empty()) {
      fail("macro " + display + " takes no keyword argument '" + kw.front().first + "'");
    }
    if (shape.varargs) {
      Array rest;
      for (std::size_t k = params.size(); k < pos.size(); ++k) rest.push_back(pos[k]);
      scope->set("varargs", Value::array(std::move(rest)));
    } else if (pos.size() > params.size()) {
      fail("macro " + display + " takes not more than " + std::to_string(params.size()) +
           " argument(s)");
    }
    for (const Node* p : pending) scope->set(p->str, eval(*p->x, scope));
  }

  Value eval_macro(const Node& n, const EnvPtr& env) {
    const MacroShape shape = macro_shape(n.list, n.list2);
    const Node* node = &n;
    env->set(n.str, Value::function([this, node, shape](std::vector<Value>& args,
                                                        const EnvPtr& caller_env) -> Value {
               auto scope = std::make_shared<Env>(caller_env);
               bind_macro_args("'" + node->str + "'", node->list, shape, args, scope);
               return Value::string(eval_block(node->list2, scope));
             }));
    return Value::null();
  }

  Value eval_call_block(const Node& n, const EnvPtr& env) {
    const MacroShape shape = macro_shape(n.list, n.list2);
    const Node* node = &n;
    Value caller =
        Value::function([this, node, shape, env](std::vector<Value>& args, const EnvPtr&) -> Value {
          auto scope = std::make_shared<Env>(env);
          bind_macro_args("None", node->list, shape, args, scope);
          return Value::string(eval_block(node->list2, scope));
        });
    const Node& call = *n.x;
    auto [args, kw] = eval_args(call.list, env);
    args.push_back(kw);
    const Value fn = eval(*call.x, env);
    if (fn.kind != Kind::Function)
      fail("Cannot call something that is not a function: got " + type_name(fn));
    auto call_env = std::make_shared<Env>(env);
    call_env->set("caller", caller);
    return call_function(fn, args, call_env);
  }

  // ---- filters -------------------------------------------------------------

  Value apply_filter(const Value& v, const Node& f, const EnvPtr& env) {
    if (f.kind == NodeKind::Identifier) return apply_plain_filter(v, f.str, env);
    if (f.kind != NodeKind::Call || f.x->kind != NodeKind::Identifier) fail("Unknown filter");
    return apply_call_filter(v, f.x->str, f.list, env);
  }

  Value apply_plain_filter(const Value& v, const std::string& name, const EnvPtr& env) {
    if (name == "safe") return v;
    if (name == "tojson") return Value::string(to_json(v, JsonOptions{}));
    if (v.is_array()) {
      const Array& a = *v.arr;
      if (name == "list") return v;
      if (name == "first" || name == "last") {
        // The reference indexes past the end (JS undefined); Jinja2 gives Undefined.
        if (a.empty()) return Value::undefined();
        return name == "first" ? a.front() : a.back();
      }
      if (name == "length") return Value::integer(static_cast<std::int64_t>(a.size()));
      if (name == "reverse") return Value::array(Array(a.rbegin(), a.rend()));
      if (name == "sort") {
        Array out = a;
        std::stable_sort(out.begin(), out.end(), [](const Value& x, const Value& y) {
          return compare_values(x, y, false) < 0;
        });
        return Value::array(std::move(out));
      }
      if (name == "join") {
        std::string out;
        for (const auto& item : a) {
          out += to_join_string(item);
          check_size(static_cast<double>(out.size()));
        }
        return Value::string(std::move(out));
      }
      if (name == "string") return Value::string(to_json(v, JsonOptions{}, false));
      if (name == "unique") {
        Array out;
        for (const auto& item : a) {
          bool seen = false;
          for (const auto& o : out)
            if (strict_equals(o, item) ||
                (o.is_number() && item.is_number() && o.num() == item.num()))
              seen = true;
          if (!seen) out.push_back(item);
        }
        return Value::array(std::move(out));
      }
      fail("Unknown ArrayValue filter: " + name);
    }
    if (v.kind == Kind::String) {
      const std::string& s = v.s;
      if (name == "length") return Value::integer(static_cast<std::int64_t>(js::utf16_length(s)));
      if (name == "upper") return Value::string(js::to_upper(s));
      if (name == "lower") return Value::string(js::to_lower(s));
      if (name == "title") return Value::string(js::title_case(s));
      if (name == "capitalize") return Value::string(js::capitalize(s));
      if (name == "trim") return Value::string(std::string(js::trim(s)));
      if (name == "indent") return Value::string(indent(s, 4, false, false));
      if (name == "join" || name == "string") return v;
      if (name == "int") {
        double d;
        return js::parse_int(s, d) ? Value::number(d) : Value::integer(0);
      }
      if (name == "float") {
        double d;
        return Value::floating(js::parse_float(s, d) ? d : 0.0);
      }
      fail("Unknown StringValue filter: " + name);
    }
    if (v.is_number()) {
      if (name == "abs")
        return v.kind == Kind::Int ? Value::number(std::fabs(static_cast<double>(v.i)))
               : v.big_int         ? Value::number(std::fabs(v.f))
                                   : Value::floating(std::fabs(v.f));
      if (name == "int") return v.kind == Kind::Int ? v : Value::number(std::floor(v.f));
      if (name == "float") return Value::floating(v.num());
      if (name == "string") return Value::string(to_display(v));
      fail("Unknown NumericValue filter: " + name);
    }
    if (v.is_object()) {
      if (name == "items") return items_of(v);
      if (name == "length") return Value::integer(static_cast<std::int64_t>(v.dict->size()));
      const Value m = object_member(v, name);
      if (m.kind == Kind::Function) {
        std::vector<Value> none;
        return (*m.fn)(none, env);
      }
      fail("Unknown ObjectValue filter: " + name);
    }
    if (v.kind == Kind::Bool) {
      if (name == "bool") return v;
      if (name == "int") return Value::integer(v.b ? 1 : 0);
      if (name == "float") return Value::floating(v.b ? 1 : 0);
      if (name == "string") return Value::string(v.b ? "true" : "false");
      fail("Unknown BooleanValue filter: " + name);
    }
    fail("Cannot apply filter \"" + name + "\" to type: " + type_name(v));
  }

  static std::string indent(const std::string& s, std::int64_t width, bool first, bool blank) {
    const double lines_bound = static_cast<double>(std::count(s.begin(), s.end(), '\n')) + 1;
    check_size(static_cast<double>(s.size()) +
               lines_bound * static_cast<double>(std::max<std::int64_t>(width, 0)));
    const std::string pad(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), ' ');
    const std::vector<std::string> lines = split_on(s, "\n");
    std::string out;
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (k) out += '\n';
      if (!((!first && k == 0) || (!blank && lines[k].empty()))) out += pad;
      out += lines[k];
    }
    return out;
  }

  static const Value* kwarg(const Value& kw, const char* name) { return kw.dict->find(name); }

  static Value pick(const std::vector<Value>& pos, std::size_t idx, const Value& kw,
                    const char* name, Value fallback) {
    if (idx < pos.size()) return pos[idx];
    if (const Value* v = kwarg(kw, name)) return *v;
    return fallback;
  }

  Value apply_call_filter(const Value& v, const std::string& name, const NodeList& arg_nodes,
                          const EnvPtr& env) {
    if (name == "tojson") {
      auto [pos, kw] = eval_args(arg_nodes, env);
      JsonOptions o;
      const Value ind = pick({}, 0, kw, "indent", Value::null());
      if (ind.kind != Kind::Int && ind.kind != Kind::Null) fail("If set, indent must be a number");
      if (ind.kind == Kind::Int) {
        if (ind.i < 0) fail("Invalid count value: " + std::to_string(ind.i));
        if (ind.i > 64) fail("tojson indent is too large");
        o.indent = static_cast<int>(ind.i);
      }
      const Value ascii = pick({}, 0, kw, "ensure_ascii", Value::boolean(false));
      if (ascii.kind != Kind::Bool) fail("If set, ensure_ascii must be a boolean");
      o.ensure_ascii = ascii.b;
      const Value sort = pick({}, 0, kw, "sort_keys", Value::boolean(false));
      if (sort.kind != Kind::Bool) fail("If set, sort_keys must be a boolean");
      o.sort_keys = sort.b;
      const Value seps = pick({}, 0, kw, "separators", Value::null());
      if (seps.is_array()) {
        if (seps.arr->size() != 2 || (*seps.arr)[0].kind != Kind::String ||
            (*seps.arr)[1].kind != Kind::String)
          fail("separators must be a tuple of two strings");
        o.custom_separators = true;
        o.item_sep = (*seps.arr)[0].s;
        o.key_sep = (*seps.arr)[1].s;
      } else if (seps.kind != Kind::Null) {
        fail("If set, separators must be a tuple of two strings");
      }
      return Value::string(to_json(v, o));
    }
    if (name == "join") {
      std::vector<std::string> parts;
      if (v.kind == Kind::String) {
        parts = js::code_points(v.s);
      } else if (v.is_array()) {
        for (const auto& item : *v.arr) parts.push_back(to_join_string(item));
      } else {
        fail("Cannot apply filter \"join\" to type: " + type_name(v));
      }
      auto [pos, kw] = eval_args(arg_nodes, env);
      const Value sep = pick(pos, 0, kw, "separator", Value::string(""));
      if (sep.kind != Kind::String) fail("separator must be a string");
      std::string out;
      for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k) out += sep.s;
        out += parts[k];
      }
      return Value::string(std::move(out));
    }
    if (name == "int" || name == "float") {
      auto [pos, kw] = eval_args(arg_nodes, env);
      const bool is_int = name == "int";
      const Value def =
          pick(pos, 0, kw, "default", is_int ? Value::integer(0) : Value::floating(0));
      if (v.kind == Kind::String) {
        double d;
        const bool ok = is_int ? js::parse_int(v.s, d) : js::parse_float(v.s, d);
        if (!ok) return def;
        return is_int ? Value::number(d) : Value::floating(d);
      }
      if (v.is_number()) return v;
      if (v.kind == Kind::Bool)
        return is_int ? Value::integer(v.b ? 1 : 0) : Value::floating(v.b ? 1 : 0);
      fail("Cannot apply filter \"" + name + "\" to type: " + type_name(v));
    }
    if (name == "default") {
      auto [pos, kw] = eval_args(arg_nodes, env);
      const Value def = pos.size() > 0 ? pos[0] : Value::string("");
      const Value boolean = pick(pos, 1, kw, "boolean", Value::boolean(false));
      if (boolean.kind != Kind::Bool) fail("`default` filter flag must be a boolean");
      if (v.kind == Kind::Undefined || (boolean.b && !truthy(v))) return def;
      return v;
    }
    if (v.is_array()) {
      const Array& a = *v.arr;
      if (name == "sort") {
        auto [pos, kw] = eval_args(arg_nodes, env);
        const Value reverse = pick(pos, 0, kw, "reverse", Value::boolean(false));
        if (reverse.kind != Kind::Bool) fail("reverse must be a boolean");
        const Value cs = pick(pos, 1, kw, "case_sensitive", Value::boolean(false));
        if (cs.kind != Kind::Bool) fail("case_sensitive must be a boolean");
        const Value attr = pick(pos, 2, kw, "attribute", Value::null());
        if (attr.kind != Kind::String && attr.kind != Kind::Int && attr.kind != Kind::Null)
          fail("attribute must be a string, integer, or null");
        auto key = [&](const Value& item) {
          if (attr.kind == Kind::Null) return item;
          return get_attribute_value(item,
                                     attr.kind == Kind::Int ? std::to_string(attr.i) : attr.s);
        };
        Array out = a;
        std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
          const int r = compare_values(key(x), key(y), cs.b);
          return (reverse.b ? -r : r) < 0;
        });
        return Value::array(std::move(out));
      }
      if (name == "selectattr" || name == "rejectattr") {
        const bool select = name == "selectattr";
        for (const auto& item : a)
          if (!item.is_attr_container())
            fail("`" + name + "` can only be applied to array of objects");
        for (const auto& n : arg_nodes)
          if (n->kind != NodeKind::StrLit) fail("arguments of `" + name + "` must be strings");
        if (arg_nodes.empty()) fail("`" + name + "` needs an attribute name");
        const std::string attr = arg_nodes[0]->str;
        const std::string test = arg_nodes.size() > 1 ? arg_nodes[1]->str : std::string();
        const bool has_value = arg_nodes.size() > 2;
        const Value value = has_value ? Value::string(arg_nodes[2]->str) : Value::undefined();
        if (!test.empty() && !is_known_test(test)) fail("Unknown test: " + test);
        Array out;
        for (const auto& item : a) {
          const Value* field = item.dict->find(attr);
          bool r = false;
          if (field)
            r = test.empty() ? truthy(*field)
                             : run_test(test, *field, has_value ? &value : nullptr);
          if (r == select) out.push_back(item);
        }
        return Value::array(std::move(out));
      }
      if (name == "map") {
        auto [pos, kw] = eval_args(arg_nodes, env);
        const Value* attr = kwarg(kw, "attribute");
        if (!attr) fail("`map` expressions without `attribute` set are not currently supported.");
        if (attr->kind != Kind::String) fail("attribute must be a string");
        const Value* def = kwarg(kw, "default");
        Array out;
        for (const auto& item : a) {
          if (!item.is_attr_container()) fail("items in map must be an object");
          Value got = get_attribute_value(item, attr->s);
          if (got.kind == Kind::Undefined && def) got = *def;
          out.push_back(std::move(got));
        }
        return Value::array(std::move(out));
      }
      fail("Unknown ArrayValue filter: " + name);
    }
    if (v.kind == Kind::String) {
      if (name == "indent") {
        auto [pos, kw] = eval_args(arg_nodes, env);
        const Value width = pick(pos, 0, kw, "width", Value::integer(4));
        if (width.kind != Kind::Int) fail("width must be a number");
        if (width.i < 0 || width.i > 4096) fail("Invalid count value: " + std::to_string(width.i));
        const Value first = pick(pos, 1, kw, "first", Value::boolean(false));
        const Value blank = pick(pos, 2, kw, "blank", Value::boolean(false));
        return Value::string(indent(v.s, width.i, raw_truthy(first), raw_truthy(blank)));
      }
      if (name == "replace") {
        auto [pos, kw] = eval_args(arg_nodes, env);
        pos.push_back(kw);
        return string_replace(v.s, pos);
      }
      fail("Unknown StringValue filter: " + name);
    }
    if (v.is_object()) {
      const Value m = object_member(v, name);
      if (m.kind == Kind::Function) {
        auto [pos, kw] = eval_args(arg_nodes, env);
        if (kw.dict->size() > 0) pos.push_back(kw);
        return (*m.fn)(pos, env);
      }
      fail("Unknown ObjectValue filter: " + name);
    }
    fail("Cannot apply filter \"" + name + "\" to type: " + type_name(v));
  }
};

}  // namespace

std::string render_program(const Program& program, const nlohmann::ordered_json& context,
                           const TemplateOptions& opts) {
  if (!context.is_object()) fail("the template context must be a JSON object");
  Interpreter interp(opts);
  auto global = std::make_shared<Env>();
  interp.install_globals(*global);
  for (auto it = context.begin(); it != context.end(); ++it) {
    if (global->vars.count(it.key()))
      fail("context variable '" + it.key() + "' clashes with a built-in name");
    global->set(it.key(), from_json(*it));
  }
  return interp.run(program, global);
}

}  // namespace seam::chat
