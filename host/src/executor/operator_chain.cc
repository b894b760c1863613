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
#include <chrono>
#include <cstring>

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
                          size_t count) {
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
  uint64_t bytes = 0;  // payload_bytes of s.values[0, n) after the last operator
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
    if (op.vt->map_values != nullptr) {
      // map_values writes into null slots (the ABI); a null is all zero bits, and memset
      // is one vectorised pass (a store per field was half of run_chain's time).
      s.next.resize(n);
      std::memset(s.next.data(), 0, n * sizeof(sl_value));
      const sl_status status = call(op, [&] {
        return op.vt->map_values(op.self, &op.ctx, s.values.data(), n, s.next.data());
      });
      if (owned) release_all(s.values, n);
      if (status != SL_OK) {
        if (keyed) release_all(s.keys, n);
        return status;  // nothing in s.next is owned (the ABI)
      }
      std::swap(s.values, s.next);
      owned = true;
    } else if (op.vt->map_keys != nullptr) {
      // The values go on unchanged; the new keys replace the messages' (or the keys an
      // earlier map_keys made).
      s.next_keys.resize(n);
      std::memset(s.next_keys.data(), 0, n * sizeof(sl_value));
      const sl_status status = call(op, [&] {
        return op.vt->map_keys(op.self, &op.ctx, s.values.data(), n, s.next_keys.data());
      });
      if (keyed) release_all(s.keys, n);
      if (status != SL_OK) {
        if (owned) release_all(s.values, n);
        return status;  // nothing in s.next_keys is owned (the ABI)
      }
      std::swap(s.keys, s.next_keys);
      keyed = true;
    } else {
      s.keep.resize(n);
      const sl_status status = call(op, [&] {
        return op.vt->select_values(op.self, &op.ctx, s.values.data(), n, s.keep.data());
      });
      if (status != SL_OK) {
        if (owned) release_all(s.values, n);
        if (keyed) release_all(s.keys, n);
        return status;
      }
      size_t kept = 0;
      for (size_t k = 0; k < n; ++k) {
        if (s.keep[k] != 0) {
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
    }
    // What this operator passes on (one pass over the elements per operator in the chain).
    bytes = n == 0 ? 0 : payload_bytes(s.values.data(), n);
    NodeCounters::add(op.counters->messages_out, n);
    NodeCounters::add(op.counters->bytes_out, bytes);
    if (n == 0) return SL_OK;  // nothing left owned: a select released what it dropped
    if (op.consumers.size() != 1 || !chainable(nodes_[op.consumers.front().node])) break;
    node = op.consumers.front().node;
    NodeCounters::add(nodes_[node].counters->messages_in, n);
    NodeCounters::add(nodes_[node].counters->bytes_in, bytes);
  }
  s.out.resize(n);
  if (messages != nullptr) {
    for (size_t k = 0; k < n; ++k) {
      s.out[k] = messages[all_rows ? k : s.rows[k]];  // key, headers, event time borrowed
      s.out[k].value = s.values[k];
    }
  } else {
    for (size_t k = 0; k < n; ++k) {
      s.out[k] = sl_message{s.values[k], sl_null(), sl_null(), SL_NO_TIMESTAMP, 0};
    }
  }
  if (keyed) {
    for (size_t k = 0; k < n; ++k) s.out[k].key = s.keys[k];
  }
  const sl_status status = deliver(node, nodes_[node].consumers, s.out.data(), n, bytes);
  if (owned) release_all(s.values, n);
  if (keyed) release_all(s.keys, n);
  return status;
}

}  // namespace sluice::host
