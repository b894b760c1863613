// libcurl's multi interface on the task's own event loop: curl tells which sockets it
// waits for (CURLMOPT_SOCKETFUNCTION) and when it wants a timeout (CURLMOPT_TIMERFUNCTION);
// this class turns them into io_watch and timer_start of the node's context, and the
// host's readiness back into curl_multi_socket_action. No thread, no blocking call on the
// executor.
//
// Watches are one-shot (the host's io_watch): after each readiness the socket's watch is
// armed again while curl still wants it. A socket curl no longer wants (CURL_POLL_REMOVE,
// which curl reports before it closes the socket) is unwatched.
//
// At finish or stop the node may wait for its last requests (bounded): detach() drops the
// watches and timer, then drive_blocking() polls the same sockets with poll(2).
#pragma once

#include <sluice/sluice.hpp>

#include <curl/curl.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace sluice::http {

class CurlLoop {
 public:
  /// Watch ids are k_first_watch + fd; the timer is `timer_id` of the node.
  static constexpr uint64_t k_first_watch = 1000;

  CurlLoop(sdk::Context ctx, uint64_t timer_id);
  ~CurlLoop();
  CurlLoop(const CurlLoop&) = delete;
  CurlLoop& operator=(const CurlLoop&) = delete;

  [[nodiscard]] CURLM* multi() const noexcept { return multi_; }
  /// Starts a transfer (curl acts on it at the next timeout, armed by this call).
  sdk::Status add(CURL* easy);
  /// Removes a transfer (finished or not).
  void remove(CURL* easy);

  [[nodiscard]] static bool is_watch(uint64_t watch_id) noexcept {
    return watch_id >= k_first_watch;
  }
  /// The host's readiness of watch `watch_id`, or the timer.
  void on_io(uint64_t watch_id, uint32_t ready);
  void on_timer();
  /// Transfers finished since the last call: (easy handle, result).
  std::vector<std::pair<CURL*, CURLcode>> take_done();

  /// Leaves the task's loop: every watch and the timer are dropped; from now on only
  /// drive_blocking() moves the transfers.
  void detach();
  /// One round of poll(2) on curl's sockets, at most `max_wait_ms` (less when curl's
  /// timeout comes first), then curl acts on what is ready.
  void drive_blocking(int max_wait_ms);

 private:
  static int on_socket(CURL* easy, curl_socket_t s, int what, void* self, void* socketp);
  static int on_timeout(CURLM* multi, long timeout_ms, void* self);
  void watch(int fd, int what);
  void act(curl_socket_t fd, int flags);
  /// The host timer fires in `delay_ms`.
  bool arm(int64_t delay_ms);
  int64_t now_ms() const;

  sdk::Context ctx_;
  uint64_t timer_id_;
  CURLM* multi_;
  bool attached_ = true;
  std::map<int, int> sockets_;   // fd -> CURL_POLL_IN/OUT/INOUT curl waits for
  int64_t timeout_due_ms_ = -1;  // steady ms when curl wants its timeout; -1: none
  int64_t armed_ms_ = -1;        // steady ms when the host timer fires; -1: not armed
  std::vector<std::pair<CURL*, CURLcode>> done_;
};

}  // namespace sluice::http
