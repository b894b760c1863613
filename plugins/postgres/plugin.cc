// The postgres plugin: the to_postgres sink over libpq.
#include <sluice/sluice.hpp>

#include <dlfcn.h>

#include "to_postgres.hpp"

using sluice::postgres::ToPostgres;

namespace {

// libpq and the libraries under it (OpenSSL, GSSAPI, LDAP) keep thread-local state and exit
// handlers: unloading them with this plugin (a reload that drops the old registry, a test
// harness that loads and drops registries) leaves the threads' dynamic TLS pointing at
// unmapped memory; LeakSanitizer crashed on it at exit. So libpq stays loaded for the life
// of the process once a registry loaded this plugin; the plugin's own code still unloads.
[[maybe_unused]] const bool k_libpq_pinned =
    ::dlopen("libpq.so.5", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;

}  // namespace

SLUICE_PLUGIN("postgres", "0.1.0",
              "PostgreSQL sink (libpq): batched inserts and upserts, "
              "exactly once through prepared transactions",
              SLUICE_NODE_TYPES(ToPostgres));
