#pragma once
// Status and Result<T>: checked errors without exceptions, shaped like std::expected
// (g++ 12 has no <expected> in C++20 mode). The message names the file, call or device.

#include <string>
#include <utility>
#include <variant>

namespace gpuledger {

enum class ErrorCode {
  kInvalidArgument,  // bad input from a user: flags, files, query parameters
  kNotFound,
  kIo,
  kUnavailable,  // a source that is down (socket gone, library missing)
  kUnsupported,  // the source exists but cannot give this (NVML NOT_SUPPORTED)
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// A Status is either ok or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(status.error()) {}  // NOLINT: only from a failed Status

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status::Ok() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

inline Error InvalidArgument(std::string message) {
  return {ErrorCode::kInvalidArgument, std::move(message)};
}
inline Error NotFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
inline Error IoError(std::string message) { return {ErrorCode::kIo, std::move(message)}; }
inline Error Unavailable(std::string message) {
  return {ErrorCode::kUnavailable, std::move(message)};
}
inline Error Unsupported(std::string message) {
  return {ErrorCode::kUnsupported, std::move(message)};
}
inline Error Internal(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

}  // namespace gpuledger
