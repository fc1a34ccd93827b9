// labels: memory
// The double-precision reference of its 16 384 products takes minutes at -O0 under a sanitizer:
// sanitized-options: -O1
// sanitized-split: *random*
#include "argus/kernel/gemm.hpp"

#include "argus/kernel/cpu_caches.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

// gemm_nn, gemm_nt, gemm_tn (Aᵀ B, the weight gradients) and their
// product with B packed once (detail::pack_b_panels + gemm_packed_b, from B or Bᵀ, packed
// deeper than the product reads, A read in place when its row stride is kc) against a
// double-accumulated triple loop, on every edge the blocking
// has: m, n, k around the tile sizes (mr = 14 or 6 rows, nr = 2 registers, kc = 256 or 512),
// leading dimensions wider than the rows, base pointers one element off alignment, bias,
// accumulate, alpha != 1, k == 0. C is poisoned with NaN where it must not be read, and its
// padding holds a sentinel that must survive.

namespace {

// Products of double take the packed register tile whatever their shape
// (detail::reads_b_where_it_lies): the tests below that name the in-place, row-sweep and
// few-row kernels check those for float, and for double the same products packed (a sliver
// under detail::packing_rows_lowest rows copying B's panels, the others packing them as they
// read B) against the same references, to the bit where the test says so.
using element_types = std::tuple<float, double>;

/// Uniform in [-1, 1) from one draw of the generator. std::uniform_real_distribution goes
/// through std::generate_canonical, whose long-double logarithm per draw was a third of
/// this test's time in the sanitizer build (-O1, nothing folded).
struct uniform_pm1 {
  double operator()(std::mt19937& g) const { return double(g()) * 0x1p-31 - 1.0; }
};

// tn: C = Aᵀ B, A given as (k x m); packed_nn, packed_nt: B (or Bᵀ) packed by pack_b_panels,
// C = A B by gemm_packed_b (no bias).
enum class layout { nn, nt, tn, packed_nn, packed_nt };

/// One product to check; pads are extra elements at the end of every row.
struct problem {
  std::size_t m, n, k;
  std::size_t pad_a = 0, pad_b = 0, pad_c = 0;
  std::size_t offset = 0;  // every base pointer is this many elements past an aligned one
  bool bias = false;
  bool accumulate = false;
  double alpha = 1.0;
  std::size_t extra_depth = 0;  // packed: B packed with this many rows past k
  bool in_place = false;        // packed: A's row stride is kc (read without packing) if k <= kc
};

std::string describe(layout l, const problem& p) {
  std::ostringstream s;
  s << (l == layout::nn          ? "gemm_nn"
        : l == layout::nt        ? "gemm_nt"
        : l == layout::tn        ? "gemm_tn"
        : l == layout::packed_nn ? "gemm_packed_b from B"
                                 : "gemm_packed_b from Bᵀ")
    << " m=" << p.m << " n=" << p.n << " k=" << p.k << " pads=(" << p.pad_a << "," << p.pad_b << ","
    << p.pad_c << ") offset=" << p.offset << " bias=" << p.bias << " accumulate=" << p.accumulate
    << " alpha=" << p.alpha << " extra_depth=" << p.extra_depth << " in_place=" << p.in_place;
  return s.str();
}

/// Relative tolerance per sqrt(k), against sum |alpha a b| + |bias| + |c|.
template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-13;

constexpr double sentinel = 12345.0;

/// Memory of one operand: `rows` rows of `ld` elements, starting `offset` elements past a
/// 64-byte boundary. Copies keep the same element positions.
template <class T>
struct operand {
  std::vector<T> storage;
  std::size_t start, ld;
  operand(std::size_t rows, std::size_t ld_, std::size_t offset, T fill)
      : storage(offset + std::max<std::size_t>(rows * ld_, 1) + 64 / sizeof(T), fill), ld(ld_) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    start = ((64 - base % 64) % 64) / sizeof(T) + offset;
  }
  T* data() { return storage.data() + start; }
  T& at(std::size_t i, std::size_t j) { return storage[start + i * ld + j]; }
};

/// Runs one product; returns an empty string, or the first failure found.
template <class T>
std::string check(layout l, const problem& p, std::mt19937& rng) {
  const uniform_pm1 dist;
  using tile = argus::kernel::detail::gemm_tile<T>;
  const bool packed = l == layout::packed_nn || l == layout::packed_nt;
  const bool tn = l == layout::tn, b_plain = l != layout::nt && l != layout::packed_nt;
  const std::size_t depth = p.k + (packed ? p.extra_depth : 0);  // B's rows (k of them read)
  const std::size_t lda =
      packed && p.in_place && p.k <= tile::kc ? tile::kc : (tn ? p.m : p.k) + p.pad_a;
  const std::size_t ldb = (b_plain ? p.n : depth) + p.pad_b;
  const std::size_t ldc = p.n + p.pad_c;
  const std::size_t b_rows = b_plain ? depth : p.n;
  operand<T> a(tn ? p.k : p.m, lda, p.offset, T(sentinel));
  operand<T> b(b_rows, ldb, p.offset, T(sentinel));
  operand<T> c(p.m, ldc, p.offset, T(sentinel));
  std::vector<T> bias(p.n);
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t j = 0; j < p.k; ++j) (tn ? a.at(j, i) : a.at(i, j)) = T(dist(rng));
  for (std::size_t i = 0; i < b_rows; ++i)
    for (std::size_t j = 0; j < (b_plain ? p.n : depth); ++j) b.at(i, j) = T(dist(rng));
  for (auto& x : bias) x = T(dist(rng));
  // Without accumulate, C must only be written: NaN there would leak into the result.
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t j = 0; j < p.n; ++j)
      c.at(i, j) = p.accumulate ? T(dist(rng)) : std::numeric_limits<T>::quiet_NaN();
  const operand<T> c_before = c;

  const T alpha = T(p.alpha);
  const T* bias_ptr = p.bias ? bias.data() : nullptr;
  if (l == layout::nn)
    argus::kernel::gemm_nn<T>(p.m, p.n, p.k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc,
                              bias_ptr, p.accumulate);
  else if (l == layout::nt)
    argus::kernel::gemm_nt<T>(p.m, p.n, p.k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc,
                              bias_ptr, p.accumulate);
  else if (l == layout::tn)
    argus::kernel::gemm_tn<T>(p.m, p.n, p.k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc,
                              bias_ptr, p.accumulate);
  else {
    namespace d = argus::kernel::detail;
    std::vector<T> panels(d::packed_b_elements<T>(depth, p.n));
    if (l == layout::packed_nn)
      d::pack_b_panels<false>(depth, p.n, b.data(), ldb, panels.data());
    else
      d::pack_b_panels<true>(depth, p.n, b.data(), ldb, panels.data());
    d::gemm_packed_b<T>(p.m, p.n, p.k, alpha, a.data(), lda, panels.data(), depth, c.data(), ldc,
                        p.accumulate);
  }

  const double tol = tolerance<T> * std::sqrt(double(std::max<std::size_t>(p.k, 1)));
  operand<T> c_orig = c_before;
  // Raw pointers and strides: the sanitizer preset builds this file at -O0, where going
  // through operand::at for every term made the reference most of the test's run time.
  const T* a0 = a.data();
  const T* b0 = b.data();
  // A(i, q) = a0[i·a_row + q·a_step], B(q, j) = b0[j·b_col + q·b_step].
  const std::size_t a_row = tn ? 1 : lda, a_step = tn ? lda : 1;
  const std::size_t b_col = b_plain ? 1 : ldb, b_step = b_plain ? ldb : 1;
  for (std::size_t i = 0; i < p.m; ++i) {
    for (std::size_t j = 0; j < p.n; ++j) {
      double sum = 0, scale = 0;
      const T* x_at = a0 + i * a_row;
      const T* y_at = b0 + j * b_col;
      for (std::size_t q = 0; q < p.k; ++q, x_at += a_step, y_at += b_step) {
        const double xy = double(*x_at) * double(*y_at);
        sum += xy;
        scale += std::abs(xy);
      }
      double want = p.alpha * sum;
      scale *= std::abs(p.alpha);
      if (p.bias) want += bias[j], scale += std::abs(double(bias[j]));
      if (p.accumulate) want += c_orig.at(i, j), scale += std::abs(double(c_orig.at(i, j)));
      const double got = c.at(i, j);
      if (!(std::abs(got - want) <= tol * scale + std::numeric_limits<T>::min())) {
        std::ostringstream s;
        s << describe(l, p) << ": C(" << i << "," << j << ") = " << got << ", expected " << want
          << " (tolerance " << tol * scale << ")";
        return s.str();
      }
    }
    for (std::size_t j = p.n; j < ldc; ++j)
      if (c.at(i, j) != T(sentinel))
        return describe(l, p) + ": wrote into the padding of row " + std::to_string(i);
  }
  // Nothing before the first element or after the last row may change either.
  for (std::size_t e = 0; e < c.storage.size(); ++e) {
    const bool inside = e >= c.start && e < c.start + p.m * ldc;
    if (!inside && c.storage[e] != c_before.storage[e]) return describe(l, p) + ": wrote outside C";
  }
  return {};
}

constexpr std::size_t edge_sizes[] = {0, 1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129};

/// Every (m, n, k) from edge_sizes, with the options cycling so that each size meets
/// each option: pads, offset, bias, accumulate and alpha vary with the combination index.
template <class T>
void check_all_edge_sizes(layout l) {
  std::mt19937 rng(l == layout::nn   ? 1
                   : l == layout::nt ? 2
                   : l == layout::tn ? 5
                                     : 6 + std::size_t(l));
  std::size_t index = 0, failures = 0;
  for (std::size_t m : edge_sizes)
    for (std::size_t n : edge_sizes)
      for (std::size_t k : edge_sizes) {
        problem p{m, n, k};
        p.pad_a = (index % 3 == 1) ? 3 : 0;
        p.pad_b = (index % 5 == 2) ? 17 : 0;
        p.pad_c = (index % 7 == 3) ? 5 : 0;
        p.offset = (index / 2) % 2;
        p.bias = index % 2 == 0;
        p.accumulate = (index / 4) % 2 == 1;
        p.alpha = (index % 3 == 0) ? 1.0 : -0.75;
        if (l == layout::packed_nn || l == layout::packed_nt) {
          p.bias = false;
          p.extra_depth = index % 3 == 2 ? 5 : 0;
          p.in_place = index % 4 == 1;
        }
        ++index;
        const std::string error = check<T>(l, p, rng);
        if (!error.empty() && ++failures <= 10) BOOST_ERROR(error);
      }
  BOOST_TEST(failures == 0u);
}

/// Random shapes up to 300 x 700 x 513 (k above one kc block), random options.
template <class T>
void check_random_shapes(layout l) {
  std::mt19937 rng(l == layout::nn   ? 3
                   : l == layout::nt ? 4
                   : l == layout::tn ? 6
                                     : 16 + std::size_t(l));
  std::uniform_int_distribution<std::size_t> dm(1, 300), dn(1, 700), dk(1, 513), pad(0, 9);
  std::vector<problem> problems{{300, 700, 513}, {300, 700, 513, 7, 9, 11, 1, true, true, 0.5}};
  for (int r = 0; r < 10; ++r) {
    problem p{dm(rng), dn(rng), dk(rng)};
    p.pad_a = pad(rng), p.pad_b = pad(rng), p.pad_c = pad(rng);
    p.offset = r % 2;
    p.bias = r % 3 != 0;
    p.accumulate = r % 4 >= 2;
    p.alpha = r % 2 ? 1.0 : 0.3;
    if (l == layout::packed_nn || l == layout::packed_nt)
      p.extra_depth = r % 3 == 1 ? 40 : 0, p.in_place = r % 2 == 0;
    problems.push_back(p);
  }
  for (problem p : problems) {
    if (l == layout::packed_nn || l == layout::packed_nt) p.bias = false;
    const std::string error = check<T>(l, p, rng);
    BOOST_TEST(error.empty(), error);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(nn_every_edge_size, T, element_types) {
  check_all_edge_sizes<T>(layout::nn);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nt_every_edge_size, T, element_types) {
  check_all_edge_sizes<T>(layout::nt);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tn_every_edge_size, T, element_types) {
  check_all_edge_sizes<T>(layout::tn);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tn_random_large_shapes, T, element_types) {
  check_random_shapes<T>(layout::tn);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nn_random_large_shapes, T, element_types) {
  check_random_shapes<T>(layout::nn);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nt_random_large_shapes, T, element_types) {
  check_random_shapes<T>(layout::nt);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(packed_b_every_edge_size, T, element_types) {
  check_all_edge_sizes<T>(layout::packed_nn);
  check_all_edge_sizes<T>(layout::packed_nt);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(packed_b_random_large_shapes, T, element_types) {
  check_random_shapes<T>(layout::packed_nn);
  check_random_shapes<T>(layout::packed_nt);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(k_zero_gives_bias_plus_c, T, element_types) {
  std::vector<T> c{1, 2, 3, 4, 5, 6}, bias{10, 20, 30};
  argus::kernel::gemm_nn<T>(2, 3, 0, T(2), nullptr, 0, nullptr, 3, c.data(), 3, bias.data(), true);
  BOOST_TEST(c == (std::vector<T>{11, 22, 33, 14, 25, 36}), boost::test_tools::per_element());
  argus::kernel::gemm_nt<T>(2, 3, 0, T(2), nullptr, 0, nullptr, 0, c.data(), 3, nullptr, false);
  BOOST_TEST(c == (std::vector<T>(6, T(0))), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(packing_buffers_are_allocated_once_per_thread, T, element_types) {
  // The steady state allocates nothing: every call reuses this thread's buffers.
  const std::size_t m = 70, n = 90, k = 300;
  std::vector<T> a(m * k, T(1)), b(k * n, T(1)), c(m * n);
  argus::kernel::gemm_nn<T>(m, n, k, T(1), a.data(), k, b.data(), n, c.data(), n);
  const auto& buffers = argus::kernel::detail::gemm_buffers<T>::local();
  const T* packed_a = buffers.a;
  const T* packed_b = buffers.b;
  for (int r = 0; r < 3; ++r) {
    argus::kernel::gemm_nn<T>(m, n, k, T(1), a.data(), k, b.data(), n, c.data(), n);
    argus::kernel::gemm_nt<T>(m, n, k, T(1), a.data(), k, b.data(), k, c.data(), n);
  }
  BOOST_TEST(buffers.a == packed_a);
  BOOST_TEST(buffers.b == packed_b);
  BOOST_TEST(c[0] == T(k));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(threads_use_their_own_packing_buffers, T, element_types) {
  // Two threads multiply different matrices at the same time; each result must equal the
  // one computed alone (the kernel is deterministic, so bit for bit).
  const std::size_t m = 100, n = 150, k = 600;
  std::mt19937 rng(5);
  const uniform_pm1 dist;
  std::vector<T> a[2], b[2], alone[2], together[2];
  for (int t = 0; t < 2; ++t) {
    a[t].resize(m * k), b[t].resize(k * n), alone[t].resize(m * n), together[t].resize(m * n);
    for (auto& x : a[t]) x = T(dist(rng));
    for (auto& x : b[t]) x = T(dist(rng));
    argus::kernel::gemm_nn<T>(m, n, k, T(1), a[t].data(), k, b[t].data(), n, alone[t].data(), n);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r)
        argus::kernel::gemm_nn<T>(m, n, k, T(1), a[t].data(), k, b[t].data(), n, together[t].data(),
                                  n);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) BOOST_TEST(alone[t] == together[t]);
}

// gemm_nn_split: C's columns in blocks of `block`, each its own (m x block) matrix with row
// stride ldc, `block_stride` apart (split heads). Every element against the double
// reference and, to the bit, against gemm_nn into one row-major C; everything between and
// after the blocks keeps its sentinel. Block widths below, at and above the register tile,
// multiples of it and not (nr / 2 and 80: tiles whose vectors each lie in one block, stored
// vector by vector), one block and many. Heights of one sliver, of a few (B read in place)
// and of more than direct_b_slivers (B packed by the first sliver's micro-kernel).
BOOST_AUTO_TEST_CASE_TEMPLATE(nn_split_every_block_width, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t nr = d::gemm_tile<T>::nr;
  constexpr std::size_t kc = d::gemm_tile<T>::kc;
  constexpr std::size_t packing = d::direct_b_slivers * d::gemm_tile<T>::mr + 1;
  std::mt19937 rng(7);
  const uniform_pm1 dist;
  std::size_t failures = 0;
  for (const std::size_t m : {std::size_t{1}, std::size_t{7}, std::size_t{29}, packing})
    for (const std::size_t n : {std::size_t{5}, nr, 3 * nr + 4, std::size_t{130}})
      for (const std::size_t k : {std::size_t{3}, kc + 4})  // one k block and two
        for (const std::size_t block : {std::size_t{1}, std::size_t{3}, nr / 2, nr, 2 * nr,
                                        std::size_t{64}, std::size_t{80}, n, n + 5})
          for (const bool accumulate : {false, true}) {
            if (block == 0) continue;
            const std::size_t ldc = block + 2, stride = m * ldc + 5;
            const std::size_t blocks = (n + block - 1) / block;
            std::vector<T> a(m * k), b(k * n), bias(n), c(blocks * stride, T(sentinel));
            for (auto& x : a) x = T(dist(rng));
            for (auto& x : b) x = T(dist(rng));
            for (auto& x : bias) x = T(dist(rng));
            const auto at = [&](std::size_t i, std::size_t j) -> T& {
              return c[j / block * stride + i * ldc + j % block];
            };
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t j = 0; j < n; ++j)
                at(i, j) = accumulate ? T(dist(rng)) : std::numeric_limits<T>::quiet_NaN();
            const std::vector<T> before = c;
            argus::kernel::gemm_nn_split<T>(m, n, k, T(0.5), a.data(), k, b.data(), n, c.data(),
                                            ldc, block, stride, bias.data(), accumulate);
            // The same product into one row-major C: the split one is its relayout, to the bit
            // (tiles that straddle two blocks or are narrower than a panel get a whole tile's
            // operations).
            std::vector<T> whole(m * n);
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t j = 0; j < n; ++j)
                whole[i * n + j] = before[j / block * stride + i * ldc + j % block];
            argus::kernel::gemm_nn<T>(m, n, k, T(0.5), a.data(), k, b.data(), n, whole.data(), n,
                                      bias.data(), accumulate);
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t j = 0; j < n; ++j)
                if (!(whole[i * n + j] == at(i, j)) && ++failures <= 5)
                  BOOST_ERROR("m " << m << " n " << n << " k " << k << " block " << block << ": C("
                                   << i << "," << j << ") = " << at(i, j) << ", gemm_nn gives "
                                   << whole[i * n + j]);
            std::vector<bool> inside(c.size(), false);
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t j = 0; j < n; ++j) {
                double want = 0, scale = 0;
                for (std::size_t p = 0; p < k; ++p) {
                  want += double(a[i * k + p]) * double(b[p * n + j]);
                  scale += std::abs(double(a[i * k + p]) * double(b[p * n + j]));
                }
                want = 0.5 * want + double(bias[j]);
                scale = 0.5 * scale + std::abs(double(bias[j]));
                const std::size_t e = j / block * stride + i * ldc + j % block;
                if (accumulate) want += double(before[e]), scale += std::abs(double(before[e]));
                inside[e] = true;
                const double tol = tolerance<T> * std::sqrt(double(k)) * scale;
                if (!(std::abs(double(c[e]) - want) <= tol) && ++failures <= 5)
                  BOOST_ERROR("m " << m << " n " << n << " k " << k << " block " << block << ": C("
                                   << i << "," << j << ") = " << c[e] << ", expected " << want);
              }
            for (std::size_t e = 0; e < c.size(); ++e)
              if (!inside[e] && c[e] != T(sentinel) && ++failures <= 5)
                BOOST_ERROR("m " << m << " n " << n << " block " << block << ": wrote element " << e
                                 << " outside C");
          }
  BOOST_TEST(failures == 0u);
}

// gemm_nn_split_prepacked: B is columns [col0, col0 + n) of a wider matrix packed once by
// pack_gemm_b. Where the panels serve (this set's width, col0 a multiple of it, blocks of
// whole panels) they are read in place; elsewhere B is read as gemm_nn_split reads it. Either
// way C must be gemm_nn_split's C to the bit (the same products in the same order), and
// nothing outside C may be written. Panels of another width (another instruction set's) and
// null panels must fall back, not be misread. Blocks of whole vectors but not whole panels
// put a tile across two blocks, each vector inside one. Heights of more slivers than read B in
// place (m > direct_b_slivers * mr) have gemm_nn_split pack B in its first sliver's micro-kernel
// (detail::gemm_micro_kernel_direct_b_packing) where the prepacked product reads panels
// packed by pack_gemm_b: the same bits again, over one, two and three k blocks. Up to
// prepacked_panel_slivers slivers the prepacked product runs panel by panel
// (detail::gemm_prepacked_block: one, two and that many slivers), more sliver by sliver.
BOOST_AUTO_TEST_CASE_TEMPLATE(nn_split_prepacked_is_nn_split_to_the_bit, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t nr = d::gemm_tile<T>::nr;
  constexpr std::size_t kc = d::gemm_tile<T>::kc;
  constexpr std::size_t packing = d::direct_b_slivers * d::gemm_tile<T>::mr + 1;
  BOOST_TEST(argus::kernel::gemm_panel_width<T>() == nr);
  BOOST_TEST(!d::reads_b_in_place<T>(d::sliver_cut::of<T>(packing).count, 3 * nr + 5, 2 * kc + 88,
                                     3 * nr + 5));
  std::mt19937 rng(11);
  const uniform_pm1 dist;
  std::size_t failures = 0, checked = 0;
  constexpr std::size_t mr = d::gemm_tile<T>::mr;
  constexpr std::size_t by_panel = d::prepacked_panel_slivers * mr;  // the most rows by panel
  BOOST_TEST(d::prepacked_by_panel(d::sliver_cut::of<T>(by_panel).count));
  BOOST_TEST(!d::prepacked_by_panel(d::sliver_cut::of<T>(by_panel + 1).count));
  // Wider than the loop nest's block of columns: the products of few slivers run k block by k
  // block over all of them.
  constexpr std::size_t wider = d::gemm_tile<T>::nc + nr + 5;
  for (const std::size_t m :
       {std::size_t{1}, mr + 1, std::size_t{13}, by_panel, std::size_t{40}, packing})
    for (const std::size_t total : {nr - 3, 3 * nr + 5, std::size_t{192}, wider})
      for (const std::size_t k : {std::size_t{5}, kc + 44, 2 * kc + 88}) {  // 1, 2, 3 k blocks
        std::vector<T> a(m * k), b(k * total), bias(total);
        for (auto& x : a) x = T(dist(rng));
        for (auto& x : b) x = T(dist(rng));
        for (auto& x : bias) x = T(dist(rng));
        std::vector<T> panels(argus::kernel::gemm_packed_b_size<T>(k, total), T(sentinel));
        BOOST_TEST(panels.size() == k * ((total + nr - 1) / nr * nr));
        argus::kernel::pack_gemm_b<T>(k, total, b.data(), total, panels.data());
        for (const std::size_t col0 : {std::size_t{0}, nr, std::size_t{3}})
          // nr / 2 * 3: whole vectors, not whole panels (a tile across two blocks, each of
          // its vectors inside one: stored vector by vector).
          for (const std::size_t block :
               {std::size_t{3}, nr, nr / 2 * 3, 2 * nr, std::size_t{64}, total})
            for (const std::size_t width : {nr, nr / 2, std::size_t{0}})
              for (const bool accumulate : {false, true}) {
                if (col0 >= total) continue;
                const std::size_t n = total - col0;
                const std::size_t ldc = block + 1, stride = m * ldc + 3;
                const std::size_t blocks = (n + block - 1) / block;
                std::vector<T> want(blocks * stride, T(sentinel));
                for (auto& x : want) x = accumulate ? T(dist(rng)) : T(sentinel);
                std::vector<T> got = want;
                const T* bp = b.data() + col0;
                const T* biasp = bias.data() + col0;
                argus::kernel::gemm_nn_split<T>(m, n, k, T(0.5), a.data(), k, bp, total,
                                                want.data(), ldc, block, stride, biasp, accumulate);
                argus::kernel::gemm_nn_split_prepacked<T>(
                    m, n, k, T(0.5), a.data(), k, bp, total, width ? panels.data() : nullptr, width,
                    total, col0, got.data(), ldc, block, stride, biasp, accumulate);
                ++checked;
                if (got != want && ++failures <= 5)
                  BOOST_ERROR("m " << m << " columns [" << col0 << ", " << total << ") k " << k
                                   << " block " << block << " panel width " << width
                                   << " accumulate " << accumulate
                                   << ": differs from gemm_nn_split");
              }
      }
  BOOST_TEST(checked > 500u);
  BOOST_TEST(failures == 0u);
}

// A product of at most direct_b_slivers slivers (m <= 4 mr rows) reads B's whole panels where
// they lie instead of packing them (detail::gemm_direct_b_block, with
// detail::gemm_micro_kernel_direct_b; for one sliver of a few rows, several panels at once,
// detail::gemm_micro_kernel_direct_b_rows), unless B's rows are a multiple of 4 KiB apart and
// there are several slivers (for a B as small as these; one of
// detail::b_in_place_page_bytes or more is read in place by up to
// detail::page_stride_direct_b_slivers slivers, by the same code as at any other stride): the
// same operations in the same order, so each of its rows must be, to the bit, that row of the
// same product over more rows (more slivers than direct_b_slivers, B packed), at every k block
// (k over kc, the second block adding to the first), with B's rows wider than n and its base
// off alignment, columns split into blocks (tiles straddling two blocks are gathered), bias
// and accumulate; and nothing outside C is written.
BOOST_AUTO_TEST_CASE_TEMPLATE(few_slivers_read_b_in_place_to_the_bit, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t mr = d::gemm_tile<T>::mr;
  constexpr std::size_t nr = d::gemm_tile<T>::nr;
  constexpr std::size_t kc = d::gemm_tile<T>::kc;
  constexpr std::size_t most = d::direct_b_slivers * mr;
  std::vector<std::size_t> heights;  // every height of one sliver, and some of several
  for (std::size_t m = 1; m <= mr; ++m) heights.push_back(m);
  for (const std::size_t m : {mr + 1, 2 * mr + 1, 3 * mr - 1, most})
    if (m > mr && m <= most) heights.push_back(m);
  std::mt19937 rng(17);
  const uniform_pm1 dist;
  std::size_t failures = 0, checked = 0;
  // The product over `tall` rows (B packed) once per shape; each height's product is the
  // same A's first rows against it. n `wide` lets one sliver of a few rows cover its
  // direct_b_row_vectors vectors (detail::gemm_micro_kernel_direct_b_rows) at least twice,
  // across blocks of 64 columns (heads) too.
  // n `wider` is more than the loop nest's block of columns: a product of few slivers runs
  // k block by k block over all of them.
  constexpr std::size_t wide = 2 * d::direct_b_row_vectors<T, 1> * d::gemm_tile<T>::width + nr + 5;
  constexpr std::size_t wider = d::gemm_tile<T>::nc + nr + 5;
  for (const std::size_t n : {nr, 3 * nr + 5, std::size_t{200}, wide, wider})
    for (const std::size_t k : {std::size_t{7}, kc + 44, 2 * kc + 88})  // 1, 2, 3 k blocks
      for (const std::size_t block : {n + 1, std::size_t{64}, std::size_t{3}})
        for (const bool accumulate : {false, true}) {
          // B's rows 5 elements wider than n, or (n 200) 4 KiB apart, where several slivers
          // pack a B this small.
          const std::size_t ldb = n == 200 ? 4096 / sizeof(T) : n + 5;
          const std::size_t tall = most + mr + 1, lda = k + 2;
          std::vector<T> a(tall * lda), b(k * ldb + 1), bias(n);
          for (auto& x : a) x = T(dist(rng));
          for (auto& x : b) x = T(dist(rng));
          for (auto& x : bias) x = T(dist(rng));
          const std::size_t blocks = (n + block - 1) / block;
          const std::size_t ldc = std::min(block, n) + 2;
          auto c_of = [&](std::size_t rows) {
            const std::size_t stride = rows * ldc + 3;
            std::vector<T> c(blocks * stride, T(sentinel));
            for (std::size_t q = 0; q < blocks; ++q)
              for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t j = 0; j < std::min(block, n - q * block); ++j)
                  c[q * stride + i * ldc + j] = accumulate ? T(i + 1) / T(j + 2) : T(sentinel);
            return std::pair{c, stride};
          };
          auto [many, many_stride] = c_of(tall);
          argus::kernel::gemm_nn_split<T>(tall, n, k, T(0.5), a.data(), lda, b.data() + 1, ldb,
                                          many.data(), ldc, block, many_stride, bias.data(),
                                          accumulate);
          for (const std::size_t m : heights) {
            auto [one, one_stride] = c_of(m);
            const std::vector<T> untouched = one;
            argus::kernel::gemm_nn_split<T>(m, n, k, T(0.5), a.data(), lda, b.data() + 1, ldb,
                                            one.data(), ldc, block, one_stride, bias.data(),
                                            accumulate);
            ++checked;
            bool same = true;
            for (std::size_t q = 0; q < blocks; ++q)
              for (std::size_t i = 0; i < m; ++i)
                for (std::size_t j = 0; j < ldc; ++j) {
                  const std::size_t at = q * one_stride + i * ldc + j;
                  const bool in_c = j < std::min(block, n - q * block);
                  const T want = in_c ? many[q * many_stride + i * ldc + j] : untouched[at];
                  same = same && std::memcmp(&one[at], &want, sizeof(T)) == 0;
                }
            for (std::size_t q = 0; q < blocks; ++q)  // each block's gap after its rows
              for (std::size_t at = q * one_stride + m * ldc; at < (q + 1) * one_stride; ++at)
                same = same && one[at] == untouched[at];
            if (!same && ++failures <= 5)
              BOOST_ERROR("m " << m << " n " << n << " k " << k << " block " << block
                               << " accumulate " << accumulate << ": differs from the product over "
                               << tall << " rows");
          }
        }
  BOOST_TEST(checked == heights.size() * 5 * 3 * 3 * 2);
  BOOST_TEST(heights.size() > mr);  // some products of several slivers
  BOOST_TEST(failures == 0u);
}

// C (m x n) = 0.5 A B + bias (+ C, if accumulate) by gemm_nn_split over all n columns, C's
// columns in blocks of `block` (n + 1: one block), against the same product computed in column
// slices of about `slice` columns (whole blocks), each slice a product of its own: "" where the
// two agree to the bit and nothing outside C is written, else what differs.
template <class T>
std::string against_column_slices(std::size_t m, std::size_t n, std::size_t k, const T* a,
                                  std::size_t lda, const T* b, std::size_t ldb, const T* bias,
                                  std::size_t block, bool accumulate, std::size_t slice) {
  const std::size_t ldc = std::min(block, n) + 2, stride = m * ldc + 3;
  const std::size_t blocks = (n + block - 1) / block;
  std::vector<T> c(blocks * stride, T(sentinel));
  for (std::size_t q = 0; q < blocks; ++q)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < std::min(block, n - q * block); ++j)
        c[q * stride + i * ldc + j] = accumulate ? T(i + 1) / T(j % 7 + 2) : T(sentinel);
  std::vector<T> sliced = c;
  argus::kernel::gemm_nn_split<T>(m, n, k, T(0.5), a, lda, b, ldb, c.data(), ldc, block, stride,
                                  bias, accumulate);
  // Slices of whole blocks (a multiple of the block width, or one block).
  const std::size_t step = block > n ? slice : slice / block * block;
  for (std::size_t j = 0; j < n; j += step) {
    const std::size_t cols = std::min(step, n - j);
    T* const at = sliced.data() + (block > n ? j : j / block * stride);
    argus::kernel::gemm_nn_split<T>(m, cols, k, T(0.5), a, lda, b + j, ldb, at, ldc,
                                    block > n ? cols + 1 : block, stride, bias + j, accumulate);
  }
  if (std::memcmp(c.data(), sliced.data(), c.size() * sizeof(T)) != 0)
    return "differs from the product in column slices";
  for (std::size_t q = 0; q < blocks; ++q)  // each block's padding and gap
    for (std::size_t at = q * stride; at < (q + 1) * stride; ++at) {
      const std::size_t i = (at - q * stride) / ldc, j = (at - q * stride) % ldc;
      const bool in_c = i < m && j < std::min(block, n - q * block);
      if (!in_c && c[at] != T(sentinel))
        return "element " + std::to_string(at) + " outside C written";
    }
  return "";
}

// One sliver of a few rows against a B of b_from_memory_bytes or more fetches each row's next
// vectors a whole call ahead instead of its rows a few steps ahead
// (detail::gemm_micro_kernel_direct_b_rows<..., FromMemory>, where rows_fetch_a_call_ahead),
// and one or two rows may read B row by row (detail::gemm_row_sweep, where sweeps_b_rows); against
// a B of b_past_l2_bytes or more some of these start earlier, and some heights take the register
// tile (few_rows_read_for): the same operations in the same order, so C must be, to the bit, the
// same product computed in column slices of B small enough (under b_past_l2_bytes) to take the
// kernels that fetch a few steps ahead, with B's rows wider than n, a multiple of 4 KiB apart or
// not, two k blocks, columns split into blocks (heads; 24 puts vectors across two), bias and
// accumulate; nothing outside C written. Both sizes of B: just past b_from_memory_bytes and just
// past b_past_l2_bytes.
BOOST_AUTO_TEST_CASE_TEMPLATE(few_rows_against_a_b_from_memory_to_the_bit, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t kc = d::gemm_tile<T>::kc, slice = 400, page = 4096 / sizeof(T);
  constexpr std::size_t most = d::direct_b_rows_most<T>;
  const std::size_t k = kc + 7, lda = k + 2;
  // n: not a multiple of any set's vector (a last vector of a few columns).
  const auto width_past = [&](std::size_t bytes) {
    return (bytes / (k * sizeof(T)) + 64) / 64 * 64 + 5;
  };
  const std::size_t large = width_past(d::b_from_memory_bytes),
                    mid = width_past(d::b_past_l2_bytes);
  BOOST_TEST(k * large * sizeof(T) >= d::b_from_memory_bytes);
  BOOST_TEST(k * mid * sizeof(T) >= d::b_past_l2_bytes);
  BOOST_TEST(k * mid * sizeof(T) < d::b_from_memory_bytes);
  BOOST_TEST(k * slice * sizeof(T) < d::b_past_l2_bytes);
  BOOST_TEST(large > d::row_sweep_columns<T>);  // more than one pass of the row sweep
  std::mt19937 rng(23);
  const uniform_pm1 dist;
  // B holds k rows at either stride (n + 5, or n rounded up to whole pages): k (n + page).
  std::vector<T> a(most * lda), b(k * (large + page)), bias(large);
  for (auto& x : a) x = T(dist(rng));
  for (auto& x : b) x = T(dist(rng));
  for (auto& x : bias) x = T(dist(rng));
  std::size_t failures = 0, checked = 0, far = 0, swept = 0, tiled = 0, longer = 0;
  // Both choices of where data read once is fetched (argus::detail::roomy_l1d), whatever the
  // core's L1d: with AVX-512 they take different kernels from 2 MiB.
  for (const bool roomy : {false, true}) {
    const argus::detail::roomy_l1d_as as(roomy);
    for (const std::size_t n : {large, mid})
      for (const std::size_t ldb : {n + 5, (n + page) / page * page})
        for (const std::size_t block : {n + 1, std::size_t{24}, std::size_t{64}})
          for (std::size_t m = 1; m <= most; ++m)
            for (const bool accumulate : {false, true}) {
              if (block != n + 1 && m > 2 && m != most) continue;
              const d::few_rows_read read = d::few_rows_read_for<T>(m, ldb, k, n, roomy);
              far += d::rows_fetch_a_call_ahead<T>(m, ldb, k, n, roomy);
              swept += d::sweeps_b_rows<T>(m, k, n, roomy);
              tiled += read == d::few_rows_read::register_tile;
              longer += read == d::few_rows_read::rows_long;
              ++checked;
              const std::string problem = against_column_slices<T>(
                  m, n, k, a.data(), lda, b.data(), ldb, bias.data(), block, accumulate, slice);
              if (!problem.empty() && ++failures <= 5)
                BOOST_ERROR("roomy_l1 " << roomy << " m " << m << " n " << n << " ldb " << ldb
                                        << " block " << block << " accumulate " << accumulate
                                        << ": " << problem);
            }
  }
  // One row of Aᵀ (gemm_tn: A read as k x 1 with row stride 3), the same way.
  for (const std::size_t n : {large, mid})
    for (const std::size_t ldb : {n + 5, (n + page) / page * page}) {
      std::vector<T> at(3 * k), c(n, T(sentinel)), sliced(n, T(sentinel));
      for (std::size_t p = 0; p < k; ++p) at[3 * p] = a[p];
      argus::kernel::gemm_tn<T>(1, n, k, T(0.5), at.data(), 3, b.data(), ldb, c.data(), n,
                                bias.data(), false);
      for (std::size_t j = 0; j < n; j += slice)
        argus::kernel::gemm_tn<T>(1, std::min(slice, n - j), k, T(0.5), at.data(), 3, b.data() + j,
                                  ldb, sliced.data() + j, n, bias.data() + j, false);
      ++checked;
      if (std::memcmp(c.data(), sliced.data(), n * sizeof(T)) != 0 && ++failures <= 5)
        BOOST_ERROR("gemm_tn, one row, n " << n << " ldb " << ldb
                                           << ": differs from the product in column slices");
    }
  BOOST_TEST(checked == 2 * (2 + 2 * 2 * 2 * (most + 2 * std::min<std::size_t>(3, most))));
  BOOST_TEST(far >= 2u);  // some heights take the kernels that fetch a call ahead
  if constexpr (argus::kernel::simd_bytes >= 32) BOOST_TEST(swept > 0u);
  // AVX-512's 7-8 rows against the smaller B take the register tile, as AVX2's 4 rows do where
  // B's rows are a multiple of 4 KiB apart (skewed_far_rows_most).
  if constexpr (d::direct_b_rows_near_most<T> < most || d::direct_b_fetch_skew > 1)
    BOOST_TEST(tiled > 0u);
  // AVX-512's 3-6 rows against the smaller B fetch further ahead (rows_long) on a roomy L1d.
  if constexpr (d::rows_long_ahead_set) BOOST_TEST(longer > 0u);
  BOOST_TEST(failures == 0u);
}

// Slivers of the register tile reading a B of b_past_l2_bytes or more in place, some of which
// fetch no row of B into L1, only the next panel's into L2 (detail::direct_b_fetches_near: with
// AVX2 and AVX-512 the slivers after the first of several, with AVX2 one sliver alone too), with
// AVX2 spread over several panels where B's rows are a multiple of 512 bytes apart, as is the
// packing kernel's fetch (detail::skews_b_fetch): the same operations in the same order, so C
// must be, to the bit, the same product computed in column slices of B under b_past_l2_bytes,
// where every sliver fetches into L1 and no fetch is spread; with AVX-512, two slivers of at most
// page_packing_rows_most rows at 4 KiB-multiple strides have the first pack each panel for the
// second (detail::packs_page_panels), against slices that pack B sliver by sliver. One sliver of
// the register tile (mr rows), two (mr + 1 and 2 page_packing_rows_most rows), three and
// direct_b_slivers slivers; B's rows wider than n or a multiple of 4 KiB apart, two k blocks, one
// block of columns or blocks of 24 (vectors across two), bias and accumulate; nothing outside C
// written.
BOOST_AUTO_TEST_CASE_TEMPLATE(slivers_against_a_b_past_l2_to_the_bit, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t mr = d::gemm_tile<T>::mr, kc = d::gemm_tile<T>::kc;
  constexpr std::size_t tall = d::direct_b_slivers * mr, slice = 400, page = 4096 / sizeof(T);
  const std::size_t k = kc + 7, lda = k + 2;  // two k blocks
  const std::size_t n = (d::b_past_l2_bytes / (k * sizeof(T)) + 64) / 64 * 64 + 5;
  BOOST_TEST(k * n * sizeof(T) >= d::b_past_l2_bytes);
  BOOST_TEST(k * n * sizeof(T) < d::b_from_memory_bytes);
  BOOST_TEST(k * slice * sizeof(T) < d::b_past_l2_bytes);
  std::mt19937 rng(29);
  const uniform_pm1 dist;
  std::vector<T> a(tall * lda), b(k * (n + page)), bias(n);
  for (auto& x : a) x = T(dist(rng));
  for (auto& x : b) x = T(dist(rng));
  for (auto& x : bias) x = T(dist(rng));
  std::size_t failures = 0, checked = 0, far = 0, skewed = 0, packing = 0;
  constexpr std::size_t packing_most = 2 * d::page_packing_rows_most;
  for (const std::size_t ldb : {n + 5, (n + page) / page * page})
    for (const std::size_t block : {n + 1, std::size_t{24}})
      for (const std::size_t m : {mr, mr + 1, packing_most, 2 * mr + 1, tall})
        for (const bool accumulate : {false, true}) {
          const std::size_t slivers = (m + mr - 1) / mr;
          far += d::reads_b_in_place<T>(slivers, ldb, k, n) &&
                 !d::direct_b_fetches_near<T>(slivers == 1 ? 0 : 1, slivers, k, n);
          skewed += d::skews_b_fetch<T>(ldb, k, n);
          packing += d::reads_b_in_place<T>(slivers, ldb, k, n) && d::packs_page_panels<T>(m, ldb);
          ++checked;
          const std::string problem = against_column_slices<T>(
              m, n, k, a.data(), lda, b.data(), ldb, bias.data(), block, accumulate, slice);
          if (!problem.empty() && ++failures <= 5)
            BOOST_ERROR("m " << m << " ldb " << ldb << " block " << block << " accumulate "
                             << accumulate << ": " << problem);
        }
  BOOST_TEST(checked == 2u * 2 * 5 * 2);
  if constexpr (d::direct_b_far_set) BOOST_TEST(far > 0u);  // some slivers fetch into L2 only
  if constexpr (d::direct_b_fetch_skew > 1) BOOST_TEST(skewed > 0u);  // some spread that fetch
  // With AVX-512, mr + 1 and packing_most rows at the page stride: the first packs for the second.
  BOOST_TEST(packing == (argus::kernel::simd_bytes == 64 ? 2u * 2 * 2 : 0u));
  BOOST_TEST(failures == 0u);
}

// Which slivers of the register tile reading B in place fetch its rows into L1 as well as the
// next panel's into L2: all of them against a B under b_past_l2_bytes, and with the portable set;
// against a larger B, with AVX2 and AVX-512, the first of several only, and one alone with
// AVX-512 only.
BOOST_AUTO_TEST_CASE(which_slivers_fetch_near) {
  namespace d = argus::kernel::detail;
  // The fewest rows of a B 1000 wide that make b_past_l2_bytes, of floats and of doubles.
  constexpr std::size_t past = (d::b_past_l2_bytes / sizeof(float) + 999) / 1000;
  constexpr std::size_t past_d = (d::b_past_l2_bytes / sizeof(double) + 999) / 1000;
  constexpr int simd = argus::kernel::simd_bytes;
  for (const std::size_t slivers : {std::size_t{1}, std::size_t{2}, d::direct_b_slivers})
    for (std::size_t s = 0; s < slivers; ++s) {
      BOOST_TEST(d::direct_b_fetches_near<float>(s, slivers, past - 1, 1000));
      BOOST_TEST(d::direct_b_fetches_near<double>(s, slivers, past_d - 1, 1000));
      const bool near = simd < 32 || (s == 0 && (slivers > 1 || simd == 64));
      BOOST_TEST(d::direct_b_fetches_near<float>(s, slivers, past, 1000) == near);
      BOOST_TEST(d::direct_b_fetches_near<double>(s, slivers, past_d, 1000) == near);
    }
  BOOST_TEST(d::direct_b_far_set == (simd >= 32));
}

// The heights of several slivers (detail::sliver_cut), the least of gemm_direct_b_block's
// kernel tables for them: the first packing_rows_lowest rows or more, the others mr / 2 or more
// (with AVX-512 only those fetch only into L2, so no such kernel of fewer rows is instantiated).
BOOST_AUTO_TEST_CASE_TEMPLATE(which_heights_several_slivers_have, T, element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t mr = d::gemm_tile<T>::mr;
  for (std::size_t m = mr + 1; m <= d::direct_b_slivers * mr; ++m) {
    const auto cut = d::sliver_cut::of<T>(m);
    BOOST_TEST(cut.count >= 2u, m);
    BOOST_TEST(cut.rows(0) >= d::packing_rows_lowest<T>, m);
    for (std::size_t s = 1; s < cut.count; ++s) BOOST_TEST(cut.rows(s) >= mr / 2, m);
  }
}

// Where the first of the slivers reading B in place packs each panel for the others
// (detail::packs_page_panels): with AVX-512 only, two slivers whose first has at most
// page_packing_rows_most rows (13-18 rows), B's rows a multiple of 4 KiB apart.
BOOST_AUTO_TEST_CASE(which_slivers_pack_page_panels) {
  namespace d = argus::kernel::detail;
  constexpr bool avx512 = argus::kernel::simd_bytes == 64;
  constexpr std::size_t mr = d::gemm_tile<float>::mr;
  BOOST_TEST(d::page_packing_rows_most == 9u);
  static_assert(d::page_packing_rows_most >= d::packing_rows_lowest<float> &&
                d::page_packing_rows_most >= d::packing_rows_lowest<double>);
  for (std::size_t m = 1; m <= 4 * mr; ++m) {
    const bool two = m > mr && m <= 2 * mr && (m + 1) / 2 <= d::page_packing_rows_most;
    BOOST_TEST(d::packs_page_panels<float>(m, 1024) == (avx512 && two), m);
    BOOST_TEST(d::packs_page_panels<float>(m, 2048) == (avx512 && two), m);
    BOOST_TEST(!d::packs_page_panels<float>(m, 1040), m);
    BOOST_TEST(!d::packs_page_panels<float>(m, 1600), m);
    if (d::packs_page_panels<float>(m, 1024)) {
      // The later sliver's height is one that page_fetching_kernel instantiates (mr / 2 to
      // page_packing_rows_most), and no later sliver is taller than it (cut.tall <= 1).
      const auto cut = d::sliver_cut::of<float>(m);
      BOOST_TEST((cut.short_rows >= mr / 2 && cut.short_rows <= d::page_packing_rows_most), m);
      BOOST_TEST(cut.tall <= 1u, m);
    }
  }
  BOOST_TEST(d::packs_page_panels<float>(13, 1024) == avx512);
  BOOST_TEST(d::packs_page_panels<float>(18, 1024) == avx512);
  BOOST_TEST(!d::packs_page_panels<float>(19, 1024));
  BOOST_TEST(d::packs_page_panels<double>(13, 512) == avx512);  // 4 KiB of doubles
}

// Which products on prepacked panels run panel by panel (detail::gemm_prepacked_block): those of
// at most prepacked_panel_slivers slivers of A, as many as read a row-major B in place.
BOOST_AUTO_TEST_CASE(which_prepacked_products_run_by_panel) {
  namespace d = argus::kernel::detail;
  BOOST_TEST(d::prepacked_panel_slivers == d::direct_b_slivers);
  for (std::size_t slivers = 1; slivers <= d::prepacked_panel_slivers; ++slivers)
    BOOST_TEST(d::prepacked_by_panel(slivers));
  BOOST_TEST(!d::prepacked_by_panel(d::prepacked_panel_slivers + 1));
  BOOST_TEST(!d::prepacked_by_panel(100));
}

// Where the fetches of the next panels are spread over several (detail::skews_b_fetch): against a
// B of b_past_l2_bytes or more whose rows are a multiple of 512 bytes apart, with AVX2 only (the
// sets whose direct_b_fetch_skew is more than one panel; packing_fetch_skew with it).
BOOST_AUTO_TEST_CASE(which_products_spread_their_fetch) {
  namespace d = argus::kernel::detail;
  constexpr bool skew = d::direct_b_fetch_skew > 1;
  BOOST_TEST(skew == (argus::kernel::simd_bytes == 32));
  BOOST_TEST((d::packing_fetch_skew > 1) == skew);
  // Rows of a float B 1024 wide (4 KiB apart) that make b_past_l2_bytes.
  constexpr std::size_t past = d::b_past_l2_bytes / sizeof(float) / 1024;
  BOOST_TEST(d::skews_b_fetch<float>(1024, past, 1024) == skew);
  BOOST_TEST(!d::skews_b_fetch<float>(1024, past - 1, 1024));
  BOOST_TEST(d::skews_b_fetch<float>(768, 2 * past, 768) == skew);    // 3072 bytes
  BOOST_TEST(d::skews_b_fetch<float>(1280, 2 * past, 1200) == skew);  // ldb decides the stride
  BOOST_TEST(!d::skews_b_fetch<float>(1600, 2 * past, 1600));         // 6400 bytes
  BOOST_TEST(!d::skews_b_fetch<float>(1040, 2 * past, 1024));
  BOOST_TEST(d::skews_b_fetch<double>(512, past, 512) == skew);
  BOOST_TEST(!d::skews_b_fetch<double>(520, past, 512));
}

// Which slivers of a few rows fetch a whole call ahead: none against a B smaller than
// b_call_ahead_bytes (b_past_l2_bytes with AVX2, b_from_memory_bytes elsewhere), or than
// b_call_ahead_page_bytes where B's rows are a multiple of 4 KiB apart (b_past_l2_bytes with
// AVX-512 too); against a larger one, rows_from_memory_any_stride rows or more, and from
// direct_b_rows_from_memory_least rows at such strides; one row only where the set does not read
// it row by row instead (row_sweep_set). With AVX-512 on a core of less than 48 KiB of L1d
// (far_reads_follow_l1d, roomy_l1 false), direct_b_rows_from_memory_least to
// direct_b_rows_near_most rows from b_past_l2_bytes at any stride, as AVX2's.
BOOST_AUTO_TEST_CASE(which_rows_fetch_a_call_ahead) {
  namespace d = argus::kernel::detail;
  BOOST_TEST(d::b_call_ahead_bytes >= d::b_past_l2_bytes);
  BOOST_TEST(d::b_call_ahead_bytes <= d::b_from_memory_bytes);
  BOOST_TEST(d::b_call_ahead_page_bytes >= d::b_past_l2_bytes);
  BOOST_TEST(d::b_call_ahead_page_bytes <= d::b_call_ahead_bytes);
  BOOST_TEST(d::far_reads_follow_l1d == (argus::kernel::simd_bytes == 64));
  // k for n 4096 (rows 16 KiB apart) and for n 4000 (not a multiple of 4 KiB).
  constexpr std::size_t page = d::b_call_ahead_page_bytes / sizeof(float) / 4096;
  constexpr std::size_t big = (d::b_call_ahead_bytes / sizeof(float) + 3999) / 4000;
  constexpr std::size_t past = (d::b_past_l2_bytes / sizeof(float) + 3999) / 4000;
  constexpr std::size_t least = d::direct_b_rows_from_memory_least;
  constexpr std::size_t any = d::rows_from_memory_any_stride;
  constexpr std::size_t near = d::direct_b_rows_near_most<float>;
  BOOST_TEST(least >= 1u);
  BOOST_TEST(least <= any);
  for (const bool roomy : {false, true}) {
    BOOST_TEST_CONTEXT("roomy_l1 " << roomy) {
      const bool tight = d::far_reads_follow_l1d && !roomy;
      BOOST_TEST(d::rows_fetch_a_call_ahead<float>(1, 4096, 4 * page, 4096, roomy) ==
                 !d::row_sweep_set);
      if constexpr (d::row_sweep_set) BOOST_TEST(least > d::row_sweep_most);
      BOOST_TEST(d::rows_fetch_a_call_ahead<float>(least, 4096, page, 4096, roomy));
      BOOST_TEST(!d::rows_fetch_a_call_ahead<float>(least, 4096, page - 1, 4096, roomy));
      BOOST_TEST(d::rows_fetch_a_call_ahead<float>(any, 4096, page, 4096, roomy));
      BOOST_TEST(d::rows_fetch_a_call_ahead<float>(any, 4000, big, 4000, roomy));
      BOOST_TEST(d::rows_fetch_a_call_ahead<float>(any, 4000, big - 1, 4000, roomy) ==
                 (tight && any <= near && big - 1 >= past));
      if constexpr (least < any)
        BOOST_TEST(d::rows_fetch_a_call_ahead<float>(least, 4000, 4 * big, 4000, roomy) == tight);
      // Where the register tile spreads its fetch (AVX2, rows a multiple of 512 bytes apart), no
      // more than skewed_far_rows_most rows: AVX2's 4 rows take the register tile there, not
      // elsewhere.
      constexpr std::size_t skewed_most = d::skewed_far_rows_most;
      constexpr bool skew = d::direct_b_fetch_skew > 1;
      BOOST_TEST(skewed_most == 3u);
      BOOST_TEST(d::skews_b_fetch<float>(4096, 4 * page, 4096) == skew);
      for (std::size_t rows = 1; rows <= d::direct_b_rows_most<float>; ++rows) {
        const bool rows_ok = rows >= least;
        BOOST_TEST(d::rows_fetch_a_call_ahead<float>(rows, 4096, 4 * page, 4096, roomy) ==
                       (rows_ok && (rows <= skewed_most || !skew)),
                   rows);
        if (rows >= any)
          BOOST_TEST(d::rows_fetch_a_call_ahead<float>(rows, 4000, 4 * big, 4000, roomy), rows);
        // From b_past_l2_bytes, rows not a multiple of 4 KiB apart: AVX-512 on a small L1d only,
        // from least to near rows (its 7-8 keep the register tile there).
        BOOST_TEST(d::rows_fetch_a_call_ahead<float>(rows, 4000, past, 4000, roomy) ==
                       ((tight && rows >= least && rows <= near) ||
                        (d::b_call_ahead_bytes == d::b_past_l2_bytes && rows >= any &&
                         (rows <= skewed_most || !d::skews_b_fetch<float>(4000, past, 4000)))),
                   rows);
        BOOST_TEST(!d::rows_fetch_a_call_ahead<float>(rows, 4000, past - 1, 4000, roomy), rows);
      }
      // double: rows 4 KiB apart at n 512.
      BOOST_TEST(d::rows_fetch_a_call_ahead<double>(least, 512, 4 * page, 512, roomy));
      BOOST_TEST(!d::rows_fetch_a_call_ahead<double>(least, 512, page, 512, roomy));
    }
  }
}

// How one sliver of a few rows reads a row-major B in place (few_rows_read_for): more rows than
// direct_b_rows_most, the register tile; the kernels that fetch a call ahead where
// rows_fetch_a_call_ahead says; else the kernels that fetch a few steps ahead, but for more than
// direct_b_rows_near_most rows against a B of b_past_l2_bytes or more (the register tile), and
// for fewer, with AVX-512, the same fetching further ahead (rows_long) unless B's rows are a
// multiple of 2 KiB apart. And which B the row sweep takes: from row_sweep_least_bytes
// (b_past_l2_bytes, but b_from_memory_bytes with AVX-512 on a core of 48 KiB of L1d or more).
// On a smaller L1d, AVX-512's 3-6 rows against a B of b_past_l2_bytes fetch a call ahead and its
// 1-2 rows sweep B's rows, as AVX2's do.
BOOST_AUTO_TEST_CASE(which_few_rows_read_how) {
  namespace d = argus::kernel::detail;
  using r = d::few_rows_read;
  constexpr int simd = argus::kernel::simd_bytes;
  constexpr std::size_t most = d::direct_b_rows_most<float>,
                        near = d::direct_b_rows_near_most<float>;
  // The fewest rows of a B 1000 wide that make b_past_l2_bytes, and b_from_memory_bytes.
  constexpr std::size_t past = (d::b_past_l2_bytes / sizeof(float) + 999) / 1000;
  constexpr std::size_t large = (d::b_from_memory_bytes / sizeof(float) + 999) / 1000;
  BOOST_TEST(near >= 1u);
  BOOST_TEST(near <= most);
  if constexpr (simd == 64) BOOST_TEST(near < most);
  for (const bool roomy : {false, true}) {
    BOOST_TEST_CONTEXT("roomy_l1 " << roomy) {
      BOOST_TEST(
          (d::few_rows_read_for<float>(most + 1, 1000, 64, 1000, roomy) == r::register_tile));
      BOOST_TEST((d::few_rows_read_for<float>(most + 1, 1000, 4 * large, 1000, roomy) ==
                  r::register_tile));
      for (std::size_t m = 1; m <= most; ++m) {
        // Under b_past_l2_bytes: the near kernels at every height.
        BOOST_TEST((d::few_rows_read_for<float>(m, 1000, past - 1, 1000, roomy) == r::rows_near));
        const bool far = d::rows_fetch_a_call_ahead<float>(m, 1000, past + 1, 1000, roomy);
        const r mid = d::few_rows_read_for<float>(m, 1000, past + 1, 1000, roomy);
        const r kept = d::rows_long_ahead_set ? r::rows_long : r::rows_near;
        BOOST_TEST((mid == (far ? r::rows_far : m > near ? r::register_tile : kept)));
        // AVX-512 on a small L1d: 3-6 rows a call ahead from 2 MiB, 7-8 the register tile.
        if (d::far_reads_follow_l1d && !roomy && m >= d::direct_b_rows_from_memory_least)
          BOOST_TEST((mid == (m <= near ? r::rows_far : r::register_tile)), m);
        // Rows 2 KiB apart fall on two offsets of L1's sets: never the long fetch there.
        const r mid_2k = d::few_rows_read_for<float>(m, 512, 2 * past, 512, roomy);
        BOOST_TEST((mid_2k != r::rows_long));
        if (m >= d::rows_from_memory_any_stride)
          BOOST_TEST((d::few_rows_read_for<float>(m, 1000, large, 1000, roomy) == r::rows_far));
        // Rows 4 KiB apart (a multiple of 512 bytes): where the register tile spreads its fetch
        // (AVX2), more than skewed_far_rows_most rows take it.
        const bool skewed = d::skews_b_fetch<float>(1024, 4 * past, 1024);
        BOOST_TEST(skewed == (d::direct_b_fetch_skew > 1));
        if (skewed && m > d::skewed_far_rows_most)
          BOOST_TEST(
              (d::few_rows_read_for<float>(m, 1024, 4 * past, 1024, roomy) == r::register_tile));
      }
      // Rows 4 KiB apart, B of 2 MiB (512 x 1024): AVX-512 fetches a call ahead at the most rows
      // (b_call_ahead_page_bytes) and AVX2 at 3 (its 4 take the register tile, whose fetch is
      // spread there), the portable set from 16 MiB.
      BOOST_TEST((d::few_rows_read_for<float>(most, 1024, 512, 1024, roomy) ==
                  (simd == 64   ? r::rows_far
                   : simd == 32 ? r::register_tile
                                : r::rows_near)));
      if constexpr (simd >= 32)
        BOOST_TEST((d::few_rows_read_for<float>(3, 1024, 512, 1024, roomy) == r::rows_far));
      BOOST_TEST((d::few_rows_read_for<float>(most, 1024, 511, 1024, roomy) == r::rows_near));
      BOOST_TEST(d::row_sweep_least_bytes(roomy) ==
                 (d::far_reads_follow_l1d && roomy ? d::b_from_memory_bytes : d::b_past_l2_bytes));
      for (const std::size_t m : {std::size_t{1}, d::row_sweep_most}) {
        BOOST_TEST(d::sweeps_b_rows<float>(m, large, 1000, roomy) == d::row_sweep_set);
        BOOST_TEST(!d::sweeps_b_rows<float>(m, past - 1, 1000, roomy));
        BOOST_TEST(d::sweeps_b_rows<float>(m, past, 1000, roomy) ==
                   (d::row_sweep_set && (!d::far_reads_follow_l1d || !roomy)));
      }
      BOOST_TEST(!d::sweeps_b_rows<float>(d::row_sweep_most + 1, 4 * large, 1000, roomy));
    }
  }
}

// How far one sliver's rows kernel runs along a k block n columns wide
// (detail::rows_kernel_columns): whole calls, leaving the register tile whole panels and the
// last vector's columns, as many calls as that allows; for every height and width of the rows
// kernels of this set.
BOOST_AUTO_TEST_CASE(which_columns_the_rows_kernel_covers) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t w = d::gemm_tile<float>::width, nv = d::gemm_tile<float>::nv;
  const auto check = [&](std::size_t rows, std::size_t vectors_a_call) {
    for (std::size_t n = 1; n <= 40 * w + 3; ++n) {
      const std::size_t covered = d::rows_kernel_columns<float>(n, vectors_a_call);
      const std::size_t calls = covered / (vectors_a_call * w), vectors = n / w;
      BOOST_TEST(covered % (vectors_a_call * w) == 0u);
      BOOST_TEST(covered <= vectors * w);
      // The vectors left: whole panels, but for one where no count of calls leaves them so.
      const std::size_t left = vectors - calls * vectors_a_call;
      const bool whole = left % nv == 0;
      BOOST_TEST((whole || vectors_a_call % nv == 0 || calls == 0),
                 "rows " << rows << " n " << n << ": " << left << " vectors left");
      // As many calls as that allows: one more leaves too few vectors or not whole panels.
      const std::size_t more = calls + 1;
      BOOST_TEST((more * vectors_a_call > vectors ||
                  (whole && (vectors - more * vectors_a_call) % nv != 0)),
                 "rows " << rows << " n " << n << ": " << calls << " calls, one more fits");
    }
  };
  check(1, d::direct_b_row_vectors<float, 1>);
  [&]<std::size_t... R>(std::index_sequence<R...>) {
    (check(R + 2, d::direct_b_row_vectors<float, R + 2>), ...);
  }
  (std::make_index_sequence<d::direct_b_rows_most<float> - 1>{});
  // AVX-512's 8 rows (3 vectors a call) against 1024 columns: 20 calls and two panels.
  if constexpr (argus::kernel::simd_bytes == 64)
    BOOST_TEST(d::rows_kernel_columns<float>(1024, d::direct_b_row_vectors<float, 8>) == 960u);
}

// Which products read B in place: one sliver whatever B's stride; up to direct_b_slivers
// slivers where B's rows are not a multiple of 4 KiB apart; where they are, up to
// page_stride_direct_b_slivers (fewer) for a B of b_in_place_page_bytes or more (b_past_l2_bytes
// with AVX-512, b_from_memory_bytes elsewhere), one for a smaller B; never more.
BOOST_AUTO_TEST_CASE(which_products_read_b_in_place) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t page = d::page_stride_direct_b_slivers;
  BOOST_TEST(d::b_in_place_page_bytes >= d::b_past_l2_bytes);
  BOOST_TEST(d::b_in_place_page_bytes <= d::b_from_memory_bytes);
  // Rows of a float B 4096 wide that make b_in_place_page_bytes, and b_from_memory_bytes.
  constexpr std::size_t big = d::b_in_place_page_bytes / sizeof(float) / 4096;
  constexpr std::size_t large = d::b_from_memory_bytes / sizeof(float) / 4096;
  BOOST_TEST(page >= 1u);
  BOOST_TEST(page < d::direct_b_slivers);
  BOOST_TEST(d::reads_b_in_place<float>(1, 512, 512, 512));
  BOOST_TEST(d::reads_b_in_place<float>(1, 1024, 512, 1024));
  BOOST_TEST(d::reads_b_in_place<float>(1, 4096, big, 4096));
  BOOST_TEST(d::reads_b_in_place<float>(2, 512, 512, 512));
  BOOST_TEST(d::reads_b_in_place<float>(d::direct_b_slivers, 1536, 512, 1536));
  BOOST_TEST(d::reads_b_in_place<float>(d::direct_b_slivers, 1000, 4 * large, 1000));
  BOOST_TEST(!d::reads_b_in_place<float>(d::direct_b_slivers + 1, 512, 512, 512));
  BOOST_TEST(!d::reads_b_in_place<float>(d::direct_b_slivers + 1, 1000, 4 * large, 1000));
  // Rows a multiple of 4 KiB apart, B of b_in_place_page_bytes or just below it.
  BOOST_TEST(d::reads_b_in_place<float>(page, 4096, big, 4096));
  BOOST_TEST(d::reads_b_in_place<float>(page, 1024, 4 * big, 1024));
  BOOST_TEST(d::reads_b_in_place<float>(page, 4096, large, 4096));
  BOOST_TEST(!d::reads_b_in_place<float>(page + 1, 4096, large, 4096));
  BOOST_TEST(!d::reads_b_in_place<float>(2, 4096, big - 1, 4096));
  BOOST_TEST(!d::reads_b_in_place<float>(2, 1024, big, 1024));
  BOOST_TEST(!d::reads_b_in_place<float>(2, 3072, big, 3072));
  // ldb, not n, decides the stride; k x n, not k x ldb, the size.
  BOOST_TEST(!d::reads_b_in_place<float>(2, 4096, big, 4000));
  BOOST_TEST(d::reads_b_in_place<float>(2, 4000, big, 4000));
  BOOST_TEST(d::reads_b_in_place<float>(2, 4000, 512, 4000));
  // double at n 512 (rows 4 KiB apart): 4 x big rows make b_in_place_page_bytes.
  BOOST_TEST(d::reads_b_in_place<double>(page, 512, 4 * big, 512));
  BOOST_TEST(!d::reads_b_in_place<double>(page + 1, 512, 4 * big, 512));
  BOOST_TEST(!d::reads_b_in_place<double>(2, 512, 4 * big - 1, 512));
  BOOST_TEST(d::reads_b_in_place<double>(2, 1000, 512, 1000));
  // AVX-512 reads such a B in place from b_past_l2_bytes (4 MiB here), the others from 16 MiB.
  BOOST_TEST(d::reads_b_in_place<float>(2, 1024, 1024, 1024) ==
             (argus::kernel::simd_bytes == 64 && page >= 2));
}

// gemm_packed_b over the first n of n' packed columns: a last panel narrower than nr is
// computed whole and its valid columns kept (detail::gemm_narrow_tile), so every column gets
// the operations it gets in the product over all n' columns, to the bit, with C accumulated
// into (accumulate, and k over kc, whose second block adds to the first); and the columns
// past n, and the padding of every row, are not written.
BOOST_AUTO_TEST_CASE_TEMPLATE(packed_b_narrow_panel_is_the_wide_product_to_the_bit, T,
                              element_types) {
  namespace d = argus::kernel::detail;
  constexpr std::size_t nr = d::gemm_tile<T>::nr;
  constexpr std::size_t kc = d::gemm_tile<T>::kc;
  std::mt19937 rng(12);
  const uniform_pm1 dist;
  std::size_t failures = 0, checked = 0;
  for (const std::size_t m : {std::size_t{1}, std::size_t{7}, std::size_t{33}})
    for (const std::size_t wide : {nr, 3 * nr})
      for (const std::size_t k : {std::size_t{5}, kc + 44})  // one k block and two
        for (const bool accumulate : {false, true}) {
          std::vector<T> a(m * k), b(k * wide);
          for (auto& x : a) x = T(dist(rng));
          for (auto& x : b) x = T(dist(rng));
          std::vector<T> panels(d::packed_b_elements<T>(k, wide));
          d::pack_b_panels<false, T>(k, wide, b.data(), wide, panels.data());
          const std::size_t ldc = wide + 2;
          std::vector<T> c0(m * ldc);
          for (auto& x : c0) x = accumulate ? T(dist(rng)) : T(sentinel);
          std::vector<T> want = c0;
          d::gemm_packed_b<T>(m, wide, k, T(0.75), a.data(), k, panels.data(), k, want.data(), ldc,
                              accumulate);
          for (std::size_t n = wide - nr + 1; n < wide; ++n) {
            std::vector<T> got = c0;
            d::gemm_packed_b<T>(m, n, k, T(0.75), a.data(), k, panels.data(), k, got.data(), ldc,
                                accumulate);
            bool same = true;
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t j = 0; j < ldc; ++j) {
                const T expected = j < n ? want[i * ldc + j] : c0[i * ldc + j];
                same = same && std::memcmp(&got[i * ldc + j], &expected, sizeof(T)) == 0;
              }
            ++checked;
            if (!same && ++failures <= 5)
              BOOST_ERROR("m " << m << " n " << n << " of " << wide << " k " << k << " accumulate "
                               << accumulate << ": differs from the " << wide
                               << "-column product, or wrote past column n");
          }
        }
  BOOST_TEST(checked == 3 * 2 * 2 * 2 * (nr - 1));  // every narrower width of a panel
  BOOST_TEST(failures == 0u);
}
