// The live graph page served at / by the admin endpoint: one self-contained
// HTML document (no CDN, no external file). Its script fetches /graph, lays the
// nodes out in columns by topological rank as SVG, polls /stats every second
// and shows each node's rate (messages per second), and offers pause / resume
// buttons for sources. A bearer token, when needed, is read from the URL
// fragment: http://127.0.0.1:9850/#token=SECRET.
#pragma once

#include <string_view>

namespace sluice::host {

[[nodiscard]] std::string_view graph_page_html();

}  // namespace sluice::host
