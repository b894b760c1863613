// The core_ops plugin: its node types and functions, registered in one line. To add an
// operator: declare its class next to its kind (sources.hpp, map_filter.hpp, ...), define it
// in a .cc listed in CMakeLists.txt, and name it here.
#include <sluice/sluice.hpp>

#include "functions.hpp"
#include "map_filter.hpp"
#include "sources.hpp"

using namespace sluice::core_ops;  // NOLINT(google-build-using-namespace)

SLUICE_PLUGIN("core_ops", "0.1.0",
              "streamz-style sources, operators and a standard function library",
              SLUICE_NODE_TYPES(FromIterable, FromTextfile, Map, Filter),
              SLUICE_FUNCTIONS(Identity, Add, Sub, Mul, Upper, Lower, JsonParse, JsonDump, Gt, Lt,
                               Eq, NotNull));
