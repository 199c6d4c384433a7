// Semantics found by differential testing against @huggingface/jinja 0.5.11
// and Jinja2 3.1 on unseen conversations: Unicode case mapping beyond Latin,
// capitalize on astral characters, numbers outside the int64 range, and
// first/last of an empty list.
// Expected strings follow JavaScript's String.prototype.toUpperCase /
// toLowerCase (Unicode default case mapping, SpecialCasing included) and
// Number.prototype.toString, which is what the reference prints.
#include <gtest/gtest.h>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

std::string render(const char* source, const char* context_json) {
  return render_chat_template(source, nlohmann::ordered_json::parse(context_json));
}

TEST(TemplateUnicodeCase, UpperCoversEveryScriptAndFullMappings) {
  // Latin Extended-B digraphs, Cherokee, Deseret (astral), circled letters,
  // Glagolitic, Georgian Mtavruli, Greek extended; 1:n mappings ß ﬁ ŉ ΐ.
  EXPECT_EQ(render("{{ s|upper }}", R"({"s": "ǆ ꭰ 𐐨 ⓐ ⰰ ა ἀ"})"),
            "Ǆ Ꭰ 𐐀 Ⓐ Ⰰ Ა Ἀ");
  EXPECT_EQ(render("{{ s.upper() }}", R"({"s": "ß ﬁ ŉ ΐ"})"),
            "SS FI ʼN \u0399\u0308\u0301");  // ΐ -> Ι + diaeresis + acute
  // Title-case digraph ǅ upper-cases to Ǆ and lower-cases to ǆ.
  EXPECT_EQ(render("{{ s|upper }}|{{ s|lower }}", R"({"s": "ǅ"})"), "Ǆ|ǆ");
}

TEST(TemplateUnicodeCase, LowerCoversEveryScript) {
  EXPECT_EQ(render("{{ s|lower }}", R"({"s": "Ǆ Ꭰ 𐐀 Ⓐ Ⰰ Ა Ἀ ẞ K Å"})"),
            "ǆ ꭰ 𐐨 ⓐ ⰰ ა ἀ ß k å");
  // Final sigma and the one 1:2 lower mapping (İ -> i + U+0307).
  EXPECT_EQ(render("{{ s.lower() }}", R"({"s": "ΌΣΟΣ İ"})"), "όσος i̇");
}

TEST(TemplateUnicodeCase, CapitalizeLeavesAnAstralFirstCharacter) {
  // The reference upper-cases charAt(0), one UTF-16 unit: half of a surrogate
  // pair has no case, so an astral first letter stays lower case.
  EXPECT_EQ(render("{{ s|capitalize }}|{{ t.capitalize() }}", R"({"s": "𐐨ab", "t": "ǆx"})"),
            "𐐨ab|Ǆx");
  // title() only sees ASCII word starts (the reference's /\b\w/ is ASCII).
  EXPECT_EQ(render("{{ s|title }}", R"({"s": "éa bc ǆd"})"), "éA Bc ǆD");
}

TEST(TemplateNumbers, IntegralValuesBeyondInt64PrintAsJavaScriptIntegers) {
  // 1e20 is an IntegerValue in the reference (Number.isInteger), never "…0.0".
  EXPECT_EQ(render("{{ x }}|{{ x|tojson }}|{{ x|string }}|{{ x is integer }}|{{ x is odd }}",
                   R"({"x": 1e20})"),
            "100000000000000000000|100000000000000000000|100000000000000000000|true|false");
  EXPECT_EQ(render("{{ x }}|{{ x * 2 }}|{{ -x }}", R"({"x": 12345678901234567890})"),
            "12345678901234567000|24691357802469134000|-12345678901234567000");
  EXPECT_EQ(render("{{ x }}", R"({"x": 1e21})"), "1e+21");
  // A float result stays a FloatValue: integral floats print with ".0".
  EXPECT_EQ(render("{{ x * 1.0 }}|{{ x|float }}", R"({"x": 1e20})"),
            "100000000000000000000.0|100000000000000000000.0");
}

TEST(TemplateNumbers, Int64IntegersStayExactUntilArithmeticOverflows) {
  // Deliberate difference from the reference, which parses JSON into doubles
  // and would print 9223372036854776000: an integer that fits int64 is kept
  // exact, as Python/Jinja2 (and the model's training data) keep it.
  EXPECT_EQ(render("{{ x }}|{{ x|tojson }}", R"({"x": 9223372036854775807})"),
            "9223372036854775807|9223372036854775807");
  // Overflowing arithmetic falls back to a JS number, printed as the reference does.
  EXPECT_EQ(render("{{ x + 1 }}|{{ x * 2 }}", R"({"x": 9223372036854775807})"),
            "9223372036854776000|18446744073709552000");
  EXPECT_EQ(render("{{ -x }}|{{ x|abs }}", R"({"x": -9223372036854775808})"),
            "9223372036854776000|9223372036854776000");
}

TEST(TemplateFilters, FirstAndLastOfAnEmptyListAreUndefined) {
  // Both references yield undefined (JS arr[0] / Jinja2's Undefined) instead
  // of failing, so a template may test or skip the result.
  EXPECT_EQ(render("{{ []|first }}|{{ ([]|last) is defined }}|{% set a = l|first %}{{ a is none }}",
                   R"({"l": []})"),
            "|false|false");
  EXPECT_EQ(render("{{ \"s\" not in {\"k\": []|first} }}", "{}"), "true");
}

}  // namespace
}  // namespace seam
