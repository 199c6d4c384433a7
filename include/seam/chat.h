// seam chat templates: render a model's Jinja chat template into a prompt.
//
// The renderer reproduces @huggingface/jinja (the renderer transformers.js
// uses) byte for byte, with transformers' settings: trim_blocks and
// lstrip_blocks on, one trailing newline of the template dropped, and the
// globals raise_exception, strftime_now, namespace and range.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seam {

// A wall-clock instant without a time zone, as strftime_now sees it.
struct TemplateTime {
  int year = 1970, month = 1, day = 1;  // month 1..12, day 1..31
  int hour = 0, minute = 0, second = 0;
};

// Parses "YYYY-MM-DD HH:MM:SS"; throws Error(InvalidArgument) on anything else.
TemplateTime parse_template_time(std::string_view text);

struct TemplateOptions {
  // The clock strftime_now formats. Unset: the local time when rendering.
  // Tests pin it so renders are reproducible.
  std::optional<TemplateTime> now{};
};

// Renders `source` with the variables of `context` (a JSON object: each key is
// a top-level variable; JSON null is `none`, an absent key is undefined).
// Throws Error(Errc::Template) when the template does not parse or fails while
// rendering; when the template calls raise_exception(msg) the message is
// exactly msg.
std::string render_chat_template(std::string_view source, const nlohmann::ordered_json& context,
                                 const TemplateOptions& opts = {});

// Checks that `source` parses; throws Error(Errc::Template) with the reason if not.
void validate_chat_template(std::string_view source);

// Built-in templates for model files that carry none: "chatml", "llama3", "gemma".
// Returns nullopt for an unknown name.
std::optional<std::string_view> builtin_chat_template(std::string_view name);
std::vector<std::string_view> builtin_chat_template_names();

}  // namespace seam
