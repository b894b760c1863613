/* sluice.h must compile alone as strict ISO C11 (no other include before it, no GNU
 * extensions) under the strictest warnings a plugin author might use, and twice in a
 * row (include guard). Built with -std=c11 -pedantic -Werror; see CMakeLists.txt. */
#include <sluice/sluice.h>

#include <string.h>

/* The inline helpers must work too: exit status 0 when they do. */
int main(void) {
  sl_message msgs[2];
  msgs[0].value = sl_int(7);
  msgs[1].value = sl_float(2.5);
  sl_batch batch = {sizeof(sl_batch), sizeof(sl_message), msgs, 2};
  int ok = sl_batch_at(&batch, 1)->value.as.f == 2.5 && sl_batch_at(&batch, 0)->value.as.i == 7;
  ok =
      ok && sl_null().kind == SL_KIND_NULL && sl_bool(5).as.i == 1 && !sl_value_is_boxed(sl_int(1));
  ok = ok && sl_status_name(SL_RESOURCE_EXHAUSTED)[0] == 'R' && sl_status_name(-1)[0] == 'U';
  ok = ok && sizeof(sl_value) == 16;
  {
    /* SL_HAS_FIELD on a struct that ends before a field (a host of an older minor). */
    sl_host_api host;
    memset(&host, 0, sizeof host);
    host.struct_size = (uint32_t)offsetof(sl_host_api, post_owned);
    ok = ok && SL_HAS_FIELD(&host, sl_host_api, emit_side) &&
         !SL_HAS_FIELD(&host, sl_host_api, post_owned);
    host.struct_size = (uint32_t)sizeof host;
    ok = ok && SL_HAS_FIELD(&host, sl_host_api, post_owned);
  }
  return ok ? 0 : 1;
}
