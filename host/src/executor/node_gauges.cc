#include "executor/node_gauges.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sluice::host {

namespace {
bool gauge_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}
}  // namespace

std::string prometheus_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> NodeGauges::prometheus_labels(std::string_view labels) {
  std::string out;
  if (labels.empty()) return out;
  std::vector<std::string_view> keys;
  size_t pos = 0;
  while (true) {
    size_t comma = labels.find(',', pos);
    std::string_view pair =
        labels.substr(pos, comma == std::string_view::npos ? labels.npos : comma - pos);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return Status(SL_INVALID_ARGUMENT, fmt::format("gauge label '{}' is not key=value", pair));
    }
    std::string_view key = pair.substr(0, eq), value = pair.substr(eq + 1);
    if (!gauge_identifier(key) || key.starts_with("__") || key == "pipeline" || key == "node" ||
        key == "type") {
      return Status(SL_INVALID_ARGUMENT, fmt::format("invalid gauge label key '{}'", key));
    }
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      return Status(SL_INVALID_ARGUMENT, fmt::format("duplicate gauge label key '{}'", key));
    }
    keys.push_back(key);
    if (!out.empty()) out += ',';
    out += key;
    out += "=\"";
    out += prometheus_label_value(value);
    out += '"';
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::optional<std::string> NodeGauges::set(std::string_view name, std::string_view labels,
                                           double value) {
  if (!gauge_identifier(name)) return fmt::format("invalid gauge name '{}'", name);
  // Prometheus reserves these suffixes for histograms and summaries. A name ending in
  // "_total" is a counter the plugin keeps (rendered with "# TYPE counter").
  for (std::string_view reserved : {"_bucket", "_sum", "_count"}) {
    if (name.ends_with(reserved)) {
      return fmt::format("gauge name '{}' ends with '{}' (reserved)", name, reserved);
    }
  }
  // The host's own sluice_node_* families (admin/metrics.cc).
  for (std::string_view reserved :
       {"batch_latency_seconds", "messages_in_total", "messages_out_total", "bytes_in_total",
        "bytes_out_total", "errors_total", "skipped_total", "dead_letters_total", "late_total",
        "side_output_messages_total", "backpressure_seconds_total", "watermark_seconds",
        "watermark_lag_seconds"}) {
    if (name == reserved) return fmt::format("gauge name '{}' is reserved", name);
  }
  auto rendered = prometheus_labels(labels);
  if (!rendered.is_ok()) return std::string(rendered.status().message());
  std::pair<std::string, std::string> key(std::string(name), std::move(rendered).value());
  std::lock_guard lock(mutex_);
  if (std::isnan(value)) {
    series_.erase(key);
  } else {
    series_[std::move(key)] = value;
  }
  return std::nullopt;
}

std::vector<NodeGauges::Series> NodeGauges::snapshot() const {
  std::vector<Series> out;
  std::lock_guard lock(mutex_);
  out.reserve(series_.size());
  for (const auto& [key, value] : series_) out.push_back({key.first, key.second, value});
  return out;
}

}  // namespace sluice::host
