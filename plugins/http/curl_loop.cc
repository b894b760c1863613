#include "curl_loop.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sluice::http {

CurlLoop::CurlLoop(sdk::Context ctx, uint64_t timer_id)
    : ctx_(ctx), timer_id_(timer_id), multi_(curl_multi_init()) {
  if (multi_ == nullptr) throw std::runtime_error("curl_multi_init failed");
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlLoop::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlLoop::on_timeout);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
}

CurlLoop::~CurlLoop() {
  detach();
  // Every easy handle was removed by its owner; this closes the cached connections (curl
  // reports their removal through on_socket first, with nothing armed any more).
  curl_multi_cleanup(multi_);
}

sdk::Status CurlLoop::add(CURL* easy) {
  const CURLMcode rc = curl_multi_add_handle(multi_, easy);
  if (rc != CURLM_OK) {
    return sdk::internal_error(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  }
  return {};
}

void CurlLoop::remove(CURL* easy) { curl_multi_remove_handle(multi_, easy); }

// curl's callbacks run inside its C frames: no exception may cross them. -1 makes curl fail
// the transfers (an allocation failing here is the only exception expected).
int CurlLoop::on_socket(CURL* /*easy*/, curl_socket_t s, int what, void* self, void* /*socketp*/) {
  try {
    static_cast<CurlLoop*>(self)->watch(s, what);
    return 0;
  } catch (...) {
    return -1;
  }
}

void CurlLoop::watch(int fd, int what) {
  if (what == CURL_POLL_REMOVE) {
    sockets_.erase(fd);
    if (attached_) ctx_.io_unwatch(k_first_watch + static_cast<uint64_t>(fd));
    return;
  }
  sockets_[fd] = what;
  if (!attached_) return;
  uint32_t events = 0;
  if (what & CURL_POLL_IN) events |= SL_IO_READ;
  if (what & CURL_POLL_OUT) events |= SL_IO_WRITE;
  sdk::Status st = ctx_.io_watch(fd, events, k_first_watch + static_cast<uint64_t>(fd));
  if (!st.is_ok()) ctx_.log_error("to_http: io_watch: " + std::string(st.message()));
}

int CurlLoop::on_timeout(CURLM* /*multi*/, long timeout_ms, void* self) try {
  auto* loop = static_cast<CurlLoop*>(self);
  // curl moves its timeout at nearly every call; a host timer is a syscall to move. So the
  // host timer is moved only to an earlier time: a timer that fires before curl's time
  // (moved later, or cancelled) is re-armed for the rest in on_timer, without waking curl.
  loop->timeout_due_ms_ = timeout_ms < 0 ? -1 : loop->now_ms() + timeout_ms;
  if (timeout_ms >= 0 && loop->attached_ &&
      (loop->armed_ms_ < 0 || loop->timeout_due_ms_ < loop->armed_ms_)) {
    if (!loop->arm(timeout_ms)) return -1;
  }
  return 0;
} catch (...) {
  return -1;  // as on_socket
}

bool CurlLoop::arm(int64_t delay_ms) {
  sdk::Status st = ctx_.timer_start(timer_id_, std::chrono::milliseconds(delay_ms));
  if (!st.is_ok()) {
    ctx_.log_error("to_http: timer_start: " + std::string(st.message()));
    return false;
  }
  armed_ms_ = now_ms() + delay_ms;
  return true;
}

void CurlLoop::act(curl_socket_t fd, int flags) {
  int running = 0;
  curl_multi_socket_action(multi_, fd, flags, &running);
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg == CURLMSG_DONE) done_.emplace_back(m->easy_handle, m->data.result);
  }
}

void CurlLoop::on_io(uint64_t watch_id, uint32_t ready) {
  if (!attached_ || watch_id < k_first_watch) return;
  const int fd = static_cast<int>(watch_id - k_first_watch);
  int flags = 0;
  if (ready & SL_IO_READ) flags |= CURL_CSELECT_IN;
  if (ready & SL_IO_WRITE) flags |= CURL_CSELECT_OUT;
  act(fd, flags);
  // One-shot watches: wait again while curl still wants the socket.
  auto it = sockets_.find(fd);
  if (it != sockets_.end()) watch(fd, it->second);
}

void CurlLoop::on_timer() {
  armed_ms_ = -1;
  if (!attached_ || timeout_due_ms_ < 0) return;  // curl cancelled its timeout meanwhile
  const int64_t now = now_ms();
  if (now < timeout_due_ms_) {
    arm(timeout_due_ms_ - now);  // curl moved its timeout later
    return;
  }
  timeout_due_ms_ = -1;
  act(CURL_SOCKET_TIMEOUT, 0);
  // curl reports a new timeout through on_timeout only when it changes: ask for it.
  long next = -1;
  curl_multi_timeout(multi_, &next);
  if (next >= 0) {
    timeout_due_ms_ = now_ms() + next;
    if (armed_ms_ < 0 || timeout_due_ms_ < armed_ms_) arm(next);
  }
}

std::vector<std::pair<CURL*, CURLcode>> CurlLoop::take_done() { return std::exchange(done_, {}); }

void CurlLoop::detach() {
  if (!attached_) return;
  attached_ = false;
  for (const auto& [fd, what] : sockets_)
    ctx_.io_unwatch(k_first_watch + static_cast<uint64_t>(fd));
  ctx_.timer_cancel(timer_id_);
}

void CurlLoop::drive_blocking(int max_wait_ms) {
  std::vector<pollfd> fds;
  fds.reserve(sockets_.size());
  for (const auto& [fd, what] : sockets_) {
    short events = 0;
    if (what & CURL_POLL_IN) events |= POLLIN;
    if (what & CURL_POLL_OUT) events |= POLLOUT;
    fds.push_back({fd, events, 0});
  }
  int wait = max_wait_ms;
  if (timeout_due_ms_ >= 0) {
    wait = static_cast<int>(std::clamp<int64_t>(timeout_due_ms_ - now_ms(), 0, max_wait_ms));
  }
  const int n = ::poll(fds.data(), fds.size(), wait);
  if (n > 0) {
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      int flags = 0;
      if (p.revents & (POLLIN | POLLHUP)) flags |= CURL_CSELECT_IN;
      if (p.revents & POLLOUT) flags |= CURL_CSELECT_OUT;
      if (p.revents & (POLLERR | POLLNVAL)) flags |= CURL_CSELECT_ERR;
      act(p.fd, flags);
    }
  }
  if (timeout_due_ms_ >= 0 && now_ms() >= timeout_due_ms_) {
    timeout_due_ms_ = -1;
    act(CURL_SOCKET_TIMEOUT, 0);
  }
}

int64_t CurlLoop::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace sluice::http
