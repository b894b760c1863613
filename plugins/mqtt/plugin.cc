// The mqtt plugin: the from_mqtt source and the to_mqtt sink over libmosquitto.
#include <sluice/sluice.hpp>

#include <dlfcn.h>

#include "from_mqtt.hpp"
#include "to_mqtt.hpp"

using sluice::mqtt::FromMqtt;
using sluice::mqtt::ToMqtt;

namespace {

// libmosquitto initialises OpenSSL once (mosquitto_lib_init) and is never cleaned up: it
// stays loaded for the life of the process once a registry loaded this plugin (as the
// postgres plugin does with libpq), so that a reload cannot unmap it under OpenSSL's exit
// handlers.
[[maybe_unused]] const bool k_libmosquitto_pinned =
    ::dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;

}  // namespace

SLUICE_PLUGIN("mqtt", "0.1.0",
              "MQTT source and sink (libmosquitto): topic filters, QoS 0/1/2, persistent "
              "sessions, at-least-once through checkpoints",
              SLUICE_NODE_TYPES(FromMqtt, ToMqtt));
