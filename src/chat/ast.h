// Tokens and syntax tree of the chat-template language (the Jinja subset
// that @huggingface/jinja accepts, with its precedence rules).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace seam::chat {

enum class Tok : std::uint8_t {
  Text,
  Number,
  String,
  Identifier,
  Equals,
  OpenParen,
  CloseParen,
  OpenStatement,
  CloseStatement,
  OpenExpression,
  CloseExpression,
  OpenSquare,
  CloseSquare,
  OpenCurly,
  CloseCurly,
  Comma,
  Dot,
  Colon,
  Pipe,
  Additive,        // + - ~
  Multiplicative,  // * / // %
  Power,           // **
  Comparison,      // < > <= >= == !=
  Unary,           // a lone + or - in prefix position
  Comment,
};

struct Token {
  Tok type;
  std::string value;
};

// Template source -> tokens, after the reference's preprocessing (one trailing
// newline dropped, lstrip_blocks, trim_blocks, `{% generation %}` tags removed).
std::vector<Token> tokenize(std::string_view source);

enum class NodeKind : std::uint8_t {
  // statements
  Text,
  If,
  For,
  Break,
  Continue,
  Set,
  Macro,
  Comment,
  CallBlock,
  FilterBlock,
  // expressions
  IntLit,
  FloatLit,
  StrLit,
  ArrayLit,
  TupleLit,
  ObjectLit,
  Identifier,
  Member,
  Call,
  Unary,
  Binary,
  Filter,
  Test,
  Select,
  Ternary,
  Slice,
  KwArg,
  Spread,
  KwSpread,
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

// One node shape for every kind; which fields mean what:
//   Text/StrLit: str              IntLit: i          FloatLit: f
//   Identifier: str               ArrayLit/TupleLit: list
//   ObjectLit: list (keys), list2 (values)
//   Member: x object, y property, flag = computed ([...])
//   Slice: x start, y stop, z step (each may be null)
//   Call: x callee, list args      Unary/Binary: str operator, x (left), y (right)
//   Filter: x operand, y filter (Identifier or Call)
//   Test: x operand, str test name, flag = negated
//   Select: x value, y condition   Ternary: x condition, y if true, z if false
//   KwArg: str name, x value       Spread/KwSpread: x
//   If: x test, list body, list2 else      For: x target, y iterable, list body, list2 else
//   Set: x target, y value (null for a block set), list body
//   Macro: str name, list params, list2 body
//   CallBlock: x call, list caller params, list2 body      FilterBlock: x filter, list body
struct Node {
  NodeKind kind;
  std::string str;
  std::int64_t i = 0;
  double f = 0;
  bool flag = false;
  NodePtr x, y, z;
  NodeList list, list2;

  explicit Node(NodeKind k) : kind(k) {}
};

struct Program {
  NodeList body;
};

// Throws seam::Error(Errc::Template) with the reason when the source does not parse.
Program parse_template(std::string_view source);

}  // namespace seam::chat
