// One table per enum that crosses the wire: the pairs of a proto enum value and the entropix
// value it stands for, read in both directions. Writing the mapping once means a value added to
// one side cannot be converted one way and forgotten the other; policy_enums_test checks that
// every table covers every value of both enums except the proto's UNSPECIFIED (0).
#ifndef ARBOR_POLICY_ENUM_TABLE_H_
#define ARBOR_POLICY_ENUM_TABLE_H_

#include <array>
#include <cstddef>
#include <optional>

namespace arbor::policy {

template <typename Proto, typename Config>
struct EnumPair {
  Proto proto;
  Config config;
};

template <typename Proto, typename Config, size_t N>
class EnumTable {
 public:
  using ProtoType = Proto;
  using ConfigType = Config;

  constexpr explicit EnumTable(const std::array<EnumPair<Proto, Config>, N>& pairs)
      : pairs_(pairs) {}

  // The proto value of `value`; the first pair's when the table lacks it (the test rules that
  // out for every value the enum declares).
  constexpr Proto ToProto(Config value) const {
    for (const EnumPair<Proto, Config>& pair : pairs_) {
      if (pair.config == value) return pair.proto;
    }
    return pairs_[0].proto;
  }

  // The entropix value of `value`; nullopt for UNSPECIFIED and for values the table lacks.
  constexpr std::optional<Config> FromProto(Proto value) const {
    for (const EnumPair<Proto, Config>& pair : pairs_) {
      if (pair.proto == value) return pair.config;
    }
    return std::nullopt;
  }

  constexpr const std::array<EnumPair<Proto, Config>, N>& pairs() const { return pairs_; }

 private:
  std::array<EnumPair<Proto, Config>, N> pairs_;
};

template <typename Proto, typename Config, size_t N>
EnumTable(const std::array<EnumPair<Proto, Config>, N>&) -> EnumTable<Proto, Config, N>;

}  // namespace arbor::policy

#endif  // ARBOR_POLICY_ENUM_TABLE_H_
