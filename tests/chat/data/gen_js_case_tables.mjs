// Regenerates src/chat/js_case_tables.cpp: node tests/chat/data/gen_js_case_tables.mjs > src/chat/js_case_tables.cpp
// (then clang-format it). The tables are the case mappings of node's ICU, which @huggingface/jinja uses.
function runs(map) {
  // map: array of [cp, delta]; group into runs with constant delta and stride 1 or 2
  const out = [];
  let i = 0;
  while (i < map.length) {
    const [c0, d0] = map[i];
    let best = { last: c0, stride: 1, n: 1 };
    for (const stride of [1, 2]) {
      let j = i, n = 1;
      while (j + 1 < map.length && map[j + 1][0] === map[j][0] + stride && map[j + 1][1] === d0) { j++; n++; }
      if (n > best.n) best = { last: map[j][0], stride, n };
    }
    out.push([c0, best.last, d0, best.stride]);
    i += best.n;
  }
  return out;
}
const up = [], lo = [], upSpecial = [];
for (let c = 0; c < 0x110000; c++) {
  if (c >= 0xd800 && c < 0xe000) continue;
  const s = String.fromCodePoint(c);
  const u = [...s.toUpperCase()], l = [...s.toLowerCase()];
  if (u.length === 1) { const d = u[0].codePointAt(0) - c; if (d) up.push([c, d]); }
  else upSpecial.push([c, u.map(x => x.codePointAt(0))]);
  if (l.length === 1) { const d = l[0].codePointAt(0) - c; if (d) lo.push([c, d]); }
}
const hex = (n) => "0x" + n.toString(16).toUpperCase();
const fmt = (rs) => rs.map(([a, b, d, s]) => `{${hex(a)}, ${hex(b)}, ${d}, ${s}}`).join(",\n    ");
const esc = (cps) => '"' + Buffer.from(String.fromCodePoint(...cps), "utf8").toString("hex").replace(/(..)/g, "\\x$1") + '"';
console.log(`// Generated from node ${process.versions.node} (Unicode ${process.versions.unicode}): every code point whose
// String.prototype.toUpperCase / toLowerCase differs from itself. Do not edit by hand.
#include "chat/js_case_tables.h"

namespace seam::chat::js {

const CaseRun kUpperRuns[] = {
    ${fmt(runs(up))}};
const std::size_t kUpperRunCount = sizeof kUpperRuns / sizeof kUpperRuns[0];

const CaseRun kLowerRuns[] = {
    ${fmt(runs(lo))}};
const std::size_t kLowerRunCount = sizeof kLowerRuns / sizeof kLowerRuns[0];

const SpecialUpper kUpperSpecial[] = {
    ${upSpecial.map(([c, u]) => `{${hex(c)}, ${esc(u)}}`).join(",\n    ")}};
const std::size_t kUpperSpecialCount = sizeof kUpperSpecial / sizeof kUpperSpecial[0];

}  // namespace seam::chat::js`);
