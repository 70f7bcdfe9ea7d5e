// validate(spec, arch): every rule a tensor map must obey on an architecture, documented or
// found by sweeping the real driver, each one function with an id. The first broken rule is
// thrown as RuleViolation with the offending values and a concrete fix, which diagnose() also
// gives as data. The overloads without an architecture judge for Hopper (sm_90a).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tmakit/core/error.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

// Bit (1 << Arch) per architecture on which a rule can refuse a spec; 0 for a value past the
// known architectures (no rule holds there).
inline constexpr std::uint8_t arch_bit(Arch a) {
  return static_cast<unsigned>(a) <= static_cast<unsigned>(Arch::sm_120a)
             ? static_cast<std::uint8_t>(1u << static_cast<unsigned>(a))
             : std::uint8_t{0};
}
inline constexpr std::uint8_t kEveryArch = 0x0f;
inline constexpr std::uint8_t kBlackwellArchs = kEveryArch & ~arch_bit(Arch::sm_90a);

struct Rule {
  std::string_view id;       // "T7"
  std::string_view summary;  // one line, for `tmakit rules` and docs
  // Throws RuleViolation when the spec breaks the rule, judged for the architecture of the
  // validate() call that runs it (sm_90a when called directly). Rules run in table order and
  // each may rely on the ones before it (T3 checks the rank before anything indexes by it).
  void (*check)(const TensorMapSpec&);
  // The architectures on which the rule can refuse a spec (arch_bit): a Blackwell-only rule
  // judges what T2, T12 and A1 refuse on Hopper.
  std::uint8_t archs = kEveryArch;
  // The id its violations carry for im2col maps, where it differs (T8's I6, T9's I7).
  std::string_view im2col_id = {};
};

// All rules, in the order validate() applies them.
std::span<const Rule> rules();
// The rules that can refuse a spec on `arch`, in order. Throws Error for an `arch` that is not
// one of kArchs, as validate() does.
std::vector<Rule> rules(Arch arch);

// Throws RuleViolation for the first rule the spec breaks.
void validate(const TensorMapSpec& spec);
void validate(const TensorMapSpec& spec, Arch arch);

// The first violation, or nullopt when the spec is valid.
std::optional<RuleViolation> find_violation(const TensorMapSpec& spec);
std::optional<RuleViolation> find_violation(const TensorMapSpec& spec, Arch arch);

// One change to one field of a spec: set `field` (the JSON key of spec_json.hpp), entry `index`
// of it when it is an array, to `value`: an unsigned number, a signed one (the pixel-box
// corners) or an enum's name ("NONE").
struct SpecFix {
  std::string field;
  std::optional<std::size_t> index;
  std::variant<std::uint64_t, std::int64_t, std::string> value;
};

// A broken rule and the fix its message suggests. The fix makes that rule pass and keeps every
// rule that passed passing, unless no value of the field does; it is the value nearest the
// given one that does so. No fix when no single field can be changed to mend the rule (a rank
// of 7, an unknown data type, an im2col extent that wraps for every corner in range).
struct Finding {
  RuleViolation violation;
  std::optional<SpecFix> fix;
};
std::optional<Finding> diagnose(const TensorMapSpec& spec);
std::optional<Finding> diagnose(const TensorMapSpec& spec, Arch arch);

// The spec with the fix applied. Throws Error for a field or index the spec does not have.
// A tileMode fix of a gather4 / scatter4 map whose direction is `any` also sets the direction
// that tile mode implied (load / store): the fixed map is for the same copy.
TensorMapSpec with_fix(TensorMapSpec spec, const SpecFix& fix);

// Applies diagnose()'s fixes one after another until the spec passes every rule: the spec
// itself when it passes, the mended spec, or nullopt when a broken rule has no fix (then
// `why`, when given, holds that rule's message).
std::optional<TensorMapSpec> nearest_passing_spec(const TensorMapSpec& spec,
                                                  std::string* why = nullptr);
std::optional<TensorMapSpec> nearest_passing_spec(const TensorMapSpec& spec, Arch arch,
                                                  std::string* why = nullptr);

}  // namespace tmakit
