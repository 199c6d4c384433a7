// Text helpers that reproduce JavaScript string semantics on UTF-8 data.
//
// The reference chat-template renderer (@huggingface/jinja) runs on JavaScript
// strings, so whitespace, case mapping, lengths and number formatting follow
// ECMAScript rules, not Python's. Everything here works on UTF-8 and treats
// invalid bytes as single code points so hostile input never reads out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace seam::chat::js {

// Decodes the code point starting at s[i]; advances i past it. Invalid or
// truncated sequences decode as one byte (returned as U+FFFD's stand-in 0xFFFD).
char32_t next_code_point(std::string_view s, std::size_t& i);
using seam::append_utf8;  // core/utf8.h

// ECMAScript WhiteSpace + LineTerminator (what String.prototype.trim and /\s/ use).
bool is_space(char32_t cp);
// Length in bytes of a JS whitespace character starting at s[i], 0 if none.
std::size_t space_at(std::string_view s, std::size_t i);
// Length in bytes of a JS whitespace character ending just before s[end], 0 if none.
std::size_t space_before(std::string_view s, std::size_t end);

std::string_view trim_start(std::string_view s);
std::string_view trim_end(std::string_view s);
std::string_view trim(std::string_view s);

// String.prototype.length: UTF-16 code units.
std::size_t utf16_length(std::string_view s);
// Array.from(s): the string's code points, each as its own UTF-8 string.
std::vector<std::string> code_points(std::string_view s);

std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
// s.replace(/\b\w/g, toUpperCase): ASCII word characters only, as in JS regexps.
std::string title_case(std::string_view s);
// charAt(0).toUpperCase() + slice(1): the rest keeps its case.
std::string capitalize(std::string_view s);

// Number.prototype.toString() / JSON.stringify for a number.
std::string number_to_string(double d);
// parseInt(s, 10) and parseFloat(s); false when the result would be NaN.
bool parse_int(std::string_view s, double& out);
bool parse_float(std::string_view s, double& out);

// JSON.stringify of a string (quotes included); ensure_ascii escapes every
// UTF-16 code unit from U+007F up as \uXXXX, as the reference does.
std::string json_quote(std::string_view s, bool ensure_ascii);

// Python str.replace semantics as the reference implements them: count < 0 means all.
std::string replace(std::string_view s, std::string_view from, std::string_view to,
                    std::int64_t count);

}  // namespace seam::chat::js
