// labels: memory
#include "argus/kernel/softmax_rows.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <random>
#include <sys/mman.h>
#include <tuple>
#include <unistd.h>
#include <vector>

// softmax_rows against a double-precision reference: random rows of every length 1..100
// (every tail length of every ISA), masked (-inf) entries, fully masked rows, logits of
// +-1e4, and a leading dimension wider than the row whose padding must survive.

namespace {

using element_types = std::tuple<float, double>;

template <class T>
constexpr T minus_inf = -std::numeric_limits<T>::infinity();

/// Relative tolerance of one probability, and of a row sum against 1.
template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 2e-6 : 1e-13;

constexpr double sentinel = 777.0;

/// softmax of one row in double; -inf entries give 0; an all -inf row gives zeros.
std::vector<double> reference(const std::vector<double>& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (double v : x) m = std::max(m, v);
  std::vector<double> y(x.size(), 0.0);
  if (m == -std::numeric_limits<double>::infinity()) return y;
  double sum = 0;
  for (std::size_t j = 0; j < x.size(); ++j) sum += y[j] = std::exp(x[j] - m);
  for (double& v : y) v /= sum;
  return y;
}

/// Runs softmax_rows on `rows` (each of length cols) stored with leading dimension lds,
/// and checks every entry, every row sum and the padding.
template <class T>
void check_rows(const std::vector<std::vector<double>>& rows, std::size_t cols, std::size_t lds) {
  std::vector<T> s(rows.size() * lds + 1, T(sentinel));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t j = 0; j < cols; ++j) s[r * lds + j] = T(rows[r][j]);
  argus::kernel::softmax_rows<T>(s.data(), rows.size(), cols, lds);

  std::size_t failures = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<double> x(cols);
    for (std::size_t j = 0; j < cols; ++j) x[j] = double(T(rows[r][j]));  // as stored
    const std::vector<double> want = reference(x);
    double sum = 0;
    bool masked_row = true;
    for (std::size_t j = 0; j < cols; ++j) {
      const double got = s[r * lds + j];
      sum += got;
      masked_row = masked_row && x[j] == minus_inf<double>;
      const bool ok = std::isfinite(got) &&
                      std::abs(got - want[j]) <= tolerance<T> * want[j] + 1e-30 &&
                      (x[j] != minus_inf<double> || got == 0.0);
      if (!ok && ++failures <= 5)
        BOOST_ERROR("cols=" << cols << " lds=" << lds << " row " << r << " col " << j << ": got "
                            << got << ", expected " << want[j]);
    }
    if (masked_row)
      BOOST_TEST(sum == 0.0);
    else
      BOOST_TEST(std::abs(sum - 1.0) <= tolerance<T> * std::sqrt(double(cols)) * 4,
                 "cols=" << cols << " row " << r << ": sum " << sum);
    for (std::size_t j = cols; j < lds && (r + 1) * lds <= s.size(); ++j)
      BOOST_TEST(s[r * lds + j] == T(sentinel));
  }
  BOOST_TEST(s.back() == T(sentinel));
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(random_rows_of_every_length, T, element_types) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> logit(-12.0, 12.0);
  for (std::size_t cols = 1; cols <= 100; ++cols) {
    std::vector<std::vector<double>> rows(3, std::vector<double>(cols));
    for (auto& row : rows)
      for (double& x : row) x = logit(rng);
    check_rows<T>(rows, cols, cols);
    check_rows<T>(rows, cols, cols + 3);  // padded rows; unaligned rows after the first
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(masked_entries_become_exactly_zero, T, element_types) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<double> logit(-5.0, 5.0);
  std::bernoulli_distribution masked(0.4);
  for (std::size_t cols = 1; cols <= 100; ++cols) {
    std::vector<std::vector<double>> rows(4, std::vector<double>(cols));
    for (auto& row : rows)
      for (double& x : row) x = masked(rng) ? minus_inf<double> : logit(rng);
    rows[1][0] = 1.0;                                 // at least one row with a live entry
    for (double& x : rows[2]) x = minus_inf<double>;  // a fully masked row
    check_rows<T>(rows, cols, cols + 1);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fully_masked_rows_become_zeros_not_nan, T, element_types) {
  for (std::size_t cols : {1u, 7u, 16u, 33u, 100u}) {
    std::vector<T> s(2 * cols, minus_inf<T>);
    argus::kernel::softmax_rows<T>(s.data(), 2, cols, cols);
    for (T v : s) BOOST_TEST(v == T(0));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(logits_of_ten_thousand_stay_finite, T, element_types) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> pick(0, 3);
  const double choices[] = {1e4, -1e4, 0.0, 9999.5};
  for (std::size_t cols : {1u, 2u, 5u, 16u, 17u, 64u, 99u}) {
    std::vector<std::vector<double>> rows(4, std::vector<double>(cols));
    for (auto& row : rows)
      for (double& x : row) x = choices[pick(rng)];
    for (double& x : rows[3]) x = -1e4;  // uniform row at a huge negative offset
    check_rows<T>(rows, cols, cols);
  }
  // Two entries tie at the maximum: half each.
  std::vector<T> s{T(1e4), T(-1e4), T(1e4)};
  argus::kernel::softmax_rows<T>(s.data(), 1, 3, 3);
  BOOST_TEST(s[0] == T(0.5));
  BOOST_TEST(s[1] == T(0));
  BOOST_TEST(s[2] == T(0.5));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(empty_blocks_are_left_alone, T, element_types) {
  std::vector<T> s{T(1), T(2)};
  argus::kernel::softmax_rows<T>(s.data(), 0, 2, 2);
  argus::kernel::softmax_rows<T>(s.data(), 2, 0, 1);
  BOOST_TEST(s[0] == T(1));
  BOOST_TEST(s[1] == T(2));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tails_never_touch_memory_past_the_block, T, element_types) {
  // The block ends exactly at an inaccessible page: a tail that read or wrote one lane too
  // far would fault.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  BOOST_TEST_REQUIRE(map != MAP_FAILED);
  char* base = static_cast<char*>(map);
  BOOST_TEST_REQUIRE(mprotect(base + page, page, PROT_NONE) == 0);
  for (std::size_t cols = 1; cols <= 40; ++cols) {
    const std::size_t rows = 3;
    T* s = reinterpret_cast<T*>(base + page) - rows * cols;  // (ROWS, COLS), ends at the page
    for (std::size_t e = 0; e < rows * cols; ++e) s[e] = T(e % 7);
    argus::kernel::softmax_rows<T>(s, rows, cols, cols);
    double sum = 0;
    for (std::size_t j = 0; j < cols; ++j) sum += s[(rows - 1) * cols + j];
    BOOST_TEST(std::abs(sum - 1.0) <= 1e-5);
  }
  munmap(map, 2 * page);
}

// e^x in double (simd.hpp's exp, which softmax_rows takes for every entry): within an ulp of
// expl (x86's 64-bit mantissa) with FMA and 1.25 without (the polynomial holds 0.90 and 1.19;
// degree 10 would be 4.7), over the whole range and next to each multiple of ln2 / 2 (where the
// reduction's r nears ±ln2/2), subnormal results included (an ulp there is the smallest
// subnormal); +inf above 709.78, +0 below -745.14, exact where e^x rounds to 1, NaN for NaN;
// every lane of a register its own argument, and exp_scalar the same bits.
BOOST_AUTO_TEST_CASE(exponential_in_double_within_an_ulp) {
  using V = argus::kernel::simd<double>;
  using argus::kernel::exp;
  constexpr std::size_t w = V::width;
  double worst = 0, worst_x = 0;  // in ulps of the reference
  std::size_t filled = 0;
  V args = V::zero();
  const auto flush = [&] {
    const V got = exp(args);
    for (std::size_t u = 0; u < filled; ++u) {
      const long double ref = std::exp(static_cast<long double>(args[u]));
      const long double ulp = std::ldexp(1.0L, std::max(std::ilogb(ref) - 52, -1074));
      const double e = static_cast<double>(std::fabs(got[u] - ref) / ulp);
      if (e > worst) worst = e, worst_x = args[u];
    }
    filled = 0;
  };
  const auto check = [&](double x) {
    args.v[filled++] = x;
    if (filled == w) flush();
  };
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> whole(-745.1, 709.78), softmax(-40.0, 0.0);
  for (int i = 0; i < 300000; ++i) check(whole(rng)), check(softmax(rng));
  const double ln2 = std::numbers::ln2;
  for (int k = -2150; k <= 2047; ++k) {
    const double x = k * ln2 / 2;
    for (int j = -3; j <= 3; ++j) check(x + j * std::ldexp(std::fabs(x) + 1, -52));
  }
  flush();
  BOOST_TEST_MESSAGE("worst " << worst << " ulp at " << worst_x);
  BOOST_TEST(worst < (argus::kernel::fma_is_fused ? 1.0 : 1.25),
             "worst " << worst << " ulp at " << worst_x);
  const auto one = [](double x) { return exp(V::broadcast(x))[0]; };
  const double inf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, -0.0, 1e-300, -1e-300, -0x1p-60, 0x1p-60}) BOOST_TEST(one(x) == 1.0);
  const double top = one(709.782712893384);  // e^x just under DBL_MAX: finite, within 2 ulp
  BOOST_TEST(std::isfinite(top));
  BOOST_TEST(std::fabs(top - std::exp(709.782712893384)) <= std::ldexp(2.0, 971));
  for (double x : {709.7827128933841, 709.79, 710.0, 1e300, inf}) BOOST_TEST(one(x) == inf);
  BOOST_TEST(one(-745.1332191019411) == std::numeric_limits<double>::denorm_min());
  for (double x : {-745.1332191019412, -745.2, -746.0, -1e4, -1e300, -inf})
    BOOST_TEST(one(x) == 0.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(std::isnan(one(nan)));
  BOOST_TEST(std::isnan(one(-nan)));
  V lanes;
  for (std::size_t u = 0; u < w; ++u) lanes.v[u] = -9.7 * static_cast<double>(u) + 3.1;
  const V e = exp(lanes);
  for (std::size_t u = 0; u < w; ++u) BOOST_TEST(argus::kernel::exp_scalar(lanes[u]) == e[u]);
}
