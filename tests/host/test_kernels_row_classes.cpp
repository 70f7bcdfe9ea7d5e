// The row-class transpose's plan and mapping (kernels/transpose/row_class_plan.hpp), played out
// on the host: TMA's class boxes filled as the hardware fills them (rows and columns outside a
// class's map read 0), then every lane's chunks gathered and stored as the kernel does, into a
// byte image of out with guard bytes around the view.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tmakit/host/validate.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "transpose/row_class_plan.hpp"
#include "transpose/sm90_transpose_row_classes.hpp"

namespace rc = tmakit::detail::transpose::row_classes;
namespace tt = tmakit::detail::transpose;
using tmakit::ConstTensorRef;
using tmakit::DataType;
using tmakit::TensorRef;

namespace {

TEST(RowClassPlan, ClassesOfAPitch) {
  EXPECT_EQ(rc::classes_of(16), 1u);
  EXPECT_EQ(rc::classes_of(4096), 1u);
  EXPECT_EQ(rc::classes_of(8), 2u);
  EXPECT_EQ(rc::classes_of(24), 2u);
  EXPECT_EQ(rc::classes_of(12), 4u);
  EXPECT_EQ(rc::classes_of(16386), 8u);  // 8193 bf16
  EXPECT_EQ(rc::classes_of(8193), 16u);  // 8193 u8
  EXPECT_EQ(rc::classes_of(1), 16u);
}

TEST(RowClassPlan, PlanAtTheBenchShape) {
  // u8 8191 x 8193 (pitch 8193): 16 classes of 26 rows of a 416-row tile (384-byte spans
  // from 32-byte sectors)
  const rc::Plan u8 = rc::plan<rc::U8Tile>(8191, 8193, 8193);
  EXPECT_EQ(u8.classes, 16u);
  EXPECT_EQ(u8.box_rows, 26);
  EXPECT_EQ(u8.tiles_x, (8193 + 95) / 96);
  EXPECT_EQ(u8.tiles_y, (8191 + 31 + 383) / 384);
  // bf16: pitch 16386 bytes, 8 classes of 32 rows of a 256-row tile (384-byte spans from
  // 128-byte lines), 128 columns a tile
  const rc::Plan bf16 = rc::plan<rc::U16Tile>(8191, 8193, 16386);
  EXPECT_EQ(bf16.classes, 8u);
  EXPECT_EQ(bf16.box_rows, 32);
  EXPECT_EQ(bf16.tiles_x, (8193 + 127) / 128);
  EXPECT_EQ(bf16.tiles_y, (8191 + 63 + 191) / 192);
}

template <class G>
void check_plan_invariants(std::uint32_t classes) {
  const rc::Plan p = rc::plan<G>(1000, 1000, 16 / classes);
  ASSERT_EQ(p.classes, classes);
  const int class_rows = G::kLocalRows / static_cast<int>(classes);
  EXPECT_LE(p.box_rows, rc::kMaxBoxRows);
  EXPECT_EQ(class_rows % p.box_rows, 0) << "a class's rows are whole boxes";
  EXPECT_EQ(rc::class_bytes<G>(classes) % 128, 0) << "TMA destinations on 128 bytes";
  if (p.box_rows < class_rows) {
    EXPECT_EQ(p.box_rows * G::kBoxRowBytes % 128, 0) << "each box of a class on 128 bytes";
  }
  EXPECT_LE(static_cast<int>(classes) * rc::class_bytes<G>(classes), G::kSmemBytes)
      << "a stage holds every class";
  EXPECT_GE(rc::class_bytes<G>(classes), class_rows * G::kBoxRowBytes);
  EXPECT_EQ(G::kChunkElems % static_cast<int>(classes), 0);
  EXPECT_LE(G::kStages * G::kSmemBytes, 227 * 1024);
}

TEST(RowClassPlan, EveryClassCountFitsTheTile) {
  for (std::uint32_t k : {2u, 4u, 8u, 16u}) check_plan_invariants<rc::U8Tile>(k);
  for (std::uint32_t k : {2u, 4u, 8u}) check_plan_invariants<rc::U16Tile>(k);
}

// The gather's bank conflicts per class count (turned where all 8 chunk lanes would meet on
// one bank), and the class counts the launcher takes: the measured rule (row_class_plan.hpp,
// kMaxGatherConflictWays).
TEST(RowClassPlan, GatherConflictWaysDecideTheClassCounts) {
  // unturned: 8 lanes kChunkElems / K class rows apart
  EXPECT_EQ(rc::conflict_ways<rc::U8Tile>(1), 1);
  EXPECT_EQ(rc::conflict_ways<rc::U8Tile>(2), 2);
  EXPECT_EQ(rc::conflict_ways<rc::U8Tile>(4), 4);
  EXPECT_EQ(rc::conflict_ways<rc::U8Tile>(8), 8);
  EXPECT_EQ(rc::conflict_ways<rc::U8Tile>(16), 8);
  EXPECT_EQ(rc::conflict_ways<rc::U16Tile>(1), 1);
  EXPECT_EQ(rc::conflict_ways<rc::U16Tile>(2), 2);
  EXPECT_EQ(rc::conflict_ways<rc::U16Tile>(4), 4);
  EXPECT_EQ(rc::conflict_ways<rc::U16Tile>(8), 8);
  // the gather turns exactly where they meet 8 ways, by K elements a lane group
  for (std::uint32_t k : {4u, 8u, 16u}) EXPECT_EQ(rc::gather_turn<rc::U8Tile>(k), 0) << k;
  EXPECT_EQ(rc::gather_turn<rc::U8Tile>(2), 2);
  EXPECT_EQ(rc::gather_turn<rc::U8Tile>(1), 1);
  for (std::uint32_t k : {2u, 4u, 8u}) EXPECT_EQ(rc::gather_turn<rc::U16Tile>(k), 0) << k;
  EXPECT_EQ(rc::gather_turn<rc::U16Tile>(1), 1);
  EXPECT_EQ(rc::gather_conflict_ways<rc::U8Tile>(2), 1);
  EXPECT_EQ(rc::gather_conflict_ways<rc::U8Tile>(1), 1);
  EXPECT_EQ(rc::gather_conflict_ways<rc::U16Tile>(1), 1);
  EXPECT_EQ(rc::gather_conflict_ways<rc::U8Tile>(4), 4);
  // a turned lane still gathers each of its chunk's elements once
  for (std::uint32_t k : {1u, 2u}) {
    for (int group = 0; group < 8; ++group) {
      std::vector<int> seen(16, 0);
      for (int b = 0; b < 16; ++b) ++seen.at(rc::gather_element<rc::U8Tile>(b, group, k));
      EXPECT_EQ(seen, std::vector<int>(16, 1)) << k << " " << group;
    }
  }
  const auto takes = [](DataType t, std::uint64_t rows, std::uint64_t pitch_elems,
                        std::uint64_t start_offset) {
    const std::uint64_t e = t == DataType::uint8 ? 1 : 2;
    const auto base = reinterpret_cast<std::uint8_t*>(0x7f0000000000ull);
    const ConstTensorRef in(base + start_offset * e, t, rows, rows - 1, pitch_elems * e);
    const TensorRef out(base + (1ull << 32), t, rows - 1, rows, rows * e);
    return tt::takes_row_classes(in, out, 132);
  };
  for (const std::uint64_t pitch : {8193ull, 8194ull, 8196ull, 8200ull}) {  // 16, 8, 4, 2 classes
    EXPECT_TRUE(takes(DataType::uint8, 8191, pitch, 0)) << pitch;
    EXPECT_TRUE(takes(DataType::uint16, 8191, pitch, 0)) << pitch;
  }
  for (const std::uint64_t pitch : {1025ull, 1026ull, 1028ull}) {  // u16: 8, 4, 2 classes
    EXPECT_TRUE(takes(DataType::uint16, 1023, pitch, 0)) << pitch;
  }
  // 1 class (a start off 16 bytes): u8 at every size, u16 from 8 tiles an SM on
  EXPECT_TRUE(takes(DataType::uint8, 8192, 8192, 1));
  EXPECT_TRUE(takes(DataType::uint8, 1024, 1024, 1));
  EXPECT_TRUE(takes(DataType::uint16, 8192, 8192, 1));
  EXPECT_TRUE(takes(DataType::uint16, 6144, 6144, 1));
  EXPECT_FALSE(takes(DataType::uint16, 4096, 4096, 1));
  EXPECT_FALSE(takes(DataType::uint16, 1024, 1024, 1));
  EXPECT_FALSE(takes(DataType::uint8, 15, 16, 1)) << "fewer than 16 rows";
  // a row or column past TMA's extents (rule P6 sends the view to the plain path): the class
  // maps' coordinates would not hold it, so the plain kernel takes it
  const auto base = reinterpret_cast<std::uint8_t*>(0x7f0000000000ull);
  const std::uint64_t past = tmakit::detail::kMaxExtent + 1;
  EXPECT_FALSE(tt::takes_row_classes(ConstTensorRef(base, DataType::uint8, 16, past, past + 1),
                                     TensorRef(base + (1ull << 40), DataType::uint8, past, 16),
                                     132));
  EXPECT_FALSE(tt::takes_row_classes(ConstTensorRef(base, DataType::uint16, past, 16, 34),
                                     TensorRef(base + (1ull << 40), DataType::uint16, 16, past),
                                     132));
}

// turn_chunk_back undoes every turn of a gathered chunk.
TEST(RowClassPlan, TurnChunkBackRestoresTheOrder) {
  std::uint8_t chunk[16];
  for (int i = 0; i < 16; ++i) chunk[i] = static_cast<std::uint8_t>(17 * i + 3);
  for (std::uint32_t turn = 0; turn < 16; ++turn) {
    std::uint8_t gathered[16];  // byte k: the chunk's byte (k + turn) mod 16
    for (std::uint32_t k = 0; k < 16; ++k) gathered[k] = chunk[(k + turn) % 16];
    std::uint32_t w[4];
    std::memcpy(w, gathered, 16);
    rc::turn_chunk_back(w, turn);
    EXPECT_EQ(std::memcmp(w, chunk, 16), 0) << "turn " << turn;
  }
}

// A byte image of global memory: in at in_addr, out at out_addr (virtual addresses: only
// their alignment matters to the mapping), guard bytes everywhere else.
struct Case {
  std::uint64_t rows, cols;            // in's
  std::uint64_t in_pitch, out_pitch;   // bytes
  std::uint64_t in_offset, out_offset; // bytes past a 256-byte boundary
};

template <class G>
void play_out(const Case& c, std::uint32_t seed) {
  constexpr int E = G::kElementBytes;
  SCOPED_TRACE(::testing::Message() << "E " << E << " " << c.rows << "x" << c.cols << " in pitch "
                                    << c.in_pitch << " +" << c.in_offset << ", out pitch "
                                    << c.out_pitch << " +" << c.out_offset);
  const std::uint64_t in_base = 0x100000, out_base = 0x4000000;
  const std::uint64_t in_addr = in_base + c.in_offset, out_addr = out_base + c.out_offset;
  const std::uint64_t in_bytes = c.in_offset + c.rows * c.in_pitch + 64;
  const std::uint64_t out_bytes = c.out_offset + c.cols * c.out_pitch + 64;
  std::vector<std::uint8_t> in(in_bytes), out(out_bytes, 0xA5);
  std::mt19937 rng(seed);
  for (auto& b : in) b = static_cast<std::uint8_t>(rng());
  const auto in_at = [&](std::uint64_t addr) { return in.at(addr - in_base); };

  const rc::Plan p = rc::plan<G>(c.rows, c.cols, c.in_pitch);
  const std::uint32_t k = p.classes;
  std::vector<std::uint64_t> map_base(k), map_cols(k), map_rows(k);
  std::vector<std::uint32_t> skew(k);
  for (std::uint32_t j = 0; j < k; ++j) {
    const std::uint64_t start = in_addr + j * c.in_pitch;
    map_base[j] = start / 16 * 16;
    skew[j] = static_cast<std::uint32_t>(start - map_base[j]);
    map_cols[j] = c.cols + skew[j] / E;
    map_rows[j] = (c.rows - j + k - 1) / k;
  }
  std::vector<int> writes(out_bytes, 0);
  std::vector<std::uint8_t> smem(G::kSmemBytes);
  const int class_bytes = rc::class_bytes<G>(k);
  for (std::int32_t t = 0; t < p.tiles_x * p.tiles_y; ++t) {
    const rc::TilePos tile = rc::tile_position<G>(t, p);
    const std::int32_t c0 = tile.x * G::kCols, r0 = rc::first_local_row<G>(tile.y);
    ASSERT_EQ(((r0 % 16) + 16) % 16, 0);
    // TMA: class j's boxes of box_rows rows at (x = c0, y = r0 / K + k0), 0 outside the map
    for (std::uint32_t j = 0; j < k; ++j) {
      for (int k0 = 0; k0 < G::kLocalRows / static_cast<int>(k); k0 += p.box_rows) {
        for (int y = 0; y < p.box_rows; ++y) {
          for (int x = 0; x < G::kBoxRowBytes / E; ++x) {
            const std::int64_t gx = c0 + x, gy = r0 / static_cast<std::int32_t>(k) + k0 + y;
            const bool inside = gx < static_cast<std::int64_t>(map_cols[j]) && gy >= 0 &&
                                gy < static_cast<std::int64_t>(map_rows[j]);
            for (int b = 0; b < E; ++b) {
              smem.at(j * class_bytes + (k0 + y) * G::kBoxRowBytes + x * E + b) =
                  inside ? in_at(map_base[j] + gy * k * c.in_pitch + gx * E + b) : 0;
            }
          }
        }
      }
    }
    // the consumers, lane by lane
    for (int thread = 0; thread < G::kThreads; ++thread) {
      const int lane = thread % 32, warp = thread / 32;
      for (int g = warp; g < G::kRowGroups; g += G::kThreads / 32) {
        const std::int32_t col = 4 * g + lane % 4;
        if (c0 + col >= static_cast<std::int32_t>(c.cols)) continue;
        const std::uint64_t out_row = out_addr + static_cast<std::uint64_t>(c0 + col) * c.out_pitch;
        const std::int32_t lead = rc::lead_elements<G>(out_row);
        const std::int32_t x_first = tile.y * G::kSpanRows - lead;
        const std::int32_t l_first = G::kLeadRows - lead;
        for (int s = 0; s < G::kChunkSteps; ++s) {
          const int m = lane / 4 + 8 * s;
          const std::int32_t x0 = x_first + m * G::kChunkElems;
          if (x0 + G::kChunkElems <= 0 || x0 >= static_cast<std::int32_t>(c.rows)) continue;
          const bool whole = x0 >= 0 && x0 + G::kChunkElems <= static_cast<std::int32_t>(c.rows);
          if (whole) {
            EXPECT_EQ((out_row + x0 * E) % 16, 0u) << "a whole chunk is one 16-byte store";
          }
          // load b gathers element gather_element(b) (turned by the lane's group where the
          // gather turns) into byte b E.. of the chunk as gathered
          const int group = lane / 4;
          const auto turn = static_cast<std::uint32_t>(rc::gather_turn<G>(k) * group);
          std::uint8_t gathered[16];
          for (int b = 0; b < G::kChunkElems; ++b) {
            const std::int32_t l = l_first + m * G::kChunkElems + rc::gather_element<G>(b, group, k);
            ASSERT_GE(l, 0);
            ASSERT_LT(l, G::kLocalRows);
            const std::uint32_t at = rc::shared_offset<G>(l, col, k, skew[l % static_cast<int>(k)]);
            for (int e = 0; e < E; ++e) gathered[b * E + e] = smem.at(at + e);
          }
          std::uint8_t chunk[16];  // what the store writes, element by element
          if (whole) {
            // the kernel's words, turned back (rc::turn_chunk_back) and stored whole
            std::uint32_t w[4];
            std::memcpy(w, gathered, 16);
            rc::turn_chunk_back(w, turn * E);
            std::memcpy(chunk, w, 16);
          } else {
            // the edge's element stores: gathered element b to its place (b + turn) mod elements
            for (int b = 0; b < G::kChunkElems; ++b) {
              const auto place = static_cast<int>((b + turn) % G::kChunkElems);
              std::memcpy(chunk + place * E, gathered + b * E, E);
            }
          }
          for (int b = 0; b < G::kChunkElems; ++b) {
            if (!whole && (x0 + b < 0 || x0 + b >= static_cast<std::int32_t>(c.rows))) continue;
            for (int e = 0; e < E; ++e) {
              const std::uint64_t addr = out_row + static_cast<std::uint64_t>(x0 + b) * E + e;
              out.at(addr - out_base) = chunk[b * E + e];
              ++writes.at(addr - out_base);
            }
          }
        }
      }
    }
  }
  // out[c][r] == in[r][c] for every element of the view, each byte written once, nothing else
  std::uint64_t wrong = 0, rewritten = 0, outside = 0;
  std::vector<bool> in_view(out_bytes, false);
  for (std::uint64_t col = 0; col < c.cols; ++col) {
    for (std::uint64_t r = 0; r < c.rows; ++r) {
      for (int e = 0; e < E; ++e) {
        const std::uint64_t o = c.out_offset + col * c.out_pitch + r * E + e;
        in_view[o] = true;
        if (out[o] != in_at(in_addr + r * c.in_pitch + col * E + e)) ++wrong;
        if (writes[o] != 1) ++rewritten;
      }
    }
  }
  for (std::uint64_t o = 0; o < out_bytes; ++o) {
    if (!in_view[o] && (out[o] != 0xA5 || writes[o] != 0)) ++outside;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(rewritten, 0u) << "bytes of the view not written exactly once";
  EXPECT_EQ(outside, 0u) << "bytes outside the view written";
}

// The first pitch of at least `min_pitch` bytes, a multiple of `esize`, with `classes` classes.
std::uint64_t pitch_with(std::uint32_t classes, std::uint64_t min_pitch, std::uint64_t esize) {
  std::uint64_t pitch = (min_pitch + esize - 1) / esize * esize;
  while (rc::classes_of(pitch) != classes) pitch += esize;
  return pitch;
}

TEST(RowClassMapping, U8EveryClassCountAndOffset) {
  std::uint32_t seed = 1;
  for (std::uint64_t rows : {16ull, 37ull, 700ull}) {
    for (std::uint64_t cols : {1ull, 5ull, 101ull, 200ull}) {
      for (std::uint32_t k : {1u, 2u, 4u, 8u, 16u}) {
        for (std::uint64_t off : {0ull, 3ull}) {
          play_out<rc::U8Tile>({rows, cols, pitch_with(k, cols, 1), rows + 5, off, 7 + off},
                               seed++);
        }
      }
    }
  }
}

TEST(RowClassMapping, U16EveryClassCountAndOffset) {
  std::uint32_t seed = 100;
  for (std::uint64_t rows : {16ull, 300ull}) {
    for (std::uint64_t cols : {1ull, 7ull, 97ull, 200ull}) {
      for (std::uint32_t k : {1u, 2u, 4u, 8u}) {
        for (std::uint64_t off : {0ull, 6ull}) {
          play_out<rc::U16Tile>({rows, cols, pitch_with(k, 2 * cols, 2), 2 * (rows + 3), off, 2 + off},
                                seed++);
        }
      }
    }
  }
}

// The launcher's class maps (no GPU: the specs only): each class's rows from 16 bytes at or
// before its first row's start, K pitches apart, the box the plan's, and every rule of sm_90a
// kept.
template <class G>
void check_class_maps(std::uint64_t address, std::uint64_t rows, std::uint64_t cols,
                      std::uint64_t pitch) {
  constexpr int E = G::kElementBytes;
  SCOPED_TRACE(::testing::Message() << "E " << E << " " << rows << "x" << cols << " pitch "
                                    << pitch << " at +" << address % 16);
  const tmakit::DataType type = E == 1 ? tmakit::DataType::uint8 : tmakit::DataType::bfloat16;
  const tmakit::ConstTensorRef in(reinterpret_cast<const void*>(address), type, rows, cols, pitch);
  const rc::Plan p = rc::plan<G>(rows, cols, pitch);
  for (std::uint32_t j = 0; j < p.classes; ++j) {
    const tmakit::TensorMapSpec s = tmakit::detail::transpose::row_class_map_spec(in, j);
    const std::uint64_t start = address + j * pitch;
    EXPECT_EQ(s.global_address % 16, 0u);
    EXPECT_LE(s.global_address, start);
    EXPECT_LT(start - s.global_address, 16u);
    EXPECT_EQ(s.rank, 2u);
    EXPECT_EQ(s.global_dim[0], cols + (start - s.global_address) / E);
    EXPECT_EQ(s.global_dim[1], (rows - j + p.classes - 1) / p.classes);
    EXPECT_EQ(s.global_strides_bytes[0], p.classes * pitch);
    EXPECT_EQ(s.box_dim[0], static_cast<std::uint32_t>(G::kBoxRowBytes / E));
    EXPECT_EQ(s.box_dim[1], static_cast<std::uint32_t>(p.box_rows));
    EXPECT_EQ(s.data_type, E == 1 ? tmakit::DataType::uint8 : tmakit::DataType::uint16);
    EXPECT_EQ(s.swizzle, tmakit::Swizzle::none);
    EXPECT_EQ(s.oob_fill, tmakit::OobFill::zero);
    EXPECT_EQ(s.l2_promotion,
              E == 1 ? tmakit::L2Promotion::bytes128 : tmakit::L2Promotion::none);
    EXPECT_NO_THROW(tmakit::validate(s, tmakit::Arch::sm_90a));
  }
}

TEST(RowClassMaps, EveryClassKeepsTmaRules) {
  for (std::uint64_t off : {0ull, 1ull, 6ull, 15ull}) {
    for (std::uint32_t k : {2u, 4u, 8u, 16u}) {
      check_class_maps<rc::U8Tile>(0x7f0000000000ull + off, 8191, 8193 - 8, pitch_with(k, 8193, 1));
      check_class_maps<rc::U8Tile>(0x7f0000000000ull + off, 16, 1, pitch_with(k, 1, 1));
    }
    for (std::uint32_t k : {2u, 4u, 8u}) {
      check_class_maps<rc::U16Tile>(0x7f0000000000ull + 2 * (off / 2), 8191, 8193 - 8,
                                    pitch_with(k, 2 * 8193, 2));
      check_class_maps<rc::U16Tile>(0x7f0000000000ull + 2 * (off / 2), 17, 3, pitch_with(k, 6, 2));
    }
  }
}

}  // namespace
