// The core_ops plugin: its node types and functions. To add an operator: declare its class
// in the header of its family, define it in a .cc listed in CMakeLists.txt, and name it on
// the line of its family here.
#include <sluice/sluice.hpp>

#include "elementwise.hpp"
#include "event_time.hpp"
#include "event_window.hpp"
#include "functions.hpp"
#include "keyed.hpp"
#include "map_filter.hpp"
#include "multi_input.hpp"
#include "periodic_sources.hpp"
#include "sources.hpp"
#include "timed.hpp"
#include "windows.hpp"

using namespace sluice::core_ops;  // NOLINT(google-build-using-namespace)

SLUICE_PLUGIN("core_ops", "0.1.0",
              "streamz-style sources, operators and a standard function library",
              // sources
              SLUICE_NODE_TYPES(FromIterable, FromTextfile, FromPeriodic, Filenames, FromProcess),
              // element-wise and count-based operators
              SLUICE_NODE_TYPES(Map, Filter, Starmap, Remove, Accumulate, Frequencies, Slice,
                                Partition, PartitionUnique, SlidingWindow, Unique, Pluck, Flatten),
              // time-based operators
              SLUICE_NODE_TYPES(TimedWindow, TimedWindowUnique, Buffer, RateLimit, Delay, Latest),
              // keyed operators
              SLUICE_NODE_TYPES(KeyBy, Aggregate),
              // event-time operators
              SLUICE_NODE_TYPES(EventTime, EventWindow),
              // multi-input operators
              SLUICE_NODE_TYPES(Zip, CombineLatest, ZipLatest, Union, Collect),
              // the function library
              SLUICE_FUNCTIONS(Identity, JsonParse, JsonDump, Get, Split, Lower, Upper, Strip, Len,
                               Add, Sub, Mul, Div, Mod, ToInt, ToFloat, ToString, Eq, Ne, Gt, Ge,
                               Lt, Le, NotNull, Truthy, Sum, Count, Min, Max, CountBy,
                               CollectList));
