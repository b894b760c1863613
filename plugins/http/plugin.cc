// The http plugin: the to_http sink over libcurl.
#include <sluice/sluice.hpp>

#include <curl/curl.h>

#include "to_http.hpp"

using sluice::http::ToHttp;

namespace {

// libcurl's global state, set up once when the plugin loads, before any task thread
// creates a handle (curl_easy_init would do it lazily, and not thread-safely before 7.84).
[[maybe_unused]] const CURLcode k_curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT);

}  // namespace

SLUICE_PLUGIN("http", "0.1.0",
              "HTTP sink (libcurl): batched POST/PUT with retries, back-pressure and "
              "at-least-once through checkpoints",
              SLUICE_NODE_TYPES(ToHttp));
