// sluice/detail/store.hpp — checkpoint stores in C++: the Store base class and store<T>(),
// which turns a class into an sl_checkpoint_store of trampolines (ABI 1.1).
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_STORE_HPP
#define SLUICE_DETAIL_STORE_HPP

#include <sluice/detail/context.hpp>
#include <sluice/detail/node.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/detail/value.hpp>
#include <sluice/sluice.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sluice::sdk {

/// One stored epoch (see sl_epoch_info).
struct EpochInfo {
  uint64_t epoch = 0;
  bool committed = false;
  int64_t time_ns = 0;
  uint64_t size = 0;
};

/// Base of checkpoint store types: byte strings by epoch number, written atomically and
/// durably. Every call runs on the host's control thread, one at a time. T declares
/// `k_name`, `k_doc`, optionally `k_params` (keys of the [checkpoint] table), and a
/// constructor `(Context ctx, const Config& cfg, std::string_view pipeline)`; a throwing
/// constructor makes open fail with that status.
class Store {
 public:
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Stores `data` as `epoch`: all or nothing, durable when it returns OK.
  virtual Status write(uint64_t epoch, std::string_view data) = 0;
  /// Records durably that the commits of `epoch` finished.
  virtual Status mark_committed(uint64_t epoch) = 0;
  /// The bytes of `epoch` (a bytes value); not_found when absent.
  virtual Result<Value> read(uint64_t epoch) = 0;
  /// Every stored epoch, in any order.
  virtual Result<std::vector<EpochInfo>> list() = 0;
  /// Deletes `epoch`; OK when absent.
  virtual Status remove(uint64_t epoch) = 0;

 protected:
  Store() = default;
};

namespace detail {

template <class T>
struct StoreTrampolines {
  static T* self_of(void* self) noexcept { return static_cast<T*>(self); }
  // The store's context: errors of every call are reported on it.
  struct Instance {
    sl_context* ctx;
    T* store;
  };
  static Instance* inst(void* self) noexcept { return static_cast<Instance*>(self); }

  static sl_status open(const sl_store_init* init, void** out_self) noexcept {
    *out_self = nullptr;
    return guard(init->ctx, [&]() -> Status {
      const Config cfg(ValueRef(init->config), "[checkpoint]");
      const std::string_view pipeline(init->pipeline.data, init->pipeline.size);
      auto* store = new T(Context(init->ctx), cfg, pipeline);
      *out_self = new Instance{init->ctx, store};
      return {};
    });
  }
  static void close(void* self) noexcept {
    Instance* i = inst(self);
    delete i->store;
    delete i;
  }
  static sl_status write(void* self, uint64_t epoch, const void* data, size_t size) noexcept {
    return guard(inst(self)->ctx, [&] {
      return inst(self)->store->write(epoch,
                                      std::string_view(static_cast<const char*>(data), size));
    });
  }
  static sl_status mark_committed(void* self, uint64_t epoch) noexcept {
    return guard(inst(self)->ctx, [&] { return inst(self)->store->mark_committed(epoch); });
  }
  static sl_status read(void* self, uint64_t epoch, sl_value* out) noexcept {
    *out = sl_null();
    return guard(inst(self)->ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value bytes, inst(self)->store->read(epoch));
      *out = bytes.release();
      return {};
    });
  }
  static sl_status list(void* self, sl_epoch_list_fn fn, void* arg) noexcept {
    return guard(inst(self)->ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(std::vector<EpochInfo> epochs, inst(self)->store->list());
      for (const EpochInfo& e : epochs) {
        sl_epoch_info info{sizeof(sl_epoch_info), e.committed ? 1u : 0u, e.epoch, e.time_ns,
                           e.size};
        fn(arg, &info);
      }
      return {};
    });
  }
  static sl_status remove(void* self, uint64_t epoch) noexcept {
    return guard(inst(self)->ctx, [&] { return inst(self)->store->remove(epoch); });
  }
};

template <class T>
constexpr sl_checkpoint_store make_store() noexcept {
  static_assert(std::is_base_of_v<Store, T>, "a store type derives from sluice::sdk::Store");
  using Tr = StoreTrampolines<T>;
  sl_checkpoint_store s{};
  s.struct_size = sizeof(sl_checkpoint_store);
  s.name = T::k_name;
  s.doc = doc_of<T>();
  s.params = params_of<T>();
  s.param_count = param_count_of<T>();
  s.open = &Tr::open;
  s.close = &Tr::close;
  s.write = &Tr::write;
  s.mark_committed = &Tr::mark_committed;
  s.read = &Tr::read;
  s.list = &Tr::list;
  s.remove = &Tr::remove;
  return s;
}

template <class T>
inline constexpr sl_checkpoint_store k_store = make_store<T>();

}  // namespace detail

/// The sl_checkpoint_store of class T (see Store), in static storage.
template <class T>
constexpr const sl_checkpoint_store* store() noexcept {
  return &detail::k_store<T>;
}

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_STORE_HPP
