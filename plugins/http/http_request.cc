#include "http_request.hpp"

#include <algorithm>
#include <stdexcept>

namespace sluice::http {

namespace {
constexpr size_t k_excerpt = 300;  // bytes of an answer's body kept for error messages
// A server's Retry-After is capped at a day: any number fits the header, and a wait in
// milliseconds or nanoseconds past int64 would overflow (retry_max_elapsed_ms bounds the
// real wait anyway, unless it is 0).
constexpr int64_t k_max_retry_after_s = 24 * 3600;
}  // namespace

HttpRequest::HttpRequest() : easy_(curl_easy_init()) {
  if (easy_ == nullptr) throw std::runtime_error("curl_easy_init failed");
}

HttpRequest::~HttpRequest() {
  curl_easy_cleanup(easy_);
  curl_slist_free_all(headers_);
}

size_t HttpRequest::on_body(char* data, size_t size, size_t count, void* self) try {
  auto* r = static_cast<HttpRequest*>(self);
  const size_t n = size * count;
  if (r->body_excerpt_.size() < k_excerpt) {
    r->body_excerpt_.append(data, std::min(n, k_excerpt - r->body_excerpt_.size()));
  }
  return n;
} catch (...) {
  return 0;  // no exception may cross curl's C frames; 0 fails the transfer (a write error)
}

void HttpRequest::prepare(const RequestTemplate& t, const Batch& b) {
  curl_easy_reset(easy_);
  curl_slist_free_all(headers_);
  headers_ = nullptr;
  for (const std::string& h : t.headers) headers_ = curl_slist_append(headers_, h.c_str());
  if (!t.key_header.empty() && !b.key.empty()) {
    headers_ = curl_slist_append(headers_, (t.key_header + ": " + b.key).c_str());
  }
  // No "Expect: 100-continue" round trip for large bodies.
  headers_ = curl_slist_append(headers_, "Expect:");
  error_[0] = '\0';
  body_excerpt_.clear();
  curl_easy_setopt(easy_, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers_);
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, b.body.data());
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(b.body.size()));
  if (t.put) curl_easy_setopt(easy_, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, static_cast<long>(t.timeout.count()));
  curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t.connect_timeout.count()));
  curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &HttpRequest::on_body);
  curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(easy_, CURLOPT_PRIVATE, this);
}

Answer HttpRequest::answer(CURLcode rc) const {
  Answer a;
  a.transport_ok = rc == CURLE_OK;
  if (!a.transport_ok) a.error = error_[0] != '\0' ? error_ : curl_easy_strerror(rc);
  curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &a.status);
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(easy_, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0) {
    a.retry_after_s = std::min<int64_t>(static_cast<int64_t>(retry_after), k_max_retry_after_s);
  }
  curl_easy_getinfo(easy_, CURLINFO_TOTAL_TIME, &a.seconds);
  a.body_excerpt = body_excerpt_;
  return a;
}

}  // namespace sluice::http
