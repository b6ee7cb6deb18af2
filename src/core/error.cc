#include <kiln/error.h>

#include "core/call_site.h"

namespace kiln {

namespace {
thread_local const SourceLoc* t_site = nullptr;
}  // namespace

CallSite::CallSite(const SourceLoc& loc) : owner_(t_site == nullptr) {
  if (owner_) t_site = &loc;
}
CallSite::~CallSite() {
  if (owner_) t_site = nullptr;
}
const SourceLoc* current_call_site() { return t_site; }

const char* source_file(const char* file) {
  for (std::string_view root : {std::string_view(KILN_SOURCE_DIR), std::string_view(KILN_SOURCE_FROM_BUILD)})
    if (root.size() > 1 && std::string_view(file).starts_with(root)) return file + root.size();
  return file;
}
const char* source_file(const SourceLoc& loc) { return source_file(loc.file_name()); }

Error::Error(Info info) : std::runtime_error(render(info)), info_(std::move(info)) {}

std::string Error::render(const Info& i) {
  std::string s;
  if (!i.op.empty()) s += "kiln." + i.op + ": ";
  s += i.message;
  if (!i.inputs.empty()) s += "\n  inputs: " + i.inputs;
  if (!i.hint.empty()) s += "\n  hint: " + i.hint;
  if (!i.file.empty()) s += "\n  at " + i.file + ":" + std::to_string(i.line);
  return s;
}

namespace detail {
void fail(std::string message, std::string hint) {
  Error::Info info;
  info.message = std::move(message);
  info.hint = std::move(hint);
  if (const SourceLoc* loc = current_call_site()) {
    info.file = source_file(*loc);
    info.line = loc->line();
  }
  throw Error(std::move(info));
}
}  // namespace detail

}  // namespace kiln
