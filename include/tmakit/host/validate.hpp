// validate(spec): every rule a tensor map must obey, documented or found by sweeping the real
// driver, each one function with an id. The first broken rule is thrown as RuleViolation
// with the offending values and a concrete fix.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "tmakit/core/error.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

struct Rule {
  std::string_view id;       // "T7"
  std::string_view summary;  // one line, for `tmakit rules` and docs
  // Throws RuleViolation when the spec breaks the rule. Rules run in table order and each
  // may rely on the ones before it (T3 checks the rank before anything indexes by it).
  void (*check)(const TensorMapSpec&);
};

// All rules, in the order validate() applies them.
std::span<const Rule> rules();

// Throws RuleViolation for the first rule the spec breaks.
void validate(const TensorMapSpec& spec);

// The first violation, or nullopt when the spec is valid.
std::optional<RuleViolation> find_violation(const TensorMapSpec& spec);

}  // namespace tmakit
