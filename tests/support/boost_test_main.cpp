// tests/support/boost_test_main.cpp -- main() of every Boost.Test executable, compiled once per
// build (tests/CMakeLists.txt links it into each). A test file defines no BOOST_TEST_MODULE:
// Boost.Test's header then writes no main(), so the header can sit in the tests' precompiled
// header, parsed once and not in every test's compile. The master test suite takes the
// executable's name (unit.eval.prepacked), which is also the ctest name.
#include <boost/test/unit_test.hpp>

#include <string>

namespace {

bool init_unit_test() {
  auto& master = boost::unit_test::framework::master_test_suite();
  if (master.argc > 0 && master.argv[0] != nullptr) {
    std::string name = master.argv[0];
    if (const auto slash = name.find_last_of('/'); slash != std::string::npos)
      name.erase(0, slash + 1);
    if (!name.empty()) master.p_name.value = name;
  }
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
