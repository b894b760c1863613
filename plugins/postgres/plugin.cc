// The postgres plugin: the to_postgres sink over libpq.
#include <sluice/sluice.hpp>

#include "to_postgres.hpp"

using sluice::postgres::ToPostgres;

SLUICE_PLUGIN("postgres", "0.1.0",
              "PostgreSQL sink (libpq): batched inserts and upserts, "
              "exactly once through prepared transactions",
              SLUICE_NODE_TYPES(ToPostgres));
