// Recursive-descent parser with @huggingface/jinja's grammar and precedence:
//   ternary/select < or < and < not < comparison/in < additive < multiplicative
//   < power < `is` tests < filters < unary sign < call/member < primary.
#include <cstdlib>
#include <string>

#include "chat/ast.h"
#include "seam/error.h"

namespace seam::chat {
namespace {

constexpr int kMaxDepth = 256;  // nesting bound so hostile templates cannot overflow the stack

[[noreturn]] void syntax_error(const std::string& msg) {
  throw Error(Errc::Template, "template syntax error: " + msg);
}

NodePtr make(NodeKind k) { return std::make_unique<Node>(k); }

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Program run() {
    Program p;
    while (cur_ < t_.size()) p.body.push_back(parse_any());
    return p;
  }

 private:
  std::vector<Token> t_;
  std::size_t cur_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth) : d(depth) {
      if (++d > kMaxDepth) syntax_error("template is nested too deeply");
    }
    ~DepthGuard() { --d; }
  };

  const Token& peek(std::size_t ahead = 0) const {
    if (cur_ + ahead >= t_.size()) syntax_error("unexpected end of template");
    return t_[cur_ + ahead];
  }
  const Token& next() {
    const Token& tok = peek();
    ++cur_;
    return tok;
  }
  bool is(Tok type) const { return cur_ < t_.size() && t_[cur_].type == type; }
  bool is_ident(std::string_view name, std::size_t ahead = 0) const {
    return cur_ + ahead < t_.size() && t_[cur_ + ahead].type == Tok::Identifier &&
           t_[cur_ + ahead].value == name;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    if (!(cur_ + 1 < t_.size() && t_[cur_].type == Tok::OpenStatement &&
          t_[cur_ + 1].type == Tok::Identifier))
      return false;
    for (auto n : names)
      if (t_[cur_ + 1].value == n) return true;
    return false;
  }
  void expect(Tok type, const char* what) {
    if (cur_ >= t_.size() || t_[cur_].type != type) syntax_error(std::string("expected ") + what);
    ++cur_;
  }
  void expect_ident(std::string_view name) {
    if (!is_ident(name)) syntax_error("expected " + std::string(name));
    ++cur_;
  }
  // Statement bodies run until one of the closing tags; running out of tokens is an error.
  void parse_until(NodeList& into, std::initializer_list<std::string_view> enders) {
    while (!is_statement(enders)) {
      if (cur_ >= t_.size()) syntax_error("missing {% " + std::string(*enders.begin()) + " %}");
      into.push_back(parse_any());
    }
  }

  NodePtr parse_any() {
    DepthGuard g(depth_);
    const Token& tok = peek();
    switch (tok.type) {
      case Tok::Comment: {
        ++cur_;
        return make(NodeKind::Comment);
      }
      case Tok::Text: {
        auto n = make(NodeKind::Text);
        n->str = next().value;
        return n;
      }
      case Tok::OpenStatement:
        return parse_statement();
      case Tok::OpenExpression: {
        ++cur_;
        auto e = parse_expression();
        expect(Tok::CloseExpression, "}}");
        return e;
      }
      default:
        syntax_error("unexpected token '" + tok.value + "'");
    }
  }

  NodePtr parse_statement() {
    expect(Tok::OpenStatement, "{%");
    if (peek().type != Tok::Identifier) syntax_error("unknown statement '" + peek().value + "'");
    const std::string name = next().value;
    if (name == "set") return parse_set();
    if (name == "if") {
      auto n = parse_if();
      expect(Tok::OpenStatement, "{%");
      expect_ident("endif");
      expect(Tok::CloseStatement, "%}");
      return n;
    }
    if (name == "macro") {
      auto n = make(NodeKind::Macro);
      auto id = parse_primary();
      if (id->kind != NodeKind::Identifier) syntax_error("expected a name after 'macro'");
      n->str = id->str;
      parse_args(n->list, true);
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list2, {"endmacro"});
      expect(Tok::OpenStatement, "{%");
      expect_ident("endmacro");
      expect(Tok::CloseStatement, "%}");
      return n;
    }
    if (name == "for") {
      auto n = parse_for();
      expect(Tok::OpenStatement, "{%");
      expect_ident("endfor");
      expect(Tok::CloseStatement, "%}");
      return n;
    }
    if (name == "call") {
      auto n = make(NodeKind::CallBlock);
      if (is(Tok::OpenParen)) parse_args(n->list, true);
      auto callee = parse_primary();
      if (callee->kind != NodeKind::Identifier) syntax_error("expected a name after 'call'");
      auto call = make(NodeKind::Call);
      call->x = std::move(callee);
      parse_args(call->list, false);
      n->x = std::move(call);
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list2, {"endcall"});
      expect(Tok::OpenStatement, "{%");
      expect_ident("endcall");
      expect(Tok::CloseStatement, "%}");
      return n;
    }
    if (name == "break" || name == "continue") {
      expect(Tok::CloseStatement, "%}");
      return make(name == "break" ? NodeKind::Break : NodeKind::Continue);
    }
    if (name == "filter") {
      auto n = make(NodeKind::FilterBlock);
      auto f = parse_primary();
      if (f->kind == NodeKind::Identifier && is(Tok::OpenParen)) f = parse_call(std::move(f));
      n->x = std::move(f);
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list, {"endfilter"});
      expect(Tok::OpenStatement, "{%");
      expect_ident("endfilter");
      expect(Tok::CloseStatement, "%}");
      return n;
    }
    syntax_error("unknown statement '" + name + "'");
  }

  NodePtr parse_set() {
    auto n = make(NodeKind::Set);
    n->x = parse_sequence(false);
    if (is(Tok::Equals)) {
      ++cur_;
      n->y = parse_sequence(false);
    } else {
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list, {"endset"});
      expect(Tok::OpenStatement, "{%");
      expect_ident("endset");
    }
    expect(Tok::CloseStatement, "%}");
    return n;
  }

  NodePtr parse_if() {
    DepthGuard g(depth_);
    auto n = make(NodeKind::If);
    n->x = parse_expression();
    expect(Tok::CloseStatement, "%}");
    parse_until(n->list, {"elif", "else", "endif"});
    if (is_statement({"elif"})) {
      cur_ += 2;
      n->list2.push_back(parse_if());
    } else if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list2, {"endif"});
    }
    return n;
  }

  NodePtr parse_for() {
    auto n = make(NodeKind::For);
    n->x = parse_sequence(true);
    if (n->x->kind != NodeKind::Identifier && n->x->kind != NodeKind::TupleLit)
      syntax_error("expected a name or tuple as the loop variable");
    if (!is_ident("in")) syntax_error("expected 'in' after the loop variable");
    ++cur_;
    n->y = parse_expression();
    expect(Tok::CloseStatement, "%}");
    parse_until(n->list, {"endfor", "else"});
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::CloseStatement, "%}");
      parse_until(n->list2, {"endfor"});
    }
    return n;
  }

  NodePtr parse_sequence(bool primary) {
    NodePtr first = primary ? parse_primary() : parse_expression();
    if (!is(Tok::Comma)) return first;
    auto tuple = make(NodeKind::TupleLit);
    tuple->list.push_back(std::move(first));
    while (true) {
      ++cur_;
      tuple->list.push_back(primary ? parse_primary() : parse_expression());
      if (!is(Tok::Comma)) break;
    }
    return tuple;
  }

  NodePtr parse_expression() {
    DepthGuard g(depth_);
    auto a = parse_or();
    if (is_ident("if")) {
      ++cur_;
      auto test = parse_or();
      if (is_ident("else")) {
        ++cur_;
        auto n = make(NodeKind::Ternary);
        n->x = std::move(test);
        n->y = std::move(a);
        n->z = parse_expression();
        return n;
      }
      auto n = make(NodeKind::Select);
      n->x = std::move(a);
      n->y = std::move(test);
      return n;
    }
    return a;
  }

  NodePtr binary(std::string op, NodePtr l, NodePtr r) {
    auto n = make(NodeKind::Binary);
    n->str = std::move(op);
    n->x = std::move(l);
    n->y = std::move(r);
    return n;
  }

  NodePtr parse_or() {
    auto left = parse_and();
    while (is_ident("or")) {
      ++cur_;
      left = binary("or", std::move(left), parse_and());
    }
    return left;
  }

  NodePtr parse_and() {
    auto left = parse_not();
    while (is_ident("and")) {
      ++cur_;
      left = binary("and", std::move(left), parse_not());
    }
    return left;
  }

  NodePtr parse_not() {
    if (is_ident("not")) {
      DepthGuard g(depth_);
      ++cur_;
      auto n = make(NodeKind::Unary);
      n->str = "not";
      n->x = parse_not();
      return n;
    }
    return parse_comparison();
  }

  NodePtr parse_comparison() {
    auto left = parse_additive();
    while (true) {
      std::string op;
      if (is_ident("not") && is_ident("in", 1)) {
        op = "not in";
        cur_ += 2;
      } else if (is_ident("in")) {
        op = "in";
        ++cur_;
      } else if (is(Tok::Comparison)) {
        op = next().value;
      } else {
        break;
      }
      left = binary(std::move(op), std::move(left), parse_additive());
    }
    return left;
  }

  NodePtr parse_additive() {
    auto left = parse_multiplicative();
    while (is(Tok::Additive)) {
      std::string op = next().value;
      left = binary(std::move(op), std::move(left), parse_multiplicative());
    }
    return left;
  }

  NodePtr parse_multiplicative() {
    auto left = parse_power();
    while (is(Tok::Multiplicative)) {
      std::string op = next().value;
      left = binary(std::move(op), std::move(left), parse_power());
    }
    return left;
  }

  NodePtr parse_power() {
    auto left = parse_test();
    while (is(Tok::Power)) {
      ++cur_;
      left = binary("**", std::move(left), parse_test());
    }
    return left;
  }

  NodePtr parse_test() {
    auto operand = parse_filter();
    while (is_ident("is")) {
      ++cur_;
      const bool negate = is_ident("not");
      if (negate) ++cur_;
      auto name = parse_primary();
      if (name->kind != NodeKind::Identifier) syntax_error("expected a test name after 'is'");
      auto n = make(NodeKind::Test);
      n->x = std::move(operand);
      n->str = name->str;
      n->flag = negate;
      operand = std::move(n);
    }
    return operand;
  }

  NodePtr parse_filter() {
    auto operand = parse_unary_sign();
    while (is(Tok::Pipe)) {
      ++cur_;
      auto f = parse_primary();
      if (f->kind != NodeKind::Identifier) syntax_error("expected a filter name after '|'");
      if (is(Tok::OpenParen)) f = parse_call(std::move(f));
      auto n = make(NodeKind::Filter);
      n->x = std::move(operand);
      n->y = std::move(f);
      operand = std::move(n);
    }
    return operand;
  }

  NodePtr parse_unary_sign() {
    if (cur_ < t_.size() && (t_[cur_].type == Tok::Unary || t_[cur_].type == Tok::Additive) &&
        (t_[cur_].value == "-" || t_[cur_].value == "+")) {
      DepthGuard g(depth_);
      auto n = make(NodeKind::Unary);
      n->str = next().value;
      n->x = parse_unary_sign();
      return n;
    }
    return parse_call_member();
  }

  NodePtr parse_call_member() {
    auto member = parse_member(parse_primary());
    if (is(Tok::OpenParen)) return parse_call(std::move(member));
    return member;
  }

  NodePtr parse_call(NodePtr callee) {
    DepthGuard g(depth_);
    auto n = make(NodeKind::Call);
    n->x = std::move(callee);
    parse_args(n->list, false);
    NodePtr e = parse_member(std::move(n));
    if (is(Tok::OpenParen)) e = parse_call(std::move(e));
    return e;
  }

  // Arguments of a call, or parameters of a macro / call block (`params`).
  void parse_args(NodeList& out, bool params) {
    expect(Tok::OpenParen, "(");
    bool saw_keyword = false, saw_spread = false;
    while (!is(Tok::CloseParen)) {
      if (cur_ >= t_.size()) syntax_error("missing ')'");
      const bool kw_spread = is(Tok::Power);
      const bool pos_spread = is(Tok::Multiplicative) && t_[cur_].value == "*";
      if (params && (kw_spread || pos_spread))
        syntax_error("argument unpacking is not allowed in parameter declarations");
      if (kw_spread) {
        ++cur_;
        auto n = make(NodeKind::KwSpread);
        n->x = parse_expression();
        out.push_back(std::move(n));
        if (is(Tok::Comma)) ++cur_;
        if (!is(Tok::CloseParen)) syntax_error("'**' must be applied to the final argument");
        break;
      }
      NodePtr arg;
      if (pos_spread) {
        if (saw_spread) syntax_error("only one '*' argument unpacking is allowed");
        saw_spread = true;
        ++cur_;
        arg = make(NodeKind::Spread);
        arg->x = parse_expression();
      } else {
        arg = parse_expression();
        if (is(Tok::Equals)) {
          ++cur_;
          if (arg->kind != NodeKind::Identifier)
            syntax_error("expected a name before '=' in an argument list");
          auto kw = make(NodeKind::KwArg);
          kw->str = arg->str;
          kw->x = parse_expression();
          arg = std::move(kw);
        }
        if (params) {
          if (arg->kind != NodeKind::Identifier && arg->kind != NodeKind::KwArg)
            syntax_error("expected a parameter name");
          for (const auto& prev : out)
            if (prev->str == arg->str) syntax_error("duplicate parameter name: " + arg->str);
        }
        if (arg->kind == NodeKind::KwArg) {
          saw_keyword = true;
        } else if (saw_keyword) {
          syntax_error(params ? "non-default parameter follows a default one"
                              : "positional arguments must come before keyword arguments");
        } else if (saw_spread) {
          syntax_error("positional arguments must not follow '*' unpacking");
        }
      }
      out.push_back(std::move(arg));
      if (is(Tok::Comma)) ++cur_;
    }
    expect(Tok::CloseParen, ")");
  }

  NodePtr parse_subscript() {
    NodePtr parts[3];
    std::size_t count = 0;
    bool is_slice = false;
    while (!is(Tok::CloseSquare)) {
      if (cur_ >= t_.size()) syntax_error("missing ']'");
      if (count >= 3) syntax_error("a slice takes at most 3 parts");
      if (is(Tok::Colon)) {
        ++count;
        ++cur_;
        is_slice = true;
      } else {
        parts[count++] = parse_expression();
        if (is(Tok::Colon)) {
          ++cur_;
          is_slice = true;
        }
      }
    }
    if (count == 0) syntax_error("expected an index inside '[]'");
    if (is_slice) {
      auto n = make(NodeKind::Slice);
      n->x = std::move(parts[0]);
      n->y = std::move(parts[1]);
      n->z = std::move(parts[2]);
      return n;
    }
    return std::move(parts[0]);
  }

  NodePtr parse_member(NodePtr object) {
    while (is(Tok::Dot) || is(Tok::OpenSquare)) {
      const bool computed = next().type == Tok::OpenSquare;
      NodePtr prop;
      if (computed) {
        prop = parse_subscript();
        expect(Tok::CloseSquare, "]");
      } else {
        prop = parse_primary();
        if (prop->kind != NodeKind::Identifier && prop->kind != NodeKind::IntLit)
          syntax_error("expected a name or integer after '.'");
      }
      auto n = make(NodeKind::Member);
      n->x = std::move(object);
      n->y = std::move(prop);
      n->flag = computed;
      object = std::move(n);
    }
    return object;
  }

  NodePtr parse_primary() {
    DepthGuard g(depth_);
    const Token& tok = next();
    switch (tok.type) {
      case Tok::Number: {
        if (tok.value.find('.') != std::string::npos) {
          auto n = make(NodeKind::FloatLit);
          n->f = std::strtod(tok.value.c_str(), nullptr);
          return n;
        }
        const double v = std::strtod(tok.value.c_str(), nullptr);
        if (v > 9.2e18 || v < -9.2e18) {
          auto n = make(NodeKind::FloatLit);
          n->f = v;
          return n;
        }
        auto n = make(NodeKind::IntLit);
        n->i = std::strtoll(tok.value.c_str(), nullptr, 10);
        return n;
      }
      case Tok::String: {
        auto n = make(NodeKind::StrLit);
        n->str = tok.value;
        while (is(Tok::String)) n->str += next().value;  // adjacent literals concatenate
        return n;
      }
      case Tok::Identifier: {
        auto n = make(NodeKind::Identifier);
        n->str = tok.value;
        return n;
      }
      case Tok::OpenParen: {
        auto e = parse_sequence(false);
        expect(Tok::CloseParen, ")");
        return e;
      }
      case Tok::OpenSquare: {
        auto n = make(NodeKind::ArrayLit);
        while (!is(Tok::CloseSquare)) {
          if (cur_ >= t_.size()) syntax_error("missing ']'");
          n->list.push_back(parse_expression());
          if (is(Tok::Comma)) ++cur_;
        }
        ++cur_;
        return n;
      }
      case Tok::OpenCurly: {
        auto n = make(NodeKind::ObjectLit);
        while (!is(Tok::CloseCurly)) {
          if (cur_ >= t_.size()) syntax_error("missing '}'");
          n->list.push_back(parse_expression());
          expect(Tok::Colon, "':' between key and value");
          n->list2.push_back(parse_expression());
          if (is(Tok::Comma)) ++cur_;
        }
        ++cur_;
        return n;
      }
      default:
        syntax_error("unexpected '" + tok.value + "'");
    }
  }
};

}  // namespace

Program parse_template(std::string_view source) { return Parser(tokenize(source)).run(); }

}  // namespace seam::chat
