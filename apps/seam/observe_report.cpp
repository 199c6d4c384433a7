#include "observe_report.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "seam/error.h"

namespace seam::cli {

namespace {

using json = nlohmann::ordered_json;

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// Rounds to `digits` significant digits: the report's numbers need no more.
double sig(double x, int digits) {
  if (!std::isfinite(x) || x == 0) return x;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

// Length of the longest prefix of `s` that does not end inside a UTF-8 character.
std::size_t complete_utf8(std::string_view s) {
  std::size_t i = s.size();
  for (std::size_t back = 0; back < 4 && i > 0; ++back) {
    const auto c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) != 0x80) {  // a lead byte or ASCII: is its sequence complete?
      const std::size_t need = c < 0x80         ? 1
                               : (c >> 5) == 6  ? 2
                               : (c >> 4) == 14 ? 3
                               : (c >> 3) == 30 ? 4
                                                : 1;
      return back + 1 >= need ? s.size() : i - 1;
    }
    --i;
  }
  return s.size();  // stray continuation bytes: nothing to wait for
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

json event_json(const ObserveEvent& ev) {
  return std::visit(
      [](const auto& e) -> json {
        using T = std::decay_t<decltype(e)>;
        json j;
        j["v"] = 1;
        if constexpr (std::is_same_v<T, TokenEvent>) {
          j["type"] = "token";
          j["i"] = e.i;
          j["id"] = e.id;
          j["piece"] = e.piece;
          j["offset"] = e.offset;
          j["surprisal_bits"] = num(e.surprisal_bits);
          j["entropy_bits"] = num(e.entropy_bits);
          j["rank"] = e.predicted ? json(e.rank) : json(nullptr);
          json top = json::array();
          for (const TokenAlt& a : e.top)
            top.push_back({{"id", a.id}, {"piece", a.piece}, {"p", a.p}});
          j["top"] = std::move(top);
          j["mean"] = num(e.mean);
          j["std"] = num(e.std);
          j["z"] = num(e.z);
          if (std::isfinite(e.kl_bits)) {  // with --compare
            j["kl_bits"] = e.kl_bits;
            j["xent_bits"] = num(e.xent_bits);
            j["binoculars"] = num(e.binoculars);
          }
        } else if constexpr (std::is_same_v<T, TriggerEvent>) {
          j["type"] = "trigger";
          j["i"] = e.i;
          j["z"] = num(e.z);
          j["span"] = e.span;
        } else if constexpr (std::is_same_v<T, InterjectionEvent>) {
          j["type"] = "interjection";
          j["i"] = e.i;
          j["text"] = e.text;
          j["tokens"] = e.tokens;
          j["duplicate"] = e.duplicate;
        } else if constexpr (std::is_same_v<T, RollEvent>) {
          j["type"] = "roll";
          j["i"] = e.i;
          j["dropped"] = e.dropped;
          j["kept"] = e.kept;
        } else {
          j["type"] = "summary";
          j["tokens"] = e.tokens;
          j["scored"] = e.scored;
          j["bytes"] = e.bytes;
          j["mean_surprisal_bits"] = num(e.mean_surprisal_bits);
          j["perplexity"] = num(e.perplexity);
          j["bits_per_byte"] = num(e.bits_per_byte);
          j["words"] = e.words;
          j["mean_word_surprisal_bits"] = num(e.mean_word_surprisal_bits);
          j["triggers"] = e.triggers;
          j["interjections"] = e.interjections;
          j["rolls"] = e.rolls;
          j["tokens_per_s"] = num(e.tokens_per_s);
          if (std::isfinite(e.mean_kl_bits)) {  // with --compare
            j["mean_kl_bits"] = e.mean_kl_bits;
            j["mean_kl_stderr_bits"] = num(e.mean_kl_stderr_bits);
            j["binoculars"] = num(e.binoculars);
          }
        }
        return j;
      },
      ev);
}

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ------------------------------------------------------------ terminal view

int terminal_colors() {
  const char* no = std::getenv("NO_COLOR");
  if (no && *no) return 0;
  const char* ct = std::getenv("COLORTERM");
  const char* term = std::getenv("TERM");
  if ((ct && *ct) || (term && std::string_view(term).find("256") != std::string_view::npos))
    return 256;
  if (term && std::string_view(term) == "dumb") return 0;
  return 16;
}

TerminalView::TerminalView(std::FILE* out, int colors, bool tty)
    : out_(out), colors_(colors), tty_(tty) {
  winsize ws{};
  if (tty && ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 2) rows_ = ws.ws_row;
  if (rows_) {
    // Make room for the status line, then keep the text above it.
    std::fprintf(out_, "\n\033[1A\0337\033[1;%dr\0338", rows_ - 1);
  }
}

TerminalView::~TerminalView() {
  if (rows_) std::fprintf(out_, "\0337\033[%d;1H\033[2K\0338\033[r", rows_);
  if (colors_) std::fputs("\033[0m", out_);
  if (tty_) std::fputc('\n', out_);
  std::fflush(out_);
}

void TerminalView::show(const ObserveEvent& ev) {
  if (const auto* t = std::get_if<TokenEvent>(&ev)) {
    std::string bytes = carry_ + t->piece;
    const std::size_t n = complete_utf8(bytes);
    carry_ = bytes.substr(n);
    bytes.resize(n);
    for (char& c : bytes)  // the observed text must not drive the terminal
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) c = '?';
    if (colors_ && t->predicted) {
      const double s = std::isnan(t->surprisal_bits) ? 99.0 : t->surprisal_bits;
      if (colors_ == 256) {
        static const int ramp[] = {28, 34, 70, 106, 142, 178, 214, 208, 202, 196, 160};
        const int k = static_cast<int>(std::clamp(s / 1.5, 0.0, 10.0));
        std::fprintf(out_, "\033[38;5;%dm%s\033[0m", ramp[k], bytes.c_str());
      } else {
        const int c = s < 3 ? 32 : s < 7 ? 33 : s < 11 ? 31 : 91;
        std::fprintf(out_, "\033[%dm%s\033[0m", c, bytes.c_str());
      }
    } else {
      std::fputs(bytes.c_str(), out_);
    }
  } else if (const auto* tr = std::get_if<TriggerEvent>(&ev)) {
    // A marker after the token that fired; plain text stays the input itself.
    if (colors_) {
      std::fprintf(out_, "\033[1;7;31m!\033[0m");
    } else if (tty_) {
      std::fputs("[!]", out_);
    }
    (void)tr;
  } else if (const auto* ij = std::get_if<InterjectionEvent>(&ev)) {
    if (ij->duplicate) return;
    std::string text = ij->text;
    for (char& c : text)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    if (colors_) {
      std::fprintf(out_, "\n\033[3;36m  >> %s\033[0m\n", text.c_str());
    } else {
      std::fprintf(out_, "\n  >> %s\n", text.c_str());
    }
  } else if (const auto* r = std::get_if<RollEvent>(&ev)) {
    (void)r;
  }
}

void TerminalView::status(const SummaryEvent& s, double z, bool force) {
  if (!rows_) return;
  const double t = now_s();
  if (!force && t - last_draw_ < 0.05) return;
  last_draw_ = t;
  std::fprintf(out_,
               "\0337\033[%d;1H\033[2K%s%llu tokens | %.0f tok/s | mean %.2f bits | z %+.2f | "
               "triggers %llu | interjections %llu%s\0338",
               rows_, colors_ ? "\033[7m" : "", static_cast<unsigned long long>(s.tokens),
               s.tokens_per_s, s.mean_surprisal_bits, std::isfinite(z) ? z : 0.0,
               static_cast<unsigned long long>(s.triggers),
               static_cast<unsigned long long>(s.interjections), colors_ ? "\033[0m" : "");
  std::fflush(out_);
}

// -------------------------------------------------------------- HTML report

void HtmlReport::add(const ObserveEvent& ev) {
  if (const auto* t = std::get_if<TokenEvent>(&ev)) {
    nlohmann::json top = nlohmann::json::array();
    for (const TokenAlt& a : t->top) {
      top.push_back({a.id, sig(a.p, 3)});
      const std::string key = std::to_string(a.id);
      if (!vocab_.contains(key)) vocab_[key] = a.piece;
    }
    if (t->predicted) {
      tokens_.push_back({t->piece, sig(t->surprisal_bits, 4), sig(t->entropy_bits, 3), t->rank,
                         sig(t->z, 3), std::move(top)});
    } else {
      tokens_.push_back({t->piece, nullptr, nullptr, nullptr, nullptr, std::move(top)});
    }
  } else if (const auto* tr = std::get_if<TriggerEvent>(&ev)) {
    triggers_.push_back({tr->i, sig(tr->z, 3)});
  } else if (const auto* ij = std::get_if<InterjectionEvent>(&ev)) {
    interjections_.push_back({ij->i, ij->text, ij->duplicate});
  } else if (const auto* r = std::get_if<RollEvent>(&ev)) {
    rolls_.push_back({r->i, r->dropped, r->kept});
  } else if (const auto* s = std::get_if<SummaryEvent>(&ev)) {
    summary_ = nlohmann::json::parse(dump_json(event_json(*s)));
  }
}

namespace {

const char* kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
body{font:14px/1.5 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:8px 16px;background:#fff;border-bottom:1px solid #ddd}
h1{font-size:16px;margin:0 0 4px}
#sum{color:#555}
main{display:flex;gap:16px;padding:16px}
#text{flex:3;white-space:pre-wrap;font:13px/1.7 ui-monospace,monospace;background:#fff;padding:12px;border:1px solid #ddd;word-break:break-word}
aside{flex:1;min-width:220px}
.t{border-radius:2px;cursor:default}
.t:focus,.t:hover{outline:2px solid #333}
.t.trig{box-shadow:inset 0 -3px 0 #c00}
.ij{display:block;margin:4px 0 4px 24px;padding:2px 8px;border-left:3px solid #36c;color:#235;font:italic 13px system-ui,sans-serif;white-space:normal}
.ij.dup{opacity:.45}
#tip{position:fixed;display:none;background:#fff;border:1px solid #888;padding:6px 8px;font:12px ui-monospace,monospace;box-shadow:0 2px 6px #0003;pointer-events:none;z-index:9}
#plot{width:100%;height:140px;background:#fff;border:1px solid #ddd;display:block}
#plotwrap{padding:0 16px}
li{margin-bottom:6px}
</style></head><body>
<header><h1>@TITLE@</h1><div id="sum"></div></header>
<div id="plotwrap"><svg id="plot" role="img" aria-label="surprisal over the text"></svg></div>
<main><div id="text"></div><aside><h2 style="font-size:14px">Triggers and interjections</h2><ol id="list"></ol></aside></main>
<div id="tip" role="tooltip"></div>
<script id="data" type="application/json">@DATA@</script>
<script>
"use strict";
(function(){
const D=JSON.parse(document.getElementById("data").textContent);
const T=D.tokens,V=D.vocab,S=D.summary;
const esc=s=>s.replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"})[c]);
const color=s=>s===null?"transparent":"hsl("+(120-Math.min(s,12)/12*120).toFixed(0)+",85%,"+(88-Math.min(s,12)/12*18).toFixed(0)+"%)";
const trig=new Set(D.triggers.map(t=>t[0]));
const ijAt=new Map();
D.interjections.forEach(j=>{if(!ijAt.has(j[0]))ijAt.set(j[0],[]);ijAt.get(j[0]).push(j);});
const parts=[];
for(let i=0;i<T.length;i++){
  const t=T[i];
  parts.push('<span class="t'+(trig.has(i)?' trig':'')+'" tabindex="0" data-i="'+i+'" style="background:'+color(t[1])+'">'+esc(t[0])+'</span>');
  const js=ijAt.get(i);
  if(js)js.forEach(j=>parts.push('<span class="ij'+(j[2]?' dup':'')+'" data-ij="'+i+'">'+esc(j[1])+(j[2]?' (duplicate)':'')+'</span>'));
}
const text=document.getElementById("text");
text.innerHTML=parts.join("");
const f=(x,d)=>x===null||x===undefined?"-":Number(x).toFixed(d);
document.getElementById("sum").textContent=S.tokens!==undefined?
  S.tokens+" tokens, mean surprisal "+f(S.mean_surprisal_bits,3)+" bits, perplexity "+f(S.perplexity,3)+
  ", "+f(S.bits_per_byte,3)+" bits/byte, "+S.triggers+" triggers, "+S.interjections+" interjections":"";
const tip=document.getElementById("tip");
function show(el){
  const i=+el.dataset.i,t=T[i];
  let h="<b>#"+i+"</b> "+esc(JSON.stringify(t[0]))+"<br>";
  if(t[1]===null)h+="no prediction (first token)";
  else{
    h+="p "+Math.pow(2,-t[1]).toPrecision(3)+" &middot; surprisal "+f(t[1],2)+" bits<br>rank "+t[3]+" &middot; entropy "+f(t[2],2)+" bits &middot; z "+f(t[4],2);
    if(t[5].length){h+="<br>alternatives:";t[5].forEach(a=>{h+="<br>&nbsp;"+esc(JSON.stringify(V[a[0]]))+" "+a[1];});}
  }
  tip.innerHTML=h;tip.style.display="block";
  const r=el.getBoundingClientRect();
  tip.style.left=Math.min(r.left,window.innerWidth-260)+"px";
  tip.style.top=(r.bottom+4)+"px";
}
function hide(){tip.style.display="none";}
text.addEventListener("mouseover",e=>{if(e.target.dataset.i!==undefined)show(e.target);});
text.addEventListener("mouseout",hide);
text.addEventListener("focusin",e=>{if(e.target.dataset.i!==undefined)show(e.target);});
text.addEventListener("focusout",hide);
const list=document.getElementById("list");
D.triggers.forEach(t=>{
  const li=document.createElement("li");
  li.dataset.trigger=t[0];
  let s="token "+t[0]+" (z "+t[1]+")";
  (ijAt.get(t[0])||[]).forEach(j=>{s+=" \u2014 "+j[1]+(j[2]?" (duplicate)":"");});
  li.textContent=s;
  li.addEventListener("click",()=>{const el=text.querySelector('[data-i="'+t[0]+'"]');if(el){el.focus();el.scrollIntoView({block:"center"});}});
  list.appendChild(li);
});
// The plot: surprisal per token (the maximum per pixel column when long).
const svg=document.getElementById("plot"),W=1000,H=140,n=T.length;
svg.setAttribute("viewBox","0 0 "+W+" "+H);svg.setAttribute("preserveAspectRatio","none");
let mx=1;T.forEach(t=>{if(t[1]!==null&&t[1]>mx)mx=t[1];});
const cols=Math.min(W,Math.max(n,1)),pts=[];
for(let c=0;c<cols;c++){
  const a=Math.floor(c*n/cols),b=Math.max(a+1,Math.floor((c+1)*n/cols));let m=0;
  for(let i=a;i<b&&i<n;i++)if(T[i][1]!==null&&T[i][1]>m)m=T[i][1];
  pts.push((c*W/cols).toFixed(1)+","+(H-m/mx*(H-10)).toFixed(1));
}
let g='<polyline fill="none" stroke="#36c" stroke-width="1" points="'+pts.join(" ")+'"/>';
D.triggers.forEach(t=>{const x=(t[0]/Math.max(n,1)*W).toFixed(1);g+='<line class="trigger" x1="'+x+'" x2="'+x+'" y1="0" y2="'+H+'" stroke="#c00" stroke-width="1.5"><title>trigger at token '+t[0]+'</title></line>';});
D.interjections.forEach(j=>{const x=(j[0]/Math.max(n,1)*W).toFixed(1);g+='<circle class="interjection" cx="'+x+'" cy="8" r="5" fill="#36c"><title>'+esc(j[1])+'</title></circle>';});
svg.innerHTML=g;
})();
</script></body></html>
)HTML";

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

}  // namespace

void HtmlReport::write(const std::string& path, const std::string& title) const {
  nlohmann::json data = {{"tokens", tokens_},     {"vocab", vocab_},
                         {"triggers", triggers_}, {"interjections", interjections_},
                         {"rolls", rolls_},       {"summary", summary_}};
  // "</" cannot appear inside a <script> element; "<\/" is the same JSON string.
  std::string js = replace_all(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                               "</", "<\\/");
  std::string t =
      replace_all(replace_all(replace_all(title, "&", "&amp;"), "<", "&lt;"), ">", "&gt;");
  t = replace_all(t, "@", "&#64;");  // the page's own markers stay unique
  std::string page = replace_all(kPage, "@TITLE@", t);
  const std::size_t at = page.find("@DATA@");
  page.replace(at, 6, js);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw Error(Errc::Io, "cannot write the HTML report " + path);
    f << page;
    if (!f.flush()) throw Error(Errc::Io, "cannot write the HTML report " + path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(Errc::Io, "cannot write the HTML report " + path);
}

}  // namespace seam::cli
