// The user's source location for errors: the outermost public call on this thread records it,
// and every kiln::Error raised below it reports it (core/error.cc).
#pragma once
#include <kiln/error.h>

namespace kiln {

class CallSite {
 public:
  explicit CallSite(const SourceLoc& loc);
  ~CallSite();
  CallSite(const CallSite&) = delete;
  CallSite& operator=(const CallSite&) = delete;

 private:
  bool owner_;
};
// The location recorded by the outermost live CallSite on this thread (null: none).
const SourceLoc* current_call_site();

}  // namespace kiln
