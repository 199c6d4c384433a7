#include "chat/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/js_text.h"
#include "chat/render_budget.h"
#include "seam/error.h"

namespace seam::chat {

// Out of line: items_ holds Values, complete only below value.h (clang with
// libstdc++ 12 refuses an inline size() on the incomplete type).
std::size_t Dict::size() const { return items_.size(); }
void Dict::clear() {
  // Swap out first: destroying the items may free other namespaces that are
  // being cleared in turn.
  std::vector<std::pair<std::string, Value>> items;
  items.swap(items_);
  index_.clear();
  int_index_.clear();
  int_keys_.clear();
}

const Value* Dict::find_int(std::int64_t key) const {
  const auto it = int_index_.find(key);
  return it == int_index_.end() ? nullptr : &items_[it->second].second;
}

void Dict::set_int(std::int64_t key, Value v) {
  const auto it = int_index_.find(key);
  if (it != int_index_.end()) {
    items_[it->second].second = std::move(v);
    return;
  }
  int_index_.emplace(key, items_.size());
  items_.emplace_back(std::to_string(key), std::move(v));
  int_keys_.resize(items_.size());
  int_keys_.back() = true;
}

const Value* Dict::find(std::string_view key) const {
  const auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

Value* Dict::find(std::string_view key) {
  const auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

void Dict::set(const std::string& key, Value v) {
  const auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = std::move(v);
    return;
  }
  index_.emplace(key, items_.size());
  items_.emplace_back(key, std::move(v));
}

Value Value::number(double v) {
  if (!std::isfinite(v) || std::floor(v) != v) return floating(v);
  if (std::fabs(v) < 9.2e18) return integer(static_cast<std::int64_t>(v));
  Value r = floating(v);
  r.big_int = true;
  return r;
}

std::string_view type_name_of(const Value& v) {
  return v.big_int ? std::string_view("IntegerValue") : kind_name(v.kind);
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::Undefined:
      return "UndefinedValue";
    case Kind::Null:
      return "NullValue";
    case Kind::Bool:
      return "BooleanValue";
    case Kind::Int:
      return "IntegerValue";
    case Kind::Float:
      return "FloatValue";
    case Kind::String:
      return "StringValue";
    case Kind::Array:
      return "ArrayValue";
    case Kind::Tuple:
      return "TupleValue";
    case Kind::Object:
      return "ObjectValue";
    case Kind::KwArgs:
      return "KeywordArgumentsValue";
    case Kind::Namespace:
      return "NamespaceValue";
    case Kind::Function:
      return "FunctionValue";
  }
  return "Value";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::Null:
      return false;
    case Kind::Bool:
      return v.b;
    case Kind::Int:
      return v.i != 0;
    case Kind::Float:
      return v.f != 0 && !std::isnan(v.f);
    case Kind::String:
      return !v.s.empty();
    case Kind::Array:
    case Kind::Tuple:
      return !v.arr->empty();
    case Kind::Object:
    case Kind::KwArgs:
      return v.dict->size() > 0;
    case Kind::Namespace:
    case Kind::Function:
      return true;
  }
  return false;
}

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(Errc::Template, msg); }

std::string int_string(std::int64_t i) { return std::to_string(i); }

std::string float_display(double f) {
  if (f == 0 && std::signbit(f)) return "-0.0";
  if (std::isfinite(f) && std::floor(f) == f && std::fabs(f) < 1e21) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", f);
    return buf;
  }
  return js::number_to_string(f);
}

// StringToNumber for loose equality: whitespace-trimmed decimal, hex, or empty (0).
double js_to_number(std::string_view raw) {
  const std::string s(js::trim(raw));
  if (s.empty()) return 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    double v = 0;
    for (std::size_t i = 2; i < s.size(); ++i) {
      const char c = s[i];
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return NAN;
      v = v * 16 + d;
    }
    return v;
  }
  if (s == "Infinity" || s == "+Infinity") return HUGE_VAL;
  if (s == "-Infinity") return -HUGE_VAL;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return NAN;
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return NAN;
  return v;
}

enum class Raw { Undefined, Null, Boolean, Number, String, Object };

// The reference builds every NullValue without a payload, so none's raw value
// is JavaScript `undefined`, exactly like an undefined variable's.
Raw raw_type(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::Null:
      return Raw::Undefined;
    case Kind::Bool:
      return Raw::Boolean;
    case Kind::Int:
    case Kind::Float:
      return Raw::Number;
    case Kind::String:
      return Raw::String;
    default:
      return Raw::Object;
  }
}

const void* identity(const Value& v) {
  if (v.arr) return v.arr.get();
  if (v.dict) return v.dict.get();
  return v.fn.get();
}

}  // namespace

std::string to_display(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::Null:  // none's payload is JS undefined too
      return "undefined";
    case Kind::Bool:
      return v.b ? "true" : "false";
    case Kind::Int:
      return int_string(v.i);
    case Kind::Float:
      return v.big_int ? js::number_to_string(v.f) : float_display(v.f);
    case Kind::String:
      return v.s;
    case Kind::Function:
      return "[function]";
    default:
      return to_json(v, JsonOptions{}, false);
  }
}

std::string to_js_string(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::Null:
      fail("Cannot convert " + std::string(kind_name(v.kind)) + " to a string");
    case Kind::Bool:
      return v.b ? "true" : "false";
    case Kind::Int:
      return int_string(v.i);
    case Kind::Float:
      return js::number_to_string(v.f);
    case Kind::String:
      return v.s;
    case Kind::Array:
    case Kind::Tuple: {
      std::string out;
      for (std::size_t k = 0; k < v.arr->size(); ++k) {
        if (k) out += ',';
        charge(1);
        out += to_display((*v.arr)[k]);
        check_size(static_cast<double>(out.size()));
      }
      return out;
    }
    case Kind::Object:
    case Kind::KwArgs:
    case Kind::Namespace:
      return "[object Map]";
    case Kind::Function:
      return "[function]";
  }
  return {};
}

std::string to_join_string(const Value& v) {
  if (v.kind == Kind::Undefined || v.kind == Kind::Null) return {};
  return to_js_string(v);
}

namespace {

// Rough stand-in for String.prototype.localeCompare (ICU root collation):
// letters compare case-insensitively first, lower case before upper on ties.
bool locale_less(const std::string& a, const std::string& b) {
  const std::string la = js::to_lower(a), lb = js::to_lower(b);
  if (la != lb) return la < lb;
  return a > b;
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& opts, bool undefined_as_null, int depth) {
  // A list can hold itself many times over (`[a, a]` forty times is 2^40 elements in
  // 40 lists), so each element written costs a step and the text is checked as it grows.
  charge(1);
  switch (v.kind) {
    case Kind::Null:
      return "null";
    case Kind::Undefined:
      return undefined_as_null ? "null" : "undefined";
    case Kind::Int:
      return int_string(v.i);
    case Kind::Float:
      return std::isfinite(v.f) ? js::number_to_string(v.f) : "null";
    case Kind::Bool:
      return v.b ? "true" : "false";
    case Kind::String:
      charge_bytes(v.s.size());
      return js::json_quote(v.s, opts.ensure_ascii);
    case Kind::Array:
    case Kind::Object:
    case Kind::Namespace:
      break;
    default:
      fail("Cannot convert to JSON: " + std::string(kind_name(v.kind)));
  }
  if (depth > 512) fail("Cannot convert to JSON: nesting is too deep");
  const bool indented = opts.indent > 0;
  const std::string item_sep = opts.custom_separators ? opts.item_sep : (indented ? "," : ", ");
  const std::string key_sep = opts.custom_separators ? opts.key_sep : ": ";
  const std::string unit(indented ? static_cast<std::size_t>(opts.indent) : 0, ' ');
  std::string base_pad = "\n";
  for (int d = 0; d < depth; ++d) base_pad += unit;
  const std::string child_pad = base_pad + unit;

  std::string out;
  if (v.kind == Kind::Array) {
    const Array& items = *v.arr;
    out += '[';
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (k) out += item_sep;
      if (indented) out += child_pad;
      out += to_json(items[k], opts, undefined_as_null, depth + 1);
      check_size(static_cast<double>(out.size()));
    }
    if (indented && !items.empty()) out += base_pad;
    out += ']';
    return out;
  }
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& kv : v.dict->items()) entries.push_back(&kv);
  if (opts.sort_keys) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto* a, const auto* b) { return locale_less(a->first, b->first); });
  }
  out += '{';
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (k) out += item_sep;
    if (indented) out += child_pad;
    out += js::json_quote(entries[k]->first, opts.ensure_ascii);
    out += key_sep;
    out += to_json(entries[k]->second, opts, undefined_as_null, depth + 1);
    check_size(static_cast<double>(out.size()));
  }
  if (indented && !entries.empty()) out += base_pad;
  out += '}';
  return out;
}

bool strict_equals(const Value& a, const Value& b) {
  const Raw ra = raw_type(a), rb = raw_type(b);
  if (ra != rb) return false;
  switch (ra) {
    case Raw::Undefined:
    case Raw::Null:
      return true;
    case Raw::Boolean:
      return a.b == b.b;
    case Raw::Number:
      return a.num() == b.num();
    case Raw::String:
      return a.s == b.s;
    case Raw::Object:
      return identity(a) == identity(b);
  }
  return false;
}

bool loose_equals(const Value& a, const Value& b) {
  const Raw ra = raw_type(a), rb = raw_type(b);
  if (ra == rb) return strict_equals(a, b);
  const bool a_nullish = ra == Raw::Undefined || ra == Raw::Null;
  const bool b_nullish = rb == Raw::Undefined || rb == Raw::Null;
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  if (ra == Raw::Boolean) return loose_equals(Value::integer(a.b ? 1 : 0), b);
  if (rb == Raw::Boolean) return loose_equals(a, Value::integer(b.b ? 1 : 0));
  if (ra == Raw::Number && rb == Raw::String) return a.num() == js_to_number(b.s);
  if (ra == Raw::String && rb == Raw::Number) return js_to_number(a.s) == b.num();
  // Object against a primitive: compare the object's primitive (string) form.
  if (ra == Raw::Object) return loose_equals(Value::string(to_js_string(a)), b);
  if (rb == Raw::Object) return loose_equals(a, Value::string(to_js_string(b)));
  return false;
}

namespace {

// An "array index" key in JavaScript property order: canonical decimal below 2^32 - 1.
bool array_index_key(const std::string& k, std::uint64_t& out) {
  if (k.empty() || k.size() > 10) return false;
  if (k.size() > 1 && k[0] == '0') return false;
  std::uint64_t v = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v >= 4294967295ull) return false;
  out = v;
  return true;
}

Value from_json_depth(const nlohmann::ordered_json& j, int depth) {
  if (depth > 512) fail("context data is nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::null();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      // Beyond int64 the value can only be the JS number the reference sees.
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_depth(e, depth + 1));
      return Value::array(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value obj = Value::object();
      std::vector<std::pair<std::uint64_t, std::string>> index_keys;
      for (auto it = j.begin(); it != j.end(); ++it) {
        std::uint64_t idx;
        if (array_index_key(it.key(), idx)) index_keys.emplace_back(idx, it.key());
      }
      std::sort(index_keys.begin(), index_keys.end());
      for (const auto& [_, k] : index_keys) obj.dict->set(k, from_json_depth(j.at(k), depth + 1));
      for (auto it = j.begin(); it != j.end(); ++it) {
        std::uint64_t idx;
        if (!array_index_key(it.key(), idx))
          obj.dict->set(it.key(), from_json_depth(*it, depth + 1));
      }
      return obj;
    }
    default:
      fail("context data holds a value JSON cannot represent");
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json_depth(j, 0); }

}  // namespace seam::chat
