/* A plugin whose entry point refuses to load: it logs why (with a NULL context, as the
 * ABI asks) and returns NULL. The host must report the refusal, naming the file. */
#include <string.h>
#include <sluice/sluice.h>

#define IT_REFUSAL_REASON \
  "it_entry_null: refusing to load: the licence file /nonexistent/it.lic is missing"

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host) {
  if (host && host->log) {
    host->log(NULL, SL_LOG_ERROR, IT_REFUSAL_REASON, strlen(IT_REFUSAL_REASON));
  }
  return NULL;
}
