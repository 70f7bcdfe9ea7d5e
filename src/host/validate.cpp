// The tensor-map rules. Each is one function that throws RuleViolation(id, message) with the
// offending values and a fix. Ids follow docs/rules.md: T* tiled (and shared with im2col),
// I* im2col only, X* found by sweeping the real driver; Blackwell's encodings (sm_100a, sm_103a,
// sm_120a): A1 which encodings an architecture has, P* packed types, S1 swizzle atomicity,
// W* im2col-wide, G* gather4/scatter4.
//
// A fix names one field and the value nearest the given one that makes the rule pass while
// every rule that passed keeps passing (chosen by judging candidate values with the rules
// themselves, so the suggestion can never be one that the same or another rule refuses: a rule
// that fails either way and would change the same field again gets its value where that mends
// both).
#include "tmakit/host/validate.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tmakit {
namespace {

using std::to_string;

// NOTE: while a fix's candidates are judged, a broken rule only says so: no message, no fix
// of its own (which would search candidates again).
thread_local bool t_verdict_only = false;
// The architecture the rules judge for: set by validate(spec, arch) for the rules it runs (and
// the candidate fixes they judge), sm_90a otherwise.
thread_local Arch t_arch = Arch::sm_90a;
class ArchScope {
 public:
  explicit ArchScope(Arch a) : saved_(t_arch) { t_arch = a; }
  ~ArchScope() { t_arch = saved_; }
  ArchScope(const ArchScope&) = delete;
  ArchScope& operator=(const ArchScope&) = delete;

 private:
  Arch saved_;
};
bool hopper() {
  return t_arch == Arch::sm_90a;
}
std::string arch_name() {
  return std::string(name(t_arch));
}
// Where in its rule the check failed (the entry of the array, or the part of the rule), so a
// candidate fix that mends this place while a later entry still fails counts as mending it.
struct Fails {
  int site;
};

class VerdictOnly {
 public:
  VerdictOnly() : saved_(t_verdict_only) { t_verdict_only = true; }
  ~VerdictOnly() { t_verdict_only = saved_; }
  VerdictOnly(const VerdictOnly&) = delete;
  VerdictOnly& operator=(const VerdictOnly&) = delete;

 private:
  bool saved_;
};

class FixableViolation : public RuleViolation {
 public:
  FixableViolation(std::string id, const std::string& message, std::optional<SpecFix> fix)
      : RuleViolation(std::move(id), message), fix_(std::move(fix)) {}
  const std::optional<SpecFix>& fix() const { return fix_; }

 private:
  std::optional<SpecFix> fix_;
};

struct Explained {
  std::string message;
  std::optional<SpecFix> fix;
};

// `explain` builds the message and the fix; it runs only when someone will read them.
template <class Explain>
[[noreturn]] void broken(const char* id, int site, Explain&& explain) {
  if (t_verdict_only) throw Fails{site};
  Explained e = explain();
  throw FixableViolation(id, e.message, std::move(e.fix));
}
[[noreturn]] void broken(const char* id, const std::string& message) {
  broken(id, 0, [&] { return Explained{message, std::nullopt}; });
}

// "use 24 or 28": the chosen value and, when it is one of the two nearest values of `given`
// whose rows are whole 16-byte chunks (`per16` elements each), the other of the two too where
// `offered(other)` (a value the spec passes with: a message offers no value a rule refuses).
std::string use_whole_chunks(std::int64_t chosen, std::int64_t given, std::int64_t per16,
                             const std::function<bool(std::int64_t)>& offered) {
  const std::int64_t lo = given / per16 * per16, hi = lo + per16;
  std::string use = "use " + to_string(chosen);
  for (std::int64_t other : {lo, hi}) {
    if (other != chosen && other > 0 && other <= 256 && (chosen == lo || chosen == hi) &&
        offered(other)) {
      use = "use " + to_string(std::min(chosen, other)) + " or " +
            to_string(std::max(chosen, other));
    }
  }
  return use;
}

std::string shown(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : std::string("a value in range");
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;
constexpr std::uint64_t kTwo40 = std::uint64_t{1} << 40;
constexpr std::uint64_t kMaxAddress = std::uint64_t{1} << 57;
// NOTE: the driver sizes boxes against the largest shared-memory allocation, 228 KiB.
constexpr std::uint64_t kMaxBoxBytes = 228 * 1024;

bool tiled(const TensorMapSpec& s) { return s.kind == EncodeKind::tiled; }
bool wide(const TensorMapSpec& s) {
  return s.kind == EncodeKind::im2col_wide;
}
int esize(const TensorMapSpec& s) { return element_bytes(s.data_type); }
bool packed(const TensorMapSpec& s) {
  return is_packed(s.data_type);
}
// The ALIGN16B types: 16 values padded to 16 bytes in shared memory.
bool padded(const TensorMapSpec& s) { return is_padded(s.data_type); }
// Elements in one 16-byte chunk of a row, the least whole row: 16 / elementSize, or for the
// packed types the fewest values whose bits fill whole 16-byte chunks (32 of 4 bits, 64 of 6).
std::int64_t per16(const TensorMapSpec& s) {
  if (!packed(s)) return 16 / esize(s);
  return s.data_type == DataType::packed_u6_align16 ? 64 : 32;
}
// Whether `n` elements make whole 16-byte chunks in global memory.
bool whole_chunks(const TensorMapSpec& s, std::uint64_t n) {
  return packed(s) ? n * static_cast<std::uint64_t>(value_bits(s.data_type)) % 128 == 0
                   : n * static_cast<std::uint64_t>(esize(s)) % 16 == 0;
}
// Bytes `n` elements take in shared memory (a packed row rounded up to whole bytes).
std::uint64_t shared_bytes(const TensorMapSpec& s, std::uint64_t n) {
  if (!packed(s)) return n * static_cast<std::uint64_t>(esize(s));
  return (n * static_cast<std::uint64_t>(shared_value_bits(s.data_type)) + 7) / 8;
}
// "elementSize 2" or, for a packed type, "8 bits per value in shared memory".
std::string esize_text(const TensorMapSpec& s) {
  if (!packed(s)) return "elementSize " + to_string(esize(s));
  return to_string(shared_value_bits(s.data_type)) + " bits per value in shared memory";
}
std::string dt(const TensorMapSpec& s) { return std::string(name(s.data_type)); }
std::string idx(const char* array, std::size_t i) {
  return std::string(array) + "[" + to_string(i) + "]";
}
std::uint64_t address_align(const TensorMapSpec& s) {
  return s.interleave == Interleave::bytes32 ? 32 : 16;
}
// The alignment a fix of an address or a stride aims at: T4's and T6's, or the 32 bytes P1 asks
// of the padded types (a Blackwell rule), so that the value one rule proposes is none P1 refuses.
std::uint64_t fix_align(const TensorMapSpec& s) {
  return padded(s) && !hopper() ? 32 : address_align(s);
}
// " (16U4_ALIGN16B needs 32-byte alignment)" where fix_align() is stricter than T4's and T6's own
// rule, which says why the fix is a multiple of 32.
std::string padded_note(const TensorMapSpec& s, const char* what) {
  if (fix_align(s) == address_align(s)) return "";
  return " (" + std::string(name(s.data_type)) + " needs " + what + ")";
}

// ---- fixes ----------------------------------------------------------------------------------

// The fields a fix can change, by JSON key: numbers, then the enums whose fixes depend on the
// other rules (a value is their number).
enum class Field {
  address,
  dim,
  stride,
  box,
  element_stride,
  lower,
  upper,
  channels,
  pixels,
  lower_width,
  upper_width,
  swizzle,
  interleave,
  tile_mode,
  direction,
};

const char* key(Field f) {
  switch (f) {
    case Field::address: return "globalAddress";
    case Field::dim: return "globalDim";
    case Field::stride: return "globalStrides";
    case Field::box: return "boxDim";
    case Field::element_stride: return "elementStrides";
    case Field::lower: return "pixelBoxLowerCorner";
    case Field::upper: return "pixelBoxUpperCorner";
    case Field::channels: return "channelsPerPixel";
    case Field::pixels: return "pixelsPerColumn";
    case Field::lower_width: return "pixelBoxLowerCornerWidth";
    case Field::upper_width: return "pixelBoxUpperCornerWidth";
    case Field::swizzle: return "swizzle";
    case Field::interleave: return "interleave";
    case Field::tile_mode: return "tileMode";
    case Field::direction: return "direction";
  }
  return "";
}
bool is_enum(Field f) {
  return f == Field::swizzle || f == Field::interleave || f == Field::tile_mode ||
         f == Field::direction;
}
bool is_array(Field f) {
  return f != Field::address && f != Field::channels && f != Field::pixels &&
         f != Field::lower_width && f != Field::upper_width && !is_enum(f);
}
bool is_signed(Field f) {
  return f == Field::lower || f == Field::upper || f == Field::lower_width ||
         f == Field::upper_width;
}

// A new tile mode. NOTE: a gather4 map is for loads and a scatter4 map for stores whether or
// not `direction` says so (copy_direction: P6, S1); a change that makes it a plain tiled map
// keeps that copy, so a direction left to the tile mode is written out (else the fixed map
// would pass as a load of a type or swizzle that the store it is for cannot take). Between
// gather4 and scatter4 the direction stays unsaid: each mode implies its own.
void set_tile_mode(TensorMapSpec& s, TileMode m) {
  if (s.kind == EncodeKind::tiled && s.direction == Direction::any && m == TileMode::tile) {
    if (s.tile_mode == TileMode::gather4) s.direction = Direction::load;
    if (s.tile_mode == TileMode::scatter4) s.direction = Direction::store;
  }
  s.tile_mode = m;
}

// Sets field f (entry i) to v; v is already within the field's type (the candidates are).
void set(TensorMapSpec& s, Field f, std::size_t i, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  switch (f) {
    case Field::address: s.global_address = u; break;
    case Field::dim: s.global_dim.at(i) = u; break;
    case Field::stride: s.global_strides_bytes.at(i) = u; break;
    case Field::box: s.box_dim.at(i) = static_cast<std::uint32_t>(u); break;
    case Field::element_stride: s.element_strides.at(i) = static_cast<std::uint32_t>(u); break;
    case Field::lower: s.pixel_box_lower_corner.at(i) = static_cast<std::int32_t>(v); break;
    case Field::upper: s.pixel_box_upper_corner.at(i) = static_cast<std::int32_t>(v); break;
    case Field::channels: s.channels_per_pixel = static_cast<std::uint32_t>(u); break;
    case Field::pixels: s.pixels_per_column = static_cast<std::uint32_t>(u); break;
    case Field::lower_width: s.pixel_box_lower_corner_width = static_cast<std::int32_t>(v); break;
    case Field::upper_width: s.pixel_box_upper_corner_width = static_cast<std::int32_t>(v); break;
    case Field::swizzle: s.swizzle = static_cast<Swizzle>(v); break;
    case Field::interleave: s.interleave = static_cast<Interleave>(v); break;
    case Field::tile_mode: set_tile_mode(s, static_cast<TileMode>(v)); break;
    case Field::direction: s.direction = static_cast<Direction>(v); break;
  }
}

// The value of field f (entry i), as set() takes it.
std::int64_t get(const TensorMapSpec& s, Field f, std::size_t i) {
  switch (f) {
    case Field::address: return static_cast<std::int64_t>(s.global_address);
    case Field::dim: return static_cast<std::int64_t>(s.global_dim.at(i));
    case Field::stride: return static_cast<std::int64_t>(s.global_strides_bytes.at(i));
    case Field::box: return s.box_dim.at(i);
    case Field::element_stride: return s.element_strides.at(i);
    case Field::lower: return s.pixel_box_lower_corner.at(i);
    case Field::upper: return s.pixel_box_upper_corner.at(i);
    case Field::channels: return s.channels_per_pixel;
    case Field::pixels: return s.pixels_per_column;
    case Field::lower_width: return s.pixel_box_lower_corner_width;
    case Field::upper_width: return s.pixel_box_upper_corner_width;
    case Field::swizzle: return static_cast<std::int64_t>(s.swizzle);
    case Field::interleave: return static_cast<std::int64_t>(s.interleave);
    case Field::tile_mode: return static_cast<std::int64_t>(s.tile_mode);
    case Field::direction: return static_cast<std::int64_t>(s.direction);
  }
  return 0;
}

// The name of value v of an enum field ("32B").
std::string enum_name(Field f, std::int64_t v) {
  switch (f) {
    case Field::swizzle: return std::string(name(static_cast<Swizzle>(v)));
    case Field::interleave: return std::string(name(static_cast<Interleave>(v)));
    case Field::tile_mode: return std::string(name(static_cast<TileMode>(v)));
    case Field::direction: return std::string(name(static_cast<Direction>(v)));
    default: return std::to_string(v);
  }
}

SpecFix make_fix(Field f, std::size_t i, std::int64_t v) {
  SpecFix fix{key(f), std::nullopt, std::uint64_t{0}};
  if (is_array(f)) fix.index = i;
  if (is_enum(f)) {
    fix.value = enum_name(f, v);
  } else if (is_signed(f)) {
    fix.value = v;
  } else {
    fix.value = static_cast<std::uint64_t>(v);
  }
  return fix;
}

const Rule& rule_entry(std::string_view id);  // the table below
std::span<const Rule> table();

// Where the rule fails, or nullopt when it passes (inside VerdictOnly).
std::optional<int> failure_site(const Rule& r, const TensorMapSpec& s) {
  try {
    r.check(s);
  } catch (const Fails& f) {
    return f.site;
  }
  return std::nullopt;
}
bool passes(const Rule& r, const TensorMapSpec& s) { return !failure_site(r, s).has_value(); }

// Which rules of the table the spec passes. NOTE: the rules after T2, T12, T3 and I1 may index
// by the rank and the data type, so past a failure of one of those none is judged (they count
// as failing, which asks nothing of a fix).
std::vector<bool> passing(const TensorMapSpec& s) {
  VerdictOnly quiet;
  std::vector<bool> ok(table().size(), false);
  for (std::size_t r = 0; r < table().size(); ++r) {
    if (!(table()[r].archs & arch_bit(t_arch))) {
      ok[r] = true;  // not a rule of this architecture
      continue;
    }
    ok[r] = passes(table()[r], s);
    const auto id = table()[r].id;
    if (!ok[r] && (id == "T2" || id == "T12" || id == "T3" || id == "I1")) break;
  }
  return ok;
}

// Whether t passes every rule that `before` (passing() of another spec) says passed: what
// passing(t) would tell, judging only those rules and stopping at the first that fails.
bool keeps(const TensorMapSpec& t, const std::vector<bool>& before) {
  VerdictOnly quiet;
  for (std::size_t r = 0; r < table().size(); ++r) {
    if (before[r] && (table()[r].archs & arch_bit(t_arch)) && !passes(table()[r], t)) return false;
  }
  return true;
}

// Whether value v of field f (entry i) mends rule r of s where it fails at `site` (the rule
// passes, or fails only at a later site) and keeps every rule of `before` (passing(s)) passing.
bool mends_all_at(const TensorMapSpec& s, const Rule& r, int site, Field f, std::size_t i,
                  std::int64_t v, const std::vector<bool>& before) {
  VerdictOnly quiet;
  TensorMapSpec t = s;
  set(t, f, i, v);
  const auto fails_at = failure_site(r, t);
  if (fails_at && *fails_at <= site) return false;
  return keeps(t, before);
}

// Set while the fixes of other rules are asked for (reconciled()): their own choices are not
// reconciled again.
thread_local bool t_reconciling = false;
// Gives a thread-local flag a value for a scope.
class FlagScope {
 public:
  FlagScope(bool& flag, bool value) : flag_(flag), saved_(flag) { flag = value; }
  ~FlagScope() { flag_ = saved_; }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  bool& flag_;
  bool saved_;
};

// Whether rule k, failing on t at `site`, may be mended by field f (entry i): k judged with the
// entry at a few probe values (every value of an enum) passes or fails later for one of them.
// NOTE: a cheap filter before k's fix is asked for, which searches candidates: a fix that names
// the entry mends k with its value, so a rule no value of the entry mends never names it, and
// the probes (edges of the alignments, sizes and corners the rules judge) find those that do.
bool mended_by(const Rule& k, const TensorMapSpec& t, int site, Field f, std::size_t i) {
  static constexpr std::int64_t kProbes[] = {0, 1, 2, 16, 32, 64, 128, 256, 1024, 65536, -1, -128};
  const std::int64_t enum_count = f == Field::swizzle      ? 7
                                  : f == Field::interleave ? 3
                                  : f == Field::tile_mode  ? 3
                                  : f == Field::direction  ? 4
                                                           : 0;
  VerdictOnly quiet;
  auto mends = [&](std::int64_t v) {
    TensorMapSpec u = t;
    set(u, f, i, v);
    const auto at = failure_site(k, u);
    return !at || *at > site;
  };
  if (enum_count > 0) {
    for (std::int64_t v = 0; v < enum_count; ++v) {
      if (mends(v)) return true;
    }
    return false;
  }
  for (std::int64_t v : kProbes) {
    if ((v >= 0 || is_signed(f)) && mends(v)) return true;
  }
  return false;
}

// The value of field f (entry i) that the first rule t breaks proposes, when its fix changes
// that entry; nullopt otherwise (t passes, or the fix is another field's or none).
std::optional<std::int64_t> asked_again(const TensorMapSpec& t, Field f, std::size_t i) {
  const Rule* first = nullptr;
  int site = 0;
  {
    VerdictOnly quiet;
    for (const Rule& k : table()) {
      if (!(k.archs & arch_bit(t_arch))) continue;
      if (const auto at = failure_site(k, t)) {
        first = &k;
        site = *at;
        break;
      }
    }
  }
  if (!first || !mended_by(*first, t, site, f, i)) return std::nullopt;
  FlagScope messages(t_verdict_only, false), once(t_reconciling, true);
  try {
    first->check(t);
  } catch (const FixableViolation& e) {
    const auto& fix = e.fix();
    if (fix && fix->field == key(f) && (!is_array(f) || fix->index == i)) {
      try {
        return get(with_fix(t, *fix), f, i);
      } catch (const Error&) {
      }
    }
  }
  return std::nullopt;
}

// NOTE: choose() keeps the rules that passed passing; a rule that failed before fails after any
// candidate too, so it does not tell candidates apart, and may refuse the chosen value v (P1 a
// 16-byte-aligned address of a padded type, T10 the swizzle S1 proposes under interleave 32B).
// Where such a rule's own fix would change the same field entry again, its value is taken
// instead when it mends this rule as well and keeps the others passing (a few rounds, for a
// value a third rule refuses), so that no fix is one that the next fix replaces.
std::int64_t reconciled(const TensorMapSpec& s, const Rule& r, int site, Field f, std::size_t i,
                        std::int64_t v, const std::vector<bool>& before) {
  if (t_reconciling) return v;
  std::vector<std::int64_t> tried{v};
  for (int round = 0; round < 4; ++round) {
    TensorMapSpec t = s;
    set(t, f, i, v);
    const auto w = asked_again(t, f, i);
    if (!w || std::find(tried.begin(), tried.end(), *w) != tried.end()) return v;
    if (!mends_all_at(s, r, site, f, i, *w, before)) return v;
    v = *w;
    tried.push_back(v);
  }
  return v;
}

// Chooses the value of field f (entry i) that mends rule `rule` of spec s where it fails at
// `site`: the first of `candidates` that mends it and keeps every rule that passed passing
// (reconciled() with a rule that fails either way), else the first that mends it; nullopt when
// none does. Mended: the rule passes, or fails only at a later site. `candidates` is called
// with a sink and offers values nearest first until the sink returns true.
using Sink = std::function<bool(std::int64_t)>;
std::optional<std::int64_t> choose(const TensorMapSpec& s, std::string_view rule, int site,
                                   Field f, std::size_t i,
                                   const std::function<void(const Sink&)>& candidates,
                                   bool keep_others = false) {
  const Rule& r = rule_entry(rule);
  const auto before = passing(s);
  std::optional<std::int64_t> mends_rule, mends_all;
  {
    VerdictOnly quiet;
    candidates([&](std::int64_t v) {
      TensorMapSpec t = s;
      set(t, f, i, v);
      const auto fails_at = failure_site(r, t);
      if (fails_at && *fails_at <= site) return false;
      if (!mends_rule) mends_rule = v;
      if (!keeps(t, before)) return false;
      mends_all = v;
      return true;
    });
  }
  if (mends_all) mends_all = reconciled(s, r, site, f, i, *mends_all, before);
  // keep_others: the caller has other fields to try, so a value that breaks a rule is no answer
  return mends_all || keep_others ? mends_all : mends_rule;
}

// Whether `v` in field f[i] mends `rule` whole (every site) and breaks no rule `s` passes.
bool mends_whole(const TensorMapSpec& s, std::string_view rule, Field f, std::size_t i,
                 std::int64_t v) {
  TensorMapSpec t = s;
  set(t, f, i, v);
  VerdictOnly quiet;
  return !failure_site(rule_entry(rule), t) && keeps(t, passing(s));
}

// Offers the values of [lo, hi] nearest `from` first (ties: the lower first), at most `limit`.
std::function<void(const Sink&)> nearest(std::int64_t from, std::int64_t lo, std::int64_t hi,
                                         std::int64_t limit = 4096) {
  return [=](const Sink& sink) {
    const std::int64_t start = std::clamp(from, lo, hi);
    if (sink(start)) return;
    std::int64_t offered = 1;
    for (std::int64_t k = 1; offered < limit; ++k) {
      const bool below = start - k >= lo, above = start + k <= hi;
      if (!below && !above) return;
      if (below && (++offered, sink(start - k))) return;
      if (above && (++offered, sink(start + k))) return;
    }
  };
}

// Offers the given values in order.
std::function<void(const Sink&)> these(std::vector<std::int64_t> values) {
  return [values = std::move(values)](const Sink& sink) {
    for (auto v : values) {
      if (sink(v)) return;
    }
  };
}

// An enum's value as a candidate of choose().
template <class E>
std::int64_t value_of(E e) {
  return static_cast<std::int64_t>(e);
}

// The id of the first rule that `s` passes and `t` breaks ("" when none): the rule a
// candidate fix would break, for a message that says why another fix is given.
std::string first_broken(const TensorMapSpec& s, const TensorMapSpec& t) {
  const auto before = passing(s), after = passing(t);
  for (std::size_t k = 0; k < before.size(); ++k) {
    if (before[k] && !after[k]) return std::string(table()[k].id);
  }
  return "";
}

std::optional<SpecFix> fix_of(Field f, std::size_t i, std::optional<std::int64_t> v) {
  if (!v) return std::nullopt;
  return make_fix(f, i, *v);
}

SpecFix enum_fix(const char* field, const char* value) {
  return SpecFix{field, std::nullopt, std::string(value)};
}

// --- T2: the data type is a tensor-map type of the architecture ------------------------
void t2_data_type(const TensorMapSpec& s) {
  const int t = static_cast<int>(s.data_type);
  if (!hopper() && t >= 0 && t < kTensorMapDataTypeCount) return;
  if (!hopper()) {
    broken("T2", "data type " + to_string(t) + " is not a tensor-map type of " + arch_name() +
                     " (the driver's are 0..15, UINT8 to 16U6_ALIGN16B)");
  }
  if (t < 0 || t >= kDataTypeCount) {
    // (a packed type by its name, as the spec spelled it; a number no type has as a number)
    const std::string_view named = name(s.data_type);
    broken("T2", "data type " + (named != "?" ? std::string(named) : to_string(t)) +
                     " is not a Hopper tensor-map type; fp8 travels as UINT8, packed 4/6-bit "
                     "types need Blackwell");
  }
}

// --- T3 / I1: rank --------------------------------------------------------------------
void t3_rank(const TensorMapSpec& s) {
  if (s.rank < 1) {
    broken("T3",
           "rank = 0 is outside 1..5; a tensor map has at least one dimension: give "
           "globalDim and boxDim an entry per dimension");
  }
  if (s.rank > 5) {
    broken("T3", "rank = " + to_string(s.rank) +
                     " is outside 1..5; fold the extra dimensions into ones whose byte strides "
                     "allow it");
  }
  if (s.interleave != Interleave::none && s.rank < 3) {
    broken("T3", 1, [&] {
      return Explained{"rank = " + to_string(s.rank) + " with interleave " +
                           std::string(name(s.interleave)) +
                           "; interleaved maps need rank >= 3: use interleave NONE or add a "
                           "dimension",
                       enum_fix("interleave", "NONE")};
    });
  }
}
void i1_rank(const TensorMapSpec& s) {
  if (s.rank < 3 || s.rank > 5) {
    broken("I1", "rank = " + to_string(s.rank) +
                     " is outside 3..5; im2col maps are NWC (3), NHWC (4) or NDHWC (5) with "
                     "channels innermost");
  }
}

// --- T4: global address alignment ----------------------------------------------------
void t4_address(const TensorMapSpec& s) {
  const std::uint64_t align = address_align(s);
  const std::uint64_t a = s.global_address;
  if (a % align != 0) {
    broken("T4", 0, [&] {
      // Round down (the coordinates then offset by the difference); never at or past 2^57 (X2).
      // A padded type's address goes to a multiple of 32 at once (P1).
      const std::uint64_t to = fix_align(s);
      const std::uint64_t down = a - a % to, highest = kMaxAddress - to;
      std::vector<std::int64_t> candidates;
      if (down < kMaxAddress) candidates.push_back(static_cast<std::int64_t>(down));
      candidates.push_back(static_cast<std::int64_t>(highest));
      const auto v = choose(s, "T4", 0, Field::address, 0, these(candidates));
      return Explained{"globalAddress = " + hex(a) + " is not " + to_string(align) +
                           "-byte aligned (address % " + to_string(align) + " = " +
                           to_string(a % align) + "); use " +
                           hex(static_cast<std::uint64_t>(v.value())) +
                           padded_note(s, "32-byte alignment") +
                           " and offset the coordinates, or allocate with cudaMalloc",
                       fix_of(Field::address, 0, v)};
    });
  }
}

// --- T5: global dims --------------------------------------------------------------------
void t5_global_dims(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.global_dim[d];
    if (v == 0 || v > kTwo32) {
      broken("T5", static_cast<int>(d), [&] {
        // Near the bound first; then, for im2col, the largest sizes whose sum with a corner
        // does not wrap to 32-bit signed (X4 checks the dimension that way).
        const auto bound = v == 0 ? std::int64_t{1} : static_cast<std::int64_t>(kTwo32);
        // NOTE: 256 sizes, so that one is a multiple of 128 (P2, the padded types)
        const auto near_bound = nearest(bound, 1, static_cast<std::int64_t>(kTwo32), 256);
        const auto candidates = [&](const Sink& sink) {
          bool done = false;
          near_bound([&](std::int64_t c) { return done = sink(c); });
          if (done || tiled(s)) return;
          for (std::size_t i = 0; i + 2 < s.rank && i < s.pixel_box_upper_corner.size(); ++i) {
            const std::int64_t up = std::max(s.pixel_box_upper_corner[i], 0);
            if (sink(std::int64_t{INT32_MAX} - up)) return;
          }
        };
        const auto fix = choose(s, "T5", static_cast<int>(d), Field::dim, d, candidates);
        return Explained{idx("globalDim", d) + " = " + to_string(v) +
                             " is outside 1..2^32 (4294967296); " +
                             (v == 0 ? "an empty tensor needs no copy (the least size is "
                                     : "split the dimension into several (the largest size is ") +
                             shown(fix) + ")",
                         fix_of(Field::dim, d, fix)};
      });
    }
  }
}

// --- T6: global strides -----------------------------------------------------------------
void t6_global_strides(const TensorMapSpec& s) {
  const std::uint64_t align = address_align(s);
  for (std::size_t i = 0; i + 1 < s.rank; ++i) {
    const auto v = s.global_strides_bytes[i];
    if (v % align == 0 && v < kTwo40) continue;
    broken("T6", static_cast<int>(i), [&] {
      // Multiples of `align` below 2^40: padded up, else rounded down, else the largest; for a
      // padded type multiples of 32 (P1).
      const std::uint64_t unit = fix_align(s), largest = kTwo40 - unit;
      std::vector<std::int64_t> candidates;
      if (v < largest) candidates.push_back(static_cast<std::int64_t>((v / unit + 1) * unit));
      if (v >= unit && v / unit * unit <= largest) {
        candidates.push_back(static_cast<std::int64_t>(v / unit * unit));
      }
      candidates.push_back(static_cast<std::int64_t>(largest));
      const auto fix = choose(s, "T6", static_cast<int>(i), Field::stride, i, these(candidates));
      const auto to = static_cast<std::uint64_t>(fix.value());
      const std::string use = (to > v ? "; pad to " : "; use ") + to_string(to) + " bytes" +
                              padded_note(s, "a multiple of 32");
      if (v % align != 0) {
        return Explained{idx("globalStrides", i) + " = " + to_string(v) + " bytes (dimension " +
                             to_string(i + 1) + ") is not a multiple of " + to_string(align) +
                             use,
                         fix_of(Field::stride, i, fix)};
      }
      return Explained{idx("globalStrides", i) + " = " + to_string(v) +
                           " bytes is not below 2^40 (1099511627776): no tensor that large is "
                           "addressable by TMA" + use,
                       fix_of(Field::stride, i, fix)};
    });
  }
}

// --- T7: box dims -----------------------------------------------------------------------
// The second part of T7 fails at this site, after every entry of the first.
constexpr int kT7Chunks = kMaxRank;
void t7_box_dims(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.box_dim[d];
    if (v == 0 || v > 256) {
      broken("T7", static_cast<int>(d), [&] {
        // Dimension 0 also needs whole 16-byte rows (the second part of this rule): only
        // widths that give them are offered there, so one fix mends both parts.
        const std::int64_t unit = d == 0 ? per16(s) : 1;
        std::vector<std::int64_t> widths;
        for (std::int64_t w = unit; w <= 256; w += unit) widths.push_back(w);
        std::stable_sort(widths.begin(), widths.end(), [&](std::int64_t a, std::int64_t b) {
          return std::llabs(a - static_cast<std::int64_t>(v)) <
                 std::llabs(b - static_cast<std::int64_t>(v));
        });
        const auto fix = choose(s, "T7", static_cast<int>(d), Field::box, d, these(widths));
        return Explained{idx("boxDim", d) + " = " + to_string(v) + " is outside 1..256; " +
                             (v == 0 ? "use " : "cover larger tiles with several copies of ") +
                             shown(fix),
                         fix_of(Field::box, d, fix)};
      });
    }
  }
  // NOTE: documented for interleave NONE only; the driver enforces it for every interleave.
  const std::uint64_t bytes = std::uint64_t{s.box_dim[0]} * esize(s);
  if (!whole_chunks(s, s.box_dim[0])) {
    broken("T7", kT7Chunks, [&] {
      // The two nearest widths whose rows are whole 16-byte chunks, the chosen one first.
      const auto fix = choose(s, "T7", kT7Chunks, Field::box, 0, nearest(s.box_dim[0], 1, 256));
      const std::string use = use_whole_chunks(
          fix.value(), static_cast<std::int64_t>(s.box_dim[0]), per16(s),
          [&](std::int64_t v) { return mends_whole(s, "T7", Field::box, 0, v); });
      if (packed(s)) {
        return Explained{"boxDim[0] = " + to_string(s.box_dim[0]) + " values of " +
                             to_string(value_bits(s.data_type)) +
                             " bits is not a whole number of 16-byte chunks (" +
                             to_string(per16(s)) + " values each); " + use,
                         fix_of(Field::box, 0, fix)};
      }
      return Explained{"boxDim[0]*" + to_string(esize(s)) + " = " + to_string(bytes) +
                           " bytes is not a multiple of 16; " + use,
                       fix_of(Field::box, 0, fix)};
    });
  }
}

// --- T8 / I6: element strides -----------------------------------------------------------
void t8_element_strides(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.element_strides[d];
    if (v == 0 || v > 8) {
      broken(tiled(s) ? "T8" : "I6", static_cast<int>(d), [&] {
        const auto fix =
            choose(s, "T8", static_cast<int>(d), Field::element_stride, d, nearest(v, 1, 8));
        return Explained{idx("elementStrides", d) + " = " + to_string(v) +
                             " is outside 1..8; use " + shown(fix) +
                             (fix.value() == 1 ? " for a dense box" : " (1 for a dense box)"),
                         fix_of(Field::element_stride, d, fix)};
      });
    }
  }
}

// --- T9 / I7: inner row within the swizzle span ----------------------------------------
void t9_swizzle_span(const TensorMapSpec& s) {
  if (s.interleave != Interleave::none || s.swizzle == Swizzle::none) return;
  const std::uint64_t span = swizzle_span_bytes(s.swizzle);
  const std::uint64_t inner = tiled(s) ? s.box_dim[0] : s.channels_per_pixel;
  const std::uint64_t bytes = shared_bytes(s, inner);
  if (bytes > span) {
    broken(tiled(s) ? "T9" : "I7", 0, [&] {
      const char* what = tiled(s) ? "boxDim[0]" : "channelsPerPixel";
      const Field field = tiled(s) ? Field::box : Field::channels;
      const auto most = static_cast<std::int64_t>(
          packed(s) ? span * 8 / static_cast<std::uint64_t>(shared_value_bits(s.data_type))
                    : span / static_cast<std::uint64_t>(esize(s)));
      const auto fix = choose(s, "T9", 0, field, 0, nearest(most, 1, most));
      const std::string row =
          packed(s)
              ? std::string(what) + " = " + to_string(inner) + " values take " + to_string(bytes) +
                    " bytes in shared memory, which"
              : std::string(what) + "*" + to_string(esize(s)) + " = " + to_string(bytes) + " bytes";
      return Explained{row + " exceeds the swizzle " + std::string(name(s.swizzle)) + " span of " +
                           to_string(span) + " bytes; use " + what +
                           (fix.value() == most ? " <= " : " = ") + shown(fix) +
                           (span < 128 ? " or a wider swizzle" : "") +
                           " and several copies along dimension 0",
                       fix_of(field, 0, fix)};
    });
  }
}

// --- T12: L2 promotion, and the enums' ranges -------------------------------------------
void t12_enums(const TensorMapSpec& s) {
  // NOTE: each message names the value found (an enum cast from a number the type does not
  // name), and the fix the enum's first value
  auto refuse = [](const char* field, auto value, const char* known, const char* fix) {
    // the value by its name where it has one (a Blackwell swizzle on sm_90a), else its number
    const std::string_view named = name(value);
    const std::string shown =
        named != "?" ? std::string(named) : std::to_string(static_cast<int>(value));
    broken("T12", 0, [&] {
      return Explained{std::string(field) + " = " + shown + " is not " + known,
                       enum_fix(field, fix)};
    });
  };
  // (no fix: which encoding a spec of no known one meant is not for the validator to guess)
  if (static_cast<int>(s.kind) > 2) {
    broken("T12", "encode = " + std::to_string(static_cast<int>(s.kind)) +
                      " is not tiled/im2col/im2col_wide");
  }
  if (static_cast<int>(s.l2_promotion) > 3)
    refuse("l2Promotion", s.l2_promotion, "NONE/64B/128B/256B", "NONE");
  if (static_cast<int>(s.interleave) > 2)
    refuse("interleave", s.interleave, "NONE/16B/32B", "NONE");
  // NOTE: on sm_90a the 128B_ATOM_* swizzles (4..6) are refused here, as the Hopper driver
  // refuses them (docs/rules.md, A1).
  if (hopper() && static_cast<int>(s.swizzle) > 3)
    refuse("swizzle", s.swizzle, "NONE/32B/64B/128B", "NONE");
  if (!hopper() && static_cast<int>(s.swizzle) > 6) {
    refuse("swizzle", s.swizzle,
           "NONE/32B/64B/128B/128B_ATOM_32B/128B_ATOM_32B_FLIP_8B/128B_ATOM_64B", "NONE");
  }
  if (static_cast<int>(s.oob_fill) > 1)
    refuse("oobFill", s.oob_fill, "NONE/NAN_REQUEST_ZERO_FMA", "NONE");
  if (static_cast<int>(s.direction) > 3)
    refuse("direction", s.direction, "any/load/store/reduce", "any");
  if (tiled(s) && static_cast<int>(s.tile_mode) > 2)
    refuse("tileMode", s.tile_mode, "tile/gather4/scatter4", "tile");
  if (wide(s) && static_cast<int>(s.wide_mode) > 1)
    refuse("mode", s.wide_mode, "W/W128", "W");
}

// --- T13: NaN fill only for floating types ----------------------------------------------
void t13_nan_fill(const TensorMapSpec& s) {
  if (s.oob_fill == OobFill::nan_request_zero_fma && !is_floating(s.data_type)) {
    broken("T13", 0, [&] {
      return Explained{"oobFill NAN_REQUEST_ZERO_FMA with integer type " + dt(s) +
                           "; use oobFill NONE (zero fill) or a floating-point type",
                       enum_fix("oobFill", "NONE")};
    });
  }
}

// --- I3: pixel-box corners --------------------------------------------------------------
void i3_corners(const TensorMapSpec& s) {
  const int spatial = static_cast<int>(s.rank) - 2;
  const int limit = spatial == 1 ? 32768 : spatial == 2 ? 128 : 16;
  for (int i = 0; i < spatial; ++i) {
    for (auto [field, v] : {std::pair{Field::lower, s.pixel_box_lower_corner[i]},
                            std::pair{Field::upper, s.pixel_box_upper_corner[i]}}) {
      const int site = 2 * i + (field == Field::upper ? 1 : 0);
      if (v < -limit || v > limit - 1) {
        broken("I3", site, [&] {
          const auto fix = choose(s, "I3", site, field, i, nearest(v, -limit, limit - 1));
          return Explained{idx(key(field), i) + " = " + to_string(v) + " is outside [" +
                               to_string(-limit) + ", " + to_string(limit - 1) + "] for rank " +
                               to_string(s.rank) + "; use " + shown(fix),
                           fix_of(field, i, fix)};
        });
      }
    }
  }
}

// --- I4 / I5: channels and pixels -------------------------------------------------------
void i4_channels(const TensorMapSpec& s) {
  if (s.channels_per_pixel == 0 || s.channels_per_pixel > 256) {
    broken("I4", 0, [&] {
      const auto fix =
          choose(s, "I4", 0, Field::channels, 0, nearest(s.channels_per_pixel, 1, 256));
      return Explained{"channelsPerPixel = " + to_string(s.channels_per_pixel) +
                           " is outside 1..256; use " + shown(fix),
                       fix_of(Field::channels, 0, fix)};
    });
  }
}
void i5_pixels(const TensorMapSpec& s) {
  // NOTE: cuTensorMapEncodeIm2colWide ignores pixelsPerColumn in mode W128 (128 pixels).
  if (wide(s) && s.wide_mode == Im2colWideMode::w128) return;
  if (s.pixels_per_column == 0 || s.pixels_per_column > 1024) {
    broken("I5", 0, [&] {
      const auto fix = choose(s, "I5", 0, Field::pixels, 0, nearest(s.pixels_per_column, 1, 1024));
      return Explained{"pixelsPerColumn = " + to_string(s.pixels_per_column) +
                           " is outside 1..1024; use " + shown(fix),
                       fix_of(Field::pixels, 0, fix)};
    });
  }
}

// ===== Rules found by sweeping the real driver (docs/rules.md: how, and the corpus) =====

// --- X1: the box fits the largest shared-memory allocation ------------------------------
// NOTE: the driver sizes the box as elementSize x prod(boxDim / elementStride) with the
// division rounded DOWN (so a dimension whose box is smaller than its stride counts 0),
// not as the ceil() the copy actually delivers (T8), and refuses more than 228 KiB.
// NOTE: an element stride of 0 is T8's to report; it counts as 1 here so that this rule can be
// judged on its own (a fix must keep it passing even while T8 fails).
std::uint64_t driver_box_bytes(const TensorMapSpec& s) {
  std::uint64_t n = 1;
  for (std::size_t d = 0; d < s.rank; ++d) n *= s.box_dim[d] / std::max(s.element_strides[d], 1u);
  // NOTE: a packed box is sized by its shared-memory footprint (the padded types take a byte
  // per value there), the room it needs.
  return shared_bytes(s, n);
}
void x1_box_bytes(const TensorMapSpec& s) {
  const auto bytes = driver_box_bytes(s);
  if (bytes > kMaxBoxBytes) {
    broken("X1", 0, [&] {
      // Shrink the outermost dimension that can bring the box under the limit on its own,
      // keeping every other rule passing.
      std::optional<std::int64_t> fix;
      std::size_t at = 0;
      for (std::size_t d = s.rank; d-- > 0 && !fix;) {
        const std::uint64_t stride = std::max(s.element_strides[d], 1u);
        const std::uint64_t per = s.box_dim[d] / stride;  // > 0, as bytes > 0
        const std::uint64_t rest = bytes / per;            // the other dimensions' bytes
        const std::uint64_t most = kMaxBoxBytes / rest;
        if (most == 0) continue;
        const auto box = static_cast<std::int64_t>(
            std::min<std::uint64_t>(s.box_dim[d], most * stride + stride - 1));
        fix = choose(s, "X1", 0, Field::box, d, nearest(box, 1, box), /*keep_others=*/true);
        at = d;
      }
      std::string use;
      if (fix) {
        use = "shrink boxDim[" + to_string(at) + "] to " + to_string(*fix) + " or split the copy";
      } else {
        // No dimension alone is enough: the one with the most elements (past dimension 0,
        // whose width T7 and T9 constrain) goes down to one stride, the others follow.
        at = 0;
        std::uint64_t most_elements = 1;
        for (std::size_t d = 1; d < s.rank; ++d) {
          const std::uint64_t per = s.box_dim[d] / std::max(s.element_strides[d], 1u);
          if (per > most_elements) most_elements = per, at = d;
        }
        if (at > 0) {
          fix = static_cast<std::int64_t>(std::max(s.element_strides[at], 1u));
        } else {
          fix = choose(s, "X1", 0, Field::box, 0, nearest(per16(s), 1, 256), /*keep_others=*/true);
        }
        if (fix) {
          use = "no single dimension is enough: shrink boxDim[" + to_string(at) + "] to " +
                to_string(*fix) + ", then the next, or split the copy";
        } else {
          use = "shrink boxDim or split the copy";
        }
      }
      return Explained{"the box is " + to_string(bytes) + " bytes (" + esize_text(s) +
                           " x prod(boxDim / elementStrides)); the driver "
                           "allows at most " +
                           to_string(kMaxBoxBytes) + " (228 KiB): " + use,
                       fix_of(Field::box, at, fix)};
    });
  }
}

// --- X3: im2col rows are whole 16-byte chunks and fit 228 KiB ----------------------------
void x3_im2col_box(const TensorMapSpec& s) {
  const std::uint64_t row = shared_bytes(s, s.channels_per_pixel);
  if (!whole_chunks(s, s.channels_per_pixel)) {
    broken("X3", 0, [&] {
      const auto fix =
          choose(s, "X3", 0, Field::channels, 0, nearest(s.channels_per_pixel, 1, 256));
      const std::string use = use_whole_chunks(
          fix.value(), static_cast<std::int64_t>(s.channels_per_pixel), per16(s),
          [&](std::int64_t v) { return mends_whole(s, "X3", Field::channels, 0, v); });
      if (packed(s)) {
        return Explained{"channelsPerPixel = " + to_string(s.channels_per_pixel) + " values of " +
                             to_string(value_bits(s.data_type)) +
                             " bits is not a whole number of 16-byte chunks (" +
                             to_string(per16(s)) + " values each); " + use,
                         fix_of(Field::channels, 0, fix)};
      }
      return Explained{"channelsPerPixel*" + to_string(esize(s)) + " = " + to_string(row) +
                           " bytes is not a multiple of 16; " + use,
                       fix_of(Field::channels, 0, fix)};
    });
  }
  const std::uint64_t bytes = row * s.pixels_per_column;
  if (bytes > kMaxBoxBytes) {
    broken("X3", 1, [&] {
      const auto most = static_cast<std::int64_t>(kMaxBoxBytes / row);
      const auto fix = choose(s, "X3", 1, Field::pixels, 0, nearest(most, 1, most));
      return Explained{"the im2col box is " + to_string(bytes) + " bytes (channelsPerPixel " +
                           to_string(s.channels_per_pixel) + " x pixelsPerColumn " +
                           to_string(s.pixels_per_column) + " x " +
                           (packed(s) ? to_string(shared_value_bits(s.data_type)) + " bits"
                                      : to_string(esize(s))) +
                           "); the driver allows at most " + to_string(kMaxBoxBytes) +
                           " (228 KiB): lower pixelsPerColumn to " + shown(fix),
                       fix_of(Field::pixels, 0, fix)};
    });
  }
}

// --- X4: each spatial dimension keeps at least one pixel --------------------------------
// NOTE: the documentation asks for a box of "non-zero area". The driver checks each spatial
// dimension separately, in this exact arithmetic: (int32)(globalDim + upperCorner) -
// lowerCorner > 0, the first sum wrapping to 32-bit signed (so a dimension of 2^31 or more
// can wrap negative). With interleave 16B or 32B it pairs corner i with globalDim[i] instead
// of globalDim[i + 1]. We check what the driver checks, since that decides the encode.
std::int32_t wrapped_high(std::uint64_t dim, std::int64_t up) {
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>((dim + static_cast<std::uint64_t>(up)) & 0xffffffffu));
}
void x4_im2col_extent(const TensorMapSpec& s) {
  const std::size_t first = s.interleave == Interleave::none ? 1 : 0;
  const int spatial = static_cast<int>(s.rank) - 2;
  const std::int64_t limit = spatial == 1 ? 32768 : spatial == 2 ? 128 : 16;
  for (std::size_t i = 0; i + 2 < s.rank; ++i) {
    const std::size_t d = i + first;
    const std::uint64_t dim = s.global_dim[d];
    const std::int64_t lo = s.pixel_box_lower_corner[i], up = s.pixel_box_upper_corner[i];
    const std::int32_t high = wrapped_high(dim, up);
    if (std::int64_t{high} - lo > 0) continue;
    broken("X4", static_cast<int>(i), [&] {
      const bool wrapped = static_cast<std::int64_t>(dim) + up != high;
      const int site = static_cast<int>(i);
      // The least upper corner that leaves a pixel (without wrapping; where the sum wraps, the
      // corner nearest the given one that unwraps it), else the most lower one.
      const std::int64_t least_up = lo - static_cast<std::int64_t>(dim) + 1;
      const auto upper_candidates =
          wrapped ? nearest(up, -limit, limit - 1) : nearest(least_up, -limit, limit - 1, 1);
      const auto lower_candidates = nearest(std::int64_t{high} - 1, -limit, limit - 1, 1);
      // A dimension that wraps negative for every corner: the nearest size that does not, below
      // 2^31, or one so near 2^32 that the sum wraps past zero to a positive count.
      const std::int64_t below = std::min<std::int64_t>(
          static_cast<std::int64_t>(dim), std::int64_t{INT32_MAX} - std::max<std::int64_t>(up, 0));
      const std::int64_t above = static_cast<std::int64_t>(kTwo32) - up + lo + 1;
      // NOTE: from each bound a few sizes on, so that one keeps P2's multiple of 2 or 128
      std::vector<std::int64_t> sizes;
      for (std::int64_t k = 0; k < 128; ++k) {
        for (std::int64_t v : {below - k, above + k}) {
          if (v >= 1 && v <= static_cast<std::int64_t>(kTwo32)) sizes.push_back(v);
        }
      }
      std::stable_sort(sizes.begin(), sizes.end(), [&](std::int64_t a, std::int64_t b) {
        const auto far = [&](std::int64_t v) {
          return v > static_cast<std::int64_t>(dim) ? v - static_cast<std::int64_t>(dim)
                                                    : static_cast<std::int64_t>(dim) - v;
        };
        return far(a) < far(b);
      });
      // The upper corner, else the lower one, else the size; first a value that keeps the other
      // rules passing (NOTE: I8 holds a store's upper corners at 0 or below, so there the lower
      // corner may be the one to move), then any that mends this rule.
      Field field = Field::upper;
      std::size_t entry = i;
      std::optional<std::int64_t> fix;
      for (bool keep : {true, false}) {
        field = Field::upper;
        entry = i;
        fix = choose(s, "X4", site, field, entry, upper_candidates, keep);
        if (fix) break;
        field = Field::lower;
        fix = choose(s, "X4", site, field, entry, lower_candidates, keep);
        if (fix) break;
        field = Field::dim;
        entry = d;
        fix = choose(s, "X4", site, field, entry, these(sizes), keep);
        if (fix) break;
      }
      // Whether a corner would mend this rule, breaking another: the message says why the size.
      const bool corners_mend =
          field == Field::dim &&
          (choose(s, "X4", site, Field::upper, i, upper_candidates).has_value() ||
           choose(s, "X4", site, Field::lower, i, lower_candidates).has_value());
      const std::string at = "[" + to_string(i) + "]";
      const std::string use =
          !fix ? "; no single change mends it"
          : field == Field::upper
              ? (*fix > up ? "; raise" : "; lower") + (" pixelBoxUpperCorner" + at) + " to " +
                    to_string(*fix) + (wrapped ? " (so that the sum does not wrap)" : "")
          : field == Field::lower
              ? (*fix > lo ? "; raise" : "; lower") + (" pixelBoxLowerCorner" + at) + " to " +
                    to_string(*fix)
              : std::string(corners_mend ? "; no corner in range mends it and keeps the other "
                                           "rules passing"
                                         : "; no corner in range mends it") +
                    ": use globalDim[" + to_string(d) + "] = " + to_string(*fix) +
                    (*fix < (std::int64_t{1} << 31) ? " (below 2^31)" : "");
      return Explained{"spatial dimension " + to_string(i + 1) + ": globalDim[" + to_string(d) +
                           "] + pixelBoxUpperCorner" + at + " - pixelBoxLowerCorner" + at +
                           " = " + to_string(dim) + " + " + to_string(up) + " - " +
                           to_string(lo) + " leaves no pixel" +
                           (wrapped ? " (the driver wraps globalDim + upper to 32-bit signed: " +
                                          to_string(high) + ")"
                                    : std::string()) +
                           use,
                       fix ? std::optional<SpecFix>(make_fix(field, entry, *fix)) : std::nullopt};
    });
  }
}

// --- X2: the global address is a valid virtual address ----------------------------------
void x2_address_range(const TensorMapSpec& s) {
  if (s.global_address >= kMaxAddress) {
    broken("X2", 0, [&] {
      // The highest address aligned as T4 asks, or as P1 asks of the padded types.
      const auto fix = choose(s, "X2", 0, Field::address, 0,
                              these({static_cast<std::int64_t>(kMaxAddress - fix_align(s))}));
      return Explained{"globalAddress = " + hex(s.global_address) +
                           " is at or above 2^57, outside the GPU's virtual address space; pass "
                           "a device pointer (the highest allowed is " +
                           hex(static_cast<std::uint64_t>(fix.value())) + ")",
                       fix_of(Field::address, 0, fix)};
    });
  }
}

// ===== Blackwell's encodings (docs/rules.md cites each rule's source) ======================

// --- A1: the encodings the architecture has ---------------------------------------------
// NOTE: the packed types and the 128B_ATOM_* swizzles are T2's and T12's on sm_90a (the Hopper
// driver refuses all six enums); this rule covers what no driver argument tells apart.
void a1_arch(const TensorMapSpec& s) {
  if (wide(s) && hopper()) {
    broken("A1", 0, [&] {
      return Explained{
          "encode im2col_wide needs sm_100a, sm_103a or sm_120a "
          "(cuTensorMapEncodeIm2colWide: compute capability 10.0 or higher; "
          ".im2col::w: sm_100 or higher); on sm_90a use encode im2col",
          std::nullopt};
    });
  }
  if (wide(s) && t_arch == Arch::sm_120a && s.wide_mode == Im2colWideMode::w128) {
    broken("A1", 1, [&] {
      return Explained{
          "mode W128 (.im2col::w::128) is not available on sm_120a (the PTX ISA "
          "lists sm_100a and sm_103a, the sm_100f family, sm_110a); use mode W",
          enum_fix("mode", "W")};
    });
  }
  if (tiled(s) && s.tile_mode != TileMode::tile &&
      (hopper() || (t_arch == Arch::sm_120a && s.tile_mode == TileMode::scatter4))) {
    broken("A1", 2, [&] {
      const std::string mode(name(s.tile_mode));
      const bool gather = s.tile_mode == TileMode::gather4;
      return Explained{
          "tileMode " + mode + " (.tile::" + mode + ") is not available on " + arch_name() + " (" +
              (gather ? "sm_100a or later" : "sm_100a, sm_103a, sm_110a") + "); " +
              (gather ? "load" : "store") + " the four rows with four tiled copies (tileMode tile)",
          enum_fix("tileMode", "tile")};
    });
  }
}

// --- T10: interleave 32B takes swizzle 32B ----------------------------------------------
// NOTE: documented for every architecture, but the Hopper driver encodes every swizzle with
// every interleave (docs/rules.md), so sm_90a does not apply it; no Blackwell driver has been
// swept, so there tmakit follows the documentation.
void t10_interleave_swizzle(const TensorMapSpec& s) {
  if (hopper()) return;  // NOTE: also when called directly, outside validate()
  if (s.interleave != Interleave::bytes32 || s.swizzle == Swizzle::bytes32) return;
  broken("T10", 0, [&] {
    // Swizzle 32B, unless another rule refuses it here (P5: the padded types take no 32B
    // swizzle); then an interleave that T10 leaves free.
    Field field = Field::swizzle;
    auto fix = choose(s, "T10", 0, field, 0, these({value_of(Swizzle::bytes32)}), true);
    std::string refuses;
    if (!fix) {
      TensorMapSpec t = s;
      t.swizzle = Swizzle::bytes32;
      refuses = first_broken(s, t);
      field = Field::interleave;
      fix = choose(s, "T10", 0, field, 0,
                   these({value_of(Interleave::none), value_of(Interleave::bytes16)}), true);
    }
    if (!fix) {  // every interleave breaks a rule too: the documented fix
      field = Field::swizzle;
      fix = value_of(Swizzle::bytes32);
    }
    const std::string use =
        field == Field::swizzle
            ? ": use swizzle 32B"
            : ", which " + refuses + " refuses here: use interleave " + enum_name(field, *fix);
    return Explained{"interleave 32B with swizzle " + std::string(name(s.swizzle)) +
                         "; the driver reference asks for swizzle 32B with interleave 32B" + use,
                     make_fix(field, 0, *fix)};
  });
}

// --- P1: the padded types' alignment -----------------------------------------------------
void p1_padded_alignment(const TensorMapSpec& s) {
  if (!padded(s)) return;
  if (s.global_address % 32 != 0) {
    broken("P1", 0, [&] {
      // Round down, never to 2^57 or past it (X2): there the highest 32-byte-aligned address.
      const std::uint64_t a = s.global_address, down = a - a % 32;
      std::vector<std::int64_t> candidates;
      if (down < kMaxAddress) candidates.push_back(static_cast<std::int64_t>(down));
      candidates.push_back(static_cast<std::int64_t>(kMaxAddress - 32));
      const auto fix = choose(s, "P1", 0, Field::address, 0, these(candidates));
      return Explained{"globalAddress = " + hex(a) + " is not 32-byte aligned (address % 32 = " +
                           to_string(a % 32) + "), which " + dt(s) + " needs; use " +
                           hex(static_cast<std::uint64_t>(fix.value())) +
                           " and offset the coordinates",
                       fix_of(Field::address, 0, fix)};
    });
  }
  for (std::size_t i = 0; i + 1 < s.rank; ++i) {
    const auto v = s.global_strides_bytes[i];
    if (v % 32 == 0) continue;
    broken("P1", static_cast<int>(i) + 1, [&] {
      const auto up = static_cast<std::int64_t>((v / 32 + 1) * 32);
      std::vector<std::int64_t> candidates{up};
      if (v >= 32) candidates.push_back(static_cast<std::int64_t>(v / 32 * 32));
      const auto fix =
          choose(s, "P1", static_cast<int>(i) + 1, Field::stride, i, these(candidates));
      return Explained{idx("globalStrides", i) + " = " + to_string(v) +
                           " bytes is not a multiple of 32, which " + dt(s) + " needs" +
                           (fix && static_cast<std::uint64_t>(*fix) < v ? "; use " : "; pad to ") +
                           shown(fix) + " bytes",
                       fix_of(Field::stride, i, fix)};
    });
  }
}

// --- P2: the packed types' row length -------------------------------------------------------
void p2_packed_dim0(const TensorMapSpec& s) {
  if (!packed(s) || s.rank < 1) return;
  const std::uint64_t unit = padded(s) ? 128 : 2;
  const std::uint64_t v = s.global_dim[0];
  if (v % unit == 0) return;
  broken("P2", 0, [&] {
    // Padding the rows first (nothing of the tensor is lost), else dropping the tail.
    std::vector<std::int64_t> candidates{static_cast<std::int64_t>((v / unit + 1) * unit)};
    if (v >= unit) candidates.push_back(static_cast<std::int64_t>(v / unit * unit));
    const auto fix = choose(s, "P2", 0, Field::dim, 0, these(candidates));
    return Explained{"globalDim[0] = " + to_string(v) + " values of " + dt(s) +
                         " is not a multiple of " + to_string(unit) + "; pad the rows to " +
                         to_string((v / unit + 1) * unit) + " values" +
                         (v >= unit ? " or use " + to_string(v / unit * unit) : std::string()),
                     fix_of(Field::dim, 0, fix)};
  });
}

// --- P3: the padded types' box row is exactly 128 values -----------------------------------
void p3_padded_row(const TensorMapSpec& s) {
  if (!padded(s)) return;
  const bool t = tiled(s);
  const std::uint32_t v = t ? s.box_dim[0] : s.channels_per_pixel;
  if (v == kPaddedRowValues) return;
  broken("P3", 0, [&] {
    const char* what = t ? "boxDim[0]" : "channelsPerPixel";
    return Explained{std::string(what) + " = " + to_string(v) + " with " + dt(s) +
                         "; the padded types copy rows of exactly 128 values (one 128-byte "
                         "shared row): use " +
                         what + " = 128" +
                         (v > 128 ? " and several copies" : " and mask the unused values"),
                     make_fix(t ? Field::box : Field::channels, 0, 128)};
  });
}

// --- P4: 16U6_ALIGN16B without interleave --------------------------------------------------
void p4_u6_interleave(const TensorMapSpec& s) {
  if (s.data_type != DataType::packed_u6_align16 || s.interleave == Interleave::none) return;
  broken("P4", 0, [&] {
    return Explained{"interleave " + std::string(name(s.interleave)) +
                         " with 16U6_ALIGN16B; the 6-bit type takes interleave NONE only",
                     enum_fix("interleave", "NONE")};
  });
}

// --- P5: the swizzles a padded type takes ---------------------------------------------------
// NOTE: the driver reference lists NONE, 128B, 128B_ATOM_32B (and 128B_ATOM_64B for stores of
// 16U6_ALIGN16B); the PTX ISA would also take 128B_ATOM_64B loads. tmakit follows the stricter
// source until a Blackwell driver settles it (docs/rules.md, "Where the sources disagree").
void p5_padded_swizzle(const TensorMapSpec& s) {
  if (!padded(s)) return;
  const Swizzle w = s.swizzle;
  const bool u6 = s.data_type == DataType::packed_u6_align16;
  if (padded_type_takes_swizzle(s.data_type, w)) return;
  broken("P5", 0, [&] {
    // The first of the type's swizzles that keeps the other rules passing: 128B_ATOM_32B for
    // an atom swizzle, else 128B, then the others.
    const bool atoms = w == Swizzle::bytes128_atom32_flip8 || w == Swizzle::bytes128_atom64;
    std::vector<std::int64_t> candidates = {value_of(Swizzle::bytes128),
                                            value_of(Swizzle::bytes128_atom32)};
    if (atoms) std::swap(candidates[0], candidates[1]);
    // NOTE: cuTensorMapEncodeIm2colWide lists only 128B and 128B_ATOM_32B for the padded types
    // (W3 refuses NONE and 128B_ATOM_64B there, W5 every store).
    if (!wide(s)) {
      candidates.push_back(value_of(Swizzle::none));
      if (u6) candidates.push_back(value_of(Swizzle::bytes128_atom64));
    }
    const std::string takes = wide(s) ? "; with encode im2col_wide it takes 128B, 128B_ATOM_32B"
                                      : std::string("; it takes NONE, 128B, 128B_ATOM_32B") +
                                            (u6 ? ", 128B_ATOM_64B (stores)" : "");
    const auto fix = choose(s, "P5", 0, Field::swizzle, 0, these(candidates));
    return Explained{"swizzle " + std::string(name(w)) + " with " + dt(s) + takes + ": use " +
                         enum_name(Field::swizzle, fix.value()),
                     fix_of(Field::swizzle, 0, fix)};
  });
}

// --- P6: the copies a packed type allows ---------------------------------------------------
// NOTE: a gather4 map is for loads and a scatter4 map for stores whether or not `direction`
// says so (as S1 judges scatter4), so that no direction left unsaid passes a copy P6 refuses.
Direction copy_direction(const TensorMapSpec& s) {
  if (s.direction != Direction::any || !tiled(s)) return s.direction;
  if (s.tile_mode == TileMode::gather4) return Direction::load;
  if (s.tile_mode == TileMode::scatter4) return Direction::store;
  return Direction::any;
}
// "direction store", or "tileMode scatter4 (a store)" where the tile mode implies it.
std::string copy_text(const TensorMapSpec& s) {
  const std::string d(name(copy_direction(s)));
  if (s.direction != Direction::any) return "direction " + d;
  return "tileMode " + std::string(name(s.tile_mode)) + " (a " + d + ")";
}
void p6_packed_direction(const TensorMapSpec& s) {
  const Direction direction = copy_direction(s);
  if (!packed(s) || direction == Direction::any) return;
  if (direction == Direction::reduce) {
    broken("P6", 0, [&] {
      return Explained{"direction reduce with " + dt(s) +
                           "; cp.reduce.async.bulk.tensor takes "
                           "no packed type: reduce in a byte type (UINT8 or wider) instead",
                       std::nullopt};
    });
  }
  if (s.data_type == DataType::packed_u4_align16 && direction == Direction::store) {
    broken("P6", 1, [&] {
      return Explained{copy_text(s) +
                           " with 16U4_ALIGN16B, a load-only type; store 4-bit data "
                           "as 16U4_ALIGN8B (packed, no gaps)",
                       std::nullopt};
    });
  }
  if (s.data_type == DataType::packed_u6_align16 && s.swizzle == Swizzle::bytes128_atom64 &&
      direction == Direction::load) {
    broken("P6", 2, [&] {
      return Explained{copy_text(s) +
                           " with 16U6_ALIGN16B and swizzle 128B_ATOM_64B, which the "
                           "driver reference allows for stores only; use 128B_ATOM_32B",
                       enum_fix("swizzle", "128B_ATOM_32B")};
    });
  }
}

// --- P7: packed types fill with zeros ------------------------------------------------------
void p7_packed_fill(const TensorMapSpec& s) {
  if (!packed(s) || s.oob_fill != OobFill::nan_request_zero_fma) return;
  broken("P7", 0, [&] {
    return Explained{"oobFill NAN_REQUEST_ZERO_FMA with " + dt(s) +
                         "; the packed types fill out-of-bounds values with zeros only: use "
                         "oobFill NONE",
                     enum_fix("oobFill", "NONE")};
  });
}

// --- S1: the 8-byte flip is for tiled and im2col loads ------------------------------------
void s1_flip(const TensorMapSpec& s) {
  if (s.swizzle != Swizzle::bytes128_atom32_flip8) return;
  if (s.direction == Direction::store || s.direction == Direction::reduce ||
      (tiled(s) && s.tile_mode == TileMode::scatter4)) {
    broken("S1", 0, [&] {
      // The same swizzle without the flip; under interleave 32B the swizzle T10 asks for.
      const auto fix =
          choose(s, "S1", 0, Field::swizzle, 0, these({value_of(Swizzle::bytes128_atom32)}));
      const bool t10 = fix.value() == value_of(Swizzle::bytes32);
      return Explained{"swizzle 128B_ATOM_32B_FLIP_8B for a " +
                           std::string(s.direction == Direction::reduce ? "reduction" : "store") +
                           "; the 8-byte flip is for loads only: use " +
                           enum_name(Field::swizzle, fix.value()) +
                           (t10 ? " (interleave 32B takes swizzle 32B, T10)" : ""),
                       fix_of(Field::swizzle, 0, fix)};
    });
  }
}

// --- W1..W5: im2col-wide ------------------------------------------------------------------
void w1_width_corners(const TensorMapSpec& s) {
  for (auto [field, v] : {std::pair{Field::lower_width, s.pixel_box_lower_corner_width},
                          std::pair{Field::upper_width, s.pixel_box_upper_corner_width}}) {
    if (v >= -32768 && v <= 32767) continue;
    const int site = field == Field::upper_width ? 1 : 0;
    broken("W1", site, [&] {
      const auto fix = choose(s, "W1", site, field, 0, nearest(v, -32768, 32767, 1));
      return Explained{std::string(key(field)) + " = " + to_string(v) +
                           " is outside [-32768, 32767]; use " + shown(fix),
                       fix_of(field, 0, fix)};
    });
  }
}
void w2_width_extent(const TensorMapSpec& s) {
  if (s.rank < 3) return;
  const std::int64_t lo = s.pixel_box_lower_corner_width, up = s.pixel_box_upper_corner_width;
  // NOTE: globalDim[1] may be up to 2^64 - 1 when T5 has already failed (the fix search
  // judges every rule); past 2^62 the extent is positive for any corners of 32 bits, and below
  // it the sum fits 64 signed bits
  if (s.global_dim[1] > std::uint64_t{1} << 62) return;
  const auto dim = static_cast<std::int64_t>(s.global_dim[1]);
  if (dim + up - lo > 0) return;
  broken("W2", 0, [&] {
    const auto fix =
        choose(s, "W2", 0, Field::upper_width, 0, nearest(lo - dim + 1, -32768, 32767, 1));
    return Explained{
        "globalDim[1] + pixelBoxUpperCornerWidth - pixelBoxLowerCornerWidth = " + to_string(dim) +
            " + " + to_string(up) + " - " + to_string(lo) +
            " leaves no pixel along W; raise pixelBoxUpperCornerWidth to " + shown(fix),
        fix_of(Field::upper_width, 0, fix)};
  });
}
// NOTE: the driver reference lists 64B, 128B and 128B_ATOM_32B ("other swizzle modes are not
// supported"); the PTX ISA refuses only NONE and the 8-byte flip. tmakit follows the driver's
// list, the stricter.
void w3_wide_swizzle(const TensorMapSpec& s) {
  const Swizzle w = s.swizzle;
  if (w == Swizzle::bytes64 || w == Swizzle::bytes128 || w == Swizzle::bytes128_atom32) return;
  broken("W3", 0, [&] {
    const bool narrow = shared_bytes(s, s.channels_per_pixel) <= 64 &&
                        (w == Swizzle::none || w == Swizzle::bytes32);
    const char* to = narrow ? "64B"
                     : w == Swizzle::bytes128_atom32_flip8 || w == Swizzle::bytes128_atom64
                         ? "128B_ATOM_32B"
                         : "128B";
    return Explained{"swizzle " + std::string(name(w)) +
                         " with encode im2col_wide; it takes "
                         "64B, 128B or 128B_ATOM_32B: use " +
                         to,
                     enum_fix("swizzle", to)};
  });
}
void w4_wide_interleave(const TensorMapSpec& s) {
  if (s.interleave == Interleave::none) return;
  broken("W4", 0, [&] {
    return Explained{"interleave " + std::string(name(s.interleave)) +
                         " with encode im2col_wide; .im2col::w takes no interleave: use NONE",
                     enum_fix("interleave", "NONE")};
  });
}
void w5_wide_direction(const TensorMapSpec& s) {
  if (s.direction != Direction::store && s.direction != Direction::reduce) return;
  broken("W5", 0, [&] {
    return Explained{"direction " + std::string(name(s.direction)) +
                         " with encode im2col_wide; .im2col::w and .im2col::w::128 are loads",
                     enum_fix("direction", "load")};
  });
}

// --- I8: an im2col store's bounding box stays within the tensor ----------------------------
// NOTE: the PTX ISA's restrictions on the .global.shared::cta direction: "The bounding box along
// the D, W and H dimensions must stay within the tensor boundaries", so lower corners >= 0 and
// upper corners <= 0. The list names no instruction; cp.reduce.async.bulk.tensor copies in that
// direction too, and the documentation does not say whether the list binds it, so tmakit
// refuses reductions as well (the stricter reading; docs/rules.md). im2col-wide maps serve loads
// only (W5), so only cuTensorMapEncodeIm2col maps reach this rule; sm_90a keeps the Hopper
// driver's verdicts, which judge no direction.
void i8_store_box(const TensorMapSpec& s) {
  if (s.direction != Direction::store && s.direction != Direction::reduce) return;
  const int spatial = static_cast<int>(s.rank) - 2;
  for (int i = 0; i < spatial; ++i) {
    for (auto [field, v] : {std::pair{Field::lower, s.pixel_box_lower_corner[i]},
                            std::pair{Field::upper, s.pixel_box_upper_corner[i]}}) {
      const bool upper = field == Field::upper;
      if (upper ? v <= 0 : v >= 0) continue;
      const int site = 2 * i + (upper ? 1 : 0);
      broken("I8", site, [&] {
        // The corner on the tensor's edge. NOTE: a corner further inside only shrinks the box,
        // so where 0 leaves no pixel (X4), none does, and X4's own fix then moves the other one.
        const auto fix = choose(s, "I8", site, field, i, these({0}));
        const bool store = s.direction == Direction::store;
        return Explained{idx(key(field), i) + " = " + to_string(v) + " with direction " +
                             std::string(name(s.direction)) + "; the bounding box of an im2col " +
                             (store ? "store" : "reduction") +
                             " must stay within the tensor (lower corners >= 0, upper corners "
                             "<= 0): use " +
                             idx(key(field), i) + " = " + shown(fix),
                         fix_of(field, i, fix)};
      });
    }
  }
}

// --- G1, G2, G4: gather4 / scatter4 -------------------------------------------------------
void g1_gather_rank(const TensorMapSpec& s) {
  if (s.tile_mode == TileMode::tile || s.rank == 2) return;
  broken("G1", 0, [&] {
    // The rank is no field a fix changes; a plain tiled map (as A1 asks on sm_90a) is.
    const auto fix = choose(s, "G1", 0, Field::tile_mode, 0, these({value_of(TileMode::tile)}));
    const bool gather = s.tile_mode == TileMode::gather4;
    return Explained{
        "tileMode " + std::string(name(s.tile_mode)) + " with rank " + to_string(s.rank) +
            "; gather4 and scatter4 work on 2D tensors only: "
            "fold the tensor to rank 2 (rows x columns), or " +
            (gather ? "load" : "store") + " the rows with tiled copies (tileMode tile)",
        fix_of(Field::tile_mode, 0, fix)};
  });
}
void g2_gather_box(const TensorMapSpec& s) {
  if (s.tile_mode == TileMode::tile || s.box_dim[1] == 1) return;
  broken("G2", 0, [&] {
    const auto fix = choose(s, "G2", 0, Field::box, 1, these({1}));
    return Explained{"boxDim[1] = " + to_string(s.box_dim[1]) + " with tileMode " +
                         std::string(name(s.tile_mode)) +
                         "; the box is one row (the copy names "
                         "its four rows): use boxDim[1] = 1",
                     fix_of(Field::box, 1, fix)};
  });
}
void g4_gather_direction(const TensorMapSpec& s) {
  if (s.tile_mode == TileMode::tile || s.direction == Direction::any) return;
  const Direction want = s.tile_mode == TileMode::gather4 ? Direction::load : Direction::store;
  if (s.direction == want) return;
  broken("G4", 0, [&] {
    return Explained{"direction " + std::string(name(s.direction)) + " with tileMode " +
                         std::string(name(s.tile_mode)) + ", which is a " +
                         std::string(name(want)) + "; use direction " + std::string(name(want)),
                     enum_fix("direction", std::string(name(want)).c_str())};
  });
}

// Rules that hold for both kinds run on both; the im2col ones skip tiled specs and v.v.
template <void (*F)(const TensorMapSpec&)>
void tiled_only(const TensorMapSpec& s) {
  if (tiled(s)) F(s);
}
// im2col and im2col-wide
template <void (*F)(const TensorMapSpec&)>
void im2col_only(const TensorMapSpec& s) {
  if (!tiled(s)) F(s);
}
// im2col (cuTensorMapEncodeIm2col) only, not im2col-wide
template <void (*F)(const TensorMapSpec&)>
void classic_im2col_only(const TensorMapSpec& s) {
  if (s.kind == EncodeKind::im2col) F(s);
}
template <void (*F)(const TensorMapSpec&)>
void wide_only(const TensorMapSpec& s) {
  if (wide(s)) F(s);
}

// T2's summary: in the list of every architecture's rules, and per architecture (rules(Arch)).
constexpr std::string_view kT2Summary =
    "data type is a tensor-map type: the 13 Hopper types on sm_90a, also the 3 packed types on "
    "sm_100a, sm_103a and sm_120a";
constexpr std::string_view kT2Hopper = "data type is one of the 13 Hopper tensor-map types";
constexpr std::string_view kT2Blackwell =
    "data type is one of the 16 tensor-map types (Hopper's 13 and 16U4_ALIGN8B, 16U4_ALIGN16B, "
    "16U6_ALIGN16B)";

constexpr Rule kRules[] = {
    {"T2", kT2Summary, t2_data_type},
    {"T12", "encode kind, interleave, swizzle, L2 promotion and OOB fill are known values",
     t12_enums},
    // NOTE: sm_100a and sm_103a have every encoding A1 judges, so it refuses nothing there.
    {"A1",
     "im2col_wide, gather4 and scatter4 need sm_100a or later; not W128 or scatter4 on "
     "sm_120a",
     a1_arch, arch_bit(Arch::sm_90a) | arch_bit(Arch::sm_120a)},
    {"T3", "tiled rank 1..5; rank >= 3 with interleave", tiled_only<t3_rank>},
    {"I1", "im2col rank 3..5", im2col_only<i1_rank>},
    {"T4", "global address 16-byte aligned (32 with interleave 32B)", t4_address},
    {"T5", "each globalDim in 1..2^32", t5_global_dims},
    {"T6", "byte strides multiples of 16 (32 with interleave 32B) and < 2^40", t6_global_strides},
    {"P1", "16U4_ALIGN16B, 16U6_ALIGN16B: global address and strides multiples of 32 bytes",
     p1_padded_alignment, kBlackwellArchs},
    {"P2", "packed types: globalDim[0] a multiple of 2 (16U4_ALIGN8B) or 128 (ALIGN16B types)",
     p2_packed_dim0, kBlackwellArchs},
    {"P3", "16U4_ALIGN16B, 16U6_ALIGN16B: boxDim[0] (channelsPerPixel) exactly 128", p3_padded_row,
     kBlackwellArchs},
    {"P4", "16U6_ALIGN16B: interleave NONE", p4_u6_interleave, kBlackwellArchs},
    {"T7", "boxDim in 1..256; boxDim[0] * element size a multiple of 16 (any interleave)",
     tiled_only<t7_box_dims>},
    {"T8", "elementStrides in 1..8", t8_element_strides, kEveryArch, "I6"},
    {"I3", "pixel-box corners in the rank's range", classic_im2col_only<i3_corners>},
    {"W1", "im2col_wide: width corners in [-32768, 32767]", wide_only<w1_width_corners>,
     kBlackwellArchs},
    {"I4", "channelsPerPixel in 1..256", im2col_only<i4_channels>},
    {"I5", "pixelsPerColumn in 1..1024 (ignored by im2col_wide mode W128)", im2col_only<i5_pixels>},
    {"G1", "gather4 / scatter4: rank 2", tiled_only<g1_gather_rank>, kBlackwellArchs},
    {"G2", "gather4 / scatter4: boxDim[1] = 1", tiled_only<g2_gather_box>, kBlackwellArchs},
    {"G4", "gather4 loads, scatter4 stores", tiled_only<g4_gather_direction>, kBlackwellArchs},
    {"W3", "im2col_wide: swizzle 64B, 128B or 128B_ATOM_32B", wide_only<w3_wide_swizzle>,
     kBlackwellArchs},
    {"W4", "im2col_wide: interleave NONE", wide_only<w4_wide_interleave>, kBlackwellArchs},
    {"W5", "im2col_wide: loads only", wide_only<w5_wide_direction>, kBlackwellArchs},
    {"P5",
     "16U4_ALIGN16B, 16U6_ALIGN16B: swizzle NONE, 128B, 128B_ATOM_32B (16U6: and "
     "128B_ATOM_64B for stores)",
     p5_padded_swizzle, kBlackwellArchs},
    {"S1", "128B_ATOM_32B_FLIP_8B: loads only", s1_flip, kBlackwellArchs},
    {"P6",
     "packed types: no reductions; 16U4_ALIGN16B loads only; 16U6_ALIGN16B with "
     "128B_ATOM_64B stores only (gather4 loads, scatter4 stores)",
     p6_packed_direction, kBlackwellArchs},
    {"I8", "im2col stores and reductions: pixel-box lower corners >= 0, upper corners <= 0",
     classic_im2col_only<i8_store_box>, kBlackwellArchs},
    {"T9", "with a swizzle and no interleave, the inner box row fits the swizzle span",
     t9_swizzle_span, kEveryArch, "I7"},
    {"P7", "packed types: oobFill NONE", p7_packed_fill, kBlackwellArchs},
    {"T10", "interleave 32B takes swizzle 32B (documented; not applied on sm_90a, whose driver "
            "does not enforce it)", t10_interleave_swizzle, kBlackwellArchs},
    {"T13", "NaN OOB fill only for floating-point types", t13_nan_fill},
    {"X1", "box bytes (elementSize x prod(boxDim / elementStrides), rounded down) <= 228 KiB",
     tiled_only<x1_box_bytes>},
    {"X2", "global address below 2^57", x2_address_range},
    {"X3", "im2col: channelsPerPixel * elementSize a multiple of 16, box <= 228 KiB",
     classic_im2col_only<x3_im2col_box>},
    {"X4", "im2col: (int32)(globalDim + upper corner) - lower corner > 0 per spatial dim",
     classic_im2col_only<x4_im2col_extent>},
    {"W2", "im2col_wide: globalDim[1] + upper width corner - lower width corner > 0",
     wide_only<w2_width_extent>, kBlackwellArchs},
};

std::span<const Rule> table() { return kRules; }

const Rule& rule_entry(std::string_view id) {
  for (const Rule& r : kRules) {
    if (r.id == id) return r;
  }
  throw Error("internal: no rule " + std::string(id));
}

// Throws for an architecture tmakit has no rules for (a cast from a bad integer).
void check_arch(const char* who, Arch arch) {
  if (static_cast<int>(arch) > static_cast<int>(Arch::sm_120a)) {
    throw Error(std::string(who) + ": architecture " + std::to_string(static_cast<int>(arch)) +
                " is not one of " + std::string(arch_names()));
  }
}

}  // namespace

std::span<const Rule> rules() { return kRules; }

std::vector<Rule> rules(Arch arch) {
  check_arch("rules", arch);
  std::vector<Rule> out;
  for (Rule r : kRules) {
    if (!(r.archs & arch_bit(arch))) continue;
    if (r.id == "T2") r.summary = arch == Arch::sm_90a ? kT2Hopper : kT2Blackwell;
    out.push_back(r);
  }
  return out;
}

void validate(const TensorMapSpec& spec) {
  validate(spec, Arch::sm_90a);
}

void validate(const TensorMapSpec& spec, Arch arch) {
  check_arch("validate", arch);
  ArchScope scope(arch);
  for (const Rule& r : kRules) {
    if (r.archs & arch_bit(arch)) r.check(spec);
  }
}

std::optional<RuleViolation> find_violation(const TensorMapSpec& spec) {
  return find_violation(spec, Arch::sm_90a);
}

std::optional<RuleViolation> find_violation(const TensorMapSpec& spec, Arch arch) {
  try {
    validate(spec, arch);
  } catch (const RuleViolation& v) {
    return v;
  }
  return std::nullopt;
}

std::optional<Finding> diagnose(const TensorMapSpec& spec) {
  return diagnose(spec, Arch::sm_90a);
}

std::optional<Finding> diagnose(const TensorMapSpec& spec, Arch arch) {
  try {
    validate(spec, arch);
  } catch (const FixableViolation& v) {
    return Finding{v, v.fix()};
  }
  return std::nullopt;
}

TensorMapSpec with_fix(TensorMapSpec spec, const SpecFix& fix) {
  auto text = [&](auto parse) {
    const auto* s = std::get_if<std::string>(&fix.value);
    const auto v = s ? parse(*s) : std::nullopt;
    if (!v) throw Error(fix.field + ": the fix's value is not a name of this field's values");
    return *v;
  };
  if (fix.field == "interleave") {
    spec.interleave = text(parse_interleave);
  } else if (fix.field == "swizzle") {
    spec.swizzle = text(parse_swizzle);
  } else if (fix.field == "l2Promotion") {
    spec.l2_promotion = text(parse_l2_promotion);
  } else if (fix.field == "oobFill") {
    spec.oob_fill = text(parse_oob_fill);
  } else if (fix.field == "tileMode") {
    set_tile_mode(spec, text(parse_tile_mode));
  } else if (fix.field == "mode") {
    spec.wide_mode = text(parse_im2col_wide_mode);
  } else if (fix.field == "direction") {
    spec.direction = text(parse_direction);
  } else {
    for (Field f : {Field::address, Field::dim, Field::stride, Field::box, Field::element_stride,
                    Field::lower, Field::upper, Field::channels, Field::pixels, Field::lower_width,
                    Field::upper_width}) {
      if (fix.field != key(f)) continue;
      if (is_array(f) != fix.index.has_value()) {
        throw Error(fix.field + (is_array(f) ? ": the fix names no entry" : ": not an array"));
      }
      // The value as the field's type holds it: 64-bit unsigned (address, dims, strides),
      // 32-bit unsigned or 32-bit signed (the corners); refused when it does not fit.
      const bool wide_field = f == Field::address || f == Field::dim || f == Field::stride;
      const std::int64_t lo = is_signed(f) ? INT32_MIN : 0;
      const std::int64_t hi = is_signed(f) ? INT32_MAX : UINT32_MAX;
      std::int64_t v = 0;
      if (const auto* u = std::get_if<std::uint64_t>(&fix.value)) {
        if (!wide_field && *u > static_cast<std::uint64_t>(hi))
          throw Error(fix.field + ": the fix's value does not fit the field");
        v = static_cast<std::int64_t>(*u);  // NOTE: set() takes the bits back as unsigned
      } else if (const auto* i = std::get_if<std::int64_t>(&fix.value)) {
        if (*i < lo || (!wide_field && *i > hi))
          throw Error(fix.field + ": the fix's value does not fit the field");
        v = *i;
      } else {
        throw Error(fix.field + ": the fix's value is not a number");
      }
      try {
        set(spec, f, fix.index.value_or(0), v);
      } catch (const std::out_of_range&) {
        throw Error(fix.field + "[" + std::to_string(*fix.index) + "]: no such entry");
      }
      return spec;
    }
    throw Error(fix.field + ": not a field a fix can change");
  }
  return spec;
}

std::optional<TensorMapSpec> nearest_passing_spec(const TensorMapSpec& spec, std::string* why) {
  return nearest_passing_spec(spec, Arch::sm_90a, why);
}

std::optional<TensorMapSpec> nearest_passing_spec(const TensorMapSpec& spec, Arch arch,
                                                  std::string* why) {
  // NOTE: each fix mends one entry of one rule and keeps the others that passed, so the
  // number of steps is bounded by the entries; the cap only guards against a cycle.
  constexpr int kMaxSteps = 64;
  TensorMapSpec s = spec;
  for (int step = 0; step < kMaxSteps; ++step) {
    const auto finding = diagnose(s, arch);
    if (!finding) return s;
    if (!finding->fix) {
      if (why) *why = finding->violation.what();
      return std::nullopt;
    }
    s = with_fix(s, *finding->fix);
  }
  if (why) *why = "no passing spec within " + std::to_string(kMaxSteps) + " fixes";
  return std::nullopt;
}

}  // namespace tmakit
