// A checkpoint store opened for one pipeline: RAII over an sl_checkpoint_store
// instance (a plugin's or the built-in "fs"), with Status results. Used on the
// control thread only.
#pragma once

#include "common/result.hpp"
#include "registry/plugin_registry.hpp"
#include "value/value.hpp"

#include <sluice/sluice.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct sl_context;

namespace sluice::host::checkpoint {

struct EpochEntry {
  uint64_t epoch = 0;
  bool committed = false;
  int64_t time_ns = 0;
  uint64_t size = 0;
};

// The bytes of one stored epoch, as the store returned them (not copied: a checkpoint
// can be tens of MB).
class StoredBytes {
 public:
  explicit StoredBytes(Value bytes) : bytes_(std::move(bytes)) {}
  [[nodiscard]] std::string_view view() const { return bytes_.as_str(); }
  operator std::string_view() const { return view(); }  // NOLINT: reads like the bytes
  [[nodiscard]] size_t size() const { return view().size(); }

 private:
  Value bytes_;  // bytes or string
};

class StoreHandle {
 public:
  // Opens `info` with `config` (the store's validated options). `registry` is the one `info`
  // belongs to (GraphSpec::registry): the handle keeps it, and so the store's code, loaded
  // until it has closed the store. Null when the caller keeps the registry alive itself.
  static Result<std::unique_ptr<StoreHandle>> open(
      const StoreInfo& info, std::string_view pipeline, const Value& config,
      std::shared_ptr<const PluginRegistry> registry = nullptr);
  ~StoreHandle();
  StoreHandle(const StoreHandle&) = delete;
  StoreHandle& operator=(const StoreHandle&) = delete;

  Status write(uint64_t epoch, std::string_view bytes);
  Status mark_committed(uint64_t epoch);
  Result<StoredBytes> read(uint64_t epoch);
  // Newest first.
  Result<std::vector<EpochEntry>> list();
  Status remove(uint64_t epoch);
  [[nodiscard]] const std::string& name() const { return info_.name; }

 private:
  StoreHandle(const StoreInfo& info, std::shared_ptr<const PluginRegistry> registry);
  Status check(sl_status st, std::string_view what, uint64_t epoch);

  std::shared_ptr<const PluginRegistry> registry_;  // released after ~StoreHandle closed
  const StoreInfo& info_;
  std::unique_ptr<sl_context> ctx_;
  std::string error_;
  void* self_ = nullptr;
};

// Registers the built-in stores ("fs") in `registry` as the plugin "builtin_checkpoint"
// (file "<builtin>"), the same way as a plugin's stores.
Status register_builtin_stores(PluginRegistry& registry);

}  // namespace sluice::host::checkpoint
