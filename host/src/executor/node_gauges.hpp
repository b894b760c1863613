// Plugin-reported gauges (sl_host_api.gauge_set): the series of one node in one task, and the
// conversion of the ABI's "k=v,k=v" labels into Prometheus label pairs. Rendered into
// /metrics by admin/metrics.cc.
#pragma once

#include "common/result.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::host {

// Plugin-reported gauges of one node in one task (sl_host_api.gauge_set): written
// by the task thread (rarely: per poll or per second), read by the admin thread.
// A small mutex guards the map.
// A Prometheus label value as written between the quotes: backslash, double quote and
// newline escaped. The admin endpoint's labels use it too.
std::string prometheus_label_value(std::string_view value);

class NodeGauges {
 public:
  struct Series {
    std::string name;    // "kafka_consumer_lag_messages" (rendered as sluice_node_<name>)
    std::string labels;  // Prometheus label pairs, values escaped: topic="t",partition="3"
    double value = 0;
  };
  // Sets (or, for NaN, removes) the series. `labels` is the ABI's "k=v,k=v" form.
  // Returns an error message for an invalid name or labels (nothing stored).
  std::optional<std::string> set(std::string_view name, std::string_view labels, double value);
  // Every series, sorted by (name, labels).
  [[nodiscard]] std::vector<Series> snapshot() const;
  // Converts "k=v,k=v" into Prometheus label pairs; an error message when invalid.
  static Result<std::string> prometheus_labels(std::string_view labels);

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, double> series_;
};

}  // namespace sluice::host
