// argus/detail/hana.hpp -- private: the only place argus includes Boost.Hana.
//
// Only the per-algorithm headers argus uses are included (never <boost/hana.hpp>), and
// Hana types never appear in a public signature: they stay inside shape/ and eval/.
#pragma once

#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/range.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

namespace argus::detail {
namespace hana = boost::hana;
}  // namespace argus::detail
