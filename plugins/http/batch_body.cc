#include "batch_body.hpp"

#include <utility>

namespace sluice::http {

std::string_view content_type(Encoding encoding) {
  switch (encoding) {
    case Encoding::ndjson: return "application/x-ndjson";
    case Encoding::json_array:
    case Encoding::json: return "application/json";
  }
  return "application/json";
}

void BodyBuilder::append(std::string_view json) {
  switch (encoding_) {
    case Encoding::ndjson:
      body_.append(json);
      body_.push_back('\n');
      break;
    case Encoding::json_array:
      body_.push_back(events_ == 0 ? '[' : ',');
      body_.append(json);
      break;
    case Encoding::json: body_.append(json); break;
  }
  ++events_;
}

std::string BodyBuilder::take() {
  if (encoding_ == Encoding::json_array && events_ > 0) body_.push_back(']');
  events_ = 0;
  return std::exchange(body_, std::string());
}

}  // namespace sluice::http
