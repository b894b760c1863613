// Operator chaining: a run of single-input operators with map_values,
// select_values or map_keys (sluice.h), each feeding only the next, runs over bare
// values with no message batch between them. Through process, every operator copied
// each element into a 64-byte message of its own output batch: about 2 ns per
// element per operator, 75 % of a chain of ten maps (docs/PERFORMANCE.md).
// The chain's output is the batch its last operator's process would have
// emitted: each surviving element in its input message (key, headers, event
// time, key group; the key replaced when a map_keys set one), and the counters of
// every operator move as if process had run.
#include "executor/task.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>

namespace sluice::host {
namespace {

// Releases values[0, count). The test for a boxed value first runs as one branch-free
// pass (vectorised): a chain of int maps makes no boxed value at all.
void release_all(const std::vector<sl_value>& values, size_t count) {
  uint32_t boxed = 0;
  for (size_t k = 0; k < count; ++k) boxed |= values[k].kind >= SL_KIND_STRING ? 1u : 0u;
  if (boxed == 0) return;
  for (size_t k = 0; k < count; ++k) {
    if (sl_value_is_boxed(values[k])) value_release(values[k]);
  }
}

// release_all, returning the payload bytes (payload_bytes) of what it released: counted in
// the same pass.
uint64_t release_all_counting(const std::vector<sl_value>& values, size_t count) {
  uint32_t boxed = 0;
  uint64_t inline_bytes = 0;
  for (size_t k = 0; k < count; ++k) {
    // Branch-free (kinds are 0..7: SL_KIND_STRING and up have bit 2 set).
    const auto kind = static_cast<uint32_t>(values[k].kind);
    boxed |= kind >> 2;
    inline_bytes += k_inline_payload_bytes[kind & 7u];
  }
  if (boxed == 0) return inline_bytes;
  uint64_t bytes = 0;
  for (size_t k = 0; k < count; ++k) {
    bytes += payload_bytes(values[k]);
    if (sl_value_is_boxed(values[k])) value_release(values[k]);
  }
  return bytes;
}

// The bytes counters (bytes_in, bytes_out) that wait for the payload bytes of the chain's
// current values. Those are counted in a loop that runs over the values anyway (the release
// of a map's input, a select's keep loop, the building of the output batch), not in a pass
// of their own per operator: that pass cost a chain of ten int maps about 20 %
// (bench/operator_bench, map10).
struct PendingBytes {
  std::array<std::atomic<uint64_t>*, 8> counters{};
  size_t size = 0;
  std::optional<uint64_t> known;  // the current values' payload bytes, once counted

  [[nodiscard]] bool nearly_full() const noexcept { return size + 2 > counters.size(); }
  void wait(std::atomic<uint64_t>& counter) noexcept { counters[size++] = &counter; }
  void settle(uint64_t bytes) noexcept {
    for (size_t i = 0; i < size; ++i) NodeCounters::add(*counters[i], bytes);
    size = 0;
  }
};

}  // namespace

bool Task::chainable(const NodeRuntime& n) const noexcept {
  // An error policy needs one message per process call (deliver_with_policy),
  // so nodes with one are never chained.
  return n.role == SL_ROLE_OPERATOR && n.input_count == 1 && !n.ended &&
         (n.vt->map_values != nullptr || n.vt->select_values != nullptr ||
          n.vt->map_keys != nullptr) &&
         n.on_error == ErrorPolicy::fail && n.dead_letter_consumers.empty();
}

sl_status Task::run_chain(size_t head, const sl_message* messages, const sl_value* values,
                          size_t count, uint64_t bytes) {
  // The head's own scratch: the graph is acyclic, so a chain never re-enters its
  // head while it runs (chains further down use their own heads' scratch).
  NodeRuntime::ChainScratch& s = nodes_[head].chain;
  s.values.resize(count);
  if (messages != nullptr) {
    for (size_t k = 0; k < count; ++k) s.values[k] = messages[k].value;  // borrowed
  } else {
    std::copy_n(values, count, s.values.begin());  // borrowed from emit_values' caller
  }
  // Element k's message is messages[k] until a select_values drops one; then s.rows
  // says which (written by the first select only: no pass for chains of maps).
  bool all_rows = true;
  s.rows.resize(count);
  size_t n = count;
  bool owned = false;  // s.values[0, n) were made by a map_values: released here
  bool keyed = false;  // s.keys[0, n) were made by a map_keys (owned): they replace the keys
  size_t node = head;
  PendingBytes pending;
  pending.known = bytes;  // the head's input; deliver_to counted its bytes_in
  // A sample of the calls is timed, as deliver_to does: the head's there (the whole chain
  // and what follows, as its process would be), a later node's here (its own call only).
  auto call = [&](NodeRuntime& op, auto&& callback) {
    const bool timed = node != head && op.counters->sample_latency();
    const auto t0 =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const sl_status status = invoke(node, "process", callback);
    if (timed) {
      op.counters->record_latency(
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count()));
    }
    return status;
  };
  for (;;) {
    NodeRuntime& op = nodes_[node];
    if (pending.nearly_full()) {  // a long run of map_keys: count the values once here
      if (!pending.known) pending.known = payload_bytes(s.values.data(), n);
      pending.settle(*pending.known);
    }
    if (node != head) pending.wait(op.counters->bytes_in);
    if (op.vt->map_values != nullptr) {
      if (pending.known && pending.size > 0) pending.settle(*pending.known);
      // map_values writes into null slots (the ABI); a null is all zero bits, and memset
      // is one vectorised pass (a store per field was half of run_chain's time).
      s.next.resize(n);
      std::memset(s.next.data(), 0, n * sizeof(sl_value));
      const sl_status status = call(op, [&] {
        return op.vt->map_values(op.self, op.ctx.get(), s.values.data(), n, s.next.data());
      });
      if (owned) {
        const uint64_t in_bytes = release_all_counting(s.values, n);
        pending.settle(in_bytes);
      } else if (pending.size > 0) {  // not reached: borrowed values have known bytes
        pending.settle(payload_bytes(s.values.data(), n));
      }
      if (status != SL_OK) {
        if (keyed) release_all(s.keys, n);
        return status;  // nothing in s.next is owned (the ABI)
      }
      std::swap(s.values, s.next);
      owned = true;
      pending.known.reset();
      pending.wait(op.counters->bytes_out);
    } else if (op.vt->map_keys != nullptr) {
      // The values go on unchanged; the new keys replace the messages' (or the keys an
      // earlier map_keys made).
      s.next_keys.resize(n);
      std::memset(s.next_keys.data(), 0, n * sizeof(sl_value));
      const sl_status status = call(op, [&] {
        return op.vt->map_keys(op.self, op.ctx.get(), s.values.data(), n, s.next_keys.data());
      });
      if (keyed) release_all(s.keys, n);
      if (status != SL_OK) {
        if (owned) release_all(s.values, n);
        return status;  // nothing in s.next_keys is owned (the ABI)
      }
      std::swap(s.keys, s.next_keys);
      keyed = true;
      pending.wait(op.counters->bytes_out);  // the values go on unchanged
    } else {
      s.keep.resize(n);
      const sl_status status = call(op, [&] {
        return op.vt->select_values(op.self, op.ctx.get(), s.values.data(), n, s.keep.data());
      });
      if (status != SL_OK) {
        if (owned) release_all(s.values, n);
        if (keyed) release_all(s.keys, n);
        return status;
      }
      size_t kept = 0;
      uint64_t all_bytes = 0, kept_bytes = 0;
      for (size_t k = 0; k < n; ++k) {
        const uint64_t b = payload_bytes(s.values[k]);
        all_bytes += b;
        if (s.keep[k] != 0) {
          kept_bytes += b;
          s.values[kept] = s.values[k];
          if (keyed) s.keys[kept] = s.keys[k];
          s.rows[kept++] = all_rows ? static_cast<uint32_t>(k) : s.rows[k];
        } else {
          if (owned && sl_value_is_boxed(s.values[k])) value_release(s.values[k]);
          if (keyed && sl_value_is_boxed(s.keys[k])) value_release(s.keys[k]);
        }
      }
      all_rows = false;
      n = kept;
      pending.settle(pending.known.value_or(all_bytes));
      pending.known = kept_bytes;
      pending.wait(op.counters->bytes_out);
    }
    NodeCounters::add(op.counters->messages_out, n);
    if (n == 0) return SL_OK;  // nothing left owned: a select released what it dropped
    if (op.consumers.size() != 1 || !chainable(nodes_[op.consumers.front().node])) break;
    node = op.consumers.front().node;
    NodeCounters::add(nodes_[node].counters->messages_in, n);
  }
  s.out.resize(n);
  // The output's bytes, counted while the batch is built unless known already.
  uint64_t out_bytes = 0;
  if (messages != nullptr) {
    for (size_t k = 0; k < n; ++k) {
      s.out[k] = messages[all_rows ? k : s.rows[k]];  // key, headers, event time borrowed
      s.out[k].value = s.values[k];
      if (!pending.known) out_bytes += payload_bytes(s.values[k]);
    }
  } else {
    for (size_t k = 0; k < n; ++k) {
      s.out[k] = sl_message{s.values[k], sl_null(), sl_null(), SL_NO_TIMESTAMP, 0};
      if (!pending.known) out_bytes += payload_bytes(s.values[k]);
    }
  }
  if (pending.known) out_bytes = *pending.known;
  pending.settle(out_bytes);
  if (keyed) {
    for (size_t k = 0; k < n; ++k) s.out[k].key = s.keys[k];
  }
  const sl_status status = deliver(node, nodes_[node].consumers, s.out.data(), n, out_bytes);
  if (owned) release_all(s.values, n);
  if (keyed) release_all(s.keys, n);
  return status;
}

}  // namespace sluice::host
