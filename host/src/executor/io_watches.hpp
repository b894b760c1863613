// The I/O watch table of one task (sl_host_api.io_watch, ABI 1.1): network
// sources wait for their sockets on the task's own io_context instead of
// running a thread of their own.
//
// Semantics (what plugins rely on):
//  - One-shot: a watch fires once, then is disarmed; the plugin calls
//    io_watch again to keep waiting (so a source under back-pressure simply
//    does not re-arm, and TCP flow control pushes back on the peer).
//  - Level-triggered: a watch armed on a descriptor that is already ready
//    fires at once (Asio's epoll reactor is edge-triggered and would otherwise
//    miss data left unread while the plugin was not watching).
//  - The descriptor stays owned by the plugin: it is wrapped in an Asio
//    stream_descriptor only while some watch on it is armed, and released
//    (never closed) when the last one is disarmed, fired or cancelled.
//
// Threading: the task's executor thread only. Callbacks run from the
// io_context through `on_ready`, never from inside watch()/unwatch().
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <sluice/sluice.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace sluice::host {

class IoWatches {
 public:
  // Called (on the executor) when watch `watch_id` of node `node` is ready;
  // `ready` is a non-empty subset of SL_IO_READ | SL_IO_WRITE (an error or
  // hang-up on the descriptor counts as ready for what was asked).
  using ReadyFn = std::function<void(size_t node, uint64_t watch_id, uint32_t ready)>;

  IoWatches(boost::asio::io_context& io, ReadyFn on_ready);
  ~IoWatches();
  IoWatches(const IoWatches&) = delete;
  IoWatches& operator=(const IoWatches&) = delete;

  // Arms (or re-arms, replacing the earlier fd and events) watch `watch_id`
  // of `node`. Fails with INVALID_ARGUMENT (reason in *error) for a negative
  // fd, no or unknown event bits, or a descriptor the reactor refuses.
  sl_status watch(size_t node, int fd, uint32_t events, uint64_t watch_id, std::string* error);
  // Disarms one watch; no-op when not armed.
  void unwatch(size_t node, uint64_t watch_id);
  // Disarms every watch of `node` (the node ended or stopped).
  void cancel_node(size_t node);
  // Disarms everything, releasing every descriptor (before nodes are destroyed).
  void cancel_all();
  [[nodiscard]] size_t armed() const { return watches_.size(); }

 private:
  using Key = std::pair<size_t, uint64_t>;  // (node, watch id)
  struct Fd {
    explicit Fd(boost::asio::io_context& io) : descriptor(io) {}
    boost::asio::posix::stream_descriptor descriptor;
    size_t watches = 0;  // armed watches on this fd
  };
  struct Watch {
    int fd = -1;
    uint32_t events = 0;
    uint64_t serial = 0;      // identifies this arming: stale completions are ignored
    bool registered = false;  // waits on fds_[fd] (false: it was ready when armed)
  };

  void start_wait(Fd& fd, Key key, uint64_t serial, uint32_t event);
  void complete(Key key, uint64_t serial, uint32_t fired);
  void disarm(std::map<Key, Watch>::iterator it);

  boost::asio::io_context& io_;
  ReadyFn on_ready_;
  std::map<Key, Watch> watches_;
  std::map<int, std::unique_ptr<Fd>> fds_;
  uint64_t next_serial_ = 1;
  // Expires with the table: completions still queued in the io_context after
  // it is gone do nothing.
  std::shared_ptr<bool> alive_;
};

}  // namespace sluice::host
