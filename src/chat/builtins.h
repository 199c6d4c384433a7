// The built-in behaviour of the template language, as @huggingface/jinja 0.5.11 defines it:
// truthiness and comparison of values, attribute paths, slicing, the string and object
// methods, the tests (`is defined`, `is odd`, ...), and strftime_now's clock and format.
// The interpreter (interpreter.cpp) evaluates the tree and calls these.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chat/render_budget.h"
#include "chat/value.h"
#include "seam/chat.h"
#include "seam/error.h"

namespace seam::chat {

[[noreturn]] inline void fail(const std::string& msg) { throw Error(Errc::Template, msg); }

inline std::string type_name(const Value& v) { return std::string(type_name_of(v)); }

inline bool numeric_like(const Value& v) { return v.is_number() || v.kind == Kind::Bool; }
inline double numeric_value(const Value& v) {
  return v.kind == Kind::Bool ? (v.b ? 1 : 0) : v.num();
}

// JavaScript truthiness of a raw payload (objects are always true).
bool raw_truthy(const Value& v);

// What walking a list costs the render's budget: a step per element and per
// 256 bytes of its string elements.
std::uint64_t walk_cost(const Array& items);

// A dict's items as [key, value] pairs, its keys: in insertion order.
Value items_of(const Value& obj);
Value keys_of(const Value& obj);

// compareRuntimeValues: numbers and booleans compare numerically, strings
// (optionally case-folded) compare with each other, anything else fails.
int compare_values(const Value& a, const Value& b, bool case_sensitive);

// The value at a dotted attribute path (`a.b.0`), as map/sort/groupby read it.
Value get_attribute_value(const Value& item, const std::string& path);

// String.prototype.at: UTF-16 indexing (negative from the end).
Value string_at(const std::string& s, std::int64_t index);

// `s` cut at every occurrence of a non-empty `sep`.
std::vector<std::string> split_on(const std::string& s, const std::string& sep);

// s.replace(old, new[, count]), within the render's string limit.
Value string_replace(const std::string& s, std::vector<Value>& args);

// The methods and properties a string exposes (`s.upper()`, `s.length`, ...).
Value string_member(const std::string& s, const std::string& name);

// The methods a dict exposes (`d.items()`, `d.get(k, default)`, ...).
Value object_member(const Value& obj, const std::string& name);

// `v is NAME [arg]`; is_known_test says whether NAME is a test at all.
bool run_test(const std::string& name, const Value& v, const Value* arg);
bool is_known_test(const std::string& name);

// strftime_now's format (Python's directives) over a pinned or local time.
std::string strftime_py(const std::string& fmt, const TemplateTime& t);
TemplateTime local_now();

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

}  // namespace seam::chat
