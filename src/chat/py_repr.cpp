#include "chat/py_repr.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include "chat/render_budget.h"
#include "seam/error.h"

namespace seam::chat {
namespace {

// str.isprintable() for one code point: not a control, format, surrogate,
// private-use, unassigned or separator character, except the ASCII space.
bool printable(utf8proc_int32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

void append_hex_escape(std::string& out, unsigned cp) {
  char buf[12];
  if (cp <= 0xFF)
    std::snprintf(buf, sizeof buf, "\\x%02x", cp);
  else if (cp <= 0xFFFF)
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
  else
    std::snprintf(buf, sizeof buf, "\\U%08x", cp);
  out += buf;
}

void repr_string(std::string& out, const std::string& s) {
  charge_bytes(s.size());
  const bool has_single = s.find('\'') != std::string::npos;
  const char quote = has_single && s.find('"') == std::string::npos ? '"' : '\'';
  out += quote;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // not UTF-8: Python's surrogateescape would show the byte
      append_hex_escape(out, *p);
      ++p;
      --left;
      continue;
    }
    if (cp == quote || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < ' ' || cp == 0x7F) {
      append_hex_escape(out, static_cast<unsigned>(cp));
    } else if (cp < 0x7F || printable(cp)) {
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    } else {
      append_hex_escape(out, static_cast<unsigned>(cp));
    }
    p += n;
    left -= n;
  }
  out += quote;
}

// float.__repr__: the shortest digits that read back to the same double, fixed
// notation for 1e-4 <= |x| < 1e16 (always with a fractional part), else
// d.ddde+XX.
void repr_float(std::string& out, double x) {
  if (std::isnan(x)) {
    out += "nan";
    return;
  }
  if (std::isinf(x)) {
    out += x < 0 ? "-inf" : "inf";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // [-]d[.ddd]e[+-]XX
  const std::size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string mant = sci.substr(0, e);
  const bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  if (neg) out += '-';
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
    return;
  }
  if (exp < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exp - 1), '0');
    out += digits;
    return;
  }
  const auto int_len = static_cast<std::size_t>(exp) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out.append(int_len - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, int_len);
    out += '.';
    out.append(digits, int_len);
  }
}

class Repr {
 public:
  std::string out;

  void write(const Value& v) {
    charge(1);
    switch (v.kind) {
      case Kind::Undefined:
        out += "Undefined";
        break;
      case Kind::Null:
        out += "None";
        break;
      case Kind::Bool:
        out += v.b ? "True" : "False";
        break;
      case Kind::Int:
        out += std::to_string(v.i);
        break;
      case Kind::Float:  // big integers too: in data they are floats with an exponent
        repr_float(out, v.f);
        break;
      case Kind::String:
        repr_string(out, v.s);
        break;
      case Kind::Array:
      case Kind::Tuple:
        write_sequence(v);
        break;
      case Kind::Object:
      case Kind::KwArgs:
        write_dict(v, "{", "}", "{...}");
        break;
      case Kind::Namespace:
        write_dict(v, "<Namespace {", "}>", "<Namespace {...}>");
        break;
      case Kind::Function:
        out += "<function>";
        break;
    }
    check_size(static_cast<double>(out.size()));
  }

 private:
  std::vector<const void*> open_;  // the containers being written, outermost first

  bool reenter(const void* p, const char* shown) {
    for (const void* o : open_)
      if (o == p) {
        out += shown;
        return true;
      }
    if (open_.size() >= 512) throw Error(Errc::Template, "Cannot repr: nesting is too deep");
    open_.push_back(p);
    return false;
  }

  void write_sequence(const Value& v) {
    const bool tuple = v.kind == Kind::Tuple;
    if (reenter(v.arr.get(), tuple ? "(...)" : "[...]")) return;
    out += tuple ? '(' : '[';
    const Array& a = *v.arr;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (k) out += ", ";
      write(a[k]);
    }
    if (tuple && a.size() == 1) out += ',';
    out += tuple ? ')' : ']';
    open_.pop_back();
  }

  void write_dict(const Value& v, const char* open, const char* close, const char* inside) {
    if (reenter(v.dict.get(), inside)) return;
    out += open;
    const Dict& d = *v.dict;
    for (std::size_t e = 0; e < d.size(); ++e) {
      if (e) out += ", ";
      const auto& [key, value] = d.items()[e];
      if (d.int_key(e))
        out += key;
      else
        repr_string(out, key);
      out += ": ";
      write(value);
    }
    out += close;
    open_.pop_back();
  }
};

}  // namespace

std::string py_repr(const Value& v) {
  Repr r;
  r.write(v);
  return std::move(r.out);
}

}  // namespace seam::chat
