#include "daemon/log_redaction.hpp"

#include "graph/redact.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace sluice::host {
namespace {

// Forwards every message, redacted, to the sinks the logger had.
class RedactingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit RedactingSink(std::vector<spdlog::sink_ptr> inner) : inner_(std::move(inner)) {}

  void add_secrets(const std::vector<std::string>& secrets) {
    std::lock_guard lock(base_sink<std::mutex>::mutex_);
    for (const std::string& s : secrets) {
      if (!s.empty() && std::find(secrets_.begin(), secrets_.end(), s) == secrets_.end()) {
        secrets_.push_back(s);
      }
    }
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (secrets_.empty()) {
      for (auto& sink : inner_) {
        if (sink->should_log(msg.level)) sink->log(msg);
      }
      return;
    }
    const std::string text =
        redact_text(std::string(msg.payload.data(), msg.payload.size()), secrets_);
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(text.data(), text.size());
    for (auto& sink : inner_) {
      if (sink->should_log(copy.level)) sink->log(copy);
    }
  }
  void flush_() override {
    for (auto& sink : inner_) sink->flush();
  }

 private:
  std::vector<spdlog::sink_ptr> inner_;
  std::vector<std::string> secrets_;
};

std::mutex g_install_mutex;
std::shared_ptr<RedactingSink> g_sink;  // installed on the default logger

}  // namespace

void set_log_secrets(const std::vector<std::string>& secrets) {
  std::lock_guard lock(g_install_mutex);
  auto logger = spdlog::default_logger();
  if (!logger) return;
  auto& sinks = logger->sinks();
  if (!g_sink || sinks.size() != 1 || sinks.front() != g_sink) {
    // (Re)install: the logger may have been set up again since.
    g_sink = std::make_shared<RedactingSink>(sinks);
    g_sink->set_level(spdlog::level::trace);
    sinks.assign(1, g_sink);
  }
  g_sink->add_secrets(secrets);
}

}  // namespace sluice::host
