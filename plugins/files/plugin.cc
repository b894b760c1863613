// The files plugin: the to_files sink (rolling, partitioned files; exactly once by rename).
#include <sluice/sluice.hpp>

#include "to_files.hpp"

using sluice::files::ToFiles;

SLUICE_PLUGIN("files", "0.1.0",
              "Rolling, partitioned files (JSON lines or text, optionally gzip), "
              "exactly once through part files published at checkpoint commit",
              SLUICE_NODE_TYPES(ToFiles));
