// Python's repr() of a template value: what Jinja2 (transformers' renderer)
// writes for `value|string` on a dict and `value|trim` on a list, where the
// reference implementation (@huggingface/jinja) has no such filter and fails.
// Some real templates print their tools this way (Apriel's `tool|string`), so
// the model was trained on exactly these bytes.
#pragma once

#include <string>

#include "chat/value.h"

namespace seam::chat {

// repr(v) as CPython 3 writes it: {'k': [1, 2.5, True, None]}, strings quoted
// and escaped by its rules, a container inside itself as [...] or {...}. Which
// characters are printable comes from utf8proc's Unicode tables (15.0 in Debian
// bookworm, as in Python 3.12; Python 3.11 escapes the 15.0 additions).
std::string py_repr(const Value& v);

}  // namespace seam::chat
