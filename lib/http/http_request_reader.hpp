// The HTTP/1.1 request reader of sluice's two servers (from_http_server and the daemon's
// admin endpoint) and of the fuzz target tests/fuzz/http_request_fuzz.cc: bytes in,
// requests (or one error with its status) out, no sockets. Boost.Beast's request_parser
// does the parsing; this class adds the bounds Beast leaves to the caller.
//
// What Beast 1.74 bounds and what it does not (boost/beast/http/impl/basic_parser.ipp):
// header_limit covers the request line and the header fields; body_limit covers the
// decoded body (each chunk size is checked against it). A chunk-size line with its
// extensions and the trailer section are only parsed once they are whole in the caller's
// buffer, with no limit, and a trailer field value over 64 KiB makes basic_fields throw
// std::length_error out of put(). Here every byte Beast has not consumed stays in one
// buffer, and a request whose unconsumed bytes reach `header_bytes` fails with 431: so a
// header, one chunk line (extensions included) and the whole trailer section each stay
// under `header_bytes`, and the buffer under `header_bytes` plus one read. put() runs in a
// try block all the same: nothing thrown while parsing leaves the reader.
//
// Also refused (400): obs-fold (a header line continued on the next line, RFC 9112 5.2),
// an HTTP/1.1 request without exactly one Host field (RFC 9112 3.2).
//
// Not thread-safe; one reader per connection. Header-only, so that the host and the net
// plugin (which does not link the host) share the one implementation.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::net {

struct HttpLimits {
  /// Longest request line plus header fields; also the longest chunk-size line (with its
  /// extensions) and the longest trailer section. Over it: 431.
  size_t header_bytes = size_t{16} * 1024;
  /// Largest body (decoded, for chunked requests). Over it: 413.
  uint64_t body_bytes = uint64_t{1} << 20;
};

class HttpRequestReader {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  enum class Step {
    need_more,  // every buffered byte is used or waits for the rest of its line: feed()
    header,     // the current request's header is complete, its body is not (once per
                // request; for "Expect: 100-continue")
    request,    // a request is complete: take() it
    error,      // the request is refused: status() and message(); the reader is spent
  };

  explicit HttpRequestReader(HttpLimits limits) noexcept : limits_(limits) {}

  /// Received bytes. Call only after next() said need_more (so the buffer stays bounded).
  void feed(std::string_view bytes) { in_.append(bytes); }

  /// Parses what is buffered.
  Step next() noexcept {
    if (status_ != 0) return Step::error;
    if (ready_) return Step::request;
    try {
      return parse();
    } catch (const std::length_error& e) {
      return fail(431, std::string("a header or trailer field is too large: ") + e.what());
    } catch (const std::exception& e) {
      return fail(400, std::string("malformed request: ") + e.what());
    } catch (...) {
      return fail(400, "malformed request");
    }
  }

  /// The complete request (after next() said request); the next call to next() reads the
  /// following one from the bytes left over (pipelining).
  Request take() {
    Request r = parser_->release();
    parser_.reset();
    ready_ = false;
    return r;
  }

  /// The header of the request in progress (after next() said header or request).
  [[nodiscard]] const Request& header() const { return parser_->get(); }

  /// True while no byte of a next request has arrived (between requests, or before the first).
  [[nodiscard]] bool between_requests() const noexcept { return !parser_ && in_.empty(); }
  /// True while a request has begun and its header is not complete.
  [[nodiscard]] bool reading_header() const noexcept {
    return !between_requests() && (!parser_ || !parser_->is_header_done());
  }
  /// Bytes buffered and not yet used (bounded by header_bytes plus one feed).
  [[nodiscard]] size_t buffered() const noexcept { return in_.size(); }
  /// After Step::error: 400, 413 or 431, and why.
  [[nodiscard]] int status() const noexcept { return status_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  Step fail(int status, std::string message) noexcept {
    status_ = status;
    try {
      message_ = std::move(message);
    } catch (...) {  // keep the status; the message is a courtesy
    }
    in_.clear();
    return Step::error;
  }

  Step parse() {
    namespace http = boost::beast::http;
    for (;;) {
      if (!parser_) {
        if (in_.empty()) return Step::need_more;
        parser_.emplace();
        parser_->header_limit(static_cast<uint32_t>(limits_.header_bytes));
        parser_->body_limit(limits_.body_bytes);
        parser_->eager(false);  // stop after the header, to check it before the body
        header_reported_ = false;
        header_seen_ = 0;
        after_newline_ = false;
        stalled_ = false;
      }
      if (in_.empty()) return Step::need_more;
      // Beast asserts (basic_parser.ipp, parse_chunk_header) that it is called again for a
      // final chunk it could not finish with at least 5 bytes ("0\r\n" and more). Every
      // chunked request ends with 5 or more unconsumed bytes ("0\r\n\r\n"), so waiting for
      // them after a call that used nothing cannot stall a complete request.
      if (stalled_ && in_.size() < 5 && parser_->is_header_done() && parser_->chunked()) {
        return Step::need_more;
      }
      const bool in_header = !parser_->is_header_done();
      boost::beast::error_code ec;
      const size_t used = parser_->put(boost::asio::buffer(in_.data(), in_.size()), ec);
      if (ec && ec != http::error::need_more) {
        if (ec == http::error::header_limit) return header_too_large();
        if (ec == http::error::body_limit) {
          return fail(413, "body larger than " + std::to_string(limits_.body_bytes) + " bytes");
        }
        return fail(400, "malformed request: " + ec.message());
      }
      if (in_header) {
        // Beast consumes complete header fields as they come and applies header_limit to
        // the unconsumed rest only: the total is counted here. The parser stops at the end
        // of the header (not eager), so in_[0, used) holds header bytes only.
        header_seen_ += used;
        if (folded(std::string_view(in_.data(), used))) {
          return fail(400, "a header field is folded over several lines (obs-fold)");
        }
        const bool done = parser_->is_header_done();
        if (header_seen_ + (done ? 0 : in_.size() - used) >= limits_.header_bytes) {
          return header_too_large();
        }
        if (done) {
          if (auto refused = check_host()) return fail(400, std::move(*refused));
          parser_->eager(true);
        }
      }
      in_.erase(0, used);
      stalled_ = used == 0;
      if (parser_->is_done()) {
        ready_ = true;
        return Step::request;
      }
      if (parser_->is_header_done() && !header_reported_) {
        header_reported_ = true;
        return Step::header;
      }
      if (used == 0 || in_.empty()) {
        // Waiting for the rest of a line: the request line and fields (Beast's header_limit),
        // a chunk-size line or the trailer section (Beast sets no limit there).
        if (in_.size() >= limits_.header_bytes) {
          return fail(431, "chunk line or trailer section larger than " +
                               std::to_string(limits_.header_bytes) + " bytes");
        }
        return Step::need_more;
      }
    }
  }

  Step header_too_large() {
    return fail(431,
                "request header larger than " + std::to_string(limits_.header_bytes) + " bytes");
  }

  // True when `piece` (the next header bytes) continues a line onto the next one: a line
  // break followed by a space or tab. The last byte is remembered across pieces.
  bool folded(std::string_view piece) noexcept {
    for (char c : piece) {
      if (after_newline_ && (c == ' ' || c == '\t')) return true;
      after_newline_ = c == '\n';
    }
    return false;
  }

  // Why a parsed header is refused, if it is.
  std::optional<std::string> check_host() const {
    namespace http = boost::beast::http;
    const Request& req = parser_->get();
    if (req.version() >= 11 && req.count(http::field::host) != 1) {
      return std::string(req.count(http::field::host) == 0 ? "no Host header"
                                                           : "more than one Host header");
    }
    return std::nullopt;
  }

  HttpLimits limits_;
  std::string in_;  // received, not yet consumed by the parser
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool header_reported_ = false;
  size_t header_seen_ = 0;      // header bytes the parser consumed (current request)
  bool after_newline_ = false;  // the last header byte consumed was '\n'
  bool stalled_ = false;        // the last put() used no byte
  bool ready_ = false;
  int status_ = 0;
  std::string message_;
};

}  // namespace sluice::net
