// kiln::Error: every misuse a user can make ends here, never in a crash.
#pragma once
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

// Where the user's call came from. Public entry points take one as a defaulted last
// argument (std::source_location::current() evaluates at the call site).
using SourceLoc = std::source_location;

// The file of a source location as kiln shows it (errors, graph node origins, kernel comments):
// kiln's own files relative to its source tree, so messages do not depend on where it was built;
// any other file as the compiler named it.
const char* source_file(const SourceLoc& loc);
const char* source_file(const char* file);

class Error : public std::runtime_error {
 public:
  struct Info {
    std::string op;       // the op being run ("add", "matmul", ...), empty if none
    std::string message;  // what went wrong
    std::string inputs;   // shapes and dtypes of the op's tensor inputs
    std::string hint;     // what the user can do about it
    std::string file;     // the user's source location
    unsigned line = 0;
  };
  explicit Error(Info info);
  const Info& info() const { return info_; }
  const std::string& op() const { return info_.op; }
  const std::string& message() const { return info_.message; }
  const std::string& hint() const { return info_.hint; }
  const std::string& file() const { return info_.file; }
  unsigned line() const { return info_.line; }

 private:
  static std::string render(const Info& info);
  Info info_;
};

namespace detail {
[[noreturn]] void fail(std::string message, std::string hint = {});
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, parts...): throws kiln::Error with the concatenated message. The dispatcher
// adds the op name, input shapes/dtypes and the user's source location as the error passes.
#define KILN_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) ::kiln::detail::fail(::kiln::detail::cat(__VA_ARGS__));   \
  } while (0)
#define KILN_CHECK_HINT(cond, hint, ...)                                           \
  do {                                                                             \
    if (!(cond)) ::kiln::detail::fail(::kiln::detail::cat(__VA_ARGS__), (hint));   \
  } while (0)
