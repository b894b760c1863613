// key_by with `repartition_topic = "T"` (docs/SCALING.md, "The repartition topic"), expanded
// at load, in the parsed document and before validation, into nodes written as if the user
// had written them, so that the validator checks each like any other:
//
//   [sinks."ID.repartition"]      to_kafka, inputs = ["ID"], topic = T, value_format = "json"
//   [sources."ID.repartitioned"]  from_kafka, topics = [T], group_id, value_format = "json",
//                                 dedup_origin = true
//
// Every node that read ID reads "ID.repartitioned" instead (ID's dead letters stay ID's), and
// the from_kafka sources upstream of ID get origin_header = true. Brokers: the key_by's
// `brokers`, else the upstream from_kafka's. The reading group: `repartition_group_id`, else
// "<upstream group_id>.ID" ("<pipeline name>.ID" without an upstream group). The librdkafka
// properties: `repartition_config` on both, else the upstream from_kafka's `config` on the
// source and its connection settings on the sink.
//
// The generated ids hold a '.', which written ids cannot, so they never clash with a node of
// the file. What the expansion writes has no position in the file: it records where each
// piece comes from in ConfigDocument::generated, and the validator reports a finding on it
// at the key_by's `repartition_topic`.
#pragma once

#include "config/config_loader.hpp"
#include "config/diagnostic.hpp"

#include <string_view>
#include <vector>

namespace sluice::host {

inline constexpr std::string_view k_repartition_sink_suffix = ".repartition";
inline constexpr std::string_view k_repartition_source_suffix = ".repartitioned";

// Expands every key_by that has a string `repartition_topic` in `doc`, in place. Returns the
// findings of the expansion itself (no brokers to use, sources upstream that disagree, a
// topic two key_bys share, origin_header = false upstream), each at the key it concerns.
// A key of the wrong type is left to the validator. Idempotent: a key_by expanded already
// (ConfigDocument::generated names its nodes) is left alone.
[[nodiscard]] std::vector<Diagnostic> expand_repartitions(ConfigDocument& doc);

}  // namespace sluice::host
