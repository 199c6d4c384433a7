// The chat page GET / serves: one self-contained HTML file (no CDN, no build
// step) compiled into the binary.
#pragma once

#include <string_view>

namespace seam::server {

std::string_view chat_page_html();

}  // namespace seam::server
