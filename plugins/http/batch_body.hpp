// The body of one request: elements as JSON, in the shape `encoding` names.
//
//   ndjson      one JSON document per line, each line ending in '\n'
//   json_array  [e1,e2,...]
//   json        one element, its JSON alone (one element per request)
#pragma once

#include <sluice/sluice.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::http {

enum class Encoding { ndjson, json_array, json };

/// The Content-Type a body of `encoding` is sent with (unless headers set one).
std::string_view content_type(Encoding encoding);

/// Collects elements into one body. Appending never fails: every value has a JSON form
/// (bytes become base64 strings, as json_dump writes them).
class BodyBuilder {
 public:
  explicit BodyBuilder(Encoding encoding) : encoding_(encoding) {}

  /// Adds one element's JSON text (sdk::ValueRef::json_dump).
  void append(std::string_view json);
  /// What append(json) would add to bytes().
  [[nodiscard]] static size_t cost(std::string_view json) noexcept { return json.size() + 1; }
  [[nodiscard]] size_t events() const noexcept { return events_; }
  /// Bytes of the body so far (without the closing bracket of a JSON array).
  [[nodiscard]] size_t bytes() const noexcept { return body_.size(); }
  [[nodiscard]] bool empty() const noexcept { return events_ == 0; }
  /// The finished body; the builder starts over empty.
  std::string take();

 private:
  Encoding encoding_;
  std::string body_;
  size_t events_ = 0;
};

}  // namespace sluice::http
