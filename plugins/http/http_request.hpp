// One batch and the libcurl easy handle that sends it.
#pragma once

#include <sluice/sluice.hpp>

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::http {

/// An element kept for on_rejected = "dead_letter" (its value, key, headers and time).
struct KeptMessage {
  sdk::Value value;
  sdk::Value key;
  sdk::Value headers;
  int64_t timestamp_ns = SL_NO_TIMESTAMP;
};

/// What one request carries, across its attempts.
struct Batch {
  uint64_t seq = 0;  // order of sealing in this run
  std::string body;
  size_t events = 0;
  std::string key;                    // idempotency key, or empty
  std::vector<KeptMessage> messages;  // only with on_rejected = "dead_letter"
  uint32_t failures = 0;              // attempts that ended in a retryable failure
  int64_t first_sent_ns = 0;          // the first attempt (host clock)
  int64_t due_ns = 0;                 // a retry waits until then
};

/// The parts of a request that are the same for every batch.
struct RequestTemplate {
  std::string url;
  bool put = false;
  std::chrono::milliseconds timeout{};
  std::chrono::milliseconds connect_timeout{};
  std::vector<std::string> headers;  // "Name: value", Content-Type included
  std::string key_header;            // idempotency key header name, or empty
};

/// The answer to an attempt.
struct Answer {
  bool transport_ok = false;  // a whole HTTP answer arrived
  long status = 0;
  std::string error;           // libcurl's reason when !transport_ok
  int64_t retry_after_s = -1;  // Retry-After in seconds, -1 when absent
  std::string body_excerpt;    // the start of the answer's body (for messages)
  double seconds = 0;          // total time of the attempt
};

/// A reusable easy handle (its connection stays in the multi handle's cache).
class HttpRequest {
 public:
  HttpRequest();
  ~HttpRequest();
  HttpRequest(const HttpRequest&) = delete;
  HttpRequest& operator=(const HttpRequest&) = delete;

  /// Sets the handle up to send `batch` (which must outlive the attempt).
  void prepare(const RequestTemplate& t, const Batch& batch);
  [[nodiscard]] CURL* easy() const noexcept { return easy_; }
  /// Reads the attempt's outcome once libcurl reported it done with `rc`.
  [[nodiscard]] Answer answer(CURLcode rc) const;

  std::unique_ptr<Batch> batch;  // the batch in flight on this handle

 private:
  static size_t on_body(char* data, size_t size, size_t count, void* self);

  CURL* easy_;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
  std::string body_excerpt_;
};

}  // namespace sluice::http
