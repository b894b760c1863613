// The sinks plugin: print and sink_to_textfile, registered in one line.
#include <sluice/sluice.hpp>

#include "sinks.hpp"

using namespace sluice::sinks;  // NOLINT(google-build-using-namespace)

SLUICE_PLUGIN("sinks", "0.1.0", "Sinks that write elements to stdout and to files",
              SLUICE_NODE_TYPES(Print, SinkToTextfile));
