// Status: the error type of the native core. No exceptions cross module lines; functions
// return Status and callers use RETURN_IF_ERROR (Triton's src/status.h pattern).
#pragma once

#include <string>
#include <utility>

namespace infernode {

// Triton's core error codes. Values are shared with ts/errors.ts (StatusCode, which has no
// kSuccess); test/unit/shared-constants.test.ts checks that the two lists agree.
enum class StatusCode : int {
  kSuccess = 0,
  kUnknown = 1,
  kInternal = 2,
  kNotFound = 3,
  kInvalidArg = 4,
  kUnavailable = 5,
  kUnsupported = 6,
  kAlreadyExists = 7,
  kCancelled = 8,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Success() { return Status(); }

  bool IsOk() const { return code_ == StatusCode::kSuccess; }
  StatusCode Code() const { return code_; }
  const std::string& Message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kSuccess;
  std::string message_;
};

inline Status InvalidArg(std::string message) { return Status(StatusCode::kInvalidArg, std::move(message)); }
inline Status Unavailable(std::string message) { return Status(StatusCode::kUnavailable, std::move(message)); }
inline Status Internal(std::string message) { return Status(StatusCode::kInternal, std::move(message)); }

}  // namespace infernode

#define RETURN_IF_ERROR(expr)              \
  do {                                     \
    ::infernode::Status status__ = (expr); \
    if (!status__.IsOk()) return status__; \
  } while (false)
