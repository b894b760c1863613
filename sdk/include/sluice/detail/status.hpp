// sluice/detail/status.hpp — Status, Result<T>, Error and the plugin-edge guard that turns
// every failure (status or exception) into an sl_status plus set_error().
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_STATUS_HPP
#define SLUICE_DETAIL_STATUS_HPP

#include <sluice/detail/host.hpp>
#include <sluice/sluice.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace sluice::sdk {

/// The outcome of an operation: an sl_status code and a message (empty when OK).
///
/// A failed status is either *to report* — its message reaches the host through
/// set_error() when it leaves the plugin — or *reported*: the host already holds the
/// reason on the context (a failed emit, json_parse, function_bind or function call),
/// and the plugin edge must pass the code through without a message of its own.
/// A plain value: OK never allocates; not shared between threads.
class [[nodiscard]] Status {
 public:
  /// OK.
  Status() noexcept = default;
  /// A status to report: `code` with `message` (which should name what failed and why).
  Status(sl_status code, std::string message) : code_(code), message_(std::move(message)) {}
  /// OK, spelled out.
  static Status ok() noexcept { return {}; }
  /// A failure whose reason the host already attached to the context.
  static Status reported(sl_status code) noexcept {
    Status s;
    s.code_ = code;
    s.reported_ = true;
    return s;
  }

  /// True when the code is SL_OK.
  [[nodiscard]] bool is_ok() const noexcept { return code_ == SL_OK; }
  /// The sl_status code.
  [[nodiscard]] sl_status code() const noexcept { return code_; }
  /// The message (empty for OK and for reported failures).
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  /// True for a failure the host already holds the reason of (see reported()).
  [[nodiscard]] bool is_reported() const noexcept { return reported_; }
  /// "INVALID_ARGUMENT: message", for logs and tests.
  [[nodiscard]] std::string to_string() const {
    std::string s = sl_status_name(code_);
    if (!message_.empty()) s.append(": ").append(message_);
    return s;
  }

 private:
  sl_status code_ = SL_OK;
  bool reported_ = false;
  std::string message_;
};

/// Shorthands for the common failures; each takes a message naming what failed and why.
inline Status invalid_argument(std::string msg) { return {SL_INVALID_ARGUMENT, std::move(msg)}; }
/// See invalid_argument().
inline Status not_found(std::string msg) { return {SL_NOT_FOUND, std::move(msg)}; }
/// See invalid_argument().
inline Status out_of_range(std::string msg) { return {SL_OUT_OF_RANGE, std::move(msg)}; }
/// See invalid_argument().
inline Status failed_precondition(std::string msg) {
  return {SL_FAILED_PRECONDITION, std::move(msg)};
}
/// See invalid_argument().
inline Status unimplemented(std::string msg) { return {SL_UNIMPLEMENTED, std::move(msg)}; }
/// See invalid_argument().
inline Status internal_error(std::string msg) { return {SL_INTERNAL, std::move(msg)}; }

/// The code that fits an errno value: ENOENT/ENOTDIR -> NOT_FOUND, EACCES/EPERM/EROFS ->
/// PERMISSION_DENIED, ENOSPC/EDQUOT/ENOMEM/EMFILE/ENFILE -> RESOURCE_EXHAUSTED, EIO ->
/// DATA_LOSS, EISDIR/EINVAL/ENAMETOOLONG/ELOOP -> INVALID_ARGUMENT, EAGAIN/EINTR ->
/// UNAVAILABLE, anything else -> UNKNOWN. Thread-safe.
inline sl_status errno_code(int err) noexcept {
  switch (err) {
    case ENOENT:
    case ENOTDIR: return SL_NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS: return SL_PERMISSION_DENIED;
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EMFILE:
    case ENFILE: return SL_RESOURCE_EXHAUSTED;
    case EIO: return SL_DATA_LOSS;
    case EISDIR:
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP: return SL_INVALID_ARGUMENT;
    case EAGAIN:
    case EINTR: return SL_UNAVAILABLE;
    default: return SL_UNKNOWN;
  }
}

/// A status for a failed system call: errno_code(err) and "`what`: <strerror(err)>",
/// e.g. errno_status(errno, "cannot open '/x'"). Thread-safe.
inline Status errno_status(int err, std::string_view what) {
  std::string msg(what);
  msg.append(": ").append(std::generic_category().message(err));
  return {errno_code(err), std::move(msg)};
}

/// An exception carrying a Status, for the places a return value cannot carry one:
/// constructors, Config getters, Result::value() on a failure. Every SDK trampoline
/// catches it at the plugin edge and returns its status; it never reaches the host.
class Error : public std::exception {
 public:
  /// Wraps a failed status (an OK one becomes INTERNAL).
  explicit Error(Status status)
      : status_(status.is_ok() ? Status(SL_INTERNAL, "Error thrown with an OK status")
                               : std::move(status)) {}
  /// Same as Error(Status(code, message)).
  Error(sl_status code, std::string message) : Error(Status(code, std::move(message))) {}
  /// The status the plugin edge returns.
  [[nodiscard]] const Status& status() const noexcept { return status_; }
  /// The message, or the code's name for a reported status.
  [[nodiscard]] const char* what() const noexcept override {
    return status_.message().empty() ? sl_status_name(status_.code()) : status_.message().c_str();
  }

 private:
  Status status_;
};

/// The Error Config::fail throws: INVALID_ARGUMENT about one config key. Carries the key and
/// the bare problem apart, so a validate callback can hand them to the host, which then
/// points at the key's file:line:col. Since: SDK of ABI 1.2.
class ConfigError : public Error {
 public:
  /// `message` is the full text ("node 'x': key 'n' must be ..."); `key` and `problem` its
  /// parts.
  ConfigError(std::string message, std::string key, std::string problem)
      : Error(SL_INVALID_ARGUMENT, std::move(message)),
        key_(std::move(key)),
        problem_(std::move(problem)) {}
  /// The config key at fault.
  [[nodiscard]] const std::string& key() const noexcept { return key_; }
  /// What is wrong with it ("must be positive (got 0)").
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

 private:
  std::string key_;
  std::string problem_;
};

/// A value of type T or a failed Status (an `expected`-like result).
/// Converts implicitly from T and from Status, so `return value;` and
/// `return invalid_argument("...");` both work in a function returning Result<T>.
template <class T>
class [[nodiscard]] Result {
 public:
  /// Success holding `value`.
  Result(T value) : v_(std::in_place_index<1>, std::move(value)) {}  // NOLINT
  /// Failure; an OK status here is a bug and becomes INTERNAL.
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : v_(std::in_place_index<0>,
           status.is_ok() ? internal_error("Result made from OK status") : std::move(status)) {}

  /// True when a value is held.
  [[nodiscard]] bool is_ok() const noexcept { return v_.index() == 1; }
  /// The failure, or OK when a value is held.
  [[nodiscard]] Status status() const& { return is_ok() ? Status() : *std::get_if<0>(&v_); }
  /// Same, moving the failure out.
  [[nodiscard]] Status status() && { return is_ok() ? Status() : std::move(*std::get_if<0>(&v_)); }
  /// The value; throws Error(status()) when there is none (caught at the plugin edge).
  T& value() & { return check(), *std::get_if<1>(&v_); }
  /// See value().
  const T& value() const& { return check(), *std::get_if<1>(&v_); }
  /// See value().
  T&& value() && { return check(), std::move(*std::get_if<1>(&v_)); }
  /// The value; precondition: is_ok().
  T& operator*() & noexcept { return *std::get_if<1>(&v_); }
  /// See operator*().
  const T& operator*() const& noexcept { return *std::get_if<1>(&v_); }
  /// See operator*().
  T* operator->() noexcept { return std::get_if<1>(&v_); }
  /// See operator*().
  const T* operator->() const noexcept { return std::get_if<1>(&v_); }

 private:
  void check() const {
    if (!is_ok()) throw Error(*std::get_if<0>(&v_));
  }
  std::variant<Status, T> v_;
};

namespace detail {

/// Hands a finished status to the host: OK -> SL_OK; a failure to report -> set_error()
/// with its message (or its code's name) and its code; a reported failure -> its code.
inline sl_status report(sl_context* ctx, const Status& status) noexcept {
  if (status.is_ok()) return SL_OK;
  if (!status.is_reported() && ctx != nullptr) {
    const std::string& msg = status.message();
    const char* text = msg.empty() ? sl_status_name(status.code()) : msg.c_str();
    host().set_error(ctx, text, msg.empty() ? std::strlen(text) : msg.size());
  }
  return status.code();
}

inline sl_status report_text(sl_context* ctx, sl_status code, const char* prefix,
                             const char* what) noexcept {
  if (ctx == nullptr) return code;
  try {
    std::string msg = prefix == nullptr ? std::string(what) : std::string(prefix) + ": " + what;
    host().set_error(ctx, msg.data(), msg.size());
  } catch (...) {
    host().set_error(ctx, what, std::strlen(what));
  }
  return code;
}

/// The plugin edge for the exception in flight: Error -> its status; bad_alloc ->
/// RESOURCE_EXHAUSTED; std::invalid_argument / std::out_of_range -> INVALID_ARGUMENT /
/// OUT_OF_RANGE; any other std::exception -> INTERNAL ("uncaught exception: what()");
/// anything else -> UNKNOWN. `prefix` (may be null) goes before the message, e.g. the name
/// of the function that threw.
inline sl_status report_exception(sl_context* ctx, const char* prefix) noexcept {
  try {
    throw;
  } catch (const Error& e) {
    const Status& st = e.status();
    if (prefix == nullptr || st.is_reported() || st.message().empty()) return report(ctx, st);
    return report_text(ctx, st.code(), prefix, st.message().c_str());
  } catch (const std::bad_alloc&) {
    return report_text(ctx, SL_RESOURCE_EXHAUSTED, prefix, "out of memory");
  } catch (const std::invalid_argument& e) {
    return report_text(ctx, SL_INVALID_ARGUMENT, prefix, e.what());
  } catch (const std::out_of_range& e) {
    return report_text(ctx, SL_OUT_OF_RANGE, prefix, e.what());
  } catch (const std::exception& e) {
    try {
      const std::string what = std::string("uncaught exception: ") + e.what();
      return report_text(ctx, SL_INTERNAL, prefix, what.c_str());
    } catch (...) {
      return report_text(ctx, SL_INTERNAL, prefix, e.what());
    }
  } catch (...) {
    return report_text(ctx, SL_UNKNOWN, prefix, "uncaught exception of unknown type");
  }
}

/// Runs `f` (returning Status) at the plugin edge: nothing escapes, every failure becomes
/// an sl_status with its message set on `ctx`. `prefix` (may be null) goes before the
/// message of an exception (a returned Status carries its own wording).
template <class F>
sl_status guard(sl_context* ctx, F&& f, const char* prefix = nullptr) noexcept {
  try {
    return report(ctx, std::forward<F>(f)());
  } catch (...) {
    return report_exception(ctx, prefix);
  }
}

/// Runs `f` (returning void) where the C callback cannot return a status (stop, posted
/// tasks): a failure is logged at ERROR level under the node instead.
template <class F>
void guard_void(sl_context* ctx, const char* where, F&& f) noexcept {
  try {
    std::forward<F>(f)();
  } catch (const std::exception& e) {
    try {
      std::string msg = std::string(where) + " failed: " + e.what();
      host().log(ctx, SL_LOG_ERROR, msg.data(), msg.size());
    } catch (...) {
      host().log(ctx, SL_LOG_ERROR, where, std::strlen(where));
    }
  } catch (...) {
    host().log(ctx, SL_LOG_ERROR, where, std::strlen(where));
  }
}

}  // namespace detail
}  // namespace sluice::sdk

#define SLUICE_SDK_CONCAT_INNER(a, b) a##b
#define SLUICE_SDK_CONCAT(a, b) SLUICE_SDK_CONCAT_INNER(a, b)

/// Returns from the enclosing function (returning Status or Result<T>) with the status of
/// `expr` when it is not OK.
#define SLUICE_SDK_RETURN_IF_ERROR(expr)                        \
  do {                                                          \
    ::sluice::sdk::Status sluice_sdk_status_ = (expr);          \
    if (!sluice_sdk_status_.is_ok()) return sluice_sdk_status_; \
  } while (false)

/// `decl = value of expr` (a Result<T>), or returns its failure from the enclosing
/// function. `decl` may declare: SLUICE_SDK_ASSIGN_OR_RETURN(Value v, ctx.parse_json(s));
#define SLUICE_SDK_ASSIGN_OR_RETURN(decl, expr) \
  SLUICE_SDK_ASSIGN_OR_RETURN_IMPL(SLUICE_SDK_CONCAT(sluice_sdk_result_, __LINE__), decl, expr)
#define SLUICE_SDK_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                      \
  if (!tmp.is_ok()) return std::move(tmp).status();       \
  decl = std::move(*tmp)

#endif  // SLUICE_DETAIL_STATUS_HPP
