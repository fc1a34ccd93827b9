// argus/detail/quote_text.hpp -- text from outside the program, as an error message shows it.
//
// A run-time error quotes what it refuses: an ARGUS_ISA value, a .npy header, a tensor name
// or dtype from a safetensors header. Such text may hold anything: a trailing space that
// would be invisible, an escape sequence that a terminal would obey, megabytes of header.
// detail::quote_text shows it between quotes, bytes outside printable ASCII and the quote and
// backslash as \xNN, at most max_chars bytes of it and then "...". A leaf: it includes only
// the standard library, so that every layer (kernel/ and io/ too) may use it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace argus::detail {

/// s between `quote` characters: printable ASCII as it is, any other byte (control
/// characters, DEL, bytes of UTF-8 or of no encoding), the quote and the backslash as \xNN;
/// after max_chars bytes of s, "..." (inside the quotes) and no more.
inline std::string quote_text(std::string_view s, std::size_t max_chars = 40, char quote = '\'') {
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != static_cast<unsigned char>(quote) && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char digits[] = "0123456789abcdef";
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  out += quote;
  return out;
}

}  // namespace argus::detail
