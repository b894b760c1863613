// The kafka plugin: from_kafka, from_kafka_batched and to_kafka over librdkafka, and the
// "kafka" checkpoint store.
#include <sluice/sluice.hpp>

#include "from_kafka.hpp"
#include "kafka_store.hpp"
#include "to_kafka.hpp"

using namespace sluice::kafka;  // NOLINT(google-build-using-namespace)

SLUICE_PLUGIN("kafka", "0.1.0", "Kafka sources and sink (librdkafka), Kafka checkpoint store",
              SLUICE_NODE_TYPES(FromKafka, FromKafkaBatched, ToKafka), SLUICE_STORES(KafkaStore));
