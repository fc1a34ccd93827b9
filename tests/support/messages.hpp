// tests/support/messages.hpp -- test support: checking what an exception's message names.
//
//     BOOST_CHECK_EXCEPTION(call(), argus::shape_error, argus::test::says({"w_q", "moved"}));
//     BOOST_TEST(argus::test::throws_naming<argus::load_error>([&] { read(); }, {"truncated"}));
//
// A run-time error names the problem (the operation, the value, the rule); tests pin those
// words, not only the exception's type. Both log the message and the first missing part.
#pragma once

#include <boost/test/unit_test.hpp>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace argus::test {

/// Whether `what` contains every one of `parts`; logs the first it lacks.
inline bool message_names(const std::string& what, const std::vector<std::string>& parts) {
  for (const std::string& p : parts)
    if (what.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("the message \"" << what << "\" lacks \"" << p << "\"");
      return false;
    }
  return true;
}

/// A predicate for BOOST_CHECK_EXCEPTION: the message contains every one of `parts`.
inline auto says(std::vector<std::string> parts) {
  return [parts = std::move(parts)](const std::exception& e) {
    return message_names(e.what(), parts);
  };
}

/// Whether calling f throws E whose message contains every one of `parts` (another exception,
/// or none, is logged and false).
template <class E>
bool throws_naming(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const E& e) {
    return message_names(e.what(), parts);
  } catch (const std::exception& e) {
    BOOST_TEST_MESSAGE("another exception: " << e.what());
    return false;
  }
  BOOST_TEST_MESSAGE("nothing thrown");
  return false;
}

}  // namespace argus::test
