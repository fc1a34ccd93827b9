// argus/config.hpp -- top level: version, and the only home of ARGUS_* macros.
#pragma once

#define ARGUS_VERSION_MAJOR 0
#define ARGUS_VERSION_MINOR 1
#define ARGUS_VERSION_PATCH 0

/// ARGUS_CHECKED_ACCESS 1: element access, `x(i, j, ...)` of a tensor or tensor_view, checks
/// each index against its axis's extent (std::out_of_range naming the axis, its extent and the
/// index) and that the elements have storage (shape_error: a moved-from tensor, a view of a null
/// pointer); 0: unchecked and noexcept, as std::mdspan's. Default: 1 without NDEBUG (debug and
/// sanitizer builds), 0 with it (release builds), as Eigen's index assertions. Every translation
/// unit of a program should see one value.
#ifndef ARGUS_CHECKED_ACCESS
#ifdef NDEBUG
#define ARGUS_CHECKED_ACCESS 0
#else
#define ARGUS_CHECKED_ACCESS 1
#endif
#endif

namespace argus {
inline constexpr int version_major = ARGUS_VERSION_MAJOR;
inline constexpr int version_minor = ARGUS_VERSION_MINOR;
inline constexpr int version_patch = ARGUS_VERSION_PATCH;
}  // namespace argus
