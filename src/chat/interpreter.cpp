// Evaluation rules follow @huggingface/jinja 0.5.11 (the oracle for
// byte-identical prompts): its operator table, its filter set per operand
// type, its tests, its scoping (macros see the caller's scope) and its string
// conversions. Where that renderer fails (a filter it lacks, an operation on
// none), this one fails too, with a message naming the operation.
#include "chat/interpreter.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <ctime>

#include "chat/builtins.h"
#include "chat/js_text.h"
#include "chat/py_repr.h"
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

struct BreakSignal {};
struct ContinueSignal {};

constexpr int kMaxCallDepth = 200;  // macro recursion bound
constexpr std::size_t kMaxRange = 1'000'000;

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
              charge(out.size());
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
  RenderBudget budget_;  // the render's: charge() counts against it while this lives
  int call_depth_ = 0;
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

  // Every evaluation counts against the render's budget, a string it yields
  // by its size (whatever uses the string reads or copies it), and no such
  // string may exceed kMaxString; and it may not run the stack out.
  Value eval(const Node& n, const EnvPtr& env) {
    charge(1);
    check_stack();
    Value v = eval_node(n, env);
    if (v.kind == Kind::String) {
      check_size(static_cast<double>(v.s.size()));
      charge_bytes(v.s.size());
    }
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
          if (key.kind == Kind::Int) {
            obj.dict->set_int(key.i, eval(*n.list2[k], env));
            continue;
          }
          if (key.kind != Kind::String)
            fail("Object keys must be strings or integers: got " + type_name(key));
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
    const Node& callee = *n.x;
    if (callee.kind != NodeKind::Member || callee.flag)
      return call_function(eval(callee, env), args, env);
    // `d.items()` where the dict also has a key "items" (a JSON schema's array
    // items): the data shadows the method in the reference, which then cannot call
    // it; Jinja2 looks up the method first.
    const Value obj = eval(*callee.x, env);
    Value fn = member_of(obj, callee, env);
    if (fn.kind != Kind::Function && obj.is_object() && callee.y->kind != NodeKind::IntLit) {
      const Value method = object_member(obj, callee.y->str);
      if (method.kind == Kind::Function) fn = method;
    }
    return call_function(fn, args, env);
  }

  Value eval_member(const Node& n, const EnvPtr& env) { return member_of(eval(*n.x, env), n, env); }

  // obj.name, obj[expr] or obj[slice] for the Member node n, with obj evaluated.
  Value member_of(const Value& obj, const Node& n, const EnvPtr& env) {
    Value prop;
    if (n.flag) {
      if (n.y->kind == NodeKind::Slice) return eval_slice(obj, *n.y, env);
      prop = eval(*n.y, env);
    } else if (n.y->kind == NodeKind::IntLit) {
      prop = Value::integer(n.y->i);
    } else {
      prop = Value::string(n.y->str);
    }
    // A key that is not a string (`d[undefined]`, `d[0]`) finds nothing: Jinja2
    // gives undefined where the reference refuses the lookup.
    if (obj.is_attr_container()) {
      if (prop.kind == Kind::Int) {
        const Value* v = obj.dict->find_int(prop.i);
        return v ? *v : Value::undefined();
      }
      if (prop.kind != Kind::String) return Value::undefined();
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
      return Value::undefined();
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
    if (obj.is_array()) {
      charge(obj.arr->size());
      return Value::array(slice_vec(*obj.arr, start, stop, step));
    }
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

  // What `~` joins: Jinja2 writes an undefined value as "" and none as "None"
  // (the reference refuses both).
  static std::string concat_part(const Value& v) {
    if (v.kind == Kind::Undefined) return {};
    if (v.kind == Kind::Null) return "None";
    return to_js_string(v);
  }

  // Python's `seq * n` for a string or a list (the reference has no such operator).
  static Value repeat(const Value& seq, std::int64_t times) {
    const std::size_t count = times > 0 ? static_cast<std::size_t>(times) : 0;
    if (seq.kind == Kind::String) {
      check_size(static_cast<double>(seq.s.size()) * static_cast<double>(count));
      charge_bytes(seq.s.size() * count);
      std::string out;
      out.reserve(seq.s.size() * count);
      for (std::size_t k = 0; k < count; ++k) out += seq.s;
      return Value::string(std::move(out));
    }
    const double elements = static_cast<double>(seq.arr->size()) * static_cast<double>(count);
    charge(static_cast<std::uint64_t>(std::min(elements, 2.0 * kMaxSteps)));
    Array out;
    for (std::size_t k = 0; k < count; ++k) out.insert(out.end(), seq.arr->begin(), seq.arr->end());
    return Value::array(std::move(out));
  }

  Value eval_binary(const Node& n, const EnvPtr& env) {
    const std::string& op = n.str;
    const Value l = eval(*n.x, env);
    if (op == "and") return truthy(l) ? eval(*n.y, env) : l;
    if (op == "or") return truthy(l) ? l : eval(*n.y, env);
    const Value r = eval(*n.y, env);
    if (op == "==") return Value::boolean(loose_equals(l, r));
    if (op == "!=") return Value::boolean(!loose_equals(l, r));
    if (op == "~") return Value::string(concat_part(l) + concat_part(r));
    const bool membership = op == "in" || op == "not in";
    // `none in [...]` and `undefined in {...}` ask a question Jinja2 answers (the
    // reference refuses): such a value is in no list of template data and is no key.
    if (membership && (l.kind == Kind::Null || l.kind == Kind::Undefined) &&
        (r.is_array() || r.is_object())) {
      bool found = false;
      if (r.is_array()) {
        charge(r.arr->size());
        found = std::any_of(r.arr->begin(), r.arr->end(),
                            [&](const Value& item) { return item.kind == l.kind; });
      }
      return Value::boolean(found == (op == "in"));
    }
    if (l.kind == Kind::Undefined || r.kind == Kind::Undefined) {
      if (r.kind == Kind::Undefined && membership) return Value::boolean(op == "not in");
      fail("Cannot perform operation " + op + " on undefined values");
    }
    if (l.kind == Kind::Null || r.kind == Kind::Null)
      fail("Cannot perform operation " + op + " on null values");
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
        charge(l.arr->size() + r.arr->size());
        Array out = *l.arr;
        out.insert(out.end(), r.arr->begin(), r.arr->end());
        return Value::array(std::move(out));
      }
    } else if (r.is_array()) {
      if (membership) {
        charge(r.arr->size());
        bool found = false;
        for (const auto& item : *r.arr)
          if (strict_equals(item, l)) {
            found = true;
            break;
          }
        return Value::boolean(found == (op == "in"));
      }
    }
    if (op == "*" && (l.kind == Kind::Int) != (r.kind == Kind::Int)) {
      const Value& seq = l.kind == Kind::Int ? r : l;
      const std::int64_t times = l.kind == Kind::Int ? l.i : r.i;
      if (seq.kind == Kind::String || seq.is_array()) return repeat(seq, times);
    }
    if ((l.kind == Kind::String || r.kind == Kind::String) && op == "+")
      return Value::string(to_js_string(l) + to_js_string(r));
    // Python orders strings by code point, which is UTF-8's byte order (the
    // reference cannot compare strings).
    if (l.kind == Kind::String && r.kind == Kind::String &&
        (op == "<" || op == ">" || op == "<=" || op == ">=")) {
      const int c = l.s.compare(r.s);
      return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
    }
    if (l.kind == Kind::String && r.kind == Kind::String && membership)
      return Value::boolean((r.s.find(l.s) != std::string::npos) == (op == "in"));
    if (l.kind == Kind::String && r.is_object() && membership)
      return Value::boolean((r.dict->find(l.s) != nullptr) == (op == "in"));
    if (l.kind == Kind::Int && r.is_object() && membership)
      return Value::boolean((r.dict->find_int(l.i) != nullptr) == (op == "in"));
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
    // Jinja2 iterates an undefined value as an empty sequence ...
    if (iterable.kind == Kind::Undefined) iterable = Value::array();
    // ... and a string as its characters (the reference refuses a string).
    if (iterable.kind == Kind::String) {
      charge(iterable.s.size());  // a step per character made, before they are made
      Array chars;
      for (auto& c : js::code_points(iterable.s)) chars.push_back(Value::string(std::move(c)));
      iterable = Value::array(std::move(chars));
    }
    if (!iterable.is_array() && !iterable.is_object())
      fail("Expected iterable or object type in for loop: got " + type_name(iterable));
    if (iterable.is_object()) iterable = keys_of(iterable);

    const Node& target = *n.x;
    auto bind = [&](Env& e, const Value& item) {
      if (target.kind == NodeKind::Identifier) {
        e.set(target.str, item);
        return;
      }
      if (!item.is_array()) fail("Cannot unpack non-iterable type: " + type_name(item));
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
    // An empty body still costs its iterations: each builds the `loop` object (nine entries)
    // and copies its item a few times, the work of about four evaluations.
    charge(3 * source.size() + walk_cost(source));
    for (const auto& item : source) {
      if (target.kind == NodeKind::TupleLit) {
        // Unpacking is checked for every item up front, as the reference does.
        if (!item.is_array()) fail("Cannot unpack non-iterable type: " + type_name(item));
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
    if (f.kind == NodeKind::Identifier) {
      charge_walk(v, f.str);
      return apply_plain_filter(v, f.str, env);
    }
    if (f.kind != NodeKind::Call || f.x->kind != NodeKind::Identifier) fail("Unknown filter");
    charge_walk(v, f.x->str);
    return apply_call_filter(v, f.x->str, f.list, env);
  }

  // A filter that walks a list or a dict costs a step per element (sort: per
  // comparison); the ones that look at one end or the size cost nothing more,
  // so `messages|length` inside a loop over the messages stays cheap.
  static void charge_walk(const Value& v, const std::string& filter) {
    if (filter == "length" || filter == "count" || filter == "first" || filter == "last" ||
        filter == "list" || filter == "safe" || filter == "default" || filter == "d")
      return;
    const std::size_t n = v.is_array() ? v.arr->size() : (v.dict ? v.dict->size() : 0);
    const std::uint64_t walk = v.is_array() ? walk_cost(*v.arr) : n;
    charge(walk);
    if (filter == "sort" || filter == "dictsort") charge(walk * std::bit_width(n));
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
      // Jinja2 trims str(list), Python's repr; the reference has no trim for lists.
      if (name == "trim") return Value::string(std::string(js::trim(py_repr(v))));
      if (name == "select" || name == "reject") return select_items(a, name == "select", {}, env);
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
      // Python's str(dict), as Jinja2 writes it; the reference has no such filter.
      if (name == "string" || name == "trim") return Value::string(py_repr(v));
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
    if (v.kind == Kind::Namespace && name == "string") return Value::string(py_repr(v));
    // Jinja2's str() of an undefined value is "".
    if (v.kind == Kind::Undefined && (name == "string" || name == "trim")) return Value::string("");
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

  // Jinja2's `select(test, arg)` / `reject(...)`: the items that pass (or fail) a
  // test, or that are truthy when no test is named. The reference has neither.
  Value select_items(const Array& a, bool keep_passing, const NodeList& arg_nodes,
                     const EnvPtr& env) {
    auto [pos, kw] = eval_args(arg_nodes, env);
    if (!pos.empty() && pos[0].kind != Kind::String)
      fail("the test of select/reject must be a name");
    const std::string test = pos.empty() ? std::string() : pos[0].s;
    if (!test.empty() && !is_known_test(test)) fail("Unknown test: " + test);
    const Value* arg = pos.size() > 1 ? &pos[1] : nullptr;
    Array out;
    for (const auto& item : a) {
      const bool passes = test.empty() ? truthy(item) : run_test(test, item, arg);
      if (passes == keep_passing) out.push_back(item);
    }
    return Value::array(std::move(out));
  }

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
      if (name == "select" || name == "reject")
        return select_items(a, name == "select", arg_nodes, env);
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
