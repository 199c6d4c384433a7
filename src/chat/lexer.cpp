// Tokenizer for chat templates. It follows @huggingface/jinja's lexer rule by
// rule, including its regex-based preprocessing, because whitespace handling
// decides byte-identical output.
#include <string>

#include "chat/ast.h"
#include "chat/js_text.h"
#include "seam/error.h"

namespace seam::chat {
namespace {

[[noreturn]] void syntax_error(const std::string& msg) {
  throw Error(Errc::Template, "template syntax error: " + msg);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

// Length of a JavaScript line terminator at s[i] (\n, \r, U+2028, U+2029), 0 if none.
std::size_t line_break_at(std::string_view s, std::size_t i) {
  if (s[i] == '\n' || s[i] == '\r') return 1;
  if (i + 2 < s.size() + 0 && s.compare(i, 3, "\xE2\x80\xA8") == 0) return 3;
  if (i + 2 < s.size() + 0 && s.compare(i, 3, "\xE2\x80\xA9") == 0) return 3;
  return 0;
}

// template.replace(/^[ \t]*({[#%-])/gm, "$1")
std::string lstrip_blocks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    if (line_start) {
      std::size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j + 1 < s.size() && s[j] == '{' &&
          (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-'))
        i = j;
      line_start = false;
      continue;
    }
    if (const std::size_t n = line_break_at(s, i)) {
      out.append(s.substr(i, n));
      i += n;
      line_start = true;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// template.replace(/([#%-]})\n/g, "$1")
std::string trim_blocks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 2 < s.size() && (s[i] == '#' || s[i] == '%' || s[i] == '-') && s[i + 1] == '}' &&
        s[i + 2] == '\n') {
      out += s[i];
      out += '}';
      i += 3;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// Removes transformers' `{% generation %}` / `{% endgeneration %}` markers:
// /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/g, honouring the dashes.
std::string strip_generation_tags(std::string_view s) {
  std::string out;
  std::size_t cursor = 0;
  std::size_t search = 0;
  while (true) {
    const std::size_t q = s.find("{%", search);
    if (q == std::string_view::npos) break;
    std::size_t p = q + 2;
    const bool lstrip = p < s.size() && s[p] == '-';
    if (lstrip) ++p;
    while (std::size_t n = js::space_at(s, p)) p += n;
    if (s.compare(p, 3, "end") == 0 && s.compare(p + 3, 10, "generation") == 0) p += 3;
    if (s.compare(p, 10, "generation") != 0) {
      search = q + 1;
      continue;
    }
    p += 10;
    while (std::size_t n = js::space_at(s, p)) p += n;
    const bool rstrip = p < s.size() && s[p] == '-';
    if (rstrip) ++p;
    if (s.compare(p, 2, "%}") != 0) {
      search = q + 1;
      continue;
    }
    p += 2;
    std::size_t ws_start = q;
    while (ws_start > cursor) {
      const std::size_t n = js::space_before(s, ws_start);
      if (n == 0 || ws_start - n < cursor) break;
      ws_start -= n;
    }
    std::size_t ws_end = p;
    while (std::size_t n = js::space_at(s, ws_end)) ws_end += n;
    out.append(s.substr(cursor, ws_start - cursor));
    if (!lstrip) out.append(s.substr(ws_start, q - ws_start));
    if (!rstrip) out.append(s.substr(p, ws_end - p));
    cursor = ws_end;
    search = ws_end;
  }
  out.append(s.substr(cursor));
  return out;
}

struct MappedToken {
  std::string_view seq;
  Tok type;
};

constexpr MappedToken kMapping[] = {
    {"{%", Tok::OpenStatement},  {"%}", Tok::CloseStatement},
    {"{{", Tok::OpenExpression}, {"}}", Tok::CloseExpression},
    {"(", Tok::OpenParen},       {")", Tok::CloseParen},
    {"{", Tok::OpenCurly},       {"}", Tok::CloseCurly},
    {"[", Tok::OpenSquare},      {"]", Tok::CloseSquare},
    {",", Tok::Comma},           {".", Tok::Dot},
    {":", Tok::Colon},           {"|", Tok::Pipe},
    {"<=", Tok::Comparison},     {">=", Tok::Comparison},
    {"==", Tok::Comparison},     {"!=", Tok::Comparison},
    {"<", Tok::Comparison},      {">", Tok::Comparison},
    {"+", Tok::Additive},        {"-", Tok::Additive},
    {"~", Tok::Additive},        {"**", Tok::Power},
    {"*", Tok::Multiplicative},  {"//", Tok::Multiplicative},
    {"/", Tok::Multiplicative},  {"%", Tok::Multiplicative},
    {"=", Tok::Equals},
};

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  std::vector<Token> run() {
    const std::string_view s = src_;
    while (pos_ < s.size()) {
      const bool after_tag = tokens_.empty() || last() == Tok::CloseStatement ||
                             last() == Tok::CloseExpression || last() == Tok::Comment;
      if (after_tag) {
        const std::size_t start = pos_;
        while (pos_ < s.size() &&
               !(s[pos_] == '{' && pos_ + 1 < s.size() &&
                 (s[pos_ + 1] == '%' || s[pos_ + 1] == '{' || s[pos_ + 1] == '#')))
          ++pos_;
        if (pos_ > start) {
          tokens_.push_back({Tok::Text, std::string(s.substr(start, pos_ - start))});
          continue;
        }
      }
      if (at("{#")) {
        lex_comment();
        continue;
      }
      if (at("{%-")) {
        strip_trailing_whitespace();
        tokens_.push_back({Tok::OpenStatement, "{%"});
        pos_ += 3;
        continue;
      }
      if (at("{{-")) {
        strip_trailing_whitespace();
        tokens_.push_back({Tok::OpenExpression, "{{"});
        curly_depth_ = 0;
        pos_ += 3;
        continue;
      }
      consume_whitespace();
      if (at("-%}")) {
        tokens_.push_back({Tok::CloseStatement, "%}"});
        pos_ += 3;
        skip_leading_whitespace();
        continue;
      }
      if (at("-}}")) {
        tokens_.push_back({Tok::CloseExpression, "}}"});
        pos_ += 3;
        skip_leading_whitespace();
        continue;
      }
      if (pos_ >= s.size()) break;
      const char c = s[pos_];
      if ((c == '-' || c == '+') && lex_sign(c)) continue;
      if (lex_mapped()) continue;
      if (c == '\'' || c == '"') {
        ++pos_;
        std::string str = consume_string(c);
        tokens_.push_back({Tok::String, std::move(str)});
        ++pos_;
        continue;
      }
      if (is_digit(c)) {
        std::string num = consume_digits();
        if (last_is_not(Tok::Dot) && pos_ + 1 < s.size() && s[pos_] == '.' &&
            is_digit(s[pos_ + 1])) {
          ++pos_;
          num += '.';
          num += consume_digits();
        }
        tokens_.push_back({Tok::Number, std::move(num)});
        continue;
      }
      if (is_word(c)) {
        std::string word;
        while (pos_ < s.size() && is_word(s[pos_])) {
          word += s[pos_++];
          check_not_at_end();
        }
        tokens_.push_back({Tok::Identifier, std::move(word)});
        continue;
      }
      syntax_error(std::string("unexpected character '") + c + "'");
    }
    return std::move(tokens_);
  }

 private:
  std::string src_;
  std::size_t pos_ = 0;
  int curly_depth_ = 0;
  std::vector<Token> tokens_;

  Tok last() const { return tokens_.back().type; }
  bool last_is_not(Tok t) const { return tokens_.empty() || last() != t; }
  bool at(std::string_view seq) const { return src_.compare(pos_, seq.size(), seq) == 0; }

  // The reference reports "Unexpected end of input" when a token runs to the very end.
  void check_not_at_end() const {
    if (pos_ >= src_.size()) syntax_error("unexpected end of input");
  }

  void strip_trailing_whitespace() {
    if (tokens_.empty() || last() != Tok::Text) return;
    std::string& text = tokens_.back().value;
    text.resize(js::trim_end(text).size());
    if (text.empty()) tokens_.pop_back();
  }

  void skip_leading_whitespace() {
    while (std::size_t n = js::space_at(src_, pos_)) pos_ += n;
  }

  void consume_whitespace() {
    while (std::size_t n = js::space_at(src_, pos_)) {
      pos_ += n;
      check_not_at_end();
    }
  }

  std::string consume_digits() {
    std::string num;
    while (pos_ < src_.size() && is_digit(src_[pos_])) {
      num += src_[pos_++];
      check_not_at_end();
    }
    return num;
  }

  void lex_comment() {
    pos_ += 2;
    const bool strip_before = pos_ < src_.size() && src_[pos_] == '-';
    if (strip_before) ++pos_;
    std::string comment;
    while (!(pos_ + 1 < src_.size() && src_[pos_] == '#' && src_[pos_ + 1] == '}')) {
      if (pos_ + 2 >= src_.size()) syntax_error("missing end of comment tag");
      comment += src_[pos_++];
    }
    const bool strip_after = !comment.empty() && comment.back() == '-';
    if (strip_after) comment.pop_back();
    if (strip_before) strip_trailing_whitespace();
    tokens_.push_back({Tok::Comment, std::move(comment)});
    pos_ += 2;
    if (strip_after) skip_leading_whitespace();
  }

  // A + or - that is not a binary operator: a signed number literal or a unary operator.
  bool lex_sign(char c) {
    if (tokens_.empty() || last() == Tok::Text)
      syntax_error(std::string("unexpected character '") + c + "'");
    switch (last()) {
      case Tok::Identifier:
      case Tok::Number:
      case Tok::String:
      case Tok::CloseParen:
      case Tok::CloseSquare:
        return false;
      default:
        break;
    }
    ++pos_;
    std::string num = consume_digits();
    if (!num.empty() && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      ++pos_;
      num += '.';
      num += consume_digits();
    }
    if (num.empty()) {
      tokens_.push_back({Tok::Unary, std::string(1, c)});
    } else {
      tokens_.push_back({Tok::Number, std::string(1, c) + num});
    }
    return true;
  }

  bool lex_mapped() {
    for (const auto& m : kMapping) {
      if (m.type == Tok::CloseExpression && curly_depth_ > 0) continue;
      if (!at(m.seq)) continue;
      tokens_.push_back({m.type, std::string(m.seq)});
      if (m.type == Tok::OpenExpression) {
        curly_depth_ = 0;
      } else if (m.type == Tok::OpenCurly) {
        ++curly_depth_;
      } else if (m.type == Tok::CloseCurly) {
        --curly_depth_;
      }
      pos_ += m.seq.size();
      return true;
    }
    return false;
  }

  unsigned hex_escape(std::size_t len) {
    if (pos_ + len > src_.size()) syntax_error("invalid hexadecimal escape sequence");
    unsigned v = 0;
    for (std::size_t k = 0; k < len; ++k) {
      const char h = src_[pos_ + k];
      v <<= 4;
      if (is_digit(h))
        v |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<unsigned>(h - 'A' + 10);
      else
        syntax_error("invalid hexadecimal escape sequence");
    }
    pos_ += len;
    return v;
  }

  std::string consume_string(char quote) {
    std::string out;
    while (pos_ < src_.size() && src_[pos_] != quote) {
      if (src_[pos_] == '\\') {
        ++pos_;
        check_not_at_end();
        const char e = src_[pos_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'v':
            out += '\v';
            break;
          case '\'':
            out += '\'';
            break;
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case 'x':
            js::append_utf8(out, hex_escape(2));
            break;
          case 'u': {
            char32_t cp = hex_escape(4);
            // A \uD8xx\uDCxx pair is one astral character in a JavaScript string.
            if (cp >= 0xD800 && cp < 0xDC00 && at("\\u")) {
              const std::size_t save = pos_;
              pos_ += 2;
              const unsigned lo = hex_escape(4);
              if (lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              } else {
                pos_ = save;
              }
            }
            js::append_utf8(out, cp);
            break;
          }
          // Below: what Python's string literals (and so Jinja2) also read, where the
          // reference stops with an error.
          case '\n':  // a backslash at the end of a line joins the lines
            break;
          case '\r':
            if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
            break;
          case 'a':
            out += '\a';
            break;
          case 'U': {
            const unsigned cp = hex_escape(8);
            if (cp > 0x10FFFF) syntax_error("invalid \\U escape: beyond U+10FFFF");
            js::append_utf8(out, cp);
            break;
          }
          case 'N':
            syntax_error("named escapes (\\N{...}) are not supported");
          default:
            if (e >= '0' && e <= '7') {  // up to three octal digits
              unsigned cp = static_cast<unsigned>(e - '0');
              for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7';
                   ++k)
                cp = cp * 8 + static_cast<unsigned>(src_[pos_++] - '0');
              js::append_utf8(out, cp);
            } else {  // an unknown escape stays as written
              out += '\\';
              out += e;
            }
        }
        continue;
      }
      out += src_[pos_++];
      check_not_at_end();
    }
    if (pos_ >= src_.size()) syntax_error("unterminated string literal");
    return out;
  }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  std::string s(source);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  s = lstrip_blocks(s);
  s = trim_blocks(s);
  s = strip_generation_tags(s);
  return Lexer(std::move(s)).run();
}

}  // namespace seam::chat
