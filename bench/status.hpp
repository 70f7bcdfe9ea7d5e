// What became of a benchmark case: an outcome and its detail, rendered to the text the table's
// status column and the JSON's "status" carry ("ok", "FAILED: 3 wrong elements", ...).
#pragma once

#include <string>
#include <utility>

namespace tmakit::bench {

enum class Outcome {
  ok,              // checked and timed
  wrong,           // the check found wrong results: "FAILED: <detail>"
  error,           // an exception while setting up, running or checking: "error: <detail>"
  timing_error,    // checked, then an exception while timing: "error while timing: <detail>"
  capture_error,   // a stream of calls could not be captured: "error while capturing: <detail>"
  unavailable,     // a baseline's library is missing or refuses: "baseline unavailable: <detail>"
  not_applicable,  // the case does not apply to the workload's shape: "n/a: <detail>"
};

class Status {
 public:
  Status() = default;  // ok
  static Status ok() { return {}; }
  static Status wrong(std::string detail) { return {Outcome::wrong, std::move(detail)}; }
  static Status error(std::string detail) { return {Outcome::error, std::move(detail)}; }
  static Status timing_error(std::string detail) {
    return {Outcome::timing_error, std::move(detail)};
  }
  static Status capture_error(std::string detail) {
    return {Outcome::capture_error, std::move(detail)};
  }
  static Status unavailable(std::string detail) {
    return {Outcome::unavailable, std::move(detail)};
  }
  static Status not_applicable(std::string detail) {
    return {Outcome::not_applicable, std::move(detail)};
  }

  Outcome outcome() const { return outcome_; }
  const std::string& detail() const { return detail_; }
  bool is_ok() const { return outcome_ == Outcome::ok; }
  // A wrong result or an error: what makes `tmakit bench` exit 1. A missing baseline or a
  // case that does not apply is reported, not a failure.
  bool failed() const {
    return outcome_ != Outcome::ok && outcome_ != Outcome::unavailable &&
           outcome_ != Outcome::not_applicable;
  }
  // "ok", or the outcome's label, ": " and the detail (the label alone when there is none).
  std::string text() const {
    const char* label = "ok";
    switch (outcome_) {
      case Outcome::ok: return label;
      case Outcome::wrong: label = "FAILED"; break;
      case Outcome::error: label = "error"; break;
      case Outcome::timing_error: label = "error while timing"; break;
      case Outcome::capture_error: label = "error while capturing"; break;
      case Outcome::unavailable: label = "baseline unavailable"; break;
      case Outcome::not_applicable: label = "n/a"; break;
    }
    return detail_.empty() ? std::string(label) : std::string(label) + ": " + detail_;
  }
  bool operator==(const Status&) const = default;

 private:
  Status(Outcome outcome, std::string detail) : outcome_(outcome), detail_(std::move(detail)) {}
  Outcome outcome_ = Outcome::ok;
  std::string detail_;
};

}  // namespace tmakit::bench
