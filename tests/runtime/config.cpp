// The version has one source: include/argus/config.hpp. CMake reads project(VERSION) from
// it (CMakeLists.txt) and passes it here as ARGUS_CMAKE_PROJECT_VERSION, so a version
// written anywhere else, or a header edited without CMake noticing, fails this test.
#include <argus/config.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_CASE(cmake_project_version_is_the_headers_version) {
  const std::string from_header = std::to_string(argus::version_major) + "." +
                                  std::to_string(argus::version_minor) + "." +
                                  std::to_string(argus::version_patch);
  BOOST_TEST(from_header == std::string(ARGUS_CMAKE_PROJECT_VERSION));
}
