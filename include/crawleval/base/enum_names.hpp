// The names of the project's enums, written once per enum as a table of {value, name}: printing a
// value, parsing a name and the list of choices an error message shows all read that table, so a
// name added to an enum cannot be missing from its parser or from the messages that list it.
//
//   enum class Colour { red, green };
//   template <> struct EnumNames<Colour> {
//     static constexpr EnumName<Colour> table[] = {{Colour::red, "red"}, {Colour::green, "green"}};
//   };
//   enum_name(Colour::green) == "green";  enum_parse<Colour>("red") == Colour::red;
//   enum_choices<Colour>() == "red, green";
//   enum_parse_or_throw<Colour>("blue", "--colour")
//     throws InputError("--colour 'blue' is not one of: red, green").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crawleval/base/error.hpp"

namespace crawleval {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

/// Specialised beside each enum with `static constexpr EnumName<E> table[]`, in the order the
/// messages list the choices. An enum without a table has no names (a compile error).
template <class E>
struct EnumNames;

/// The value's name; "?" for a value outside the table (a cast from a bad integer).
template <class E>
constexpr const char* enum_name(E value) {
  for (const EnumName<E>& e : EnumNames<E>::table)
    if (e.value == value) return e.name;
  return "?";
}

/// The value of a name (exact, case-sensitive), or nullopt.
template <class E>
std::optional<E> enum_parse(std::string_view name) {
  for (const EnumName<E>& e : EnumNames<E>::table)
    if (name == e.name) return e.value;
  return std::nullopt;
}

/// Every name, in the table's order.
template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const EnumName<E>& e : EnumNames<E>::table) out.emplace_back(e.name);
  return out;
}

/// The names joined by `separator`: "a, b, c" for messages, "a|b|c" for a synopsis.
template <class E>
std::string enum_choices(std::string_view separator = ", ") {
  std::string out;
  for (const EnumName<E>& e : EnumNames<E>::table) {
    if (!out.empty()) out += separator;
    out += e.name;
  }
  return out;
}

/// The value of `text`, else InputError "`what` 'text' is not one of: a, b, c" (`what` names the
/// setting as the user wrote it: "--model" on the command line, "model" from Python).
template <class E>
E enum_parse_or_throw(const std::string& text, const std::string& what) {
  if (const std::optional<E> v = enum_parse<E>(text)) return *v;
  throw InputError(what + " '" + printable(text) + "' is not one of: " + enum_choices<E>());
}

}  // namespace crawleval
