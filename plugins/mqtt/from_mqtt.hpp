// from_mqtt: messages of MQTT topic filters, acknowledged only once they are safe.
//
// Reading happens in poll() only, so the host's back-pressure (no poll while downstream is
// full) simply leaves the socket unread: TCP pushes back on the broker, which keeps the
// messages (QoS 1/2: in the session; mind its max_queued_messages). Each message read is
// emitted at once, from inside mosquitto_loop_read. Its PUBACK, which libmosquitto 2.0
// queues as it hands the message over, stays in libmosquitto's outgoing queue (the link
// writes only when the node says so) until:
//  - with checkpoints, checkpoint_commit: the stored checkpoint covers every message
//    emitted before it, so their acknowledgements may go; a crash before that makes the
//    broker deliver them again to the persistent session (at-least-once);
//  - without, the end of the poll that emitted them: delivery is synchronous and
//    depth-first, so the sinks have them (unless a buffering operator holds them, whose
//    contents a crash loses anyway without checkpoints).
#pragma once

#include <sluice/sluice.hpp>

#include <string>
#include <vector>

#include "mqtt_link.hpp"
#include "mqtt_options.hpp"

namespace sluice::mqtt {

class FromMqtt final : public sdk::Source, private LinkEvents {
 public:
  static constexpr const char* k_name = "from_mqtt";
  static constexpr const char* k_doc =
      "Reads the messages of MQTT topic filters (wildcards + and #) from a broker "
      "(libmosquitto, MQTT 3.1.1): each message one element whose key is its topic and whose "
      "value is its payload (decoded as `payload` says). With the default persistent session "
      "(clean_session = false and a stable client_id) messages published while sluiced is "
      "down are delivered when it is back. A QoS 1 message is acknowledged to the broker only "
      "once the checkpoint that covers it is stored (without [checkpoint]: once it went "
      "through the graph, which a buffering operator such as rate_limit may still hold), so a "
      "crash or a kill makes the broker deliver it again: at-least-once. "
      "QoS 2 is received (libmosquitto delivers it at PUBREL, after its PUBREC went out), but "
      "a crash between that PUBREC and the next checkpoint can lose it: use QoS 1 for "
      "at-least-once. Back-pressure stops reading the socket: the broker holds the messages "
      "(set its max_inflight_messages 0 and max_queued_messages high: see "
      "docs/CONNECTORS.md). With several tasks, every topic must be a shared subscription "
      "($share/GROUP/filter) so that each message goes to one task.";
  static constexpr std::array k_own_params{
      sdk::required("topics", SL_PARAM_ARRAY,
                    "Topic filters to subscribe to, e.g. [\"sensors/+/temp\", \"logs/#\"].")
          .non_empty(),
      sdk::param("qos", SL_PARAM_INT, "1",
                 "The subscriptions' QoS: the most the broker uses for them (0: at-most-once; "
                 "1: at-least-once; 2: see above).")
          .range(0, 2),
      sdk::param("payload", SL_PARAM_STRING, "\"string\"",
                 "\"string\": UTF-8 text (bytes when the payload is not valid UTF-8); "
                 "\"bytes\"; \"json\": parsed JSON (a payload that does not parse is "
                 "emitted as a string and counted in mqtt_decode_errors_total).")
          .one_of("string|bytes|json"),
      sdk::param("with_topic", SL_PARAM_BOOL, "false",
                 "Emit { topic = \"...\", payload = <the decoded payload> } instead of the bare "
                 "payload, for operators that need the topic (Lua functions see the value "
                 "only, not the key)."),
  };
  static constexpr auto k_params = with_connection_params(k_own_params, k_connection_params);

  static void validate(const sdk::Config& cfg);
  FromMqtt(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  sdk::Status on_io(sdk::Context ctx, uint64_t watch_id, uint32_t ready) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  void stop(sdk::Context ctx) override;
  sdk::Status checkpoint_commit(sdk::Context ctx, uint64_t epoch) override;

 private:
  enum class Payload { string, bytes, json };

  // LinkEvents.
  void on_connected(bool session_present) override;
  void on_lost() override;
  void on_message(const mosquitto_message& message) override;
  void on_subscribed() override;

  /// Writes libmosquitto's queue when nothing in it acknowledges an element no checkpoint
  /// covers yet, and arms the write watch for what is left.
  void flush(sdk::Context ctx);
  void publish_metrics(sdk::Context ctx) const;

  Link link_;
  sdk::Context ctx_{nullptr};
  std::vector<std::string> topics_;
  int qos_;
  Payload payload_;
  bool with_topic_;
  bool checkpointing_;

  sdk::Status emit_status_;  // a failed emit inside on_message, returned by poll
  uint32_t emitted_in_poll_ = 0;
  uint64_t held_acks_ = 0;  // QoS 1/2 messages emitted whose acknowledgement is queued

  uint64_t messages_total_ = 0;
  uint64_t bytes_total_ = 0;
  uint64_t decode_errors_total_ = 0;
};

}  // namespace sluice::mqtt
