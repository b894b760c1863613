// Status and Result<T>: how the host returns expected failures. Exceptions are
// kept for programming errors; nothing here crosses the plugin ABI.
#pragma once

#include <sluice/sluice.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sluice::host {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(sl_status code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  [[nodiscard]] bool is_ok() const { return code_ == SL_OK; }
  [[nodiscard]] sl_status code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  [[nodiscard]] std::string to_string() const {
    return std::string(sl_status_name(code_)) + ": " + message_;
  }

 private:
  sl_status code_ = SL_OK;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok());
  }

  [[nodiscard]] bool is_ok() const { return std::holds_alternative<T>(v_); }
  [[nodiscard]] const Status& status() const {
    static const Status k_ok;
    return is_ok() ? k_ok : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sluice::host

#define SLUICE_CONCAT_INNER(a, b) a##b
#define SLUICE_CONCAT(a, b) SLUICE_CONCAT_INNER(a, b)

// SLUICE_RETURN_IF_ERROR(expr): return the Status of `expr` when it failed.
#define SLUICE_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::sluice::host::Status sluice_status_ = (expr);     \
    if (!sluice_status_.is_ok()) return sluice_status_; \
  } while (0)

// SLUICE_ASSIGN_OR_RETURN(decl, expr): `decl = value of expr`, or return its error.
#define SLUICE_ASSIGN_OR_RETURN(decl, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL(SLUICE_CONCAT(sluice_result_, __LINE__), decl, expr)
#define SLUICE_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.is_ok()) return tmp.status();              \
  decl = std::move(tmp).value()
