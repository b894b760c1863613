/* Node types and checks written in C against sluice_util.h (sdk_util_c_nodes.c, compiled
 * as strict C11), driven by sdk_helpers_test.cc with the real host value API. */
#ifndef SLUICE_TESTS_SDK_UTIL_C_NODES_H
#define SLUICE_TESTS_SDK_UTIL_C_NODES_H

#include <sluice/sluice.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The node types: "c_every" (sl_util_emit_selected and the config getters), "c_scale"
 *  (sl_util_emit_mapped, sl_util_batch_values) and "c_count" (stateful: sl_util_map and
 *  its snapshot encoding). *count gets their number. */
const sl_node_type* const* c_util_node_types(uint32_t* count);

/** Each check returns NULL when it passed, else a static description of what failed. */
/** The config getters over `config` {n = 5, ratio = 2, pi = 3.5, flag = true,
 *  name = "abc", list = [1, 2], gone = null}: values and defaults. */
const char* c_util_check_config(const sl_host_api* host, sl_context* ctx, sl_value config);
/** A failing getter call, `which` of: 0 int on an absent key "absent", 1 int_or on the
 *  string "name", 2 float on "name", 3 bool_or on the int "n", 4 string on "n", 5 array_or
 *  on "name", 6 float_or on "flag". Returns its status; its error is on ctx. */
sl_status c_util_config_fail(const sl_host_api* host, sl_context* ctx, sl_value config, int which);
/** The map: insert, find, replace, erase (with backward shift), iterate, grow to `n`
 *  (>= 1) keys of mixed kinds, clear, and that 1 and 1.0 are one key; payloads counted through
 *  their release callback. */
const char* c_util_check_map(const sl_host_api* host, int64_t n);
/** Snapshot encoding: a map of n keys encoded, decoded into another map, equal; the value
 *  cell form (encode NULL); a malformed state refused with SL_DATA_LOSS. */
const char* c_util_check_snapshot(const sl_host_api* host, sl_context* ctx, int64_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
