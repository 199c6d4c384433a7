// The runtime values of the chat-template interpreter.
//
// The kinds mirror @huggingface/jinja's runtime classes because that renderer
// is the oracle: undefined and none are distinct, lists and dicts are shared
// by reference (a namespace mutated in a loop is seen outside it, and `==` on
// two dicts compares identity), dicts keep insertion order, tuples are lists
// that the reference refuses to serialise, and keyword arguments travel as a
// trailing KwArgs dict in a call's argument list.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam::chat {

struct Env;
struct Value;

using Array = std::vector<Value>;

// An insertion-ordered string-keyed map (JavaScript Map semantics).
class Dict {
 public:
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value v);
  // Integer keys, which a template's dict literal may have ({0: 'a'}, as in
  // Jinja2): the entry's text is the decimal number, and string lookups never
  // find it, nor integer lookups a string key.
  const Value* find_int(std::int64_t key) const;
  void set_int(std::int64_t key, Value v);
  bool int_key(std::size_t entry) const { return entry < int_keys_.size() && int_keys_[entry]; }
  std::size_t size() const;
  void clear();
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, Value>> items_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::int64_t, std::size_t> int_index_;
  std::vector<bool> int_keys_;  // per entry; empty while every key is a string
};

using NativeFn = std::function<Value(std::vector<Value>& args, const std::shared_ptr<Env>& env)>;

enum class Kind : std::uint8_t {
  Undefined,
  Null,
  Bool,
  Int,
  Float,
  String,
  Array,
  Tuple,
  Object,
  KwArgs,
  Namespace,
  Function,
};

struct Value {
  Kind kind = Kind::Undefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<Array> arr;    // Array, Tuple
  std::shared_ptr<Dict> dict;    // Object, KwArgs, Namespace
  std::shared_ptr<NativeFn> fn;  // Function
  // Float only: an integral number beyond int64, which the reference still
  // types as IntegerValue (a JS number), so it prints without ".0".
  bool big_int = false;

  static Value undefined() { return {}; }
  static Value null() { return with_kind(Kind::Null); }
  static Value boolean(bool v) {
    Value r = with_kind(Kind::Bool);
    r.b = v;
    return r;
  }
  static Value integer(std::int64_t v) {
    Value r = with_kind(Kind::Int);
    r.i = v;
    return r;
  }
  static Value floating(double v) {
    Value r = with_kind(Kind::Float);
    r.f = v;
    return r;
  }
  // A JavaScript number: integral values become Int, as the reference's
  // conversion of context data (Number.isInteger) does.
  static Value number(double v);
  static Value string(std::string v) {
    Value r = with_kind(Kind::String);
    r.s = std::move(v);
    return r;
  }
  static Value array(Array items = {}, Kind kind = Kind::Array) {
    Value r = with_kind(kind);
    r.arr = std::make_shared<Array>(std::move(items));
    return r;
  }
  static Value object(Kind kind = Kind::Object) {
    Value r = with_kind(kind);
    r.dict = std::make_shared<Dict>();
    return r;
  }
  static Value function(NativeFn f) {
    Value r = with_kind(Kind::Function);
    r.fn = std::make_shared<NativeFn>(std::move(f));
    return r;
  }

  bool is_array() const { return kind == Kind::Array || kind == Kind::Tuple; }
  bool is_object() const { return kind == Kind::Object || kind == Kind::KwArgs; }
  bool is_attr_container() const { return is_object() || kind == Kind::Namespace; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  // A FloatValue in the reference's terms (big integers are IntegerValue there).
  bool is_float() const { return kind == Kind::Float && !big_int; }
  double num() const { return kind == Kind::Int ? static_cast<double>(i) : f; }

 private:
  static Value with_kind(Kind k) {
    Value r;
    r.kind = k;
    return r;
  }
};

// The reference's type names, used in error messages ("ArrayValue", ...).
std::string_view kind_name(Kind k);
// kind_name of a value, naming big integers IntegerValue.
std::string_view type_name_of(const Value& v);

// Python-like truthiness as the reference defines __bool__.
bool truthy(const Value& v);

// RuntimeValue.toString(): what `{{ v }}` prints.
std::string to_display(const Value& v);
// v.value.toString() in JavaScript: what `~` and string `+` concatenate.
std::string to_js_string(const Value& v);
// What Array.prototype.join writes for an element's raw value (null/undefined -> "").
std::string to_join_string(const Value& v);

struct JsonOptions {
  int indent = 0;  // 0: single line
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool custom_separators = false;
  std::string item_sep, key_sep;
};
// The reference's toJSON; undefined_as_null=false writes `undefined`.
std::string to_json(const Value& v, const JsonOptions& opts, bool undefined_as_null = true,
                    int depth = 0);

// JavaScript loose equality (==) on the values' raw payloads.
bool loose_equals(const Value& a, const Value& b);
// Strict equality (===) on raw payloads: containers compare by identity.
bool strict_equals(const Value& a, const Value& b);

// Context data -> runtime values, with JavaScript's key order for objects
// (integer-like keys first, ascending), as JSON.parse would produce.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace seam::chat
