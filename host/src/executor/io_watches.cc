#include "executor/io_watches.hpp"

#include <boost/asio/post.hpp>

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace sluice::host {
namespace {

constexpr uint32_t k_known_events = SL_IO_READ | SL_IO_WRITE;

// What `fd` is ready for right now (without blocking), as SL_IO_* bits; an
// error or hang-up makes it ready for both directions, so the plugin's next
// read or write sees the error. -1 when fd is not an open descriptor.
int64_t ready_now(int fd, uint32_t events) {
  pollfd p{};
  p.fd = fd;
  if (events & SL_IO_READ) p.events |= POLLIN | POLLPRI;
  if (events & SL_IO_WRITE) p.events |= POLLOUT;
  int rc = 0;
  do {
    rc = ::poll(&p, 1, 0);
  } while (rc < 0 && errno == EINTR);
  if (rc <= 0) return 0;
  if (p.revents & POLLNVAL) return -1;
  uint32_t ready = 0;
  if (p.revents & (POLLIN | POLLPRI | POLLERR | POLLHUP)) ready |= SL_IO_READ;
  if (p.revents & (POLLOUT | POLLERR | POLLHUP)) ready |= SL_IO_WRITE;
  return ready & events;
}

}  // namespace

IoWatches::IoWatches(boost::asio::io_context& io, ReadyFn on_ready)
    : io_(io), on_ready_(std::move(on_ready)), alive_(std::make_shared<bool>(true)) {}

IoWatches::~IoWatches() { cancel_all(); }

sl_status IoWatches::watch(size_t node, int fd, uint32_t events, uint64_t watch_id,
                           std::string* error) {
  auto fail = [&](std::string why) {
    if (error) *error = std::move(why);
    return SL_INVALID_ARGUMENT;
  };
  if (fd < 0) return fail("io_watch: fd " + std::to_string(fd) + " is not a descriptor");
  if (events == 0 || (events & ~k_known_events) != 0) {
    return fail("io_watch: events must be SL_IO_READ, SL_IO_WRITE or both (got " +
                std::to_string(events) + ")");
  }
  const Key key{node, watch_id};
  if (auto it = watches_.find(key); it != watches_.end()) disarm(it);  // re-arming moves it

  const int64_t ready = ready_now(fd, events);
  if (ready < 0) return fail("io_watch: fd " + std::to_string(fd) + " is not open");
  const uint64_t serial = next_serial_++;
  if (ready > 0) {
    // Already ready: complete from the loop without registering the fd with
    // the reactor at all (the common case for a busy socket).
    watches_[key] = Watch{fd, events, serial, false};
    std::weak_ptr<bool> alive = alive_;
    boost::asio::post(io_, [this, alive, key, serial, ready] {
      if (!alive.expired()) complete(key, serial, static_cast<uint32_t>(ready));
    });
    return SL_OK;
  }

  auto slot = fds_.find(fd);
  if (slot == fds_.end()) {
    auto entry = std::make_unique<Fd>(io_);
    boost::system::error_code ec;
    entry->descriptor.assign(fd, ec);
    if (ec) return fail("io_watch: fd " + std::to_string(fd) + ": " + ec.message());
    slot = fds_.emplace(fd, std::move(entry)).first;
  }
  ++slot->second->watches;
  watches_[key] = Watch{fd, events, serial, true};
  if (events & SL_IO_READ) start_wait(*slot->second, key, serial, SL_IO_READ);
  if (events & SL_IO_WRITE) start_wait(*slot->second, key, serial, SL_IO_WRITE);
  return SL_OK;
}

void IoWatches::start_wait(Fd& fd, Key key, uint64_t serial, uint32_t event) {
  using boost::asio::posix::descriptor_base;
  std::weak_ptr<bool> alive = alive_;
  fd.descriptor.async_wait(
      event == SL_IO_READ ? descriptor_base::wait_read : descriptor_base::wait_write,
      [this, alive, key, serial, event](const boost::system::error_code& ec) {
        if (alive.expired() || ec == boost::asio::error::operation_aborted) return;
        // Any other error: report the watch ready, so the plugin's own read or
        // write meets the error and handles it.
        complete(key, serial, event);
      });
}

void IoWatches::complete(Key key, uint64_t serial, uint32_t fired) {
  auto it = watches_.find(key);
  if (it == watches_.end() || it->second.serial != serial) return;  // disarmed or re-armed
  const Watch w = it->second;
  int64_t now = ready_now(w.fd, w.events);
  uint32_t ready = now > 0 ? static_cast<uint32_t>(now) : 0;
  ready |= fired & w.events;
  disarm(it);
  on_ready_(key.first, key.second, ready);
}

void IoWatches::unwatch(size_t node, uint64_t watch_id) {
  if (auto it = watches_.find({node, watch_id}); it != watches_.end()) disarm(it);
}

void IoWatches::cancel_node(size_t node) {
  auto it = watches_.lower_bound({node, 0});
  while (it != watches_.end() && it->first.first == node) {
    auto next = std::next(it);
    disarm(it);
    it = next;
  }
}

void IoWatches::cancel_all() {
  while (!watches_.empty()) disarm(watches_.begin());
}

void IoWatches::disarm(std::map<Key, Watch>::iterator it) {
  const Watch w = it->second;
  watches_.erase(it);
  if (!w.registered) return;
  auto slot = fds_.find(w.fd);
  if (slot == fds_.end()) return;
  if (--slot->second->watches > 0) return;  // another watch still waits on this fd
  // release(), not close(): the plugin owns the descriptor. Outstanding waits
  // complete with operation_aborted and are ignored.
  boost::system::error_code ec;
  slot->second->descriptor.cancel(ec);
  slot->second->descriptor.release();
  fds_.erase(slot);
}

}  // namespace sluice::host
