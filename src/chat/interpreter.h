// Tree-walking interpreter for parsed chat templates.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "chat/ast.h"
#include "chat/value.h"
#include "seam/chat.h"

namespace seam::chat {

// A variable scope. Loops, macro calls and call blocks open child scopes;
// `if` does not, so a `set` inside an `if` is seen after it (as in Jinja).
struct Env {
  std::shared_ptr<Env> parent;
  std::unordered_map<std::string, Value> vars;

  explicit Env(std::shared_ptr<Env> p = nullptr) : parent(std::move(p)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars[name] = std::move(v); }
};
using EnvPtr = std::shared_ptr<Env>;

// Renders a parsed program against a JSON context object.
std::string render_program(const Program& program, const nlohmann::ordered_json& context,
                           const TemplateOptions& opts);

}  // namespace seam::chat
