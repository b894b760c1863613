#include "checkpoint/store.hpp"

#include "checkpoint/fs_store.hpp"
#include "common/plugin_call.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::host::checkpoint {

StoreHandle::StoreHandle(const StoreInfo& info, std::shared_ptr<const PluginRegistry> registry)
    : registry_(std::move(registry)), info_(info), ctx_(std::make_unique<sl_context>()) {
  ctx_->task = nullptr;
  ctx_->node = 0;
  ctx_->store_error = &error_;
}

StoreHandle::~StoreHandle() {
  if (self_) info_.vtable.close(self_);
}

Result<std::unique_ptr<StoreHandle>> StoreHandle::open(
    const StoreInfo& info, std::string_view pipeline, const Value& config,
    std::shared_ptr<const PluginRegistry> registry) {
  std::unique_ptr<StoreHandle> h(new StoreHandle(info, std::move(registry)));
  sl_store_init init{};
  init.struct_size = sizeof init;
  init.host = host_api_table();
  init.ctx = h->ctx_.get();
  init.pipeline = {pipeline.data(), pipeline.size()};
  init.config = config.raw();
  void* self = nullptr;
  const sl_status st = call_plugin(h->error_, [&] { return info.vtable.open(&init, &self); });
  if (st != SL_OK) {
    return Status(st, fmt::format("checkpoint store '{}': open failed: {}", info.name,
                                  h->error_.empty() ? sl_status_name(st) : h->error_));
  }
  h->self_ = self;
  return h;
}

Status StoreHandle::check(sl_status st, std::string_view what, uint64_t epoch) {
  if (st == SL_OK) return Status::ok();
  std::string msg = fmt::format("checkpoint store '{}': {} of epoch {} failed: {}", info_.name,
                                what, epoch, error_.empty() ? sl_status_name(st) : error_);
  error_.clear();
  return Status(st, std::move(msg));
}

Status StoreHandle::write(uint64_t epoch, std::string_view bytes) {
  error_.clear();
  return check(
      call_plugin(error_,
                  [&] { return info_.vtable.write(self_, epoch, bytes.data(), bytes.size()); }),
      "write", epoch);
}

Status StoreHandle::mark_committed(uint64_t epoch) {
  error_.clear();
  return check(call_plugin(error_, [&] { return info_.vtable.mark_committed(self_, epoch); }),
               "mark_committed", epoch);
}

Result<StoredBytes> StoreHandle::read(uint64_t epoch) {
  error_.clear();
  sl_value out = sl_null();
  sl_status st = call_plugin(error_, [&] { return info_.vtable.read(self_, epoch, &out); });
  Value bytes = Value::adopt(out);
  SLUICE_RETURN_IF_ERROR(check(st, "read", epoch));
  if (bytes.kind() != SL_KIND_BYTES && !bytes.is_string()) {
    return Status(SL_INTERNAL, fmt::format("checkpoint store '{}': read of epoch {} returned no "
                                           "bytes",
                                           info_.name, epoch));
  }
  return StoredBytes(std::move(bytes));
}

Result<std::vector<EpochEntry>> StoreHandle::list() {
  error_.clear();
  std::vector<EpochEntry> out;
  auto fn = [](void* arg, const sl_epoch_info* info) {
    auto* v = static_cast<std::vector<EpochEntry>*>(arg);
    EpochEntry e;
    e.epoch = info->epoch;
    e.committed = info->committed != 0;
    if (SL_HAS_FIELD(info, sl_epoch_info, size)) {
      e.time_ns = info->time_ns;
      e.size = info->size;
    }
    v->push_back(e);
  };
  sl_status st = call_plugin(error_, [&] { return info_.vtable.list(self_, fn, &out); });
  if (st != SL_OK) {
    std::string msg = fmt::format("checkpoint store '{}': list failed: {}", info_.name,
                                  error_.empty() ? sl_status_name(st) : error_);
    return Status(st, std::move(msg));
  }
  std::sort(out.begin(), out.end(),
            [](const EpochEntry& a, const EpochEntry& b) { return a.epoch > b.epoch; });
  return out;
}

Status StoreHandle::remove(uint64_t epoch) {
  error_.clear();
  return check(call_plugin(error_, [&] { return info_.vtable.remove(self_, epoch); }), "remove",
               epoch);
}

Status register_builtin_stores(PluginRegistry& registry) {
  static const sl_checkpoint_store* const k_stores[] = {fs_store_descriptor()};
  static const sl_plugin k_plugin = [] {
    sl_plugin p{};
    p.struct_size = sizeof p;
    p.abi_major = SL_ABI_MAJOR;
    p.abi_minor = SL_ABI_MINOR;
    p.name = "builtin_checkpoint";
    p.version = SLUICE_VERSION;
    p.doc = "Checkpoint stores built into sluiced";
    p.stores = k_stores;
    p.store_count = 1;
    return p;
  }();
  if (registry.find_store("fs")) return Status::ok();
  return registry.add_plugin(&k_plugin, "<builtin>", nullptr);
}

}  // namespace sluice::host::checkpoint
