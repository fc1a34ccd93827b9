// argus/diagnostics/check.hpp -- diagnostics layer: run-time checks of run-time extents.
//
// Static extents are checked at compile time (relations.hpp). Extents known only at run
// time are checked once, when an expression is built or evaluated, and a mismatch throws
// argus::shape_error naming the operation and both extents, before anything is written.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace argus {

/// Thrown when run-time extents disagree; what() names the operation and both extents.
class shape_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

/// Throws shape_error unless a == b: "<op>: <what_a> is <a> but <what_b> is <b>".
inline void check_extents_agree(const char* op, const char* what_a, std::size_t a,
                                const char* what_b, std::size_t b) {
  if (a != b)
    throw shape_error(std::string(op) + ": " + what_a + " is " + std::to_string(a) + " but " +
                      what_b + " is " + std::to_string(b) + "; they must be equal");
}

/// Throws shape_error when an operand of `size` elements has no storage, which is what a
/// moved-from tensor whose extents are all static leaves behind, or a view of a null pointer.
inline void check_has_storage(const char* op, const void* data, std::size_t size) {
  if (data == nullptr && size != 0)
    throw shape_error(std::string(op) + ": an operand of " + std::to_string(size) +
                      " elements has no storage: it is a moved-from tensor (assign it a value "
                      "before using it) or a view of a null pointer");
}

/// Whether tensor (or view) t has elements but no storage: a moved-from tensor whose extents
/// are all static. Its shape counts the elements; t.size() would not (it counts the storage,
/// 0 after a move).
template <class X>
bool lacks_storage(const X& t) noexcept {
  return t.data() == nullptr && t.shape().size() != 0;
}

/// Throws shape_error when a run-time value breaks a relation stated in words.
inline void check(bool ok, const std::string& message) {
  if (!ok) throw shape_error(message);
}

}  // namespace detail
}  // namespace argus
