/* A shared object in a plugin directory that is not a sluice plugin: it exports a
 * symbol, but not SL_PLUGIN_ENTRY_SYMBOL. The host must refuse it, naming the file. */
#include <sluice/sluice.h>

SL_EXPORT int not_a_sluice_plugin(int x);
SL_EXPORT int not_a_sluice_plugin(int x) { return x + 1; }
