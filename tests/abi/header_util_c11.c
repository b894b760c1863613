/* sluice_util.h (the C helpers) must compile alone as strict ISO C11, included first and
 * twice, under the strictest warnings a plugin author might use (the flags of
 * abi_header_c11); see CMakeLists.txt. Its helpers that need no host run here; the rest
 * run against the real host in tests/unit/sdk/sdk_helpers_test. */
#include <sluice/sluice_util.h>

int main(void) {
  sl_message msgs[3];
  sl_value values[3];
  sl_util_map map;
  size_t pos = 0;
  sl_value key;
  void* value;
  sl_batch batch = {sizeof(sl_batch), sizeof(sl_message), msgs, 3};
  int ok;
  msgs[0].value = sl_int(1);
  msgs[1].value = sl_float(2.5);
  msgs[2].value = sl_bool(1);
  sl_util_batch_values(&batch, values);
  ok = values[0].as.i == 1 && values[1].as.f == 2.5 && values[2].kind == SL_KIND_BOOL;
  ok = ok && sl_util_kind_name(SL_KIND_ARRAY)[0] == 'a' && sl_util_kind_name(99)[0] == 'u';
  /* An empty map makes no host call. */
  sl_util_map_init(&map, NULL, NULL);
  ok = ok && sl_util_map_find(&map, sl_int(1)) == NULL && !sl_util_map_erase(&map, sl_int(1));
  ok = ok && !sl_util_map_next(&map, &pos, &key, &value) && map.count == 0;
  sl_util_map_free(&map);
  return ok ? 0 : 1;
}
