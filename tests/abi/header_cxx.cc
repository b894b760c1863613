// sluice.h must compile alone as C++20 (inside its own extern "C") with strict warnings,
// and twice in a row (include guard). See CMakeLists.txt for the flags.
#include <sluice/sluice.h>

// The C declarations must have C linkage and keep their C layout in C++.
static_assert(sizeof(sl_value) == 16, "a value is 16 bytes");
static_assert(alignof(sl_value) == alignof(int64_t), "sl_value alignment");

int main() {
  constexpr sl_plugin_entry_fn k_no_entry = nullptr;
  sl_message msgs[2] = {};
  msgs[1].value = sl_int(42);
  const sl_batch batch = {sizeof(sl_batch), sizeof(sl_message), msgs, 2};
  bool ok = sl_batch_at(&batch, 1)->value.as.i == 42 && k_no_entry == nullptr;
  ok = ok && sl_status_name(SL_OK)[0] == 'O' && sl_float(1.5).kind == SL_KIND_FLOAT;
  // SL_HAS_FIELD with the strict C++ warnings (no old-style cast, no 0 as a pointer).
  sl_node_init init{};
  init.struct_size = static_cast<uint32_t>(offsetof(sl_node_init, pipeline));
  ok = ok && SL_HAS_FIELD(&init, sl_node_init, input_ids) &&
       !SL_HAS_FIELD(&init, sl_node_init, checkpointing);
  return ok ? 0 : 1;
}
