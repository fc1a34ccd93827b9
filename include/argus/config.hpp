// argus/config.hpp -- top level: version, and the only home of ARGUS_* macros.
#pragma once

#define ARGUS_VERSION_MAJOR 0
#define ARGUS_VERSION_MINOR 1
#define ARGUS_VERSION_PATCH 0

namespace argus {
inline constexpr int version_major = ARGUS_VERSION_MAJOR;
inline constexpr int version_minor = ARGUS_VERSION_MINOR;
inline constexpr int version_patch = ARGUS_VERSION_PATCH;
}  // namespace argus
