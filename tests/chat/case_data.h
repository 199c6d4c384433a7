// Loads shared/templates (templates.json, fixtures.json, cases.jsonl) and
// builds each case's template context the way the README prescribes.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam::test {

inline std::string templates_dir() { return std::string(SEAM_SHARED_DIR) + "/templates"; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TemplateCase {
  std::string template_name;
  std::string fixture;
  bool expect_error = false;
  std::string expected;    // output, or the error message
  std::string error_kind;  // "raise_exception" or "runtime" when expect_error
};

struct TemplateData {
  std::map<std::string, nlohmann::ordered_json> templates;  // by name
  std::map<std::string, nlohmann::ordered_json> fixtures;   // by id
  std::vector<TemplateCase> cases;
  std::string clock;  // the pinned strftime_now instant
};

inline TemplateData load_template_data() {
  TemplateData d;
  const std::string dir = templates_dir();
  const auto tj = nlohmann::ordered_json::parse(read_file(dir + "/templates.json"));
  for (const auto& t : tj.at("templates")) d.templates[t.at("name").get<std::string>()] = t;
  const auto fj = nlohmann::ordered_json::parse(read_file(dir + "/fixtures.json"));
  d.clock = fj.at("strftime_now").get<std::string>();
  for (const auto& f : fj.at("fixtures")) d.fixtures[f.at("id").get<std::string>()] = f;
  std::istringstream lines(read_file(dir + "/cases.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto c = nlohmann::ordered_json::parse(line);
    TemplateCase tc;
    tc.template_name = c.at("template").get<std::string>();
    tc.fixture = c.at("fixture").get<std::string>();
    if (c.contains("expected")) {
      tc.expected = c.at("expected").get<std::string>();
    } else {
      tc.expect_error = true;
      tc.expected = c.at("error").get<std::string>();
      tc.error_kind = c.at("error_kind").get<std::string>();
    }
    d.cases.push_back(std::move(tc));
  }
  return d;
}

// The context of README "How a case is rendered": messages, tools/documents
// (null when absent), add_generation_prompt, special tokens (left undefined
// when null), then the fixture's kwargs.
inline nlohmann::ordered_json build_context(const nlohmann::ordered_json& tmpl,
                                            const nlohmann::ordered_json& fixture) {
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = fixture.at("messages");
  ctx["tools"] = fixture.contains("tools") ? fixture.at("tools") : nlohmann::ordered_json();
  ctx["documents"] =
      fixture.contains("documents") ? fixture.at("documents") : nlohmann::ordered_json();
  ctx["add_generation_prompt"] = fixture.at("add_generation_prompt");
  for (const char* tok : {"bos_token", "eos_token"}) {
    const auto& v = fixture.contains(tok) ? fixture.at(tok) : tmpl.at(tok);
    if (!v.is_null()) ctx[tok] = v;
  }
  if (fixture.contains("kwargs"))
    for (const auto& [k, v] : fixture.at("kwargs").items()) ctx[k] = v;
  return ctx;
}

// The kind of a runtime error, from its message: the reference renderer's
// messages (@huggingface/jinja) name the failed operation and the offending
// type ("Expected iterable or object type in for loop: got NullValue",
// "Unknown StringValue filter: items"), and seam's follow them. Seam may also
// name the operator of an arithmetic on null/undefined ("Cannot perform
// operation + on null values"), which the reference leaves out: that word is
// dropped before comparing.
inline std::string runtime_error_kind(const std::string& msg) {
  const std::string op = "Cannot perform operation ";
  if (msg.rfind(op, 0) == 0) {
    const std::size_t on = msg.find(" on ", op.size() - 1);
    if (on != std::string::npos) return "Cannot perform operation" + msg.substr(on);
  }
  return msg;
}

// Whether the reference failed at a construct that Jinja2 accepts and seam
// therefore renders as Jinja2 does (jinja2_behaviour_test.cpp): in a case where
// both references fail, seam then fails later, with another message.
inline bool reference_refused_a_jinja2_construct(const std::string& msg) {
  static const char* const kPrefixes[] = {
      "Cannot access property with non-string",
      "Expected iterable or object type in for loop: got UndefinedValue",
      "Expected iterable or object type in for loop: got StringValue",
      "Cannot perform operation ~ on",
      "Unknown ArrayValue filter: reject",
      "Unknown ArrayValue filter: select",
      "Unknown ArrayValue filter: trim",
      "Unknown ObjectValue filter: string",
      "Unknown operator \"*\" between",
      "Unknown operator \"<\" between StringValue and StringValue",
      "Unknown operator \">\" between StringValue and StringValue",
      "Unknown operator \"<=\" between StringValue and StringValue",
      "Unknown operator \">=\" between StringValue and StringValue",
      "Unexpected escaped character",
      "Cannot perform operation in on",  // `none in [...]`, `undefined in {...}`
      "Cannot perform operation not in on",
      "Cannot perform operation on null values",
      "Cannot apply filter \"string\" to type: UndefinedValue",
      "Cannot apply filter \"trim\" to type: UndefinedValue",
      "Cannot apply filter \"string\" to type: NamespaceValue",
      "Object keys must be strings",
      "Cannot call something that is not a function: got ObjectValue",
      "Cannot unpack non-iterable type: TupleValue",
  };
  for (const char* p : kPrefixes)
    if (msg.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace seam::test
