// to_mqtt: each element published to an MQTT broker, at-least-once through checkpoints.
//
// Publishes go into libmosquitto's queue and out through the task's loop (the link); the
// broker's PUBACK (QoS 1) or PUBCOMP (QoS 2) ends a publish. checkpoint_prepare answers
// once every publish of the epoch ended, so a stored checkpoint never counts an element the
// broker may not have; a crash replays the elements after the last checkpoint (duplicates,
// never loss). QoS 1/2 publishes still open when the connection drops are sent again by
// libmosquitto after the reconnection. Elements that arrive while the broker is unreachable
// wait in a buffer (the sources are paused).
#pragma once

#include <sluice/sluice.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_set>

#include "mqtt_link.hpp"
#include "mqtt_options.hpp"

namespace sluice::mqtt {

class ToMqtt final : public sdk::Sink, private LinkEvents {
 public:
  static constexpr const char* k_name = "to_mqtt";
  static constexpr const char* k_doc =
      "Publishes each element to an MQTT broker (libmosquitto, MQTT 3.1.1): the payload is a "
      "string's text or the bytes of a bytes value, any other value as JSON; the topic is "
      "`topic`, or the string field `topic_field` of each element. With QoS 1 or 2 and "
      "[checkpoint], a checkpoint is stored only once the broker acknowledged every publish "
      "before it (PUBACK / PUBCOMP): at-least-once (a restart publishes the elements after "
      "the last checkpoint again). Without checkpoints, finish waits for the "
      "acknowledgements (up to drain_timeout_ms). More than max_in_flight unacknowledged "
      "publishes pause the sources. A lost connection is retried with backoff; the open "
      "publishes are sent again after it.";
  static constexpr std::array k_own_params{
      sdk::param("topic", SL_PARAM_STRING, nullptr,
                 "The topic to publish to (no wildcards). Give topic or topic_field."),
      sdk::param("topic_field", SL_PARAM_STRING, nullptr,
                 "The field of each element (an object) that holds its topic; an element "
                 "without it, or with an invalid topic, is an error of that element.")
          .non_empty(),
      sdk::param("qos", SL_PARAM_INT, "1", "QoS of the publishes: 0, 1 or 2.").range(0, 2),
      sdk::param("retain", SL_PARAM_BOOL, "false",
                 "Publish as retained messages (the broker keeps the last one per topic)."),
      sdk::param("max_in_flight", SL_PARAM_INT, "1000",
                 "Unacknowledged publishes before the sources are paused.")
          .range(1, 65535),
      sdk::param("drain_timeout_ms", SL_PARAM_DURATION, "30000",
                 "At the end of input, how long finish waits for the broker's "
                 "acknowledgements before failing.")
          .min(1),
  };
  static constexpr auto k_params = with_connection_params(k_own_params, k_connection_params);

  static void validate(const sdk::Config& cfg);
  ToMqtt(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_io(sdk::Context ctx, uint64_t watch_id, uint32_t ready) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;

 private:
  struct Pending {
    std::string topic;
    std::string payload;
  };

  // LinkEvents.
  void on_connected(bool session_present) override;
  void on_lost() override;
  void on_published(int mid) override;

  /// Hands one message to libmosquitto (connected) or to the buffer.
  sdk::Status publish(sdk::Context ctx, std::string topic, std::string payload);
  /// Writes the queue and re-arms the watches.
  void service(sdk::Context ctx);
  /// Back-pressure on while the broker is unreachable or too much is in flight.
  void update_backpressure(sdk::Context ctx);
  /// Answers a waiting checkpoint_prepare once nothing is in flight.
  void maybe_ready(sdk::Context ctx);
  void publish_metrics(sdk::Context ctx) const;

  Link link_;
  sdk::Context ctx_{nullptr};
  std::string topic_;
  std::string topic_field_;
  int qos_;
  bool retain_;
  size_t max_in_flight_;
  std::chrono::milliseconds drain_timeout_;

  std::unordered_set<int> in_flight_;  // mids of QoS 1/2 publishes not yet acknowledged
  std::deque<Pending> waiting_;        // elements held while the broker is unreachable
  std::optional<uint64_t> preparing_;  // a checkpoint_prepare answered once in_flight_ drains
  bool backpressure_ = false;

  uint64_t messages_total_ = 0;
  uint64_t bytes_total_ = 0;
};

}  // namespace sluice::mqtt
